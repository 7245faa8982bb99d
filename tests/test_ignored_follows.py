"""A token may end inside an ignored lexeme (a comment, blanks) in the contextual mode only if
something can follow that lexeme: the input's end, or a byte that ends it and starts a lexeme
the parser takes (gramask/compiler/ignored_follows.py). Before, any ignored lexeme counted as
followable wherever the parser expected anything, so a walk could take ``#`` where only a
newline could end the comment and no terminal starts with one: a dead end. Oracle: lark's LALR
parser with its contextual lexer."""

from __future__ import annotations

import functools
import random
from dataclasses import replace

import lark
import numpy as np
import pytest

import gramask
from tests._support import is_program, lark_accepts

# a comment that only a newline ends, and no terminal that starts with one
COMMENT_TO_EOL = r"""
start: expr "=>" expr
expr: NAME ("+" NAME)*
NAME: /[A-Z]/
%ignore / +/
%ignore /#.*/
"""

# blanks that swallow the newline the parser waits for (lark's own lexer reads every "\n"
# here as the blanks, its first alternative, and so does gramask in lark's order: no program;
# read by the longest lexeme, the tie goes to the significant terminal)
BLANKS_EAT_NEWLINE = r"""
start: item+
item: "-" DIGIT NEWLINE
DIGIT: /[0-9]/
NEWLINE: /\n/
%ignore /[ \t\n]+/
"""


# blanks the section name also matches: the whole lexer's tie goes to SECNAME (regexes in
# grammar order), but after "]" only a newline may come, so there they are ignored blanks
BLANKS_A_NAME_ALSO_TAKES = r"""
start: section+
section: SECNAME "]" NL
SECNAME: /[a-z ]+/
NL: "\n"
%ignore / +/
"""


@functools.cache
def _compiled(text: str) -> gramask.CompiledGrammar:
    g = gramask.Grammar.from_lark(text, lexer="contextual")
    if text == BLANKS_EAT_NEWLINE:  # (the longest lexeme: see BLANKS_EAT_NEWLINE)
        g = replace(g, lark_order=())
    return gramask.compile(g, gramask.Vocabulary.bundled("gpt2"), progress=False)


def test_blanks_eat_the_newline_in_larks_order() -> None:
    with pytest.raises(gramask.GrammarError, match="NEWLINE can never be produced"):
        gramask.compile(gramask.Grammar.from_lark(BLANKS_EAT_NEWLINE),
                        gramask.Vocabulary.bundled("gpt2"), progress=False)
    assert not lark_accepts(_lark(BLANKS_EAT_NEWLINE), "- 5\n")


@functools.cache
def _lark(text: str) -> lark.Lark:
    return lark.Lark(text, parser="lalr", lexer="contextual")


def _allows(cg: gramask.CompiledGrammar, prefix: str, piece: str) -> bool:
    ids = [i for i in range(len(cg.vocab)) if cg.vocab.token_bytes(i) == piece.encode()]
    assert ids, piece
    return bool(cg.constraint(prefix).allowed()[ids[0]])


def test_a_comment_only_a_newline_ends_needs_a_complete_text() -> None:
    cg = _compiled(COMMENT_TO_EOL)
    assert not _allows(cg, "A", "#")
    assert not _allows(cg, "A +", " #")
    assert _allows(cg, "A => B", "#")
    assert _allows(cg, "A => B", " #")
    assert _allows(cg, "A", " ")
    assert is_program(cg, "A => B # done")
    assert lark_accepts(_lark(COMMENT_TO_EOL), "A => B # done")
    assert not lark_accepts(_lark(COMMENT_TO_EOL), "A # x\n=> B")


def test_blanks_that_swallow_the_newline_are_refused_where_a_newline_is_due() -> None:
    cg = _compiled(BLANKS_EAT_NEWLINE)
    assert not _allows(cg, "- 5", "\t")
    assert not _allows(cg, "- 5", " ")
    assert _allows(cg, "- 5", "\n")
    assert _allows(cg, "- 5\n-", " ")
    assert not _allows(cg, "- 5\n", " ")  # the newline in progress would become blanks
    assert is_program(cg, "- 5\n- 6\n")


@pytest.mark.parametrize("text", [COMMENT_TO_EOL, BLANKS_EAT_NEWLINE,
                                  BLANKS_A_NAME_ALSO_TAKES])
def test_random_walks_never_meet_a_dead_end(text: str) -> None:
    cg = _compiled(text)
    eos = cg.vocab.eos_token_id
    rng = random.Random(7)
    short = np.array([len(cg.vocab.token_bytes(i)) <= 2 for i in range(len(cg.vocab))])
    for _ in range(25):
        c = cg.constraint("")
        for _ in range(12):
            m = c.allowed()
            m[eos] = False
            picks = np.flatnonzero(m & short) if rng.random() < 0.7 else np.flatnonzero(m)
            if not picks.size:
                picks = np.flatnonzero(m)
            if not picks.size:
                break
            c.advance(int(rng.choice(picks)))
            done = c.data.decode("utf-8", "replace") + c.shortest_completion().text
            assert is_program(cg, done), done
            if text == COMMENT_TO_EOL:
                assert lark_accepts(_lark(text), done), done


def test_blanks_that_lose_the_whole_lexers_tie_end_as_ignored_where_the_winner_is_not_due(
        ) -> None:
    # (an INI-like grammar written by hand: the blanks after "]" were refused, as if they
    # could only end as the section name, while "x] \n" itself was a program)
    cg = _compiled(BLANKS_A_NAME_ALSO_TAKES)
    oracle = _lark(BLANKS_A_NAME_ALSO_TAKES)
    for prefix, piece in [("x]", " "), ("x] ", " "), ("a b]\n c]", " ")]:
        assert _allows(cg, prefix, piece), (prefix, piece)
        assert lark_accepts(oracle, prefix + piece + "\n")
    assert is_program(cg, "x]  \ny z]\n")
    assert not _allows(cg, "x] ", "y")  # (an ignored lexeme: no name may follow "]")
    assert not lark_accepts(oracle, "x] y\n")
