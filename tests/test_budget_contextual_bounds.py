"""Contextual-mode budgets admit a group of tokens by the greedy lexer's bound where it fits
(gramask/runtime/budget/contextual_bounds.py): the bound must be one the contextual walk
keeps, and a group it admits needs no walked plan of its own."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gramask.runtime.budget.bounded import PLAN_FAILED

from .test_budget_contextual import INDENTED, PREFIXES, _compile_small, _contextual


@pytest.mark.parametrize("name", ["c", "sql", "json"])
def test_greedy_bound_is_kept_by_the_contextual_walk(name: str) -> None:
    """From the state a group of tokens leads to, the greedy planner's route (its bound's
    own choices, no search) walked with the contextual lexer ends complete within the bound:
    the argument of contextual_bounds, checked on sampled groups of real steps."""
    cg = _contextual(name)
    rnd = random.Random(5)
    checked = 0
    for pre in PREFIXES[name][:4]:
        c = cg.constraint(pre, max_tokens=64)
        st = c._history[-1]
        bounds = c._budget_planner().bounds()
        assert bounds is not None
        groups = c._state_groups(st, np.flatnonzero(c._grammar_mask(st)))
        for s, _members in rnd.sample(groups, min(40, len(groups))):
            bound = bounds.state_cost(*s)
            try:
                plan = bounds.plan(s, c._walk, c._complete, search=0)
            except PLAN_FAILED:
                plan = None
            assert plan is not None and len(plan) <= bound, (pre, s[0], bound, plan)
            checked += 1
    assert checked >= 40


@pytest.mark.parametrize("name", ["c", "sql"])
def test_groups_whose_bound_fits_need_no_walked_plan(name: str) -> None:
    """With no plans at all for the step's checks (no search, no greedy plans), a step with
    room to spare keeps every token it keeps with them: each group's bound fits, and only
    the chosen token's completion is walked, when it is taken. Before, a group was admitted
    only with a walked completion, and without plans most were forbidden."""
    cg = _contextual(name)
    for pre in PREFIXES[name][:3]:
        full = cg.constraint(pre, max_tokens=40)
        bare = cg.constraint(pre, max_tokens=40)
        bare.MAX_PLANS = bare.GREEDY_PLANS = 0  # type: ignore[misc]
        want, got = full.allowed(), bare.allowed()
        assert want.sum() > 100 and (got == want).all(), (pre, int(want.sum()), int(got.sum()))
        # the chosen token's completion is walked when it is taken: the next step plans
        # from it, and a generation that follows the masks ends complete
        t = int(np.flatnonzero(got)[len(np.flatnonzero(got)) // 2])
        bare.advance(t)
        plan = bare._plans[-1]
        assert plan is not None and len(plan) <= 39
        for x in plan:
            assert bare.allowed()[x]
            bare.advance(x)
        assert bare.is_complete()


def test_indentation_grammars_keep_walked_checks() -> None:
    """With an indentation terminal the argument is not made: no greedy bounds."""
    toks = ["a", "b", ":", "\n", "  ", "\n  ", " ", "a:", ":\n", "\n    ", "if", " if"]
    cg = _compile_small(INDENTED, toks)
    c = cg.constraint("a", max_tokens=8)
    assert c._budget_planner().bounds() is None
