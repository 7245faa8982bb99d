"""A blank that is both a whole ignored lexeme and the start of the newline terminal
(``%ignore /[ \\t]+/`` beside ``_NL: /\\s*\\n\\s*/``, a held-out Go-like grammar): ``\\n``
right after it runs on into one ``_NL``, so the blank had no clean end and the budget's
bounds through it were infinite. ``:=`` then `` `` was refused at every budget, though
``1\\n`` finishes it in two tokens (issue 24).
"""

from __future__ import annotations

import functools

import pytest

import gramask

from ._support import assert_budget_keeps_what_fits, every_budgeted_walk_ends_complete

GO_LIKE = 'start: ":=" INT _NL\nINT: /\\d+/\n_NL: /\\s*\\n\\s*/\n%ignore /[ \\t]+/\n'
SHORT = [":=", " ", "1", "\n"]
LONG = [*SHORT, " 1", "12", ":= ", "1\n", " \n", "\n ", "\t", "2"]


@functools.cache
def _compiled(mode: str, vocab: tuple[str, ...]) -> gramask.CompiledGrammar:
    v = gramask.Vocabulary.from_tokens([*vocab, "</s>"], eos_token_id=len(vocab))
    return gramask.compile(gramask.Grammar.from_lark(GO_LIKE, lexer=mode), v, cache=False,
                           progress=False)


@pytest.mark.parametrize("mode", ["basic", "contextual"])
@pytest.mark.parametrize("vocab", [SHORT, LONG], ids=["short", "long"])
@pytest.mark.parametrize("prefix", [":=", ":= ", ":= 1", ":=1 "])
def test_a_token_whose_completion_fits_is_allowed(mode: str, vocab: list[str],
                                                  prefix: str) -> None:
    assert_budget_keeps_what_fits(_compiled(mode, tuple(vocab)), vocab, prefix, (3, 4, 10))


@pytest.mark.parametrize("mode", ["basic", "contextual"])
@pytest.mark.parametrize("vocab", [SHORT, LONG], ids=["short", "long"])
def test_the_blank_is_allowed_before_a_suffix(mode: str, vocab: list[str]) -> None:
    # fill-in-the-middle: ":=" + middle + "\n"; " 1" is a middle of two tokens
    cg = _compiled(mode, tuple(vocab))
    assert cg.constraint(":=", suffix="\n").allowed()[1]
    for budget in (2, 10):
        assert cg.constraint(":=", suffix="\n", max_tokens=budget).allowed()[1], budget


@pytest.mark.parametrize("mode", ["basic", "contextual"])
def test_every_budgeted_walk_ends_complete_in_time(mode: str) -> None:
    # soundness beside the fix: the blank's new clean end never admits a token that
    # strands the walk (every path through the budgeted masks, budgets 2 to 5)
    every_budgeted_walk_ends_complete(_compiled(mode, tuple(LONG)), len(LONG), range(2, 6))
