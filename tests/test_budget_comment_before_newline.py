"""An ignored comment that only a significant newline ends (``COMMENT: /#[^\\n]*/`` ignored
beside ``_NL: /(\\r?\\n)+/``, the usual shape of a line-based Lark grammar): the basic mode's
cost tables have no clean end for the comment (the newline that ends it is a parser
terminal, not ignored whitespace), so its bound was INF and a budget forbade every comment
token where a statement still needed its newline, at any ``max_tokens`` (fim_fuzz seed 9418:
``..#`` refused first). A bound of INF on tokens the grammar allows now gets a small search.
"""

from __future__ import annotations

import functools

import pytest

import gramask

from ._support import assert_budget_keeps_what_fits, every_budgeted_walk_ends_complete

LINES = ('start: stmt+\nstmt: NAME? _NL\nNAME: /[a-z]+/\nCOMMENT: /#[^\\n]*/\n'
         '%ignore COMMENT\n%ignore " "\n_NL: /(\\r?\\n)+/\n')
VOCAB = ["#", " #", "# x", "#\n", "abc", " ", "\n", "\n\n", "x", " x"]


@functools.cache
def _compiled(mode: str) -> gramask.CompiledGrammar:
    v = gramask.Vocabulary.from_tokens([*VOCAB, "</s>"], eos_token_id=len(VOCAB))
    return gramask.compile(gramask.Grammar.from_lark(LINES, lexer=mode), v, cache=False,
                           progress=False)


@pytest.mark.parametrize("mode", ["basic", "contextual"])
@pytest.mark.parametrize("prefix", ["", "abc", "abc ", "abc\n", "x #"])
def test_a_comment_whose_completion_fits_is_allowed(mode: str, prefix: str) -> None:
    assert_budget_keeps_what_fits(_compiled(mode), VOCAB, prefix, (2, 3, 20))


@pytest.mark.parametrize("mode", ["basic", "contextual"])
def test_every_budgeted_walk_ends_complete_in_time(mode: str) -> None:
    every_budgeted_walk_ends_complete(_compiled(mode), len(VOCAB), range(1, 5))
