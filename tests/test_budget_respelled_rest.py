"""A budget's cheap check also spells the rest of the step's plan after the lexer's
separator, where that takes fewer tokens (a blank merges with the word after it: ``" tru"``
is one token, ``"tru"`` two). Found on a held-out TOML-like grammar at k = 0: after
``auto`` the true ``" ="`` (then ``" fals"``, the suffix holding the ``e``) was forbidden
with 2 tokens left, the plan being ``"=tru"``: its rest ``"tru"`` spelled in 2."""

from __future__ import annotations

import pytest

import gramask

from ._support import follow_along_the_masks

GRAMMAR = r"""
start: (NAME "=" value _NL)*
?value: BOOL | INT
BOOL.2: "true" | "false"
INT: /[0-9]+/
NAME: /[a-z]+/
_NL: "\n"
%ignore " "
"""
TOKENS = [b"k", b" =", b"=", b"=t", b"ru", b" tru", b" fals", b"t", b"r", b"u", b"e", b"\n",
          b" ", b"1", b"</s>"]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_the_plan_rest_after_a_blank_is_tried(lexer: str) -> None:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=lexer), vocab, cache=False,
                         progress=False)
    middle = [b" =", b" tru"]
    c = cg.constraint("k", suffix="e\n", max_tokens=len(middle))  # k = 0
    follow_along_the_masks(c, [TOKENS.index(t) for t in middle])
