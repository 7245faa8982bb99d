"""Time to first mask of a JSON Schema request: ``Grammar.from_json_schema`` + ``compile``
(no disk cache) + the first ``allowed()``, per schema of ``tools/json_schemas/<set>.json``.

* cold: a new process per schema (the vocabulary loaded and the modules imported before the
  timing, nothing compiled before it);
* warm: one process that has compiled a throwaway schema first, then each schema in turn.

Wall and CPU time (``time.process_time``) p50 / p99 over the schemas gramask compiles (the
ones it refuses are left out). Run on a quiet machine and give ``uptime`` with the numbers.

    python tools/bench_first_mask.py [--vocab deepseek-v4] [--sets sample] [--no-cold] [-v]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent / "json_schemas"


def cases(sets: list[str]) -> list[dict[str, Any]]:
    return [c for s in sets for c in json.loads((HERE / f"{s}.json").read_text())]


def first_mask(gm: Any, vocab: Any, schema: Any) -> tuple[float, float] | None:
    """(wall, CPU) seconds of compile + first mask; None if gramask refuses the schema."""
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = gm.Grammar.from_json_schema(schema)
    except gm.GrammarError:
        return None
    gm.compile(g, vocab, cache=False, progress=False).constraint().allowed()
    return time.perf_counter() - t0, time.process_time() - c0


def pct(xs: list[float], q: float) -> str:
    return f"{float(np.percentile(xs, q)) * 1e3:.1f} ms" if xs else "—"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--sets", default="sample")
    ap.add_argument("--no-cold", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a cold child: time this schema
    args = ap.parse_args(argv)
    import numpy.ma  # noqa: F401  numpy imports it on the first np.unique (~50 ms), once

    import gramask as gm
    import gramask.compiler.diagnostics
    import gramask.compiler.pipeline  # the modules a server imports at start: out of the timing
    import gramask.frontends.json_schema
    import gramask.frontends.json_strings
    import gramask.runtime.budget.contextual
    import gramask.runtime.budget.planner
    import gramask.runtime.budget.verify
    import gramask.runtime.core.constraint
    import gramask.runtime.core.contextual_lexer

    todo = cases(args.sets.split(","))
    vocab = gm.Vocabulary.bundled(args.vocab)
    if args.one is not None:
        r = first_mask(gm, vocab, next(c for c in todo if c["name"] == args.one)["schema"])
        print(json.dumps(r))
        return 0
    results: dict[str, dict[str, tuple[float, float]]] = {"warm": {}, "cold": {}}
    first_mask(gm, vocab, {"type": "object", "properties": {"warm": {"type": "integer"}}})
    for c in todo:
        r = first_mask(gm, vocab, c["schema"])
        if r is not None:
            results["warm"][c["name"]] = r
    if not args.no_cold:
        for c in todo:
            out = subprocess.run(
                [sys.executable, __file__, "--vocab", args.vocab, "--sets", args.sets,
                 "--one", c["name"]], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            if r is not None:
                results["cold"][c["name"]] = (r[0], r[1])
    if args.verbose:
        for mode, res in results.items():
            for name, (w, c) in res.items():
                print(f"  {mode} {name}: wall {w * 1e3:.1f} ms, CPU {c * 1e3:.1f} ms")
    print(f"{len(todo)} schemas ({args.sets}), vocabulary {args.vocab} ({len(vocab)} tokens)")
    print("| time to first mask | schemas | wall p50 / p99 | CPU p50 / p99 |")
    print("| --- | --- | --- | --- |")
    for mode, res in results.items():
        if res:
            w = [x[0] for x in res.values()]
            c = [x[1] for x in res.values()]
            print(f"| {mode} | {len(res)} | {pct(w, 50)} / {pct(w, 99)} "
                  f"| {pct(c, 50)} / {pct(c, 99)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
