"""Fill-in-the-middle group bounds for tokens that end inside a newline lexeme
(gramask/runtime/budget/group_bounds.py, ``GroupBounds._nl_plan``): ``):\\n``, ``,\\n`` and
leading blanks leave the lexer where the indentation carry is not known per group, so no
lexeme witness bounds them; a line break resets the carry and the plan walked after it bounds
the whole group. Every token admitted that way must have a completion, walked from its own
state (its own carry), that ends complete within what is left; and the route must be taken
(the test fails where no group is admitted through it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gramask.runtime.budget import group_bounds
from gramask.runtime.budget.verify import verified_step

from ._support import compiled

CASES = [
    ("def f(x):\n    y = x + 1", "\n    return y\n"),
    ("def f(x):\n    if x:\n        y = (x,", " 2)\n    return y\n"),
    ("class A:\n    def g(self):\n        pass", "\n\nz = A()\n"),
    ("for i in range(3):\n    print(i)", "\nprint('done')\n"),
]


def _nl_routes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the line-break completions found (the route must not be idle)."""
    found: list[int] = []
    nl_plan = group_bounds.GroupBounds._nl_plan

    def spy(self: group_bounds.GroupBounds, q: int, pq: object, po: object,
            ) -> tuple[int, ...] | None:
        r = nl_plan(self, q, pq, po)  # type: ignore[arg-type]
        found.append(r is not None)
        return r

    monkeypatch.setattr(group_bounds.GroupBounds, "_nl_plan", spy)
    return found


def _first_step(cg: Any, prefix: str, suffix: str, extra: int) -> tuple[Any, Any, int, Any, Any, Any]:
    """A FIM request budgeted at its minimum + ``extra``, and its first step: (constraint,
    state, tokens left, grammar mask, the verified step's record, the tokens the step
    keeps)."""
    free = cg.constraint(prefix, suffix=suffix)
    budget = free.min_tokens_to_complete() + extra
    c = cg.constraint(prefix, suffix=suffix, max_tokens=budget)
    st = c._history[-1]
    left = c.remaining_tokens
    assert left is not None and left >= 1
    m = c._grammar_mask(st)
    rec = verified_step(c, st, left)
    every = c._bounded_groups(st, m, rec, left - 1)
    return c, st, left, m, rec, (m if every else m & rec.keep)


def _ends_within(c: Any, tb: Any, s: Any, done: tuple[int, ...] | None, most: int,
                 token: bytes) -> None:
    """The completion kept for a token, walked from the token's own state (its own carry),
    fits in ``most`` tokens and ends complete."""
    assert done is not None and len(done) <= most, token
    for d in done:
        s = c._walk(s, tb(d))
        assert not isinstance(s, int), (token, done)
    assert c._complete(s), (token, done)


@pytest.mark.parametrize("prefix,suffix", CASES)
@pytest.mark.parametrize("extra", [1, 2, 4, 12])
def test_newline_groups_admitted_by_bound_end_complete(
        monkeypatch: pytest.MonkeyPatch, prefix: str, suffix: str, extra: int) -> None:
    found = _nl_routes(monkeypatch)
    cg = compiled("python", "deepseek-v4")
    c, st, left, _, rec, kept = _first_step(cg, prefix, suffix, extra)
    nl_live = c._b.nl_live  # type: ignore[attr-defined]
    tb = cg.vocab.token_bytes
    checked = 0
    for t in np.flatnonzero(kept).tolist():
        if t == cg.vocab.eos_token_id:
            continue
        s = c._walk(st, tb(t))  # type: ignore[attr-defined]
        if isinstance(s, int) or not nl_live[s[0]]:
            continue
        _ends_within(c, tb, s, rec.after(t), left - 1, tb(t))
        checked += 1
    if extra >= 4:
        assert any(found) and checked > 0, (found, checked)


@pytest.mark.parametrize("extra", [4, 12])
def test_comment_cut_inside_a_character_admitted_by_bound(extra: int) -> None:
    """A comment's token that ends inside a UTF-8 character (``\\xc3`` of ``é``) leaves the
    lexer where a line break cannot come next; the bytes that finish the character go
    first, then the break (``GroupBounds._break_head``): such tokens are admitted by the
    bound, and the completion kept for each walks, from its own state, to an end."""
    cg = compiled("python", "deepseek-v4")
    prefix, suffix = "def f(x):\n    y = x + 1  # caf", "\n    return y\n"
    c, st, left, m, rec, kept = _first_step(cg, prefix, suffix, extra)
    rows = c._b.trans_rows  # type: ignore[attr-defined]
    tb = cg.vocab.token_bytes
    cut = 0
    for t in np.flatnonzero(m).tolist():
        s = c._walk(st, tb(t))  # type: ignore[attr-defined]
        if isinstance(s, int) or not c._b.nl_live[s[0]] or rows[s[0]][10] >= 0:  # type: ignore[attr-defined]
            continue
        if not kept[t]:
            assert extra < 12, tb(t)  # with tokens to spare every such token fits
            continue
        _ends_within(c, tb, s, rec.after(t), left - 1, tb(t))
        cut += 1
    assert cut > 0  # such tokens are admitted by the bound
