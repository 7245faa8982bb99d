"""A token that leaves the step plan's route is checked by rejoining it before any plan search.

Found on held-out Lua-like and C-like grammars (fill-in-the-middle, budget = true length + 4):
a step has hundreds of token groups and at most ``MAX_PLANS`` plan searches, each of a few
states. The true ``" >="`` (an operand needed before the plan's ``then``) and ``"(t"`` (a
``)`` needed) came after every plan was spent, and even a fresh search of 64 states found
nothing (the costs, optimistic with a suffix, rank dead ends first). Now, where a group's
search finds nothing or the plans are spent, a detour of one or two of the cheapest chunks,
then the plan's text (or its text from one of its next lexemes on), is walked (the C-like
grammar's ``"(int"`` where the plan was ``"(){"``: ``" a){"``); and a token that skips
ahead on the plan's route (``" then"`` against ``"a then end"``) rejoins it after its bytes.
Both spend no plan: with ``MAX_PLANS = 0`` (every plan of the step spent) the true middle
must still pass, and every completion a check admits with is walked (the generation ends
complete)."""

from __future__ import annotations

import pytest

import gramask

from ._support import follow_along_the_masks

GRAMMAR = r"""
start: "if" exp "then" stat* "end"
stat: NAME "=" exp
?exp: NAME | exp ">=" exp | "(" exp ")"
NAME: /[a-z]+/
%ignore " "
"""
TOKENS = ["if", " x", "x", " >=", ">=", " y", "y", "a", " then", "then", " end", "end", "(",
          ")", " (", " z", " =", "=", " ", "</s>"]
CASES = [  # (middle tokens, suffix)
    ([" >=", " y", " then"], " end"),
    ([" >=", " (", "y", ")", " then"], " end"),
    ([" >=", " y", " then", " end"], None),
    ([" >=", " (", "y", ")", " then", " end"], None),
]


@pytest.fixture(scope="module", params=["basic", "contextual"])
def compiled(request: pytest.FixtureRequest) -> gramask.CompiledGrammar:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    return gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=request.param), vocab,
                           cache=False, progress=False)


@pytest.mark.parametrize(("middle", "suffix"), CASES)
def test_true_middle_passes_with_every_plan_spent(compiled: gramask.CompiledGrammar,
                                                  middle: list[str],
                                                  suffix: str | None) -> None:
    cg = compiled
    for k in range(5):
        c = cg.constraint("if x", suffix=suffix, max_tokens=len(middle) + k)
        c.MAX_PLANS = 0  # as if the step's larger groups spent them
        follow_along_the_masks(c, [TOKENS.index(t) for t in middle])


C_GRAMMAR = r"""
start: func*
func: "int" NAME "(" (param ("," param)*)? ")" "{" "}"
param: "int" NAME
NAME: /[a-z]+/
%ignore " "
"""
C_TOKENS = ["int", " f", " x", "(int", "(", ")", " {", "{", "}", "()", "(){", " ", "a", " a",
            "</s>"]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_keyword_token_rejoins_the_plan_after_its_lexeme(lexer: str) -> None:
    """``"(int"`` after ``int f`` where the plan is ``"(){"`` (then the suffix's ``}``): the
    keyword needs a name before the plan's ``)`` (on a held-out C-like grammar the true
    ``"(int"`` came after the step's plans were spent, and the group's proven bound failed:
    its plan's first byte continued the keyword)."""
    vocab = gramask.Vocabulary.from_tokens(C_TOKENS, eos_token_id=len(C_TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(C_GRAMMAR, lexer=lexer), vocab,
                         cache=False, progress=False)
    middle = ["(int", " x", ")", " {"]
    for k in range(5):
        c = cg.constraint("int f", suffix="}", max_tokens=len(middle) + k)
        c.MAX_PLANS = 0  # as if the step's larger groups spent them
        follow_along_the_masks(c, [C_TOKENS.index(t) for t in middle])
