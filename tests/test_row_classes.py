"""Rows shared by lexer states that no token can tell apart (``row_classes``): the counts of
a JSON Schema ``maxLength`` string with room for any token have one row. Every state's row
equals its class's row walked without sharing, and the masks of forced and random walks
equal the full build's (which shares nothing)."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

import gramask
from gramask import Grammar
from gramask.compiler import table_rows, token_walk
from gramask.compiler.pipeline import build
from gramask.compiler.row_classes import row_representatives
from gramask.compiler.table_rows import near_row

from ._support import walk_in_lockstep
from .test_lazy_tables import _greedy
from .test_lazy_tables import _vocab as _mixed

N = 24  # longer than the vocabulary's longest token (so that counts share rows)


@functools.cache
def _vocab() -> gramask.Vocabulary:
    """The mixed vocabulary of test_lazy_tables, its tokens cut to 10 bytes at most."""
    mixed = _mixed()
    toks = [t for i, t in enumerate(mixed.tokens) if len(t) <= 10 and i != mixed.eos_token_id]
    return gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks),
                                          name="mixed10")
SCHEMA = {"type": "object", "properties": {"s": {"type": "string", "maxLength": N},
                                           "t": {"type": "string"}}, "required": ["s"]}


def test_equal_rows_per_class() -> None:
    """Each lexer state's row, walked without sharing, is its representative's: the
    equivalence is on every input as long as the longest token, which is what a row reads.
    And the counts far from the end are one class (a string of N characters has about
    ``lmax`` distinct rows, not N)."""
    vocab = _vocab()
    lazy = build(Grammar.from_json_schema(SCHEMA), vocab, progress=False, lazy=True)
    w = lazy.tables.walker
    assert w is not None and w.share_rows
    assert w.lmax < N
    rep = row_representatives(w.dfa, w.state_class, w.lmax)  # (what the walker uses)
    assert len(set(rep.tolist())) < w.dfa.num_states - 10 * (N - w.lmax)
    other = build(Grammar.from_json_schema(SCHEMA), vocab, progress=False, lazy=True)
    plain = other.tables.walker
    assert plain is not None
    plain.share_rows = False  # (before its first row) every row walked for itself
    classes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for q in range(1, w.dfa.num_states):
        ids, nodes = plain.row(q)  # (one interner: equal nodes have equal ids)
        r = int(rep[q])
        if r in classes:
            ri, rn = classes[r]
            assert np.array_equal(ids, ri) and np.array_equal(nodes, rn), (q, r)
        else:
            classes[r] = (ids, nodes)


@pytest.mark.parametrize("after", [0, token_walk.SHARE_AFTER])
def test_masks_inside_counted_strings(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Forced strings of every length up to N and past it, and random walks, have the full
    build's masks, rows shared from the first (``after`` 0) or once ``SHARE_AFTER`` rows
    are walked (then the shared walks are keyed by states first, by classes after); the
    string's rows walked lazily stay few."""
    monkeypatch.setattr(token_walk, "SHARE_AFTER", after)
    vocab = _vocab()
    g = Grammar.from_json_schema(SCHEMA)
    eager = build(g, vocab, progress=False)
    lazy = build(g, vocab, progress=False, lazy=True)
    words = "the quick brown fox jumps over a lazy dog; Über café \\n 42 "
    for n in (0, 3, N // 2, N - 5, N - 1, N, N + 1):
        text = '{"s":"' + (words * 4)[:n] + '","t":"x"}'
        ca, cb = eager.constraint(), lazy.constraint()
        for t in [*_greedy(vocab, text.encode()), None]:
            ma, mb = ca.allowed(), cb.allowed()
            assert np.array_equal(ma, mb), (n, np.flatnonzero(ma != mb)[:10])
            if t is None or not ma[t]:
                assert (n <= N) == (t is None)  # the string past N is refused
                break
            ca.advance(t)
            cb.advance(t)
    w = lazy.tables.walker
    assert w is not None and len(w.assembled) < N + after
    rng = random.Random(3)
    for _ in range(4):
        walk_in_lockstep(eager, lazy, rng, 60)


def _moore(dfa: object, state_class: np.ndarray, rounds: int) -> list[int]:
    """Moore's refinement written out plainly: per state, the smallest state whose block it
    shares after ``rounds`` rounds (the start state apart), every state re-read each round."""
    d = dfa  # (a LexerDFA)
    n = d.num_states  # type: ignore[attr-defined]
    trans = d.trans.tolist()  # type: ignore[attr-defined]
    block = [(q == 0, int(state_class[q]), int(d.accept[q]),  # type: ignore[attr-defined]
              d.accepting[q].tobytes(), d.live[q].tobytes())  # type: ignore[attr-defined]
             for q in range(n)]
    ids = _number(block)
    for _ in range(rounds):
        new = _number([(ids[q], *(ids[t] if t >= 0 else -1 for t in trans[q]))
                       for q in range(n)])
        if len(set(new)) == len(set(ids)):
            break
        ids = new
    first: dict[int, int] = {}
    return [first.setdefault(b, q) for q, b in enumerate(ids)]


def _number(keys: list[object]) -> list[int]:
    seen: dict[object, int] = {}
    return [seen.setdefault(k, len(seen)) for k in keys]


@pytest.mark.parametrize("schema", [
    SCHEMA,
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 30, "maxLength": 40},
                                      "b": {"type": "string", "format": "date"},
                                      "c": {"type": "array", "items": {"type": "string",
                                                                      "maxLength": 3}}}},
])
def test_refinement_is_moore(schema: dict[str, object]) -> None:
    """The refinement that re-reads only the predecessors of the states that moved gives
    Moore's partition, round for round, with the build's byte classes or without them (an
    automaton read back from a cache)."""
    w = build(Grammar.from_json_schema(schema), _vocab(), progress=False,
              lazy=True).tables.walker
    assert w is not None
    for rounds in (1, 2, 3, 9, w.lmax, 200):
        want = _moore(w.dfa, w.state_class, rounds)
        assert row_representatives(w.dfa, w.state_class, rounds).tolist() == want, rounds
    w.dfa._byte_class = None
    assert row_representatives(w.dfa, w.state_class, 9).tolist() == _moore(
        w.dfa, w.state_class, 9)


def test_near_rows_are_the_walked_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count near the end of the string, its row made from a count far from it (the
    tokens no longer than the depth they agree to keep its entries, the others walked),
    equals the row walked byte by byte; most of the string's end is made so."""
    monkeypatch.setattr(token_walk, "SHARE_AFTER", 0)
    monkeypatch.setattr(table_rows, "_NEAR_LONG", 1.0)  # (however many tokens are longer)
    w = build(Grammar.from_json_schema(SCHEMA), _vocab(), progress=False,
              lazy=True).tables.walker
    assert w is not None
    made = 0
    for q in range(1, w.dfa.num_states):
        got = near_row(w, q, {})
        if got is None:
            continue
        made += 1
        ids, nodes = w.row(q)
        assert np.array_equal(got[0], ids) and np.array_equal(got[1], nodes), q
    assert made > 2 * w.lmax
