"""The budget checks' memos decide nothing: they give what the computation they stand for gives.

* :func:`~gramask.runtime.budget.search.cheapest_steps` asks a chunk's bound only while the
  chunk's own tokens could still rank among the ``k`` cheapest, and memoises per state: it must
  pick the very chunks (same order, same ties) that ranking every chunk of
  :func:`~gramask.runtime.budget.search._moves` picks.
* :meth:`~gramask.runtime.budget.state_costs.StateCosts.state_cost` is memoised per state and
  must follow a change of the fields it reads (fill-in-the-middle wires ``end_check`` after the
  planner is built).
"""

from __future__ import annotations

import pytest

import gramask
from gramask.runtime.budget.runstate import memo_key
from gramask.runtime.budget.search import _moves, cheapest_steps

GRAMMAR = r"""
start: func*
func: "int" NAME "(" (param ("," param)*)? ")" "{" stat* "}"
param: "int" NAME
stat: NAME "=" exp ";" | "if" "(" exp ")" stat
?exp: NAME | exp ">=" exp | "(" exp ")"
NAME: /[a-z]+/
%ignore " "
"""
TOKENS = ["int", " f", " x", "(int", "(", ")", " {", "{", "}", "()", "(){", " ", "a", " a",
          " =", "=", ";", " if", " (", " >=", "x", "</s>"]
MIDDLE = ["(int", " x", ")", " {", " if", " (", "x", " >=", " a", ")", " a", " =", " x", ";"]


@pytest.fixture(scope="module", params=["basic", "contextual"])
def compiled(request: pytest.FixtureRequest) -> gramask.CompiledGrammar:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    return gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=request.param), vocab,
                           cache=False, progress=False)


@pytest.mark.parametrize("suffix", [" }", None])
def test_cheapest_steps_ranks_as_every_chunk_ranked(compiled: gramask.CompiledGrammar,
                                                    suffix: str | None) -> None:
    c = compiled.constraint("int f", suffix=suffix)
    search = c._budget_planner().search
    walk, view = c._walk, c._view
    checked = 0
    for t in MIDDLE:
        st = c._history[-1]
        # the states one token on too: where the detour starts from
        states = [st] + [s for s in (walk(st, c._vocab.token_bytes(i))
                                     for i in range(len(TOKENS) - 1)) if not isinstance(s, int)]
        for s in states:
            ranked = sorted(((cost + h, i, chunk, nst) for i, (chunk, nst, cost, h)
                             in enumerate(_moves(search, s, view(s), walk, view, search.costs))),
                            key=lambda e: (e[0], e[1]))
            for k in (1, 2, 3):
                want = [(chunk, memo_key(*view(nst)[:2], nst)) for _, _, chunk, nst in ranked[:k]]
                for _ in range(2):  # computed, then memoised
                    got = [(chunk, memo_key(*view(nst)[:2], nst))
                           for chunk, nst in cheapest_steps(search, s, walk, view, k)]
                    assert got == want, (c.text, k)
                checked += 1
        c.advance(TOKENS.index(t))
    assert checked > 50


def test_state_cost_memo_follows_its_fields(compiled: gramask.CompiledGrammar) -> None:
    c = compiled.constraint("int f", max_tokens=64)
    costs = c._budget_planner().search.costs
    states = []
    for t in MIDDLE[:6]:
        c.advance(TOKENS.index(t))
        states.append(c._view(c._history[-1]))
    before = [costs.state_cost(*s) for s in states]
    assert before == [costs._state_cost(*s) for s in states]
    assert any(v > 0 for v in before)
    saved = costs.end_check
    try:
        costs.end_check = lambda q, carry, p: True  # "the input may end anywhere"
        assert [costs.state_cost(*s) for s in states] == [0] * len(states)
    finally:
        costs.end_check = saved
    assert [costs.state_cost(*s) for s in states] == before
