"""Basic-mode prefix budgets price a step's groups loosely first (StateCosts.loose_costs: no
end-of-input check) and make a group's bound exact only where the loose one is over what is
left (StepUnits.settle). Pinned here: a loose bound is never below the exact one, a bound
not marked loose is the exact one, settling gives the exact ones, and the budget masks are
those of exact bounds everywhere (a loose bound that stayed over would forbid what fits)."""

from __future__ import annotations

import random

import numpy as np

from ._support import tiny

GRAMMAR = r"""
start: stmt+
stmt: NAME "=" expr ";"
expr: NAME | NUM | "(" expr ")" | expr "+" expr
NAME: /[a-z]+/
NUM: /[0-9]+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore /[ \n]+/
"""
TOKENS = ["a", "b", "ab", "x", "1", "12", "=", " =", "= ", ";", "; ", ";\n", "(", ")", "+",
          " +", "#", "# c", "c", "\n", " ", "a=", "1;", "))", "(a", "+1", "b;"]


def _units_of(c):  # type: ignore[no-untyped-def]
    planner = c._budget_planner()
    q, carry, p = c._view(c._history[-1])
    return planner, planner.step_units(p, q, carry)


def test_loose_bounds_are_upper_bounds_of_the_exact_ones() -> None:
    cg, vocab = tiny(GRAMMAR, TOKENS)
    rnd = random.Random(3)
    loose_seen = 0
    for _ in range(30):
        c = cg.constraint("", max_tokens=64)
        for _ in range(rnd.randint(0, 12)):
            m = c.allowed()
            ids = [i for i in np.flatnonzero(m).tolist() if i != vocab.eos_token_id]
            if not ids:
                break
            c.advance(rnd.choice(ids))
        planner, units = _units_of(c)
        exact = np.array([
            planner.costs.state_costs(units.vertices[int(units.vertex[i])],
                                      units.finals[i:i + 1])[0]
            for i in range(units.costs.size)], dtype=np.int64)
        loose = units.loose if units.loose is not None else np.zeros(exact.size, bool)
        loose_seen += int(loose.sum())
        assert (units.costs >= exact).all()
        assert (units.costs[~loose] == exact[~loose]).all()
        units.settle(planner.costs, np.ones(exact.size, bool))
        assert (units.costs == exact).all()
        assert units.loose is None or not units.loose.any()
    assert loose_seen  # (a comment at the end: 0 by the end check, a newline by the loop)


def test_budget_masks_are_those_of_exact_bounds() -> None:
    """The same walks under tight budgets, twice: once as built (loose first), once with
    every group settled before the mask is read; the masks agree at every step."""
    rnd = random.Random(5)
    for case in range(12):
        cg, vocab = tiny(GRAMMAR, TOKENS)  # (fresh: no memo shared between the two runs)
        cg2, _ = tiny(GRAMMAR, TOKENS)
        budget = rnd.randint(3, 14)
        c, d = cg.constraint("", max_tokens=budget), cg2.constraint("", max_tokens=budget)
        for _ in range(budget + 1):
            planner, units = _units_of(d)
            units.settle(planner.costs, np.ones(units.costs.size, bool))
            m, m2 = c.allowed(), d.allowed()
            assert (m == m2).all(), case
            ids = np.flatnonzero(m).tolist()
            t = rnd.choice(ids)
            if t == vocab.eos_token_id:
                break
            c.advance(t)
            d.advance(t)


def test_a_comment_that_ends_the_program_fits_its_last_token() -> None:
    """One token left after a complete program: a comment may still come (the input may end
    inside it), though the loose bound prices closing it with a newline, here one no token
    spells (so the loose bound is infinite, past any plan's reach): the exact bound decides
    there."""
    cg, vocab = tiny(GRAMMAR, [t for t in TOKENS if "\n" not in t])
    c = cg.constraint("a=1;", max_tokens=1)
    m = c.allowed()
    assert m[vocab.token_id("#")] and m[vocab.token_id("# c")]
    assert not m[vocab.token_id("a")]  # (a statement cannot finish in one token)
