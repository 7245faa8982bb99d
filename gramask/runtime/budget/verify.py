"""Walked completions: how budgets admit a token where no bound can.

With a suffix (the quotient's costs ignore what the suffix needs) and in the contextual lexer
mode (the costs are built on the greedy lexer's DFA), the planner's costs are not upper
bounds, so a token is admitted only with a completion after it that was walked, token by
token with the constraint's own ``walk``, to a state where its own ``complete`` holds, at most
``left`` tokens long (docs/semantics.md, "Token budgets with a suffix"). One
:class:`WalkedVerifier` serves one step of either constraint.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

import numpy as np

from ...errors import LimitExceededError, NoCompletionError
from .bounded import PLAN_FAILED
from .runstate import LexState, RunState, walk_ids
from .search import cheapest_steps

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.constraint import Constraint
    from .planner import BudgetPlanner

__all__ = ["CompletionPool", "VerifiedTokens", "WalkedConstraint", "WalkedVerifier", "budget_binds",
           "verified_step"]

# a group of at least _LARGE tokens searches _DEEP times as many states for its plan
_LARGE = 1024
_DEEP = 16
# a state whose plan search failed searches again, _RETRY_DEEP times as many states and with
# the suffix-aware (strict) costs of fill-in-the-middle, at most _RETRIES times a step: a
# completion that needs a detour the costs do not foresee (closing a parenthesis the token
# opened before the step's own route fits again; `WITH` where the plan was `with`) is found
# by a deeper search, and a step forbids only what its first few retries could not admit
_RETRIES = 8
# 8, 128 states: a middle's ` .` before a suffix ` .3` at a level the middle must open
# (`0\n if:\n ` first, six tokens) takes about 100 (fim_fuzz --indent 1 --seed 410,
# grammar 8, contextual: forbidden at every k with 4)
_RETRY_DEEP = 8
# with a suffix, where the budget does not bind (budget_binds: the room issue 24 promises
# completeness in), a step's first retry searches _SLACK_DEEP times as many states: `` 1``
# after `` y():\n`` needs a 9-token plan (back to a level the suffix returns to) that takes
# 256 to 512 (tests/test_fim_suffix_levels.py); every retry so deep cost a third more CPU
_SLACK_DEEP = 32
_SLACK_RETRIES = 1
# a step binds (see budget_binds) where a token may take fewer than this many tokens of
# detour beyond the step's plan: the margin issue 24 promises completeness at (k >= 4)
_DETOUR = 4

# a token that opened what the step plan's route does not close (``>=`` wants an operand,
# ``(t`` a ``)``): the _DETOUR_WIDTH cheapest chunks by the costs, _DETOUR_DEPTH levels deep,
# then the step plan's text; tried for at most _DETOURS groups a step (a few walks each)
_DETOUR_WIDTH = 2
_DETOUR_DEPTH = 2
_DETOURS = 512
_REJOINS = 3

S = TypeVar("S", bound=RunState)


class CompletionPool:
    """The completions recent budget checks of one generation verified, most recent first:
    candidates a check walks before it searches. Real code mostly ends the way its
    neighbours did (a comment opened before the suffix, the same closing brackets), and a
    walk of a few tokens costs far less than a plan search. A candidate is only ever
    admitted by its walk, so what the pool holds never decides soundness. Used with a
    suffix only: a pooled completion fits but need not be short, and once it is the next
    step's plan the steps after it plan from a longer route (on the small contextual-mode
    grammars of ``tests/test_budget_contextual.py`` that forbade more fitting tokens).

    The tokens left never grow during a generation, so a completion longer than what a
    check has left is never usable again: it is not pooled, and :meth:`fit` drops those
    pooled before (held, they pushed usable ones out of the eight, so a mask depended on
    plans that could not be used, and skipping a search that could only find one changed
    masks)."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.items: list[tuple[int, ...]] = []
        # a state's key → the shortest completion this generation walked from it, reused by
        # later steps where it fits (the key pins the state down: the walk ends complete
        # again); kept per constraint like the pool, so a mask depends only on its own
        # generation's history
        self.verified: dict[tuple[int, ...], tuple[int, ...]] = {}

    def add(self, completion: tuple[int, ...], left: int) -> None:
        """Pool ``completion`` first, where it fits ``left`` (the tokens a check has)."""
        if not completion or len(completion) > left:
            return
        if completion in self.items:
            self.items.remove(completion)
        self.items.insert(0, completion)
        del self.items[self.size:]

    def fit(self, left: int) -> None:
        """Drop the completions longer than ``left``: no later check has more."""
        self.items = [c for c in self.items if len(c) <= left]


