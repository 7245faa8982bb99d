"""Reading the token tables' rows, as the runtime does: a row expanded (its base row applied,
or walked first in a lazily built table), or a lazily built table's row as a diff against a
row assembled before, grouped by outcome node, and turned into tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .tables import TokenTables
    from .token_walk import TokenWalker

__all__ = ["expand_row", "group_row", "lazy_diff", "near_row", "row0_part", "select_tokens"]

_EMPTY = np.zeros(0, dtype=np.int64)
_EMPTY.flags.writeable = False


def expand_row(
    tables: TokenTables, q: int, bases: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``q`` as (token ids ascending, node ids), base rows applied. ``bases``: a memo of
    expanded base rows (a table has a handful of bases, shared by most rows), which the
    runtime keeps so that a row costs its own entries, not a vocabulary-sized array. A
    lazily built table walks the row on first use (the caller keeps it)."""
    w = tables.walker
    if w is not None:
        got = near_row(w, q, bases)
        idx, node = got if got is not None else w.row(q)
        return idx.astype(np.int64), node.astype(np.int64)
    lo, hi = tables.rows_indptr[q], tables.rows_indptr[q + 1]
    idx, dat = tables.rows_indices[lo:hi], tables.rows_data[lo:hi]
    b = int(tables.row_base[q])
    if b < 0:
        return idx.astype(np.int64), dat.astype(np.int64) - 1
    base = bases.get(b) if bases is not None else None
    if base is None:
        base = expand_row(tables, b, bases)
        if bases is not None:
            bases[b] = base
    bidx, bnode = base
    idx = idx.astype(np.int64)
    # q's entries replace the base's at the same tokens (data 0: the token is not in row q)
    pos = np.minimum(np.searchsorted(bidx, idx), max(len(bidx) - 1, 0))
    kept = np.ones(len(bidx), dtype=bool)
    if len(bidx):
        kept[pos[bidx[pos] == idx]] = False
    add = dat > 0
    ids = np.concatenate([bidx[kept], idx[add]])
    nodes = np.concatenate([bnode[kept], dat[add].astype(np.int64) - 1])
    order = np.argsort(ids, kind="stable")  # two ascending runs: a linear merge
    return ids[order], nodes[order]


def lazy_diff(w: TokenWalker, q: int, most: int
              ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray] | None:
    """Row ``q`` of a lazily built table as a diff against a row assembled in full before:
    (that row, the tokens whose first byte leads elsewhere from ``q`` than from it, and of
    those, ``q``'s entries: token ids, nodes), walked on first use; None where more than
    ``most`` tokens differ, for row 0 and for rows assembled in full. A row costs what it
    adds (the rows inside a string differ in a few first bytes: a key's next letter, a UTF-8
    lead), not the vocabulary-sized assembly, sort and scatter of a whole row; a row equal to
    another's (:mod:`gramask.compiler.row_classes`: a count of a long string) costs nothing."""
    with w.lock:
        if q == 0 or q in w.assembled:
            return None
        r = w.rep_of(q)
        if r != q:  # the same row as ``r``'s (row_classes): nothing differs
            if r not in w.assembled:  # (assembled once: not again per state of its class)
                w.row(r)
            return r, _EMPTY, _EMPTY, _EMPTY
        if not w.assembled:
            return None
        cand = np.fromiter(w.assembled, dtype=np.int64, count=len(w.assembled))
        tq = w.key_row(q)
        keys = w.key_row(cand)
        cost = (keys != tq[None, :]) @ np.diff(w.byte_start)  # tokens differing
        j = int(np.argmin(cost))
        if int(cost[j]) > most:
            return None
        base = int(cand[j])
        diff = np.flatnonzero(keys[j] != tq).tolist()
        cont = [b for b in diff if tq[b] >= 0]
        w.ensure_shared(q, cont)
        node = (np.concatenate([w.shared[(int(tq[b]), b)] for b in cont]) if cont
                else _EMPTY)
        idx = w.tokens_of(cont)
        keep = node >= 0
        return base, w.tokens_of(diff), idx[keep], node[keep].astype(np.int64)


# a row made from a near state's (near_row) where its tokens longer than the depth the two
# agree to are at most this share of the vocabulary (the rest: walked as any row)
_NEAR_LONG = 0.25


