"""A budget mask is a function of its own request (compiled grammar, prefix, suffix,
``max_tokens``, tokens so far), never of what other constraints of the grammar did before.

The constraints of one compiled grammar share its runtime: hash-consed parser states and
Earley sets, and every memo keyed by them (the budget planner's plans, groups and costs).
Bounded tables forget entries; here they are made tiny so that they forget all the time. Each
request is first walked alone on a runtime of its own (the reference), then all of them are
replayed on one shared runtime, in two orders: every step's mask and plan length must be the
reference's.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramask
from gramask.runtime.budget.search import SEARCH_NODES
from gramask.runtime.core.parse_state import ES
from gramask.runtime.memo import InternTable

from ._support import budget_walk_digests, compiled, hf_tokenizer, tiny

# C-like, with %ignored line and block comments
GRAMMAR = r"""
start: func*
func: "int" NAME "(" [NAME ("," NAME)*] ")" block
block: "{" stmt* "}"
stmt: NAME "=" expr ";" | "return" expr ";" | "if" "(" expr ")" stmt | block
?expr: term (("+" | "*" | "<") term)*
?term: NAME | NUMBER | "(" expr ")" | NAME "[" expr "]"
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
LINE_COMMENT: /\/\/[^\n]*/
BLOCK_COMMENT: /\/\*(.|\n)*?\*\//
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
%ignore /[ \t\n]+/
"""
TOKENS = ["int", " int", "return", " return", "if", " if", "x", " x", "y", " y", "a", "ab",
          " a", "0", "1", " 1", "(", ")", "{", "}", " {", " }", "[", "]", ";", ",", " =", "=",
          " +", "+", "*", " *", "<", " <", " ", "\n", "\n    ", "//", " //", "/*", "*/", " */",
          " c", "();", ") {", "x;", " 0;\n"]
REQUESTS = [  # (prefix, suffix)
    ("int f(x) { // the sum\n  a = x", None),
    ("int g(", None),
    ("int f(x) {\n  /* counted", None),
    ("int f(x) { if (x < 1", None),
    ("int f(x) { a = ", " + 1; }"),
    ("int f(x) { /* c */ ", "return a; }"),
]
TINY = dict(interned_sets=16, parser_states=16, step_memo=16)


def _compiled(lexer: str) -> gramask.CompiledGrammar:
    return tiny(GRAMMAR, TOKENS, lexer=lexer)[0]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_budget_masks_do_not_depend_on_other_requests(lexer: str) -> None:
    cg = _compiled(lexer)
    runs = []
    for i, (prefix, suffix) in enumerate(REQUESTS):
        for budget in (6, 12, 30):
            # the reference: a runtime of its own (a new RuntimeLimits value builds one)
            own = gramask.RuntimeLimits(mask_cache=1000 + len(runs))
            taken, ref = budget_walk_digests(cg, prefix, suffix, budget, None,
                                             seed=7 * i + budget, limits=own)
            runs.append((prefix, suffix, budget, taken, ref))
    shared = gramask.RuntimeLimits(**TINY)
    for order in (runs, runs[::-1]):
        for prefix, suffix, budget, taken, ref in order:
            _, got = budget_walk_digests(cg, prefix, suffix, budget, taken, seed=0,
                                         limits=shared)
            assert got == ref, (prefix, suffix, budget)


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_hash_consing_stays_canonical_while_a_state_lives(lexer: str) -> None:
    """The root of it: a parser state (and its Earley set) that is still held somewhere is
    the one object of its configuration, however much the bounded tables turned over since;
    a second object would have another uid, and everything keyed or compared by uid would
    tell the two apart."""
    cg = _compiled(lexer)
    tiny = gramask.RuntimeLimits(interned_sets=8, parser_states=8, step_memo=8)
    prefix = "int f(x) { a = x"
    held = cg.constraint(prefix, limits=tiny)._history[-1]
    rnd = random.Random(0)
    for i in range(12):  # other requests: many more states than the tables hold
        c = cg.constraint(["int g(", "int h(x) { if (", ""][i % 3], limits=tiny)
        for _ in range(25):
            m = c.allowed()
            m[cg.vocab.eos_token_id] = False
            if not m.any():
                break
            c.advance(int(rnd.choice(np.flatnonzero(m))))
    again = cg.constraint(prefix, limits=tiny)._history[-1]
    assert again[2] is held[2]
    assert again[2][ES] is held[2][ES]


def test_intern_table_forgets_only_what_nothing_else_holds() -> None:
    t: InternTable[int, tuple[int, list[int]]] = InternTable(2)
    held = (0, [0])
    t.put(0, held)
    for i in range(1, 9):  # three turnovers
        t.put(i, (i, [i]))
    assert t.get(0) is held  # alive elsewhere: never forgotten
    assert t.get(1) is None and t.get(2) is None  # nothing held them: forgotten
    assert len(t) <= 2 * t.capacity + 1  # bounded by two generations and what is alive


def _plan(c: gramask.Constraint, s: tuple, search: int) -> tuple[int, ...] | None:
    """The planner's plan from ``s`` with a search of ``search`` states, or None."""
    try:
        return c._budget_planner().plan(s, c._walk, c._complete, c._view, search=search)
    except gramask.NoCompletionError:
        return None


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_plan_does_not_depend_on_the_plans_asked_before(lexer: str) -> None:
    """The planner is shared by every constraint of the grammar: a token's check (a small
    search) must answer what it answers on a fresh planner, also after a step's own plan (a
    full search) found a completion from the same state."""
    cg = _compiled(lexer)
    deeper = 0
    for k, (prefix, suffix) in enumerate(REQUESTS):
        c = cg.constraint(prefix, suffix=suffix, limits=gramask.RuntimeLimits(mask_cache=500 + k))
        st = c._history[-1]
        for t in range(len(TOKENS)):
            s = c._walk(st, cg.vocab.token_bytes(t))
            if isinstance(s, int):
                continue
            small = _plan(c, s, 0)
            full = _plan(c, s, SEARCH_NODES)
            deeper += small is None and full is not None
            assert _plan(c, s, 0) == small, (prefix, TOKENS[t])
    assert deeper  # (states where only the full search finds a plan: what this checks)


