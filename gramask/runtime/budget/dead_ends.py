"""Proofs that a fill-in-the-middle state has no completion at all, so that no plan search,
detour or retry is run from it (each would walk its candidates only to see them fail).

A state (q, carry, p) inside a lexeme (q ≠ 0) can only go on by bytes that keep the lexeme in
progress; the lexeme ends as ``accept[x]`` of some lexer state ``x`` reachable from ``q`` —
when a byte cannot continue it (``lexing.walk``), or when the middle ends there and a branch
of the suffix reads on: a plain branch ends it by ``lexeme_end`` too, after the suffix's
head where the suffix continues it (``x`` is then the state after the head, reachable as
well); only a branch whose marker stands for the lexeme itself (``a ≥ 0``) shifts the marker
instead. So where no such branch can be reached from ``q`` and the parser takes none of the
terminals reachable from ``q`` (a newline at bracket depth 0 where the automaton does not
advance on it; any other terminal that ``shift`` refuses), every walk from the state fails
before it ends and no end check holds: the minimum number of tokens to finish is infinite.
Where either test is unsure (an ignored terminal, a newline inside brackets), nothing is
claimed.

The proof reads the quotient's lexer and parser only, the same for every ``left``; a state
it proves dead is one from which every walked check fails, so skipping those checks leaves
each mask as it was (``tests/test_budget_dead_ends.py`` checks it against the exact answer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..core.parse_state import DEPTH, ES, PUID

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .lexeme_costs import LexemeCosts

__all__ = ["DeadEnds"]


class DeadEnds:
    """``dead(q, carry, p)``: is the quotient state proven to have no completion (see the
    module docstring)? ``glue``: per (suffix head, terminal) of each branch whose marker
    stands for the middle's last lexeme continued by that head. ``lex``'s DFA is the
    quotient's (one lexer); what depends on it alone is kept on it for every request."""

    def __init__(self, qb: MaskBuilder, lex: LexemeCosts, glue: list[tuple[bytes, int]],
                 after: list[tuple[bytes, int | None, int]]) -> None:
        self.ctx = qb.ctx
        tables = getattr(lex, "_dead_end_tables", None)
        if tables is None:
            tables = _LexerReach(lex.trans, lex.accept, lex.ignored, qb.num_terminals)
            lex._dead_end_tables = tables  # type: ignore[attr-defined]
        self._terms = tables.terms
        self._follow = tables.follow
        self._followed = tables.followed
        # per state: can a branch's glue be reached (its head read on from there to a state
        # accepting its terminal: a superset of the runtime's glue, which also wants the
        # suffix's next byte to end it)
        trans, accept = lex.trans, tables.accept
        n = trans.shape[0]
        hit = np.zeros((n, 1), dtype=bool)
        for head, a in glue:
            st = np.arange(n)
            for byte in head:
                st = np.where(st >= 0, trans[np.maximum(st, 0), byte], -1)
            hit[:, 0] |= (st >= 0) & (accept[np.maximum(st, 0)] == a)
        glued = _closure(hit, tables.edges)[:, 0] if hit.any() else hit[:, 0]
        self._unsure = glued | tables.restart
        # per branch whose marker comes after the middle's last lexeme, (head, the suffix's
        # byte after it or None, marker): per state, can a glue that ends that lexeme as an
        # ignored terminal (the parser stays where it is, then takes the marker) be
        # reached — as the runtime's glue tests it (the head read on to an accepting state
        # that the next byte cannot continue). A newline lexeme is not one of them:
        # ``dead`` refuses it at bracket depth 0 only, with the terminals. Ignored as the
        # lexer's tables, the builder or the parser say (any of them)
        nt = max(int(accept.max(initial=-1)) + 1, qb.num_terminals)
        ign = np.array([bool((qb.ctx.ignored_bits >> t) & 1) for t in range(nt)], dtype=bool)
        ign[:lex.ignored.size] |= lex.ignored[:nt]
        qign = np.asarray(qb.ignored, dtype=bool)[:nt]
        ign[:qign.size] |= qign
        quiet = np.zeros(accept.size + 1, dtype=bool)
        quiet[:-1] = (accept >= 0) & ign[np.maximum(accept, 0)] & (accept != qb.ctx.nl_t)
        ends = np.zeros((n, max(len(after), 1)), dtype=bool)
        for j, (head, nxt, _m) in enumerate(after):
            st = np.arange(n)
            for byte in head:
                st = np.where(st >= 0, trans[np.maximum(st, 0), byte], -1)
            ok = (st >= 0) & quiet[np.where(st >= 0, st, accept.size)]
            if nxt is not None:
                ok &= trans[np.maximum(st, 0), nxt] < 0
            ends[:, j] = ok
        self._ends = _closure(ends, tables.edges) if ends.any() else ends
        self._markers = [m for _h, _n, m in after]
        self._memo: dict[tuple[int, int], bool] = {}

    def dead(self, q: int, carry: int, p: PState) -> bool:
        if q == 0 or self._unsure[q]:
            return False
        key = (q, p[PUID])
        r = self._memo.get(key)
        if r is None:
            if len(self._memo) >= 1 << 16:
                self._memo.clear()
            r = self._memo[key] = self._dead(q, p)
        return r

    def _dead(self, q: int, p: PState) -> bool:
        """Every lexeme from ``q`` on refused, through any ignored lexemes (the parser stays
        at ``p`` across them: the states met are finitely many, and none of them leads to a
        lexeme ``p`` takes or to an end of the middle)."""
        ctx = self.ctx
        seen = {q}
        todo = [q]
        while todo:
            x = todo.pop()
            if x == 0 or self._unsure[x]:
                return False
            adv = ctx.automaton.advance
            for j in np.flatnonzero(self._ends[x]).tolist():
                if adv(p[ES], self._markers[j]) is not None:
                    return False  # the middle may end after an ignored lexeme from here
            for t in self._terms[x]:
                if t == ctx.nl_t:
                    if p[DEPTH] != 0 or adv(p[ES], t) is not None:
                        return False
                elif (ctx.ignored_bits >> t) & 1:
                    if t not in self._followed:
                        return False  # (ignored by the parser, not by the lexer's tables)
                    for y in self._follow[x].get(t, ()):
                        if y not in seen:
                            seen.add(y)
                            todo.append(y)
                elif ctx.shift(p, t) is not None:
                    return False
        return True


