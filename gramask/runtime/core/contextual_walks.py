"""The contextual dead-end search's token walks, in lockstep over the vocabulary.

:meth:`ContextualEnds.refine <gramask.runtime.core.contextual_ends.ContextualEnds.refine>`
must know, for every token a contextual mask allows, the runtime state its walk ends in
(parser state, lexer state mid-lexeme) and ask the search there. Walking each token apart
(:meth:`ContextualRule.walk`) cost one Python loop per allowed token — tens of thousands
per mask on a grammar whose names take most of the vocabulary — while the tokens reach a
few dozen distinct end states. Here the tokens walk together, one byte position at a time,
as NumPy arrays of lexer states, in groups that share everything else the walk carries (the
parser state, where the last lexeme began, whether every lexeme ended so far was an ignored
one). A group splits only where its lexemes end: the parser step is taken once per distinct
lexer state that ends there, and the search's verdict once per distinct state a group stops
in. It follows :meth:`ContextualRule.walk` byte for byte, so it refuses exactly the tokens
that walk refuses (``tests/test_contextual_walks.py`` compares them); it is used where the
indentation carry decides nothing (no indentation newline: the carry is then never read).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .parse_state import PUID

if TYPE_CHECKING:
    from .contextual_rule import ContextualRule
    from .parse_state import PState

__all__ = ["TokenBytes", "refused_walks"]

# a group of walks at one byte position: (parser state, every ended lexeme was ignored,
# the last lexeme began at the first byte, token positions, their lexer states)
_Group = tuple["PState", bool, bool, np.ndarray, np.ndarray]


class TokenBytes:
    """The vocabulary's bytes as one flat array: token ``t``'s byte ``k`` is
    ``flat[start[t] + k]``."""

    __slots__ = ("flat", "lens", "start")

    def __init__(self, tokens: Sequence[bytes]) -> None:
        self.lens = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
        self.start = np.zeros(len(tokens), dtype=np.int64)
        if len(tokens) > 1:
            np.cumsum(self.lens[:-1], out=self.start[1:])
        self.flat = np.frombuffer(b"".join(tokens), dtype=np.uint8)


def refused_walks(rule: ContextualRule, tb: TokenBytes, toks: np.ndarray, p: PState, q: int
                  ) -> np.ndarray:
    """Per token of ``toks`` (non-empty tokens), does :meth:`ContextualRule.walk` from
    ``(q, carry, p)`` refuse it (return an offset)? The carry is not read: only an
    indentation newline's step reads it, and a rule with one is not walked here."""
    assert rule.nl_t < 0, "the lockstep walk does not follow the indentation carry"
    trans = rule.trans
    lens, start, flat = tb.lens[toks], tb.start[toks], tb.flat
    refused = np.zeros(len(toks), dtype=bool)
    live_under = rule.live_under
    groups: list[tuple[int, list[_Group]]] = [
        (0, [(p, True, True, np.arange(len(toks)), np.full(len(toks), q, dtype=np.int64))])]
    while groups:
        k, batch = groups.pop()
        nxt: dict[tuple[int, bool, bool], list[tuple[PState, np.ndarray, np.ndarray]]] = {}
        for p1, quiet, first, idx, s in batch:
            la = live_under(rule.allowed(p1))
            done = lens[idx] == k
            if done.any():  # the walk's end: the verdict per distinct state
                _ends(rule, p1, first or quiet, idx[done], s[done], refused)
                keep = ~done
                idx, s = idx[keep], s[keep]
            if not idx.size:
                continue
            b = flat[start[idx] + k]
            nq = trans[s, b]
            go = nq >= 0
            go[go] = la[nq[go]]
            dead = ~go
            if dead.any():
                _split(rule, p1, quiet, k, idx[dead], s[dead], b[dead], refused, nxt)
            if go.any():
                nxt.setdefault((p1[PUID], quiet, first), []).append((p1, idx[go], nq[go]))
        if nxt:
            merged: list[_Group] = []
            for (_, quiet, first), parts in nxt.items():
                merged.append((parts[0][0], quiet, first,
                               np.concatenate([x[1] for x in parts]),
                               np.concatenate([x[2] for x in parts])))
            groups.append((k + 1, merged))
    return refused


def _ends(rule: ContextualRule, p: PState, whole: bool, idx: np.ndarray, s: np.ndarray,
          refused: np.ndarray) -> None:
    """Walks that end at parser state ``p`` in lexer states ``s``: ``_walk_end_ok`` once
    per distinct state (state 0, no lexeme in progress, needs no check)."""
    uniq, inv = np.unique(s, return_inverse=True)
    ok = np.array([x == 0 or rule._walk_end_ok(p, x, whole) for x in uniq.tolist()],
                  dtype=bool)
    refused[idx[~ok[inv]]] = True


def _split(rule: ContextualRule, p: PState, quiet: bool, k: int, idx: np.ndarray,
           s: np.ndarray, b: np.ndarray, refused: np.ndarray,
           nxt: dict[tuple[int, bool, bool], list[tuple[PState, np.ndarray, np.ndarray]]]
           ) -> None:
    """Walks whose lexeme in progress (states ``s``) byte ``k`` (``b``) ends: the parser
    step once per distinct state, then the next lexeme from its first byte, grouped by the
    parser state it starts at."""
    trans = rule.trans
    uniq, inv = np.unique(s, return_inverse=True)
    for j, x in enumerate(uniq.tolist()):
        sel = inv == j
        ids = idx[sel]
        if x == 0:  # no lexeme in progress, and none starts with this byte
            refused[ids] = True
            continue
        p2 = rule.lexeme_end(p, x, 0)
        if p2 is None:
            refused[ids] = True
            continue
        n0 = trans[0, b[sel]]
        go = n0 >= 0
        go[go] = rule.live_under(rule.allowed(p2))[n0[go]]
        refused[ids[~go]] = True
        if go.any():
            # (as walk: a lexeme the first byte ends leaves the rest a fresh walk from p2)
            q2 = k == 0 or (quiet and p2 is p)
            nxt.setdefault((p2[PUID], q2, k == 0), []).append((p2, ids[go], n0[go]))