def near_row(w: TokenWalker, q: int, memo: dict[int, tuple[np.ndarray, np.ndarray]] | None
             ) -> tuple[np.ndarray, np.ndarray] | None:
    """Row ``q`` of a lazily built table from the row of a state that agrees with ``q`` on
    every input of ``d`` bytes (:func:`gramask.compiler.row_classes.row_partition`): the
    tokens of at most ``d`` bytes read only what the two agree on, so they keep that row's
    entries, and only the longer ones are walked from ``q``. None where there is no such
    state (``d`` 0, or the partition not made yet) or too many tokens are longer than ``d``.

    The counts of a long string near its end: each is a class of its own (how many
    characters are left tells them apart), and walking its row took ~30 ms; ``k``
    characters from the end, only the tokens of more than ``k`` bytes are walked (past a
    dozen, a few percent of the vocabulary). ``memo``: the caller's memo of the near rows."""
    with w.lock:
        if q == 0 or w.rep_of(q) != q or w.near is None:
            return None
        s, d = int(w.near[0][q]), int(w.near[1][q])
        if d < 1 or s == q:
            return None
        long = np.flatnonzero(w.lens > d)
        if len(long) > _NEAR_LONG * w.v:
            return None
        got = memo.get(s) if memo is not None else None
        if got is None:
            got = w.row(s)
            if memo is not None:
                memo[s] = got
        sidx, snode = got
        first = w.trans[q, w.buf[long, 0]]
        long = long[first >= 0]
        node = w.walk(None, long, 0, False, first=first[first >= 0])
        short = w.lens[sidx] <= d
        dense = w._dense  # (all -1 between uses)
        dense[sidx[short]] = snode[short]
        dense[long] = node
        idx = np.flatnonzero(dense >= 0)
        nodes = dense[idx]
        dense[:] = -1
        return idx, nodes


def row0_part(w: TokenWalker, first: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """Row 0 of a lazily built table cut to the tokens whose first byte is in ``first``:
    (token ids ascending, node ids), only those bytes' shared walks done; None once row 0
    is assembled in full (read that) or where the indentation newline walks it whole.

    A request's first mask, and each parser state at a lexeme start until then, needs the
    tokens that can begin an allowed terminal only (after nothing, ``{`` and blanks; the
    strings, numbers and words of row 0 wait until a state allows them): the others' entries
    are false whatever their walks give (``ContextualLexer._row0_part``)."""
    with w.lock:
        if w.row0 is not None or w.nl_terminal >= 0:
            return None
        row, _ = w.ensure_shared(0, first)
        return w.assemble(row, first)


def group_row(idx: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A row's tokens grouped by outcome node: (distinct nodes ascending, tokens per node,
    tokens ordered by node then id)."""
    order = np.argsort(_radix_keys(node), kind="stable")
    ns = node[order]
    if not len(ns):
        return ns, ns.copy(), idx[order]
    start = np.flatnonzero(np.concatenate(([True], ns[1:] != ns[:-1])))  # sorted already
    counts = np.diff(np.append(start, len(ns)))
    return ns[start], counts, idx[order]


def _radix_keys(node: np.ndarray) -> np.ndarray:
    """``node`` as 16-bit keys when they fit (the usual case: a table has a few thousand
    nodes): numpy's stable sort of 16-bit integers is a radix sort, ~4x faster than the
    merge sort it runs on int64 over a ~100k-token row. Same keys, same stable order."""
    if len(node) and int(node.min()) >= 0 and int(node.max()) <= 0xFFFF:
        return node.astype(np.uint16)
    return node


def select_tokens(v: int, toks: np.ndarray, counts: np.ndarray, ok: np.ndarray,
                  full: Callable[[], np.ndarray]) -> np.ndarray:
    """A fresh (V,) bool vector of a grouped row's tokens (``group_row``) whose node is
    ``ok``, written from the smaller side: the allowed tokens into zeros, or the refused ones
    out of ``full()``, the row's whole token set (the caller's memo): scattering the indices
    is what a large row costs."""
    n_ok = int(counts[ok].sum())
    if 2 * n_ok <= len(toks):
        m = np.zeros(v, dtype=bool)
        m[toks[np.repeat(ok, counts)]] = True
        return m
    m = full().copy()
    if n_ok < len(toks):
        m[toks[np.repeat(~ok, counts)]] = False
    return m
