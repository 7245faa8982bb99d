"""Bundled Lark grammars (``*.lark`` files shipped inside this package).

Every bundled grammar satisfies gramask's lexer contract: each terminal is a plain regular
language (no lookaround, no backreference), terminals lex correctly with a greedy
all-terminals-at-once lexer (priority, then string literal over regex), the start rule is
named ``start``, and the grammar loads with ``Lark(text, parser="lalr", lexer="basic")``
without conflicts (for python.lark pass :func:`lark_text`: lark's own collision check takes
minutes on its generated Unicode identifier classes). ``tests/test_grammar_bundled.py`` checks all of this.
"""

from __future__ import annotations

import pathlib
import re
import sys
from collections.abc import Callable
from importlib import resources
from importlib.resources.abc import Traversable
from typing import TYPE_CHECKING

from ..errors import GrammarError

if TYPE_CHECKING:
    from ..grammar import Grammar

__all__ = ["for_python", "lark_text", "lexer_mode", "load", "load_spec", "names", "path", "start_rule", "text"]

_SUFFIX = ".lark"


def _files() -> Traversable:
    return resources.files(__name__)


def names() -> list[str]:
    """The bundled grammar names (``.lark`` files in this package), sorted."""
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in _files().iterdir()
        if entry.name.endswith(_SUFFIX) and entry.is_file()
    )


def _check(name: str) -> str:
    known = names()
    if not isinstance(name, str) or name not in known:
        raise GrammarError(
            f"unknown bundled grammar {name!r}; known grammars: {', '.join(known)}", name=str(name)
        )
    return name


def path(name: str) -> pathlib.Path:
    """Filesystem path of bundled grammar ``name`` (e.g. ``"json"``)."""
    return pathlib.Path(str(_files().joinpath(_check(name) + _SUFFIX)))


def text(name: str) -> str:
    """Source text of bundled grammar ``name`` (python's for the running interpreter)."""
    source = str(_files().joinpath(_check(name) + _SUFFIX).read_text(encoding="utf-8"))
    return for_python(source, sys.version_info[:2]) if name == "python" else source


# python.lark is written for the newest syntax it covers; what an older interpreter's ast.parse
# refuses is cut out for it, so the grammar is exact against the interpreter that runs it.
_TYPE_PARAM = re.compile(r"^type_param:.*\n(?:^ +\|.*\n)*", re.M)
_DEFAULT = re.compile(r' \["=" (?:test|\(test \| star_expr\))\]')


def _cut(_m: re.Match[str]) -> str:
    return ""


def _without_defaults(m: re.Match[str]) -> str:
    return _DEFAULT.sub("", m.group())


# (the version the syntax arrived in, where it is written, what is left of it, how many places)
_NEWER_SYNTAX: list[tuple[tuple[int, int], re.Pattern[str], Callable[[re.Match[str]], str], int]]
_NEWER_SYNTAX = [
    ((3, 13), _TYPE_PARAM, _without_defaults, 1),  # PEP 696 type parameter defaults
    # PEP 695 type parameter lists and `type X = ...`
    ((3, 12), re.compile(r" \[type_params\]"), _cut, 3),
    ((3, 12), re.compile(r" \| type_alias(?=\n)"), _cut, 1),
    ((3, 12), re.compile(r"^type_alias:.*\n", re.M), _cut, 1),
    ((3, 12), re.compile(r"^type_params:.*\n", re.M), _cut, 1),
    ((3, 12), _TYPE_PARAM, _cut, 1),
]


def for_python(source: str, version: tuple[int, int]) -> str:
    """python.lark's ``source`` without the syntax newer than ``version``."""
    for since, pattern, replace, count in _NEWER_SYNTAX:
        if version < since:
            source, n = pattern.subn(replace, source)
            if n != count:  # python.lark changed under these patterns: say so, do not drift
                raise GrammarError(f"python.lark: {pattern.pattern!r} cut {n} times, not {count}")
    return source


# lark's basic and contextual lexers check terminal collisions with interegular, which lists every
# character of a class: minutes for python.lark's generated Unicode identifier classes.
_GENERATED = re.compile(r"^// BEGIN NAME .*?^// END NAME\n", re.M | re.S)
_NAME_FOR_LARK = "NAME: /[^\\x00-@\\[-\\^`{-\\x7f][^\\x00-\\/:-@\\[-\\^`{-\\x7f]*/\n"


