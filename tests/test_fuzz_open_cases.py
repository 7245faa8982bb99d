"""Open cases the fuzzers found on 2026-11-27 (``tools/fim_fuzz.py`` seeds 503 and 512),
minimised, with lark as the oracle. Both were in main before that day's merges too
(commit 303d74d), so they are not regressions. Any still open is a strict xfail: a fix turns
it red, and then the mark goes."""

from __future__ import annotations

import lark
import pytest

import gramask
from tests._support import tiny

# A terminal one of whose followers can never stand right after it (``T0`` then ``"in"``, no
# ignored separator: ``xin`` is one T0) has no clean end in the budget's lexeme costs
# (``LexemeCosts._greedy_clean_ends`` asks every follower), so every bound through T0 is
# infinite and each budgeted mask keeps only the plan's first token: under any
# ``max_tokens`` the start allowed ``a`` alone, though ``x\n`` (two tokens) is a program.
# Now such a follower does not decide the clean ends, and the bounds price it infinite.
UNCLEAN = r"""
start: simple _NL
simple: T0 | T0 ":" T0 "in"
T0: /\w+/
_NL: /\n/
"""


def test_budget_keeps_tokens_of_a_terminal_one_follower_cannot_follow() -> None:
    cg, vocab = tiny(UNCLEAN, ["a", "x", "in", ":", "\n"])
    assert lark.Lark(UNCLEAN, parser="earley", lexer="basic").parse("x\n")
    x = vocab.token_id("x")
    assert x is not None and cg.constraint("").is_allowed(x)  # unbudgeted: allowed
    assert cg.constraint("", max_tokens=8).is_allowed(x)


def test_budget_walks_past_a_follower_that_never_glues_end_complete() -> None:
    # the pair that never glues is priced infinite, not free: every budgeted walk (all of
    # them, the vocabulary is small) still ends in a program lark accepts
    cg, vocab = tiny(UNCLEAN, ["a", "x", "in", ":", "\n"])
    oracle = lark.Lark(UNCLEAN, parser="earley", lexer="basic")
    eos = vocab.eos_token_id

    def walk(c: gramask.Constraint, text: bytes, left: int) -> int:
        mask = c.allowed()
        assert mask.any(), text
        ends = 0
        if mask[eos]:
            assert c.is_complete()
            oracle.parse(text.decode())
            ends += 1
        for t in range(len(vocab)):
            if t != eos and mask[t]:
                assert left > 0, text
                d = c.clone()
                d.advance(t)
                ends += walk(d, text + vocab.token_bytes(t), left - 1)
        return ends

    for budget in range(2, 6):
        assert walk(cg.constraint("", max_tokens=budget), b"", budget) > 0


# Fill-in-the-middle under lark's Indenter: the middle ``" do1:\n"`` opens a block 4 columns
# in (the prefix's levels are 0, 1 and 4) and the suffix's line stands at 5. The true middle
# is taken token by token without a budget; with ``max_tokens`` = its tokens + k (k = 0, 1,
# 4) the budget forbade its first token: the plan's route wrote the new block's line break
# with the indentation the costs chose (``\n`` + 5 spaces, five tokens more), where the
# suffix's own spaces were all the line needed. The basic mode here; the contextual mode
# showed it with the GPT-2 vocabulary (the fuzzer's case), not with this small one.
INDENTED = r"""
start: stmt+
stmt: simple _NEWLINE
    | "do" T_ARG ":" _NEWLINE _INDENT stmt+ _DEDENT
simple: LETTER
%import common.LETTER
T_ARG: /[0-9]+/
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""
PREFIX, MIDDLE, SUFFIX = "do9:\n m\ndo1:\n do5:\n   ", " do1:\n", "     i\n"
PIECES = [" do", "1", ":", "\n"]  # GPT-2's tokens of the middle


def test_budget_takes_a_middle_that_opens_a_deeper_block() -> None:
    cg, vocab = tiny(INDENTED, [*PIECES, " ", "a", "i", "m", "9", "5", "do"])
    ids = [vocab.token_id(p) for p in PIECES]
    assert all(i is not None for i in ids)

    def forced(budget: int | None) -> bool:
        c = cg.constraint(PREFIX, suffix=SUFFIX, max_tokens=budget)
        for i in ids:
            assert i is not None
            if not c.is_allowed(i):
                return False
            c.advance(i)
        return c.is_complete() or bool(c.allowed()[vocab.eos_token_id])

    assert forced(None)  # the true middle without a budget
    for k in (0, 1, 4):
        assert forced(len(ids) + k), k


# The rule above must not reach ignored terminals: every follower of a line comment glues
# onto it (``b`` after ``-- x`` is more comment), and taking them all as "never follows"
# made every end of the comment clean, so no plan closed it with a line break:
# ``shortest_completion()`` after ``a -- x`` raised NoCompletionError (SQL's ``--``,
# C's ``//``; four tests of the suite), and budgets then refused every token.
COMMENTED = r"""
start: "a" "b"
COMMENT: /--[^\n]*/
%ignore COMMENT
%ignore /[ \n]+/
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_comment_in_progress_is_closed_by_a_line_break(lexer: str) -> None:
    cg, _ = tiny(COMMENTED, ["a", "b", " ", "\n", "-", "--", "x"], lexer=lexer)
    for prefix in ("a --", "a -- x"):
        done = cg.constraint(prefix).shortest_completion().text
        assert done == "\nb"
        assert lark.Lark(COMMENTED, parser="lalr", lexer="basic").parse(prefix + done)