class WalkedConstraint(Protocol[S]):
    """What a :class:`WalkedVerifier` uses of the constraint whose step it checks."""

    MAX_PLANS: int  # plans of their own per step
    GREEDY_PLANS: int  # then plans that follow the bounds' choices, searched no further
    VERIFY_SEARCH: int  # states each of them may search

    @property
    def _vocab(self) -> Vocabulary: ...
    def _walk(self, st: S, data: bytes, /) -> S | int: ...
    def _complete(self, st: S, /) -> bool: ...
    def _view(self, st: S, /) -> LexState: ...
    def _budget_planner(self) -> BudgetPlanner: ...


class VerifiedTokens:
    """What one step's checks verified: the tokens kept and, per token, the completion that
    verified it (what ``advance`` keeps as the next step's plan, so the next mask allows its
    first token and a generation never strands). The step's own plan's first token is kept
    while the plan fits."""

    def __init__(self, size: int, plan: tuple[int, ...] | None, left: int) -> None:
        self.plan = plan
        self.keep = np.zeros(size, dtype=bool)
        if plan and len(plan) <= left:
            self.keep[plan[0]] = True
        self.index = np.full(size, -1, dtype=np.int32)  # into ``completions``; -1: none
        self.completions: list[tuple[int, ...]] = []
        # tokens admitted without a completion of their own in ``completions`` (a group's
        # proven bound fitted, :mod:`.group_bounds`): their completion, assembled on demand
        self.lazy: Callable[[int], tuple[int, ...] | None] | None = None

    def add(self, members: np.ndarray | list[int], completion: tuple[int, ...]) -> None:
        self.keep[members] = True
        self.index[members] = len(self.completions)
        self.completions.append(completion)

    def after(self, token_id: int) -> tuple[int, ...] | None:
        """The completion that verified ``token_id``, if one did."""
        if not 0 <= token_id < self.index.size:
            return None
        i = int(self.index[token_id])
        if i >= 0:
            return self.completions[i]
        done = self.lazy(token_id) if self.lazy is not None else None
        if done is None and self.plan and self.plan[0] == token_id:
            return self.plan[1:]  # the step's own plan (verified), kept by itself
        return done

    def apply(self, m: np.ndarray, complete: bool) -> None:
        """Keep in ``m`` only what was verified — unless nothing was and no plan is known
        at all (the planner failed here): then the grammar mask stays, best effort, never
        empty."""
        if self.keep.any() or self.plan is not None or complete:
            m &= self.keep


def budget_binds(plan: tuple[int, ...] | None, left: int) -> bool:
    """Does the budget bind at a step whose own plan is ``plan``, with ``left`` tokens for
    what follows a token: less than _DETOUR tokens of room beyond the plan, or no plan? There
    a token's completion must be short, and the capped plan searches should go first to the
    groups whose cost says they fit (ordering by cost is not free: only where it binds)."""
    return plan is None or left < len(plan) + _DETOUR


def verified_step(c: Constraint[S], st: S, left: int) -> VerifiedTokens:
    """A fresh record of what this step's checks verify (``c.advance`` reads it), with the
    step's own plan's first token kept while the plan fits."""
    try:
        plan: tuple[int, ...] | None = c._plan()
    except PLAN_FAILED:
        plan = None
    rec = VerifiedTokens(len(c._vocab), plan, left)
    c._verified_next = (st, len(c._history), rec)
    return rec


