"""Tokens that stop inside a lexeme which can end only where nothing the parser can take may
follow (contextual lexer mode), decided by a search over the lexemes and the parser.

The basic mode's answer (:mod:`gramask.runtime.core.end_conditions`) abstracts a lexeme end
to the bytes that kill it in the whole lexer DFA. Under the contextual rule
(:mod:`gramask.runtime.core.contextual_rule`) a lexeme lexed under the allowed set ``A`` ends
where the next byte keeps no terminal of ``A`` alive, so what may follow it depends on ``A``
too. The search here therefore runs over pairs (parser state, kill set): the kill set is the
bytes that end the previous lexeme under the set it was lexed under. From a pair, the next
lexeme is lexed under ``A = allowed(p)``: its first byte is one of the kill set, it goes on
through the states that keep a terminal of ``A`` alive, and every state where it can end as
``winners(q, A)`` gives the next pair (the parser shifted, or unchanged for an ignored
lexeme; the kill set of that state under ``A``). The text may end at a pair whose parser
state may finish. The lexer side of a step depends only on (``A``, start state) and is
memoised on it.

A token the contextual masks allow is refused when the runtime state it leads to (parser
state, lexer state mid-lexeme) reaches no such pair: exact — a token is refused iff no text
completes the parse as the contextual lexer splits it — except where the search meets more
than ``LIMIT`` pairs, a parse past the runtime limits, the indentation newline (whose step
needs the width) or a line continuation: there the token is allowed, as before. It walks
every allowed token again (in lockstep, :mod:`.contextual_walks`: the search once per
distinct state the walks end in), so only grammars that fail the cheap tests build it
(:func:`gramask.compiler.separable.needs_end_search`: no bundled grammar; under the
contextual rule more bytes end a lexeme, never fewer, so what those tests let through needs
no search).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ...errors import LimitExceededError
from .contextual_walks import refused_walks
from .end_search import LIMIT, EndSearch

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from .contextual_rule import ContextualRule
    from .parse_state import PState

__all__ = ["LIMIT", "ContextualEnds"]

_ALL = (1 << 256) - 1  # the start of the text: any byte may begin the first lexeme


class ContextualEnds(EndSearch):
    """The search over pairs (parser state, kill set) (:class:`EndSearch`'s), shared by the
    masks of one compiled grammar (its lexer-side memos are per allowed set; its verdicts
    per parser context, as fill-in-the-middle's quotient has its own parser states)."""

    __slots__ = ("_lex", "_rows", "_steps_memo", "_vocab")

    def __init__(self, vocab: Vocabulary) -> None:
        super().__init__()
        self._vocab = vocab  # the compiled grammar's: its flat byte table feeds the walks
        # (allowed set, start state) → the (winners, kill set) of the ends it can reach
        self._lex: dict[tuple[int, int], frozenset[tuple[int, int]]] = {}
        # (allowed set, lexer state) → its kill set and the states it continues to
        self._rows: dict[tuple[int, int], tuple[int, tuple[int, ...]]] = {}
        # (allowed set, kill set) → the same over every start the kill set allows, by winners
        self._steps_memo: dict[tuple[int, int], tuple[tuple[int, tuple[int, ...]], ...]] = {}

    # ------------------------------------------------------------------ lexer side
    def _ends_from(self, rule: ContextualRule, a: int, s: int) -> frozenset[tuple[int, int]]:
        """The (winners, kill set) pairs of the ends a lexeme at state ``s`` lexed under
        ``a`` can reach (``s`` itself included)."""
        key = (a, s)
        got = self._lex.get(key)
        if got is not None:
            return got
        out: set[tuple[int, int]] = set()
        seen = {s}
        todo = [s]
        while todo:
            x = todo.pop()
            kill, succ = self._row_under(rule, a, x)
            for y in succ:
                if y not in seen:
                    seen.add(y)
                    todo.append(y)
            w = rule.winners(x, a)
            if w:
                out.add((w, kill))
        r = self._lex[key] = frozenset(out)
        return r

    def _row_under(self, rule: ContextualRule, a: int, x: int) -> tuple[int, tuple[int, ...]]:
        """(the bytes that end a lexeme at state ``x`` lexed under ``a``, as a bit set; the
        states the others lead to), memoised: the ends of every state of a name share
        them."""
        key = (a, x)
        got = self._rows.get(key)
        if got is None:
            nxt = rule.trans[x]
            go = nxt >= 0
            go[go] = rule.live_under(a)[nxt[go]]
            kill = int.from_bytes(np.packbits(~go, bitorder="little").tobytes(), "little")
            got = self._rows[key] = (kill, tuple(np.unique(nxt[go]).tolist()))
        return got

    def _next(self, rule: ContextualRule, a: int, kill: int
              ) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """The lexemes that can follow an end with kill set ``kill``, lexed under ``a``: per
        set of winners, the kill sets of its ends (the parser steps once per set)."""
        key = (a, kill)
        got = self._steps_memo.get(key)
        if got is not None:
            return got
        s0, live = rule.rows[0], rule.live
        out: set[tuple[int, int]] = set()
        k = kill
        while k:
            low = k & -k
            k ^= low
            s = s0[low.bit_length() - 1]
            if s >= 0 and live[s] & a:
                out |= self._ends_from(rule, a, s)
        by_w: dict[int, list[int]] = {}
        for w, k2 in sorted(out):
            by_w.setdefault(w, []).append(k2)
        r = self._steps_memo[key] = tuple((w, tuple(ks)) for w, ks in by_w.items())
        return r

    # ------------------------------------------------------------------ parser side
    @staticmethod
    def _end(rule: ContextualRule, p: PState, w: int) -> tuple[bool, PState | None]:
        """(not searched through: the newline or a line continuation, the parser state after
        a lexeme that ends as ``w``; None: the parser refuses it)."""
        if (rule.nl_t >= 0 and (w >> rule.nl_t) & 1) or (
                rule.cont_t >= 0 and (w >> rule.cont_t) & 1):
            return True, None
        sh = w & ~rule.ignored_bits
        return False, (p if not sh else rule.ctx.shift_any(p, sh))

    @staticmethod
    def _into_suffix(rule: ContextualRule, p: PState, w: int) -> bool:
        """May a lexeme ending as ``w`` at ``p`` be the one a fill-in-the-middle suffix
        continues (:meth:`ParserContext.continues_into_suffix`)?"""
        sh = w & ~rule.ignored_bits
        while sh:
            low = sh & -sh
            sh ^= low
            if rule.ctx.continues_into_suffix(p, low.bit_length() - 1):
                return True
        return False

    def ok_after(self, rule: ContextualRule, p: PState, q: int) -> bool:
        """Can the text be completed from parser state ``p`` with a lexeme in progress at
        lexer state ``q`` (lexed under ``allowed(p)``)? True also where the search gives
        up."""
        if q == 0:
            return self.viable(rule, p, _ALL)
        try:
            for w, kill in self._ends_from(rule, rule.allowed(p), q):
                if self._into_suffix(rule, p, w) and rule.may_be_boundary(p, q):
                    return True  # (fill-in-the-middle: the suffix may continue it)
                stop, p2 = self._end(rule, p, w)
                if stop or (p2 is not None and self.viable(rule, p2, kill)):
                    return True
        except LimitExceededError:
            self.gave_up += 1
            return True
        return False

    def viable(self, rule: ContextualRule, p: PState, kill: int) -> bool:
        """Can the text be completed from parser state ``p`` after a lexeme end whose kill
        set is ``kill``? (True also where the search gives up.)"""
        return self.search(rule.ctx, p, kill, lambda p1, k1: self._steps(
            rule, p1, self._next(rule, rule.allowed(p1), k1)))

    def _steps(self, rule: ContextualRule, p1: PState,
               nexts: tuple[tuple[int, tuple[int, ...]], ...]
               ) -> Iterator[tuple[PState, int] | None]:
        """The search's step from parser state ``p1`` over the lexemes ``nexts`` (per set
        of winners, the kill sets of its ends) that can follow."""
        for w, kills in nexts:
            if self._into_suffix(rule, p1, w):
                yield None  # the lexeme the suffix continues: the boundary masks decide
                return
            stop, p2 = self._end(rule, p1, w)
            if stop:
                yield None
                return
            if p2 is not None:
                for k2 in kills:
                    yield p2, k2

    # ------------------------------------------------------------------ masks
    def refine(self, rule: ContextualRule, p: PState, q: int, carry: int, m: np.ndarray
               ) -> np.ndarray:
        """``m`` (the tokens the contextual masks allow at ``(p, q, carry)``) without those
        whose walk ends where no text completes the parse; a copy where one goes. The
        walks go in lockstep (:mod:`.contextual_walks`: the verdict once per distinct
        state reached), one by one where an indentation newline reads the carry."""
        toks = np.flatnonzero(m)
        if rule.nl_t < 0:
            tb = self._vocab.flat_bytes
            toks = toks[tb.lens[toks] > 0]
            gone = toks[refused_walks(rule, tb, toks, p, q)]
        else:
            tokens = self._vocab.token_tuple
            # (the walk asks ok_after at its end: ContextualRule._walk_end_ok)
            gone = np.array([t for t in toks.tolist() if tokens[t] and isinstance(
                rule.walk((q, carry, p), tokens[t]), int)], dtype=np.int64)
        if not gone.size:
            return m
        out = m.copy()
        out[gone] = False
        return out
