"""lark's ``common.ESCAPED_STRING`` at the end of a longer terminal (``"b" ESCAPED_STRING``,
``ESCAPED_STRING+``) reads as lark reads it; where text must follow it the terminal stays a
refused lookaround, named. Oracle: lark's LALR parser, both lexers."""

from __future__ import annotations

import functools
import itertools

import lark
import pytest

import gramask
from gramask.frontends.lark_equivalents import regular_equivalent

from ._support import is_program, lark_accepts

GRAMMAR = r"""
start: item+
item: BSTR | MANY | HEX | NAME
BSTR: ("b" | "rb") ESCAPED_STRING
MANY: "@" ESCAPED_STRING+
HEX: "0x" (ESCAPED_STRING)
NAME: /[a-z]+/
%import common.ESCAPED_STRING
%ignore " "
"""

PIECES = ['b"', "rb", '"', "a", "\\", '\\"', "@", "0x", " ", "b", "x", "\n", '""']


@functools.cache
def _compiled(lexer: str) -> gramask.CompiledGrammar:
    g = gramask.Grammar.from_lark(GRAMMAR, lexer=lexer)
    return gramask.compile(g, gramask.Vocabulary.bundled("gpt2"), progress=False)


@functools.cache
def _lark(lexer: str) -> lark.Lark:
    return lark.Lark(GRAMMAR, parser="lalr", lexer=lexer)


def _texts() -> list[str]:
    """Every text of up to four pieces: quotes, escapes and prefixes side by side."""
    out = ["".join(p) for n in range(1, 5) for p in itertools.product(PIECES, repeat=n)]
    return sorted(set(out))[::7]  # a spread sample of ~3,000


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_escaped_string_ending_a_terminal_agrees_with_lark(lexer: str) -> None:
    cg, p = _compiled(lexer), _lark(lexer)
    wrong = [t for t in _texts() if is_program(cg, t) != lark_accepts(p, t)]
    assert not wrong, wrong[:10]


def test_text_after_an_escaped_string_stays_a_named_refusal() -> None:
    text = 'start: KEY\nKEY: ESCAPED_STRING ":"\n%import common.ESCAPED_STRING\n'
    with pytest.raises(gramask.GrammarError, match="KEY"):
        gramask.Grammar.from_lark(text)


@pytest.mark.parametrize("regex, replaced", [
    ('0x".*?(?<!\\\\)(\\\\\\\\)*?"', True),
    ('(?:".*?(?<!\\\\)(\\\\\\\\)*?")+', True),
    ('(?:b|rb)".*?(?<!\\\\)(\\\\\\\\)*?"', True),
    ('".*?(?<!\\\\)(\\\\\\\\)*?":', False),  # text follows: the lazy body may pass quotes
    ('\\".*?(?<!\\\\)(\\\\\\\\)*?"', False),  # an escaped quote is no string's start
])
def test_only_an_escaped_string_nothing_follows_is_replaced(regex: str, replaced: bool) -> None:
    assert (regular_equivalent(regex, "") != regex) == replaced
    assert regular_equivalent(regex, "s") == regex or regex == '".*?(?<!\\\\)(\\\\\\\\)*?"'
