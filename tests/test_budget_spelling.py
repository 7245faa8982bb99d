"""Budgets with a vocabulary that cannot spell every lexeme on its own: here ``=`` exists only
inside longer tokens (``a=``, ``=b``, ``= 1``, ``=(``). A plan must be made of this
vocabulary's tokens, so the planner may never count ``=`` as one token, and a mask may never
admit a token whose only completions need what the vocabulary cannot spell.

Judged exactly against a breadth-first search over the unbudgeted constraint's own walks with
this vocabulary: every token a budget mask admits has a completion of at most the tokens left
after it, every plan walks to a complete program in as many tokens as it claims and never in
fewer than the exact minimum, and budgeted random walks end complete.

Not checked: completeness. The planner spells a completion lexeme by lexeme, so a route
through a lexeme this vocabulary spells only fused with its neighbour (``=b``, ``1;``) is
not found: on this grammar and vocabulary about one in six of the tokens whose exact minimum
fits is forbidden, and where ``;`` exists only fused no budget can be planned at all
(``NoCompletionError``). Forbidding is the safe side.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramask

from ._support import ExactFewest, follow_along_the_masks, tiny

GRAMMAR = r"""
start: stmt+
stmt: NAME "=" value ";"
?value: NAME | NUMBER | "(" value ")"
NAME: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""
# no "=" alone
TOKENS = ["a", "b", "ab", "a=", "=b", "=(", "1", "12", "1;", "b;", ";a", ";", "(", ")", ");",
          " ", " a", "a =", "= 1"]
PREFIXES = ["", "a", "ab", "a=", "a = (", "a=1;b", "b = 12", "a=(("]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_budgets_plan_and_admit_only_what_this_vocabulary_spells(lexer: str) -> None:
    cg, _ = tiny(GRAMMAR, TOKENS, lexer=lexer)
    eos = len(TOKENS)
    ex = ExactFewest(cg)
    walks = 0
    for prefix in PREFIXES:
        for budget in range(1, 9):
            try:
                c = cg.constraint(prefix, max_tokens=budget)
            except gramask.BudgetError as e:
                # the minimum it names is a real completion's: never below the exact one
                need = ex.fewest(cg.constraint(prefix)._history[-1])
                assert need is None or (e.minimum is not None and e.minimum >= need)
                continue
            except gramask.NoCompletionError:
                continue  # no plan found (see the module docstring): refused, never unsound
            rnd = random.Random(budget)
            while True:
                st, left = c._history[-1], c.remaining_tokens
                assert left is not None
                plan = c.shortest_completion().token_ids
                need = ex.fewest(st)
                assert need is not None and need <= len(plan) == c.min_tokens_to_complete()
                # the plan is this vocabulary's tokens, allowed one by one, and ends complete
                follow_along_the_masks(c.clone(), list(plan))
                m = c.allowed()
                assert m.any()
                for t in np.flatnonzero(m[:eos]).tolist():
                    after = c._walk(st, TOKENS[t].encode())
                    assert not isinstance(after, int)
                    f = ex.fewest(after)
                    assert f is not None and f <= left - 1, (prefix, c.text, TOKENS[t])
                t = int(rnd.choice(np.flatnonzero(m)))
                if t == eos:
                    break
                c.advance(t)
            assert c.is_complete()
            walks += 1
    assert walks >= len(PREFIXES)
