"""The planner's side of contextual-mode budgets: the mask builder as the planner sees it,
lexer costs that let a lexeme end where the contextual lexer ends it, and plan searches that
try lexemes with no separator. Their costs only order the work; every plan they give is
walked with the contextual lexer (:mod:`.contextual`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ..core.earley import EXPECTED
from ..core.parse_state import ES
from .lexeme_costs import LexemeCosts
from .search import PlanSearch
from .spelling import INF, TokenCounter

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState

__all__ = ["ContextualLexemeCosts", "ContextualPlanSearch", "ContextualView"]


class ContextualView:
    """The mask builder as the planner sees it in the contextual mode: the same DFA and
    parser, lexemes ended by the contextual rule (``lexeme_end``; ``complete`` already
    dispatches to it)."""

    def __init__(self, mb: MaskBuilder) -> None:
        cx = mb.contextual
        assert cx is not None
        self._mb = mb
        self.lexeme_end = cx.lexeme_end

    def __getattr__(self, name: str) -> object:
        return getattr(self._mb, name)


class ContextualLexemeCosts(LexemeCosts):
    """Lexer-side costs where a terminal the greedy lexer never produces (a ``BIT`` that
    the literals ``"0"`` and ``"1"`` shadow) may end wherever it accepts: the contextual
    lexer reads it where the parser allows it and not the other one. So may a terminal
    whose own lexemes the vocabulary cannot spell (``T1: /i[nf]?/i`` beside
    ``WORD: /[a-zA-Z]+/`` is its own only as ``İ``: ``i`` is both, and where the parser
    takes ``T1`` the contextual lexer reads it so). (Every terminal's accepting states
    instead made the costs of the others worse: more states to glue after.)"""

    unglued_apart = False  # (the contextual lexer may end a lexeme the greedy one runs on)

    def accepting_states(self, t: int) -> np.ndarray:
        own = super().accepting_states(t)
        return own if own.size and t not in self._widened else np.flatnonzero(
            self.accepting[:, t])

    def _clean_ends(self, a: int) -> np.ndarray:
        # none clean (every end of BIT starts the literal "00000"): any end, the contextual
        # lexer ends it where the parser allows nothing longer
        own = super()._clean_ends(a)
        return own if own.size else self.accepting_states(a)

    _fin_ends: list[np.ndarray] | None = None  # see _widen_finish

    def finish_ends(self, t: int) -> np.ndarray:
        fe = self._fin_ends
        return self.ends[t] if fe is None else fe[t]

    def _widen_finish(self) -> None:
        # a lexeme is finished wherever its terminal accepts and what may follow it can
        # start: after ``a=-`` the contextual lexer reads ``-0`` as ``FLOAT`` where the
        # parser does not take ``BARE_KEY: /[A-Za-z0-9_-]+/``, the greedy winner there (its
        # own ends alone planned ``-0.0``: a budget of the true ``0`` was refused). The
        # clean ends stay the greedy ones: ``cost`` glues after each of them, and more
        # would make every bound worse. Plans are walked, so wider is safe here.
        # Only states where no terminal that may be allowed beside ``t`` accepts too (none
        # that can follow a terminal ``t`` can follow): elsewhere the parser may take both,
        # and a plan through them misleads the route more than it helps (a nested GBNF rule
        # then took its fallback search, slowly)
        widened: list[np.ndarray] = []
        preds = self._preds
        for t in range(self.num_terminals):
            own = self.ends[t]
            if self.ignored[t] or t == self.nl_t or preds is None:
                widened.append(own)
                continue
            rivals = np.zeros(self.num_terminals, dtype=bool)
            for u in range(self.num_terminals):
                rivals[u] = u != t and (self.ignored[u] or u == self.nl_t or any(
                    not self.ignored[a] for a in preds[t] & preds[u]))
            alone = ~(self.accepting[:, rivals].any(axis=1))
            extra = [q for q in np.flatnonzero(self.accepting[:, t] & alone).tolist()
                     if all(self._glue_ok(q, b) for b in self._follows[t]
                            if b != t and not self.ignored[b] and self.spell[b])]
            widened.append(np.union1d(own, np.array(extra, dtype=np.int64)))
        self._fin_ends = widened
        self._dist.clear()
        self._fin_str.clear()
        self.spell = self._spellings()

    def ends_as(self, states: np.ndarray, terms: list[int]) -> np.ndarray:
        # any terminal accepting there: where the parser takes ``_T2: /i[nf]?/`` and not
        # the literal ``"in"``, the contextual lexer reads ``in`` as ``_T2`` (the greedy
        # winner alone left the middle's ``i`` before the suffix ``nif`` no boundary to
        # plan through: no plan, so no budget). Plans are walked, so wider is safe here.
        return np.asarray(self.accepting[states][:, terms].any(axis=1), dtype=bool)

    def __init__(self, mb: MaskBuilder, tok: TokenCounter,
                 preds: list[set[int]] | None = None) -> None:
        self.accepting = np.asarray(mb.dfa.accepting, dtype=bool)
        self._accept_dist: dict[int, np.ndarray] = {}  # see accept_distances
        self._widened: frozenset[int] = frozenset()
        self._fin_ends = None
        self._preds = preds
        super().__init__(mb, tok, preds)
        # the terminals whose own lexemes do not spell, where some other accepting state
        # does: built again with those widened (only grammars that have such a terminal)
        widen = frozenset(
            t for t in range(self.num_terminals)
            if not self.ignored[t] and self._unspelled(t)
            and LexemeCosts.accepting_states(self, t).size and self._spells_widened(t))
        if widen:
            self._widened = widen
            self._fin_ends = None
            super().__init__(mb, tok, preds)

    def _unspelled(self, t: int) -> bool:
        """Can the vocabulary not spell ``t``'s lexeme?"""
        w = self.spell[t]
        return w is None or self.tok.count(w) >= INF

    def accept_distances(self, t: int) -> np.ndarray:
        """Per lexer state, the fewest bytes to a state where ``t`` accepts, winner or not
        (memoised: the lexer never changes)."""
        d = self._accept_dist.get(t)
        if d is None:
            d = self._accept_dist[t] = self.distances_to(self.accepting[:, t])
        return d

    def _spells_widened(self, t: int) -> bool:
        """Does the shortest lexeme ending where ``t`` accepts at all spell?"""
        d = self.accept_distances(t)
        return bool(d[0] < INF) and self.tok.count(self.path(0, d)) < INF


