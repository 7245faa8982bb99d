"""A fill-in-the-middle budget's groups past the verifier's cap ride on the plan an earlier
group of their parser vertex shared: the lexeme in progress finished by its witness, then the
shared plan, where its first token reaches the state it reached when it was walked. Found on
a held-out Lua-like grammar: ``(n`` in ``fib(n - 2)`` was forbidden with 15 tokens left and
11 needed (``n`` a keyword's prefix: a lexer state, and a group, of its own, past the cap,
where only the cheap checks ran, and no pooled completion walked from it)."""

from __future__ import annotations

import pytest

import gramask
from gramask.runtime.fim.constraint import FimConstraint
from gramask.runtime.fim.contextual import ContextualFimConstraint

# a calculator language: a number may start with its point (".5"), a state no whole
# number's group shares; a whole number may go on with its point, a finished ".5" may not
GRAMMAR = r"""
start: "let" NAME "=" expr ";"
?expr: atom | expr "-" atom
?atom: NUM | NAME | NAME "(" expr ")"
NUM: /[0-9]+(\.[0-9]+)?|\.[0-9]+/
NAME: /[a-z]+/
%ignore " "
"""
TOKENS = [b"let", b" ", b"a", b"=", b"f", b"(", *(b"(%d" % i for i in range(1, 10)), b"(.", b"0",
          b"1", b"5", b")", b" -", b";", b"</s>"]


@pytest.mark.parametrize("lexer, cls", [("basic", FimConstraint),
                                         ("contextual", ContextualFimConstraint)])
def test_a_group_past_the_cap_uses_its_vertex_shared_plan(
        monkeypatch: pytest.MonkeyPatch, lexer: str, cls: type) -> None:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=lexer), vocab, cache=False,
                         progress=False)
    # one group gets the full check ("(1" to "(9", the largest); the rest the cheap ones
    monkeypatch.setattr(cls, "MAX_GROUPS", 1)
    monkeypatch.setattr(cls, "BOUND_PLANS", 0, raising=False)  # no proven group bounds
    middle = [b"(.", b"5", b" -", b"1", b")"]
    c = cg.constraint("let a = f", suffix=";", max_tokens=len(middle) + 4)
    assert isinstance(c, cls)
    m = c.allowed()
    assert m[TOKENS.index(b"(1")]
    assert m[TOKENS.index(b"(.")]  # ".0" then the "(1" group's ")": 2 tokens of 8 left
    for t in middle:
        assert c.allowed()[TOKENS.index(t)], t
        c.advance(TOKENS.index(t))
    assert c.is_complete()
