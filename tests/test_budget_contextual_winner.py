"""Contextual-mode budgets finish a lexeme where its terminal accepts, not only where the
greedy lexer's winner is that terminal.

``BARE_KEY: /[A-Za-z0-9_-]+/`` defined before ``FLOAT: /-?[0-9]+(\\.[0-9]+)?/`` wins every
lexeme both match (``-0``), so the greedy lexer reads ``FLOAT`` only with a fraction. The
contextual lexer reads ``-0`` as ``FLOAT`` after ``=``, where the parser does not take
``BARE_KEY``; the planner finished the lexeme at the winner's states only and planned
``0.0`` after ``a=-`` (three tokens), so ``max_tokens`` refused the true ``0`` (found by
the Lark fuzzer on a TOML-like grammar).
"""

from __future__ import annotations

import itertools

import lark
import pytest

import gramask
from gramask.grammar import Grammar

KEY_FIRST = r"""
start: k "=" v
k: BARE_KEY
v: FLOAT
BARE_KEY: /[A-Za-z0-9_-]+/
FLOAT: /-?[0-9]+(\.[0-9]+)?/
%ignore " "
"""
FLOAT_FIRST = KEY_FIRST.replace(
    'BARE_KEY: /[A-Za-z0-9_-]+/\nFLOAT: /-?[0-9]+(\\.[0-9]+)?/',
    'FLOAT: /-?[0-9]+(\\.[0-9]+)?/\nBARE_KEY: /[A-Za-z0-9_-]+/')
TOKENS = ["a", "=", "-", "0", "1", ".", " ", "-0", "0.", ".0"]


def _fewest(parser: lark.Lark, prefix: str, most: int) -> int | None:
    """The fewest tokens of ``TOKENS`` after which lark parses ``prefix`` (brute force)."""
    for n in range(most + 1):
        for combo in itertools.product(TOKENS, repeat=n):
            try:
                parser.parse(prefix + "".join(combo))
            except lark.exceptions.LarkError:
                continue
            return n
    return None


@pytest.mark.parametrize("grammar", [KEY_FIRST, FLOAT_FIRST], ids=["key-first", "float-first"])
@pytest.mark.parametrize("prefix", ["a=-", "a = -", "a=", "a=-0."])
def test_budget_finishes_a_lexeme_the_parser_reads_as_a_losing_terminal(
        grammar: str, prefix: str) -> None:
    assert FLOAT_FIRST != KEY_FIRST
    vocab = gramask.Vocabulary.from_tokens([*TOKENS, "</s>"], eos_token_id=len(TOKENS))
    cg = gramask.compile(Grammar.from_lark(grammar, lexer="contextual"), vocab, cache=False,
                         progress=False)
    fewest = _fewest(lark.Lark(grammar, parser="lalr", lexer="contextual"), prefix, 3)
    assert fewest is not None
    done = cg.constraint(prefix).shortest_completion()
    assert len(done.token_ids) == fewest
    assert cg.constraint(prefix + done.text).is_complete()
    # a budget of exactly the fewest tokens is admitted, and every true completion of that
    # length is allowed under it
    for combo in itertools.product(range(len(TOKENS)), repeat=fewest):
        text = prefix + "".join(TOKENS[i] for i in combo)
        try:
            lark.Lark(grammar, parser="lalr", lexer="contextual").parse(text)
        except lark.exceptions.LarkError:
            continue
        b = cg.constraint(prefix, max_tokens=fewest)
        for i in combo:
            assert b.allowed()[i], (text, TOKENS[i])
            b.advance(i)
        assert b.is_complete()
