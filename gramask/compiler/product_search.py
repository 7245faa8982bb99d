"""The dense search of a lexer's product automaton (``build_lexer_dfa`` of
:mod:`gramask.compiler.lexer`, up to a few hundred terminals): a product state is a row of
global states, one per terminal (-1 dead), and a whole level of the search steps at once."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["explore_dense", "explore_dense_exact"]

_DENSE_CHUNK = 1 << 22  # entries of (states x classes x terminals) stepped at once
# a level of one or two live terminals and at least this many (state, class) pairs steps
# one class per group of classes they do not tell apart (finding the groups costs more on a
# small level; with many terminals live, the gather of a few classes costs more than it saves)
_GROUPED_ROWS = 4096


def explore_dense(
    table: np.ndarray, start: np.ndarray, limit: int,
    on_limit: Callable[[list[tuple[int, ...]]], None],
    class_ranks: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gramask.compiler.regex_bytes.explore` over dense rows, a level at a time:
    (the states' rows, their successors per class). The states found while stepping a
    level are numbered in the order their (state, class) pairs come, which is the order
    ``explore`` numbers them in (it steps the same states in the same order), so the
    product is the same. Needs a terminal at least: a row of width 0 has no shape to step
    (the caller takes the sparse path for a grammar without terminals).

    The states found so far are looked up by a 64-bit hash of their row (the lookups and
    the new states' numbers in bulk, not a Python step per successor: a request's lexer may
    have 50,000 states), each hit checked against the row it names; a hash shared by two
    rows (never seen) redoes the search with the rows' bytes as keys
    (:func:`explore_dense_exact`).

    ``class_ranks`` ((terminals, classes): per terminal, the rank of each class's column
    among its own distinct columns) lets a level step only one class of each group that
    the terminals live in it do not tell apart (a counted string beside a hostname: 28 of
    54), its smallest, and copy that class's successors to the others. A state's distinct
    successors then come in the same order (a group's first class is its smallest), so the
    states are numbered as without it."""
    n_t, n_cls = len(start), table.shape[1]
    assert n_t > 0
    ext = np.concatenate([table, np.full((1, n_cls), -1, dtype=np.int64)]).astype(np.int32)
    every_class = np.arange(n_cls)
    groups: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}  # live terminals → see _groups
    mult = _row_hash_multipliers(n_t)
    index: dict[int, int] = {}  # state 0 is "no lexeme begun": no move returns to it
    rows = np.empty((max(16, min(limit + 1, 1024)), n_t), dtype=np.int32)
    rows[0] = start
    n = 1
    succ: list[np.ndarray] = []
    lo = 0
    while lo < n:
        hi = min(n, lo + max(1, _DENSE_CHUNK // (n_cls * n_t)))
        block = rows[lo:hi]
        # the terminals live in some state of the block (the others stay dead: their
        # columns are -1 in every successor, and add a constant to every row's hash)
        cols = np.flatnonzero((block >= 0).any(axis=0))
        reps, of_class = every_class, every_class
        if (class_ranks is not None and 0 < cols.size <= 2
                and (hi - lo) * n_cls >= _GROUPED_ROWS):
            key = cols.tobytes()
            got_g = groups.get(key)
            if got_g is None:
                got_g = groups[key] = _groups(class_ranks[cols])
            reps, of_class = got_g
        m_cls = len(reps)
        ids = np.full((hi - lo) * m_cls, -1, dtype=np.int64)
        if not cols.size:
            nxt = np.zeros((len(ids), 0), dtype=np.int32)
        elif m_cls == n_cls:
            nxt = np.ascontiguousarray(ext[block[:, cols]].transpose(0, 2, 1)).reshape(
                -1, len(cols))
        else:  # (one gather of the groups' classes: no copy of the table per group)
            nxt = np.ascontiguousarray(ext[block[:, cols][:, None, :], reps[None, :, None]]
                                       ).reshape(-1, len(cols))
        alive = np.flatnonzero((nxt >= 0).any(axis=1))
        if alive.size:
            live = nxt[alive].astype(np.int64)
            first, inv, h = _distinct_live(live, mult[cols])
            with np.errstate(over="ignore"):  # the whole row's hash, of the distinct ones
                h = h - (mult.sum() - mult[cols].sum())
            full = np.full((len(first), n_t), -1, dtype=np.int32)
            full[:, cols] = live[first]
            if len(np.unique(h)) != len(first):  # two rows, one hash
                return explore_dense_exact(table, start, limit, on_limit)
            order = np.argsort(first, kind="stable")  # in the order the pairs come
            hk = h[order].tolist()
            got_o = np.array([-1 if q is None else q for q in map(index.get, hk)],
                             dtype=np.int64)
            hit = got_o >= 0
            if hit.any() and not np.array_equal(rows[got_o[hit]], full[order[hit]]):
                return explore_dense_exact(table, start, limit, on_limit)
            miss = np.flatnonzero(~hit)
            new_ids = n + np.arange(len(miss), dtype=np.int64)
            got_o[miss] = new_ids
            if n + len(miss) > limit:  # the limit-th state's discovery: the states so far
                rows = _grow(rows, limit + 1)
                rows[n: limit + 1] = full[order[miss[: limit + 1 - n]]]
                on_limit([tuple(r[r >= 0].tolist()) for r in rows[: limit + 1]])
            rows = _grow(rows, n + len(miss))
            rows[n: n + len(miss)] = full[order[miss]]
            index.update(zip([hk[i] for i in miss.tolist()], new_ids.tolist(), strict=True))
            n += len(miss)
            got = np.empty(len(first), dtype=np.int64)
            got[order] = got_o
            ids[alive] = got[inv]
        succ.append(ids.reshape(hi - lo, m_cls)[:, of_class])
        lo = hi
    return rows[:n], np.concatenate(succ).astype(np.int32)


def _groups(ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the smallest class of each group of classes that ``ranks`` (the live terminals'
    rows of the class ranks) do not tell apart, ascending; per class, its group's position
    among those)."""
    _, first, inv = np.unique(ranks, axis=1, return_index=True, return_inverse=True)
    order = np.argsort(first)
    pos = np.empty(len(order), dtype=np.int64)
    pos[order] = np.arange(len(order))
    return first[order], pos[inv.reshape(-1)]


def _grow(rows: np.ndarray, need: int) -> np.ndarray:
    """``rows`` with room for ``need`` rows at least (doubling)."""
    if need <= len(rows):
        return rows
    out = np.empty((max(need, 2 * len(rows)), rows.shape[1]), dtype=rows.dtype)
    out[: len(rows)] = rows
    return out


def _row_hash_multipliers(n_t: int) -> np.ndarray:
    """Odd 64-bit multipliers of a row hash (``rows @ mult``, wrapping around), random
    with a fixed seed: multiples of one constant (Fibonacci hashing) let rows that differ
    by small offsets collide (``2·m₁ = m₂``), which sent the search to its exact fallback
    in a few schemas of every hundred. What a hash groups is checked, so the numbers never
    change the states found, only how fast. The numbers are SplitMix64's (Steele, Lea and
    Flood, "Fast splittable pseudorandom number generators"), a few numpy operations: a
    generator of ``numpy.random`` costs its import, ~25 ms of a new process's first request."""
    z = np.arange(1, n_t + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # (wraps)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z >> np.uint64(2)).astype(np.int64) * 2 + 1


def explore_dense_exact(
    table: np.ndarray, start: np.ndarray, limit: int,
    on_limit: Callable[[list[tuple[int, ...]]], None],
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`explore_dense` with the rows' bytes as the keys of the states found."""
    n_t, n_cls = len(start), table.shape[1]
    ext = np.concatenate([table, np.full((1, n_cls), -1, dtype=np.int64)])  # -1: dead
    width = 4 * n_t
    mult = _row_hash_multipliers(n_t)
    index: dict[bytes, int] = {}
    found = [start]
    succ: list[np.ndarray] = []
    lo = 0
    while lo < len(found):
        hi = min(len(found), lo + max(1, _DENSE_CHUNK // (n_cls * n_t)))
        block = np.stack(found[lo:hi])
        nxt = np.ascontiguousarray(ext[block].transpose(0, 2, 1)).reshape(-1, n_t)
        ids = np.full(len(nxt), -1, dtype=np.int64)
        alive = np.flatnonzero((nxt >= 0).any(axis=1))
        if alive.size:
            live = nxt[alive]
            first, inv, _ = _distinct_rows(live, mult)
            got = np.empty(len(first), dtype=np.int64)
            keys = np.ascontiguousarray(live[first], dtype=np.int32).view(f"V{width}")
            for j in np.argsort(first, kind="stable").tolist():
                key = keys[j].tobytes()
                q = index.get(key)
                if q is None:
                    q = index[key] = len(found)
                    found.append(nxt[alive[first[j]]])
                    if q >= limit:
                        on_limit([tuple(r[r >= 0].tolist()) for r in found])
                got[j] = q
            ids[alive] = got[inv]
        succ.append(ids.reshape(hi - lo, n_cls))
        lo = hi
    return np.stack(found), np.concatenate(succ).astype(np.int32)


def _distinct_live(rows: np.ndarray, mult: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_distinct_rows`, the hashes of the distinct rows only (``first``'s). Rows of
    one or two live terminals (the levels of a counted string beside a format: most of a
    large product) are grouped by the states themselves packed in one integer (exact:
    nothing to check), and only the distinct ones hashed."""
    if rows.shape[1] > 2:
        first, inv, h = _distinct_rows(rows, mult)
        return first, inv, h[first]
    key = rows[:, 0] if rows.shape[1] == 1 else (rows[:, 0] + 1) << 32 | (rows[:, 1] + 1)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    with np.errstate(over="ignore"):
        h = rows[first] @ mult
    return first, inv.reshape(-1), h


def _distinct_rows(rows: np.ndarray, mult: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a first index of each distinct row, each row's distinct number, each row's hash),
    exact: rows are grouped by a multiplicative hash (one sort of integers, not of byte
    strings) and the grouping is checked against the rows themselves; a collision (never
    seen) falls back to sorting the rows."""
    with np.errstate(over="ignore"):
        h = rows @ mult  # wraps around: a hash
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if not np.array_equal(rows[first[inv]], rows):
        _, first, inv = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
    return first, inv, h
