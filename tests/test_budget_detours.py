"""A budget's cheap check admits a token that takes a detour and then rejoins the step's plan
where the token ends (``"++)"`` against the plan ``")a"``: the rest is ``"a"``), not only
where their first bytes agree. Found on a held-out C-like grammar: ``i++)`` was forbidden in
``for (...; i++)`` with 12 tokens left and 8 needed (its group was past the verifier's cap,
where only the cheap checks run)."""

from __future__ import annotations

import pytest

import gramask
from gramask.runtime.fim.constraint import FimConstraint

from ._support import follow_along_the_masks

GRAMMAR = 'start: "f" "(" NAME "++"? ")" NAME ";"\nNAME: /[a-z]/\n'
TOKENS = [b"f", b"(", b"i", b")", b"a", b";", b"++)", b"+", b"</s>"]


def test_a_detour_that_rejoins_the_plan_is_admitted(monkeypatch: pytest.MonkeyPatch) -> None:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer="basic"), vocab, cache=False,
                         progress=False)
    monkeypatch.setattr(FimConstraint, "MAX_GROUPS", 0)  # every group gets the cheap checks
    monkeypatch.setattr(FimConstraint, "BOUND_PLANS", 0)  # no proven bounds either
    c = cg.constraint("f(i", suffix=";", max_tokens=2)
    assert c.shortest_completion().text == ")a"
    detour = TOKENS.index(b"++)")
    follow_along_the_masks(c, [detour, TOKENS.index(b"a")])
