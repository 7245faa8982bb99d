"""Fill-in-the-middle budgets' fast path (gramask/runtime/budget/group_bounds.py): a group of
tokens is admitted without a walk of its own where an assembled completion (the lexeme's
witness, then a plan walked from the lexeme boundary) fits. Pinned alone, without the walked
checks: every token it admits is allowed by the exact answer (the grammar intersected with
(vocabulary)^{≤n}, tests/_fim_reference.py), and the completion ``advance`` keeps after it
walks to an end within what is left."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask.grammar import Grammar
from gramask.runtime.budget.verify import verified_step

from . import _fim_reference as ref


def _fast_walk(seed: int) -> tuple[int, int]:
    """A random small grammar, prefix and suffix, a random budget; at every step the fast
    path's admissions are checked against the exact mask and their completions walked.
    Returns (tokens the fast path admitted, tokens the grammar allowed)."""
    rnd = random.Random(seed)
    case = ref.random_budget_case(rnd, fim=True)
    g, tokens, cfg, prefix, suffix, need = (case.grammar, case.tokens, case.cfg, case.prefix,
                                            case.suffix, case.need)
    if need is None:
        return 0, 0
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    cg = gramask.compile(Grammar.from_lark(g.to_lark(), lexer="basic"), vocab, cache=False)
    budget = need + rnd.randint(0, 4)
    try:
        c = cg.constraint(prefix, suffix=suffix, max_tokens=budget)
    except (gramask.LimitExceededError, gramask.BudgetError):
        return 0, 0
    admitted = allowed = 0
    middle = ""
    for _ in range(budget + 1):
        left = budget - c.num_tokens
        if left < 1 or c.is_complete():
            break
        st_ = c._history[-1]
        try:
            m = c._grammar_mask(st_)
            rec = verified_step(c, st_, left)
            every = c._bounded_groups(st_, m, rec, left - 1)
        except gramask.LimitExceededError:
            return admitted, allowed
        fast = m.copy() if every else m & rec.keep & ~_plan_first(rec, m)
        allowed += int(m[:-1].sum())
        for t in np.flatnonzero(fast[:-1]).tolist():
            assert ref.budget_allowed(cfg, prefix + middle, tokens[t], tokens, left - 1,
                                      suffix), (g.to_lark(), prefix, middle, tokens[t], suffix)
            done = rec.after(t)
            assert done is not None and len(done) <= left - 1
            s = c._walk(st_, vocab.token_bytes(t))
            for d in done:
                assert not isinstance(s, int)
                s = c._walk(s, vocab.token_bytes(d))
            assert not isinstance(s, int) and c._complete(s), (prefix, middle, tokens[t], done)
            admitted += 1
        choices = np.flatnonzero(c.allowed()[:-1]).tolist()
        if not choices:
            break
        t = rnd.choice(choices)
        c.advance(t)
        middle += tokens[t]
    return admitted, allowed


def _plan_first(rec: object, m: np.ndarray) -> np.ndarray:
    """The step plan's first token, which ``verified_step`` keeps by itself (not the fast
    path's admission)."""
    out = np.zeros_like(m)
    plan = getattr(rec, "plan", None)
    if plan:
        out[plan[0]] = True
    return out


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_fast_path_admits_only_what_the_exact_answer_allows(seed: int) -> None:
    _fast_walk(seed)


def test_fast_path_decides_most_steps_of_small_grammars() -> None:
    """Not vacuous: over fixed seeds the fast path admits a good share of what the grammar
    allows (it gives up on tokens inside a newline lexeme, on lexemes whose witness spans
    several tokens and where no plan is found)."""
    admitted = allowed = 0
    for seed in range(40):
        a, b = _fast_walk(seed)
        admitted += a
        allowed += b
    assert allowed > 50
    assert admitted / allowed > 0.4, (admitted, allowed)
