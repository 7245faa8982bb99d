"""Fill-in-the-middle: masks and ends that take the code after the cursor into account."""

from __future__ import annotations

import numpy as np
import pytest

import gramask

from .conftest import compiled

BALANCED = 'start: "0" start "1" | '


@pytest.fixture(scope="module")
def balanced() -> gramask.CompiledGrammar:
    g = gramask.Grammar.from_lark(BALANCED, start="start", lexer="basic")
    v = gramask.Vocabulary.from_tokens([b"0", b"1", b"00", b"11", b"</s>"], eos_token_id=4)
    return gramask.compile(g, v, progress=False)


def test_contextual_mode_fim() -> None:
    """FIM works in the contextual mode (tests/test_fim_contextual.py), with Python-style
    indentation too (tests/test_fim_contextual_indent.py)."""
    g = gramask.Grammar.from_lark(BALANCED, start="start", lexer="contextual")
    v = gramask.Vocabulary.from_tokens([b"0", b"1", b"</s>"], eos_token_id=2)
    cg = gramask.compile(g, v, cache=False, progress=False)
    c = cg.constraint(prefix="0", suffix="1")
    assert c.allowed()[2] and c.allowed()[0] and not c.allowed()[1]
    py = gramask.grammars.load("python", lexer="contextual")
    small = gramask.Vocabulary.from_tokens([b"x", b"\n", b"</s>"], eos_token_id=2)
    cpy = gramask.compile(py, small, cache=False, progress=False)
    c = cpy.constraint(prefix="x", suffix="\n")
    assert c.is_complete() and c.allowed()[2] and c.allowed()[0]


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


# --------------------------------------------------------------------------- Python cases

PY_CASES = [
    # (prefix, middle, suffix): the middle is one program's missing piece
    ("def f(x):\n    return x", " + 1", "\n\nprint(f(2))\n"),
    ("x = ", "1", "  # a comment after the cursor\ny = x\n"),  # suffix starts with whitespace
    ("x = 1\n", "# note", "\ny = 2\n"),  # a comment continued by the suffix
    ("s = 'hel", "lo wor", "ld'\n"),  # inside a string
    ("value = comp", "ute_tot", "al(3)\n"),  # inside an identifier
    ("if a:\n    b = 1\n", "else:\n    b = 2\n", "print(b)\n"),  # DEDENT then a new block
    ("def g():\n    if a:\n", "        return 1\n", "    return 2\n"),  # INDENT in the middle
    ("for i in range(3):\n    x = [i,\n", "         i + 1]", "\n    print(x)\n"),  # brackets
    ("y = (1 +\n", "     2", ")\n"),  # the middle is inside brackets opened by the prefix
    ("class A:\n    def f(self):\n        pass\n", "\n    def g(self", "):\n        pass\n"),
    ("", "import os", "\nos.getcwd()\n"),  # empty prefix
    ("x = 1\n", "", ""),  # empty middle and suffix
    ("x = 1.", "5e", "3\n"),  # a number continued by the suffix
]


@pytest.mark.parametrize(("prefix", "middle", "suffix"), PY_CASES)
def test_python_true_middle_is_allowed(prefix: str, middle: str, suffix: str) -> None:
    """Completeness on hand-picked boundaries: every byte of the true middle, forced one
    token per byte-level piece, is allowed, and EOS is allowed exactly at its end."""
    import ast

    cg = compiled("python", "gpt2")
    ast.parse(prefix + middle + suffix)
    c = cg.constraint(prefix=prefix, suffix=suffix)
    for ch in middle:
        assert not c.is_complete() or _parses(prefix + c.text + suffix)
        t = _tok(cg, ch.encode())
        assert c.allowed()[t], (c.text, ch)
        c.advance(t)
    assert c.is_complete()
    assert c.allowed()[cg.vocab.eos_token_id]


