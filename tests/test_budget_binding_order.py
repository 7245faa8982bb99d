"""Where a fill-in-the-middle budget binds (less than 4 tokens of room beyond the step's
plan), the contextual mode's capped plan searches go first to the groups whose cost says
they fit, not to the largest groups. Found on a held-out C-like grammar at k = 0: ``' \\``
(a char literal the suffix closes, 1 token needed of 1 left) came after larger groups whose
plans all ran 2 or 3 tokens long, and no plan was left for it."""

from __future__ import annotations

import pytest

import gramask
from gramask.runtime.fim.contextual import ContextualFimConstraint

from ._support import follow_along_the_masks

GRAMMAR = r"""
start: "let" NAME "=" expr ";"
?expr: atom | expr "-" atom
?atom: NUM | NAME | NAME "(" expr ")" | "(" expr ")"
NUM: /[0-9]+/
NAME: /[a-z]+/
%ignore " "
"""
# the largest group opens three parentheses (3 tokens to close them: over 2 left); the
# true token "f(" is a group of one (2 tokens to close: fits)
TOKENS = [b"let", b" ", b"a", b"=", b"f(", *(b"(((%d" % i for i in range(1, 10)), b"(", b"0", b"1",
          b")", b";", b"</s>"]


def test_a_small_group_that_fits_gets_a_plan_before_large_ones_that_do_not(
        monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer="contextual"), vocab,
                         cache=False, progress=False)
    monkeypatch.setattr(ContextualFimConstraint, "MAX_PLANS", 1)  # one plan search a step
    middle = [b"f(", b"1", b")"]
    c = cg.constraint("let a = ", suffix=";", max_tokens=len(middle))  # k = 0
    assert isinstance(c, ContextualFimConstraint)
    m = c.allowed()
    assert not m[TOKENS.index(b"(((1")]  # ")))" does not fit in 2
    assert m[TOKENS.index(b"f(")]
    follow_along_the_masks(c, [TOKENS.index(t) for t in middle])
