"""The contextual lexer mode's rule: only the terminals the parser can take compete.

A lexeme that starts with the parser at ``p`` is lexed under the allowed set
``A = expects(p)`` (the terminals some live Earley item can shift, plus every ``%ignore``d
terminal). ``p`` only changes when a lexeme ends, so the runtime state (lexer state ``q``,
indentation carry, ``p``) already determines ``A``. Walking a byte from ``q``:

* the lexeme continues iff the product DFA's next state keeps some terminal of ``A`` alive;
* otherwise it ends as ``accepting(q) ∩ A`` restricted to the highest priority present. If
  that set holds non-ignored terminals the parser shifts all of them at once (the union of the
  Earley items that can shift any of them: "the lexeme is each of them, the parser continues
  with whichever fits"); if it holds only ignored ones the lexeme is dropped; the indentation
  newline, when present, wins.

With reserved keywords (a grammar that opts in, :mod:`gramask.compiler.keywords`), ``A`` is
closed under the reserved pairs: a keyword competes wherever its regex does and the regex
wherever the keyword does, and a keyword that accepts beats the regexes it is reserved for
(as the basic mode decides). Those extra terminals only make lexemes continue or end as
something the parser may refuse: whether a lexeme may stop mid-way (``end_ok``) still asks
for a terminal of ``expects(p)`` itself. Lark files (``Grammar.keywords_win``) keep lark's
contextual lexer's rule instead: the pairs decide ties, ``A`` is not closed, so a keyword
beats its regexes only where the parser takes both (``if (a) = c;`` is no call of ``if``,
``x = if;`` a name where only a name may stand).

:class:`ContextualRule` walks bytes, ends lexemes and checks ends by this rule; the masks
under it are :class:`~gramask.runtime.core.contextual_lexer.ContextualLexer`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ...compiler.contextual_wins import close_under, reserved_maps, terminal_threats
from ...compiler.ignored_follows import follows_ok, ignored_follows
from ...encoding import bits_of_rows
from ...errors import LimitExceededError
from ..limits import memo_size
from ..memo import BoundedMemo
from .indentation import advance
from .parse_state import PUID
from .step_state import LexState
from .terminal_sets import int_of_row

if TYPE_CHECKING:
    from ...compiler.lexer import LexerDFA
    from .parse_state import ParserContext, PState

__all__ = ["ContextualRule"]

_MISS = object()  # (a lexeme end may be None: a memo's miss is this)


class DeadEnds(Protocol):
    """The dead-end search as a walk asks it (:class:`.contextual_ends.ContextualEnds`)."""

    def ok_after(self, rule: ContextualRule, p: PState, q: int) -> bool: ...

    def refine(self, rule: ContextualRule, p: PState, q: int, carry: int, m: np.ndarray
               ) -> np.ndarray: ...


class ContextualRule:
    """Walks, lexeme ends and end checks under the contextual rule (shared, like the
    lexer's tables)."""

    # the dead-end search where the grammar needs one (set by CompiledGrammar)
    dead_ends: DeadEnds | None = None

    def __init__(
        self,
        dfa: LexerDFA,
        ctx: ParserContext,
        priorities: list[int],
        *,
        nl_terminal: int = -1,
        continuation_terminal: int = -1,
        tab_len: int = 8,
        reserved: Sequence[tuple[int, int]] = (),
        close: bool = True,
        fragile: int | None = None,
    ) -> None:
        """``fragile``: the terminals of :func:`terminal_threats` of the same arguments as a
        bit set, where the caller has them already (None: found here, where needed)."""
        self.ctx = ctx
        self.rows = dfa.rows()
        self.trans = dfa.trans  # (the same as arrays: the lockstep walks of contextual_walks)
        self.live = bits_of_rows(dfa.live)
        self._live_rows = dfa.live
        # allowed set → per lexer state, does it keep a terminal of the set alive
        self._live_under: BoundedMemo[int, np.ndarray] = BoundedMemo(1024)
        self.accepting = bits_of_rows(dfa.accepting)
        self.ignored_bits = int_of_row(dfa.ignored)
        # per state, what may follow the ignored lexemes it can end as (see end_ok)
        self.follow_ids, self.follow_pairs = ignored_follows(dfa)
        self.prio = priorities
        self.nl_t = nl_terminal
        self.cont_t = continuation_terminal
        self.tab = tab_len
        # reserved pairs (string, regex): per terminal, the terminals it brings into A; per
        # string, the regexes it beats where both accept
        self.reserved = tuple(reserved)
        # reserved keywords close A under the pairs; lark's rule (``Grammar.keywords_win``)
        # only lets a keyword beat its regexes where the parser takes both
        self.closes = close and bool(self.reserved)
        self._partners, self._beats = reserved_maps(self.reserved)
        self._keyword_bits = sum(1 << t for t in self._beats)
        # A → A closed under the reserved pairs (a few hundred distinct sets recur)
        self._closed: BoundedMemo[int, int] = BoundedMemo(65536)
        # parser state uid → its expected terminals the parser keeps a shift of, where the
        # automaton refuses sets (see ``shiftable``; None: it keeps them all)
        self._kept = self.kept_memo(ctx)
        self._fragile = 0  # terminals that may lose every lexeme under some allowed set
        self._wins: dict[int, int] = {}  # allowed set → its fragile terminals that can win
        self._fragile_sets: list[int] = []  # the accepting sets holding one of them
        if self._kept is not None:
            if fragile is None:
                fragile = sum(1 << t for t in terminal_threats(
                    dfa, priorities, self.reserved, nl_terminal))
            self._fragile = fragile
            self._fragile_sets = sorted({x for x in self.accepting if x & self._fragile})

    # ------------------------------------------------------------------ one lexeme
    def allowed(self, p: PState) -> int:
        """The terminals that compete for a lexeme starting at parser state ``p``."""
        if not self.closes:
            return self.ctx.expects(p)
        return self.close(self.ctx.expects(p))

    def live_under(self, a: int) -> np.ndarray:
        """Per lexer state: does it keep a terminal of ``a`` alive (``live[q] & a``, as a
        vector; memoised, read only)?"""
        r = self._live_under.get(a)
        if r is None:
            cols = [t for t in range(self._live_rows.shape[1]) if (a >> t) & 1]
            r = np.asarray(self._live_rows[:, cols].any(axis=1), dtype=bool)
            self._live_under.put(a, r)
        return r

    def close(self, a: int) -> int:
        """``a`` closed under the reserved pairs (a regex brings its keywords, a keyword its
        regexes and theirs), memoised."""
        r = self._closed.get(a)
        if r is None:
            r = close_under(a, self._partners)
            self._closed.put(a, r)
        return r

    def winners(self, q: int, a: int) -> int:
        """The terminals a lexeme ending at ``q`` under allowed set ``a`` is: the allowed
        accepting terminals of the highest priority among them (0: none)."""
        return self._winners(self.accepting[q] & a)

    def _winners(self, acc: int) -> int:
        if acc & self._keyword_bits:  # an accepting keyword beats its regexes
            k = acc & self._keyword_bits
            while k:
                low = k & -k
                k ^= low
                acc &= ~self._beats[low.bit_length() - 1]
        if not acc or not (acc & (acc - 1)):
            return acc
        best, out, b = None, 0, acc
        prio = self.prio
        while b:
            low = b & -b
            t = low.bit_length() - 1
            b ^= low
            pr = prio[t]
            if best is None or pr > best:
                best, out = pr, low
            elif pr == best:
                out |= low
        return out

    def _shifts(self, p: PState, t: int) -> bool:
        """Does the parser keep the shift of ``t`` at ``p``? (Kept where the step outgrows
        the runtime limits: the walk that takes it answers then.)"""
        try:
            return self.ctx.shift(p, t) is not None
        except LimitExceededError:
            return True

    @staticmethod
    def kept_memo(ctx: ParserContext) -> BoundedMemo[int, int] | None:
        """A fresh memo for ``shiftable`` over ``ctx`` (None where its automaton refuses no
        set and it refuses no opening bracket: then every expected terminal is kept)."""
        aut = ctx.automaton
        return None if aut.viable is None and ctx.closable is None else BoundedMemo(
            memo_size(aut.limits.parser_states))

    def kept_fewer(self, p: PState) -> int | None:
        """``shiftable(p)`` where it is less than ``expects(p)`` (else None): where a token
        may stop inside a lexeme depends on it (the contextual tables' plans)."""
        if self._kept is None:
            return None
        kept = self.shiftable(p)
        return None if kept == self.ctx.expects(p) else kept

    def _winnable(self, a: int) -> int:
        """The fragile terminals that win some lexeme under allowed set ``a`` (memoised)."""
        got = self._wins.get(a)
        if got is None:
            got = 0
            for x in self._fragile_sets:
                got |= self._winners(x & a)
            got = self._wins[a] = got & self._fragile
        return got

    def lexeme_end(self, p: PState, q: int, carry: int, at_eof: bool = False) -> PState | None:
        """Parser state after the lexeme in progress at ``q`` ends here (None if it cannot).
        Memoised per (parser state, lexer state, and where the indentation newline exists,
        carry and ``at_eof``), kept per parser context like ``_walk_end_ok``'s and sized like
        its parser-state memos (what it holds are the parser's own steps): a budget step ends
        the same few lexemes hundreds of thousands of times (its token grouping, its checks'
        walks), each an allowed set, a winner and a parser step."""
        if q == 0:
            return p
        memo = self.__dict__.get("_ends")
        if memo is None or memo[0] is not self.ctx:
            memo = self._ends = (self.ctx, BoundedMemo[tuple[int, int, int, bool], object](
                memo_size(self.ctx.automaton.limits.parser_states)))
        nl = self.nl_t >= 0
        key = (p[PUID], q, carry if nl else 0, at_eof and nl)
        ends = memo[1]
        r = ends.young.get(key, _MISS)
        if r is _MISS:
            r = ends.get(key, _MISS)
            if r is _MISS:
                r = self._end_with(p, self.accepting[q], carry, at_eof)
                ends.put(key, r)
        return r  # type: ignore[return-value]

    def _end_with(self, p: PState, accepting: int, carry: int, at_eof: bool = False
                  ) -> PState | None:
        w = self._winners(accepting & self.allowed(p))
        if not w:
            return None
        if self.nl_t >= 0 and (w >> self.nl_t) & 1:
            return self.ctx.newline(p, 0 if at_eof and self.ctx.cpython_ends else carry)
        sh = w & ~self.ignored_bits
        if not sh:
            return p
        return self.ctx.shift_any(p, sh)

    def may_be_boundary(self, p: PState, q: int) -> bool:
        """May the lexeme in progress at ``q`` still be the one a fill-in-the-middle suffix
        continues (fim's boundary lexer says; no other lexer asks)?"""
        return True

    def end_ok(self, p: PState, q: int) -> bool:
        """May the input stop mid-lexeme at ``q``? Some allowed terminal is still alive and
        is either significant (the parser takes it: it is in ``expects(p)``, and its shift
        leads somewhere: ``shiftable``) or ignored with something able to follow it: the
        input's end, or a byte that ends it and starts a lexeme the parser takes
        (:mod:`gramask.compiler.ignored_follows`)."""
        live = self.live[q] & self.ctx.expects(p)  # (not the reserved pairs' extra ones)
        sig = live & ~self.ignored_bits
        if sig and (self._kept is None or sig & self.shiftable(p)):
            return True
        if not live & self.ignored_bits:
            return False
        return self.ctx.finish(p) or follows_ok(
            self.follow_pairs[self.follow_ids[q]], self.allowed(p))

    def shiftable(self, p: PState) -> int:
        """``expects(p)`` without the significant terminals whose shift the parser refuses:
        where the automaton refuses sets no shift that can happen leads on from
        (:mod:`gramask.runtime.core.viability`), a lexeme that can only end as such a
        terminal is a dead end, and a token may not stop inside it (memoised per state)."""
        exp = self.ctx.expects(p)
        kept = self._kept
        if kept is None:
            return exp
        got = kept.get(p[PUID])
        if got is not None:
            return got
        if self.ctx.automaton.viable is None:  # only opening brackets may be refused
            out = self.ctx.keep_openers(p, exp)
            kept.put(p[PUID], out)
            return out
        out = exp & self.ignored_bits
        sig = exp & ~self.ignored_bits
        if sig & self._fragile:  # (those that win no lexeme under the allowed set: none)
            sig &= ~self._fragile | self._winnable(self.allowed(p))
        while sig:
            low = sig & -sig
            sig ^= low
            t = low.bit_length() - 1
            # (the newline's step needs its width, a continuation the next line: kept)
            if t in (self.nl_t, self.cont_t) or self._shifts(p, t):
                out |= low
        kept.put(p[PUID], out)
        return out

    def complete(self, p: PState, q: int, carry: int) -> bool:
        if q != 0 and self.cont_t >= 0 and (self.accepting[q] >> self.cont_t) & 1:
            return False  # a line continuation needs a next line
        p2 = self.lexeme_end(p, q, carry, at_eof=True)
        return p2 is not None and self.ctx.finish(p2)

    # ------------------------------------------------------------------ bytes
    def step(self, q: int, carry: int, p: PState, byte: int) -> LexState | None:
        """One byte; None if no lexeme can take it."""
        rows, live = self.rows, self.live
        nq = rows[q][byte]
        if nq < 0 or not live[nq] & self.allowed(p):
            if q == 0:
                return None
            p2 = self.lexeme_end(p, q, carry)
            if p2 is None:
                return None
            p, carry = p2, 0
            nq = rows[0][byte]
            if nq < 0 or not live[nq] & self.allowed(p):
                return None
        if byte <= 32:
            carry = advance(carry, byte)
        return (nq, carry, p)

    def walk(self, st: LexState, data: bytes) -> LexState | int:
        """Feed bytes; the new state, or the offset where the offending lexeme starts."""
        q, carry, p = st
        rows, live = self.rows, self.live
        a = self.allowed(p)  # (read again only where a lexeme ends: p changes there)
        lex_start = 0
        quiet = True  # every lexeme ended after the first byte was an ignored one
        for i, byte in enumerate(data):
            nq = rows[q][byte]
            if nq < 0 or not live[nq] & a:
                if q == 0:
                    return i
                p2 = self.lexeme_end(p, q, carry)
                if p2 is None:
                    return lex_start
                # (a lexeme the first byte ends: the rest reads as a fresh walk from p2)
                quiet = i == 0 or (quiet and p2 is p)
                p, carry, lex_start = p2, 0, i
                a = self.allowed(p)
                nq = rows[0][byte]
                if nq < 0 or not live[nq] & a:
                    return i
            q = nq
            if byte <= 32:
                carry = advance(carry, byte)
        if q != 0 and not self._walk_end_ok(p, q, lex_start == 0 or quiet):
            return lex_start
        return (q, carry, p)

    def _walk_end_ok(self, p: PState, q: int, whole: bool) -> bool:
        """``end_ok`` at the end of a walk, and the dead-end search's verdict where the
        grammar has one (so ``advance()`` and the prefix's check agree with the masks);
        ``whole``: its last lexeme began at the walk's first byte or before, or every lexeme
        the walk ended was an ignored one (fill-in-the-middle checks those cases more
        closely)."""
        if not self.end_ok(p, q):
            return False
        if self.dead_ends is None:
            return True
        # ok_after per (parser state, lexer state), kept per parser context (a rule copied
        # for another context, as fill-in-the-middle's quotient, starts its own): a mask walks
        # every allowed token, most ending in a few such pairs
        memo = self.__dict__.get("_ok_after")
        if memo is None or memo[0] is not self.ctx:
            memo = self._ok_after = (self.ctx, BoundedMemo[tuple[int, int], bool](
                memo_size(self.ctx.automaton.limits.step_memo)))
        key = (p[PUID], q)
        v = memo[1].get(key)
        if v is None:
            v = self.dead_ends.ok_after(self, p, q)
            memo[1].put(key, v)
        return v
