"""Proven upper bounds per token group for fill-in-the-middle budgets, without a walk per group.

A step's grammar-allowed tokens fall into groups that lead to one (lexer state, parser states)
each (:meth:`~.grouping.StepGrouping.step_units`). In the basic lexer mode a walk is decided by
its bytes alone, so a completion from a group's state can be *assembled* rather than searched:

* the shortest bytes ``w`` that finish the lexeme in progress as terminal ``a`` (a path on the
  lexer DFA; spelled in the fewest tokens, each token end checked as a walk checks it);
* then a plan walked once from the lexeme boundary after ``a`` (both parsers having shifted
  ``a``), whose first byte cannot continue the lexeme ``a`` reached: from there on the walk
  is the very one the plan was verified by (``a`` ends the same way whatever lexer state
  accepted it, and the newline lexeme, whose end reads the indentation carry, is left out).

A group that ends inside a newline lexeme (``):\n``, blanks: its tokens' carries differ, and
the lexeme's end reads the carry) is bounded another way: a line break continues the lexeme
and resets the carry, so after it every token of the group is in one state; a plan walked
from there, plus the break, bounds them all (``GroupBounds._nl_plan``). Where the break cannot
come at once (a comment's token ends inside a UTF-8 character: ``# é`` cut after ``\xc3``),
the fewest bytes that lead, inside the lexeme, to a state it can come in go first.

Its length is therefore an upper bound on the tokens that complete from the group's state, and
a group whose bound fits what is left is admitted with no walk of its own. The plans are kept
per (terminal, quotient parser state, original parser state) for the whole generation, so a
step whose parser states were seen before costs a few table lookups per group: where the
budget does not bind, the budget mask is the grammar mask at about that cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..core.earley import EXPECTED
from ..core.indentation import newline_width
from ..core.parse_state import ES, PUID, PState
from ..memo import MISSING
from .bounded import PLAN_FAILED
from .runstate import walk_ids
from .spelling import INF

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from ..core.masks import _TrieRow as TrieRow
    from .grouping import RowFinals
    from .lexeme_costs import LexemeCosts
    from .planner import BudgetPlanner
    from .spelling import TokenCounter

__all__ = ["BoundaryPlans", "GroupBounds"]

FimState = tuple[int, int, PState, PState]
Walk = Callable[[FimState, bytes], "FimState | int"]
Complete = Callable[[FimState], bool]

# terminals tried per lexer state (the cheapest ways to finish its lexeme first)
_TERMINALS = 3
# witness tokens at most (a longer one is not assembled)
_ENDS = 4
# new line-break plans a step may search for (``GroupBounds._nl_plan``)
_NL_PLANS = 4
# bytes at most before the line break of a line-break plan (``GroupBounds._break_head``)
_BREAK_BYTES = 3


def _view(st: FimState) -> tuple[int, int, PState]:
    return st[0], st[1], st[2]


class BoundaryPlans:
    """What one generation (one fill-in-the-middle request's constraint) has learnt: per
    (terminal, quotient parser uid, original parser uid) the plan walked from the lexeme
    boundary after that terminal and its first byte (None: none found), and per lexer
    state its cheapest ways to finish the lexeme in progress (:meth:`finishes`)."""

    def __init__(self, qb: MaskBuilder, lex: LexemeCosts, tok: TokenCounter,
                 token_bytes: Callable[[int], bytes]) -> None:
        self.plans: dict[tuple[int, int, int], tuple[tuple[int, ...], int] | None] = {}
        self.ends_at: dict[tuple[int, int, int], bool] = {}
        self.lex, self.tok, self.token_bytes = lex, tok, token_bytes
        self.rows, self.accept = qb.trans_rows, qb.accept
        self.state_class = qb.state_class
        self.nl_t = qb.nl_t
        S = len(self.accept)
        self.num_classes = int(max(self.state_class, default=0)) + 1
        # per (lexer state, rank): terminal (-1: none), witness tokens (INF: unusable), the
        # lexer state the witness reaches, and the end classes of its tokens (padded with
        # ``num_classes``, an always-true column)
        self.term = np.full((S, _TERMINALS), -1, dtype=np.int64)
        self.wlen = np.full((S, _TERMINALS), INF, dtype=np.int64)
        self.qa = np.zeros((S, _TERMINALS), dtype=np.int64)
        self.ends = np.full((S, _TERMINALS, _ENDS), self.num_classes, dtype=np.int64)
        self.witness: dict[tuple[int, int], tuple[int, ...]] = {}  # (state, rank) -> tokens
        self.known = np.zeros(S, dtype=bool)
        nl = qb.nl_live
        self.nl_live = np.array(nl if nl is not None else [False] * S, dtype=bool)
        # inside a newline lexeme: the completions after a line break, per (lexer state
        # after it, quotient parser uid, original parser uid) (None: none found), and per
        # lexer state the tokens up to and including the break (``GroupBounds._break_head``)
        self.nl_plans: dict[tuple[int, int, int], tuple[int, ...] | None] = {}
        self.breaks: dict[int, tuple[tuple[int, ...], int] | None] = {}
        self.nl_ids = tok.tokenize(b"\n") if self.nl_live.any() else None

    def finishes(self, states: np.ndarray) -> None:
        """Fill the finishing tables for ``states`` (each lexer state once)."""
        for q in states[~self.known[states]].tolist():
            self.known[q] = True
            if q == 0 or self.nl_live[q]:
                continue  # a newline lexeme's end reads the carry: not assembled here
            r = 0
            for a, _f in self.lex.fin_list[q]:
                if r >= _TERMINALS:
                    break
                if a == self.nl_t:
                    continue
                wit = self._witness(q, a)
                if wit is None:
                    continue
                tw, qa, ends = wit
                self.term[q, r], self.wlen[q, r], self.qa[q, r] = a, len(tw), qa
                self.witness[q, r] = tw
                self.ends[q, r, :len(ends)] = [self.state_class[x] for x in ends]
                r += 1

    def _witness(self, q: int, a: int) -> tuple[tuple[int, ...], int, list[int]] | None:
        """(the tokens of the shortest bytes that finish the lexeme at ``q`` as ``a``, the
        lexer state they reach, the lexer state at each of their token ends), or None."""
        w = self.lex.witness(q, a)
        tw = self.tok.tokenize(w) if w else ()
        if tw is None or len(tw) > _ENDS:
            return None
        ends: list[int] = []
        cur = q
        for t in tw:
            for byte in self.token_bytes(t):
                cur = self.rows[cur][byte]
                if cur < 0:
                    return None
            ends.append(cur)
        if self.accept[cur] != a:
            return None
        return tw, cur, ends


class GroupBounds:
    """One step's bounds: which groups of the step's tokens have an assembled completion
    that fits ``left`` tokens (see the module docstring). ``walk`` and ``complete`` are the
    fill-in-the-middle constraint's own; ``qb`` and ``ob`` its quotient and original mask
    builders (one lexer); ``plans``: how many new boundary plans the step may search for
    (each of ``search`` states), the vertices with the most tokens first; the groups left
    over take the walked checks."""

    def __init__(self, planner: BudgetPlanner, qb: MaskBuilder, ob: MaskBuilder,
                 memo: BoundaryPlans, st: FimState, left: int, walk: Walk,
                 complete: Complete, search: int, plans: int) -> None:
        self.planner = planner
        self.qb, self.ob = qb, ob
        self.memo = memo
        self.st = st
        self.left = left
        self.walk, self.complete = walk, complete
        self.token_bytes = memo.token_bytes
        self.search = search
        self.plans_left = plans
        # line-break plans have an allowance of their own: one covers every token of a
        # vertex that ends inside a newline lexeme, the groups a step meets at every line
        # end, and the terminals' plans (the largest vertices first) would spend it all
        self.nl_plans_left = _NL_PLANS
        self.trans = qb.trans

    # ------------------------------------------------------------------ a step's groups
    def admit(self, q: int, carry: int, pq: PState, po: PState,
              ) -> tuple[bool, list[tuple[RowFinals, np.ndarray]]]:
        """The step's grammar-allowed tokens at (q, carry, pq, po), grouped as
        :meth:`~.grouping.StepGrouping.step_units` groups them, with both parsers followed
        along each row trie: (did every group's bound fit, the sorted runs of the groups
        whose bound fits)."""
        grouping = self.planner.grouping
        qb, ob = self.qb, self.ob
        kept: list[tuple[RowFinals, np.ndarray]] = []
        every = True
        nt = qb.num_terminals
        # (tokens, vertex's row, lexer states, runs, quotient state, original state)
        found: list[tuple[int, RowFinals, np.ndarray, list[np.ndarray], PState, PState]] = []

        def visit(rf: RowFinals, p1: PState, p2: PState | None, v: int) -> None:
            nonlocal every
            lo, hi = rf.row.spans[v]
            if lo == hi:
                return
            if p2 is None:  # not expected: the quotient's tokens the original refuses
                every = False
                return
            fu, ks, sz = rf.vertex(v, qb.class_vector(p1)[rf.row.cls[lo:hi]])
            if fu.size:
                found.append((int(sz.sum()), rf, fu, ks, p1, p2))

        row = qb.row(q)
        rf = grouping._row_finals(q, row, None)
        _paired_walk(qb, ob, nt, pq, po, row, 0, lambda a, b, v: visit(rf, a, b, v), carry)
        if q != 0:
            p2q = qb.lexeme_end(pq, q, carry)
            if p2q is not None:
                p2o = ob.lexeme_end(po, q, carry)
                if p2o is None:
                    every = False
                else:
                    row0 = qb.row(0)
                    rk = grouping._row_finals(0, row0, qb.kill_set(q))
                    _paired_walk(qb, ob, nt, p2q, p2o, row0, 0,
                                 lambda a, b, v: visit(rk, a, b, v), 0)
        # the vertices with the most tokens first: they get this step's new plans first
        found.sort(key=lambda f: -f[0])
        for _n, rf_, fu, ks, p1, p2 in found:
            ok = self._fits(fu, p1, p2)
            every = every and bool(ok.all())
            kept.extend((rf_, k) for k, y in zip(ks, ok.tolist(), strict=True) if y)
        return every, kept

    def _fits(self, fu: np.ndarray, pq: PState, po: PState) -> np.ndarray:
        """Per lexer state of ``fu`` (the states a vertex's tokens leave the lexer in, both
        parsers at (pq, po)): has it an assembled completion of at most ``left`` tokens?"""
        bound, _ = self._bounds(fu, pq, po)
        out: np.ndarray = bound.min(axis=1) <= self.left
        return out

    def _bounds(self, fu: np.ndarray, pq: PState, po: PState,
                ) -> tuple[np.ndarray, dict[int, tuple[tuple[int, ...], int]]]:
        """Per lexer state of ``fu`` and rank: the assembled bound (INF: none, or not
        needed: a cheaper rank fitted), and the plans it used per terminal. A rank is
        planned only for the states no cheaper rank admitted."""
        memo = self.memo
        memo.finishes(fu)
        term = memo.term[fu]
        cv = np.append(self.qb.class_vector(pq), True)
        good = cv[memo.ends[fu]].all(axis=2) & (term >= 0)
        bound = np.full(term.shape, INF, dtype=np.int64)
        plans: dict[int, tuple[tuple[int, ...], int]] = {}
        need = np.ones(fu.size, dtype=bool)
        for r in range(_TERMINALS):
            sel = np.flatnonzero(need & good[:, r])
            if not sel.size:
                continue
            ts = term[sel, r]
            uniq = np.unique(ts)
            lens = np.full(uniq.size, -1, dtype=np.int64)  # -1: no plan
            first = np.zeros(uniq.size, dtype=np.int64)
            for j, a in enumerate(uniq.tolist()):
                plan = plans.get(a) or self._plan(a, pq, po)
                if plan is not None:
                    plans[a] = plan
                    lens[j], first[j] = len(plan[0]), max(plan[1], 0)
            pos = np.searchsorted(uniq, ts)
            ln = lens[pos]
            qa = memo.qa[fu[sel], r]
            # the plan's first byte must end the lexeme the witness reached; an empty plan
            # (the boundary is an end) needs the lexeme's own end to be one
            fits = (ln > 0) & (self.trans[qa, first[pos]] < 0)
            for j in np.flatnonzero(ln == 0).tolist():
                fits[j] = self._ends_here(int(qa[j]), pq, po)
            bound[sel[fits], r] = memo.wlen[fu[sel[fits]], r] + ln[fits]
            need &= bound.min(axis=1) > self.left
            if not need.any():
                break
        nl = np.flatnonzero(need & memo.nl_live[fu])
        if nl.size:
            bound = np.concatenate([bound, np.full((fu.size, 1), INF, dtype=np.int64)], axis=1)
            for j in nl.tolist():
                ids = self._nl_plan(int(fu[j]), pq, po)
                if ids is not None:
                    bound[j, _TERMINALS] = len(ids)
        return bound, plans

    def _nl_plan(self, q: int, pq: PState, po: PState) -> tuple[int, ...] | None:
        """A completion from every state (q, carry, pq, po), whatever the carry: a line
        break, then a plan walked from the state it reaches. ``q`` is inside a newline
        lexeme that a line break continues; the break resets the carry and nothing before
        it reads the carry (``walk``: no lexeme ends, a token end's check reads the lexer
        and parser states only), so the state after it is one state for the whole group
        (:mod:`.carry_free`'s argument, with the reset first)."""
        memo = self.memo
        head = memo.breaks.get(q, MISSING)
        if head is MISSING:
            head = memo.breaks[q] = self._break_head(q)
        if head is None:
            return None
        ids0, q2 = head
        key = (q2, pq[PUID], po[PUID])
        if key in memo.nl_plans:
            tail = memo.nl_plans[key]
            if tail is None:
                return None
            if len(ids0) > 1:  # (its inner token ends are checked by a walk of its own)
                s1 = self._walk_ids((q, 0, pq, po), ids0)
                if s1 is None or s1[0] != q2:
                    return None
            return (*ids0, *tail)
        if self.nl_plans_left <= 0:
            return None  # not known this step (asked again by a later one)
        self.nl_plans_left -= 1
        if len(memo.nl_plans) >= 1 << 14:
            memo.nl_plans.clear()
        r = self._walked_plan((q, 0, pq, po), ids0)
        memo.nl_plans[key] = None if r is None else r[len(ids0):]
        return r

    def _break_head(self, q: int) -> tuple[tuple[int, ...], int] | None:
        """The tokens of the fewest bytes that lead from lexer state ``q`` (inside a newline
        lexeme) through a line break, every byte continuing the lexeme in both lexers (no
        lexeme ends, so nothing reads the carry before the break resets it), and the lexer
        state after the break; None if there are none within _BREAK_BYTES bytes."""
        rows, orows = self.memo.rows, self.ob.trans_rows
        if self.memo.nl_ids is None:
            return None
        seen = {q: b""}
        frontier = [q]
        for _ in range(_BREAK_BYTES + 1):
            nxt: list[int] = []
            for x in frontier:
                w = seen[x]
                if rows[x][10] >= 0 and orows[x][10] >= 0:
                    ids = self.memo.tok.tokenize(w + b"\n")
                    return None if ids is None else (ids, rows[x][10])
                for byte in range(256):
                    y = rows[x][byte]
                    if y >= 0 and orows[x][byte] == y and y not in seen:
                        seen[y] = w + bytes([byte])
                        nxt.append(y)
            frontier = nxt
        return None

    def _walked_plan(self, s: FimState, head: tuple[int, ...]) -> tuple[int, ...] | None:
        """``head`` then a plan from where it leads, walked from ``s`` to an end (None: the
        walk fails or no plan is found)."""
        s1 = self._walk_ids(s, head)
        if s1 is None:
            return None
        if self.complete(s1):
            return head
        try:
            ids = tuple(self.planner.plan(s1, self.walk, self.complete, _view,
                                          search=self.search))
        except PLAN_FAILED:
            return None
        end = self._walk_ids(s1, ids)  # walked here too: the bound rests on this walk alone
        if not ids or end is None or not self.complete(end):
            return None
        return (*head, *ids)

    def _walk_ids(self, s: FimState, ids: tuple[int, ...]) -> FimState | None:
        return walk_ids(self.walk, self.token_bytes, s, ids)

    def _ends_here(self, q: int, pq: PState, po: PState) -> bool:
        """Is the state (q, pq, po) complete? (An end after a lexeme the suffix's first
        byte ends: no carry matters; memoised per generation.)"""
        if self.memo.nl_live[q]:
            return False  # the suffix may continue it into a newline lexeme: carry matters
        k = (q, pq[PUID], po[PUID])
        r = self.memo.ends_at.get(k)
        if r is None:
            r = self.memo.ends_at[k] = self.complete((q, 0, pq, po))
        return r

    def _plan(self, a: int, pq: PState, po: PState) -> tuple[tuple[int, ...], int] | None:
        key = (a, pq[PUID], po[PUID])
        plans = self.memo.plans
        if key in plans:
            return plans[key]
        if self.plans_left <= 0:
            return None  # not known this step (asked again by a later one)
        self.plans_left -= 1
        if len(plans) >= 1 << 14:
            plans.clear()
            self.memo.ends_at.clear()
        r = plans[key] = self._boundary_plan(a, pq, po)
        return r

    def _boundary_plan(self, a: int, pq: PState, po: PState,
                       ) -> tuple[tuple[int, ...], int] | None:
        """A plan walked from the lexeme boundary after ``a`` (both parsers shifted it) and
        its first byte; ((), -1) where the boundary is an end (whether the lexeme's own end
        is one depends on the lexer state that accepted it: the suffix may continue it);
        None where none is found."""
        pq2 = self.qb.ctx.end_lexeme(pq, a, 0)
        po2 = self.ob.ctx.end_lexeme(po, a, 0)
        if pq2 is None or po2 is None:
            return None
        got = self._walked_plan((0, 0, pq2, po2), ())
        if got is None:
            return None
        return (got, self.token_bytes(got[0])[0]) if got else ((), -1)

    def after(self, s: FimState | int) -> tuple[int, ...] | None:
        """The assembled completion from the state ``s`` a token led to, if one of at most
        ``left`` tokens is known (what ``advance`` keeps as the next step's plan)."""
        if isinstance(s, int) or s[0] == 0:
            return None
        q, _, pq, po = s
        bound, plans = self._bounds(np.array([q], dtype=np.int64), pq, po)
        r = int(bound[0].argmin())
        if bound[0, r] > self.left:
            return None
        if r == _TERMINALS:  # inside a newline lexeme: a line break, then its plan
            return self._nl_plan(q, pq, po)
        return (*self.memo.witness[q, r], *plans[int(self.memo.term[q, r])][0])


def _paired_walk(qb: MaskBuilder, ob: MaskBuilder, nt: int, pq: PState, po: PState,
                 row: TrieRow, v: int, visit: Callable[[PState, PState | None, int], None],
                 carry: int) -> None:
    """:func:`~gramask.runtime.core.masks.walk_row_trie` with the original parser stepped
    along the quotient's: ``visit(quotient state, original state, vertex)`` at the root and
    at every vertex both reach (the original takes what the quotient takes: a middle of the
    quotient is one of the grammar)."""
    if v == 0:
        visit(pq, po, 0)
    qc, oc = qb.ctx, ob.ctx
    expected = pq[ES][EXPECTED]
    children = row.children
    for h, child in children[v]:
        if h < nt:
            if not (expected >> h) & 1:
                continue
            q2, o2 = qc.shift(pq, h), oc.shift(po, h)
        else:
            w = newline_width(nt, h, carry)
            q2, o2 = qc.newline(pq, w), oc.newline(po, w)
        if q2 is None:
            continue
        visit(q2, o2, child)
        if o2 is not None and children[child]:
            _paired_walk(qb, ob, nt, q2, o2, row, child, visit, 0)
