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

__all__ = ["row_representatives"]

def row_representatives(dfa: LexerDFA, state_class: np.ndarray, rounds: int) -> np.ndarray:
    """Per lexer state, the smallest state that agrees with it on every input of at most
    ``rounds`` bytes (see the module docstring); the start state stands alone (its row is
    walked differently: row 0)."""
    n = dfa.num_states
    if n == 0 or rounds < 1:
        return np.arange(n, dtype=np.int64)
    # what a walk reads at a state (the live terminals too: the runtime's newline carry)
    _, acc = unique_rows(dfa.accepting)
    _, live = unique_rows(dfa.live)
    start = np.zeros(n, dtype=np.int64)
    start[0] = 1
    _, ids = unique_rows(np.stack([start, state_class.astype(np.int64), dfa.accept.astype(
        np.int64), acc, live], axis=1))
    first, _ = distinct_columns(dfa.trans)
    nxt = dfa.trans[:, first]  # one column per byte class; a dead byte reads block -1
    nxt = np.where(nxt < 0, n, nxt).astype(np.intp)
    mix = np.random.default_rng(0x5EED).random(nxt.shape[1] + 1) + 1.0
    count = int(ids.max()) + 1
    for _ in range(rounds):
        blocks = np.append(ids, -1).astype(np.float64)  # (exact: fewer than 2**53 blocks)
        key = blocks[nxt]
        h = np.einsum("ij,j->i", key, mix[1:]) + mix[0] * blocks[:-1]
        ids = _block_ids(blocks[:-1], key, h)
        new = int(ids.max()) + 1
        if new == count:  # settled: no longer input tells more states apart
            break
        count = new
    rep = np.full(count, n, dtype=np.int64)
    np.minimum.at(rep, ids, np.arange(n, dtype=np.int64))
    out: np.ndarray = rep[ids]
    return out


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
