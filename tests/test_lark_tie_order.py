"""In the basic mode a tie between regexes (the same lexeme matched by two terminals of the same
priority) goes the way lark's basic lexer sends it: a grammar loaded from Lark text keeps its
terminals in the order lark's lexer tries them (priority, the widest match, the longest
pattern, the name), and gramask's tie goes to the first. Before, it went to grammar order:
``9`` was ``HEXDIGIT`` where lark reads ``NUMBER`` (found by tools/lark_fuzz.py). Oracle: lark's
Earley parser with its basic lexer."""

from __future__ import annotations

import functools

import lark
import pytest

import gramask
from tests._support import is_program, lark_accepts

GRAMMARS = [
    'start: a | b\na: HEXDIGIT "x"\nb: NUMBER "y"\n%import common.HEXDIGIT\n%import common.NUMBER\n',
    # the wider match first (B is defined first, A wins "a")
    'start: a | b\na: B "x"\nb: A "y"\nB: /[0-9a-c]/\nA: /[a-z]+/\n',
    # the same width: the longer pattern first (LONG wins "3")
    'start: a | b\na: LONG "x"\nb: SHORT "y"\nSHORT: /[0-9]/\nLONG: /[0-5]|z/\n',
]
TEXTS = ["9x", "9y", "ax", "ay", "0x", "zy", "3x", "3y", "7y", "zx"]


@functools.cache
def _pair(text: str) -> tuple[gramask.CompiledGrammar, lark.Lark]:
    cg = gramask.compile(gramask.Grammar.from_lark(text, lexer="basic"),
                         gramask.Vocabulary.bundled("gpt2"), progress=False)
    return cg, lark.Lark(text, parser="earley", lexer="basic")


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_ties_go_the_way_larks_go(grammar: str) -> None:
    cg, lk = _pair(grammar)
    for text in TEXTS:
        assert is_program(cg, text) == lark_accepts(lk, text), text