class WalkedVerifier(Generic[S]):
    """One budget step's checks: a walked completion of at most ``left`` tokens from the
    state after a token, or None. A state whose lexeme in progress is finished as terminal
    ``a`` by its witness shares a plan with the other states of its parser vertex finished
    as ``a``: the shared plan's first token is walked from each, and where that reaches the
    very state (hash-consed: the same key) the shared plan's walk reached, the plan's
    remaining tokens are known to complete from there. At most ``c.MAX_PLANS`` plans a step,
    each searching at most ``c.VERIFY_SEARCH`` states.

    ``key(state)`` identifies a runtime state; ``norm(state)`` is the state the planner
    memoises its plan under (the contextual mode drops a carry that decides nothing)."""

    def __init__(self, c: WalkedConstraint[S], left: int, key: Callable[[S], tuple[int, ...]],
                 norm: Callable[[S], S] | None = None,
                 step_plan: tuple[int, ...] | None = None,
                 pool: CompletionPool | None = None) -> None:
        self.c = c
        self.left = left
        self.planner = c._budget_planner()
        # the step's own plan, spelled afresh: tried after a token (its lexeme finished)
        # before any search — the real code mostly rejoins the route of the step's plan
        # (closing a string, then the same text up to the suffix), and a walk is cheap
        self.tail: tuple[int, ...] | None = None
        self.text = b""
        if step_plan:
            self.text = b"".join(c._vocab.token_bytes(i) for i in step_plan)
            self.tail = self.planner.tok.tokenize(self.text)
        # the step plan's text from byte j on, spelled afresh (see :meth:`_spellings`)
        self._rests: dict[int, list[tuple[int, ...]]] = {}
        self._pads: list[tuple[int, ...]] | None = None  # :meth:`_by_pad`'s candidates
        self.plans: int = c.MAX_PLANS
        # once those are spent: plans that only follow the bounds' choices (no search), for
        # the groups the cap left (see ``GREEDY_PLANS``)
        self.greedy: int = c.GREEDY_PLANS
        self.detours = _DETOURS
        self._rejoins: list[bytes] | None = None  # see _by_detour
        self.retries = _RETRIES
        self.pool = pool  # None: no pooled candidates
        slack = pool is not None and not budget_binds(step_plan, left)
        self.deep = _SLACK_RETRIES if slack else 0  # retries left _SLACK_DEEP times deeper
        if pool is not None:
            pool.fit(left)
        self.key = key
        self.norm = norm
        # (vertex, terminal) → (state key after the shared plan's first token, the plan), or
        # None where no plan was found
        self.shared: dict[tuple[Hashable, int], tuple[tuple[int, ...], tuple[int, ...]] | None]
        self.shared = {}

    def _by_tail(self, s: S) -> tuple[int, ...] | None:
        """The step plan's text (``tail``) if walking it from ``s`` ends complete."""
        if not self.tail or len(self.tail) > self.left:
            return None
        return self.tail if self._ends_complete(s, self.tail) else None

    def _by_rest(self, s: S, data: bytes) -> tuple[int, ...] | None:
        """The rest of the step plan's text after what the token's bytes ``data`` share
        with it (``"(cls"`` against the plan ``"():\n    if "``: ``"):\n    if "``), or,
        where they share no first byte, after the plan's first bytes that the token ends
        with (``"++)"`` against ``")/*"``: ``"/*"``), or else after the first place further
        on where the plan's text holds the token's bytes (``" then"`` against ``"a then
        end"``: ``" end"``), if walking it from ``s`` ends complete: the token took a detour
        the plan's route rejoins, or skipped ahead on it. The rest is also tried after the
        lexer's separator where that spells it in fewer tokens (``"tru"`` is two tokens,
        ``" tru"`` one): a plan is spelled as its shortest bytes, not its fewest tokens."""
        text = self.text
        j = self.shared_prefix(data)
        if j == 0:
            j = next((k for k in range(min(len(data), len(text) - 1), 0, -1)
                      if data.endswith(text[:k])), 0)
        js = [j]
        if data:
            # the token skips ahead on the plan's route: the rest after its bytes' first
            # occurrence further on (``" then"`` against ``"a then end"``: ``" end"``)
            i = text.find(data, 1)
            if i > 0:
                js.append(i + len(data))
        for j in dict.fromkeys(js):
            if j == 0 or j >= len(text):
                continue
            if j not in self._rests:
                self._rests[j] = self._spellings(text[j:])
            for rest in self._rests[j]:
                if len(rest) > self.left:
                    break
                if self._ends_complete(s, rest):
                    return rest
        return None

    def _spellings(self, rest: bytes) -> list[tuple[int, ...]]:
        """``rest`` in the fewest tokens, and after the separator if that takes fewer."""
        tok = self.planner.tok
        ids0 = tok.tokenize(rest)
        out = [ids0] if ids0 else []
        sep = self.planner.lex.separator
        if sep and not rest.startswith(sep):
            ids = tok.tokenize(sep + rest)
            if ids and (not out or len(ids) < len(out[0])):
                out.insert(0, ids)
        return out

    def _by_pad(self, s: S, data: bytes) -> tuple[int, ...] | None:
        """After a token that ends in blanks (a newline lexeme whose width is still open):
        the step plan's text past its own leading blanks, after 0 to 8 spaces, if one of
        those walks from ``s`` to an end (``"       "`` then ``" "`` to reach the block's
        width). Each width is its own state, and most widths have no completion at all, so a
        search per width is what this saves."""
        if self.pool is None or not data or data[-1] not in b" \n":
            return None
        if self._pads is None:
            body = self.text.lstrip(b" \t\n")
            spelled = (self.planner.tok.tokenize(b" " * d + body) for d in range(9))
            self._pads = [ids for ids in spelled if ids and len(ids) <= self.left]
        for ids in self._pads:
            if self._ends_complete(s, ids):
                return ids
        return None

    def _by_detour(self, s: S) -> tuple[int, ...] | None:
        """A short detour, then the step plan's text: after a token that opened what the
        plan's route does not close (``" >="`` where the plan was ``"then end"``: an operand
        first, ``"a then end"``; ``"(t"``: a ``")"`` first), the cheapest chunks the costs
        rank from ``s`` (:func:`~.search.cheapest_steps`), up to two in a row, each
        followed by the plan's text or its text from one of its next lexemes on (each as it
        is, past its leading blanks, or after the separator), and those later texts alone,
        spelled in the fewest tokens and walked from ``s``. Tried where a group's own plan
        search found nothing or the step's plans are spent: a search of a few states misses
        these where the costs, optimistic with a suffix, rank many dead ends first; the
        walks here spend no plan."""
        if not self.text or not self.tail or self.detours <= 0:
            return None
        self.detours -= 1
        c = self.c
        pl = self.planner
        if self._rejoins is None:
            self._rejoins = self._rejoin_texts()
        for rejoin in self._rejoins[1:]:  # no detour: the plan's first lexemes skipped
            ids = pl.tok.tokenize(rejoin)
            if ids and len(ids) <= self.left and self._ends_complete(s, ids):
                return ids
        level: list[tuple[bytes, S]] = [(b"", s)]
        for depth in range(_DETOUR_DEPTH):
            deeper: list[tuple[bytes, S]] = []
            for head, cur in level[:1] if depth else level:  # deeper: from the cheapest
                for chunk, nst in cheapest_steps(pl.search, cur, c._walk, c._view,
                                                  _DETOUR_WIDTH):
                    for rejoin in self._rejoins:
                        ids = pl.tok.tokenize(head + chunk + rejoin)
                        if not ids or len(ids) > self.left:
                            continue
                        if self._ends_complete(s, ids):
                            return ids
                    deeper.append((head + chunk, nst))
            level = deeper
        return None

    def _rejoin_texts(self) -> list[bytes]:
        """Where :meth:`_by_detour` rejoins the step plan's route: its text, and its text
        from each of the next _REJOINS lexeme starts on (the detour may stand for what comes
        before: ``"(int a"`` where the plan was ``"(){"`` goes on with ``"){"``; the starts
        as the lexer DFA reads the text from a fresh lexeme, a guess the walk checks); each
        also past its leading blanks and after the separator."""
        text = self.text
        trans = self.planner.lex.trans
        starts = [0]
        q = 0
        for j, byte in enumerate(text):
            nq = int(trans[q, byte]) if q else -1
            if nq < 0:  # a lexeme starts at j
                if j:
                    starts.append(j)
                    if len(starts) > _REJOINS:
                        break
                nq = max(int(trans[0, byte]), 0)
            q = nq
        sep = self.planner.lex.separator
        out: list[bytes] = []
        for j in starts:
            body = text[j:].lstrip(b" \t")
            out += [text[j:], body, *([sep + body] if sep and body else [])]
        return list(dict.fromkeys(t for t in out if t))

    def shared_prefix(self, data: bytes) -> int:
        """How many first bytes ``data`` shares with the step plan's text (a caller with
        several tokens that reach one state passes the one that shares most)."""
        text = self.text
        j = 0
        n = min(len(text), len(data))
        while j < n and text[j] == data[j]:
            j += 1
        return j

    def _by_pool(self, s: S) -> tuple[int, ...] | None:
        """A completion of the pool (:class:`CompletionPool`) whose walk from ``s`` ends
        complete within ``left``."""
        if self.pool is None:
            return None
        for cand in self.pool.items:
            if len(cand) <= self.left and self._ends_complete(s, cand):
                self.pool.add(cand, self.left)  # to the front: the next state likely ends so too
                return cand
        return None

    def _plan(self, s: S, search: int, pooled: bool = True, escalate: bool = False,
              ) -> tuple[int, ...] | None:
        """The step plan's text or (``pooled``) a pooled completion if one walks to an end
        from ``s``; else a plan search (at most ``MAX_PLANS`` a step). A plan shared by
        several groups is not taken from the pool: a pooled completion fits what is left but
        need not be short, and a shared plan should be."""
        p = self._by_tail(s)
        if p is None and pooled:
            p = self._by_pool(s)
        if p is not None:
            return p
        if self.plans <= 0:
            if self.greedy <= 0:
                return None
            self.greedy -= 1
            search = 0  # the bounds' own choices, walked: no search
        else:
            self.plans -= 1
        c = self.c
        try:
            p = self.planner.plan(
                self.norm(s) if self.norm is not None else s, c._walk, c._complete, c._view,
                search=search, escalate=escalate)
        except (NoCompletionError, LimitExceededError):
            return None
        if p is not None and self.pool is not None:
            self.pool.add(p, self.left)
        return p

    def _ends_complete(self, s: S, ids: tuple[int, ...]) -> bool:
        """Whether ``ids``, walked from ``s`` as a generation takes them, end complete."""
        end = self._walk_ids(s, ids)
        return end is not None and self.c._complete(end)

    def _walk_ids(self, s: S, ids: tuple[int, ...]) -> S | None:
        """The state after ``ids`` token by token, as a generation takes them (each token's
        end is checked), or None."""
        c = self.c
        return walk_ids(c._walk, c._vocab.token_bytes, s, ids)

    def cheap(self, s: S, data: bytes = b"", vertex: Hashable | None = None,
              ) -> tuple[int, ...] | None:
        """Like :meth:`state` without a search: ``s`` complete as it is, or ended by the
        step plan's rest, its text, a pooled completion, or (given its ``vertex``) a plan
        an earlier group of the vertex shared (for the groups beyond a step's cap, a walk
        or two each: ``(n`` after a call's name, where ``(x`` was checked, rides on its
        plan)."""
        if self.c._complete(s):
            return ()
        if self.left == 0 or self._dead(s):
            return None
        r = self._by_rest(s, data) if data else None
        if r is None:
            r = self._by_tail(s)
        if r is None:
            r = self._by_pool(s)
        if r is None and vertex is not None:
            r = self._by_shared(s, vertex, plan=False)
        return r

    def state(self, s: S, vertex: Hashable, data: bytes = b"", size: int = 1,
              ) -> tuple[int, ...] | None:
        """A walked completion of at most ``left`` tokens from the state ``s`` after a token
        (whose bytes are ``data``), or None; ``vertex`` names the parser state its completed
        lexemes end at (plans are shared per vertex and terminal). ``size``: how many tokens
        lead to ``s``; a large group (all the names) gets a deeper search — one plan decides
        a large part of the vocabulary. With a pool (fill-in-the-middle), a completion an
        earlier step of this generation walked from the very same state (same key) is
        reused where it fits."""
        if self.pool is None:
            return self._state(s, vertex, data, size)
        k = self.key(s)
        memo = self.pool.verified
        known = memo.get(k)
        if known is not None and len(known) <= self.left:
            return known
        r = self._state(s, vertex, data, size)
        if r is not None and (known is None or len(r) < len(known)):
            if len(memo) >= 4096:
                memo.clear()
            memo[k] = r
        return r

    def _dead(self, s: S) -> bool:
        """Is ``s`` proven to have no completion at all (:mod:`.dead_ends`)? Then every walk
        and search from it fails: skipped, they spend none of the step's plans, detours and
        retries, which go to the other groups (a search is the cost: the first plan searches
        of such states found nothing after 16 states, their retries after 128)."""
        dead = self.planner.search.dead
        return dead is not None and dead.dead(*self.c._view(s))

    def _state(self, s: S, vertex: Hashable, data: bytes, size: int,
               ) -> tuple[int, ...] | None:
        c = self.c
        search = c.VERIFY_SEARCH * (_DEEP if size >= _LARGE else 1)
        if c._complete(s):
            return ()
        if self.left == 0 or self._dead(s):
            return None
        if data:
            r = self._by_rest(s, data)
            if r is None:
                r = self._by_pad(s, data)
            if r is not None:
                return r
        r = self._by_shared(s, vertex, search=search)
        if r is not None:
            return r
        p = self._plan(s, search)
        if p is None:  # the search found nothing, or the step's plans are spent
            p = self._by_detour(s)
        if p is None and self.retries > 0 and self.plans > 0:
            self.retries -= 1
            deep = _RETRY_DEEP
            if self.deep > 0:
                self.deep -= 1
                deep = _SLACK_DEEP
            p = self._plan(s, search * deep, pooled=False, escalate=True)
        return p if p is not None and len(p) <= self.left else None

    def _by_shared(self, s: S, vertex: Hashable, plan: bool = True, search: int = 0,
                   ) -> tuple[int, ...] | None:
        """The lexeme in progress at ``s`` finished by its witness as one of its two
        cheapest terminals ``a``, then the plan shared per (``vertex``, ``a``), where the
        plan's first token reaches the very state it reached when it was walked (then its
        remaining tokens complete from there too). With ``plan``, a (vertex, terminal) not
        seen yet this step gets its plan (a search of ``search`` states); without, only
        the plans already shared are tried."""
        c = self.c
        pl = self.planner
        lex = pl.lex
        for a, cost in lex.fin_list[s[0]][:2]:
            if cost > self.left:
                break
            share = (vertex, a)
            if not plan and self.shared.get(share) is None:
                continue
            w = lex.witness(s[0], a)
            tw = pl.tok.tokenize(w) if w else ()
            if tw is None:
                continue
            s_a = self._walk_ids(s, tw)
            if s_a is None:
                continue
            if c._complete(s_a):
                return tw  # the witness alone completes
            if share not in self.shared:
                p = self._plan(s_a, search, pooled=False)
                if not p:
                    self.shared[share] = None
                    if p is not None:
                        return tw  # an empty plan: the witness alone completes
                    continue
                s1 = self._walk_ids(s_a, p[:1])
                self.shared[share] = None if s1 is None else (self.key(s1), p)
            ent = self.shared[share]
            if ent is None:
                if c._complete(s_a):
                    return tw  # the witness alone completes
                continue
            k1, p = ent
            if len(tw) + len(p) > self.left:
                continue
            s1 = self._walk_ids(s_a, p[:1])
            if s1 is not None and self.key(s1) == k1:
                return (*tw, *p)  # p[0] reaches the state p was walked through: p completes
        return None