def lark_text(name: str) -> str:
    """Text of bundled grammar ``name`` for building lark's own LALR parser (tests, tools).

    The same rules and terminals, except that python.lark's generated identifier terminal is
    replaced by ASCII letters, digits, ``_`` and every non-ASCII character (its superset), so
    that lark's collision check stays fast; parse trees are the same for valid identifiers.
    """
    return _GENERATED.sub(lambda _m: _NAME_FOR_LARK, text(name))


# Start rule of each bundled grammar whose start rule is not ``start``.
_START = {"python": "file_input"}


# Lexer mode of each bundled grammar (docs/semantics.md says why): the languages whose own
# compilers lex context-free with reserved keywords are "basic"; so is JSON, whose terminals
# never compete for a text (both modes lex it identically, and basic uses the precomputed
# tables only). Any other grammar, user grammars included, defaults to "contextual".
_LEXER = {"python": "basic", "c": "basic", "json": "basic", "sql": "basic"}


# Bundled grammars whose languages reserve their keywords (CPython's tokenizer, C compilers):
# the contextual mode keeps them reserved too (gramask.compiler.keywords). SQL's keywords are
# mostly not reserved; JSON has none.
_RESERVED = frozenset({"python", "c"})


# Bundled grammars with Python's indentation, read as CPython's tokenizer reads it.
_CPYTHON_LINES = frozenset({"python"})


def lexer_mode(name: str) -> str:
    """The lexer mode bundled grammar ``name`` declares."""
    return _LEXER.get(_check(name), "contextual")


def start_rule(name: str) -> str:
    """The start rule of bundled grammar ``name``."""
    return _START.get(_check(name), "start")


def load(name: str, start: str | None = None, lexer: str | None = None) -> Grammar:
    """Bundled grammar ``name`` as a :class:`gramask.Grammar` (``lexer`` overrides its mode).

    Raises
    ------
    GrammarError
        Unknown name (a ``ValueError`` too); the message lists the bundled grammars.
    """
    from dataclasses import replace

    from ..grammar import Grammar

    mode = lexer or lexer_mode(name)  # (the basic mode reserves keywords by itself)
    # The basic mode takes the longest lexeme here, not lark's terminal order: these grammars
    # are read as CPython's tokenizer and C compilers read them (maximal munch), and in lark's
    # order python.lark's generated NAME (the longest pattern text) would take the prefix of
    # b"...", f'...' (c, sql and json lex alike either way; docs/semantics.md)
    return replace(Grammar.from_lark(
        text(name), start=start or start_rule(name), source=f"{name}.lark",
        lexer=mode, reserved_keywords=mode == "contextual" and name in _RESERVED,
        keywords_win=False,  # python and c reserve theirs; sql's stay soft (see _RESERVED)
        # both ends of the input as CPython reads them (lark's Indenter, the default for user
        # grammars, reads a first line's blanks as blanks and needs the text to end its line)
        indentation=True if name in _CPYTHON_LINES else None,
    ), lark_order=())


def load_spec(spec: str, start: str | None = None, lexer: str | None = None) -> Grammar:
    """A bundled grammar name, or a path to a ``.lark`` file (imports resolve beside it) or
    a ``.gbnf`` file (llama.cpp GBNF, start rule ``root``)."""
    import os

    from ..grammar import Grammar

    if spec in names() and not os.path.exists(spec):
        return load(spec, start, lexer)
    p = pathlib.Path(spec)
    if not p.exists():
        raise GrammarError(
            f"grammar {spec!r} is neither a bundled grammar ({', '.join(names())}) nor a file"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise GrammarError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if p.suffix.lower() == ".gbnf":
        if lexer not in (None, "contextual"):
            raise GrammarError(f"{p}: GBNF grammars are lexed in the contextual mode only "
                               "(their terminals are chosen so that it is exact)")
        return Grammar.from_gbnf(text, start=start or "root", source=str(p))
    return Grammar.from_lark(
        text,
        start=start or "start",
        import_paths=[str(p.parent)],
        source=str(p),
        lexer=lexer or "contextual",
    )
