"""A constraint's token budget, budget side: the step's grammar mask cut to the tokens after
which the program can still finish within the tokens left, and the plans (shortest
completions) that back it.

:class:`BoundedBudget` is what :class:`~gramask.runtime.core.constraint.Constraint` asks
(through its ``TokenBudget`` protocol, so the core never imports the budget side). Its cut is
the prefix one of the basic lexer mode: the planner's bounds decide per group of tokens, and
groups just over them get a real plan. Fill-in-the-middle and the contextual lexer mode
override the cut on their constraints (walked completions, :mod:`.verify`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

import numpy as np

from ...errors import LimitExceededError, NoCompletionError
from .runstate import RunState, memo_key
from .spelling import INF

if TYPE_CHECKING:
    from ..core.constraint import Constraint
    from .planner import BudgetPlanner

__all__ = ["PLAN_FAILED", "BoundedBudget"]

S = TypeVar("S", bound=RunState)

# Budget masks: tokens whose bound exceeds what is left by at most this much get a real plan
# (at most this many per step; beyond, the bound decides)
_REFINE_SLACK = 2
_REFINE_MAX = 32
# tokens the grammar allows whose bound is INF (the tables could not price the state: an
# ignored ``#`` comment only a significant newline ends) get a plan searching this many
# states, at most _REFINE_MAX groups a step
_UNPRICED_SEARCH = 16
# a plan that could not be made (none found, or a parse outgrew its limits while planning):
# the token or group it was for is not allowed by the budget
PLAN_FAILED = (NoCompletionError, LimitExceededError)


class BoundedBudget(Generic[S]):
    """The token budget of the constraints of one compiled grammar (shared by their clones:
    it keeps nothing per generation). ``planner`` builds the grammar's
    :class:`~.planner.BudgetPlanner` on first use."""

    def __init__(self, planner: Callable[[], BudgetPlanner]) -> None:
        self._planner = planner

    def planner(self) -> BudgetPlanner:
        return self._planner()

    def plan(self, c: Constraint[S], st: S) -> tuple[int, ...]:
        """A verified shortest completion from ``st`` (walked with ``c``'s own rules).

        Raises
        ------
        NoCompletionError, LimitExceededError
            None found (see ``PLAN_FAILED``).
        """
        return planner_of(c).plan(st, c._walk, c._complete, c._view)

    def cut(self, c: Constraint[S], st: S, m: np.ndarray) -> None:
        """Clear from ``m`` the tokens after which the program cannot finish in time."""
        left = c.remaining_tokens
        assert left is not None
        q, carry, p = c._view(st)
        planner = planner_of(c)
        grammar: np.ndarray | None = None
        if left == 0:  # only EOS (set by allowed()), or the best effort below
            grammar = m.copy()
            m[:] = False
        else:
            units = planner.step_units(p, q, carry)
            over = units.costs > left - 1
            if units.loose is not None and (over & units.loose).any():
                units.settle(planner.costs, over)  # the exact bounds of the loose ones over
                over = units.costs > left - 1
            if not over.any():
                return  # every allowed token's bound fits: nothing to cut, nothing to plan
            # The bounds spell lexemes one by one; groups just over them may still fit once
            # tokens that span lexemes are used ("):" closing two): plan the states they
            # lead to (a few per step, each shared by many tokens).
            # With indentation the bounds also price every newline lexeme at the dearest
            # width a completion might use (``StateCosts.k_newline``): with few blanks per
            # token that is far over what a short program needs (a number then a newline
            # at width 0 bounded at 65), so there any group over is planned, the near ones
            # first (a bound of INF is no completion at all, never planned).
            slack = INF - left if planner.costs.has_indent else _REFINE_SLACK
            cut = np.flatnonzero(over)
            near = [i for i in cut.tolist() if units.costs[i] <= left - 1 + slack
                    and not units.nl_live[units.finals[i]]]
            # the groups within the usual slack first, then the largest groups (one plan
            # decides the most tokens), then the least over, then the group id (the order
            # the per-token version had)
            near.sort(key=lambda i: (int(units.costs[i]) > left - 1 + _REFINE_SLACK,
                                     -int(units.sizes[i]), int(units.costs[i]),
                                     int(units.gids[i])))

            def plan_fits(i: int, search: int) -> bool:
                try:  # the prefix cut: the constraint's states are the units' LexStates
                    plan = planner.plan(cast(S, units.state(i)), c._walk, c._complete,
                                        search=search)
                except PLAN_FAILED:
                    return False
                return len(plan) <= left - 1

            for i in near[:_REFINE_MAX]:
                if plan_fits(i, 0):
                    over[i] = False
            # a bound of INF on tokens the grammar allows is a state the tables could not
            # price, not a proof: a small search decides (a comment before ``_NL: /\n+/``
            # was forbidden at every budget)
            unpriced = [i for i in cut.tolist() if units.costs[i] >= INF
                        and not units.nl_live[units.finals[i]]]
            unpriced.sort(key=lambda i: (-int(units.sizes[i]), int(units.gids[i])))
            for i in unpriced[:_REFINE_MAX]:
                if plan_fits(i, _UNPRICED_SEARCH):
                    over[i] = False
            # a group that leaves a newline lexeme open holds tokens of different widths
            # (its state has no one carry): those near the budget are planned token by
            # token, each from the state it reaches (``\n`` then `` `` then `` [``)
            wide = [i for i in cut.tolist() if over[i] and units.nl_live[units.finals[i]]
                    and units.costs[i] <= left - 1 + slack]
            rescued = _open_newline_tokens(c, st, units.tokens(wide), left - 1, planner)
            if over.any():
                kept = units.sizes[~over].sum()
                if units.sizes[over].sum() <= kept:
                    m[units.tokens(np.flatnonzero(over).tolist())] = False
                else:  # most of the step is cut: rebuild from what is kept
                    grammar = m.copy()
                    m[:] = False
                    m[units.tokens(np.flatnonzero(~over).tolist())] = True
                    m &= grammar
            m[rescued] = True
        if c._complete(st):
            return  # EOS stays allowed; a complete state has no plan to add
        try:
            plan = c._plan()
        except PLAN_FAILED:
            plan = ()
        if not plan and not m.any():
            if grammar is None:
                grammar = c._grammar_mask(st)
            m |= grammar  # no completion known at all: never an empty mask (best effort)
            return
        if plan and len(plan) <= left:
            m[plan[0]] = True  # the plan's first token always keeps the guarantee


def planner_of(c: Constraint[S]) -> BudgetPlanner:
    """``c``'s budget planner, as the budget side knows it (the core sees only ``object``;
    a subclass may have wired it first, as fill-in-the-middle wires its end check)."""
    return cast("BudgetPlanner", c._budget_planner())


def _open_newline_tokens(c: Constraint[S], st: S, toks: np.ndarray, fits: int,
                         planner: BudgetPlanner) -> list[int]:
    """The tokens of ``toks`` (each leaves a newline lexeme open) after which a plan of the
    bounds' choices (no search) ends within ``fits`` tokens; at most ``_REFINE_MAX``
    distinct states are planned (tokens reaching the same state share its plan)."""
    out: list[int] = []
    known: dict[object, bool] = {}
    for t in toks.tolist():
        s = c._walk(st, c._vocab.token_bytes(t))
        if isinstance(s, int):
            continue
        key = memo_key(s[0], s[1], s)
        ok = known.get(key)
        if ok is None:
            if len(known) >= _REFINE_MAX:
                break
            try:
                ok = len(planner.plan(s, c._walk, c._complete, search=0)) <= fits
            except PLAN_FAILED:
                ok = False
            known[key] = ok
        if ok:
            out.append(t)
    return out