def test_the_strict_planner_does_not_take_the_lead_from_an_earlier_plan() -> None:
    """Fill-in-the-middle: where the quotient's own costs find no completion (the initial
    state here: the middle must open a block for the suffix's deeper line, the free end of
    the comment it continues is optimistic), the strict planner answers. That state's plan
    once made the strict planner lead every later plan of the request's planner, so a
    token's check (a small search) from the state after ``\\n`` found a plan after it and
    none on a fresh planner: a clone's ``shortest_completion`` or mask then depended on
    which state had been planned first. Every (state, search) must answer as on a fresh
    planner, in either order."""
    cg = compiled("python", "gpt2")
    prefix, suffix = "def f(x):\n    return x", " note\n        y = 1\n"
    encode = hf_tokenizer("gpt2")

    def asks(c: gramask.Constraint) -> list[tuple[tuple, int]]:
        st = c._history[-1]
        after = st
        for t in encode("\n"):
            after = c._walk(after, cg.vocab.token_bytes(t))
        assert not isinstance(after, int)
        return [(st, SEARCH_NODES), (after, 16), (after, SEARCH_NODES), (st, 16)]

    fresh = []
    for i in range(4):
        c = cg.constraint(prefix, suffix=suffix)
        s, n = asks(c)[i]
        fresh.append(_plan(c, s, n))
    assert fresh[0] is not None and fresh[2] is not None  # (the strict planner's, the own)
    for order in (range(4), reversed(range(4))):
        c = cg.constraint(prefix, suffix=suffix)
        todo = asks(c)
        for i in order:
            assert _plan(c, *todo[i]) == fresh[i], i
