"""Fill-in-the-middle: a constraint that also knows the code after the cursor.

A :class:`FimConstraint` runs two parsers over the middle, side by side, on one lexer:

* the **quotient parser** (``qb``), built per request for the right quotient of the grammar by
  the lexed suffix (see :mod:`gramask.runtime.fim.quotient`): its masks allow only middles that
  can still connect to the suffix;
* the **original parser** (``ob``), shared by every constraint of the compiled grammar: it is
  what confirms an end exactly. ``is_complete()`` holds iff prefix + middle + suffix is a
  program: the quotient says the middle may end here (cheap, independent of ``|S|``), then the
  suffix is walked from the original parser's state (cost ``∝ |S|``, memoised per state, paid
  only at candidate ends).

State per step: ``(q, carry, pq, po)``: lexer state, indentation carry, quotient parser state,
original parser state. Both parser states are immutable, hash-consed objects, so clone and
rollback stay free.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import numpy as np

from ...errors import InvalidSuffixError
from ..budget.bounded import BoundedBudget
from ..budget.carry_free import CarryClasses
from ..budget.group_bounds import BoundaryPlans, GroupBounds
from ..budget.quotient_planner import quotient_planner
from ..budget.verify import VerifiedTokens, WalkedVerifier, verified_step
from ..core.constraint import Constraint
from ..core.earley import ACCEPTS
from ..core.indentation import TAB_UNIT, advance, join
from ..core.lexing import walk
from ..core.masks import MaskBuilder
from ..core.parse_state import BOL, DEPTH, ES, INDENT, PUID, PState
from ..core.text_input import text_bytes
from ..limits import check_suffix_size
from ..memo import MISSING
from .base import gc_paused, prefix_meets_suffix
from .basic_glue import BasicFimBase, FimState
from .boundary import boundary_filter, with_boundary
from .quotient import build_quotient
from .suffix_lexing import Branch, lex_suffix

if TYPE_CHECKING:
    from ...grammar import Grammar
    from ...vocab import Vocabulary
    from ..budget.grouping import RowFinals
    from ..budget.planner import BudgetPlanner, TokenGroups

__all__ = ["FimConstraint", "walk"]



class FimConstraint(BasicFimBase):
    """A :class:`Constraint` for ``prefix + middle + suffix`` in the basic lexer mode; create
    it with ``CompiledGrammar.constraint(prefix=..., suffix=...)``."""

    # ------------------------------------------------------------------ lexing
    def _initial_state(self) -> FimState:
        return self._after_line_start((0, 0, self._b.ctx.root, self._ob.ctx.root))

    def _walk(self, st: FimState, data: bytes) -> FimState | int:
        """Memoised: a budget step's checks and plan searches walk a third of theirs again."""
        key = (st[0], st[1], st[2][PUID], st[3][PUID], data)
        r = self._walks.get(key, MISSING)
        if r is MISSING:
            r = self._walk_fresh(st, data)
            self._walks.put(key, r)
        return r

    def _walk_fresh(self, st: FimState, data: bytes) -> FimState | int:
        q, carry, pq, po = st
        r1 = walk(self._b, (q, carry, pq), data, self._tab)
        if isinstance(r1, int):
            return r1
        # the original parser follows along for the exact end check; where it refuses openers
        # nothing closes (``ParserContext.closable``), its prefix check and masks count too
        r2 = walk(self._ob, (q, carry, po), data, self._tab, check_end=self._closing)
        return r2 if isinstance(r2, int) else (r1[0], r1[1], r1[2], r2[2])

    def _grammar_mask(self, st: FimState) -> np.ndarray:  # (sound for every middle)
        m = super()._grammar_mask(st)
        return m & self._ob.mask(st[3], st[0], st[1]) if self._closing else m

    def _complete(self, st: FimState) -> bool:
        q, carry, _, po = st
        v = self._quotient_end(st)
        if v == 2 or (v == 0 and self._covered(q, carry, po)):
            return v == 2  # the quotient's verdict, exact
        return self._exact_end(q, carry, po)

    def _covered(self, q: int, carry: int, po: PState) -> bool:
        """Is the quotient's "no" exact here: do the branches hold the suffix's real
        terminals after this state (original parser ``po``)? Greedy lexing ends the lexeme
        in progress at one ``k`` only, so the branches glued to ``q`` are the readings there;
        one whose boundary assumptions hold (or a boundary lexeme the parser refuses) is
        the real one. Where none holds, the middle lies outside the hypotheses (a stack
        deeper than the caps, or levels below the first line re-indented: after ``if:\n``
        the middle `` if:\n  if:\n `` before ``"  b\n"`` had EOS refused) and the end is
        walked (as every "no" is where tabs indent: widths that do not compare as numbers)."""
        if self._ob.nl_t < 0:
            return True
        key = (q, carry, po[PUID])
        r = self._covers.get(key)
        if r is None:
            if len(self._covers) >= self.MAX_ENDS:
                self._covers.clear()
            r = self._covers[key] = self._covered_fresh(q, carry, po)
        return r

    def _covered_fresh(self, q: int, carry: int, po: PState) -> bool:
        glued = self._glued.get(q)
        if glued is None:
            glued = self._glued[q] = self._glued_branches(q)
        n = len(self._suffix)
        for br, _, a, qq, reset, width in glued:
            if not br.assumptions:
                return True  # no indentation: the branch's terminals are the suffix's
            if a >= 0:  # a plain terminal the suffix continues
                p2 = self._ob.ctx.shift(po, a)
            else:
                c2 = width if reset else join(carry, width)
                p2 = self._ob.lexeme_end(po, qq, c2, at_eof=br.k == n)
            if p2 is None or (not self._tabbed and _holds(br, p2)):
                return True
        return not glued

    def _suffix_completes(self, q: int, carry: int, p: PState) -> bool:
        """Exact: does the suffix, read from this state with the original grammar, end a
        program? Walks from different states converge (hash-consed parser states at the same
        suffix offset), so each walk stops at the first lexeme boundary an earlier walk
        passed through, and reuses its verdict: the suffix is read in full about once."""
        b = self._ob
        rows, accept, ctx = b.trans_rows, b.accept, b.ctx
        seen: list[tuple[int, int]] = []
        result: bool | None = None
        for i, byte in enumerate(self._suffix):
            nq = rows[q][byte]
            if nq < 0:
                a = accept[q]
                if a < 0 or q == 0:
                    result = False
                    break
                p2 = ctx.end_lexeme(p, a, carry)
                if p2 is None:
                    result = False
                    break
                p = p2
                carry = 0
                result = self._met_before(i, p, seen)
                if result is not None:
                    break
                nq = rows[0][byte]
                if nq < 0:
                    result = False
                    break
            q = nq
            if byte <= 32:
                carry = advance(carry, byte)
        if result is None:
            result = (q == 0 or b.end_ok(p, q)) and b.complete(p, q, carry)
        return self._remember(seen, result)

    def _quotient_verdict(self, q: int, carry: int, pq: PState) -> int:
        """Can the middle end here, per the quotient (cost independent of |S|)? 0: no;
        2: yes, exactly (a branch whose assumptions about the boundary — bracket depth,
        indentation — hold here accepts); 1: only branches whose assumptions do not hold
        accept (the suffix must be walked to know). Memoised: :meth:`_quotient_end`."""
        b = self._b
        adv = b.ctx.automaton.advance
        verdict = 0
        glued = self._glued.get(q)
        if glued is None:
            glued = self._glued[q] = self._glued_branches(q)
        for br, marker, a, qq, reset, width in glued:
            if a >= 0:
                # the marker stands for the boundary lexeme (of terminal a) and the rest
                p2 = b.ctx.shift(pq, marker)
                if p2 is None or p2[DEPTH] not in br.depths or not p2[ES][ACCEPTS]:
                    continue
            else:
                c2 = width if reset else join(carry, width)
                p2 = b.lexeme_end(pq, qq, c2, at_eof=br.k == len(self._suffix))
                if p2 is None or p2[DEPTH] not in br.depths:
                    continue
                es = adv(p2[ES], marker)
                if es is None or not es[ACCEPTS]:
                    continue
            if not self._tabbed and (not br.assumptions or _holds(br, p2)):
                return 2
            verdict = 1
        return verdict

    # ------------------------------------------------------------------ budgets
    # Per step: groups of tokens that lead to the same state checked (one representative
    # each, the largest groups first), of them at most MAX_PLANS with a plan of their own (the
    # rest through a plan shared at the lexeme boundary); tokens whose state no group pins
    # down (inside a newline lexeme) walked one by one, at most MAX_LONE, and grouped by the
    # state they reach.
    MAX_GROUPS = 384
    MAX_PLANS = 64
    MAX_LONE = 1024
    MAX_CHEAP = 2048  # groups beyond MAX_GROUPS given only the cheap checks
    VERIFY_SEARCH = 16  # states a token's plan may search (the step's own plan: more)
    # new plans a step's proven group bounds may search for (runtime/budget/group_bounds.py;
    # 0: no group bounds, every group takes the walked checks)
    BOUND_PLANS = 8

    def _apply_budget(self, st: FimState, m: np.ndarray) -> None:
        """Keep in ``m`` only tokens after which a *verified* completion fits: token
        sequences walked from the state after the token to a state where the exact
        :meth:`is_complete` holds, at most ``remaining − 1`` tokens long; and the current
        step's own plan's first token (docs/semantics.md, "Token budgets with a suffix").

        The quotient planner's per-token costs are not bounds here (its "the middle may end
        here" ignores what the suffix needs; lexemes spelled one by one), so they decide
        nothing and are not computed: the largest groups are checked first. What is not
        verified is forbidden (measured as over-restriction)."""
        left = self.remaining_tokens
        assert left is not None
        planner = self._budget_planner()
        q, carry, pq = self._view(st)
        rec = verified_step(self, st, left)
        if left >= 1:
            if self._bounded_groups(st, m, rec, left - 1):
                return  # every group's proven bound fits: the grammar mask as it is
            tc = planner.token_groups(pq, q, carry)  # no costs: see the docstring
            toks = np.flatnonzero(m & ~rec.keep)
            key = _group_keys(planner, tc, toks, carry)
            lone = toks[key < 0]
            toks, key = toks[key >= 0], key[key >= 0]
            srt = np.argsort(key, kind="stable")
            toks, key = toks[srt], key[srt]
            groups, first, sizes = np.unique(key, return_index=True, return_counts=True)
            order = np.argsort(-sizes, kind="stable")
            ver = WalkedVerifier(self, left - 1, _key, step_plan=rec.plan, pool=self._pool())
            vert = groups // (_CARRIES * tc.num_states)
            vocab = self._vocab
            # states that differ only in the carry (a comment's words) share a completion
            cls = CarryClasses((self._b.trans_rows, self._ob.trans_rows), self._b.nl_live,
                               tc.num_states, vocab.token_bytes, self._suffix[:64])
            raws = groups // _CARRIES  # each group's carry class
            checked = cls.representatives(raws, order[: self.MAX_GROUPS])
            for i in checked:
                self._check_group(st, ver, rec, toks, int(first[i]), int(sizes[i]),
                                  int(vert[i]), cls, int(raws[i]))
            # the tokens no group pins down (they end inside a newline lexeme: "):\n", ",\n",
            # leading blanks — what real code takes at every line end) walked one by one,
            # grouped by the state they reach, and checked first: the groups' plans are
            # mostly shared per vertex, theirs mostly not
            lone = cls.admit(rec, lone, tc.raw[lone])
            buckets: dict[tuple[int, ...], tuple[FimState, int, list[int]]] = {}
            for t in lone[: self.MAX_LONE].tolist():
                s = self._walk(st, vocab.token_bytes(t))
                if isinstance(s, int):
                    continue
                b = buckets.get(_key(s))
                if b is None:
                    b = buckets[_key(s)] = (s, int(tc.raw[t]), [])
                b[2].append(t)
            for s, raw, lone_members in sorted(buckets.values(), key=lambda b: -len(b[2])):
                data = max((vocab.token_bytes(t) for t in lone_members[:64]),
                           key=ver.shared_prefix)
                done = ver.state(s, raw // tc.num_states, data, len(lone_members))
                if done is not None:
                    rec.add(lone_members, done)
                    cls.learn(raw, done)
            cls.admit(rec, lone[self.MAX_LONE:], tc.raw[lone[self.MAX_LONE:]])  # past the cap
            def known_group(i: int) -> bool:  # group i's carry class verified: it is kept
                known = cls.get(int(raws[i]))
                if known is not None:
                    rec.add(toks[int(first[i]):int(first[i]) + int(sizes[i])], known)
                return known is not None

            for i in order[: self.MAX_GROUPS].tolist():
                if not known_group(i) and i not in checked:
                    self._check_group(st, ver, rec, toks, int(first[i]), int(sizes[i]),
                                      int(vert[i]))
            # the smaller groups beyond the cap: only the cheap checks (a walk or two)
            for i in order[self.MAX_GROUPS: self.MAX_GROUPS + self.MAX_CHEAP].tolist():
                if not known_group(i):
                    self._check_group(st, ver, rec, toks, int(first[i]), int(sizes[i]),
                                      int(vert[i]), cheap=True)
        rec.apply(m, self._complete(st))

    def _check_group(self, st: FimState, ver: WalkedVerifier[FimState], rec: VerifiedTokens,
                     toks: np.ndarray, a: int, size: int, vertex: int,
                     cls: CarryClasses | None = None, raw: int = -1, cheap: bool = False
                     ) -> None:
        """The walked check of the group ``toks[a:a + size]`` (``cheap``: a walk or two);
        what it verifies is offered to its carry class ``raw`` (with ``cls``)."""
        data = self._vocab.token_bytes(int(toks[a]))
        s = self._walk(st, data)
        done = None if isinstance(s, int) else (
            ver.cheap(s, data, vertex) if cheap else ver.state(s, vertex, data, size))
        if done is not None:
            rec.add(toks[a:a + size], done)
            if cls is not None:
                cls.learn(raw, done)

    _boundary_plans: BoundaryPlans | None = None

    def _bounded_groups(self, st: FimState, m: np.ndarray, rec: VerifiedTokens,
                        left: int) -> bool:
        """Admit the groups of the step's tokens whose proven bound (:mod:`.group_bounds`)
        is at most ``left``, without a walk each; True if that is all of ``m``."""
        if self.BOUND_PLANS <= 0:
            return False
        q, carry, pq, po = st
        planner = self._budget_planner()
        if self._boundary_plans is None:
            self._boundary_plans = BoundaryPlans(self._b, planner.lex, planner.tok,
                                                 self._vocab.token_bytes)
        gb = GroupBounds(planner, self._b, self._ob, self._boundary_plans, st, left,
                         self._walk, self._complete, self.VERIFY_SEARCH, self.BOUND_PLANS)
        every, kept = gb.admit(q, carry, pq, po)
        tb = self._vocab.token_bytes
        rec.lazy = lambda t: gb.after(self._walk(st, tb(t)))
        if every:
            return True
        by_row: dict[int, tuple[RowFinals, list[np.ndarray]]] = {}
        for rf, runs in kept:
            by_row.setdefault(id(rf), (rf, []))[1].append(runs)
        for rf, rs in by_row.values():
            rec.keep[rf.tokens_of(np.concatenate(rs))] = True
        return False

    def _budget_planner(self) -> BudgetPlanner:
        pl = cast("BudgetPlanner", super()._budget_planner())
        if pl.end_check is None:
            pl.end_check = lambda q, carry, p: self._quotient_end((q, carry, p, p)) == 2
        return pl


def fim_constraint(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes, suffix: str | bytes,
                   grammar: Grammar, max_tokens: int | None = None,
                   planner: Callable[[], BudgetPlanner] | None = None) -> FimConstraint:
    """Set up one fill-in-the-middle request: lex the suffix into branches, build the
    quotient, walk the prefix.

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
           grammar: Grammar, max_tokens: int | None = None,
           planner: Callable[[], BudgetPlanner] | None = None) -> FimConstraint:
    ind = grammar.indentation
    tab = ind.tab_len if ind is not None else 8
    sdata = text_bytes(suffix, "suffix")
    pdata = text_bytes(prefix, "prefix")
    check_suffix_size(sdata, ob.ctx.automaton.limits)
    plain = Constraint(ob, vocab, pdata, tab_len=tab)  # validates the prefix
    short = equivalent_prefix(ob, plain._initial_state(), pdata, tab)
    octx = ob.ctx
    lexing = lex_suffix(
        ob, sdata, tab=tab, prefix_indent=plain._history[-1][2][INDENT],
        open_brackets=octx.open_brackets, close_brackets=octx.close_brackets,
        indent_t=octx.indent_t, dedent_t=octx.dedent_t,
    )
    start_error = lexing.start_error
    if not lexing.branches:
        if start_error is not None:  # blame the plain reading, not the furthest one
            raise InvalidSuffixError(f"the code after the cursor is not the end of any "
                                     f"program: {start_error[1]}", position=start_error[0])
        raise InvalidSuffixError("the code after the cursor cannot be lexed",
                                 position=max(lexing.error_offset, 0))
    try:
        qb, markers = build_quotient(ob, grammar, lexing.branches, lexing.error_offset, None, sdata)
    except InvalidSuffixError:
        if start_error is None:
            raise
        # only readings that begin inside the middle's last lexeme were left, and none
        # fits: the plain reading's failure is the one a person can act on
        raise InvalidSuffixError(f"the code after the cursor is not the end of any program: "
                                 f"{start_error[1]}", position=start_error[0]) from None
    qb = with_boundary(qb, boundary_filter(ob, vocab, sdata, markers, contextual=False))
    qplanner = (None if planner is None
                else quotient_planner(qb, vocab, tab, markers, planner, sdata))
    with prefix_meets_suffix():
        c = FimConstraint(qb, ob, vocab, short, sdata, tab_len=tab, _branches=markers,
                          max_tokens=max_tokens,
                          budget=None if qplanner is None else BoundedBudget(qplanner))
    c._prefix = pdata
    return c


def equivalent_prefix(b: MaskBuilder, st: tuple[int, int, PState], data: bytes,
                      tab: int) -> bytes:
    """A prefix that leaves lexer and parser exactly where ``data`` does, usually much shorter.

    At a lexeme boundary the runtime's whole state is (lexer start, parser state), and parser
    states are hash-consed objects, so two boundaries with the same parser state, where the
    same byte starts the next lexeme, have the same continuations (with or without a suffix).
    The text between them is a loop and can be cut; cutting every loop (a loop-erased walk)
    leaves roughly the headers of the blocks around the cursor, and the quotient parser,
    which starts cold for each request, reads only that."""
    q, carry, p = st
    rows, accept, ctx = b.trans_rows, b.accept, b.ctx
    bounds: list[tuple[int, PState]] = []
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0:
            a = accept[q]
            if a < 0 or q == 0:
                return data
            p2 = ctx.end_lexeme(p, a, carry)
            if p2 is None:
                return data
            p = p2
            carry = 0
            bounds.append((i, p))
            nq = rows[0][byte]
            if nq < 0:
                return data
        q = nq
        if byte <= 32:
            carry = advance(carry, byte)
    return erase_loops(data, bounds)


def erase_loops(data: bytes, bounds: list[tuple[int, PState]]) -> bytes:
    """``data`` with the text between any two lexeme boundaries ``(offset, parser state after
    the lexeme that ends there)`` that have the same parser state and the same next byte cut
    out (see :func:`equivalent_prefix`; any lexer mode whose next lexeme depends only on the
    parser state and the text)."""
    # the kept path: [key, offset where its boundary was first met, offset the text resumes]
    keys: list[tuple[int, int]] = []
    starts: list[int] = []
    conts: list[int] = []
    where: dict[tuple[int, int], int] = {}
    for i, p in bounds:
        key = (p[PUID], data[i])
        j = where.get(key)
        if j is None:
            where[key] = len(keys)
            keys.append(key)
            starts.append(i)
            conts.append(i)
        else:
            for k in keys[j + 1:]:
                del where[k]
            del keys[j + 1:], starts[j + 1:], conts[j + 1:]
            conts[j] = i
    if not keys:
        return data
    parts = [data[: starts[0]]]
    parts += [data[conts[n] : starts[n + 1]] for n in range(len(keys) - 1)]
    parts.append(data[conts[-1] :])
    return b"".join(parts)


def _holds(br: Branch, p: PState) -> bool:
    """Does one of the branch's boundary assumptions hold for the parser state ``p`` at the
    boundary? Then the branch's terminals are exactly the suffix's, and the quotient's
    verdict is exact."""
    stack = p[INDENT]
    if stack[-1] >= TAB_UNIT:
        return False  # tabs: the widths below compare as numbers; the walk decides
    for d0, w1, outcome, below, eof_nl in br.assumptions:
        if d0 != p[DEPTH]:
            continue
        if w1 is not None and w1 >= TAB_UNIT:
            continue
        if eof_nl is not None:
            if outcome == len(stack) - 1 and eof_nl == (not p[BOL]):
                return True
            continue
        if tuple(e for e in stack if e < w1) != below:
            continue
        if outcome < 0:
            if stack[-1] < w1:
                return True
        elif w1 in stack and sum(1 for e in stack if e > w1) == outcome:
            return True
    return False


_CARRIES = 1 << 16  # a token group's carries told apart (wider lines: checked one by one)


def _group_keys(planner: BudgetPlanner, tc: TokenGroups, toks: np.ndarray, carry: int) -> np.ndarray:
    """Per token of ``toks``: a key shared only by tokens that lead to the very same state
    (-1: not known without walking it). A group (same completed lexemes, same lexer state)
    pins the state down but for the indentation carry inside a newline lexeme (where the
    group is -1); that carry is known from the token's bytes where its last lexeme starts
    at the step's start (carried on) or at its first byte (it ended the lexeme before)."""
    grp = tc.group[toks]
    out: np.ndarray = grp * _CARRIES
    sel = np.flatnonzero(grp < 0)
    toks = toks[sel]
    raw = tc.raw[toks]
    has, after, total = planner.token_widths()
    v = raw // tc.num_states
    nl_after = np.where(has[toks], after[toks], -1)
    c = np.where((v == tc.stay) & (tc.stay >= 0),
                 np.where(nl_after >= 0, nl_after, carry + total[toks]),
                 np.where((v == tc.killed) & (tc.killed >= 0),
                          np.where(nl_after >= 0, nl_after, total[toks]), -1))
    ok = (raw >= 0) & (c >= 0) & (c < _CARRIES)
    out[sel] = np.where(ok, raw * _CARRIES + np.maximum(c, 0), -1)
    return out


def _key(s: FimState) -> tuple[int, ...]:
    return (s[0], s[1], s[2][PUID], s[3][PUID])
