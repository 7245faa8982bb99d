"""Backward reachability over a lexer automaton, as bit sets, vectorised.

Which lexer states can reach a state of some kind (one that accepts terminal T: the lexer's
``winnable``; an ignored lexeme's end: :mod:`gramask.compiler.ignored_follows`) was a
search per target, or a Python worklist over every edge: seconds on a request's lexer of
tens of thousands of states (a counted string beside a format). Here the targets are bits
of one uint64 per state, pushed back along the reversed edges a frontier at a time, each
round one batch of numpy operations over the edges into the states that changed.
"""

from __future__ import annotations

import numpy as np

from ..encoding import distinct_columns

__all__ = ["BITS", "ReverseEdges", "reach_back"]

BITS = 63  # targets per pass (one uint64 per state; the top bit left clear)


class ReverseEdges:
    """The distinct edges of a transition table (states x symbols, -1 none), reversed and
    grouped by head: ``pred[ptr[t]:ptr[t + 1]]`` are the states with an edge into ``t``.
    A table over bytes is first cut to its distinct columns (bytes every state treats
    alike are one symbol)."""

    __slots__ = ("n", "pred", "ptr")

    def __init__(self, table: np.ndarray, *, by_columns: bool = False) -> None:
        n = int(table.shape[0])
        self.n = n
        if by_columns and n:
            table = table[:, distinct_columns(table)[0]]
        succ = np.sort(table, axis=1)
        keep = succ >= 0
        keep[:, 1:] &= succ[:, 1:] != succ[:, :-1]
        src = np.nonzero(keep)[0]
        dst = succ[keep].astype(np.int64)
        order = np.argsort(dst, kind="stable")
        self.pred = src[order].astype(np.int64)
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=n))]).astype(
            np.int64)


def reach_back(edges: ReverseEdges, seeds: np.ndarray) -> np.ndarray:
    """(n,) uint64: per state, the OR of ``seeds`` (n,) uint64 over the states it reaches,
    itself included (the least fixpoint of ``bits[p] |= bits[t]`` over the edges p → t)."""
    bits = seeds.astype(np.uint64, copy=True)
    pred, ptr = edges.pred, edges.ptr
    front = np.flatnonzero(bits)
    while front.size:
        lo = ptr[front]
        cnt = ptr[front + 1] - lo
        total = int(cnt.sum())
        if not total:
            break
        ends = np.cumsum(cnt)
        e = np.repeat(lo - (ends - cnt), cnt) + np.arange(total, dtype=np.int64)
        p = pred[e]
        v = np.repeat(bits[front], cnt)
        new = v & ~bits[p]
        has = new != 0
        if not has.any():
            break
        p = p[has]
        np.bitwise_or.at(bits, p, new[has])
        front = np.unique(p)
    return bits

