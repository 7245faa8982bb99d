"""The contextual budget's token grouping, as its memoised parts compute it: the first lexeme
end that shifts per (lexer state, allowed set) (``ContextualBudgetPlanner._first_ends``), the
sort-free distinct values of the walk (``_dense_unique``) and the memoised lexeme ends
(``ContextualRule.lexeme_end``), each against what the rule itself does byte by byte."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gramask.runtime.budget.contextual import _dense_unique
from gramask.runtime.core.parse_state import PUID

from .test_budget_contextual import PREFIXES, _contextual


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=60), st.integers(41, 90))
def test_dense_unique_is_numpy_unique(values: list[int], size: int) -> None:
    a = np.array(values, dtype=np.int64)
    slots = np.full(size, 7, dtype=np.int64)  # (scratch: whatever it holds is overwritten)
    uniq, inv = _dense_unique(a, slots)
    want, winv = np.unique(a, return_inverse=True)
    assert np.array_equal(uniq, want)
    assert np.array_equal(inv, winv.reshape(-1))


def _stepped(cx, q: int, p, data: bytes) -> int:  # type: ignore[no-untyped-def]
    """``_first_ends``' code for ``data``, from the rule's own ``step``, byte by byte: where
    a byte ends the lexeme in progress as a terminal the parser takes (a shift: whether the
    parser can is for the walk after it), the position and the lexer state there."""
    S = len(cx.rows)
    if not data:
        return -1
    cur, carry, a = q, 0, cx.allowed(p)
    for e, byte in enumerate(data):
        nq = cx.rows[cur][byte]
        if cur and not (nq >= 0 and cx.live[nq] & a) and cx.winners(cur, a) & ~cx.ignored_bits:
            return -2 - (e * S + cur)
        nxt = cx.step(cur, carry, p, byte)
        if nxt is None:
            return -1
        assert nxt[2][PUID] == p[PUID]  # (no shift: an ignored lexeme leaves the parser)
        cur, carry = nxt[0], nxt[1]
    return cur


def test_first_ends_follow_the_rule() -> None:
    """For every sampled state of C and SQL prefixes and a sample of the vocabulary (every
    token the grammar allows there, plus others): the memoised code is what stepping the
    token's bytes with ``ContextualRule.step`` gives — the lexer state it ends in with the
    parser unchanged, a failure before any shift, or the position and lexer state of the
    first lexeme end that moves the parser."""
    rnd = random.Random(3)
    checked = shifts = 0
    for name in ("c", "sql"):
        cg = _contextual(name)
        v = cg.vocab
        for pre in PREFIXES[name][:4]:
            c = cg.constraint(pre, max_tokens=40)
            for _ in range(3):
                q, _carry, p = c._history[-1]
                pl = c._budget_planner()
                cx = pl.cx
                codes = pl._first_ends(q, cx.allowed(p))
                allowed = np.flatnonzero(c._grammar_mask(c._history[-1]))
                sample = set(rnd.sample(allowed.tolist(), min(150, allowed.size)))
                sample |= set(rnd.sample(range(len(v)), 150))
                for t in sorted(sample):
                    want = _stepped(cx, q, p, v.token_bytes(t))
                    assert int(codes[t]) == want, (name, pre, t, v.token_bytes(t))
                    checked += 1
                    shifts += want <= -2
                    if want <= -2:  # the memoised lexeme end is the rule's own
                        qb = (-2 - want) % len(cx.rows)
                        p2 = cx.lexeme_end(p, qb, 0)
                        p3 = cx._end_with(p, cx.accepting[qb], 0)
                        assert (p2 is None) == (p3 is None)
                        assert p2 is None or p3 is None or p2[PUID] == p3[PUID]
                ids = np.flatnonzero(c.allowed())
                ids = ids[ids != v.eos_token_id]
                if not ids.size:
                    break
                c.advance(int(rnd.choice(ids)))
    assert checked > 3000 and shifts > 300
