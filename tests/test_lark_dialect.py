"""The llguidance/XGrammar Lark dialect: ``{m,n}`` repetitions and ``""`` empty alternatives,
checked against lark itself on the same grammar written out in standard Lark."""

from __future__ import annotations

import lark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask.errors import GrammarError
from gramask.frontends.lark_dialect import rewrite_dialect

from ._support import is_program, lark_accepts

VOCAB = gramask.Vocabulary.from_tokens(
    [bytes([b]) for b in range(256)] + [b"ab", b"aba", b"</s>"], eos_token_id=258
)

# (dialect grammar, the same language in standard Lark)
PAIRS = [
    (
        'start: x{2,3} "y"{2} ("a" | b){1,} C{,2} d{0}\nx: "" | "x"\nb: "b"\nC: /[0-9]/{2}\n'
        'd: "d"\n',
        'start: x x x? "y" "y" ("a" | b)+ (C C?)?\nx: | "x"\nb: "b"\nC: /[0-9][0-9]/\n',
    ),
    (
        'start: item{1,3} ";"\nitem: "(" item{0,} ")" | WORD\nWORD: /[a-z]/{1,4}\n',
        'start: item item? item? ";"\nitem: "(" item* ")" | WORD\nWORD: /[a-z]{1,4}/\n',
    ),
    (
        'start: A B\nA: ("ab" "c"){2,3}\nB: "x"{1,}\n',
        'start: A B\nA: /(abc){2,3}/\nB: /x+/\n',
    ),
]


_CACHE: dict[int, tuple[gramask.CompiledGrammar, lark.Lark]] = {}


def _pair(i: int) -> tuple[gramask.CompiledGrammar, lark.Lark]:
    if i not in _CACHE:
        dialect, standard = PAIRS[i]
        cg = gramask.compile(gramask.Grammar.from_lark(dialect), VOCAB, cache=False,
                             progress=False)
        _CACHE[i] = (cg, lark.Lark(standard, parser="earley", lexer="dynamic"))
    return _CACHE[i]


@pytest.mark.parametrize("i", range(len(PAIRS)))
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_dialect_means_its_standard_lark_spelling(i: int, data: st.DataObject) -> None:
    cg, oracle = _pair(i)
    alphabet = "".join(sorted(set(c for c in PAIRS[i][1] if c.isalnum() or c in "();")))
    s = data.draw(st.text(alphabet=alphabet, max_size=12))
    assert is_program(cg, s) == lark_accepts(oracle, s), s


@pytest.mark.parametrize(
    ("i", "good", "bad"),
    [
        (0, ["xxyya", "xxyyab12", "xxxyybab1234"], ["xxxxyya", "xxyy", "xxyya123", "xxyyad"]),
        (1, ["a;", "(ab)(c);", "(())x;"], ["abcdeabcdeabc;", "a b;", ";"]),
        (2, ["abcabcx", "abcabcabcxxx"], ["abcx", "abcabcabcabcx", "abcabc"]),
    ],
)
def test_samples(i: int, good: list[str], bad: list[str]) -> None:
    cg, oracle = _pair(i)
    for s in good:
        assert lark_accepts(oracle, s) and is_program(cg, s), s
    for s in bad:
        assert not lark_accepts(oracle, s) and not is_program(cg, s), s


def test_regexes_strings_comments_and_templates_are_left_alone() -> None:
    text = ('start: _sep{x, ","} /a{2}/ "{2}"  // x{3}\n_sep{a, s}: a (s a)*\nx: "x"\n')
    assert rewrite_dialect(text) == text


def test_reversed_bounds_are_refused() -> None:
    with pytest.raises(GrammarError, match=r"\{3,1\}"):
        gramask.Grammar.from_lark('start: "a"{3,1}\n')


def test_large_bounded_rule_repeat_loads_quickly() -> None:
    g = gramask.Grammar.from_lark('start: x{2,50000}\nx: "a"\n')
    assert len(g.rules) < 200  # lark splits large ranges by powers of two


# llguidance's constructs gramask does not read (grammars from llguidance's own tests), and
# what the error must name; lark alone only said "Unexpected input"
REFUSED = [
    ('start: "A" %regex { "substring_words": "a b" } "B"\n', r"%regex.*column 12"),
    ('start: x\nx: %lark {\n  start: "a"\n}\n', r"%lark"),
    ("start: <[100-200]>\n", r"token syntax <"),
    ('start: "a" <|end|>\n', r"token syntax <"),
    ('start: foo\nfoo[stop="",max_tokens=12]: /.*/\n',
     r"lexeme options \[stop=\"\",max_tokens=12\] on 'foo'.*line 2"),
    ("start: foo\nfoo[lazy]: /.*/\n", r"lexeme options \[lazy\]"),
    ("start: ST\nST: /[a-z]+/ & /[abc]+/\n", r"intersection &.*line 2, column 14"),
    ("start: ST\nST: /[a-d]+/ ~/(.*)ab(.*)/\n", r"negation ~"),
    ('start: p::0\np::_: "x" %if lt(_, 3)\n', r"parametric rule"),
    ('start: "a" @sub\n', r"grammar reference @sub"),
    ('%grammar_options {"allow_initial_skip": true}\nstart: "a"\n', r"%grammar_options"),
]


@pytest.mark.parametrize("text,what", REFUSED)
def test_llguidance_constructs_are_refused_by_name(text: str, what: str) -> None:
    with pytest.raises(GrammarError, match=what):
        gramask.Grammar.from_lark(text)


def test_standard_lark_like_the_refused_constructs_still_loads() -> None:
    """``~ n``, ``%import``/``%ignore``/``%declare``, ``[optional]`` and the same characters in
    strings, regexes and comments are lark's own."""
    text = ('%import common.WS\n%ignore WS\n%declare _INDENT\nstart: x ~ 2 [y] "<[1]>" "&" '
            '/~a|&|<b>|::/ z\n// x[stop=""]: %json & < ~a\nx: "x"\ny: "y"\nz: "::" -> zz\n')
    g = gramask.Grammar.from_lark(text)
    assert g.rules


def test_refusal_shows_the_line_and_a_caret() -> None:
    with pytest.raises(GrammarError) as e:
        gramask.Grammar.from_lark('start: foo\n   foo: %regex {"substring_words": "a b"}\n')
    shown = str(e.value).splitlines()
    assert shown[1] == '   foo: %regex {"substring_words": "a b"}'
    assert shown[2].index("^") == shown[1].index("%")


def test_hyphenated_names_read_as_llguidance_and_xgrammar_read_them() -> None:
    """``foo-bar`` / ``FOO-BAR`` are names there (XGrammar's test: "ab" only); in strings,
    regexes, comments, ``->`` and a negative priority the hyphen stays."""
    g = gramask.Grammar.from_lark('start: foo-bar FOO-BAR x-1 -> y\nfoo-bar: "a-"? "a"\n'
                                  'FOO-BAR: /b-?/ // c-d\nx-1.-1: "x"\n')
    cg = gramask.compile(g, VOCAB, cache=False, progress=False)
    for text, want in [("abx", True), ("a-abx", True), ("ab-x", True), ("", False),
                       ("a-bx", False), ("foo-barFOO-BARx", False)]:
        assert is_program(cg, text) == want, text


def test_a_hyphenated_name_whose_spelling_clashes_is_refused() -> None:
    with pytest.raises(GrammarError, match="'foo-bar' is spelt 'foo__bar'"):
        gramask.Grammar.from_lark('start: foo-bar foo__bar\nfoo-bar: "a"\nfoo__bar: "b"\n')
