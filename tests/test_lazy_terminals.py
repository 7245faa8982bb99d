"""Lazy repeats in Lark terminals end the lexeme at its first match, as Python's ``re`` (and so
lark's lexers) do: ``%import common.C_COMMENT`` (``"/*" /(.|\\n)*?/ "*/"``) ends at the first
``*/``. Read as the language it matches, the comment ran on to the text's last ``*/``:
``/* a */ x`` was a comment in progress, never a complete program.

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
from tests._support import longest_end

from ._support import is_program, lark_accepts

# lazy repeats: each ends where re.match ends (the first match where every repeat is lazy)
FIRST_MATCH = [
    r"\{-[\s\S]*?-\}", r"(?:\{-[\s\S]*?-\}|--[^\n]*)", r"\/\*(.|\n)*?\*\/", r'"(\\.|[^"\\])*?"',
    r"ab*?", r"a+?", r"x.*?y|z+", r"<!--(.|\s)*?-->", r"(?s:a.*?b)", r"a{1,3}?b",
]
PIECES = ["{-", "-}", "-", "{", "x", "\n", "/*", "*/", "*", "/", '"', "\\", "a", "b", "y", "z",
          "<!--", "-->", "#", ";"]


@functools.cache
def _dfa(pattern: str, first_match: bool, unicode_categories: bool = False) -> ByteDFA:
    return regex_to_byte_dfa("T", pattern, first_match, unicode_categories)


def _re_end(pattern: str, text: str) -> int | None:
    """Where ``re.match`` ends a lexeme of ``pattern`` at the start of ``text`` (None: no
    match, or an empty one)."""
    m = re.match(pattern, text)
    return m.end() if m is not None and m.end() else None


def _ends_as_re(pattern: str, text: str, unicode_categories: bool = False) -> None:
    """The terminal's longest match ends where ``re.match`` ends (in bytes), and the automaton
    accepts ``text`` exactly where ``re.match`` matches all of it."""
    dfa = _dfa(pattern, True, unicode_categories)
    end = _re_end(pattern, text)
    want = None if end is None else len(text[:end].encode())
    assert longest_end(dfa, text.encode()) == want
    if text:
        m = re.match(pattern, text)
        assert dfa.matches(text.encode()) == (m is not None and m.end() == len(text))


@pytest.mark.parametrize("pattern", FIRST_MATCH)
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(PIECES), min_size=1, max_size=10).map("".join))
def test_a_lexeme_ends_where_re_match_ends(pattern: str, text: str) -> None:
    _ends_as_re(pattern, text)


# a lazy head, then a greedy tail (lark's own lark.lark: REGEXP /\/(...)+?\/[imslux]*/ and
# STRING "\"" /.*?/ "\"" "i"?; read as the language, a string ran past its closing quote to
# the end of the line), and greedy repeats before lazy ones (``#+.*?;``: re backtracks into
# the ``#+`` only where the rest fails)
GREEDY_TAIL = [r"\/(\\\/|\\\\|[^\/\\])+?\/[imslux]*", r'(?:"(?:.*?)")(?:i)?',
               r'"(\\.|[^"\\])*?"i?', r"a+?b(?:cd)?", r"x.*?y[ab]*|z+", r"#+.*?;",
               r"#+(?:\[[\s\S]*?\]|x)", r"a*?b+", r"(?:a|ab)*?b(?:c|cd)?"]
TAIL_PIECES = ["/", "\\", '"', "i", "m", "a", "b", "c", "d", "x", "y", "z", " ", "\n", "#",
               ";", "[", "]"]


@pytest.mark.parametrize("pattern", GREEDY_TAIL)
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(TAIL_PIECES), min_size=1, max_size=10).map("".join))
@example(text="##[a]b]").via("read as the language: the last ]")
@example(text="abbcd").via("read as the language: after cd")
def test_greedy_and_lazy_repeats_together_end_where_re_ends(pattern: str, text: str) -> None:
    _ends_as_re(pattern, text)


def test_overlapping_alternatives_in_a_lazy_repeat_end_where_re_ends() -> None:
    # lark.lark's REGEXP: '\\/' may be read as the escape (re's first alternative) or as
    # '\\' by [^/] then the closing '/': re takes the escape and ends after the second '/'
    # (the shortest match ended after the first)
    pattern, text = r"\/(\\\/|\\\\|[^\/])+?\/[imslux]*", "/\\//"
    assert _re_end(pattern, text) == 4
    assert longest_end(_dfa(pattern, True), text.encode()) == 4


# re's zero-width protection: after an optional copy of a repeat that matched nothing, re
# takes no further copy (``(?:|a)*`` matches nothing in re, "aaa" in RE2's leftmost-first)
NULLABLE_BODIES = [r"(?:|a)*b?", r"x(?:|a)*", r"(?:a|)*?b", r"(?:a?)*c", r"(?:(?:a|)*)*c",
                   r"(?:a??){2,4}b", r"(?:|a){0,3}c?", r"(?:b{0,2}|c|[^a]){1,3}b", r"(?:a*?)+b"]


@pytest.mark.parametrize("pattern", NULLABLE_BODIES)
@settings(max_examples=100, deadline=None)
@given(text=st.text(alphabet="abcx", max_size=7))
@example(text="aaa")
@example(text="cbb")
def test_a_repeat_that_matched_nothing_is_left_as_re_leaves_it(pattern: str, text: str) -> None:
    _ends_as_re(pattern, text)


ASCII_ATOMS = ["a", "b", "c", "[ab]", "[^a]", ".", "ab", "ba", "\\n", ""]
# multi-byte characters, Unicode classes (determinised over code points) and flags
WIDE_ATOMS = ["a", "é", "中", "[aé]", "[^a]", ".", "\\w", "[^\\W\\d]", "(?i:A)", "(?s:.)", ""]


def _patterns(atoms: list[str] = ASCII_ATOMS) -> st.SearchStrategy[str]:
    """Random regexes mixing lazy and greedy repeats (of bodies that may match nothing too),
    ordered alternatives of different lengths, and sequences."""
    atom = st.sampled_from(atoms)
    quant = st.sampled_from(["*", "+", "?", "{0,2}", "{1,3}", "{2}", "{2,}"])

    def grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map("".join),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: f"(?:{'|'.join(xs)})"),
            st.tuples(inner, quant, st.sampled_from(["", "?"])).map(
                lambda t: f"(?:{t[0]}){t[1]}{t[2]}"))

    return st.recursive(atom, grow, max_leaves=6).filter(bool)


@settings(max_examples=300, deadline=None)
@given(pattern=_patterns(), texts=st.lists(st.text(alphabet="abc\n", max_size=6), max_size=12))
def test_random_patterns_end_where_re_match_ends(pattern: str, texts: list[str]) -> None:
    for text in texts:
        _ends_as_re(pattern, text)


@settings(max_examples=150, deadline=None)
@given(pattern=_patterns(WIDE_ATOMS),
       texts=st.lists(st.text(alphabet="abéA中\n", max_size=5), max_size=10))
def test_random_patterns_past_ascii_end_where_re_match_ends(pattern: str,
                                                             texts: list[str]) -> None:
    for text in texts:  # (\w as re reads it: its Unicode set)
        _ends_as_re(pattern, text, unicode_categories=True)


# alternatives that start alike: re's parser moves the shared prefix out of the branch
# (``--(?:\[\[...\]\]|[^\n]*)``); re tries them in their order all the same
SHARED_PREFIX = [
    r"(?:--\[\[[\s\S]*?\]\]|--[^\n]*)", r"--\[\[(.|\n)*?\]\]|--[^\n]*", r"--(\[\[.*?\]\]|-.*?;)",
    r"a(?:b.*?y|x+)", r"(?s:/\*.*?\*/|/[^*\n]*)",
]
SHARED_PIECES = ["--", "[[", "]]", "-", ";", "\n", "x", "a", "b", "y", "/*", "*/", "/", "*"]


@pytest.mark.parametrize("pattern", SHARED_PREFIX)
@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(SHARED_PIECES), min_size=1, max_size=10).map("".join))
@example(text="--[[\n]]\n]]").via("read greedily: the last ]]")
@example(text="--[[]]x").via("the longest alternative: the line comment")
@example(text="abyy").via("read greedily: the last y")
@example(text="/*a*/*/").via("read greedily: the last */")
def test_alternatives_with_a_shared_prefix_are_tried_in_order(pattern: str, text: str) -> None:
    _ends_as_re(pattern, text)


def test_a_terminal_past_the_state_limit_is_a_grammar_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from gramask.compiler import regex_bytes as rb

    # ordered thread lists can outnumber the subsets: bounded by the same limit, and named
    monkeypatch.setattr(rb, "MAX_TERMINAL_STATES", 2)
    with pytest.raises(gramask.GrammarError, match="terminal COMMENT"):
        rb.regex_to_byte_dfa("COMMENT", r"\/\*(.|\n)*?\*\/", first_match=True)


LUA_LIKE = r"""
start: stat*
stat: NAME "=" NAME | "return" NAME
NAME: /[a-z]+/
COMMENT: /--\[\[(.|\n)*?\]\]/ | /--[^\n]*/
%ignore COMMENT
%ignore /\s+/
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_block_comment_beside_a_line_comment_with_the_same_start_ends(lexer: str) -> None:
    # both alternatives start with "--": read as one alternative, greedily, the block comment
    # never ended, so "--[[" was refused wherever a name was expected (a Lua-like grammar)
    cg = gramask.compile(gramask.Grammar.from_lark(LUA_LIKE, lexer=lexer),
                         gramask.Vocabulary.bundled("gpt2"))
    oracle = _lark(lexer, LUA_LIKE)
    for text in ["return --[[\n]] x", "x = --[[ a\n b ]]\ny", "return --[[]]\nx",
                 "return -- x\ny", "return --[[\n]] x ]]"]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text
    c = cg.constraint("x = --[[")
    sc = c.shortest_completion()
    assert lark_accepts(oracle, "x = --[[" + sc.text)