class _LexerReach:
    """What the proofs read of the lexer DFA alone: its edges, per state the terminals some
    state reachable from it accepts (itself included), and whether the start state can be
    reached again inside a lexeme (not the walk the proofs read: nothing is claimed there)."""

    def __init__(self, trans: np.ndarray, accept: np.ndarray, ignored: np.ndarray,
                 num_terminals: int) -> None:
        n = trans.shape[0]
        self.accept = np.asarray(accept, dtype=np.int64)
        nt = int(max(self.accept.max(initial=-1) + 1, num_terminals))
        src = np.repeat(np.arange(n), trans.shape[1])
        dst = trans.ravel()
        ok = dst >= 0
        self.edges = np.unique(np.stack([src[ok], dst[ok]]), axis=1)
        reach = np.zeros((n, nt), dtype=bool)
        acc = np.flatnonzero(self.accept >= 0)
        reach[acc, self.accept[acc]] = True
        reach = _closure(reach, self.edges)
        self.terms = [np.flatnonzero(r).tolist() for r in reach]
        inner = self.edges[:, self.edges[0] != 0]
        self.restart = _closure(np.arange(n)[:, None] == 0, inner)[:, 0]
        # per state and ignored terminal: the lexer states the next lexeme starts in, after
        # a lexeme of that terminal reached from there ends (a byte that cannot continue
        # it starts the next one)
        starts = np.unique(trans[0][trans[0] >= 0])
        col = {int(z): i for i, z in enumerate(starts.tolist())}
        self.follow: list[dict[int, list[int]]] = [{} for _ in range(n)]
        ignored_states = np.flatnonzero((self.accept >= 0) & ignored[np.maximum(self.accept, 0)])
        self.followed = frozenset(np.unique(self.accept[ignored_states]).tolist())
        for t in sorted(self.followed):
            nxt = np.zeros((n, starts.size), dtype=bool)
            for y in ignored_states[self.accept[ignored_states] == t].tolist():
                for b in np.flatnonzero(trans[y] < 0).tolist():
                    z = int(trans[0, b])
                    if z >= 0:
                        nxt[y, col[z]] = True
            nxt = _closure(nxt, self.edges)
            for x in np.flatnonzero(nxt.any(axis=1)).tolist():
                self.follow[x][t] = starts[nxt[x]].tolist()


def _closure(marks: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``marks`` (states × columns) or-ed along ``edges`` (2 × E: from, to) backwards until
    nothing changes: row x holds what some state reachable from x holds."""
    src, dst = edges
    while True:
        new = marks.copy()
        np.logical_or.at(new, src, marks[dst])
        if (new == marks).all():
            return marks
        marks = new
