#!/usr/bin/env python
"""CPU time of one mask that first visits a lexer state's row, for JSON Schema requests.

Each target is a schema of ``tools/json_schemas/<set>.json`` (by name) and a text prefix:
the schema is compiled without the cache (rows walked lazily, as a request's are), the
prefix forced token by token (the vocabulary's own tokenizer), and the mask after it timed
with ``time.process_time`` (less sensitive to a loaded machine than the wall clock). A first
round warms what is kept per vocabulary and process (token matrices, local walks); then
every round compiles afresh, so the timed mask walks its row again. Prints min and median
per target, and the number of allowed tokens (a change of speed must not change it).

    PYTHONPATH=. python tools/bench_first_rows.py [--reps 4] [--target 'order:{"id":"12']
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT = [("search_tool", '{"query":"gramask llm'), ("search_tool", '{"query":"gramask llm","dom'),
           ("search_tool", '{"query":"gramask llm","domains":["github'),
           ("calendar_event", '{"'), ("order", '{"id":"123e4567-e89'),
           ("package_json_subset", '{"name":"gram')]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--sets", default="sample")
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--target", action="append", default=[],
                    help="SCHEMA_NAME:PREFIX (repeatable; default: a few slow rows)")
    a = ap.parse_args(argv)
    from bench.real_tokenizer import RealTokenizer
    from bench_json_schema import load_cases

    import gramask

    vocab = gramask.Vocabulary.bundled(a.vocab)
    tok = RealTokenizer(a.vocab)
    cases = {c["name"]: c for c in load_cases(a.sets.split(","))}
    targets = [tuple(t.split(":", 1)) for t in a.target] or DEFAULT
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(a.reps + 1):
        for name, prefix in targets:
            g = gramask.Grammar.from_json_schema(cases[name]["schema"])
            c = gramask.compile(g, vocab, cache=False, progress=False).constraint()
            for t in tok.encode(prefix):
                c.allowed()
                c.advance(t)
            t0 = time.process_time()
            m = c.allowed()
            dt = time.process_time() - t0
            if r:
                times.setdefault((name, prefix), []).append(dt)
            else:
                print(f"{name} {prefix!r}: {int(m.sum())} tokens allowed", flush=True)
    for (name, prefix), v in times.items():
        print(f"{name} {prefix[-24:]!r}: min {min(v) * 1e3:.2f} ms, median "
              f"{float(np.median(v)) * 1e3:.2f} ms CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
