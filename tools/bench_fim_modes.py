"""Fill-in-the-middle in the two lexer modes on the same Python spans: setup and per-step mask
CPU time (``time.process_time``), with the true middle forced (a blocked token or a missing
EOS at its end is counted).

Cases are ``tools/fim_eval.py``'s (random spans and block boundaries of the running
interpreter's standard library, seeded); the bundled Python grammar is compiled with
``lexer="basic"`` and ``lexer="contextual"`` against one vocabulary.

    PYTHONPATH=. python tools/bench_fim_modes.py --vocab gpt2 --cases 6 --seed 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fim_eval import cases  # type: ignore[import-not-found, unused-ignore]

import gramask


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--cases", type=int, default=6, help="cases per kind (random, boundary)")
    ap.add_argument("--seed", type=int, default=3)
    args = ap.parse_args(argv)
    from tests._support import hf_tokenizer

    v = gramask.Vocabulary.bundled(args.vocab)
    encode = hf_tokenizer(args.vocab)
    cgs = {lx: gramask.compile(gramask.grammars.load("python", lexer=lx), v, progress=False)
           for lx in ("basic", "contextual")}
    res = {lx: {"setup": [], "mask": [], "blocked": 0, "eos": 0, "cases": 0} for lx in cgs}
    todo = [c for kind in ("random", "boundary")
            for c in cases(kind, args.cases, args.seed, max_bytes=64_000, per_file=2)]
    for case in todo:
        ids = encode(case.middle)
        for lx, cg in cgs.items():
            r = res[lx]
            t0 = time.process_time()
            try:
                c = cg.constraint(prefix=case.prefix, suffix=case.suffix)
            except gramask.GramaskError as e:
                print(f"{lx}: setup error {e}", file=sys.stderr)
                continue
            r["setup"].append(time.process_time() - t0)
            r["cases"] += 1
            for t in ids:
                t0 = time.process_time()
                m = c.allowed()
                r["mask"].append(time.process_time() - t0)
                if not m[t]:
                    r["blocked"] += 1
                    break
                c.advance(t)
            else:
                r["eos"] += not c.allowed()[v.eos_token_id]
    for lx, r in res.items():
        s, m = 1e3 * np.array(r["setup"]), 1e3 * np.array(r["mask"])
        print(f"{lx:10} cases {r['cases']}, blocked {r['blocked']}, EOS refused at the end "
              f"{r['eos']} | setup CPU ms p50 {np.median(s):.1f} mean {s.mean():.1f} "
              f"max {s.max():.1f} | mask CPU ms (n={m.size}) p50 {np.median(m):.2f} "
              f"mean {m.mean():.1f} p99 {np.percentile(m, 99):.1f} max {m.max():.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
