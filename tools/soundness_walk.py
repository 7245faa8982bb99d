"""Soundness walks for the bundled Python grammar: every text called complete must ``ast.parse``.

A model breaks a grammar with the tokens a grammar author does not think of: CJK, math symbols,
typographic quotes, control characters, long rare merges. These walks start from real stdlib
code cut at a random character, then draw tokens from ``allowed()`` with weights that favour
tokens with non-ASCII bytes and rare (high-id) tokens, in four modes:

* ``prefix``      — ``constraint(prefix)``;
* ``fim``         — ``constraint(prefix, suffix=rest of the file after a ≤ 100 character gap)``;
* ``budget``      — ``constraint(prefix, max_tokens=1..64)``;
* ``fim+budget``  — both.

Whenever ``is_complete()`` holds (EOS allowed), ``prefix + generated + suffix`` is given to the
running interpreter's ``ast.parse``; a rejection is a soundness failure. Setups the runtime
refuses (a budget below the minimum, a suffix it cannot connect) are counted apart::

    PYTHONPATH=. python tools/soundness_walk.py --cases 200 --seed 0
    PYTHONPATH=. python tools/soundness_walk.py --cases 50 --modes fim --vocab qwen2 --json
    PYTHONPATH=. python tools/soundness_walk.py --cases 30 --lexer contextual --keywords 200

``--lexer contextual`` walks the grammar in the contextual lexer mode (keywords reserved as
the bundled grammar declares, see gramask.compiler.keywords) instead of its own basic mode;
``--keywords W`` adds ``W`` to the draw weight of tokens that start with a hard keyword;
``--fstrings W`` to that of tokens that open an f-string or hold a brace.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import random
import re
import sys
import sysconfig
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gramask
import gramask.grammars
from gramask.grammar import LEXER_MODES

MODES = ("prefix", "fim", "budget", "fim+budget")


def parse_error(text: str, grouped: bool = False) -> str | None:
    """``None`` if the running interpreter's ``ast.parse`` accepts ``text``, else its error
    (``grouped``: the bare message, without line numbers, so errors of one kind group)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError) as e:
        return str(getattr(e, "msg", e)) if grouped else f"{type(e).__name__}: {e}"
    except (RecursionError, MemoryError):
        return "too deep"
    return None


_FSTRING_OPEN = re.compile(rb"(?<![A-Za-z0-9_])(?:[fF]|[rR][fF]|[fF][rR])[\"']")


def token_weights(vocab: gramask.Vocabulary, nonascii: float = 20.0, rare: float = 3.0,
                  keywords: float = 0.0, fstrings: float = 0.0) -> np.ndarray:
    """Draw weight per token: 1, plus ``nonascii`` if it has a non-ASCII byte, plus ``rare``
    if its id is in the upper half (BPE merges learnt late are the rare ones), plus
    ``keywords`` if its text starts with a hard keyword after blanks or a dot (``if``,
    `` in``, ``.def``, ``intersect``: where a lexer that does not reserve them goes wrong),
    plus ``fstrings`` if it opens an f-string (``f"``, ``f'``, ``rf"``...) or holds a brace
    (where replacement fields are written)."""
    import keyword

    kw = tuple(k.encode() for k in keyword.kwlist)
    n = len(vocab)
    w = np.ones(n, dtype=np.float64)
    for t in range(n):
        b = vocab.token_bytes(t)
        if any(x >= 0x80 for x in b):
            w[t] += nonascii
        if keywords and b.lstrip(b" .").startswith(kw):
            w[t] += keywords
        if fstrings and (_FSTRING_OPEN.search(b) or b"{" in b or b"}" in b):
            w[t] += fstrings
    w[n // 2:] += rare
    return w


@dataclass
class Case:
    source: str
    prefix: str
    suffix: str | None
    max_tokens: int | None
    mode: str


def stdlib_files(max_bytes: int = 60_000) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(root.rglob("*.py")):
        if "site-packages" in p.parts or "test" in p.parts or "tests" in p.parts:
            continue
        try:
            if p.stat().st_size <= max_bytes:
                out.append(p)
        except OSError:
            continue
    return out


def make_cases(files: list[Path], n: int, modes: tuple[str, ...], seed: int) -> list[Case]:
    """``n`` cases per mode, each a random stdlib file cut at a random character."""
    rnd = random.Random(seed)
    out: list[Case] = []
    while len(out) < n * len(modes):
        p = files[rnd.randrange(len(files))]
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text or parse_error(text) is not None:
            continue
        mode = modes[len(out) % len(modes)]
        cut = rnd.randrange(len(text))
        gap = cut + rnd.randint(0, 100)
        suffix = text[gap:] if "fim" in mode else None
        budget = rnd.randint(1, 64) if "budget" in mode else None
        out.append(Case(str(p), text[:cut], suffix, budget, mode))
    return out


@dataclass
class Result:
    claims: dict[str, int] = field(default_factory=lambda: collections.Counter())
    parsed: dict[str, int] = field(default_factory=lambda: collections.Counter())
    walks: dict[str, int] = field(default_factory=lambda: collections.Counter())
    refused: dict[str, int] = field(default_factory=lambda: collections.Counter())
    dead_ends: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)


