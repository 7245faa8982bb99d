"""Terminal regexes compiled through re's parser with code-point ranges (compiler/regex_nfa.py,
compiler/charclass.py) against ``re.fullmatch`` itself."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gramask.compiler.charclass import complement, fold_class, normalize
from gramask.compiler.regex_bytes import regex_to_byte_dfa

PATTERNS = [
    r"[a-c]+x?", r"(ab|a)*b", r"[^a]é*", r"(?s:.)\.?", r".{2,4}", r"[\u0100-\U0001f600]+",
    r"(?i:straße)", r"(?i:ßx)", r"x{0,3}y{2}",
    r"(?:\U0001f600|é|a)+", r"[^\x00-\x7f]{1,2}", r"a+?b*?", "(?x: a b # comment\n c)",
]
# Case-insensitive characters fold as re folds them (docs/semantics.md): ſ with s, K (Kelvin)
# with k, beyond their own lower and upper case; under the a flag ASCII letters only.
FOLD_DIFFERENCES = [("(?i:k)", "\u212a", True), ("(?i:s)", "ſ", True), ("(?i:[^k])", "\u212a", False),
                    ("(?ai:k)", "\u212a", False), ("(?ai:é)", "É", False)]
ALPHABET = "abckxyKsSſßẞé\u0100\u212a😀.\n İı"


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=ALPHABET, max_size=6))
def test_matches_like_re(pattern: str, text: str) -> None:
    dfa = _dfa(pattern)
    assert dfa.matches(text.encode("utf-8")) == bool(re.fullmatch(pattern, text))


_CACHE: dict[str, object] = {}


def _dfa(pattern: str):  # type: ignore[no-untyped-def]
    if pattern not in _CACHE:
        _CACHE[pattern] = regex_to_byte_dfa("T", pattern)
    return _CACHE[pattern]


@pytest.mark.parametrize(("pattern", "text", "matches"), FOLD_DIFFERENCES)
def test_one_character_case_folding(pattern: str, text: str, matches: bool) -> None:
    assert _dfa(pattern).matches(text.encode("utf-8")) == matches


def test_charset_operations() -> None:
    s = normalize([(5, 9), (1, 3), (4, 4), (20, 20)])
    assert s == ((1, 9), (20, 20))
    assert complement(complement(s)) == s
    assert complement(((0, 0x10FFFF),)) == ()
    assert fold_class(((ord("k"),) * 2,), ()) == ((75, 75), (107, 107), (8490, 8490))


@pytest.mark.parametrize("pattern", [r"(?<=a)b", r"(a)\1", r"^a", r"(?>ab)", r"a*+"])
def test_not_regular_is_refused(pattern: str) -> None:
    from gramask.errors import UnsupportedRegexError

    with pytest.raises(UnsupportedRegexError):
        regex_to_byte_dfa("T", pattern)


def _moore_classes(trans: list[list[int]], finals: list[bool]) -> int:
    """How many states of a complete-or-partial DFA are distinguishable (reference Moore)."""
    cls = [int(f) for f in finals]
    while True:
        sig = [(cls[q], *[cls[t] if t >= 0 else -1 for t in trans[q]]) for q in range(len(cls))]
        ids = {s: i for i, s in enumerate(dict.fromkeys(sig))}
        new = [ids[s] for s in sig]
        if len(ids) == len(set(cls)):
            return len(ids)
        cls = new


@settings(max_examples=120, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "[ab]", "(a|bc)", "c*", "(ab)?", "[^a]", "é",
                                 "x+", "(a|b)*", "a{2,4}", "(ab|b){3}"]),
                min_size=1, max_size=6),
       st.lists(st.text(alphabet="abcxé", max_size=8), max_size=20))
def test_automaton_is_minimal_and_exact(atoms: list[str], texts: list[str]) -> None:
    pattern = "".join(atoms)
    dfa = regex_to_byte_dfa("T", pattern)
    assert _moore_classes(dfa.trans.tolist(), dfa.finals.tolist()) == dfa.num_states
    for text in texts:
        assert dfa.matches(text.encode()) == (re.fullmatch(pattern, text) is not None)


@pytest.mark.parametrize("pattern", [
    "x{40}[a-z]*", r"\d+(\.\d+)?", "(a|b)*a(a|b){5}", r'"([^"\\]|\\.)*"', "(ab|a)*(ba|b){6}c",
    "(0|1(01*0)*1)*", "abc|abd|xbc|xbd", "(a|ab)(c|bcd)(d*)", "(x|xx|xxx){3,9}y",
])
def test_minimising_from_distances_gives_hopcroft_s_automaton(pattern, monkeypatch):
    import gramask.compiler.regex_bytes as rb
    from gramask.compiler.regex_nfa import build_byte_nfa

    nfa = build_byte_nfa(pattern, rb.MAX_NFA_NODES)
    quick = rb._determinise("R", pattern, nfa)
    monkeypatch.setattr(rb, "_minimize_by_distance", lambda t, f, **kw: None)  # Hopcroft only
    slow = rb._determinise("R", pattern, nfa)
    assert np.array_equal(quick.trans, slow.trans) and np.array_equal(quick.finals, slow.finals)


# \d, \w, \s add ASCII characters only, and take away all of re's (Unicode) ones: the
# language is within re's. Characters where the two readings differ:
CATEGORY_ALPHABET = "a_1 \t\x1c\xa0\u2005é٣ß\u3000-"


@pytest.mark.parametrize("pattern", [r"\S+", r"[^\s]+", r"\W+", r"[^\w-]+", r"\D+", r"[^\d]+",
                                     r"[^\S]+", r"\s+", r"\w+", r"\d+", r"[\W\d]+", r"[\s\S]+",
                                     r"[^\s\S]?x"])
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=CATEGORY_ALPHABET, min_size=1, max_size=4))
def test_categories_stay_within_re(pattern: str, text: str) -> None:
    got = _dfa(pattern).matches(text.encode("utf-8"))
    want = bool(re.fullmatch(pattern, text))
    assert not got or want, (pattern, text)
    if all(c < "\x80" and c != "\x1c" for c in text) or "\\s\\S" in pattern:
        assert got == want, (pattern, text)  # where the readings agree; [\s\S] is anything


def test_negated_categories_take_away_what_re_takes_away() -> None:
    for pattern, text in [(r"\S", "\x1c"), (r"\S", "\xa0"), (r"[^\s]", "\u3000"),
                          (r"\D", "٣"), (r"\W", "é"), (r"[^\w]", "ß")]:
        assert not re.fullmatch(pattern, text)
        assert not _dfa(pattern).matches(text.encode("utf-8")), (pattern, text)


@pytest.mark.parametrize("pattern", [r"\S+", r"[^\s]+", r"\W+", r"[^\w-]+", r"\D+", r"\s+", r"\w+",
                                     r"\d+", r"[\W\d]+", r"[^\S]+", r"(?a:\w+)", r"(?a:\W\S)",
                                     r"(?i:[\w]k)", r"[^\W\d]\w*"])
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=CATEGORY_ALPHABET + "Kk", min_size=1, max_size=4))
def test_unicode_categories_read_as_re_reads_them(pattern: str, text: str) -> None:
    key = "unicode:" + pattern
    if key not in _CACHE:
        _CACHE[key] = regex_to_byte_dfa("T", pattern, unicode_categories=True)
    got = _CACHE[key].matches(text.encode("utf-8"))  # type: ignore[attr-defined]
    assert got == bool(re.fullmatch(pattern, text)), (pattern, text)


# every code point up to U+2200 (Latin, Greek, Cyrillic, Latin Extended Additional, Greek
# Extended, the letterlike symbols with the Kelvin sign) and Deseret's cased block
_FOLD_TEXT = [chr(c) for c in [*range(0x2200), *range(0x10400, 0x10450)]]


@pytest.mark.parametrize("pattern", [r"(?i)\W", r"(?i)[a\W]", r"(?i)[^a\w]", r"(?i)[^k\d]",
                                     r"(?i)[ι]", r"(?i)[^\u0345]", r"(?i)[Ͱ-Ͽ]", r"(?ai)[a-z\W]",
                                     r"(?i)[^ΙK]", r"(?i)[ſ]", r"(?i)[^β\s]", r"(?i)[A-Z]",
                                     r"(?i)[\u1e00-\u1fff]", r"(?ai)é", r"(?ai)[^k]",
                                     r"(?i)[\U00010400-\U0001044f]"])
def test_case_insensitive_class_is_re_s_on_every_character(pattern: str) -> None:
    """A class folds as re's compiler reads it: categories are not folded, and where no
    character of the class has a case it is matched as written (``(?i)\\W`` took the capital
    Ι, because the non-word ``\\u0345`` folds with it)."""
    import bisect
    from re import _parser

    from gramask.compiler.regex_nfa import char_set

    parsed = _parser.parse(pattern)
    ((op, av),) = list(parsed)
    s = char_set(op, av, int(parsed.state.flags))
    los = [lo for lo, _ in s]
    rx = re.compile(pattern)
    for ch in _FOLD_TEXT:
        i = bisect.bisect_right(los, ord(ch)) - 1
        assert (i >= 0 and s[i][1] >= ord(ch)) == bool(rx.fullmatch(ch)), hex(ord(ch))
