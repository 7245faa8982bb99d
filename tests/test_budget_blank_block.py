"""A block whose only statement is a blank line: under lark's ``Indenter`` a newline lexeme
takes the blank lines after it (``_NEWLINE: (/\\r?\\n[\\t ]*/)+``), so the statement's own
``_NEWLINE`` needs an ignored lexeme between the two line breaks: ``y\\n #\\n``. The plan
search never tried a newline where a line break would run on into the lexeme in progress,
so ``shortest_completion`` found nothing after ``y`` and ``max_tokens`` raised (found by
the fill-in-the-middle fuzzer).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import lark
import pytest

import gramask
from gramask.grammar import Grammar
from gramask.runtime.core.indentation import TAB_UNIT, space_pad

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import lark_fuzz_gen as gen

BLANK_BLOCK = r"""
start: stmt+
stmt: _NEWLINE | /[a-z]+/ _NEWLINE _INDENT stmt+ _DEDENT
COMMENT: /#[^\n]*/
%ignore COMMENT
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""
TOKENS = ["y", "\n", " ", "#", "\t", "\n ", " #"]


@functools.cache
def _compiled(mode: str) -> gramask.CompiledGrammar:
    vocab = gramask.Vocabulary.from_tokens([*TOKENS, "</s>"], eos_token_id=len(TOKENS))
    return gramask.compile(Grammar.from_lark(BLANK_BLOCK, lexer=mode), vocab, cache=False,
                           progress=False)


@pytest.mark.parametrize("mode", ["basic", "contextual"])
@pytest.mark.parametrize("prefix", ["y", "y\n", "y\n ", "y\n\t", "y\n y"])
def test_a_blank_line_block_is_planned_with_a_comment_between_the_breaks(
        mode: str, prefix: str) -> None:
    cg = _compiled(mode)
    oracle = lark.Lark(BLANK_BLOCK, parser="lalr", lexer=mode, postlex=gen.Indenter())
    done = cg.constraint(prefix).shortest_completion()
    oracle.parse(prefix + done.text)  # lark agrees it is complete
    b = cg.constraint(prefix, max_tokens=len(done.token_ids))
    for i in done.token_ids:
        assert b.allowed()[i]
        b.advance(i)
    assert b.is_complete()


def test_spaces_never_pad_a_line_to_another_tab_count() -> None:
    # the carry is ``spaces + TAB_UNIT * tabs``: from five spaces, ``TAB_UNIT − 5`` more
    # spaces are not a tab (the newline bound of ``y\n\t#`` tokenized such a pad, about a
    # million spaces, for every width it tried: seconds per step)
    assert space_pad(5, TAB_UNIT) is None
    assert space_pad(TAB_UNIT + 1, 2 * TAB_UNIT) is None
    assert space_pad(TAB_UNIT + 1, TAB_UNIT + 3) == 2
    assert space_pad(2, 2) == 0
    assert space_pad(3, 2) is None
