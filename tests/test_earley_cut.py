"""Cut Earley sets (``Automaton.cut``): a shift that completes a phrase below the cut raises
:class:`BelowCut` every time it is asked (the failure is memoised, not forgotten), and the
exact set it was cut from is not harmed by it."""

from __future__ import annotations

import pytest

import gramask
from gramask.runtime.core.earley import BelowCut
from gramask.runtime.core.parse_state import ES

# after ``x = (a`` a closing bracket completes the bracketed atom, which began below a cut of
# depth 1; a "+" completes nothing
OPEN_ENDS = r"""
start: stmt*
stmt: NAME "=" expr | "if" "(" expr ")" "{" stmt* "}"
?expr: expr "+" atom | atom
?atom: NAME | NUMBER | "(" expr ")"
NAME: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""


def test_a_shift_completing_below_the_cut_raises_each_time_and_leaves_the_exact_set() -> None:
    chars = sorted(set("xa=+(){}if 01"))
    vocab = gramask.Vocabulary.from_tokens([c.encode() for c in chars] + [b"</s>"],
                                           eos_token_id=len(chars))
    cg = gramask.compile(gramask.Grammar.from_lark(OPEN_ENDS, lexer="contextual"), vocab,
                         cache=False, progress=False)
    ctx = cg._runtime().contextual.ctx
    aut = ctx.automaton
    rpar, plus = aut.symbols.index("RPAR"), aut.symbols.index("PLUS")
    c = cg.constraint(prefix="x = (a ")
    _q, _carry, p = c._history[-1]
    es = p[ES]
    top = aut.cut(es, 1)
    for _ in range(2):  # the second ask meets the memoised failure
        with pytest.raises(BelowCut):
            aut.advance(top, rpar)
    assert aut.advance(top, plus) is not None  # "+" completes nothing below: shared work
    after = aut.advance(es, rpar)  # the exact set
    assert after is not None and after is aut.advance(es, rpar)
    assert cg.constraint(prefix="x = (a) y = 1").allowed().any()
