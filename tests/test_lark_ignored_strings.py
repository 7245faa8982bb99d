"""A string terminal whose whole text an ``%ignore``d regex matches is never lexed by lark
(``gramask/frontends/lark_ignored.py``): gramask drops it too, in both lexer modes, with lark
as the oracle. Found on a public C grammar whose comment rule ends with ``"\\n"`` beside
``%ignore /[ \\t\\n]+/`` (``tools/heldout_lark_check.py``): the basic mode refused every
statement followed by a lone newline, the contextual one took comments lark cannot parse."""

from __future__ import annotations

import lark
import pytest

import gramask
from tests._support import is_program, lark_accepts, tiny

SWALLOWED = r"""
start: (NAME ";")* ["!" "\n"]
NAME: /[a-z]+/
WS: /[ \n]+/
%ignore WS
"""
CHARS = [*"ab;! ", "\n", ";\n"]
TEXTS = ["a;\n", "a;\nb;", "a; b;\n\n", "a;!\n", "a; !\n", "a;!", "", "\n"]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_string_the_ignored_regex_matches_is_never_lexed(lexer: str) -> None:
    with pytest.warns(gramask.GrammarWarning, match=r"NEWLINE \(the ignored WS"):
        cg, _ = tiny(SWALLOWED, CHARS, lexer=lexer)
    oracle = lark.Lark(SWALLOWED, parser="lalr", lexer=lexer)
    for text in TEXTS:
        assert is_program(cg, text) == lark_accepts(oracle, text), text
    # the rule that needs the string is gone: no mask leads into it
    assert not cg.constraint("a;").allowed()[CHARS.index("!")]


KEPT = r"""
start: (NAME ";")* ["!" NL]
NAME: /[a-z]+/
NL.2: "\n"
WS: /[ \n]+/
%ignore WS
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_string_of_another_priority_is_kept(lexer: str) -> None:
    cg, _ = tiny(KEPT, CHARS, lexer=lexer)
    oracle = lark.Lark(KEPT, parser="lalr", lexer=lexer)
    for text in ["a;!\n", "a; !\n", "a;!"]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text
