"""Token budgets in the contextual lexer mode: every token the mask admits is backed by a
completion walked with the contextual lexer itself.

The basic mode's budget masks trust upper bounds built on the lexer DFA with greedy longest
match over all terminals (:mod:`.budget`). The contextual lexer reads the same bytes
differently (only the terminals the parser can take compete, so a keyword can be a name and a
lexeme can end where the basic lexer would go on), so those bounds are not promises here. The
rule is fill-in-the-middle's (docs/semantics.md, "Token budgets"): a token is allowed only
where a completion after it has been walked to a complete program with
:meth:`ContextualLexer.walk` / :meth:`ContextualLexer.complete` and fits what is left, or it is
the first token of the step's own verified plan. The planner's costs only order the search.

Per step the grammar-allowed tokens are grouped by the runtime state they lead to: a
vectorised contextual walk over the vocabulary's byte matrix (the lexeme continues iff the
product DFA's next state keeps a terminal of the parser's allowed set alive; otherwise it ends
as :meth:`ContextualLexer.lexeme_end` says, once per distinct (parser state, lexer state)), so
one plan decides a whole group. The carry (the indentation of the current line) is walked too,
but it decides something only where the indentation newline is still live at the lexer state,
so elsewhere a group is (lexer state, parser state) with the carry dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ..core.constraint import Constraint, LexState
from ..core.indentation import BROKEN, FORMFEED, NEWLINE, TAB_UNIT
from ..core.parse_state import PUID
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo
from .bounded import PLAN_FAILED
from .contextual_bounds import greedy_bounds
from .contextual_costs import ContextualLexemeCosts, ContextualPlanSearch, ContextualView
from .grammar_costs import Rules
from .planner import BudgetPlanner
from .verify import WalkedVerifier, budget_binds, verified_step

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.contextual_lexer import ContextualLexer
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState

__all__ = ["ContextualBudgetConstraint", "ContextualBudgetPlanner"]


# :meth:`ContextualBudgetPlanner._first_ends` kept (each an int32 per token: 0.5 MB on a
# 128k vocabulary)
_FIRSTS = 128
_NEVER = 1 << 30  # a start position no token reaches

# tokens grouped by the state they lead to: (lexer state, carry, parser state, members)
_Groups = list[tuple[int, int, "PState", np.ndarray]]


class ContextualBudgetPlanner(BudgetPlanner):
    """:class:`BudgetPlanner` over the contextual lexer (its bounds order the search; plans
    are walked with the contextual lexer), plus the grouping of tokens by the state they
    lead to."""

    lexeme_costs_class = ContextualLexemeCosts
    search_class = ContextualPlanSearch

    def __init__(self, mb: MaskBuilder, vocab: Vocabulary, rules: Rules, tab_len: int, *,
                 parent: BudgetPlanner | None = None,
                 markers: dict[int, int] | None = None) -> None:
        """As :class:`BudgetPlanner` (``parent``, ``markers``: a fill-in-the-middle
        request's quotient planner)."""
        super().__init__(cast("MaskBuilder", ContextualView(mb)), vocab, rules, tab_len,
                         parent=parent, markers=markers)
        cx = mb.contextual
        assert cx is not None
        self.cx: ContextualLexer = cx
        self._live = np.asarray(mb.dfa.live, dtype=bool)  # (S, T)
        self._trans = np.asarray(mb.dfa.trans, dtype=np.int64)
        self._accepting = np.asarray(mb.dfa.accepting, dtype=bool)
        self._groups: BoundedMemo[tuple[int, int, int], _Groups] = BoundedMemo(
            memo_size(mb.limits.mask_cache))
        # (lexer state, allowed set) → :meth:`_first_ends` (a vocabulary's worth each)
        self._firsts: BoundedMemo[tuple[int, int], np.ndarray] = BoundedMemo(_FIRSTS)
        self._bounds_of = (mb, vocab, rules, tab_len) if parent is None and not markers else None
        self._bounds: BudgetPlanner | None = None

    def bounds(self) -> BudgetPlanner | None:
        """The greedy lexer's planner, whose bounds are upper bounds for the contextual walk
        (:mod:`.contextual_bounds`; built on first use), or None where they are not (an
        indentation terminal, or a fill-in-the-middle quotient's planner)."""
        if self._bounds_of is not None:
            self._bounds = greedy_bounds(*self._bounds_of)
            self._bounds_of = None
        return self._bounds

    def norm_carry(self, s: LexState) -> int:
        """``s``'s carry where it can decide something (the indentation newline is live at
        its lexer state), else 0: a lexeme that cannot end as the newline drops its carry."""
        nl = self.cx.nl_t
        return s[1] if nl >= 0 and self._live[s[0], nl] else 0

    def norm_state(self, s: LexState) -> LexState:
        """``s`` with :meth:`norm_carry` (plans are memoised per normalised state)."""
        c = self.norm_carry(s)
        return s if c == s[1] else (s[0], c, s[2])

    def state_key(self, s: LexState) -> tuple[int, ...]:
        return (s[0], self.norm_carry(s), s[2][PUID])

    _by_length: np.ndarray | None = None  # every token id, longest first (ids ascending)

    def _longest_first(self, toks: np.ndarray, lens: np.ndarray) -> np.ndarray:
        """``toks`` without the empty token, longest first and by id among equals (the
        vocabulary's order filtered by a mask where ``toks`` is one ascending, as a mask's
        ids are: a sort of ~100k ids per step was a tenth of the grouping)."""
        toks = toks[lens[toks] > 0]  # an empty token is never advanced
        if toks.size < 2 or not bool((toks[1:] > toks[:-1]).all()):
            return toks[np.argsort(-lens[toks], kind="stable")]
        by = self._by_length
        if by is None:
            by = self._by_length = np.argsort(-lens, kind="stable")
        keep = np.zeros(lens.size, dtype=bool)
        keep[toks] = True
        return by[keep[by]]

    def live_under(self, p: PState) -> np.ndarray:
        """Per lexer state: does some terminal the parser at ``p`` allows stay alive there?"""
        return self.cx.live_under(self.cx.allowed(p))

    def _first_ends(self, q: int, a: int) -> np.ndarray:
        """Per token id, its contextual walk from lexer state ``q`` under the allowed set
        ``a`` up to the first lexeme end that shifts a terminal (an ignored lexeme's end
        leaves the parser, so the allowed set, as it was): the lexer state it ends in where
        none does (>= 0), -1 where it fails first (or is empty), else ``-2 - (e * S + qb)``:
        the lexeme at lexer state ``qb`` ends before its byte ``e`` as a terminal the parser
        shifts (walked on by :meth:`group_tokens` from there, with the parser). Without an
        indentation terminal only (the carry is not followed); memoised per (q, a): most
        steps meet a lexer state and allowed set seen before, and most tokens (names, a
        blank and a name) shift nothing inside themselves."""
        key = (q, a)
        r = self._firsts.get(key)
        if r is not None:
            return r
        cx = self.cx
        mat, lens = self.tokens.matrix()
        S = self._trans.shape[0]
        trans = self._trans
        by = self._by_length
        if by is None:
            by = self._by_length = np.argsort(-lens, kind="stable")
        by = by[lens[by] > 0]
        blens = lens[by]
        lv = cx.live_under(a)
        cur = np.full(by.size, q, dtype=np.int64)
        act = np.ones(by.size, dtype=bool)
        out = np.full(by.size, -1, dtype=np.int64)
        kinds: dict[int, int] = {}  # lexer state → 0: the walk fails, 1: ignored, 2: shifts

        def kind(x: int) -> int:
            k = kinds.get(x)
            if k is None:
                w = cx._winners(cx.accepting[x] & a) if x else 0
                k = kinds[x] = 0 if not w else 2 if w & ~cx.ignored_bits else 1
            return k

        longer = np.searchsorted(-blens, -np.arange(int(blens[0]) if by.size else 0), "left")
        slots = np.empty(S, dtype=np.int64)  # _dense_unique's scratch, by lexer state
        for j in range(longer.size):
            idx = np.flatnonzero(act[:int(longer[j])])
            if not idx.size:
                break
            b = mat[by[idx], j].astype(np.int64)
            cq = cur[idx]
            nq = trans[cq, b]
            ok = (nq >= 0) & lv[np.maximum(nq, 0)]
            if not ok.all():
                bad = np.flatnonzero(~ok)
                qb = cq[bad]
                uq, inv = _dense_unique(qb, slots)
                kb = np.array([kind(x) for x in uq.tolist()], dtype=np.int64)[inv]
                nq0 = trans[0, b[bad]]
                on = (kb == 1) & (nq0 >= 0) & lv[np.maximum(nq0, 0)]
                sh = kb == 2
                out[idx[bad[sh]]] = -2 - (j * S + qb[sh])
                act[idx[bad[~on]]] = False
                nq[bad] = nq0
            cur[idx] = nq
        out[act] = cur[act]
        r = np.full(lens.size, -1, dtype=np.int32)  # (fits: S * the longest token < 2**31)
        r[by] = out
        self._firsts.put(key, r)
        return r

    def group_tokens(self, q: int, p: PState, toks: np.ndarray, carry: int = 0) -> _Groups:
        """``toks`` (tokens the grammar mask allows at (q, carry, p)) grouped by the state the
        contextual walk of their bytes ends in, largest groups first; tokens whose walk
        fails are left out. With an indentation terminal the carry is walked too (as
        :func:`~gramask.runtime.core.indentation.advance` counts it) and a group's carry is
        the real one where the indentation newline is still live at its lexer state, else 0
        (a lexeme that cannot end as a newline resets the carry unread). Memoised per
        (q, carry, p): ``toks`` must be the grammar mask of that state on this planner's
        builder (a caller that needs fewer cuts the groups)."""
        cx = self.cx
        nl = cx.nl_t
        track = nl >= 0
        key = (q, carry if track else 0, p[PUID])
        r = self._groups.get(key)
        if r is not None:
            return r
        mat, lens = self.tokens.matrix()
        S = self._trans.shape[0]
        order = self._longest_first(toks, lens)
        olens = lens[order]
        n_all = order.size
        qs = np.full(n_all, q, dtype=np.int64)
        ps = np.zeros(n_all, dtype=np.int64)  # index into vert
        cs = np.full(n_all, carry if track else 0, dtype=np.int64)
        alive = np.ones(n_all, dtype=bool)
        # the byte position each token's walk below starts at (its lexer state there in qs)
        start = np.zeros(n_all, dtype=np.int64)
        if not track and n_all:
            # up to its first lexeme end that shifts, a token's walk depends on (q, the
            # allowed set) alone (memoised): those that shift go on below from there
            codes = self._first_ends(q, cx.allowed(p))[order]
            shift = codes <= -2
            at = -2 - codes[shift].astype(np.int64)
            qs = np.where(codes >= 0, codes, q).astype(np.int64)
            qs[shift] = at % S
            alive[codes == -1] = False
            start[:] = _NEVER
            start[shift] = at // S
        vert: list[PState] = [p]
        vid = {p[PUID]: 0}
        # per vertex, live_under of its allowed set: rows of ``luv``, grown by doubling (a
        # lexeme end adds a vertex at most byte positions; restacking them all each time
        # was a tenth of the grouping)
        luv = np.empty((8, self._trans.shape[0]), dtype=bool)
        luv[0] = self.live_under(p)
        trans = self._trans
        # per lexer state: can a lexeme ending there be the newline (its carry decides)?
        acc_nl = self._accepting[:, nl] if track else None
        ends: dict[tuple[int, int], int] = {}  # (pidx * S + q, carry) → pidx after the end

        def end_of(pi: int, qq: int, cc: int) -> int:
            nonlocal luv
            k = (pi * S + qq, cc)
            r = ends.get(k)
            if r is None:
                p2 = cx.lexeme_end(vert[pi], qq, cc) if qq else None
                if p2 is None:
                    r = -1
                else:
                    r = vid.get(p2[PUID], -1)
                    if r < 0:
                        r = vid[p2[PUID]] = len(vert)
                        vert.append(p2)
                        if r >= luv.shape[0]:
                            luv = np.concatenate([luv, np.empty_like(luv)])
                        luv[r] = self.live_under(p2)
                ends[k] = r
            return r

        slots = np.empty(0, dtype=np.int64)  # _dense_unique's scratch, by (vertex, state)
        # tokens longer than j: the first ``longer[j]`` (longest first)
        longer = np.searchsorted(-olens, -np.arange(int(olens[0]) if n_all else 0), "left")

        for j in range(int(start.min()) if n_all else 0, longer.size):
            n = int(longer[j])
            idx = np.flatnonzero(alive[:n] & (start[:n] <= j))
            if not idx.size:
                continue
            b = mat[order[idx], j].astype(np.int64)
            cq, cp = qs[idx], ps[idx]
            nq = trans[cq, b]
            ok = (nq >= 0) & luv[cp, np.maximum(nq, 0)]
            cc = cs[idx] if track else None
            if not ok.all():
                bad = np.flatnonzero(~ok)
                pair = cp[bad] * S + cq[bad]
                if acc_nl is not None and cc is not None:
                    ck = np.where(acc_nl[cq[bad]], cc[bad], 0)
                    pairs, pinv = _unique_pairs(pair, ck)
                    newp = np.array([end_of(k // S, k % S, c2) for k, c2 in pairs],
                                    dtype=np.int64)[pinv]
                    cc = cc.copy()
                    cc[bad] = 0  # a lexeme ended: the carry starts afresh
                else:
                    if slots.size <= len(vert) * S:
                        slots = np.empty(2 * len(vert) * S, dtype=np.int64)
                    uniq, inv = _dense_unique(pair, slots)
                    newp = np.array([end_of(int(k) // S, int(k) % S, 0)
                                     for k in uniq.tolist()], dtype=np.int64)[inv]
                nq0 = trans[0, b[bad]]
                ok2 = (newp >= 0) & (nq0 >= 0) & luv[np.maximum(newp, 0), np.maximum(nq0, 0)]
                nq[bad] = nq0
                cp = cp.copy()
                cp[bad] = newp
                dead = bad[~ok2]
                alive[idx[dead]] = False
            if cc is not None:
                cs[idx] = _advance_carry(cc, b)
            qs[idx] = nq
            ps[idx] = cp
        # a walk may stop inside a lexeme only where ``end_ok`` holds
        sel = np.flatnonzero(alive & (qs != 0))
        if slots.size <= len(vert) * S:
            slots = np.empty(len(vert) * S + 1, dtype=np.int64)
        if sel.size:
            pair = ps[sel] * S + qs[sel]
            uniq, inv = _dense_unique(pair, slots)
            fine = np.array([cx.end_ok(vert[int(k) // S], int(k) % S) for k in uniq.tolist()],
                            dtype=bool)[inv]
            alive[sel[~fine]] = False
        live = np.flatnonzero(alive)
        if track:
            nl_live = self._live[:, nl]
            gc = np.where(nl_live[qs[live]], cs[live], 0)
            gpairs, ginv = _unique_pairs(ps[live] * S + qs[live], gc)
        else:
            gu, ginv = _dense_unique(ps[live] * S + qs[live], slots)
            gpairs = [(k, 0) for k in gu.tolist()]
        counts = np.bincount(ginv, minlength=len(gpairs))
        # (a stable sort of small integers is a radix sort: the group ids fit 16 bits)
        gi = ginv.astype(np.int16) if len(gpairs) < 1 << 15 else ginv
        members = order[live][np.argsort(gi, kind="stable")]
        cuts = np.concatenate(([0], np.cumsum(counts)))
        out: _Groups = [
            (k % S, c2, vert[k // S], members[cuts[i]:cuts[i + 1]])
            for i, (k, c2) in enumerate(gpairs)
        ]
        out.sort(key=lambda g: -g[3].size)
        self._groups.put(key, out)
        return out


def _dense_unique(a: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, return_inverse=True)`` for values below ``slots.size``, without sorting
    ``a`` (only its distinct values): ``slots`` is scratch, read only where written here. A
    step's walk asks it at every byte position of tens of thousands of tokens that share a
    few lexer states, and the sorts were a third of the grouping."""
    n = a.size
    slots[a] = np.arange(n)
    first = np.flatnonzero(slots[a] == np.arange(n))  # one position per distinct value
    uniq = np.sort(a[first])
    slots[uniq] = np.arange(uniq.size)
    return uniq, slots[a]


def _unique_pairs(a: np.ndarray, b: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray]:
    """The distinct pairs ``(a[i], b[i])`` and each ``i``'s index into them (one scalar
    ``np.unique`` over a combined key: ``axis=0`` sorts rows far more slowly; a carry can
    be :data:`BROKEN`, so ``b`` is renumbered first)."""
    bu, bi = np.unique(b, return_inverse=True)
    key = a * max(1, bu.size) + bi.reshape(-1)
    ku, inv = np.unique(key, return_inverse=True)
    n = max(1, bu.size)
    pairs = [(k // n, int(bu[k % n])) for k in ku.tolist()]
    return pairs, inv.reshape(-1)


def _advance_carry(cc: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`~gramask.runtime.core.indentation.advance` over arrays (carries, bytes)."""
    out = cc.copy()
    sp = b == 32
    out[sp] += 1
    tab = b == 9
    if tab.any():
        ct = cc[tab]
        out[tab] = np.where(ct % TAB_UNIT == 0, ct + TAB_UNIT, BROKEN)
    out[(b == NEWLINE) | (b == FORMFEED)] = 0
    return out


class ContextualBudgetConstraint(Constraint[LexState]):
    """A prefix constraint of a contextual-mode grammar; with ``max_tokens``, budget masks
    that admit only tokens backed by walked completions (see the module docstring)."""

    # Per step: at most MAX_GROUPS groups checked (those whose bound fits first, the largest
    # first; C and SQL steps have up to about 1,100 groups), at most MAX_PLANS of them
    # with a plan of their own (the rest through plans shared per (parser state, terminal)).
    MAX_GROUPS = 4096
    MAX_PLANS = 96
    # groups past MAX_PLANS: at most GREEDY_PLANS plans that follow the bounds' choices with
    # no search (walked all the same). A Go step after `for` has 421 groups, the plans were
    # spent at the 145th, and the true " _," (one token of its own state) was forbidden
    # with 60 tokens left though its greedy plan ("0=0{}}\n") fits
    GREEDY_PLANS = 384
    VERIFY_SEARCH = 16  # states a token's plan may search (the step's own plan: more)

    _walks: BoundedMemo[tuple[int, int, int, bytes], LexState | int] | None = None

    def _walk(self, st: LexState, data: bytes) -> LexState | int:
        """Memoised per (state, bytes): a budget step's group checks (witnesses, shared
        plans' first tokens, step plans' texts) walk more than half of theirs again."""
        memo = self._walks
        if memo is None:
            memo = self._walks = BoundedMemo(1 << 15)
        key = (st[0], st[1], st[2][PUID], data)
        r = memo.young.get(key, MISSING)  # (a hit: one lookup, no call)
        if r is MISSING:
            r = memo.get(key, MISSING)
        if r is MISSING:
            r = super()._walk(st, data)
            memo.put(key, r)
        return r

    _completes: BoundedMemo[tuple[int, int, int], bool] | None = None

    def _complete(self, st: LexState) -> bool:
        """Memoised per state: the checks ask it of four in five states again (the states
        after a witness and a shared plan's first token)."""
        memo = self._completes
        if memo is None:
            memo = self._completes = BoundedMemo(1 << 15)
        key = (st[0], st[1], st[2][PUID])
        r = memo.young.get(key)
        if r is None:
            r = memo.get(key)
        if r is None:
            r = super()._complete(st)
            memo.put(key, r)
        return r

    def _budget_planner(self) -> ContextualBudgetPlanner:
        pl = cast(ContextualBudgetPlanner, super()._budget_planner())
        pl.bounds()  # (built with the planner, when the budget is set up: not on a step)
        return pl

    def _apply_budget(self, st: LexState, m: np.ndarray) -> None:
        """Keep in ``m`` only the tokens after which a walked completion of at most
        ``remaining − 1`` tokens is known, and the step's own plan's first token."""
        left = self.remaining_tokens
        assert left is not None
        rec = verified_step(self, st, left)
        if left >= 1:
            cx = self._b.contextual
            assert cx is not None
            pl = self._budget_planner()
            # the carry decides only where the indentation newline is live: elsewhere it
            # is dropped, so the plans of one (lexer state, parser state) are shared
            ver = WalkedVerifier(self, left - 1, pl.state_key, pl.norm_state, rec.plan)
            groups = self._state_groups(st, np.flatnonzero(m))[: self.MAX_GROUPS]
            bounds = pl.bounds()
            if bounds is not None:
                # a group whose greedy bound fits is admitted as it is (a completion that
                # fits exists, :mod:`.contextual_bounds`); the chosen token's own completion
                # is walked when it is taken
                fit = [bounds.state_cost(*s) <= left - 1 for s, _ in groups]
                for (_s, members), ok in zip(groups, fit, strict=True):
                    if ok:
                        rec.keep[members] = True
                groups = [g for g, ok in zip(groups, fit, strict=True) if not ok]
                rec.lazy = lambda t: self._bound_completion(st, t, left - 1, rec.plan)
            # where the budget binds, the groups the planner's bound says fit first (plans
            # are capped), the largest first within each kind: the bound orders, the walked
            # plan decides; elsewhere (room for a detour beyond the step's plan) the largest
            # first, unpriced (a bound per group was a tenth of a step's cost)
            if budget_binds(rec.plan, left - 1):
                over = [pl.state_cost(*s) > left - 1 for s, _ in groups]
                order = sorted(range(len(groups)), key=lambda i: (over[i], -groups[i][1].size))
                groups = [groups[i] for i in order]
            for s, members in groups:
                done = ver.state(s, s[2][PUID], self._vocab.token_bytes(int(members[0])),
                                 members.size)
                if done is not None:
                    rec.add(members, done)
        rec.apply(m, self._complete(st))

    def _bound_completion(self, st: LexState, token_id: int, fits: int,
                          plan: tuple[int, ...] | None) -> tuple[int, ...] | None:
        """The walked completion after ``token_id`` (admitted by its greedy bound at state
        ``st``) that the next step plans from: the step's checks as a walked group would
        have had them, else the greedy planner's plan (the route its bound prices)."""
        data = self._vocab.token_bytes(token_id)
        s = self._walk(st, data)
        if isinstance(s, int):
            return None
        pl = self._budget_planner()
        ver = WalkedVerifier(self, fits, pl.state_key, pl.norm_state, plan)
        done = ver.state(s, s[2][PUID], data)
        bounds = pl.bounds()
        if done is None and bounds is not None:
            for search in (0, self.VERIFY_SEARCH * 16):
                try:
                    done = bounds.plan(s, self._walk, self._complete, search=search)
                except PLAN_FAILED:
                    continue
                break
        return done if done is not None and len(done) <= fits else None

    def _state_groups(self, st: LexState, toks: np.ndarray
                      ) -> list[tuple[LexState, np.ndarray]]:
        """``toks`` grouped by the state they lead to (:meth:`ContextualBudgetPlanner.
        group_tokens`, vectorised), largest groups first; each group's state is checked
        against a real walk of its shortest member."""
        vocab = self._vocab
        pl = self._budget_planner()
        out: list[tuple[LexState, np.ndarray]] = []
        q, carry, p = st
        for fq, fc, fp, members in pl.group_tokens(q, p, toks, carry):
            # (its shortest member: a walk costs per byte; members run longest first)
            s = self._walk(st, vocab.token_bytes(int(members[-1])))
            # the vectorised walk and the real one agree (tests pin it); if they ever
            # did not, the group is dropped: never admitted on a guess
            if not isinstance(s, int) and s[0] == fq and s[2][PUID] == fp[PUID] \
                    and pl.norm_carry(s) == fc:
                out.append(((fq, fc, fp), members))
        return out

    def clone(self) -> ContextualBudgetConstraint:
        c = ContextualBudgetConstraint(
            self._b, self._vocab, tab_len=self._tab, max_tokens=self._max_tokens,
            budget=self._budget, _history=list(self._history),
            _chunks=list(self._chunks), _finished=self._finished, _plans=list(self._plans),
        )
        c._prefix = self._prefix
        return c
