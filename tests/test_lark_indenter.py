"""Indentation grammars written for lark's ``Indenter``: a grammar that ``%declare``s
``_INDENT``/``_DEDENT`` gets indentation whether its newline terminal is ``_NEWLINE``
(``PythonIndenter``) or ``_NL`` (the ``TreeIndenter`` of lark's indented-tree example).
Oracle: lark's LALR parser with that indenter. As lark's indenter, gramask reads an indented
first line's blanks as blanks and adds no newline at the end of input for these grammars (the
bundled Python grammar, and ``indentation=True``, read both ends as CPython does: an indented
first line is an error, the end of input closes the last line; docs/semantics.md)."""

from __future__ import annotations

import functools
from typing import ClassVar

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
    OPEN_PAREN_types: ClassVar[list[str]] = []
    CLOSE_PAREN_types: ClassVar[list[str]] = []
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
    "  a\n  b\n",           # the first line's blanks are blanks
    " \t a\n    b\n",
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
@pytest.mark.parametrize("text", ["a", "a\n  b", "a\n  b\n  ", "a\n  b\n"])
def test_the_end_of_input_is_larks(lexer: str, text: str) -> None:
    assert is_program(_compiled(lexer), text) == lark_accepts(_lark(), text)


def test_cpythons_reading_closes_the_last_line() -> None:
    g = gramask.Grammar.from_lark(TREE, indentation=True)
    assert g.indentation is not None and g.indentation.cpython_ends
    cg = gramask.compile(g, gramask.Vocabulary.bundled("gpt2"), progress=False)
    assert is_program(cg, "a\n  b")
    assert not is_program(cg, "  a\n")


def test_a_suffix_must_end_its_last_line() -> None:
    cg = _compiled("basic")
    with pytest.raises(gramask.InvalidSuffixError, match="end the suffix with a newline"):
        cg.constraint("a\n", suffix="  b")
    assert cg.constraint("a\n", suffix="  b\n").is_complete()  # "a\n" + "" + "  b\n"
    for prefix, suffix in [("a\n  b", "  c\n"), ("a\n  b\n    c", "d\n"), ("a\n", "    c\n")]:
        middle = cg.constraint(prefix, suffix=suffix).shortest_completion().text
        assert lark_accepts(_lark(), prefix + middle + suffix), (prefix, middle, suffix)
    assert cg.constraint("a", suffix="").shortest_completion().text == "\n"


def test_a_saved_artifact_keeps_larks_reading(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "tree.gmask"
    _compiled("basic").save(path)
    loaded = gramask.CompiledGrammar.load(path)
    assert loaded.grammar == _compiled("basic").grammar
    assert not loaded.grammar.indentation.cpython_ends  # type: ignore[union-attr]
    assert not loaded.constraint("a\n  b").is_complete()
    assert loaded.constraint("a\n  b\n").is_complete()


# lark's Indenter counts brackets only to drop newlines inside them: the input may end with a
# bracket open (it checks no bracket level at the end), so where the grammar takes an unpaired
# ``[`` at the end, lark's parser takes ``x\nx[``. gramask's end of input asks for bracket
# depth 0 under both readings (CPython's rule). Found by tools/fim_fuzz.py --indent 1 --seed 65
# (there as a dead end the prefix constraint shares); open: the fill-in-the-middle branches and
# budgets assume depth 0 at the end too.
UNPAIRED = r"""
start: stmt* "x" LSQB
stmt: "x" _NEWLINE | "if" ":" _NEWLINE _INDENT stmt+ _DEDENT
LSQB: "["
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""


class BracketIndenter(Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types: ClassVar[list[str]] = ["LSQB"]
    CLOSE_PAREN_types: ClassVar[list[str]] = ["RSQB"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


@pytest.mark.xfail(strict=True, reason="documented gap: the end of input inside brackets under "
                   "lark's Indenter reading (docs/semantics.md)")
def test_input_may_end_inside_brackets_as_lark_s_indenter_lets_it() -> None:
    oracle = lark.Lark(UNPAIRED, parser="lalr", postlex=BracketIndenter())
    text = "x\nx["
    assert lark_accepts(oracle, text)
    g = gramask.Grammar.from_lark(UNPAIRED)
    cg = gramask.compile(g, gramask.Vocabulary.from_tokens([*"x[\n", "</s>"], eos_token_id=3),
                         cache=False)
    assert cg.constraint(text).is_complete()
