"""Shortest paths inside one lexeme, for the budget's lexer-side cost tables: distances to
target states over the lexer's reversed transitions, and the fewest tokens spelling every
state's witness (its shortest path's bytes) at once.

Both are linear where the plain forms were quadratic in a lexeme's length: a JSON string
with ``minLength`` 1,000 has 22,004 lexer states in a chain, witnesses up to 1,000 bytes, and
a budget (or ``shortest_completion``) on it took minutes to plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from .spelling import INF

if TYPE_CHECKING:
    from .spelling import TokenCounter

__all__ = ["distances_to", "reversed_transitions", "witness_counts"]


def reversed_transitions(trans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transitions ``trans`` (state × byte → state, -1 none) reversed, as CSR:
    ``preds[indptr[q]:indptr[q + 1]]`` are the states with a move into ``q``."""
    n = trans.shape[0]
    src, byte = np.nonzero(trans >= 0)
    dst = trans[src, byte]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[np.argsort(dst, kind="stable")]


def distances_to(reverse: tuple[np.ndarray, np.ndarray], targets: np.ndarray) -> np.ndarray:
    """Moves from each state to one of ``targets`` (bool per state; INF: none), breadth
    first backwards: each state's predecessors are read once (a level-by-level scan of the
    whole table costs states × levels)."""
    indptr, preds = reverse
    d = np.full(indptr.size - 1, INF, dtype=np.int64)
    frontier = np.flatnonzero(targets)
    d[frontier] = 0
    level = 0
    while frontier.size:
        level += 1
        lo, n = indptr[frontier], indptr[frontier + 1] - indptr[frontier]
        total = int(n.sum())
        if not total:
            break
        at = np.repeat(lo - np.cumsum(n) + n, n) + np.arange(total)
        reach = np.unique(preds[at])
        reach = reach[d[reach] == INF]
        d[reach] = level
        frontier = reach
    return d


def witness_counts(d: np.ndarray, trans: np.ndarray, byte_order: list[int],
                   tok: TokenCounter, tail: Callable[[int], bytes]) -> dict[int, int]:
    """Per state ``q`` with ``d[q] < INF``: the fewest tokens spelling its witness — the path
    down ``d`` taking at each state the first byte of ``byte_order`` that goes one nearer
    (as ``LexemeCosts.path`` does), then ``tail(end state)`` (a closer, or nothing). The path
    picks each state's next byte alone, so a witness is its first byte then the witness of
    the state that byte leads to, and a token spelling its first k bytes leaves the k-th
    state's witness: states × token length, not states × witness length."""
    order = sorted(np.flatnonzero(d < INF).tolist(), key=lambda q: int(d[q]))
    step: dict[int, tuple[int, int]] = {}  # q → (the path's byte, the state it leads to)
    for q in order:
        if d[q] > 0:
            row = trans[q]
            for b in byte_order:
                nq = int(row[b])
                if nq >= 0 and d[nq] == d[q] - 1:
                    step[q] = (b, nq)
                    break
    ids, ml = tok.ids, tok.max_len
    prefixes = tok.prefixes() if len(order) > 4096 else None
    out: dict[int, int] = {}
    for q in order:  # nearest first: every state on q's path has its count
        best = INF
        buf = bytearray()
        cur = q
        while cur in step and len(buf) < ml:
            b, cur = step[cur]
            buf.append(b)
            key = bytes(buf)
            if key in ids and out[cur] < INF:
                best = min(best, 1 + out[cur])
            if prefixes is not None and key not in prefixes:
                break
        if cur not in step:  # the walk reached the path's end: the tail follows
            end = tail(cur)
            if not buf:
                best = tok.count(end)
            for j in range(1, len(end) + 1):
                if len(buf) + j <= ml and bytes(buf) + end[:j] in ids:
                    best = min(best, 1 + tok.count(end[j:]))
        out[q] = best
    return out