COMMENTS = r"""
start: item*
item: NAME | "(" item* ")"
NAME: /[a-z]+/
%import common.C_COMMENT
%import common.WS
%ignore C_COMMENT
%ignore WS
"""


@functools.cache
def _compiled(lexer: str) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.Grammar.from_lark(COMMENTS, lexer=lexer),
                           gramask.Vocabulary.bundled("gpt2"))


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_comment_ends_at_its_first_close(lexer: str) -> None:
    cg = _compiled(lexer)
    assert is_program(cg, "/* a */ x")
    assert is_program(cg, "x /* a */ (y) /* b */")
    # read greedily, ") (" hid inside one comment from the first /* to the last */
    assert not is_program(cg, "/* a */ ) ( /* b */")
    c = cg.constraint("/* a */ ")
    assert "C_COMMENT" not in c.explain()["lexeme_could_be"]  # the comment is over
    assert not c.allowed()[cg.vocab.token_id(b")")]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@settings(max_examples=60, deadline=None)
@given(text=st.lists(st.sampled_from(["/*", "*/", "*", "/", " ", "x", "(", ")", "\n"]),
                     max_size=9).map("".join))
def test_programs_with_comments_agree_with_lark(lexer: str, text: str) -> None:
    want = lark_accepts(_lark(lexer), text)
    assert is_program(_compiled(lexer), text) == want


