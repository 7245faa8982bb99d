"""Budget tables shared by every constraint of a compiled grammar (the planner's cost tables,
its plans and the searches' expansions, all built on first use) must not make a mask depend on
which requests ran before: each request walked on a freshly compiled grammar (cold tables) and
replayed on one grammar kept warm by all the others, in two orders, gives the same masks and
plan lengths, with the runtime's default limits (the tables keep what they learnt)."""

from __future__ import annotations

import pytest

from ._support import budget_walk_digests, tiny

GRAMMAR = r"""
start: item*
item: "def" NAME "(" [NAME ("," NAME)*] ")" body
body: "{" stmt* "}"
stmt: NAME "=" expr ";" | "out" expr ";" | "when" expr body | body
?expr: atom (("+" | "-" | "==") atom)*
?atom: NAME | NUMBER | STRING | "(" expr ")" | NAME "(" [expr ("," expr)*] ")"
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
STRING: /"[^"\n]*"/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore /[ \t\n]+/
"""
TOKENS = ["def", " def", "out", " out", "when", " when", "a", " a", "b", " b", "ab", "f",
          " f", "0", "1", " 12", "(", ")", "{", "}", " {", " }", ";", ",", " =", "=", " +",
          "+", "-", " ==", "\"", "\"x", " \"", "#", " #", " note", "\n", "\n  ", " ", "();",
          ") {", "a;", " 0;\n", "x\""]
REQUESTS = [  # (prefix, suffix)
    ("def f(a) { # sum\n  b = a", None),
    ("def g(", None),
    ("def f(a) { when a == 1 { out \"x", None),
    ("def f(a) { b = f(a, ", None),
    ("def f(a) { b = ", " + 1; }"),
    ("def f(a) { # c\n ", "out b; }"),
]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_warm_shared_tables_give_the_masks_of_a_fresh_grammar(lexer: str) -> None:
    runs = []
    for i, (prefix, suffix) in enumerate(REQUESTS):
        for budget in (5, 9, 24):
            fresh = tiny(GRAMMAR, TOKENS, lexer=lexer)[0]  # cold: a grammar of its own
            taken, ref = budget_walk_digests(fresh, prefix, suffix, budget, None,
                                             seed=11 * i + budget)
            assert ref and not ref[-1].startswith("forbidden")
            runs.append((prefix, suffix, budget, taken, ref))
    warm = tiny(GRAMMAR, TOKENS, lexer=lexer)[0]
    for order in (runs, runs[::-1]):
        for prefix, suffix, budget, taken, ref in order:
            _, got = budget_walk_digests(warm, prefix, suffix, budget, taken, seed=0)
            assert got == ref, (prefix, suffix, budget)
    # the shared tables were in use: the grammar's cost tables and plans were kept
    planner = warm._planner(warm._runtime())
    assert planner.grammar._sym_costs and len(planner.search._plans)
