"""Lexer-side budget costs: finishing the lexeme in progress as each terminal, spelling a
whole lexeme of each terminal, and what must separate two lexemes (greedy longest match).

Each cost is counted in vocabulary tokens (:class:`.spelling.TokenCounter`) over the shortest
byte string the lexer DFA allows (a breadth-first search per terminal); a bound, not an exact
count: tokens that span two lexemes can make real text shorter.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from .lexeme_paths import distances_to, reversed_transitions, witness_counts
from .spelling import INF, TokenCounter

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder

__all__ = ["LexemeCosts"]

# bytes tried first when a witness string is built: readable ones
_BYTE_ORDER = (
    list(b"abcdefghijklmnopqrstuvwxyz0123456789_ ") + list(range(33, 127)) + list(range(256))
)


class LexemeCosts:
    """Lexer-side costs: finishing the lexeme in progress as each terminal, spelling a whole
    lexeme of each terminal, and what must separate two lexemes (greedy longest match).

    A lexeme can only end where the next lexeme's first byte kills it: inside a comment that
    is part of Python's newline lexeme nothing but a newline does. So each terminal's
    lexemes are finished at its *clean* end states — those after which every other terminal
    can be spelled, directly or after a separator — and costs are distances to them. An
    ignored terminal with no clean end (a ``//`` comment) is finished together with the
    newline that closes it (``closer``), so a comment never makes a bound infinite."""

    # followers that never glue are set apart (see _greedy_clean_ends); the contextual
    # mode's lexer may still end a lexeme before them, so there they count as before
    unglued_apart = True

    def __init__(self, mb: MaskBuilder, tok: TokenCounter,
                 preds: list[set[int]] | None = None) -> None:
        dfa = mb.dfa
        self.tok = tok
        # witness bytes: those the vocabulary has as a token of their own first (a witness
        # of [^a-c] is no use as 'd' where only 'x' is a token), readable ones first in each
        singles = {t[0] for t in tok.ids if len(t) == 1}
        order = list(dict.fromkeys(_BYTE_ORDER))
        self.byte_order = [x for x in order if x in singles] + [
            x for x in order if x not in singles]
        self.trans = np.asarray(dfa.trans, dtype=np.int64)
        self.accept = np.asarray(dfa.accept)
        self.num_states = S = dfa.num_states
        self.num_terminals = T = dfa.num_terminals
        self.ignored = np.asarray(dfa.ignored, dtype=bool)
        self.nl_t = mb.nl_t
        self.continuation_t = mb.continuation_t
        self._dist: dict[int, np.ndarray] = {}
        self._reverse: tuple[np.ndarray, np.ndarray] | None = None  # see distances_to
        self._fin_str: dict[tuple[int, int], bytes] = {}
        self.closer: dict[int, bytes] = {}  # see _closers
        self._clean_closed: dict[int, frozenset[int]] = {}  # per closer terminal: its clean ends
        self._closed: dict[int, np.ndarray] = {}  # per closer terminal: its ends (see _closers)
        # per terminal a, the spelled terminals whose lexemes can come right after one of a
        # (all of them without the grammar's predecessor sets)
        self._follows: list[list[int]] = [[] for _ in range(T)]
        # per terminal a, the followers that can never stand right after one of its lexemes
        # (see _greedy_clean_ends)
        self.unfollowed: dict[int, frozenset[int]] = {}
        for b in range(T):
            for a in (range(T) if preds is None else preds[b]):
                self._follows[a].append(b)
        # first pass: ends = every accepting state; then the clean ones (see class docstring)
        self.ends = [self.accepting_states(t) for t in range(T)]
        self.spell = self._spellings()
        seps = self._separators()  # (lexeme, its end state): see glue
        self._seps_plain = [(w, q) for w, q in seps if b"\n" not in w]
        self._seps_break = [(w, q) for w, q in seps if b"\n" in w]
        self.separator = self._separator()
        for _ in range(2):
            self.ends = [self._clean_ends(a) for a in range(T)]
            self._dist.clear()
            self._fin_str.clear()
            self.spell = self._spellings()
        self.closer = self._closers()
        for t in self.closer:  # its clean ends, and the accepting states the closer ends
            self.ends[t] = self._closed[t]
        self._dist.clear()
        self._fin_str.clear()
        self._widen_finish()
        # a newline lexeme can take another line (Python's blank lines belong to it)
        nl_ends = self.ends[self.nl_t] if self.nl_t >= 0 else np.zeros(0, np.int64)
        nxt = self.trans[nl_ends, 10] if nl_ends.size else np.zeros(0, np.int64)
        self.nl_renews = bool(nl_ends.size) and bool(
            (nxt >= 0).all() and (self.accept[np.maximum(nxt, 0)] == self.nl_t).all()
        )
        # fin[q, t]: tokens that end the lexeme in progress at q as t (0: it can end now)
        self.fin = np.full((S, T), INF, dtype=np.int64)
        for t in range(T):
            for q, n in self._witness_counts(t).items():
                if q:  # state 0: no lexeme in progress
                    self.fin[q, t] = n
        # per state, the finite entries of fin, cheapest first
        self.fin_list: list[list[tuple[int, int]]] = [
            sorted(((t, int(self.fin[q, t])) for t in np.flatnonzero(self.fin[q] < INF).tolist()),
                   key=lambda e: e[1])
            for q in range(S)
        ]
        # cost[b]: tokens that spell a lexeme of b after the clean end of any lexeme that can
        # come before it (separated if needed)
        self.cost = np.full(T, INF, dtype=np.int64)
        for b in range(T):
            w = self.spell[b]
            if w is None or self.ignored[b]:
                continue
            worst = tok.count(w)
            before = range(T) if preds is None else preds[b]
            if any(b in self.unfollowed.get(a, ()) for a in before if not self.ignored[a]):
                continue  # a grammar path through a pair that never glues is no bound
            for a in before:
                for q in self.ends[a].tolist():
                    g = self.glue(q, b)
                    if g is not None:
                        worst = max(worst, tok.count(g))
            self.cost[b] = worst

    def accepting_states(self, t: int) -> np.ndarray:
        """The lexer states where a lexeme of ``t`` may end: where the greedy lexer reads it
        as ``t`` (the contextual mode's planner widens this)."""
        return np.flatnonzero(self.accept == t)

    def _widen_finish(self) -> None:
        """Hook run once the clean ends are known, before ``fin`` and ``cost`` are built
        (the contextual mode's planner widens :meth:`finish_ends` there)."""

    def finish_ends(self, t: int) -> np.ndarray:
        """The states where a lexeme of ``t`` is finished (witnesses, spellings, ``fin``):
        its clean ends (the contextual mode's planner widens this)."""
        return self.ends[t]

    def _spellings(self) -> list[bytes | None]:
        return [
            self.witness(0, t) if self._distances(t)[0] < INF else None
            for t in range(self.num_terminals)
        ]

    def _clean_ends(self, a: int) -> np.ndarray:
        """The accepting states of ``a`` after which every other spelled terminal that can
        follow it can start (none for a comment: only a newline or the end of input ends
        it)."""
        return self._greedy_clean_ends(a)

    def _greedy_clean_ends(self, a: int) -> np.ndarray:
        """:meth:`_clean_ends` as the greedy lexer decides it. Only the terminals that can
        follow ``a`` count: with ``T0: /(a|bc)+/`` and a keyword ``"ab"`` that only follows
        ``"int"``, every end of T0 would otherwise be unclean (``a`` + ``ab`` is one T0) and
        T0 unspellable; a ``SENTENCE: /[a-z][^\\n]+/`` that only a newline follows ends
        clean, though most bytes continue it."""
        states = self.accepting_states(a).tolist()
        follows = [b for b in self._follows[a]
                   if b != a and not self.ignored[b] and self.spell[b]]
        # a follower that glues after no end of ``a`` (``"in"`` right after ``T0: /\w+/``
        # with nothing ignored: ``xin`` is one T0) never follows it: it does not decide
        # which ends are clean (else every end was unclean, every bound through ``a``
        # infinite); the bounds price that follower infinite instead (see ``cost``)
        # (not after an ignored terminal: anything may follow it, so where nothing glues,
        # a ``--[^\n]*`` comment that every byte but a newline runs on, it is closed by
        # ``_closers`` instead of counted clean; nor after a terminal with no accepting state,
        # one that lark's order never lets win: no text has its lexemes, so no follower of
        # them is priced infinite for it)
        glues = [[self._glue_ok(q, b) for b in follows] for q in states]  # (state, follower)
        never = {b for j, b in enumerate(follows) if not any(row[j] for row in glues)
                 } if self.unglued_apart and states and not self.ignored[a] else set()
        self.unfollowed[a] = frozenset(never)
        keep = [q for q, row in zip(states, glues, strict=True)
                if all(ok for ok, b in zip(row, follows, strict=True) if b not in never)]
        return np.array(keep, dtype=np.int64)

    def _closers(self) -> dict[int, bytes]:
        """Ignored terminals with accepting states that are not clean ends (a ``//``
        comment: every byte but a newline continues it; the line comment of
        ``/\\{-[\\s\\S]*?-\\}|--[^\\n]*/``, whose block comment ends clean) → the lexeme that
        closes them: a newline, where it kills those states and is itself a clean end of an
        ignored terminal (whitespace). Lexemes that end there are finished with it
        (:meth:`witness`), so the bytes after them are a fresh lexeme."""
        out: dict[int, bytes] = {}
        s = int(self.trans[0, 10])
        if s < 0 or self.accept[s] < 0:
            return out
        u = int(self.accept[s])
        if not self.ignored[u] or u in (self.nl_t, self.continuation_t) or s not in set(
                self.ends[u].tolist()):
            return out
        for t in range(self.num_terminals):
            if self.ignored[t] and t != u and t not in (self.nl_t, self.continuation_t):
                clean = self._greedy_clean_ends(t)  # (as the greedy lexer decides them)
                closed = self._unclosed(t, b"\n", clean)
                if closed.size:
                    out[t] = b"\n"
                    self._clean_closed[t] = frozenset(clean.tolist())
                    self._closed[t] = np.union1d(clean, closed)
        return out

    def _unclosed(self, t: int, closer: bytes, clean: np.ndarray) -> np.ndarray:
        """The accepting states of ``t`` that are not among its ``clean`` ends and that
        ``closer`` ends."""
        states = self.accepting_states(t)
        states = states[~np.isin(states, clean)]
        out: np.ndarray = states[self.trans[states, closer[0]] < 0]
        return out

    def _glue_ok(self, q: int, b: int) -> bool:
        return self.glue(q, b) is not None

    def glue(self, q: int, b: int) -> bytes | None:
        """The bytes of a lexeme of ``b`` right after a lexeme that ended in state ``q``
        (``q`` = 0: none before): its spelling, or the separator and its spelling, or else
        the shortest lexeme of ``b`` whose first byte ends the one at ``q``, or else a
        separator with a line break and its spelling."""
        w = self.spell[b]
        if not w:
            return None
        if q == 0 or self.trans[q, w[0]] < 0:
            return w
        for sep, end in self._seps_plain:
            if self.trans[q, sep[0]] < 0 and self.trans[end, w[0]] < 0:
                return sep + w
        a = int(self.accept[q])
        if a >= 0 and self.ignored[a] and bool((self.ends[b] == self.end_state(q, w)).any()):
            # an ignored lexeme that ``b``'s spelling runs on into one lexeme of ``b`` (a
            # blank then ``\n`` is one ``/\s*\n\s*/``): the blank drops out of the parse either
            # way, so that text is ``b`` after it (else the blank had no clean end at all and
            # every bound through it was infinite)
            return w
        after = self._spell_after(q, b)
        if (after is not None and self.tok.count(after) < INF) or (
                a >= 0 and self.ignored[a]):
            return after  # (an ignored lexeme a line break ends has its closer: _closers)
        # (a lexeme the vocabulary cannot spell, ``İ`` of /i[nf]?/i after a name, is no
        # answer where a line break keeps the spelling ``i`` apart)
        for sep, end in self._seps_break:
            if self.trans[q, sep[0]] < 0 and self.trans[end, w[0]] < 0:
                return sep + w
        return after

    def separator_before(self, q: int, x: int) -> bytes | None:
        """The cheapest separator with no line break that ends the lexeme at ``q`` and that
        the byte ``x`` does not run on from (None: none does)."""
        for sep, end in self._seps_plain:
            if self.trans[q, sep[0]] < 0 and self.trans[end, x] < 0:
                return sep
        return None

    def _spell_after(self, q: int, b: int) -> bytes | None:
        """The shortest lexeme of ``b`` whose first byte kills the lexeme at ``q``: two
        signed integers with no ignored text between them are ``0-0``, not ``00``."""
        first = self.trans[0]
        d = self._distances(b)
        cand = np.flatnonzero((first >= 0) & (self.trans[q] < 0))
        if not cand.size:
            return None
        dist = d[first[cand]]
        if dist.min() >= INF:
            return None
        best = {int(x) for x in cand[dist == dist.min()]}
        x = next(x for x in self.byte_order if x in best)  # spellable, readable bytes first
        return bytes([x]) + self.path(int(first[x]), d)

    def _distances(self, t: int) -> np.ndarray:
        """Bytes from each lexer state to a clean end of ``t`` (BFS backwards)."""
        d = self._dist.get(t)
        if d is not None:
            return d
        frontier = np.zeros(self.num_states, dtype=bool)
        frontier[self.finish_ends(t)] = True
        d = self.distances_to(frontier)
        self._dist[t] = d
        return d

    def raw_spelling(self, t: int) -> bytes | None:
        """The shortest lexeme of ``t`` ending at any of its accepting states, clean or not:
        for a terminal with no clean end (``/\\d+/`` that ``/\\d+/`` may follow, with no
        separator), which :attr:`spell` leaves out but which can still come before the
        few terminals that do not run on from it. Only the plan search tries it (its chunks
        are walked); the bounds do not count on it."""
        key = (-1, t)
        w = self._fin_str.get(key)
        if w is None:
            targets = np.zeros(self.num_states, dtype=bool)
            targets[self.accepting_states(t)] = True
            d = self.distances_to(targets)
            w = self.path(0, d) if 0 < d[0] < INF else b""
            self._fin_str[key] = w
        return w or None

    def distances_to(self, targets: np.ndarray) -> np.ndarray:
        """Bytes from each lexer state to one of ``targets`` (bool per state), staying in
        one lexeme (:func:`.lexeme_paths.distances_to`)."""
        if self._reverse is None:
            self._reverse = reversed_transitions(self.trans)
        return distances_to(self._reverse, targets)

    def boundary_targets(self, head: bytes, a: int | Iterable[int], after: int | None,
                         ) -> np.ndarray:
        """Lexer states from which ``head`` (the suffix's first bytes) ends the lexeme as
        ``a`` (or as one of several terminals), killed by the byte ``after`` (None: the input
        ends)."""
        st = np.arange(self.num_states, dtype=np.int64)
        for x in head:
            st = np.where(st >= 0, self.trans[np.maximum(st, 0), x], -1)
        ok = st >= 0
        ok &= self.ends_as(np.maximum(st, 0), [a] if isinstance(a, int) else list(a))
        if after is not None:
            ok &= self.trans[np.maximum(st, 0), after] < 0
        return ok

    def ends_as(self, states: np.ndarray, terms: list[int]) -> np.ndarray:
        """Per state in ``states``: does a lexeme ending there read as one of ``terms``
        (here: the greedy lexer's winner there)?"""
        return np.isin(self.accept[states], terms)

    def path(self, q: int, d: np.ndarray) -> bytes:
        """The shortest bytes from ``q`` down distances ``d`` to 0 (spellable, readable
        bytes first)."""
        out = bytearray()
        trans = self.trans
        while d[q] > 0:
            row = trans[q]
            for b in self.byte_order:
                nq = row[b]
                if nq >= 0 and d[nq] == d[q] - 1:
                    out.append(b)
                    q = int(nq)
                    break
        return bytes(out)

    def witness(self, q: int, t: int) -> bytes:
        """The shortest bytes from ``q`` to a clean end of ``t`` (readable bytes first)."""
        key = (q, t)
        w = self._fin_str.get(key)
        if w is not None:
            return w
        w = self.path(q, self._distances(t))
        c = self.closer.get(t)
        if c is not None and self.end_state(q, w) not in self._clean_closed[t]:
            w += c
        self._fin_str[key] = w
        return w

    def _witness_counts(self, t: int) -> dict[int, int]:
        """``tok.count(self.witness(q, t))`` for every state that reaches a clean end of
        ``t`` (:func:`.lexeme_paths.witness_counts`)."""
        closer, clean = self.closer.get(t), self._clean_closed.get(t, frozenset())
        return witness_counts(self._distances(t), self.trans, self.byte_order, self.tok,
                              lambda e: closer if closer is not None and e not in clean else b"")

    def end_state(self, q: int, data: bytes) -> int:
        """The lexer state after ``data`` from ``q`` within one lexeme (-1: it dies)."""
        for x in data:
            q = int(self.trans[q, x])
            if q < 0:
                return -1
        return q

    def _separators(self) -> list[tuple[bytes, int]]:
        """Lexemes of ignored terminals that can keep two lexemes apart, cheapest first: a
        space or a tab, the ignored terminals' spellings without a line break, then those
        with one — never the indentation newline or a line continuation. ``glue`` takes the
        first that ends the lexeme before and is ended by the one after: a grammar that
        ignores only NEWLINE has no other, and a rest-of-line lexeme (``/#[^\n]*/``, not
        ignored) only a line break ends."""
        skip = (self.nl_t, self.continuation_t)
        spelled = [w for t, w in enumerate(self.spell) if w and self.ignored[t]]
        cands = [b" ", b"\t", *sorted(spelled, key=lambda w: (b"\n" in w, len(w), w)),
                 b"\n", b"\r\n"]
        out: list[tuple[bytes, int]] = []
        for w in dict.fromkeys(cands):
            q = self.end_state(0, w)
            if q >= 0 and self.accept[q] >= 0 and self.ignored[self.accept[q]] and (
                    int(self.accept[q]) not in skip):
                out.append((w, q))
        return out

    def _separator(self) -> bytes | None:
        """The cheapest lexeme of an ignored terminal that is not a newline (a space); where
        there is none, one with a line break (an ignored NEWLINE that is not the
        indentation newline)."""
        for cand in (b" ", b"\t"):
            q = int(self.trans[0, cand[0]])
            if q >= 0 and self.accept[q] >= 0 and self.ignored[self.accept[q]] and (
                self.accept[q] not in (self.nl_t, self.continuation_t)
            ):
                return cand
        for t in range(self.num_terminals):
            w = self.spell[t]
            if self.ignored[t] and t not in (self.nl_t, self.continuation_t) and w and (
                b"\n" not in w
            ):
                return w
        return self._seps_break[0][0] if self._seps_break else None
