"""Backward reachability as bit sets (gramask.compiler.reach_back), the lexer's winnable
sets and dense product search built on it, and the lexer's lazily converted rows: each
against a plain search over random automata."""

from __future__ import annotations

import numpy as np
import pytest

from gramask.compiler import lexer as lx
from gramask.compiler.lexer import LexerRows
from gramask.compiler.product_search import explore_dense, explore_dense_exact
from gramask.compiler.reach_back import ReverseEdges, reach_back
from gramask.encoding import distinct_columns


def _random_table(rng: np.random.Generator, n: int, width: int, dead: float) -> np.ndarray:
    t = rng.integers(0, n, size=(n, width))
    t[rng.random((n, width)) < dead] = -1
    return t


def _reaches(table: np.ndarray, q: int) -> set[int]:
    seen, todo = {q}, [q]
    while todo:
        s = todo.pop()
        for r in table[s].tolist():
            if r >= 0 and r not in seen:
                seen.add(r)
                todo.append(r)
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_reach_back_is_the_or_over_reachable_states(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    table = _random_table(rng, n, int(rng.integers(1, 9)), float(rng.random()))
    seeds = np.zeros(n, dtype=np.uint64)
    for q in rng.choice(n, size=min(n, 5), replace=False).tolist():
        seeds[q] = np.uint64(1) << np.uint64(int(rng.integers(0, 63)))
    got = reach_back(ReverseEdges(table), seeds)
    for q in range(n):
        want = 0
        for r in _reaches(table, q):
            want |= int(seeds[r])
        assert int(got[q]) == want, q


def test_reverse_edges_by_columns_keeps_the_distinct_edges() -> None:
    rng = np.random.default_rng(7)
    small = _random_table(rng, 30, 5, 0.3)
    wide = small[:, rng.integers(0, 5, size=256)]  # bytes that share a column
    for e in (ReverseEdges(wide, by_columns=True), ReverseEdges(wide)):
        for t in range(30):
            preds = sorted(e.pred[e.ptr[t]: e.ptr[t + 1]].tolist())
            assert preds == sorted({s for s in range(30) if (wide[s] == t).any()})


@pytest.mark.parametrize("width", [0, 1, 7, 256])
def test_distinct_columns_numbers_columns_by_first_occurrence(width: int) -> None:
    rng = np.random.default_rng(width)
    table = _random_table(rng, 12, 4, 0.5)[:, rng.integers(0, 4, size=width)]
    first, number = distinct_columns(table)
    cols = [tuple(table[:, i].tolist()) for i in range(width)]
    want_first = [i for i in range(width) if cols[i] not in cols[:i]]
    assert first.tolist() == want_first
    assert number.tolist() == [want_first.index(cols.index(c)) for c in cols]
    assert (table[:, first][:, number] == table).all()


@pytest.mark.parametrize("many", [False, True])  # bit sets of one uint64, or the worklist
@pytest.mark.parametrize("seed", range(4))
def test_winnable_matches_the_closure_of_accepting_states(seed: int, many: bool) -> None:
    rng = np.random.default_rng(100 + seed)
    n, n_terms = int(rng.integers(2, 80)), int(rng.integers(1, 20)) + (64 if many else 0)
    cls_trans = _random_table(rng, n, 6, 0.6)
    accept = np.where(rng.random(n) < 0.3, rng.integers(0, n_terms, size=n), -1)
    got = lx._winnable(accept, n_terms, ReverseEdges(cls_trans))
    for q in range(n):
        want = {int(accept[r]) for r in _reaches(cls_trans, q) if accept[r] >= 0}
        assert set(np.flatnonzero(got[q]).tolist()) == want


@pytest.mark.parametrize("seed", range(4))
def test_dense_search_numbers_states_as_the_exact_search(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    sizes = rng.integers(2, 12, size=int(rng.integers(1, 6)))
    offset = np.concatenate([[0], np.cumsum(sizes)])
    parts = [np.where((t := _random_table(rng, int(k), 4, 0.3)) >= 0, t + offset[i], -1)
             for i, k in enumerate(sizes)]
    table = np.concatenate(parts).astype(np.int64)
    start = offset[:-1].astype(np.int64)

    def never(order: list[tuple[int, ...]]) -> None:
        raise AssertionError("limit")

    fast = explore_dense(table, start, 10**6, never)
    exact = explore_dense_exact(table, start, 10**6, never)
    assert np.array_equal(fast[0], exact[0]) and np.array_equal(fast[1], exact[1])


@pytest.mark.parametrize("seed", range(4))
def test_dense_search_by_groups_of_classes_numbers_states_as_the_exact_search(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # one or two terminals whose tables repeat columns (classes they do not tell apart):
    # a level steps one class per group, and the states come numbered as stepping each
    import gramask.compiler.product_search as ps

    monkeypatch.setattr(ps, "_GROUPED_ROWS", 1)  # every level, however small
    rng = np.random.default_rng(300 + seed)
    n_cls = 12
    sizes = rng.integers(3, 30, size=int(rng.integers(1, 3)))
    offset = np.concatenate([[0], np.cumsum(sizes)])
    parts, ranks = [], []
    for i, k in enumerate(sizes):
        own = rng.integers(0, int(rng.integers(1, 5)), size=n_cls)  # class → own column
        t = _random_table(rng, int(k), int(own.max()) + 1, 0.2)[:, own]
        parts.append(np.where(t >= 0, t + offset[i], -1))
        ranks.append(own)
    table = np.concatenate(parts).astype(np.int64)
    start = offset[:-1].astype(np.int64)

    def never(order: list[tuple[int, ...]]) -> None:
        raise AssertionError("limit")

    fast = ps.explore_dense(table, start, 10**6, never, np.stack(ranks))
    exact = explore_dense_exact(table, start, 10**6, never)
    assert np.array_equal(fast[0], exact[0]) and np.array_equal(fast[1], exact[1])


def test_lexer_rows_read_like_the_lists_of_the_table() -> None:
    trans = np.arange(12, dtype=np.int32).reshape(3, 4) - 1
    rows = LexerRows(trans)
    assert rows[2][3] == 10 and rows[0] == [-1, 0, 1, 2]
    assert len(rows) == 3 and list(rows) == trans.tolist()
    with pytest.raises(IndexError):
        rows[3]
