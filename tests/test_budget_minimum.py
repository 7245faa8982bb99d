"""``BudgetError.minimum`` is what gramask's plan needs: an upper bound on the fewest tokens
that complete the program, said as one. The plan spells each lexeme shortest in bytes, and a
longer spelling can take fewer tokens: with ``X: /a{4}|b{8}/`` and the tokens ``a``, ``b``,
``bbbbbbbb``, the plan is ``aaaa;`` (5 tokens) while ``bbbbbbbb`` is one. The error must not
claim "at least" 5, and a budget of exactly the reported minimum must be admitted."""

from __future__ import annotations

import itertools
import re

import pytest

import gramask

from ._support import follow_along_the_masks

GRAMMAR = 'start: X ";"\nX: /a{4}|b{8}/\n'
TOKENS = ["a", "b", "bbbbbbbb", ";", "</s>"]


def _true_minimum(prefix: str, suffix: str) -> int:
    """The fewest tokens whose text completes ``prefix``·…·``suffix`` (the oracle: ``re``)."""
    spelled = TOKENS[:-1]
    for n in range(6):
        for ids in itertools.product(spelled, repeat=n):
            if re.fullmatch(r"(a{4}|b{8});", prefix + "".join(ids) + suffix):
                return n
    raise AssertionError("no completion within 5 tokens")


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("prefix", "suffix"), [("", None), ("", ";")])
def test_budget_error_minimum_is_an_honest_upper_bound(lexer: str, prefix: str,
                                                       suffix: str | None) -> None:
    vocab = gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)
    cg = gramask.compile(gramask.Grammar.from_lark(GRAMMAR, lexer=lexer), vocab, cache=False,
                         progress=False)
    true_min = _true_minimum(prefix, suffix or "")
    with pytest.raises(gramask.BudgetError) as e:
        cg.constraint(prefix, suffix=suffix, max_tokens=0)
    reported = e.value.minimum
    assert reported >= true_min  # never fewer than exist
    if reported > true_min:  # a bound, and the message says so: not "at least"
        assert f"at most {reported}" in str(e.value) and "at least" not in str(e.value)
    for n in range(reported):
        with pytest.raises(gramask.BudgetError) as e2:
            cg.constraint(prefix, suffix=suffix, max_tokens=n)
        assert e2.value.minimum == reported and e2.value.budget == n
    # exactly the reported minimum is admitted, and its plan ends a program in time
    c = cg.constraint(prefix, suffix=suffix, max_tokens=reported)
    assert c.min_tokens_to_complete() == reported
    follow_along_the_masks(c, list(c.shortest_completion().token_ids))
    assert c.remaining_tokens == 0