def _parses(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


@pytest.mark.parametrize(("grammar", "prefix", "suffix"), [
    # (a one-line Python suffix can always be commented out by the middle: these are not)
    ("python", "x = ", "1\ny = )\n"),
    ("python", "def f():\n    return 1\n", "\n    x = 1\nelse:\n"),
    ("json", "[1, ", "2]}"),
    ("sql", "SELECT a FROM t", "\nWHERE WHERE"),
])
def test_broken_suffix_names_an_offset(grammar: str, prefix: str, suffix: str) -> None:
    with pytest.raises(gramask.InvalidSuffixError) as e:
        compiled(grammar, "gpt2").constraint(prefix=prefix, suffix=suffix)
    assert e.value.position is not None and 0 <= e.value.position <= len(suffix)
    assert "no middle connects" in str(e.value) or "cannot be lexed" in str(e.value)


def test_prefix_that_cannot_reach_the_suffix_blames_the_suffix_start() -> None:
    """The prefix is fine alone; no program starts with it and ends with the suffix: the
    error names offset 0 of the suffix once (the quotient's offset inside the loop-erased
    prefix meant nothing to a user)."""
    with pytest.raises(gramask.InvalidSuffixError) as e:
        compiled("json", "gpt2").constraint(prefix="[1", suffix="}")
    assert e.value.position == 0
    assert str(e.value).count("(at byte") == 1 and "valid alone" in str(e.value)


def test_ends_are_exact_on_random_walks() -> None:
    """Soundness: wherever EOS is allowed, prefix + middle + suffix parses (and the mask is
    never empty before the end)."""
    import random

    cg = compiled("python", "gpt2")
    rng = random.Random(0)
    prefix, suffix = "def f(a, b):\n    if a:\n        return ", "\n    return b\n"
    for _ in range(4):
        c = cg.constraint(prefix=prefix, suffix=suffix)
        for _ in range(12):
            m = c.allowed()
            assert m.any()
            if m[cg.vocab.eos_token_id]:
                assert _parses(prefix + c.text + suffix), c.text
            m[cg.vocab.eos_token_id] = False
            ids = np.flatnonzero(m)
            ascii_ids = [i for i in ids if cg.vocab.token_bytes(int(i)).isascii()]
            c.advance(int(rng.choice(ascii_ids or ids)))


def test_equivalent_prefix_lands_on_the_same_state() -> None:
    """The loop-erased prefix the quotient parser reads leaves the original parser in the
    very same state as the whole prefix, and is much shorter on real code."""
    import inspect

    from gramask.runtime.core.constraint import Constraint
    from gramask.runtime.fim.constraint import equivalent_prefix

    cg = compiled("python", "gpt2")
    b = cg._runtime()
    src = inspect.getsource(inspect).encode()
    for cut in (len(src) // 3, len(src) // 2, len(src) - 7):
        data = src[:cut]
        start = Constraint(b, cg.vocab, b"")._history[0]
        short = equivalent_prefix(b, start, data, 8)
        assert len(short) < len(data) // 2
        full = Constraint(b, cg.vocab, data)._history[-1]
        mine = Constraint(b, cg.vocab, short)._history[-1]
        assert full[0] == mine[0] and full[2] is mine[2]


@pytest.mark.parametrize(("grammar", "prefix", "middle", "suffix"), [
    ("json", '{"a": [1, ', "2, 3", '], "b": null}'),
    ("json", '{"name": "Ad', "a Love", 'lace"}'),
    ("sql", "SELECT a, ", "b", " FROM t WHERE a > 1"),
    ("c", "int main(void) {\n    int x = ", "1 + 2", ";\n    return x;\n}\n"),
])
def test_other_grammars(grammar: str, prefix: str, middle: str, suffix: str) -> None:
    cg = compiled(grammar, "gpt2")
    c = cg.constraint(prefix=prefix, suffix=suffix)
    for ch in middle:
        t = _tok(cg, ch.encode())
        assert c.allowed()[t], (c.text, ch)
        c.advance(t)
    assert c.is_complete()


def test_mask_and_advance_agree_on_a_comment_the_suffix_would_continue() -> None:
    """'#' after ``def __del__(self)`` is allowed by the mask (an ignored lexeme may end the
    middle when a branch of the suffix can follow: the documented over-approximation; here
    the suffix's ':' would continue the comment), so advance() must accept it too; ends stay
    exact."""
    cg = compiled("python", "gpt2")
    c = cg.constraint(prefix="class C:\n    def __", suffix=":\n        # Inspect\n        pass\n")
    for piece in (b"del", b"__", b"(", b"self", b")"):
        c.advance(_tok(cg, piece))
    assert c.is_complete()
    t = _tok(cg, b"#")
    assert c.allowed()[t]
    c.advance(t)
    assert not c.is_complete() and c.allowed().any()


def test_fim_advance_takes_ints_only_and_explains_a_rejection(balanced) -> None:
    c = balanced.constraint(prefix="0", suffix="111")
    with pytest.raises(TypeError, match="token id must be an int"):
        c.advance(0.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c.advance("0")  # type: ignore[arg-type]
    with pytest.raises(gramask.TokenRejected, match="not allowed") as info:
        c.advance(4)  # EOS: "0111" is not a word
    assert info.value.token_id == 4
    c.advance(np.int64(0))
    assert c.text == "0"


def test_boundary_lexeme_checked_per_token_in_a_shared_end_class() -> None:
    """Every lexer state inside ``aaaa`` has the same end class (it can only become
    ``aaaa``), so whether the suffix ``a`` can still continue the lexeme is decided per token
    by the state it stops in: after ``-aa``, ``a`` (then ``aaaa``) is allowed, ``aa`` (a full
    ``aaaa`` the suffix cannot join) is not, by the mask and by ``advance`` alike."""
    g = gramask.Grammar.from_lark('start: "-" "aaaa" |', lexer="basic")
    v = gramask.Vocabulary.from_tokens([b"a", b"aa", b"-", b"</s>"], eos_token_id=3)
    cg = gramask.compile(g, v, cache=False, progress=False)
    c = cg.constraint(prefix="-aa", suffix="a")
    assert c.allowed().tolist() == [True, False, False, False]
    assert not c.is_allowed(1)
    c.advance(0)
    assert c.allowed().tolist() == [False, False, False, True]
    c = cg.constraint(prefix="-", suffix="a")
    assert c.allowed().tolist() == [True, True, False, False]
    c.advance(1)  # "aa": one more "a" before the suffix's
    assert c.allowed().tolist() == [True, False, False, False]


@pytest.mark.parametrize(("suffix", "blamed", "why"), [
    # cut inside a docstring: the string opened at the second \"\"\" never closes
    ('"""Module doc.\n\nMore text.\n"""\nimport os\n\n\ndef f(x):\n    """Doc of f, cut',
     '    """Doc of f', "still open where the suffix ends"),
    # cut inside a call: its bracket never closes
    ('"""Module doc."""\nimport os\nprint(os.sep', "(os.sep", "bracket opened there"),
])
def test_suffix_cut_short_blames_where_the_plain_reading_fails(suffix: str, blamed: str,
                                                               why: str) -> None:
    """A file cut at N characters as the suffix: the error names the offset where reading
    the suffix from its first byte fails (the opening of the string or bracket left open),
    not the furthest failure of a reading that begins inside a string (which fell inside
    the well-formed module docstring)."""
    with pytest.raises(gramask.InvalidSuffixError) as e:
        compiled("python", "gpt2").constraint(prefix="", suffix=suffix)
    at = suffix.index(blamed) + len(blamed) - len(blamed.lstrip())
    assert e.value.position == at and why in str(e.value)
    assert f"(at byte {at} of the suffix)" in str(e.value)
