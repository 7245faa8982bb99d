"""RuntimeLimits and the bounded memo: ambiguous grammars stop cleanly, memos stay bounded."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import gramask
from gramask.grammar import Grammar
from gramask.runtime.memo import MISSING, BoundedMemo

AMBIGUOUS = 's: s s | "a"'  # the Earley set after n tokens holds ~n items


def _ambiguous() -> tuple[gramask.CompiledGrammar, int]:
    vocab = gramask.Vocabulary.from_tokens(["a", "aa", "</s>"], eos_token_id=2)
    return gramask.compile(Grammar.from_lark(AMBIGUOUS, start="s"), vocab, cache=False), 0


@pytest.mark.parametrize(
    ("limits", "name"),
    [
        (gramask.RuntimeLimits(max_items_per_step=60), "max_items_per_step"),
        (gramask.RuntimeLimits(max_total_items=5_000), "max_total_items"),
    ],
)
def test_an_ambiguous_grammar_hits_the_limit_cleanly(limits, name):
    cg, a = _ambiguous()
    c = cg.constraint("", limits=limits)
    with pytest.raises(gramask.LimitExceededError, match=f"RuntimeLimits.{name}") as e:
        for _ in range(1_000):
            c.allowed()
            c.advance(a)
    assert e.value.limit == name and isinstance(e.value, RuntimeError)
    steps = c.num_tokens
    assert 10 < steps < 1_000
    c.rollback(5)  # the constraint is still usable below the limit
    assert c.allowed()[a] and c.num_tokens == steps - 5


def test_default_limits_stop_the_ambiguous_grammar_before_memory_grows():
    cg, _ = _ambiguous()
    with pytest.raises(gramask.LimitExceededError):
        cg.constraint("a" * 3_000)  # before the limits: ~600 MB and 300 ms per step


def test_limits_are_per_runtime_and_old_constraints_keep_theirs():
    cg, a = _ambiguous()
    limits = gramask.RuntimeLimits(max_total_items=2_000)
    tight = cg.constraint("", limits=limits)
    assert cg.constraint("").allowed()[a] and cg.limits == limits  # None: keep the current
    loose = cg.constraint("a" * 100, limits=gramask.RuntimeLimits())  # a new shared runtime
    assert cg.limits == gramask.RuntimeLimits()
    with pytest.raises(gramask.LimitExceededError):
        for _ in range(200):
            tight.advance(a)
    assert loose.allowed()[a]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_runtime_limits_are_validated_and_frozen(bad):
    with pytest.raises(ValueError, match="mask_cache"):
        gramask.RuntimeLimits(mask_cache=bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        gramask.RuntimeLimits().mask_cache = 3  # type: ignore[misc]


def test_bounded_memo_keeps_at_most_two_generations_and_promotes_hits():
    m: BoundedMemo[int, str | None] = BoundedMemo(3)
    for i in range(3):
        m.put(i, str(i))
    m.put(3, None)  # young is full: it becomes old
    assert m.get(0) == "0"  # promoted from old
    for i in range(4, 7):
        m.put(i, str(i))  # turns over again: old (1, 2) is dropped, 0 survives
    assert m.get(1) is None and m.get(0) == "0" and len(m) <= 6
    assert m.get(3, MISSING) is None  # still in old: a stored None, told apart from a miss
    m.put(7, "7")  # turns over: old 4 is dropped, the promoted 3 and 0 survive
    assert m.get(4, MISSING) is MISSING and m.get(3, MISSING) is None
    assert m.get(0) == "0" and len(m) <= 2 * m.capacity


def test_mask_memo_is_bounded_by_the_limits():
    cg = gramask.compile(Grammar.from_lark('start: /[a-z]+/ ("," /[a-z]+/)*'),
                         gramask.Vocabulary.from_tokens(["a", "b", ",", "</s>"], eos_token_id=3),
                         cache=False)
    c = cg.constraint("", limits=gramask.RuntimeLimits(mask_cache=4, row_cache=2))
    rng = np.random.default_rng(0)
    for _ in range(60):
        ids = np.flatnonzero(c.allowed()[:3])
        c.advance(int(rng.choice(ids)))
        b = c._b  # the shared runtime
        assert len(b._masks) <= 4 and len(b._rows) <= 2 and len(b._kill) <= 2
