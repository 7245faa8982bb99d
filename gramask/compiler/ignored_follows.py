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
    trans, accept = dfa.trans, dfa.accept
    ign_acc = [s for s in range(n) if accept[s] >= 0 and ignored[accept[s]]]
    if not ign_acc:
        return ids, table
    live = bits_of_rows(dfa.live)
    start_row = trans[0]
    starts = [(b, live[int(start_row[b])]) for b in range(256) if start_row[b] >= 0]
    own: dict[int, Pairs] = {}
    for s in ign_acc:
        row = trans[s]
        own[s] = frozenset(
            (live[int(row[b])] if row[b] >= 0 else 0, sb) for b, sb in starts
        )
    # predecessors as CSR arrays: one breadth-first search back from each ignored end
    src, dst = np.nonzero(trans >= 0)
    tgt = trans[src, dst]
    order = np.argsort(tgt, kind="stable")
    pred_src = src[order]
    ptr = np.searchsorted(tgt[order], np.arange(n + 1))
    acc: list[set[tuple[int, int]] | None] = [None] * n
    for s in ign_acc:
        seen = np.zeros(n, dtype=bool)
        seen[s] = True
        frontier = np.array([s])
        reached = [frontier]
        while frontier.size:
            lo, hi = ptr[frontier], ptr[frontier + 1]
            if not (hi > lo).any():
                break
            nxt = np.concatenate([pred_src[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)])
            nxt = np.unique(nxt[~seen[nxt]])
            seen[nxt] = True
            reached.append(nxt)
            frontier = nxt
        mine = own[s]
        for x in np.concatenate(reached).tolist():
            cur = acc[x]
            if cur is None:
                acc[x] = set(mine)
            else:
                cur |= mine
    index: dict[Pairs, int] = {frozenset(): 0}
    for q in range(n):
        got = acc[q]
        if got:
            key = frozenset(got)
            i = index.get(key)
            if i is None:
                i = index[key] = len(table)
                table.append(key)
            ids[q] = i
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
