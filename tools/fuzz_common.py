"""What the differential fuzzers (``tools/lark_fuzz.py``, ``tools/gbnf_fuzz.py``) share: their
common options, gramask's verdict on a whole text, tokens forced through the mask, a walk's
random allowed tokens, and the
report of the cases found, so that both read and print the same way."""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import gramask


def common_args(ap: argparse.ArgumentParser, *, grammars: int, walks: int, texts_help: str,
                timeout_help: str, out: str) -> None:
    """The options both fuzzers take (the defaults each one's own)."""
    ap.add_argument("--grammars", type=int, default=grammars)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--texts", type=int, default=30, help=texts_help)
    ap.add_argument("--force", type=int, default=8, help="texts forced through the mask each")
    ap.add_argument("--walks", type=int, default=walks)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--timeout", type=int, default=60, help=timeout_help)
    ap.add_argument("--out", type=Path, default=Path(out))
    ap.add_argument("--no-minimise", dest="minimise", action="store_false")


def complete(cg: gramask.CompiledGrammar, text: str) -> bool:
    """gramask's verdict on ``text`` as a whole (a refused prefix: not complete)."""
    try:
        return cg.constraint(text).is_complete()
    except gramask.InvalidPrefixError:
        return False


def force_into(c: gramask.Constraint, ids: list[int], eos_where: str = "at the end"
               ) -> str | None:
    """None if the mask of ``c`` takes every token of ``ids`` in turn and then EOS; else
    what failed (``eos_where``: where EOS was refused, in words)."""
    for k, t in enumerate(ids):
        if not c.allowed()[t]:
            return f"token {k} {c.vocab.token_bytes(t)!r} forbidden after {c.data!r}"
        c.advance(t)
    if not c.allowed()[c.vocab.eos_token_id]:
        return f"EOS forbidden {eos_where}"
    return None


def random_steps(c: gramask.Constraint, eos: int, rnd: random.Random, steps: int) -> None:
    """Up to ``steps`` random allowed tokens (not ``eos``) into ``c``: a walk's first part."""
    for _ in range(rnd.randint(0, steps)):
        ids = c.allowed().nonzero()[0]
        ids = ids[ids != eos]
        if not len(ids):
            break
        c.advance(int(rnd.choice(ids)))


Walk = Callable[[gramask.CompiledGrammar, str, random.Random, int], tuple[str, str | None]]


def walk_case(walk: Walk, cg: gramask.CompiledGrammar, s: str, pre: str, rnd: random.Random,
              steps: int, accepts: Callable[[str], bool], oracle: str
              ) -> tuple[str, str, str] | None:
    """A random masked walk (``walk``) from ``pre``, a prefix of the text ``s``, checked:
    (kind, text, detail) of what went wrong, or None. ``accepts``: the oracle (named
    ``oracle``) on the walk's text."""
    try:
        text, why = walk(cg, pre, rnd, steps)
    except gramask.InvalidPrefixError:
        return "prefix", pre, f"prefix of {s!r} refused"
    except Exception as e:
        return "crash", pre, f"{type(e).__name__}: {e}"
    if why is None and not accepts(text):
        why = f"{oracle} rejects the walk's text"
    return None if why is None else ("walk", text, why)


def write_cases(out: TextIO, cases: list[dict[str, object]], grammar_id: str, tag: str) -> None:
    """Print each case found on a grammar (``tag``: how the lines begin) and write it as a
    JSON line, flushed (a killed run keeps what it found)."""
    for case in cases:
        print(f"[{tag}] {case['kind']}: {case.get('detail', case.get('error'))}", flush=True)
        out.write(json.dumps({"grammar_id": grammar_id, **case}) + "\n")
        out.flush()


def summary(stats: Counter[str], out: Path, found: int, t0: float, c0: float) -> None:
    """The counts, then the cases written and the time spent (wall and CPU)."""
    for key, v in sorted(stats.items()):
        print(f"{key}: {v}")
    print(f"cases written to {out}: {found}; wall {time.time() - t0:.1f} s, "
          f"CPU {time.process_time() - c0:.1f} s")
