"""Fill-in-the-middle for grammars in the contextual lexer mode.

As in :mod:`gramask.runtime.fim.constraint`, a quotient parser (the grammar's right quotient by the
suffix, built from the suffix's lexeme lattice, :mod:`gramask.runtime.fim.suffix_lattice`) runs
beside the original parser; here each has its own contextual lexer, because which terminals
compete at a lexeme start is the parser's call, and the two parsers expect different sets.
The original's lexing is the real one. The quotient's is the same on every middle that can
still reach a program (whatever it shifts there, the quotient expects too, so its lexemes
end where the real ones do), and differs only on middles that cannot.

State per step: ``(q, carry, pq, qo, co, po)``: the quotient side's lexer state, carry and
parser state, then the original's.

* **Masks**: the quotient's mask ∩ the original's (a token must keep the real lexing going
  too, so ``allowed()`` and ``advance()`` agree).
* **Ends**: a cheap necessary condition from the quotient (some boundary marker fits and
  completes its parse), then exact: the suffix walked from the original's state with the
  real contextual lexer (memoised per state, and walks stop where an earlier one passed
  through the same parser state at the same offset).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import InvalidPrefixError, InvalidSuffixError
from ..core.constraint import text_bytes
from ..core.contextual_lexer import ContextualLexer
from ..core.indentation import advance
from ..core.masks import MaskBuilder
from ..core.parse_state import PState
from ..limits import check_suffix_size
from .base import FimBase, gc_paused, prefix_meets_suffix
from .boundary import boundary_filter, with_boundary
from .constraint import erase_loops
from .quotient import base_for, build_quotient
from .suffix_lattice import parse_suffix_lattice

if TYPE_CHECKING:
    import numpy as np

    from ...grammar import Grammar
    from ...vocab import Vocabulary

__all__ = ["ContextualFimConstraint", "contextual_fim_constraint", "equivalent_prefix"]

CtxFimState = tuple[int, int, PState, int, int, PState]


def _cx(b: MaskBuilder) -> ContextualLexer:
    cx = b.contextual
    assert cx is not None  # contextual-mode builders only
    return cx


class ContextualFimConstraint(FimBase[CtxFimState]):
    """A fill-in-the-middle :class:`Constraint` for a grammar in the contextual lexer mode;
    create it with ``CompiledGrammar.constraint(prefix=..., suffix=...)``."""

    def _initial_state(self) -> CtxFimState:
        return (0, 0, self._b.ctx.root, 0, 0, self._ob.ctx.root)

    def _walk(self, st: CtxFimState, data: bytes) -> CtxFimState | int:
        r1 = _cx(self._b).walk((st[0], st[1], st[2]), data)
        if isinstance(r1, int):
            return r1
        r2 = _cx(self._ob).walk((st[3], st[4], st[5]), data)
        if isinstance(r2, int):
            return r2
        return (*r1, *r2)

    def _grammar_mask(self, st: CtxFimState) -> np.ndarray:
        q, carry, pq, qo, co, po = st
        m: np.ndarray = self._b.mask(pq, q, carry) & self._ob.mask(po, qo, co)
        return m

    def _complete(self, st: CtxFimState) -> bool:
        if not self._quotient_end(st):
            return False
        key = (st[3], st[4], st[5])
        r = self._ends.get(key)
        if r is None:
            with gc_paused():  # as in setup: the walk builds long-lived parser states
                r = self._suffix_completes(*key)
            if len(self._ends) >= self.MAX_ENDS:
                self._ends.clear()
            self._ends[key] = r
        return r

    def _quotient_end(self, st: CtxFimState) -> int:
        """1 if, per the quotient, the middle may end here; 0 if it cannot. A necessary
        condition only (the lexeme continued into ``S[:k]`` is walked on the lexer DFA without
        the allowed-set rule); :meth:`_suffix_completes` decides."""
        q, carry, pq = st[0], st[1], st[2]
        b = self._b
        cx = _cx(b)
        adv = b.ctx.automaton.advance
        n = len(self._suffix)
        for br, marker, a in self._branches:
            if br.k == 0:
                p2 = cx.lexeme_end(pq, q, carry, at_eof=n == 0)
                if p2 is None:
                    continue
                es = adv(p2.es, marker)
                if es is not None and es.accepts:
                    return 1
                continue
            if q == 0:
                continue
            g = self._glue_walk(q, br.k)
            if g is None:
                continue
            acc = cx.accepting[g[0]]
            if a >= 0:
                if not (acc >> a) & 1:
                    continue
                p3 = b.ctx.shift(pq, marker)
                if p3 is not None and p3.es.accepts:
                    return 1
            elif acc & cx.ignored_bits:
                es = adv(pq.es, marker)
                if es is not None and es.accepts:
                    return 1
        return 0

    def _glue_walk(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The lexer state after ``suffix[:k]`` from ``q`` on the lexer DFA, or None if the
        DFA dies (memoised per (q, k); the two zeros keep the basic mode's memo shape)."""
        key = (q, k)
        if key in self._glue:
            return self._glue[key]
        rows = _cx(self._b).rows
        qq = q
        for byte in self._suffix[:k]:
            qq = rows[qq][byte]
            if qq < 0:
                break
        res = (qq, 0, 0) if qq >= 0 else None
        self._glue[key] = res
        return res

    def _suffix_completes(self, q: int, carry: int, p: PState) -> bool:
        """Exact: does the suffix, lexed by the real contextual lexer from this state, end a
        program? Walks from different states converge, as in the basic mode."""
        cx = _cx(self._ob)
        memo = self._ends_at
        rows, live, allowed = cx.rows, cx.live, cx.allowed
        seen: list[tuple[int, int]] = []
        result: bool | None = None
        data = self._suffix
        for i, byte in enumerate(data):
            nq = rows[q][byte]
            if nq < 0 or not live[nq] & allowed(p):
                if q == 0:
                    result = False
                    break
                p2 = cx.lexeme_end(p, q, carry)
                if p2 is None:
                    result = False
                    break
                p, carry = p2, 0
                key = (i, p.uid)
                known = memo.get(key)
                if known is not None:
                    result = known[0]
                    break
                seen.append(key)
                self._alive.append(p)
                nq = rows[0][byte]
                if nq < 0 or not live[nq] & allowed(p):
                    result = False
                    break
            q = nq
            if byte <= 32:
                carry = advance(carry, byte)
        if result is None:
            result = cx.complete(p, q, carry)
        if len(memo) > 8 * len(data) + 4096:
            memo.clear()
            self._alive.clear()
        for k in seen:
            memo[k] = (result,)
        return result

    def clone(self) -> ContextualFimConstraint:
        c = ContextualFimConstraint(
            self._b, self._ob, self._vocab, suffix=self._suffix, tab_len=self._tab,
            _history=list(self._history), _chunks=list(self._chunks),
            _finished=self._finished, _shared=self._ends, _branches=self._branches,
            _glue=self._glue, _ends_at=self._ends_at, _alive=self._alive,
        )
        c._prefix = self._prefix
        return c


