"""Disagreements with lark found by ``tools/lark_fuzz.py`` (random Lark grammars), each
minimised and pinned here with lark as the oracle."""

from __future__ import annotations

from dataclasses import replace

import lark
import pytest

import gramask
from tests._support import is_program, lark_accepts, tiny

CHARS = [*"0123456789+-ab ", "\n"]


def _completions_are_larks(cg: gramask.CompiledGrammar, oracle: lark.Lark,
                           prefixes: list[str]) -> None:
    """From each prefix, the shortest completion walks to a complete text lark accepts."""
    for prefix in prefixes:
        c = cg.constraint(prefix)
        done = c.shortest_completion()
        for t in done.token_ids:
            c.advance(t)
        assert c.is_complete(), prefix
        assert lark_accepts(oracle, prefix + done.text), (prefix, done.text)

# Two terminals that the greedy lexer merges when spelled by their shortest lexemes
# (``0`` ``0`` is one integer): a completion must spell the second one differently
# (``0-0``), there being no ignored text to separate them with.
ADJACENT = r"""
start: SIGNED_INT SIGNED_INT
%import common.SIGNED_INT
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_completion_spells_a_lexeme_the_last_one_cannot_swallow(lexer: str) -> None:
    cg, _ = tiny(ADJACENT, CHARS, lexer=lexer)
    oracle = lark.Lark(ADJACENT, parser="earley", lexer="basic")
    _completions_are_larks(cg, oracle, ["", "1", "12", "-", "7-"])


# ``[x]`` and ``x?`` over anonymous tokens give two rules ``r3: T0``: lark builds the grammar
# (with its default options), so gramask must too (it refused: "Rules defined twice").
OPTIONALS = r"""
start: r3
r3: T0 "x"? (T0 T0)?
    | T0 ["ab"]
T0: "abc" | "aa"
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_colliding_optionals_load_as_lark_loads_them(lexer: str) -> None:
    cg, _ = tiny(OPTIONALS, [*"abcx"], lexer=lexer)
    oracle = lark.Lark(OPTIONALS, parser="earley", lexer="basic")
    for text in ["abc", "abcx", "aaab", "aaaaaa", "abcabcabc", "aaxaaaa", "ab", "aaabab", "x"]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text


# A comment that no ignored text after it can end ('#' with no ignored newline) ends at the
# end of input: after '=..#' (basic mode: the literal '#'), 'a' makes it an ignored comment.
COMMENT_LAST = r"""
start: r1 ".."
r1: "=" | "#"
COMMENT: /#[^\n]*/
%ignore COMMENT
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_completion_may_end_the_input_inside_an_ignored_lexeme(lexer: str) -> None:
    # (r1's "#" is never lexed: the ignored COMMENT matches its text, and lark folds it into
    # COMMENT, gramask/frontends/lark_ignored.py; it was dropped as one that can never be
    # followed by "..", tests/test_separable.py)
    with pytest.warns(gramask.GrammarWarning, match=r'HASH \(the ignored COMMENT'):
        cg, _ = tiny(COMMENT_LAST, [*"=.#ab"], lexer=lexer)
    oracle = lark.Lark(COMMENT_LAST, parser="earley", lexer="basic")
    _completions_are_larks(cg, oracle, ["=..#", "=..#a", "=", "=.."])


# Every end of T0 continues on 'a', the first byte of the keyword "ab"; but "ab" only ever
# follows "int", so T0's ends are clean for what can follow it (';'), and T0 is spellable.
UNFOLLOWED = r"""
start: T0 ";" | "int" "ab"
T0: /(a|bc)+/
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_clean_ends_ask_only_for_the_terminals_that_can_follow(lexer: str) -> None:
    # (basic mode, longest match: in lark's order T0 takes the "a" of "ab", which is never
    # lexed, tests/test_lark_order.py; the bundled grammars lex by the longest match)
    g = replace(gramask.Grammar.from_lark(UNFOLLOWED, lexer=lexer), lark_order=())
    vocab = gramask.Vocabulary.from_tokens([*"abc;int", "</s>"], eos_token_id=7)
    cg = gramask.compile(g, vocab, cache=False)
    oracle = lark.Lark(UNFOLLOWED, parser="earley", lexer="basic")
    _completions_are_larks(cg, oracle, ["", "a", "bc", "abca"])
    assert cg.constraint("").min_tokens_to_complete() == 2  # 'a;'


# The only text that keeps two lexemes apart has a line break: a grammar that ignores
# NEWLINE and no spaces, and a rest-of-line terminal (not ignored) that only a line break
# ends, its follower glued after an ignored WS. shortest_completion() raised
# NoCompletionError for every prefix of both (the planner's separator excluded line breaks).
NEWLINE_APART = r"""
start: T0 T0 T0
T0: /[a-c][a-c0-9]*/
%import common.SH_COMMENT
%ignore SH_COMMENT
%import common.NEWLINE
%ignore NEWLINE
"""
REST_OF_LINE = r"""
start: "abc" T0 T1
T0: /#[^\n]*/
T1: /[xy]*z/
%import common.WS
%ignore WS
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("grammar", "prefixes"), [
    (NEWLINE_APART, ["", "a", "cb4a\n\nc", "#x", "a\n#x"]),
    (REST_OF_LINE, ["", "ab", "abc", "abc\n#x", "abc#y z"]),
])
def test_completion_separates_lexemes_with_a_line_break(grammar: str, prefixes: list[str],
                                                        lexer: str) -> None:
    cg, _ = tiny(grammar, [*"abc04#xyz \n"], lexer=lexer)
    oracle = lark.Lark(grammar, parser="earley", lexer="basic")
    _completions_are_larks(cg, oracle, prefixes)
    for prefix in prefixes:  # and a budget finds the same route
        c = cg.constraint(prefix, max_tokens=40)
        assert c.min_tokens_to_complete() <= 40
