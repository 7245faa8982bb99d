"""Fill-in-the-middle where the middle must open a block at a width no line of the prefix
has, then join the suffix's first line to its last with a line continuation: the suffix's
``  y = 2`` is indented less than the function body and ``z = 3`` sits at a width (3, 5) the
middle's block must take (``\\nif x:\\n   a = \\\\``). The planner's fallback search priced
every newline at the worst width a token could leave (64 columns: 65 GPT-2 tokens) and ended
the middle at the suffix's marker whatever the indentation stack, so the plan ranked last
among thousands of one-line expressions and ``shortest_completion()`` raised
``NoCompletionError`` after ~5 s. Its estimate now prices newlines at the widths it spells
(the suffix's among them) and counts the blocks the middle still has to open to reach a stack
the suffix's branches accept (with a block header last where the suffix's first newline
indents)."""

from __future__ import annotations

import ast

import pytest

from gramask.runtime.budget.state_costs import stack_distance

from ._support import compiled, follow_along_the_masks, hf_tokenizer

PREFIX = "def f(x):\n    return x"


@pytest.mark.parametrize(("suffix", "joined"), [
    ("\n  y = 2\n   z = 3\n", True),
    ("\n  y = 2\n     z = 3\n", True),
    # the suffix's first newline indents: the middle ends with a block header (``\nif...:``)
    ("\n  y = 2\n  z = 3\n", False),
])
def test_middle_opens_a_block_at_the_suffix_width(suffix: str, joined: bool) -> None:
    cg = compiled("python", "gpt2")
    c = cg.constraint(PREFIX, suffix=suffix)
    sc = c.shortest_completion()
    assert sc.data.endswith(b"\\") == joined
    ast.parse(PREFIX + sc.text + suffix)
    follow_along_the_masks(c, sc.token_ids)


@pytest.mark.parametrize(("prefix", "middle", "suffix"), [
    ("class A:\n", "  def f(self):", "\n    return 1\n"),
    ("class A:\n", "  def f(self):\n", "    return 1\nx = 2\n"),
    ("if x:\n", "  if y:", "\n    pass\n"),
])
def test_two_column_blocks_the_middle_opens_under_a_prefix_with_one_level(
        prefix: str, middle: str, suffix: str) -> None:
    """A prefix with one open level shows no indentation step; the middle's own step of 2
    opens two blocks the suffix's end closes. EOS used to be forbidden after the true middle
    (the stacks assumed below the suffix's first line filled the gap on a step of 4 only;
    found by ``tools/fim_fuzz.py --indent 1 --seed 60``)."""
    ast.parse(prefix + middle + suffix)
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix, suffix=suffix)
    for t in hf_tokenizer("gpt2")(middle):
        assert c.is_allowed(t)
        c.advance(t)
    assert c.is_complete()


def test_stack_distance() -> None:
    """Tokens from an indentation stack to one the suffix needs: nothing when it holds, a
    dedenting newline, a header and a newline per block to open (here a newline costs one
    token per byte, a header 2)."""
    def nl(w: int) -> int:
        return 1 + w

    want = ((0,), 3, 0, False)  # the stack (0, 3)
    assert stack_distance((0, 3), want, 2, nl) == 0
    assert stack_distance((0,), want, 2, nl) == 2 + 4  # open 3
    assert stack_distance((0, 4), want, 2, nl) == 1 + 2 + 4  # dedent to 0, open 3
    assert stack_distance((0, 3, 5), want, 2, nl) == 4  # dedent to 3
    assert stack_distance((0, 3), ((0,), 3, 1, False), 2, nl) == 2 + 5  # one block above 3
    assert stack_distance((0,), ((0,), None, 0, False), 2, nl) == 0  # the suffix indents
    assert stack_distance((0, 4), ((0,), None, 0, False), 2, nl) == 1
    assert stack_distance((0, 4), ((0,), None, 0, True), 2, nl) == 1 + 2  # and a header
