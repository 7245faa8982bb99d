"""What may come after an ignored lexeme, per lexer state (the contextual lexer mode).

A token may stop inside a lexeme that can still end as an ignored terminal (a comment, blanks)
only if something can follow that lexeme: the next byte must end it and start a lexeme the
parser can take (the parser state does not change across an ignored lexeme, so the allowed
set is the same), or the input must be able to end there. After a ``/#.*/`` comment only a
newline ends the lexeme; in a grammar where no terminal starts with a newline, ``#`` is a
dead end unless the text is already complete. Blanks followed only by terminals that start
with blanks (a ``NEWLINE`` after ``%ignore WS``) are one too.

Per ignored-accepting state ``s`` and byte ``b`` that some terminal starts with, the pair
(terminals still live after ``s`` on ``b``, terminals live at the start on ``b``): under an
allowed set ``A``, ``b`` ends the lexeme when the first meets ``A`` nowhere, and starts a
lexeme when the second meets ``A``. A state's pairs are those of the ignored-accepting states
it can reach; states with the same pairs share an id, so that the contextual end classes
(:class:`gramask.compiler.token_walk.TokenWalker`) can keep them apart.
"""

from __future__ import annotations

import numpy as np

from ..encoding import bits_of_rows
from .lexer import LexerDFA
from .reach_back import BITS, ReverseEdges, reach_back

__all__ = ["Pairs", "class_follows", "follow_vector", "follows_ok", "ignored_follows"]

Pairs = frozenset[tuple[int, int]]  # (live after s on b, live at the start on b) bitsets


def ignored_follows(dfa: LexerDFA) -> tuple[np.ndarray, list[Pairs]]:
    """(per state, the id of its pairs; per id, the pairs). Id 0 is "no pairs": the state can
    end as no ignored terminal, or as one that nothing can follow. Kept on the automaton: the
    compiler's walks and the runtime of a grammar compiled in this process both need it
    (read only; two threads computing it at once store the same value)."""
    if dfa._follows is None:
        ids, pairs = _ignored_follows(dfa)
        ids.setflags(write=False)
        dfa._follows = ids, pairs
    return dfa._follows


def _ignored_follows(dfa: LexerDFA) -> tuple[np.ndarray, list[Pairs]]:
    n = dfa.num_states
    ids = np.zeros(n, dtype=np.int64)
    table: list[Pairs] = [frozenset()]
    ignored = dfa.ignored
    if n == 0 or not ignored.any():
        return ids, table
    trans = dfa.trans
    # every state where an ignored terminal accepts, also where it loses the whole lexer's
    # tie (``accept``): under an allowed set without the winner (``/[a-z ]+/`` beside
    # ``%ignore / +/``, where only a newline may come) the lexeme ends as the ignored one
    ign_acc = np.flatnonzero((dfa.accepting & ignored).any(axis=1)).tolist()
    if not ign_acc:
        return ids, table
    start_row = trans[0]
    # (the live sets of the states read below only: a request's lexer may have 50,000)
    need = np.unique(np.concatenate([start_row, trans[ign_acc].reshape(-1)]))
    need = need[need >= 0]
    live = dict(zip(need.tolist(), bits_of_rows(dfa.live[need]), strict=True))
    starts = [(b, live[int(start_row[b])]) for b in range(256) if start_row[b] >= 0]
    own: dict[int, Pairs] = {}
    for s in ign_acc:
        row = trans[s]
        own[s] = frozenset(
            (live[int(row[b])] if row[b] >= 0 else 0, sb) for b, sb in starts
        )
    # the ignored ends each state reaches, BITS at a time as bit sets (reach_back), and per
    # distinct combination of them, the union of their pairs
    edges = dfa._reverse or ReverseEdges(trans, by_columns=True)
    reach: list[np.ndarray] = []
    for lo in range(0, len(ign_acc), BITS):
        part = ign_acc[lo: lo + BITS]
        seeds = np.zeros(n, dtype=np.uint64)
        seeds[part] = np.left_shift(np.uint64(1), np.arange(len(part), dtype=np.uint64))
        reach.append(reach_back(edges, seeds))
    combo = np.stack(reach, axis=1)  # (n, chunks) uint64
    reached = np.flatnonzero(combo.any(axis=1))
    union: dict[tuple[int, ...], Pairs] = {}
    index: dict[Pairs, int] = {frozenset(): 0}
    for x, key in zip(reached.tolist(), map(tuple, combo[reached].tolist()), strict=True):
        got = union.get(key)
        if got is None:
            pairs: set[tuple[int, int]] = set()
            for c, word in enumerate(key):
                while word:
                    low = word & -word
                    pairs |= own[ign_acc[c * BITS + low.bit_length() - 1]]
                    word ^= low
            got = union[key] = frozenset(pairs)
        if got:  # (ids numbered in state order, as the states first show each set)
            i = index.get(got)
            if i is None:
                i = index[got] = len(table)
                table.append(got)
            ids[x] = i
    return ids, table


def follows_ok(pairs: Pairs, allowed: int) -> bool:
    """Can a lexeme with these pairs end as an ignored terminal and be followed by a lexeme
    under ``allowed`` (terminal bits, ignored ones included)?"""
    return any(not (after & allowed) and (start & allowed) for after, start in pairs)


def class_follows(state_class: np.ndarray, ids: np.ndarray, table: list[Pairs],
                  n_classes: int) -> list[Pairs]:
    """Per end class, its states' pairs (the contextual classes are refined by them, so one
    state speaks for its class)."""
    rep = np.full(n_classes, -1, dtype=np.int64)
    rep[state_class[::-1]] = np.arange(len(state_class))[::-1]
    return [table[int(ids[r])] if r >= 0 else frozenset() for r in rep.tolist()]


def follow_vector(per_class: list[Pairs], allowed: int) -> np.ndarray:
    """Per end class: :func:`follows_ok` under ``allowed``."""
    return np.fromiter((bool(pairs) and follows_ok(pairs, allowed) for pairs in per_class),
                       dtype=bool, count=len(per_class))
