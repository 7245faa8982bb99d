"""Disagreements with lark found on held-out Lark grammars (written outside the repository,
checked by ``tools/heldout_lark_check.py``), each pinned on its minimal grammar with lark's
own parser as the oracle."""

from __future__ import annotations

import logging

import lark
import pytest

import gramask
from tests._support import is_program, lark_accepts, tiny

# A Go-like grammar's operand rule (``NAME | "nil" | ...``) next to ``NAME ":=" ...``: lark's
# contextual lexer types ``nil`` as the keyword wherever the parser takes both (its
# ``unless``), even though one rule derives both; only the reserved mode exempts such a pair.
SOFT_PAIR = r"""
start: x | NAME ":=" x
x: NAME | "nil"
NAME: /[a-z]+/
%ignore " "
"""
SOFT_TOKENS = ["nil", "a", "ab", " ", ":=", ":", "=", "n", "il", " :="]


@pytest.mark.parametrize("text", ["nil := a", "a := nil", "nil", "ab := nil", "nil := nil",
                                  "a", "nila := a"])
def test_a_soft_pair_keyword_wins_as_in_lark(text: str) -> None:
    cg, _ = tiny(SOFT_PAIR, SOFT_TOKENS, lexer="contextual")
    oracle = lark.Lark(SOFT_PAIR, parser="lalr", lexer="contextual")
    assert is_program(cg, text) == lark_accepts(oracle, text)


def test_a_soft_pair_keyword_is_no_collision(caplog: pytest.LogCaptureFixture) -> None:
    """The keyword wins there, so the lexeme is not both: no warning of a collision."""
    with caplog.at_level(logging.WARNING, logger="gramask"):
        tiny(SOFT_PAIR, SOFT_TOKENS, lexer="contextual")
    assert "NAME and NIL" not in caplog.text


def test_a_soft_pair_stays_soft_in_the_reserved_mode() -> None:
    """``reserved_keywords`` keeps its exception (python.lark's ``match``, ``case``): the
    pair is no reserved pair, so ``nil`` may still be the name ``:=`` needs."""
    vocab = gramask.Vocabulary.from_tokens([*SOFT_TOKENS, "</s>"], eos_token_id=len(SOFT_TOKENS))
    g = gramask.Grammar.from_lark(SOFT_PAIR, lexer="contextual", reserved_keywords=True)
    cg = gramask.compile(g, vocab, cache=False)
    assert is_program(cg, "nil := a")


# Mistakes made while writing the held-out grammars: lark's message names neither the line
# nor (for an %import) the statement at fault, and calls a terminal a rule.
@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('start: x\nx: "a" NOPE\n', 2, "terminal 'NOPE' is used but not defined"),
        ('start: x\nx: "a" y\n', 2, "rule 'y' is used but not defined"),
        ('start: NUMBER X\n%import common.NUMBER\n%import common.NOPE -> X\n', 3,
         "%import common.NOPE: common defines no terminal NOPE"),
        ('%import common (WS, NOPE)\nstart: WS NOPE\n', 1,
         "%import common: common defines no terminal NOPE"),
        ('start: "x"\n%ignore " "\n%ignore /#[^\\n]*/\n%ignore /\\s*/\n', 4,
         "%ignore /\\s*/ matches the empty string"),
        ('start: x\n%import .nowhere.x\n', 2, "%import .nowhere.x: no grammar file"),
    ],
)
def test_load_errors_name_the_statement_and_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(gramask.GrammarError) as info:
        gramask.Grammar.from_lark(text, source="g.lark")
    assert words in str(info.value) and str(info.value).startswith("g.lark: ")
    assert info.value.line == line