def contextual_fim_constraint(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes,
                              suffix: str | bytes, grammar: Grammar) -> ContextualFimConstraint:
    """Set up one fill-in-the-middle request for a contextual-mode grammar: parse the
    suffix's lexeme lattice backwards, build the quotient, walk the prefix.

    Raises
    ------
    InvalidPrefixError
        No program starts with the prefix.
    InvalidSuffixError
        No middle connects the prefix to the suffix (offset in the suffix).
    """
    with gc_paused():
        return _setup(ob, vocab, prefix, suffix, grammar)


def _setup(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes, suffix: str | bytes,
           grammar: Grammar) -> ContextualFimConstraint:
    sdata = text_bytes(suffix, "suffix")
    pdata = text_bytes(prefix, "prefix")
    check_suffix_size(sdata, ob.ctx.automaton.limits)
    ocx = _cx(ob)
    short = equivalent_prefix(ocx, pdata)
    lattice = parse_suffix_lattice(ocx, base_for(ob, grammar).rev, sdata)
    if not lattice.walked:
        raise InvalidSuffixError(
            "no middle connects the prefix to this suffix: the code after the cursor is not "
            "the end of any program", position=max(lattice.error_offset, 0))
    qb, markers = build_quotient(ob, grammar, [], lattice.error_offset, walked=lattice.walked)
    qb.contextual = ocx.for_context(qb.ctx)
    qb = with_boundary(qb, boundary_filter(ob, vocab, sdata, markers, contextual=True))
    with prefix_meets_suffix():
        c = ContextualFimConstraint(qb, ob, vocab, short, sdata, _branches=markers)
    c._prefix = pdata
    return c


def equivalent_prefix(cx: ContextualLexer, data: bytes) -> bytes:
    """:func:`gramask.runtime.fim.constraint.equivalent_prefix` under the contextual lexer (at a lexeme
    boundary the next lexeme depends only on the parser state and the text, as in the basic
    mode).

    Raises
    ------
    InvalidPrefixError
        No program starts with ``data``.
    """
    q, carry, p = 0, 0, cx.ctx.root
    rows, live, allowed = cx.rows, cx.live, cx.allowed
    bounds: list[tuple[int, PState]] = []
    lex_start = 0
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0 or not live[nq] & allowed(p):
            if q == 0:
                raise InvalidPrefixError("the prefix is not a prefix of any program", position=i)
            p2 = cx.lexeme_end(p, q, carry)
            if p2 is None:
                raise InvalidPrefixError("the prefix is not a prefix of any program",
                                         position=lex_start)
            p, carry, lex_start = p2, 0, i
            bounds.append((i, p))
            nq = rows[0][byte]
            if nq < 0 or not live[nq] & allowed(p):
                raise InvalidPrefixError("the prefix is not a prefix of any program", position=i)
        q = nq
        if byte <= 32:
            carry = advance(carry, byte)
    if q != 0 and not cx.end_ok(p, q):
        raise InvalidPrefixError("the prefix is not a prefix of any program", position=lex_start)
    return erase_loops(data, bounds)
