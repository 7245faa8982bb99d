"""The quotient's end verdicts are memoised per quotient view (gramask/runtime/fim/base.py):
the memo must give what the computation gives, be shared by clones only, and never carry a
verdict over to another request (parser-state uids are per quotient, so they repeat)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramask

from .conftest import compiled


def _views(c: gramask.Constraint, rng: random.Random, steps: int) -> list[tuple]:
    """States of a random walk from ``c`` and of the tokens allowed at each step."""
    out = []
    vocab = c._vocab  # type: ignore[attr-defined]
    for _ in range(steps):
        st = c._history[-1]  # type: ignore[attr-defined]
        out.append(st)
        m = c.allowed()
        m[vocab.eos_token_id] = False
        ids = np.flatnonzero(m)
        if not len(ids):
            break
        for t in rng.sample(ids.tolist(), min(24, len(ids))):
            s = c._walk(st, vocab.token_bytes(t))  # type: ignore[attr-defined]
            if not isinstance(s, int):
                out.append(s)
        ascii_ids = [i for i in ids.tolist() if vocab.token_bytes(i).isascii()]
        c.advance(rng.choice(ascii_ids or ids.tolist()))
    return out


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_memoised_verdict_is_the_computed_one(lexer: str) -> None:
    cg = compiled("python", "gpt2") if lexer == "basic" else gramask.compile(
        gramask.grammars.load("python", lexer=lexer), gramask.Vocabulary.bundled("gpt2"),
        progress=False)
    rng = random.Random(1)
    prefix, suffix = "def f(a, b):\n    if a:\n        x = (a, ", ")\n    return b\n"
    c = cg.constraint(prefix=prefix, suffix=suffix)
    views = _views(c, rng, 10)
    assert len(views) > 20
    verdicts = set()
    for _ in range(2):  # the second round reads the memo
        for st in views:
            v = c._quotient_end(st)  # type: ignore[attr-defined]
            assert v == c._quotient_verdict(st[0], st[1], st[2])  # type: ignore[attr-defined]
            verdicts.add(v)
    assert len(verdicts) > 1  # the walk met views the quotient tells apart


def test_clones_share_the_memo_other_requests_do_not() -> None:
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix="x = (1, ", suffix=")\n")
    d = cg.constraint(prefix="x = (1, ", suffix="))\n")
    assert c.clone()._qends is c._qends  # type: ignore[attr-defined]
    assert d._qends is not c._qends  # type: ignore[attr-defined]


def test_same_view_other_suffix_other_verdict() -> None:
    """Two requests whose quotient states have the same uids (each quotient numbers its own
    states) but whose suffixes differ: each keeps its own verdict, in either order."""
    g = gramask.Grammar.from_lark('start: "0" start "1" | ', start="start", lexer="basic")
    v = gramask.Vocabulary.from_tokens([b"0", b"1", b"</s>"], eos_token_id=2)
    cg = gramask.compile(g, v, cache=False, progress=False)
    for order in (("1", "11"), ("11", "1")):
        cs = {s: cg.constraint(prefix="0", suffix=s) for s in order}
        for s in (*order, *order):
            assert cs[s].is_complete() == (s == "1")
            assert bool(cs[s].allowed()[2]) == (s == "1")


def test_ends_follow_the_parser_state_on_one_lexer_state() -> None:
    """Middles of 0s and 1s between "0" and "1": every step has the same lexer view but for
    the parser state, and the end verdict must follow the latter (oracle: 0^n 1^n)."""
    g = gramask.Grammar.from_lark('start: "0" start "1" | ', start="start", lexer="basic")
    v = gramask.Vocabulary.from_tokens([b"0", b"1", b"</s>"], eos_token_id=2)
    cg = gramask.compile(g, v, cache=False, progress=False)
    rng = random.Random(3)
    for _ in range(20):
        c = cg.constraint(prefix="0", suffix="1")
        for _ in range(8):
            text = "0" + c.text + "1"
            n = len(text) // 2
            assert c.is_complete() == (text == "0" * n + "1" * n), text
            ids = [t for t in (0, 1) if c.allowed()[t]]
            if not ids:
                break
            c.advance(rng.choice(ids))
