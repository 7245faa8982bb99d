"""Fill-in-the-middle with indentation: the stacks assumed under the suffix's first line
(``gramask/runtime/fim/suffix_lexing.py``'s ``assumed_bases``), on a case of
``tools/fim_fuzz.py`` minimised, with lark's Indenter as the oracle."""

from __future__ import annotations

import pytest

from tests.test_fim_fuzz_cases import _end_after_the_middle


# The suffix's first line opens a block (width 5) and a later one returns to 4, a level the
# prefix never showed: the stack below 4 then holds what the middle opened below it. The
# assumed stacks skipped a count the stack filled on the prefix's step already had ([0, 1]
# beside [0, 4]), so the middle `` if:\n    if:`` (stack 0, 1, 4) had no branch with three
# levels under the line back at 4, and EOS was refused after it; the budget's plans then
# had to go round by the top level (``\nif:\n    if:``), which the token checks' searches
# missed at every budget (fim_fuzz --indent 1 --seed 8804, grammar 1, basic: `` 1``
# forbidden after ``  krby():\n   ``).
@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("prefix", "middle", "suffix"), [
    ("if:\n", [" ", "if", ":", "\n", " ", " ", " ", " ", "if", ":"], "\n     b\n    b\n"),
    ("if:\n", [" ", "if", ":", "\n", " ", " ", " ", " ", "if", ":"],
     "\n     b\n    if:\n     b\n"),
    ("if:\n  \n", [" ", " ", "if", ":", "\n", " ", " ", " ", " ", "b", "\n", " ", " ", " ", " ",
                   "if", ":"], "\n  \n      b\n    if:\n\n     b\n"),
])
def test_a_suffix_line_back_at_a_level_the_middle_opened_above_another_ends_complete(
        lexer: str, prefix: str, middle: list[str], suffix: str) -> None:
    _end_after_the_middle(lexer, prefix, middle, suffix)
