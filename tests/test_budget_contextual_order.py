"""The contextual budget's grouping walks a step's tokens longest first, ids ascending among
equals; the order is read off one vocabulary-wide order where the step's ids come ascending
(a mask's), and sorted afresh otherwise: both must give the sort's answer."""

from __future__ import annotations

import numpy as np

from gramask.runtime.budget.contextual import ContextualBudgetPlanner


def _reference(toks: np.ndarray, lens: np.ndarray) -> np.ndarray:
    toks = toks[lens[toks] > 0]
    return toks[np.argsort(-lens[toks], kind="stable")]


def test_longest_first_matches_a_stable_sort() -> None:
    rng = np.random.default_rng(7)
    pl = object.__new__(ContextualBudgetPlanner)  # (the order needs no grammar)
    for _ in range(300):
        lens = rng.integers(0, 7, size=int(rng.integers(1, 80)))
        mask = rng.random(lens.size) < rng.random()
        ascending = np.flatnonzero(mask)
        shuffled = rng.permutation(ascending)
        for toks in (ascending, shuffled):
            got = pl._longest_first(toks, lens)
            assert np.array_equal(got, _reference(toks, lens)), (toks, lens)
        # the vocabulary-wide order is built for the first call and kept
        assert pl._by_length is None or pl._by_length.size == lens.size
        pl._by_length = None
