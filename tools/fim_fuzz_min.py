"""Minimising the cases of ``tools/fim_fuzz.py``: a problem's kind replayed on a smaller
grammar and cut (the walk's tokens replaced by the real tokenizer's tokens of its text)."""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable

import fim_fuzz_checks as chk
import lark
import lark_fuzz as lf
import lark_fuzz_gen as gen
from fuzz_common import complete

import gramask
from gramask.errors import GramaskError

Bad = Callable[[str, chk.Cut], bool]


def _env(g: str, mode: str, vocab: gramask.Vocabulary, tok: Callable[[str], list[int]],
         indent: bool) -> chk.Env:
    p = lf.oracle(g, mode, gen.Indenter() if indent else None)
    cg = lf.compile_(g, mode, vocab)
    return chk.Env(cg, lambda t: chk.lark_accepts(p, t), tok, random.Random(0), 0, Counter(), mode)


def _walk_to(env: chk.Env, c: gramask.Constraint, text: str) -> bool:
    """Advance the real tokens of ``text``: were they all allowed?"""
    for t in env.tok(text):
        if not c.allowed()[t]:
            return False
        c.advance(t)
    return True


def _check(kind: str, env: chk.Env, cut: chk.Cut, witness: str) -> bool:
    budget = None
    if kind.startswith("budget-k"):
        k, _, kind = kind[len("budget-k"):].partition("-")
        budget = len(env.tok(cut.middle)) + int(k)
    c = chk.setup(env, cut, budget)
    if kind in ("suffix-refused", "suffix-refused-connectable", "prefix-refused"):
        want = "suffix-refused" if kind.startswith("suffix") else kind
        return isinstance(c, chk.Problem) and c.kind == want and chk.both_take(env, cut.text)
    if isinstance(c, chk.Problem):
        return False
    if kind == "force":
        return chk.both_take(env, cut.text) and chk.force(c, env.tok(cut.middle)) is not None
    if not _walk_to(env, c, cut.middle):
        return False
    if kind == "completion-missed":  # no completion found, the cut's suffix completes
        try:
            c.shortest_completion()
        except gramask.NoCompletionError:
            done = cut.prefix + cut.middle + witness + cut.suffix
            return chk.both_take(env, done)
        return False
    if kind.startswith("dead-end"):
        p = chk.dead_end(env, chk.Cut(cut.prefix, "", cut.suffix), c)
        return p is not None and p.kind == kind
    if kind == "walk-unsound":
        return bool(c.allowed()[env.eos]) and not env.accepts(cut.text) and \
            not complete(env.cg, cut.text)
    return False


REPLAYED = ("force", "completion-missed", "suffix-refused", "suffix-refused-connectable", "prefix-refused",
            "dead-end", "dead-end-empty", "dead-end-lexer", "dead-end-ignored", "walk-unsound")


def replay(kind: str, mode: str, vocab: gramask.Vocabulary, tok: Callable[[str], list[int]],
           indent: bool, witness: str | None = None) -> Bad | None:
    """Does (grammar, cut) still show ``kind``? None for kinds that are not replayed (a
    random budgeted walk, a crash)."""
    base = kind.partition("-")[2].partition("-")[2] if kind.startswith("budget-k") else kind
    if base not in REPLAYED:
        return None

    @functools.lru_cache(maxsize=4)  # the cut shrinks under one grammar: built once
    def env_of(g: str) -> chk.Env:  # (nothing here reads its rnd or stats)
        return _env(g, mode, vocab, tok, indent)

    def bad(g: str, cut: chk.Cut) -> bool:
        try:
            return _check(kind, env_of(g), cut, witness or "")
        except (lark.exceptions.LarkError, GramaskError, RecursionError):
            return False

    return bad


def minimise(g: str, cut: chk.Cut, bad: Bad) -> tuple[str, chk.Cut]:
    """Grammar definitions, lines and words, then the suffix, prefix and middle, one
    character at a time, while ``bad`` holds."""
    cut = _shrink_cut(g, cut, bad)
    blocks = lf.shrink(lf._blocks(g), lambda bs: bad("\n".join(bs) + "\n", cut))
    lines = lf.shrink("\n".join(blocks).splitlines(), lambda ls: bad("\n".join(ls) + "\n", cut))
    for i in range(len(lines)):
        words = lf.shrink(lines[i].split(" "), lambda ws, i=i: bad(
            "\n".join([*lines[:i], " ".join(ws), *lines[i + 1:]]) + "\n", cut))
        lines[i] = " ".join(words)
    g = "\n".join(lines) + "\n"
    return g, _shrink_cut(g, cut, bad)


def _shrink_cut(g: str, cut: chk.Cut, bad: Bad) -> chk.Cut:
    s = "".join(lf.shrink(list(cut.suffix), lambda cs: bad(g, chk.Cut(
        cut.prefix, cut.middle, "".join(cs)))))
    p = "".join(lf.shrink(list(cut.prefix), lambda cs: bad(g, chk.Cut(
        "".join(cs), cut.middle, s))))
    m = "".join(lf.shrink(list(cut.middle), lambda cs: bad(g, chk.Cut(p, "".join(cs), s))))
    return chk.Cut(p, m, s)