def walk(
    cg: gramask.CompiledGrammar,
    case: Case,
    weights: np.ndarray,
    rnd: random.Random,
    steps: int,
    res: Result,
) -> None:
    """One weighted random walk; every complete text is checked with ``ast.parse``."""
    eos = cg.vocab.eos_token_id
    try:
        c = cg.constraint(case.prefix, suffix=case.suffix, max_tokens=case.max_tokens)
    except gramask.GramaskError as e:
        res.refused[case.mode] += 1
        res.refused[f"{case.mode}: {type(e).__name__}"] += 1
        return
    res.walks[case.mode] += 1
    suffix = case.suffix or ""
    for _ in range(steps + 1):
        m = c.allowed()
        if m[eos] != c.is_complete():
            res.failures.append({**case.__dict__, "middle": c.text,
                                 "error": "EOS allowed differs from is_complete()"})
        if m[eos]:
            res.claims[case.mode] += 1
            try:
                middle = c.data.decode("utf-8")
                err = parse_error(case.prefix + middle + suffix)
            except UnicodeDecodeError as e:
                middle, err = c.text, f"not UTF-8: {e}"
            if err is None:
                res.parsed[case.mode] += 1
            else:
                res.failures.append({**case.__dict__, "middle": middle, "error": err})
        m[eos] = False
        pool = np.flatnonzero(m)
        if not len(pool):
            if not c.is_complete():
                res.dead_ends.append({**case.__dict__, "middle": c.text})
            return
        if c.remaining_tokens == 0:
            return
        w = weights[pool]
        t = int(pool[np.searchsorted(np.cumsum(w), rnd.random() * w.sum(), side="right")
                     .clip(max=len(pool) - 1)])
        c.advance(t)


def run(cg: gramask.CompiledGrammar, cases: list[Case], steps: int, seed: int,
        keywords: float = 0.0, fstrings: float = 0.0) -> Result:
    weights = token_weights(cg.vocab, keywords=keywords, fstrings=fstrings)
    rnd = random.Random(seed)
    res = Result()
    for case in cases:
        walk(cg, case, weights, rnd, steps, res)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100, help="cases per mode")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--steps", type=int, default=24, help="tokens per walk")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--lexer", choices=LEXER_MODES, default=None,
                    help="lexer mode (default: the bundled grammar's own, basic)")
    ap.add_argument("--keywords", type=float, default=0.0,
                    help="extra draw weight for tokens that start with a hard keyword")
    ap.add_argument("--fstrings", type=float, default=0.0,
                    help="extra draw weight for tokens that open an f-string or hold a brace")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--failures", type=int, default=10, help="failures to print")
    args = ap.parse_args()
    modes = tuple(m for m in args.modes.split(",") if m)
    vocab = gramask.Vocabulary.bundled(args.vocab)
    cg = gramask.compile(gramask.grammars.load("python", lexer=args.lexer), vocab)
    t0 = time.time()
    cases = make_cases(stdlib_files(), args.cases, modes, args.seed)
    res = run(cg, cases, args.steps, args.seed, args.keywords, args.fstrings)
    report = {
        "python": sys.version.split()[0],
        "vocab": args.vocab,
        "lexer": cg.grammar.lexer,
        "keyword_weight": args.keywords,
        "fstring_weight": args.fstrings,
        "seconds": round(time.time() - t0, 1),
        "modes": {
            m: {"walks": res.walks[m], "refused": res.refused[m], "complete_claims": res.claims[m],
                "parsed": res.parsed[m]}
            for m in modes
        },
        "complete_claims": sum(res.claims.values()),
        "parsed": sum(res.parsed.values()),
        "dead_ends": len(res.dead_ends),
        "refused_by_kind": {k: v for k, v in res.refused.items() if ":" in k},
    }
    if args.json:
        print(json.dumps({**report, "failures": res.failures, "dead_end_cases": res.dead_ends},
                         indent=1, default=str))
    else:
        print(json.dumps(report, indent=1))
        for f in res.failures[: args.failures]:
            print(f"{f['mode']}: {f['error']}\n   middle={f['middle']!r}\n   "
                  f"prefix tail={f['prefix'][-60:]!r}")
    return 0 if not res.failures and not res.dead_ends else 1


if __name__ == "__main__":
    raise SystemExit(main())
