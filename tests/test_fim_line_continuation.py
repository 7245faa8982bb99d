"""Fill-in-the-middle where only a line continuation joins the middle to the suffix: the
suffix's first line is indented less than the block it ends in (``\\n  y = 2``) and its
second line deeper than any open block (``      z = 3``), so the middle opens a block at
that width and ends with ``\\``, making the suffix's first line part of its last. The
planner's fallback search prices such a boundary lexeme as a free end and so was never led
to spell it: ``shortest_completion()`` gave up after two full searches (~28 s)."""

from __future__ import annotations

import ast

import pytest

import gramask

from ._support import compiled, follow_along_the_masks

PREFIX, SUFFIX = "def f(x):\n    return x", "\n  y = 2\n      z = 3\n"


def test_shortest_completion_ends_with_a_line_continuation() -> None:
    cg = compiled("python", "deepseek-v4")
    c = cg.constraint(PREFIX, suffix=SUFFIX)
    sc = c.shortest_completion()
    assert sc.data.endswith(b"\\")
    ast.parse(PREFIX + sc.text + SUFFIX)
    follow_along_the_masks(c, sc.token_ids)


def test_a_budget_finds_the_same_minimum() -> None:
    cg = compiled("python", "deepseek-v4")
    n = len(cg.constraint(PREFIX, suffix=SUFFIX).shortest_completion().token_ids)
    assert cg.constraint(PREFIX, suffix=SUFFIX, max_tokens=n).min_tokens_to_complete() == n
    with pytest.raises(gramask.BudgetError) as e:
        cg.constraint(PREFIX, suffix=SUFFIX, max_tokens=n - 1)
    assert e.value.minimum == n
