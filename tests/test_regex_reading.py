"""Greedy Lark terminals end where Python's ``re`` (and so lark's lexers) ends them, not at
their language's longest match, where the two differ: ``/(?:a|ab)c?/`` reads ``abc`` as
``a`` then ``bc``; ``/a?(?:ab)?/`` reads ``ab`` as ``a`` then ``b``. Where they cannot differ
the terminal keeps the plain automaton (``TerminalSpec.first_match`` stays False), so the
artifacts of such grammars do not change.

Oracles: ``re.match(...).end()`` for one terminal, lark's own parsers for whole grammars."""

from __future__ import annotations

import functools
import re

import lark
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.regex_bytes import ByteDFA, regex_to_byte_dfa
from gramask.compiler.regex_reading import covers, reads_first_match
from tests._support import longest_end

from ._support import is_program, lark_accepts


@functools.cache
def _dfa(pattern: str, first_match: bool) -> ByteDFA:
    return regex_to_byte_dfa("T", pattern, first_match)


def _ends_as_re(pattern: str, text: str) -> None:
    """The automaton the terminal is compiled to (read leftmost-first or not, as
    ``reads_first_match`` decides) ends a lexeme where ``re.match`` ends it."""
    dfa = _dfa(pattern, reads_first_match("T", pattern))
    m = re.match(pattern, text)
    want = len(text[:m.end()].encode()) if m is not None and m.end() else None
    assert longest_end(dfa, text.encode()) == want, (pattern, text)


@pytest.mark.parametrize(("pattern", "differs"), [
    (r"(?:a|ab)c?", True), (r"a?(?:ab)?", True), (r"(?:x|xy)+", True), (r"a*(?:ab)?", True),
    (r"(?:ab|a)c?", False), (r"[a-z_]\w*", False), (r"\d+(?:\.\d+)?", False),
    (r'"(?:[^"\\]|\\.)*"', False), (r"#[^\n]*", False), (r"abc", False), (r"(?i:ab+)", False),
    (r"\/\*(.|\n)*?\*\/", True),  # (lazy: always read as re)
])
def test_which_terminals_are_read_as_re_matches(pattern: str, differs: bool) -> None:
    assert reads_first_match("T", pattern) is differs


def test_covers_compares_languages() -> None:
    assert covers(_dfa("a|ab", False), _dfa("a", False))
    assert not covers(_dfa("a", False), _dfa("a|ab", False))
    assert covers(_dfa(r"(?:a|ab)c?", True), _dfa(r"(?:a|ab)c?", True))
    assert not covers(_dfa(r"(?:a|ab)c?", True), _dfa(r"(?:a|ab)c?", False))


ATOMS = ["a", "b", "c", "ab", "ba", "abc", "[ab]", "[^a]", "."]


def _greedy_patterns() -> st.SearchStrategy[str]:
    """Random regexes with greedy repeats only: ordered alternatives of different lengths,
    optional groups, sequences."""
    atom = st.sampled_from(ATOMS)
    quant = st.sampled_from(["*", "+", "?", "{0,2}", "{1,3}", "{2}"])

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: f"(?:{'|'.join(xs)})"),
            st.tuples(inner, quant).map(lambda t: f"(?:{t[0]}){t[1]}"))

    return st.recursive(atom, grow, max_leaves=6).filter(lambda p: not re.fullmatch(p, ""))


@settings(max_examples=400, deadline=None)
@given(pattern=_greedy_patterns(), texts=st.lists(st.text(alphabet="abc", max_size=7),
                                                   max_size=12))
@example(pattern=r"(?:a|ab)c?", texts=["abc"])
@example(pattern=r"a?(?:ab)?", texts=["ab"])
def test_greedy_patterns_end_where_re_match_ends(pattern: str, texts: list[str]) -> None:
    for text in texts:
        _ends_as_re(pattern, text)


GRAMMAR = r"""
start: item+
item: T | B
T: /(?:a|ab)c?/
B: /b+/
%ignore " "
"""


@functools.cache
def _compiled(lexer: str) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=lexer),
                           gramask.Vocabulary.bundled("gpt2"))


@functools.cache
def _lark(lexer: str) -> lark.Lark:
    if lexer == "contextual":
        return lark.Lark(GRAMMAR, parser="lalr", lexer="contextual")
    return lark.Lark(GRAMMAR, parser="earley", lexer="basic")


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@settings(max_examples=80, deadline=None)
@given(text=st.text(alphabet="abc ", min_size=1, max_size=7))
@example(text="abc")
@example(text="ab")
def test_programs_agree_with_lark(lexer: str, text: str) -> None:
    assert is_program(_compiled(lexer), text) == lark_accepts(_lark(lexer), text)


def test_a_lexeme_cut_short_by_re_is_over() -> None:
    # read as the language, "abc" was one T; as re reads it, "a" "b" then a "c" no rule takes
    for lexer in ("basic", "contextual"):
        assert not is_program(_compiled(lexer), "abc")
        assert is_program(_compiled(lexer), "ab")
        assert is_program(_compiled(lexer), "acb")


def test_bundled_grammars_keep_their_plain_terminals() -> None:
    # the readings agree on every terminal of these grammars: their artifacts do not move
    for name in ("json", "python", "sql"):
        g = gramask.grammars.load(name)
        assert not any(t.first_match for t in g.terminals), name


# lark pairs a string with a regex of its priority when the regex matches the string's value
# as written; a case-insensitive string then takes every lexeme of the regex it matches whole
# (``"x"i`` beside ``/x+y?/`` is the lexeme ``x``, never T0), though the regex takes only one
# of its case variants (lark_fuzz seed 9101, grammar 10)
CASELESS = 'start: r2 | "x"i?\n?r2: [(T0 | T2)] _T1 T2 -> al2\nT0: /x+y?/\n_T1: "="\nT2: "aa"\n'


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_caseless_string_wins_over_a_regex_that_takes_its_value(lexer: str) -> None:
    cg = gramask.compile(gramask.Grammar.from_lark(CASELESS, lexer=lexer),
                         gramask.Vocabulary.bundled("gpt2"), cache=False, progress=False)
    oracle = (lark.Lark(CASELESS, parser="lalr", lexer="contextual") if lexer == "contextual"
              else lark.Lark(CASELESS, parser="earley", lexer="basic"))
    for text in ["x=aa", "X=aa", "x", "X", "xx=aa", "xy=aa", "=aa", "aa=aa"]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text
