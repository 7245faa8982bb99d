"""Fill-in-the-middle: masks and ends that take the code after the cursor into account."""

from __future__ import annotations

import numpy as np
import pytest

import gramask

from .conftest import compiled

BALANCED = 'start: "0" start "1" | '


@pytest.fixture(scope="module")
def balanced() -> gramask.CompiledGrammar:
    g = gramask.Grammar.from_lark(BALANCED, start="start")
    v = gramask.Vocabulary.from_tokens([b"0", b"1", b"00", b"11", b"</s>"], eos_token_id=4)
    return gramask.compile(g, v, progress=False)


def _force(c: gramask.Constraint, ids: list[int]) -> gramask.Constraint:
    for t in ids:
        assert c.allowed()[t], (t, c.text)
        c.advance(t)
    return c


@pytest.mark.parametrize(("middle", "complete"), [
    ([], False),          # 0111
    ([0], False),         # 00111
    ([0, 0], True),       # 000111
    ([2], True),          # 000111 with one token
    ([0, 0, 0, 1], True),  # 00001111
])
def test_balanced_ends(balanced: gramask.CompiledGrammar, middle: list[int], complete: bool) -> None:
    c = _force(balanced.constraint(prefix="0", suffix="111"), middle)
    assert c.is_complete() is complete
    assert bool(c.allowed()[4]) is complete


def test_empty_suffix_is_the_prefix_constraint(balanced: gramask.CompiledGrammar) -> None:
    a = balanced.constraint(prefix="00")
    b = balanced.constraint(prefix="00", suffix="")
    for t in [1, 1]:
        assert np.array_equal(a.allowed(), b.allowed())
        a.advance(t)
        b.advance(t)
    assert a.is_complete() and b.is_complete()


def test_python_end_needs_the_suffix() -> None:
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix="def f(x):\n    y = ", suffix="\n    return y\n\nprint(f(1))\n")
    assert not c.is_complete()
    c.advance(_tok(cg, b"x"))
    assert c.is_complete()


def _tok(cg: gramask.CompiledGrammar, data: bytes) -> int:
    v = cg.vocab
    return next(i for i in range(len(v)) if not v.is_special(i) and v.token_bytes(i) == data)


def test_balanced_mask_follows_the_suffix(balanced: gramask.CompiledGrammar) -> None:
    c = balanced.constraint(prefix="0", suffix="111")
    # 0 1 ... 111 never balances: "1" and "11" are masked; "0" and "00" are not
    assert c.allowed().tolist() == [True, False, True, False, False]
    c.advance(2)  # 000 + 111
    assert c.allowed().tolist() == [True, False, True, False, True]


def test_suffix_no_middle_connects_to(balanced: gramask.CompiledGrammar) -> None:
    with pytest.raises(gramask.InvalidSuffixError) as e:
        balanced.constraint(prefix="0", suffix="10")
    assert e.value.position is not None
    with pytest.raises(gramask.InvalidSuffixError):
        compiled("json", "gpt2").constraint(prefix="[", suffix="}")


def test_python_suffix_inside_an_identifier() -> None:
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix="import o", suffix="s\nos.path\n")
    assert c.is_complete()  # import os
    assert c.allowed()[_tok(cg, b"s")]  # import oss: os.path still fine... as a name
    assert not c.allowed()[_tok(cg, b"(")]
    c.advance(_tok(cg, b"."))
    assert c.is_complete()  # import o.s


def test_python_mask_knows_the_closing_bracket() -> None:
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix="x = foo(a, ", suffix=")\nprint(x)\n")
    assert not c.allowed()[_tok(cg, b"]")]
    c.advance(_tok(cg, b"b"))
    assert c.is_complete()
    c2 = cg.constraint(prefix="x = foo(a, ", suffix="]\n")
    assert c2.allowed()[_tok(cg, b"[")]
    c2.advance(_tok(cg, b"b"))
    assert not c2.is_complete()  # x = foo(a, b]
