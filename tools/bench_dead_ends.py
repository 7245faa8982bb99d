"""CPU seconds of forcing sample programs through a grammar that needs the dead-end search
(SynCode's SQL grammar in the contextual mode, say), and a digest of every mask on the way.

Usage: PYTHONPATH=.:tools python tools/bench_dead_ends.py GRAMMAR.lark SAMPLES_DIR
           [--mode contextual] [--cuts 1] [--what pfb] [--vocab deepseek-v4] [--seed 0]

Per sample (``SAMPLES_DIR/*``, in name order): forced prefix-only (``p``), then ``--cuts``
random fill-in-the-middle cuts forced without (``f``) and with a budget of the middle's
tokens + 4 (``b``). Each forcing is timed in process CPU seconds (the machine is shared;
wall time is not comparable) from the constraint's setup through EOS. The digest hashes
every ``allowed()`` in order: two versions of the runtime that print the same digest for
the same arguments gave the same masks.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
import warnings
from pathlib import Path

import gramask


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("grammar")
    ap.add_argument("samples")
    ap.add_argument("--mode", default="contextual")
    ap.add_argument("--cuts", type=int, default=1)
    ap.add_argument("--what", default="pfb", help="p: prefix, f: FIM, b: FIM + budget")
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from tests._support import hf_tokenizer

    path = Path(a.grammar)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gramask.Grammar.from_lark(path.read_text(), import_paths=[str(path.parent)],
                                      source=path.stem, lexer=a.mode)
    cg = gramask.compile(g, gramask.Vocabulary.bundled(a.vocab), progress=False)
    tok = hf_tokenizer(a.vocab)
    digest = hashlib.sha256()

    def force(prefix: str, middle: str, suffix: str | None, slack: int | None) -> str:
        ids = tok(middle)
        c = cg.constraint(prefix, suffix=suffix,
                          max_tokens=None if slack is None else len(ids) + slack)
        for t in ids:
            m = c.allowed()
            digest.update(m.tobytes())
            if not m[t]:
                return f"forbidden {c.vocab.token_bytes(t)!r}"
            c.advance(t)
        m = c.allowed()
        digest.update(m.tobytes())
        return "ok" if m[c.vocab.eos_token_id] else "EOS forbidden"

    rnd = random.Random(a.seed)
    times: dict[str, list[float]] = {}

    def timed(kind: str, name: str, *args: object) -> None:
        t0 = time.process_time()
        r = force(*args)  # type: ignore[arg-type]
        times.setdefault(kind, []).append(time.process_time() - t0)
        print(f"{name} {kind}: {r} {times[kind][-1]:.2f} s", flush=True)

    for sp in sorted(Path(a.samples).iterdir()):
        s = sp.read_text()
        if "p" in a.what:
            timed("prefix", sp.name, "", s, None, None)
        for _ in range(a.cuts):
            i, j = sorted(rnd.randint(0, len(s)) for _ in range(2))
            if "f" in a.what:
                timed("FIM", f"{sp.name}[{i}:{j}]", s[:i], s[i:j], s[j:], None)
            if "b" in a.what:
                timed("FIM+budget", f"{sp.name}[{i}:{j}]", s[:i], s[i:j], s[j:], 4)
    for kind, v in times.items():
        print(f"{kind}: {len(v)} runs, mean {sum(v) / len(v):.2f} CPU s, total {sum(v):.1f}")
    print("digest", digest.hexdigest()[:16])
    return 0


if __name__ == "__main__":
    sys.exit(main())
