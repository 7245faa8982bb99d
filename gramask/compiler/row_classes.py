"""Lexer states whose token-table rows are equal because no token can tell them apart.

A row records what each token does from a state: the terminals it completes (then the rest
is walked from the start state, whatever the state was) and the end class it stops in, or a
contextual fork where the next byte shrinks the live terminals. Walking a token of at most
``L`` bytes reads only what the states within ``L`` bytes do: which bytes continue them and,
at each, its end class, winner and accepting set. States that agree on all of that for every
input of at most ``L`` bytes have equal rows, and the walks after a first byte (a "shared
walk", :mod:`gramask.compiler.token_walk`) of states that agree for ``L - 1`` bytes are
equal. This is Moore's partition refinement stopped after ``L`` rounds (or where it settles,
which is then the Myhill–Nerode equivalence itself).

Why it matters: a JSON Schema ``maxLength`` N counts characters in the lexer, one state per
count (and ~20 inside a character), so every token inside such a string lands in a state
whose row has never been built; the counts with at least ``L`` characters of room left are
alike, so all of them share one row (and one set of shared walks), and only the last ``L``
counts differ.
"""

from __future__ import annotations

import numpy as np

from ..encoding import distinct_columns, unique_rows
from .lexer import LexerDFA
from .reach_back import ReverseEdges

__all__ = ["row_partition", "row_representatives"]

def row_representatives(dfa: LexerDFA, state_class: np.ndarray, rounds: int) -> np.ndarray:
    """Per lexer state, the smallest state that agrees with it on every input of at most
    ``rounds`` bytes (see the module docstring); the start state stands alone (its row is
    walked differently: row 0)."""
    return row_partition(dfa, state_class, rounds)[0]


