#!/usr/bin/env python
"""Digest of every array of a compiled grammar, to show that a compiler change leaves the masks.

Builds each grammar with ``gramask.compiler.pipeline.build`` (the full tables, no cache) and
prints one line per array: grammar, array name, dtype, shape and SHA-256 of its bytes. Run it on
two checkouts and ``diff`` the outputs::

    PYTHONPATH=/work/main python tools/artifact_digests.py > before.txt
    PYTHONPATH=. python tools/artifact_digests.py > after.txt && diff before.txt after.txt

``--scaling CASE`` digests a case of ``tools/bench_compile.py --scaling`` instead (by a part of
its name) — a generated grammar, not a bundled one.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path


def digests(name: str, grammar: object, vocab: object) -> list[str]:
    """One line per array of ``grammar`` compiled against ``vocab``."""
    from gramask.compiler.pipeline import build

    cg = build(grammar, vocab, progress=False)  # type: ignore[arg-type]
    out = []
    for key, a in sorted(cg._arrays().items()):
        h = hashlib.sha256(a.tobytes()).hexdigest()[:24]
        out.append(f"{name} {key} {a.dtype.str} {a.shape} {h}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammars", default="python,c,sql,json")
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--scaling", help="a case of bench_compile.py --scaling (part of its name)")
    a = ap.parse_args(argv)
    import gramask
    from gramask.grammar import Grammar

    v = gramask.Vocabulary.bundled(a.vocab)
    if a.scaling:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_compile import _scaling_cases

        for case, (kind, text) in _scaling_cases().items():
            if a.scaling.lower() in case.lower() and kind == "lark":
                print("\n".join(digests(case, Grammar.from_lark(text), v)), flush=True)
        return 0
    for g in a.grammars.split(","):
        print("\n".join(digests(g, gramask.grammars.load(g), v)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
