"""``Grammar.from_regex`` against Python's ``re.fullmatch``: regexes that may match the empty
string (frontends/regex_nonempty.py), and a lexer whose start state a lexeme leads back to."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask import Grammar, GrammarError
from gramask.errors import UnsupportedRegexError
from gramask.frontends.regex_nonempty import nonempty_regex

from ._support import BYTES, accepts, byte_ids

EOS = 256
ALPHABET = "abxAé5\n٣\u3000"

# regexes built from atoms that may be empty (``(|x)``, ``a{0}``) or not, with groups,
# alternatives, counted and lazy repeats, and flags in groups
_ATOMS = st.sampled_from(["a", "b", "x", "é", r"\d", r"\w", ".", "[a-c]", "[^a]", "(?i:A)",
                          "(?s:.)", "", "a{0}", r"\n"])


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, min_size=1, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.tuples(children, st.sampled_from(["*", "+", "?", "{0,2}", "{1,3}", "{2}", "*?",
                                             "??", "{0}"])).map(lambda t: f"(?:{t[0]}){t[1]}"),
    )


REGEXES = st.recursive(_ATOMS, _combine, max_leaves=8)


@settings(max_examples=100, deadline=None)
@given(REGEXES, st.lists(st.text(alphabet=ALPHABET, max_size=5), max_size=20))
def test_nonempty_regex_is_the_language_without_the_empty_string(pattern: str,
                                                                 texts: list[str]) -> None:
    got = nonempty_regex(pattern)
    if got is None:
        assert re.fullmatch(pattern, "") and not any(
            t and re.fullmatch(pattern, t) for t in [*texts, "a", "x", "é", "ab"])
        return
    assert not re.fullmatch(got, "")
    for text in texts:
        if text:
            assert bool(re.fullmatch(got, text)) == bool(re.fullmatch(pattern, text)), text


def test_flags_are_kept() -> None:
    for pattern, text, matches in [("(?i)a?", "A", True), ("(?i:a)?b?", "A", True),
                                   ("(?i:a?)b?", "B", False), ("(?s).?", "\n", True),
                                   (".?", "\n", False), (r"(?a:\w?)", "é", False),
                                   (r"\w?", "é", True), ("(?x) a ? # comment", "a", True)]:
        got = nonempty_regex(pattern)
        assert got is not None
        assert bool(re.fullmatch(got, text)) == matches == bool(re.fullmatch(pattern, text))


@functools.cache
def _compiled(pattern: str) -> gramask.CompiledGrammar:
    return gramask.compile(Grammar.from_regex(pattern), BYTES, cache=False, progress=False)


def _accepts(cg: gramask.CompiledGrammar, text: str) -> bool:
    return accepts(cg, byte_ids(text))


NULLABLE = [r"(\w?)+", r"^(?:(?:\.[^a])*)", "a?b?", "(|x)", r"^(a?|\d*[a-c]+)+$", "(5*b)?",
            r"(?i:x?)(?:ab|)*", r"(\d{0,2}\.){0,3}", "a*?b??", "(?i)^(?:ab)?$"]


@pytest.mark.parametrize("pattern", NULLABLE)
def test_regex_that_may_be_empty_is_whole_match(pattern: str) -> None:
    cg = _compiled(pattern)
    c = cg.constraint()
    assert c.is_complete() and c.allowed()[EOS]  # the empty output: end at once
    assert not cg.constraint().shortest_completion().data


@pytest.mark.parametrize("pattern", NULLABLE)
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=ALPHABET + ".", max_size=6))
def test_regex_that_may_be_empty_matches_like_re(pattern: str, text: str) -> None:
    assert _accepts(_compiled(pattern), text) == bool(re.fullmatch(pattern, text)), text


def test_only_the_empty_string_and_possessive_repeats_are_refused() -> None:
    for pattern in ("a{0}", "(|)", "(?:)", "^$", "(a{0})*"):
        with pytest.raises(GrammarError, match="only the empty string"):
            Grammar.from_regex(pattern)
    with pytest.raises(UnsupportedRegexError, match="possessive"):
        Grammar.from_regex("(a?+)b?")
    # refused by Grammar.from_regex itself, naming REGEX, not by compile as REGEX_0
    with pytest.raises(UnsupportedRegexError, match=r"REGEX: .*possessive") as e:
        Grammar.from_regex("x(a*+)b")
    assert e.value.name == "REGEX"
    with pytest.raises(UnsupportedRegexError, match=r"REGEX: .*atomic group"):
        Grammar.from_regex("(?>ab|a)c")
    # a Lark terminal with them fails at load too, naming the terminal and its line
    for pattern, what in (("(?>ab)c", "atomic group"), ("xa*+", "possessive repeat")):
        with pytest.raises(UnsupportedRegexError, match=f"terminal A: .*{what}") as e:
            Grammar.from_lark(f"start: A\nA: /{pattern}/\n")
        assert (e.value.name, e.value.line) == ("A", 2)


def test_a_lexeme_back_at_the_lexer_s_start_is_still_pending() -> None:
    """After ``x`` of ``/x*y/`` every terminal is where it started: the lexer must still
    know a lexeme is pending (it ended the input there as if none were)."""
    cg = gramask.compile(Grammar.from_lark("start: A+\nA: /x*y/\n"), BYTES, cache=False,
                         progress=False)
    for text, ok in (("xyx", False), ("xyxy", True), ("x", False), ("y", True)):
        assert _accepts(cg, text) == ok, text
    assert not _accepts(_compiled("(5*b)?"), "5")


def test_json_schema_pattern_may_match_the_empty_string() -> None:
    """A JSON Schema ``pattern`` is a search inside a string value (its own path): empty
    strings pass where the pattern allows them."""
    schema = json.dumps({"type": "string", "pattern": "^a?$"})
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    for text, ok in (('""', True), ('"a"', True), ('"aa"', False), ('"b"', False)):
        assert _accepts(cg, text) == ok, text


@pytest.mark.parametrize("pattern", [r"\w+", r"[^\W\d]\w*", r"\d{1,2}\s?\S", r"(?a)\w+\s?",
                                     r"(?i)[\w-]+\D?"])
@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet=ALPHABET + "_-\xa0\x1cß", min_size=1, max_size=5))
def test_categories_are_re_s(pattern: str, text: str) -> None:
    """``re``'s syntax is ``from_regex``'s promise: ``\\w`` matches ``é``, ``\\d`` ``٣``."""
    assert _accepts(_compiled(pattern), text) == bool(re.fullmatch(pattern, text)), text


def test_unicode_categories_flag_and_its_artifact(tmp_path: Path) -> None:
    plain = Grammar.from_regex("[a-z]+")  # no category: the fingerprint it always had
    assert "unicode_categories" not in json.dumps(plain.to_json())
    cg = _compiled(r"\w+")
    assert cg.grammar.terminals[0].unicode_categories
    cg.save(tmp_path / "w.gmask")
    back = gramask.CompiledGrammar.load(tmp_path / "w.gmask")
    assert back.grammar.fingerprint() == cg.grammar.fingerprint()
    assert _accepts(back, "café") and not _accepts(back, "ca fé")


def test_lark_terminals_read_categories_as_ascii_unless_asked() -> None:
    text = "start: NAME+\nNAME: /\\w+/\n%ignore /\\s+/\n"
    for uni in (False, True):
        g = Grammar.from_lark(text, unicode_categories=uni)
        cg = gramask.compile(g, BYTES, cache=False, progress=False)
        assert _accepts(cg, "ab c1")
        assert _accepts(cg, "café ٣") == uni
        assert _accepts(cg, "a \u3000b") == uni  # \u3000 is whitespace to re
        # (not "a\u3000b": a limit of the byte-level lexer, docs/semantics.md: a word does not
        # end where the next character shares its first UTF-8 bytes with a word character)


# characters re folds beyond their own lower and upper case (re._casefix, same simple lower
# case), ASCII letters, and letters that have a case only outside ASCII
_FOLDS = "kKsSiIıİσςΣµμΜßẞåÅÅéÉǅǄǆθϑΘ\u212a\u017f\u1e9e\u1e61\u1e9bⒶⓐ_5"


@pytest.mark.parametrize("pattern", ["(?i)k", "(?i)s", "(?i)ı", "(?i:i)", "(?i)σ", "(?i)µ",
                                     "(?i)ẛ", "(?i)[k-m]", "(?i)[^k]", "(?i)[\\u212a]",
                                     "(?i)[^\\u212a]", "(?i)[^\\W\\d]", "(?ai)k", "(?ai)é",
                                     "(?a)(?i:[é])", "(?ai)[a-z]", "(?ia)\\u212a", "(?i)ǅ",
                                     "(?i)[θ-λ]"])
def test_case_folding_is_re_s(pattern: str) -> None:
    """``(?i)`` matches what ``re`` matches: ``/k/i`` the Kelvin sign, ``/s/i`` ``ſ`` (it
    matched only the pattern character's own lower and upper case); under the ``a`` flag only
    ASCII letters have a case (``/é/ai`` matched ``É``)."""
    cg = _compiled(pattern)
    for ch in _FOLDS:
        assert _accepts(cg, ch) == bool(re.fullmatch(pattern, ch)), ch


def test_lark_case_insensitive_literal_folds_as_lark() -> None:
    import lark

    text = 'start: KW\nKW: "sk"i\n'
    cg = gramask.compile(Grammar.from_lark(text), BYTES, cache=False, progress=False)
    parser = lark.Lark(text, parser="lalr")
    for word in ("sk", "SK", "\u017f\u212a", "\u017fk", "sK", "ss"):
        try:
            parser.parse(word)
            ok = True
        except lark.exceptions.LarkError:
            ok = False
        assert _accepts(cg, word) == ok, word


@pytest.mark.parametrize("pattern", [r"^a$|^b\d$", r"(?x) ^ a b $ ", r"(^a|b)$", r"^(?:^x|\Ay)z\Z",
                                     r"(?m)^ab$|^c", r"^$|^a+$", r"(a|(b$))", r"\A(?i:^k)|é$",
                                     r"\bab\b", r"^\b(?:a|b\d)+\b$", r"\b[a-c]\w*\b|-", r"\bé|c",
                                     r"(?i)\b[^\W\d]+\b", r"(\bc|b)\b"])
def test_anchors_at_the_edges_of_alternatives(pattern: str) -> None:
    """Whole-match makes a ``^`` that begins a top-level alternative (through groups) and a
    ``$`` that ends one true, and a ``\\b`` there beside word characters only: they compiled
    only as the pattern's first and last character (``\\b`` not at all)."""
    cg = _compiled(pattern)
    for text in ("", "a", "b", "b5", "ab", "c", "xz", "yz", "xyz", "az", "aa", "K", "é", "a\n",
                 "ab\n", "b$", "aab", "-", "ab1", "abc", "Éa", "b5a", "a-"):
        assert _accepts(cg, text) == bool(re.fullmatch(pattern, text)), text


@pytest.mark.parametrize("pattern", [r"a^b", r"(a$)*", r"a$\n", r"\b(a|-)", r"x|\b", r"(?:^a)+",
                                     r"\b\d*", r"a-\b", r"(?a)\bé", r"\Bfoo", r"a\bb"])
def test_anchors_inside_are_refused(pattern: str) -> None:
    with pytest.raises(UnsupportedRegexError, match="anchor"):
        Grammar.from_regex(pattern)


@pytest.mark.parametrize("pattern", [r"\ud800", r"[\ud800-\udfff]+", r"a\udfff", "x\ud800",
                                     r"[^\s\S]", r"a[^\x00-\U0010ffff]", r"(?i:a[^\w\W])",
                                     r"(?a:b+[^\d\D])"])
def test_regex_that_spells_nothing_is_refused(pattern: str) -> None:
    """Only lone surrogates or an empty class: the mask was empty at the start (not even
    EOS), a dead end before the first token."""
    with pytest.raises(GrammarError, match="matches no text"):
        Grammar.from_regex(pattern)
    with pytest.raises(GrammarError, match="only the empty string"):
        Grammar.from_regex(f"(?:{pattern})?")


@pytest.mark.parametrize("pattern", [r"a(?:\ud800){0}b", r"(?:\ud800|a)+", r"x[^\s\S]?",
                                     r"(?i:[^\W\D])"])
def test_an_item_that_spells_nothing_where_the_rest_spells_something(pattern: str) -> None:
    """Not refused: the regex matches text all the same (``re`` is the oracle)."""
    cg = _compiled(pattern)
    text = next(t for t in ("ab", "a", "x", "7") if re.fullmatch(pattern, t))
    assert _accepts(cg, text)


def test_lone_surrogate_characters() -> None:
    """Written as a character (not an escape) a surrogate crashed on UTF-8 encoding."""
    cg = _compiled("a|\udfff|[b\ud800]")
    assert _accepts(cg, "a") and _accepts(cg, "b") and not _accepts(cg, "")
    for choices in (["a", "\ud800"], ["x\udc00y"]):
        with pytest.raises(GrammarError, match="lone surrogate"):
            Grammar.from_choices(choices)


# long counted repeats of Unicode classes (usernames, ids, JSON Schema patterns): a copy of
# Unicode \w is ~300 byte states, so these lexers have thousands of states
LONG = [(r"\w{1,64}", 64), (r"\d{1,300}", 300), (r'[^"\s]{1,128}', 128), (r".{0,100}", 100),
        (r"[\w.-]{3,64}@[\w.-]+", 64)]
_LONG_CHARS = ["a", "é", "中", "😀", "٣", " ", '"', "\u0300"]


@pytest.mark.parametrize(("pattern", "top"), LONG)
def test_long_counted_unicode_classes_match_like_re(pattern: str, top: int) -> None:
    cg = _compiled(pattern)
    texts = [c * n for c in _LONG_CHARS for n in (0, 1, top, top + 1)]
    texts += ["é中٣" * (top // 3) + tail for tail in ("", "a", "ab", "abc", " ")]
    if "@" in pattern:
        texts = [f"{a}@{b}" for a, b in zip(texts, reversed(texts), strict=True)]
    for text in texts:
        assert _accepts(cg, text) == bool(re.fullmatch(pattern, text)), text