def row_partition(dfa: LexerDFA, state_class: np.ndarray, rounds: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(:func:`row_representatives`; per state ``q``, a state ``near[q]`` and a depth
    ``depth[q]`` such that ``q`` and ``near[q]`` agree on every input of at most
    ``depth[q]`` bytes). Equal rows agree to ``rounds``; a count of a long string ``k``
    characters from its end agrees with the counts far from it to ``k`` bytes, so that the
    tokens of at most ``k`` bytes have the same entries in both rows and only the longer
    ones need walking (:func:`gramask.compiler.table_rows.near_row`). ``near[q]`` is the
    smallest state left in the block ``q`` last moved out of, in round ``depth[q] + 1``
    (a block always keeps some of its states: the part that stays keeps the id)."""
    n = dfa.num_states
    if n == 0 or rounds < 1:
        every = np.arange(n, dtype=np.int64)
        return every, every, np.full(n, rounds, dtype=np.int64)
    # what a walk reads at a state (the live terminals too: the runtime's newline carry)
    _, acc = unique_rows(dfa.accepting)
    _, live = unique_rows(dfa.live)
    start = np.zeros(n, dtype=np.int64)
    start[0] = 1
    _, ids = unique_rows(np.stack([start, state_class.astype(np.int64), dfa.accept.astype(
        np.int64), acc, live], axis=1))
    cols = dfa.trans[:, _distinct_bytes(dfa)]  # one column per byte class
    rev = dfa._reverse if dfa._reverse is not None else ReverseEdges(cols)
    nxt = np.where(cols < 0, n, cols).astype(np.intp)  # a dead byte reads block -1
    ids, moved_in, left = _refine(ids, nxt, rounds, rev)
    rep = np.full(int(ids.max()) + 1, n, dtype=np.int64)
    np.minimum.at(rep, ids, np.arange(n, dtype=np.int64))
    near = np.where(moved_in > 0, rep[left], rep[ids])
    depth = np.where(moved_in > 0, moved_in - 1, rounds)
    return rep[ids], near, depth


def _distinct_bytes(dfa: LexerDFA) -> np.ndarray:
    """One byte of each distinct column of the lexer's table, ascending: the first byte of
    each of the build's byte classes where the automaton keeps them; else the columns
    grouped by a random projection, each checked against its group's first, exactly (a
    shared projection that hides a difference falls back to the columns' bytes). A lexer of
    90,000 states: ~0.1 s, where hashing every column's bytes took ~0.5 s."""
    if dfa._byte_class is not None:
        _, first = np.unique(dfa._byte_class, return_index=True)
        return np.sort(first)
    trans = dfa.trans
    w = np.random.default_rng(0xC01).integers(1, 1 << 31, size=trans.shape[0])
    h = np.einsum("i,ij->j", w, trans)  # (wrapping: a hash)
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    if np.array_equal(trans, trans[:, first[inv.reshape(-1)]]):
        return np.sort(first)
    out: np.ndarray = distinct_columns(trans)[0]
    return out


def _refine(ids: np.ndarray, nxt: np.ndarray, rounds: int, rev: ReverseEdges
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Moore's refinement of the partition ``ids`` by the successors ``nxt`` (``n``: dead),
    ``rounds`` rounds or until it settles, each round re-reading only the states that can
    split: a block splits only where some of its states step into a part that moved out of
    its block in the round before (the others still agree, as they did when the block was
    formed), so a round reads the predecessors of the states that moved, and the part of a
    block that no such state is in keeps the block's id (else its largest part does). A
    counted string moves a few states per round (the count ``rounds`` bytes from its end),
    so its ~45,000 states cost one full round and then a few dozen states per round, not
    ``rounds`` passes over all of them. Returns the blocks and, per state, the round it
    last moved in (0: never) and the block it left then."""
    n = len(ids)
    ids = ids.astype(np.int64)
    moved_in = np.zeros(n, dtype=np.int64)
    left = ids.copy()
    pred_ptr, pred = rev.ptr, rev.pred
    mix = np.random.default_rng(0x5EED).random(nxt.shape[1] + 1) + 1.0
    size = np.bincount(ids)
    count = len(size)
    blocks = np.append(ids, -1).astype(np.float64)  # (exact: fewer than 2**53 blocks)
    aff = np.arange(n, dtype=np.int64)  # round 1 reads every state
    for i in range(1, rounds + 1):
        key = blocks[nxt[aff]]
        own = blocks[aff]
        h = np.einsum("ij,j->i", key, mix[1:]) + mix[0] * own
        g = _block_ids(own, key, h)  # the parts (a part lies in one block)
        ng = int(g.max()) + 1
        gblock = np.empty(ng, dtype=np.int64)
        gblock[g] = ids[aff]
        gsize = np.bincount(g, minlength=ng)
        read = np.bincount(ids[aff], minlength=count)
        # a block whose states were all read keeps its id for its largest part
        by = np.lexsort((-gsize, gblock))
        lead = by[np.concatenate(([True], gblock[by][1:] != gblock[by][:-1]))]
        keep = np.zeros(ng, dtype=bool)
        keep[lead] = read[gblock[lead]] == size[gblock[lead]]
        fresh = np.flatnonzero(~keep)
        if not fresh.size:
            break  # settled: no longer input tells more states apart
        new_id = np.full(ng, -1, dtype=np.int64)
        new_id[fresh] = count + np.arange(len(fresh))
        moved_at = ~keep[g]
        moved = aff[moved_at]
        left[moved] = ids[moved]
        ids[moved] = new_id[g[moved_at]]
        moved_in[moved] = i
        blocks[moved] = ids[moved]
        np.subtract.at(size, gblock[fresh], gsize[fresh])
        size = np.concatenate([size, gsize[fresh]])
        count += len(fresh)
        aff = _gather(pred_ptr, pred, moved)
        if not aff.size:
            break
    return ids, moved_in, left


def _gather(ptr: np.ndarray, pred: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The distinct predecessors of ``states``."""
    lo, hi = ptr[states], ptr[states + 1]
    lens = hi - lo
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    at = np.repeat(lo - np.concatenate(([0], np.cumsum(lens)[:-1])), lens) + np.arange(total)
    return np.unique(pred[at])


def _block_ids(ids: np.ndarray, key: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The blocks of states with equal ``ids`` and equal rows of ``key`` (their successors'
    blocks), numbered ``0..``: states grouped by ``h``, a hash of both, and each group
    checked against its first state, exactly; where a group mixes them (a shared hash), by
    ``unique_rows``. (Equal rows whose hashes differ, where sums round differently, would
    only split a block: what shares a block is still alike.)"""
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    f = first[inv]
    if (ids != ids[f]).any() or (key != key[f]).any():
        return unique_rows(np.concatenate([ids[:, None], key], axis=1))[1]
    return inv.astype(np.int64)