@functools.cache
def _lark(lexer: str, grammar: str = COMMENTS) -> lark.Lark:
    if lexer == "contextual":
        return lark.Lark(grammar, parser="lalr", lexer="contextual")
    return lark.Lark(grammar, parser="earley", lexer="basic")


def test_the_fingerprint_changes_only_for_lazy_terminals() -> None:
    plain = gramask.Grammar.from_lark('start: NAME\nNAME: /[a-z]+/\n')
    assert all("first_match" not in t for t in plain.to_json()["terminals"])
    lazy = gramask.Grammar.from_lark(COMMENTS)
    flags = {t["name"]: t.get("first_match", False) for t in lazy.to_json()["terminals"]}
    assert flags["C_COMMENT"] and not flags["NAME"]
    assert gramask.Grammar.from_json(lazy.to_json()) == lazy


def test_a_saved_artifact_keeps_first_match(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "comments.gmask"
    _compiled("basic").save(path)
    loaded = gramask.CompiledGrammar.load(path)
    assert loaded.grammar == _compiled("basic").grammar
    assert loaded.constraint("/* a */ x").is_complete()


BLOCKS = r"""
start: (stmt ";")*
?stmt: NAME ":=" NAME | "while" NAME "do" (stmt ";")* "end"
NAME: /[a-z]+/
COMMENT: /\{-[\s\S]*?-\}/ | /--[^\n]*/
%import common.WS
%ignore WS
%ignore COMMENT
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_budget_closes_a_line_comment_beside_a_lazy_block_comment(lexer: str) -> None:
    # the block comment ends clean at "-}"; the line comment's "--" still needs a newline
    # before "end" (its states had no way to finish: no plan, the budget refused "--")
    cg = gramask.compile(gramask.Grammar.from_lark(BLOCKS, lexer=lexer),
                         gramask.Vocabulary.bundled("gpt2"))
    prefix = "x := y; while x do --"
    sc = cg.constraint(prefix).shortest_completion()
    assert sc.text.startswith("\n")
    _lark(lexer, BLOCKS).parse(prefix + sc.text)
    text = " {- a -} x := y; -- dec\nend;"
    b = cg.constraint("x := y; while x do", max_tokens=len(text) + 4)
    for ch in text:  # byte by byte (gpt2 has every ASCII byte as a token)
        t = cg.vocab.token_id(ch.encode())
        assert b.allowed()[t], (ch, b.text)
        b.advance(t)
    assert b.is_complete()


QUOTED = r"""
start: item*
item: STRING | NAME
STRING: "\"" /.*?/ "\"" "i"?
NAME: /[a-z]+/
%ignore " "
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_string_with_a_flag_tail_ends_at_its_closing_quote(lexer: str) -> None:
    from ._support import tiny

    cg, _ = tiny(QUOTED, [*'"aixy '], lexer=lexer)
    oracle = _lark(lexer, QUOTED)
    for text in ['"x" a', '"x"i a "y"', '"x" "y"i', '"x"ia', '"x', 'a "" "i"i']:
        assert is_program(cg, text) == lark_accepts(oracle, text), text


# lark.lark's own REGEXP and STRING (lazy heads, greedy flag tails), a greedy-then-lazy
# terminal and a lazy repeat of alternatives of different lengths: lark's lexers as oracle
LARK_LIKE = r"""
start: item*
item: REGEXP | STRING | PRAGMA | NAME | BLOB
REGEXP: /\/(\\\/|\\\\|[^\/])+?\/[imslux]*/
STRING: "\"" /.*?/ "\"" "i"?
PRAGMA: /#+.*?;/
BLOB: /<(?:ab|a|b)*?>+/
NAME: /[a-z]+/
%ignore " "
"""
LARK_PIECES = ["/", "\\", '"', "i", "m", "x", "#", ";", "<", ">", "a", "b", " "]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@settings(max_examples=80, deadline=None)
@given(text=st.lists(st.sampled_from(LARK_PIECES), max_size=10).map("".join))
@example(text="/\\// x").via("REGEXP: re reads \\/ as the escape")
@example(text='"x"i a').via("STRING: its flag after the first closing quote")
@example(text="##a;b;").via("PRAGMA: the first ; after the greedy #s")
def test_lark_like_terminals_agree_with_lark(lexer: str, text: str) -> None:
    from ._support import tiny

    cg, _ = _tiny_lark_like(lexer, tiny)
    assert is_program(cg, text) == lark_accepts(_lark(lexer, LARK_LIKE), text)


@functools.cache
def _tiny_lark_like(lexer: str, tiny):  # type: ignore[no-untyped-def]
    return tiny(LARK_LIKE, sorted(set("".join(LARK_PIECES))), lexer=lexer)
