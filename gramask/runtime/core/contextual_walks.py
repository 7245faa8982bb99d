"""The contextual dead-end search's token walks, in lockstep over the vocabulary.

:meth:`ContextualEnds.refine <gramask.runtime.core.contextual_ends.ContextualEnds.refine>`
must know, for every token a contextual mask allows, the runtime state its walk ends in
(parser state, lexer state mid-lexeme) and ask the search there. Walking each token apart
(:meth:`ContextualRule.walk`) cost one Python loop per allowed token — tens of thousands
per mask on a grammar whose names take most of the vocabulary — while the tokens reach a
few dozen distinct end states. Here the tokens walk together, one byte position at a time,
as NumPy arrays of lexer states, each walk tagged with its group: what else the walk
carries (the parser state, whether the last lexeme began at the first byte, whether every
lexeme ended so far was an ignored one). Where lexemes end, the parser step is taken once
per distinct (group, lexer state) and the walks go on in the group it leads to; where walks
stop, the search's verdict is asked once per distinct (group, lexer state). It follows :meth:`ContextualRule.walk` byte for byte, so it refuses exactly the tokens
that walk refuses (``tests/test_contextual_walks.py`` compares them); it is used where the
indentation carry decides nothing (no indentation newline: the carry is then never read).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .parse_state import PUID

if TYPE_CHECKING:
    from ...vocab import TokenBytes
    from .contextual_rule import ContextualRule
    from .parse_state import PState

__all__ = ["refused_walks"]


class _Groups:
    """The groups the walks are in: (parser state, every lexeme ended so far was an
    ignored one, the last lexeme began at the first byte), numbered; and per group the row
    of its allowed set in ``live``, the per-state "keeps a terminal of it alive" vectors of
    the distinct allowed sets met."""

    __slots__ = ("_ids", "_sets", "_vecs", "flags", "live", "row", "rule", "states")

    def __init__(self, rule: ContextualRule) -> None:
        self.rule = rule
        self.states: list[PState] = []
        self.flags: list[tuple[bool, bool]] = []
        self.row: list[int] = []
        self._ids: dict[tuple[int, bool, bool], int] = {}
        self._sets: dict[int, int] = {}
        self._vecs: list[np.ndarray] = []
        self.live = np.zeros((0, 0), dtype=bool)

    def of(self, p: PState, quiet: bool, first: bool) -> int:
        key = (p[PUID], quiet, first)
        g = self._ids.get(key)
        if g is None:
            g = self._ids[key] = len(self.states)
            self.states.append(p)
            self.flags.append((quiet, first))
            a = self.rule.allowed(p)
            r = self._sets.get(a)
            if r is None:
                r = self._sets[a] = len(self._vecs)
                self._vecs.append(self.rule.live_under(a))
            self.row.append(r)
        return g

    def alive(self, g: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Per walk of groups ``g`` at lexer states ``s``: does the state keep a terminal of
        its group's allowed set alive?"""
        if self.live.shape[0] != len(self._vecs):  # (stacked anew where sets came)
            self.live = np.stack(self._vecs)
        out: np.ndarray = self.live[np.asarray(self.row, dtype=np.int64)[g], s]
        return out


def refused_walks(rule: ContextualRule, tb: TokenBytes, toks: np.ndarray, p: PState, q: int
                  ) -> np.ndarray:
    """Per token of ``toks`` (non-empty tokens), does :meth:`ContextualRule.walk` from
    ``(q, carry, p)`` refuse it (return an offset)? The carry is not read: only an
    indentation newline's step reads it, and a rule with one is not walked here."""
    assert rule.nl_t < 0, "the lockstep walk does not follow the indentation carry"
    trans, n_states = rule.trans, rule.trans.shape[0]
    lens, start, flat = tb.lens[toks], tb.start[toks], tb.flat
    refused = np.zeros(len(toks), dtype=bool)
    gr = _Groups(rule)
    idx = np.arange(len(toks))  # the walks going on, their lexer states and groups
    s = np.full(len(toks), q, dtype=np.int64)
    g = np.full(len(toks), gr.of(p, True, True), dtype=np.int64)
    k = 0
    while idx.size:
        done = lens[idx] == k
        if done.any():  # the walk's end: the verdict per distinct (group, state)
            _ends(gr, n_states, idx[done], g[done], s[done], refused)
            keep = ~done
            idx, s, g = idx[keep], s[keep], g[keep]
            if not idx.size:
                break
        b = flat[start[idx] + k]
        nq = trans[s, b]
        go = nq >= 0
        go[go] = gr.alive(g[go], nq[go])
        if go.all():
            s = nq
        else:  # lexemes that byte k ends: the parser step per distinct (group, state)
            dead = ~go
            di, dg, b0 = idx[dead], _split(gr, n_states, k, g[dead], s[dead]), b[dead]
            n0 = trans[0, b0]
            on = (dg >= 0) & (n0 >= 0)
            on[on] = gr.alive(dg[on], n0[on])
            refused[di[~on]] = True
            idx = np.concatenate((idx[go], di[on]))
            s = np.concatenate((nq[go], n0[on]))
            g = np.concatenate((g[go], dg[on]))
        k += 1
    return refused


def _ends(gr: _Groups, n_states: int, idx: np.ndarray, g: np.ndarray, s: np.ndarray,
          refused: np.ndarray) -> None:
    """Walks that end in groups ``g`` at lexer states ``s``: ``_walk_end_ok`` once per
    distinct pair (state 0, no lexeme in progress, needs no check)."""
    uniq, inv = np.unique(g * n_states + s, return_inverse=True)
    ok = np.ones(len(uniq), dtype=bool)
    for j, key in enumerate(uniq.tolist()):
        gi, x = divmod(key, n_states)
        if x:
            quiet, first = gr.flags[gi]
            ok[j] = gr.rule._walk_end_ok(gr.states[gi], x, first or quiet)
    refused[idx[~ok[inv]]] = True


def _split(gr: _Groups, n_states: int, k: int, g: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Walks in groups ``g`` whose lexeme in progress (states ``s``) byte ``k`` ends: the
    group each goes on in (the parser step once per distinct pair), -1 where the lexeme
    cannot end there."""
    uniq, inv = np.unique(g * n_states + s, return_inverse=True)
    out = np.full(len(uniq), -1, dtype=np.int64)
    for j, key in enumerate(uniq.tolist()):
        gi, x = divmod(key, n_states)
        if x == 0:  # no lexeme in progress, and none starts with this byte
            continue
        p1 = gr.states[gi]
        p2 = gr.rule.lexeme_end(p1, x, 0)
        if p2 is not None:
            # (as walk: a lexeme the first byte ends leaves the rest a fresh walk from p2)
            quiet = gr.flags[gi][0]
            out[j] = gr.of(p2, k == 0 or (quiet and p2 is p1), k == 0)
    return out[inv]
