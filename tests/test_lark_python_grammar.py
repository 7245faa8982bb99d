"""lark's own ``python.lark`` (shipped in the lark package) loads and reads Python as lark does.

Its STRING, LONG_STRING and DEC_NUMBER use lookarounds, which no finite automaton has; gramask
reads them as regexes without (``gramask.frontends.lark_equivalents``, lazy repeats ending at
the first closing quote), and its COMMENT, which ``_NEWLINE`` always wins in the basic mode, is
ignored: a warning, not an error. Oracle: lark's LALR parser with its ``PythonIndenter``."""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path

import lark
import pytest
from lark.indenter import PythonIndenter

import gramask

from ._support import is_program, lark_accepts

GRAMMAR = Path(lark.__file__).parent / "grammars" / "python.lark"

SNIPPETS = [
    "x = 1\n",
    'x = "a\\"b" + \'c\\\'d\'\n',
    's = """a\n"b" ""\nc""" + \'\'\'x\'\'\'\n',
    "s = '''a'''''\n",
    'r = rb"\\\\" + Rb\'x\' + f"{y}"\n',
    "n = 0 + 00 + 0_0 + 1_000 + 0x1f + 1.5e3j\n",
    "n = 01\n",
    "n = 0 1\n",
    "def f(x):\n    # c\n    return x  # d\n# e\n",
    'x = "a\nb"\n',
    "x = 'a' 'b\n",
    "if x:\n  y\n else:\n  z\n",
]


@functools.cache
def _compiled(lexer: str) -> gramask.CompiledGrammar:
    g = gramask.Grammar.from_lark(GRAMMAR.read_text(), start="file_input", lexer=lexer)
    return gramask.compile(g, gramask.Vocabulary.bundled("gpt2"), progress=False)


@functools.cache
def _lark() -> lark.Lark:
    return lark.Lark(GRAMMAR.read_text(), start="file_input", parser="lalr",
                     postlex=PythonIndenter())


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize("text", SNIPPETS)
def test_snippets_agree_with_lark(lexer: str, text: str) -> None:
    assert is_program(_compiled(lexer), text) == lark_accepts(_lark(), text)


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_stdlib_file_isis_program(lexer: str) -> None:
    text = (Path(sysconfig.get_paths()["stdlib"]) / "colorsys.py").read_text()
    assert lark_accepts(_lark(), text)
    assert is_program(_compiled(lexer), text)
