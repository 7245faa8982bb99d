"""The completion pool of fill-in-the-middle budgets (``runtime/budget/verify.py``): what it
holds must not depend on completions no later check can use."""

from __future__ import annotations

from gramask.runtime.budget.verify import CompletionPool


def test_a_completion_longer_than_what_is_left_is_not_pooled() -> None:
    # the tokens left never grow: a plan of 5 with 3 left is never usable again, and pooled
    # it pushed the oldest usable completion out of the eight (the old pool held it)
    pool = CompletionPool(size=2)
    pool.add((1, 2), 3)
    pool.add((3,), 3)
    pool.add((4, 5, 6, 7, 8), 3)
    assert pool.items == [(3,), (1, 2)]


def test_fit_drops_what_no_later_check_can_use() -> None:
    pool = CompletionPool(size=8)
    for c in [(1,), (1, 2, 3), (4, 5)]:
        pool.add(c, 10)
    pool.fit(2)
    assert pool.items == [(4, 5), (1,)]
    pool.add((6, 7, 8), 2)
    assert pool.items == [(4, 5), (1,)]
