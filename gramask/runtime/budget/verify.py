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
from .runstate import LexState, RunState

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.constraint import Constraint
    from .planner import BudgetPlanner

__all__ = ["VerifiedTokens", "WalkedConstraint", "WalkedVerifier", "verified_step"]

S = TypeVar("S", bound=RunState)


class WalkedConstraint(Protocol[S]):
    """What a :class:`WalkedVerifier` uses of the constraint whose step it checks."""

    MAX_PLANS: int  # plans of their own per step
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

    def add(self, members: np.ndarray | list[int], completion: tuple[int, ...]) -> None:
        self.keep[members] = True
        self.index[members] = len(self.completions)
        self.completions.append(completion)

    def after(self, token_id: int) -> tuple[int, ...] | None:
        """The completion that verified ``token_id``, if one did."""
        if not 0 <= token_id < self.index.size:
            return None
        i = int(self.index[token_id])
        return self.completions[i] if i >= 0 else None

    def apply(self, m: np.ndarray, complete: bool) -> None:
        """Keep in ``m`` only what was verified — unless nothing was and no plan is known
        at all (the planner failed here): then the grammar mask stays, best effort, never
        empty."""
        if self.keep.any() or self.plan is not None or complete:
            m &= self.keep


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
                 step_plan: tuple[int, ...] | None = None) -> None:
        self.c = c
        self.left = left
        self.planner = c._budget_planner()
        # the step's own plan, spelled afresh: tried after a token (its lexeme finished)
        # before any search — the real code mostly rejoins the route of the step's plan
        # (closing a string, then the same text up to the suffix), and a walk is cheap
        self.tail: tuple[int, ...] | None = None
        if step_plan:
            text = b"".join(c._vocab.token_bytes(i) for i in step_plan)
            self.tail = self.planner.tok.tokenize(text)
        self.plans: int = c.MAX_PLANS
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
        end = self._walk_ids(s, self.tail)
        return self.tail if end is not None and self.c._complete(end) else None

    def _plan(self, s: S) -> tuple[int, ...] | None:
        if self.plans <= 0:
            return None
        self.plans -= 1
        c = self.c
        try:
            return self.planner.plan(
                self.norm(s) if self.norm is not None else s, c._walk, c._complete, c._view,
                search=c.VERIFY_SEARCH)
        except (NoCompletionError, LimitExceededError):
            return None

    def _walk_ids(self, s: S, ids: tuple[int, ...]) -> S | None:
        """The state after ``ids`` token by token, as a generation takes them (each token's
        end is checked), or None."""
        c = self.c
        for i in ids:
            r = c._walk(s, c._vocab.token_bytes(i))
            if isinstance(r, int):
                return None
            s = r
        return s

    def state(self, s: S, vertex: Hashable) -> tuple[int, ...] | None:
        """A walked completion of at most ``left`` tokens from the state ``s`` after a token,
        or None; ``vertex`` names the parser state its completed lexemes end at (plans are
        shared per vertex and terminal)."""
        c = self.c
        if c._complete(s):
            return ()
        if self.left == 0:
            return None
        pl = self.planner
        lex = pl.lex
        for a, cost in lex.fin_list[s[0]][:2]:
            if cost > self.left:
                break
            w = lex.witness(s[0], a)
            tw = pl.tok.tokenize(w) if w else ()
            if tw is None:
                continue
            s_a = self._walk_ids(s, tw)
            if s_a is None:
                continue
            if c._complete(s_a):
                return tw  # the witness alone completes
            share = (vertex, a)
            if share not in self.shared:
                p = self._by_tail(s_a)
                if p is None:
                    p = self._plan(s_a)
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
        p = self._by_tail(s)
        if p is None:
            p = self._plan(s)
        return p if p is not None and len(p) <= self.left else None