class ContextualPlanSearch(PlanSearch):
    """Plans whose fallback search also tries lexemes with no separator (see ``_chunks``);
    ``mb`` is the :class:`ContextualView` (lexemes end by the contextual rule)."""

    def _chunks(self, q: int, carry: int, p: PState) -> list[bytes]:
        """The fallback search's chunks, plus each expected next lexeme's spelling with no
        separator: the planner glues a separator on where the basic lexer would read the
        next lexeme's first byte into the one before, but the contextual lexer ends that one
        there when no terminal the parser allows goes on (``KEY`` before ``=`` where a
        ``VALUE`` could swallow it); the walk decides."""
        out = super()._chunks(q, carry, p)
        p2 = self.mb.lexeme_end(p, q, carry) if q else p
        if p2 is None:
            return out
        lex, exp = self.lex, p2[ES][EXPECTED]
        seen = set(out)
        for t in range(lex.num_terminals):
            w = lex.spell[t]
            if w and (exp >> t) & 1 and not lex.ignored[t] and w not in seen:
                seen.add(w)
                out.append(w)
        return out

    def _finish_alternative(self, q: int, p: PState, best: int) -> bytes | None:
        """The lexeme at ``q`` finished where a terminal the parser expects accepts, greedy
        winner or not, if that is cheaper than ``best``: the contextual lexer reads it so
        where the parser does not take the winner. After ``"weird key" =`` the lexeme ``-``
        ends as ``INTEGER`` by ``1`` (``BARE_KEY``, the greedy winner of ``-1``, is no value),
        where the costs' finishing, narrowed to states no rival sharing a predecessor
        accepts (``_widen_finish``), took ``-0.0``: two tokens more, so a budget of the true
        ``-12`` refused `` -``. The route walks it."""
        exp = p[ES][EXPECTED]
        out = None
        for t, w, c in self._finishes(q):  # by terminal, as the loop over all ran
            if not (exp >> t) & 1:
                continue
            if c < best:
                c += self.costs.after_terminal(p, t)
            if c < best:
                best, out = c, w
        return out

    _fin_memo: dict[int, list[tuple[int, bytes, int]]] | None = None

    def _finishes(self, q: int) -> list[tuple[int, bytes, int]]:
        """Per lexer state ``q``: each terminal (not ignored, not the newline) that accepts
        a few bytes on, the shortest bytes there and their token count, by terminal
        (memoised: they depend on the lexer alone; the parser only picks among them)."""
        memo = self._fin_memo
        if memo is None:
            memo = self._fin_memo = {}
        r = memo.get(q)
        if r is None:
            lex = cast("ContextualLexemeCosts", self.lex)
            r = []
            for t in range(lex.num_terminals):
                if lex.ignored[t] or t == self.nl_t:
                    continue
                d = lex.accept_distances(t)
                if 0 < d[q] < INF:
                    w = lex.path(q, d)
                    r.append((t, w, self.tok.count(w)))
            memo[q] = r
        return r

    def _next_lexeme_uncached(self, p: PState, prev: int) -> tuple[bytes | None, int]:
        """The bounds' next lexeme; where none is glued on (the basic lexer would read each
        one's first byte into the lexeme before), the cheapest expected one with no
        separator, as ``_chunks`` tries it: the contextual lexer may end the one before
        there, and the route's walk decides (else the plan was left to the search, which
        gives up on long ones: a sixth nested GBNF rule)."""
        text, best = super()._next_lexeme_uncached(p, prev)
        if text is not None:
            return text, best
        lex, exp = self.lex, p[ES][EXPECTED]
        k = self.costs.k_newline(p)
        for t in range(lex.num_terminals):
            w = lex.spell[t]
            if not w or not (exp >> t) & 1 or lex.ignored[t] or t == self.nl_t:
                continue
            c = self.tok.count(w) + self.costs.grammar.shifted_cost(p[ES], t, k)
            if c < best:
                best, text = c, w
        return text, best
