"""Fill-in-the-middle with indentation: the stacks assumed under the suffix's first line
(``gramask/runtime/fim/suffix_lexing.py``'s ``assumed_bases``), on a case of
``tools/fim_fuzz.py`` minimised, with lark's Indenter as the oracle."""

from __future__ import annotations

import random
import re

import pytest

import gramask
from tests._support import hf_tokenizer, indenter_oracle, lark_accepts, tiny
from tests.test_fim_fuzz_cases import IF_BLOCKS, _end_after_the_middle


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


# The same case under a budget: after `` y():\n `` the token `` 1`` (stack 0, 1, 2 after
# it) needs a plan of 9 tokens (``\n a():\n    a():``: back to level 1, then a header at 4
# for the suffix's body at 5), the state's own plan finds it, and 13 tokens are left at
# k = 4; the token's walked check (``FimConstraint.VERIFY_SEARCH`` = 16 states, a retry of
# 128) found none and `` 1`` was forbidden at every budget: the best-first search reaches
# it after 256 to 512 states, which a retry now searches where the budget does not bind
# (``runtime/budget/verify.py``'s ``_SLACK_DEEP``). GPT-2's tokens.
BLOCKS = r"""
start: stmt+
stmt: simple _NEWLINE
    | /[a-z]+/ "(" ")" ":" _NEWLINE _INDENT stmt+ _DEDENT
simple: "1"
_SP: /[ \t]+/
%ignore _SP
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""


def test_budget_check_finds_the_plan_back_to_a_lower_level() -> None:
    vocab = gramask.Vocabulary.bundled("gpt2")
    cg = gramask.compile(gramask.Grammar.from_lark(BLOCKS, lexer="basic"), vocab,
                         progress=False)
    prefix, middle, suffix = "l():\n", " y():\n  1\ne():\n    o():", "\n     1\n    t():\n     1\n"
    assert lark_accepts(indenter_oracle(BLOCKS), prefix + middle + suffix)
    ids = hf_tokenizer("gpt2")(middle)
    c = cg.constraint(prefix, suffix=suffix, max_tokens=len(ids) + 4)
    for i in ids:
        assert c.is_allowed(i), (c.text, vocab.token_bytes(i))
        c.advance(i)
    assert c.is_allowed(vocab.eos_token_id)


# The quotient's "no" was taken as exact wherever its branches did not accept, but the
# branches only hold the suffix's terminals under their hypotheses about the stack at the
# boundary: at most 2 levels more than the prefix's, the levels below the first line the
# prefix's (or a few variants). A middle outside them had EOS refused after it, in both
# modes; now the end is walked there (the basic mode where no branch's assumptions hold,
# the contextual mode wherever the quotient says no). Three levels above the prefix's, the
# last one's line continued by the suffix's blanks (fim_fuzz --indent 1 --seed 8846, grammar
# 0, basic: ``do1:\n  `` + ``  do734:\n        do0592:\n\n        `` before ``  :]]\n…``),
# or begun by the middle, or after a prefix that ends on a block's header; and a middle
# that closes the prefix's level 5 and opens 6 (seed 8846, grammar 2).
@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("prefix", "middle", "suffix"), [
    ("if:\n", [" ", "if", ":", "\n", " ", " ", "if", ":", "\n", " "], "  b\n"),
    ("if:\n", [" ", "if", ":", "\n", " ", " ", "if", ":", "\n", " ", " "], " b\nb\n"),
    ("if:\n", [" ", "if", ":", "\n", " ", " ", "if", ":", "\n", " ", " ", " "], "b\n"),
    ("if:\n if:", ["\n", " ", " ", "if", ":", "\n", " ", " ", " ", "if", ":", "\n", " ", " ",
                   " ", " "], "b\n"),
    ("if:\n    if:\n     b\n ", [" ", " ", " ", "if", ":", "\n", " ", " ", " ", " ", " ", " "],
     "b\n      b\n"),
])
def test_a_middle_outside_the_suffixs_stack_hypotheses_ends_complete(
        lexer: str, prefix: str, middle: list[str], suffix: str) -> None:
    _end_after_the_middle(lexer, prefix, middle, suffix)


def _blocks_program(rnd: random.Random) -> str:
    """A random IF_BLOCKS program: blocks of random widths (1-3 more than the level above),
    returns to any level below, now and then a blank line."""
    lines: list[str] = []
    stack, body = [0], False
    for _ in range(rnd.randint(2, 12)):
        if body:
            stack.append(stack[-1] + rnd.randint(1, 3))
            body = False
        elif len(stack) > 1 and rnd.random() < 0.4:
            del stack[rnd.randint(1, len(stack) - 1):]
        header = rnd.random() < 0.5
        lines.append(" " * stack[-1] + ("if:" if header else "b" * rnd.randint(1, 2)))
        body = header
    if body:
        lines.append(" " * (stack[-1] + 1) + "b")
    text = "\n".join(lines) + "\n"
    if rnd.random() < 0.3:
        j = text.find("\n", rnd.randint(0, len(text)))
        if j >= 0:
            text = text[:j] + "\n" + " " * rnd.randint(0, 4) + text[j:]
    return text


def _pieces(s: str) -> list[str]:
    return re.findall(r"if|.", s, re.S)


# The same property on random programs cut at random (14 of these 80 seeds ended with EOS
# refused before, in one mode or both: deeper stacks, levels re-indented).
@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_random_block_cuts_end_complete(lexer: str) -> None:
    cg, vocab = tiny(IF_BLOCKS, ["if", ":", "\n", " ", "b"], lexer=lexer)
    oracle = indenter_oracle(IF_BLOCKS)
    for seed in range(80):
        rnd = random.Random(seed)
        text = _blocks_program(rnd)
        i, j = sorted((rnd.randint(0, len(text)), rnd.randint(0, len(text))))
        if not lark_accepts(oracle, text) or "if" in (text[i - 1:i + 1], text[j - 1:j + 1]):
            continue  # (a cut inside ``if``: not spelt by these tokens)
        c = cg.constraint(text[:i], suffix=text[j:])
        for piece in _pieces(text[i:j]):
            t = vocab.token_id(piece)
            assert t is not None and c.is_allowed(t), (seed, piece, c.text)
            c.advance(t)
        assert c.is_allowed(vocab.eos_token_id), (seed, text[:i], text[i:j], text[j:])
