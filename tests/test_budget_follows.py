"""A terminal's lexeme ends "clean" for the budget planner where the terminals that can follow
it glue on, not every terminal of the grammar. A rest-of-line ``ITEM: /-[^\\n]+/`` that only a
newline follows had no clean end (a ``NAME`` would continue it), so its cost was infinite and
no completion was found where one takes a few tokens (found on a task-list grammar from the
wild, basic lexer mode)."""

from __future__ import annotations

import pytest

import gramask
from tests._support import follow_along_the_masks, is_program

GRAMMAR = r"""
start: NAME _NL (ITEM _NL)+
NAME: /[a-z]+/
ITEM: /-[^\n]+/
_NL: /\n/
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_rest_of_line_terminal_has_a_cost(lexer: str) -> None:
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=lexer),
                         gramask.Vocabulary.bundled("gpt2"), progress=False)
    c = cg.constraint("abc\n")
    done = "abc\n" + c.shortest_completion().text
    assert is_program(cg, done)
    b = cg.constraint("abc\n", max_tokens=c.min_tokens_to_complete())
    follow_along_the_masks(b, list(b.shortest_completion().token_ids))
