"""Token budgets with a suffix in the contextual lexer mode: every token a budget mask admits
has a completion walked (both sides' contextual lexers) to the exact end check within what is
left, so a budgeted fill-in-the-middle walk always ends with prefix + middle + suffix a program.

Checked exactly on small grammars whose contextual reading differs from the basic one (a
depth-limited search over the unbudgeted constraint's own walks), and by random walks on the
bundled JSON and C grammars judged by ``is_complete`` and lark's contextual LALR parser.
"""

from __future__ import annotations

import functools
import random

import lark
import numpy as np
import pytest

import gramask
from gramask.runtime.core.parse_state import PUID

from ._support import follow_along_the_masks
from .test_budget_contextual import _compile_small, _contextual, _lark, _lark_accepts
from .test_contextual import ASSIGN, KEYWORDS

SMALL_FIM = [
    (KEYWORDS, ["int", " int", "in", "t", "a", " a", ";", " ", "i", "nt", "int;", "a;"],
     [("int", "; a a;"), ("", " a;"), ("a", "a;"), ("int a; in", ";")]),
    (ASSIGN, ["int", " ", "a", " a", "=", " =", "+=", "*", "0", ";", " 0;", "a =", "*="],
     [("int a", " 0;"), ("a ", "0;"), ("", "a = 0;"), ("int a = 0", "")]),
]


def _fits(c: gramask.Constraint, k: int, n_tok: int, memo: dict[tuple[int, ...], bool]
          ) -> bool:
    """Does some sequence of at most ``k`` tokens from ``c``'s state end complete (exact,
    by search over the unbudgeted constraint's walks)?"""
    if c.is_complete():
        return True
    if k == 0:
        return False
    st = c._history[-1]  # (q, carry, parser state) per side; parser states keyed by id
    key = (st[0], st[1], st[2][PUID], st[3], st[4], st[5][PUID], k)
    r = memo.get(key)
    if r is None:
        r = False
        m = c.allowed()
        for t in np.flatnonzero(m[:n_tok]).tolist():
            d = c.clone()
            d.advance(t)
            if _fits(d, k - 1, n_tok, memo):
                r = True
                break
        memo[key] = r
    return r


@pytest.mark.parametrize(("grammar", "tokens", "cuts"), SMALL_FIM, ids=["keywords", "assign"])
def test_contextual_fim_budget_masks_are_sound(grammar: str, tokens: list[str],
                                               cuts: list[tuple[str, str]]) -> None:
    """Every token a budget mask admits has an exact completion within what is left after
    it; every walk ends complete within its budget; and the masks forbid few that fit."""
    cg = _compile_small(grammar, tokens)
    n_tok = len(tokens)
    rnd = random.Random(0)
    allowed = forbidden = walks = 0
    for pre, suf in cuts:
        ref = cg.constraint(pre, suffix=suf)
        memo: dict[tuple[int, ...], bool] = {}
        for budget in (1, 2, 3, 4):
            try:
                c = cg.constraint(pre, suffix=suf, max_tokens=budget)
            except gramask.BudgetError as e:
                assert not _fits(ref.clone(), budget, n_tok, memo), (pre, suf, budget)
                assert e.minimum > budget
                continue
            d = ref.clone()
            while True:
                left = c.remaining_tokens
                assert left is not None
                m = c.allowed()
                assert m.any()
                g = d.allowed()
                assert m[n_tok] == g[n_tok] == c.is_complete()
                for t in np.flatnonzero(g[:n_tok]).tolist():
                    e = d.clone()
                    e.advance(t)
                    fits = left >= 1 and _fits(e, left - 1, n_tok, memo)
                    assert fits or not m[t], (pre, suf, budget, c.text, tokens[t])
                    allowed += fits
                    forbidden += fits and not m[t]
                ids = np.flatnonzero(m)
                t = int(rnd.choice(ids))
                if t == n_tok:
                    break
                c.advance(t)
                d.advance(t)
            assert c.is_complete() and c.num_tokens <= budget
            assert cg.constraint(pre + c.text + suf).is_complete()
            walks += 1
    assert walks >= 10 and forbidden <= 0.2 * allowed, (walks, forbidden, allowed)


FIM_CASES = {
    "json": [('{"a": [1, ', '], "b": 2}'), ('{"k": "v', '"}'), ("[true, ", ", null]")],
    "c": [("int f(int a) { if (a < ", ") { return 1; } return 0; }\n")],
}


@functools.cache
def _ascii(name: str) -> np.ndarray:
    v = _contextual(name).vocab
    return np.array([not v.is_special(i) and all(32 <= b < 127 and b != 92
                                                 for b in v.token_bytes(i))
                     for i in range(len(v))])


@pytest.mark.parametrize("name", ["json", "c"])
def test_contextual_fim_budget_walks_end_as_programs(name: str) -> None:
    """Random budgeted fill-in-the-middle walks end complete within their budget and lark's
    contextual parser accepts prefix + middle + suffix (or the documented lexer
    differences, :func:`_lark_accepts`)."""
    cg = _contextual(name)
    v = cg.vocab
    parser: lark.Lark = _lark(name)
    prefer = _ascii(name)
    rnd = random.Random(1)
    walks = parsed = 0
    for pre, suf in FIM_CASES[name]:
        for budget in (2, 6):
            try:
                c = cg.constraint(pre, suffix=suf, max_tokens=budget)
            except gramask.BudgetError as e:
                assert e.minimum > budget
                continue
            while True:
                m = c.allowed()
                assert m.any()
                ids = np.flatnonzero(m & prefer)
                ids = ids if ids.size and rnd.random() < 0.8 else np.flatnonzero(m)
                t = int(rnd.choice(ids))
                if t == v.eos_token_id:
                    break
                c.advance(t)
            assert c.is_complete() and c.num_tokens <= budget, (pre, c.text, suf)
            walks += 1
            parsed += _lark_accepts(parser, cg, pre + c.text + suf)
    assert walks >= 2 and parsed >= walks - 1, (walks, parsed)


def test_contextual_fim_budget_error_names_the_minimum() -> None:
    cg = _contextual("json")
    c = cg.constraint('{"a": ', suffix="}")
    need = c.min_tokens_to_complete()
    assert need >= 1
    with pytest.raises(gramask.BudgetError) as e:
        cg.constraint('{"a": ', suffix="}", max_tokens=need - 1)
    assert e.value.minimum == need
    b = cg.constraint('{"a": ', suffix="}", max_tokens=need)
    follow_along_the_masks(b, list(b.shortest_completion().token_ids))
