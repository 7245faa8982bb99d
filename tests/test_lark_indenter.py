"""Indentation grammars written for lark's ``Indenter``: a grammar that ``%declare``s
``_INDENT``/``_DEDENT`` gets indentation whether its newline terminal is ``_NEWLINE``
(``PythonIndenter``) or ``_NL`` (the ``TreeIndenter`` of lark's indented-tree example).
Oracle: lark's LALR parser with that indenter, on texts that end with a newline (at the end of
input gramask closes the last line, as CPython does, where lark's indenter needs the newline:
docs/semantics.md)."""

from __future__ import annotations

import functools

import lark
import pytest
from lark.indenter import Indenter

import gramask
from tests._support import is_program, lark_accepts

# lark's examples/indented_tree.py
TREE = r"""
?start: _NL* tree
tree: NAME _NL [_INDENT tree+ _DEDENT]
%import common.CNAME -> NAME
%import common.WS_INLINE
%declare _INDENT _DEDENT
%ignore WS_INLINE
_NL: /(\r?\n[\t ]*)+/
"""


class TreeIndenter(Indenter):
    NL_type = "_NL"
    OPEN_PAREN_types: list[str] = []
    CLOSE_PAREN_types: list[str] = []
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


TEXTS = [
    "a\n",
    "a\n  b\n  c\n",
    "a\n  b\n    c\n  d\n",
    "a\n  b\n    c\n      d\ne\n",
    "\n\na\n\tb\n\n",
    "a\n  b\n c\n",        # a dedent to a level never opened
    "a\n  b\n      c\n   d\n",
    "a\n\n  b\n",
    "a\n  b\n  \n  c\n",    # a blank line with spaces
    "a b\n",
    "\n  a\n",
]


@functools.cache
def _compiled(lexer: str) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.Grammar.from_lark(TREE, lexer=lexer),
                           gramask.Vocabulary.bundled("gpt2"), progress=False)


@functools.cache
def _lark() -> lark.Lark:
    return lark.Lark(TREE, parser="lalr", postlex=TreeIndenter())


def test_an_nl_newline_terminal_turns_indentation_on() -> None:
    g = gramask.Grammar.from_lark(TREE)
    assert g.indentation is not None and g.indentation.newline == "_NL"
    with pytest.warns(gramask.GrammarWarning, match="nothing produces: _DEDENT, _INDENT"):
        assert gramask.Grammar.from_lark(TREE, indentation=False).indentation is None


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize("text", TEXTS)
def test_trees_agree_with_lark(lexer: str, text: str) -> None:
    assert is_program(_compiled(lexer), text) == lark_accepts(_lark(), text)


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_the_ends_of_the_input_are_cpythons(lexer: str) -> None:
    # the documented differences: lark's indenter adds no newline at the end of input, and
    # reads the first line's indentation as ignored blanks
    assert is_program(_compiled(lexer), "a\n  b")
    assert not lark_accepts(_lark(), "a\n  b")
    assert not is_program(_compiled(lexer), "  a\n")
    assert lark_accepts(_lark(), "  a\n")
