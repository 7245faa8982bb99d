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
* **Budgets** (``max_tokens``): as in the basic mode's fill-in-the-middle, a token is allowed
  only where a completion after it was walked (both sides' contextual lexers) to the exact
  end check within what is left (:class:`~gramask.runtime.budget.verify.WalkedVerifier`);
  tokens are grouped by the state they lead to on both sides (the contextual prefix mode's
  vectorised walk, once per side), so one completion decides a group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from ...errors import InvalidPrefixError, InvalidSuffixError
from ..budget.bounded import BoundedBudget
from ..budget.contextual import ContextualBudgetPlanner
from ..budget.quotient_planner import quotient_planner
from ..budget.verify import WalkedVerifier, budget_binds, verified_step
from ..core.constraint import starts_a_line
from ..core.contextual_lexer import ContextualLexer
from ..core.earley import ACCEPTS
from ..core.indentation import advance, join
from ..core.masks import MaskBuilder
from ..core.parse_state import ES, INDENT, PUID, PState
from ..core.step_state import LexState
from ..core.text_input import text_bytes
from ..limits import check_suffix_size
from .base import FimBase, gc_paused, prefix_meets_suffix
from .boundary import boundary_filter, with_boundary
from .constraint import erase_loops
from .quotient import build_quotient
from .quotient_base import base_for
from .suffix_indent import parse_indented_lattice
from .suffix_lattice import parse_suffix_lattice

if TYPE_CHECKING:
    from ...grammar import Grammar
    from ...vocab import Vocabulary
    from ..budget.planner import BudgetPlanner

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
        return self._after_line_start((0, 0, self._b.ctx.root, 0, 0, self._ob.ctx.root))

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
        # with indentation the quotient's "no" is not exact: its lattice assumes the stacks
        # under the suffix's first line (suffix_indent.py), and a middle outside them (more
        # levels than the caps, or the levels below re-indented) has the suffix's real
        # terminals in no branch. The suffix is walked then, as the exact end check does; such
        # walks mostly stop at the suffix's first lexemes (Python, 15 cuts of
        # tools/budget_force.py forced and walked: 76 walks before, 184 now, 0.34 -> 0.38 s).
        # (After ``if:\n    if:\n     b\n `` the middle ``   if:\n      `` before
        # ``b\n      b\n``, the stack 0, 4, 6, had EOS refused.)
        if not self._quotient_end(st) and self._ob.nl_t < 0:
            return False
        return self._exact_end(st[3], st[4], st[5])

    def _quotient_verdict(self, q: int, carry: int, pq: PState) -> int:
        """1 if, per the quotient, the middle may end here; 0 if it cannot. A necessary
        condition only (the lexeme continued into ``S[:k]`` is walked on the lexer DFA without
        the allowed-set rule); :meth:`_suffix_completes` decides. Memoised:
        :meth:`_quotient_end`."""
        b = self._b
        cx = _cx(b)
        adv = b.ctx.automaton.advance
        n = len(self._suffix)
        for br, marker, a in self._branches:
            if br.k == 0:
                p2 = cx.lexeme_end(pq, q, carry, at_eof=n == 0)
                if p2 is None:
                    continue
                es = adv(p2[ES], marker)
                if es is not None and es[ACCEPTS]:
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
                if p3 is not None and p3[ES][ACCEPTS]:
                    return 1
            else:
                if acc & cx.ignored_bits:
                    es = adv(pq[ES], marker)
                    if es is not None and es[ACCEPTS]:
                        return 1
                if cx.nl_t >= 0 and (acc >> cx.nl_t) & 1:
                    # a newline the suffix continues: its width is known here
                    c2 = g[2] if g[1] else join(carry, g[2])
                    p4 = b.ctx.newline(pq, 0 if br.k == n else c2)
                    es = None if p4 is None else adv(p4[ES], marker)
                    if es is not None and es[ACCEPTS]:
                        return 1
        return 0

    def _glue_fresh(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The glue on the lexer DFA (no greedy end to test: the allowed sets decide), or
        None if the DFA dies."""
        return self._run_suffix(_cx(self._b).rows, q, k)

    def _suffix_completes(self, q: int, carry: int, p: PState) -> bool:
        """Exact: does the suffix, lexed by the real contextual lexer from this state, end a
        program? Walks from different states converge, as in the basic mode."""
        cx = _cx(self._ob)
        rows, live, allowed = cx.rows, cx.live, cx.allowed
        seen: list[tuple[int, int]] = []
        result: bool | None = None
        a = allowed(p)  # (the parser state's; it changes only where a lexeme ends)
        for i, byte in enumerate(self._suffix):
            nq = rows[q][byte]
            if nq < 0 or not live[nq] & a:
                if q == 0:
                    result = False
                    break
                p2 = cx.lexeme_end(p, q, carry)
                if p2 is None:
                    result = False
                    break
                p, carry = p2, 0
                a = allowed(p)
                result = self._met_before(i, p, seen)
                if result is not None:
                    break
                nq = rows[0][byte]
                if nq < 0 or not live[nq] & a:
                    result = False
                    break
            q = nq
            if byte <= 32:
                carry = advance(carry, byte)
        if result is None:
            result = cx.complete(p, q, carry)
        return self._remember(seen, result)

    # ------------------------------------------------------------------ budgets
    # Per step: the largest MAX_GROUPS groups (tokens that lead to one state on both sides)
    # checked, at most MAX_PLANS of them with a plan of their own; MAX_CHEAP more given only
    # the cheap checks (the step plan's text, pooled completions).
    MAX_GROUPS = 512
    MAX_PLANS = 64
    MAX_CHEAP = 2048
    VERIFY_SEARCH = 16  # states a token's plan may search (the step's own plan: more)
    # the original grammar's planner (its vectorised walk groups the original side)
    _orig_planner: Callable[[], BudgetPlanner] | None = None

    def _apply_budget(self, st: CtxFimState, m: np.ndarray) -> None:
        """Keep in ``m`` only tokens after which a walked completion of at most
        ``remaining − 1`` tokens reaches the exact end check, and the step's own plan's
        first token (the basic mode's rule: :meth:`FimConstraint._apply_budget`)."""
        left = self.remaining_tokens
        assert left is not None
        rec = verified_step(self, st, left)
        if left >= 1:
            pl = self._budget_planner()
            ver = WalkedVerifier(self, left - 1, _ctx_key(pl), _ctx_norm(pl), rec.plan,
                                 pool=self._pool())
            vocab = self._vocab
            groups = self._state_groups(st, np.flatnonzero(m & ~rec.keep))
            if budget_binds(rec.plan, left - 1):
                # the capped plans go first to the groups whose (quotient's) cost says they
                # fit, the largest first within each kind: the cost orders, the walk decides
                # (`' \` in a char literal the suffix closes, 1 token needed of 1 left, was
                # starved by larger groups whose plans all ran 2 or 3 tokens long)
                over = [pl.state_cost(s[0], s[1], s[2]) > left - 1 for s, _ in groups]
                groups = [groups[i] for i in sorted(range(len(groups)), key=over.__getitem__)]
            for i, (s, members) in enumerate(groups[: self.MAX_GROUPS + self.MAX_CHEAP]):
                data = vocab.token_bytes(int(members[0]))
                vx = (s[2][PUID], s[5][PUID])
                done = (ver.state(s, vx, data, members.size)
                        if i < self.MAX_GROUPS else ver.cheap(s, data, vx))
                if done is not None:
                    rec.add(members, done)
        rec.apply(m, self._complete(st))

    def _budget_planner(self) -> ContextualBudgetPlanner:
        return cast(ContextualBudgetPlanner, super()._budget_planner())

    def _state_groups(self, st: CtxFimState, toks: np.ndarray
                      ) -> list[tuple[CtxFimState, np.ndarray]]:
        """``toks`` grouped by the state they lead to on both sides (each side's vectorised
        contextual walk, :meth:`ContextualBudgetPlanner.group_tokens`), largest first; each
        group's state checked against a real walk of its first member (a group that
        disagrees is dropped: never admitted on a guess)."""
        pl = self._budget_planner()
        assert self._orig_planner is not None
        opl = cast(ContextualBudgetPlanner, self._orig_planner())
        q, carry, pq, qo, co, po = st
        # each side grouped over its own grammar mask (what its memo is keyed for), then
        # cut to ``toks``
        gq = pl.group_tokens(q, pq, np.flatnonzero(self._b.mask(pq, q, carry)), carry)
        go = opl.group_tokens(qo, po, np.flatnonzero(self._ob.mask(po, qo, co)), co)
        v = len(self._vocab)
        side_q = np.full(v, -1, dtype=np.int64)
        side_o = np.full(v, -1, dtype=np.int64)
        for i, g in enumerate(gq):
            side_q[g[3]] = i
        for i, g in enumerate(go):
            side_o[g[3]] = i
        ok = (side_q[toks] >= 0) & (side_o[toks] >= 0)
        toks = toks[ok]
        n_o = max(1, len(go))
        key = side_q[toks] * n_o + side_o[toks]
        uniq, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
        members = toks[np.argsort(inv, kind="stable")]
        cuts = np.concatenate(([0], np.cumsum(counts)))
        out: list[tuple[CtxFimState, np.ndarray]] = []
        state_key = _ctx_key(pl)
        for j in np.argsort(-counts, kind="stable").tolist():
            a, b = gq[int(uniq[j]) // n_o], go[int(uniq[j]) % n_o]
            want: CtxFimState = (a[0], a[1], a[2], b[0], b[1], b[2])
            mem = members[cuts[j]:cuts[j + 1]]
            s = self._walk(st, self._vocab.token_bytes(int(mem[0])))
            if not isinstance(s, int) and state_key(s) == state_key(want):
                out.append((want, mem))
        return out

    def clone(self) -> ContextualFimConstraint:
        c = super().clone()
        c._orig_planner = self._orig_planner
        return c


def _ctx_norm(pl: ContextualBudgetPlanner) -> Callable[[CtxFimState], CtxFimState]:
    """Both sides' carries dropped where they decide nothing (the planner's
    :meth:`~ContextualBudgetPlanner.norm_state` per side): plans and groups are shared across
    them."""

    def norm(s: CtxFimState) -> CtxFimState:
        return pl.norm_state((s[0], s[1], s[2])) + pl.norm_state((s[3], s[4], s[5]))

    return norm


def _ctx_key(pl: ContextualBudgetPlanner) -> Callable[[CtxFimState], tuple[int, ...]]:
    """A hashable key of :func:`_ctx_norm`'s state (the planner's
    :meth:`~ContextualBudgetPlanner.state_key` per side)."""

    def key(s: CtxFimState) -> tuple[int, ...]:
        return pl.state_key((s[0], s[1], s[2])) + pl.state_key((s[3], s[4], s[5]))

    return key


def contextual_fim_constraint(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes,
                              suffix: str | bytes, grammar: Grammar,
                              max_tokens: int | None = None,
                              planner: Callable[[], BudgetPlanner] | None = None,
                              ) -> ContextualFimConstraint:
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
        return _setup(ob, vocab, prefix, suffix, grammar, max_tokens, planner)


def _setup(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes, suffix: str | bytes,
           grammar: Grammar, max_tokens: int | None,
           planner: Callable[[], BudgetPlanner] | None) -> ContextualFimConstraint:
    sdata = text_bytes(suffix, "suffix")
    pdata = text_bytes(prefix, "prefix")
    check_suffix_size(sdata, ob.ctx.automaton.limits)
    ocx = _cx(ob)
    start: LexState = (0, 0, ob.ctx.root)
    if starts_a_line(ob):
        r = ocx.walk(start, b"\n")
        assert not isinstance(r, int)  # the root expects a newline
        start = r
    short, stack = _equivalent(ocx, pdata, start)
    rev = base_for(ob, grammar).rev
    lattice = (parse_suffix_lattice(ocx, rev, sdata) if ob.nl_t < 0
               else parse_indented_lattice(ocx, rev, sdata, stack))
    if not lattice.walked:
        raise InvalidSuffixError(
            "no middle connects the prefix to this suffix: the code after the cursor is not "
            "the end of any program", position=max(lattice.error_offset, 0))
    qb, markers = build_quotient(ob, grammar, [], lattice.error_offset, walked=lattice.walked,
                                 suffix=sdata)
    qb.contextual = ocx.for_context(qb.ctx)
    qb = with_boundary(qb, boundary_filter(ob, vocab, sdata, markers, contextual=True))
    qplanner = (None if planner is None else
                quotient_planner(qb, vocab, 8, markers, planner, sdata,
                                 cls=ContextualBudgetPlanner))
    with prefix_meets_suffix():
        c = ContextualFimConstraint(
            qb, ob, vocab, short, sdata, _branches=markers, max_tokens=max_tokens,
            budget=None if qplanner is None else BoundedBudget(qplanner))
    c._prefix = pdata
    c._orig_planner = planner
    return c


def equivalent_prefix(cx: ContextualLexer, data: bytes, start: LexState | None = None) -> bytes:
    """:func:`gramask.runtime.fim.constraint.equivalent_prefix` under the contextual lexer (at a lexeme
    boundary the next lexeme depends only on the parser state and the text, as in the basic
    mode), read from ``start`` (the constraint's initial state; default: the lexer's start
    and the root).

    Raises
    ------
    InvalidPrefixError
        No program starts with ``data``.
    """
    return _equivalent(cx, data, start or (0, 0, cx.ctx.root))[0]


def _equivalent(cx: ContextualLexer, data: bytes, start: LexState
                ) -> tuple[bytes, tuple[int, ...]]:
    """:func:`equivalent_prefix`, with the indentation stack after the prefix's last
    complete lexeme."""
    q, carry, p = start
    rows, live, allowed = cx.rows, cx.live, cx.allowed
    bounds: list[tuple[int, PState]] = []
    lex_start = 0
    a = allowed(p)  # (the parser state's; it changes only where a lexeme ends)
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0 or not live[nq] & a:
            if q == 0:
                raise InvalidPrefixError("the prefix is not a prefix of any program", position=i)
            p2 = cx.lexeme_end(p, q, carry)
            if p2 is None:
                raise InvalidPrefixError("the prefix is not a prefix of any program",
                                         position=lex_start)
            p, carry, lex_start = p2, 0, i
            a = allowed(p)
            bounds.append((i, p))
            nq = rows[0][byte]
            if nq < 0 or not live[nq] & a:
                raise InvalidPrefixError("the prefix is not a prefix of any program", position=i)
        q = nq
        if byte <= 32:
            carry = advance(carry, byte)
    if q != 0 and not cx._walk_end_ok(p, q, True):  # (with the dead-end search's verdict)
        raise InvalidPrefixError("the prefix is not a prefix of any program", position=lex_start)
    return erase_loops(data, bounds), p[INDENT]
