"""Indentation with tabs, spaces and form feeds against the running interpreter's ``compile``
(issue 19): CPython measures a line twice (tabs to the next multiple of 8, and tabs as width
1) and raises TabError where the two disagree. The runtime counts tabs and spaces apart and
refuses a tab after a space (docs/semantics.md), so a complete claim always compiles, and
every program without such a line is complete — through the byte walk and through the token
masks alike."""

from __future__ import annotations

import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.runtime.core.indentation import BROKEN, TAB_UNIT, advance, columns, join, text_carry

from ._support import compiled, is_program


def _compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<case>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _space_before_tab(source: str) -> bool:
    """Does a statement line's indentation (after its last form feed) hold a tab after a
    space? (the runtime's documented refusal)"""
    for line in source.split("\n"):
        body = line.lstrip(" \t\f")
        if not body or body.startswith("#"):
            continue  # blank and comment lines do not indent
        lead = line[: len(line) - len(body)].rsplit("\f", 1)[-1]
        if " " in lead and "\t" in lead[lead.index(" "):]:
            return True
    return False


@pytest.mark.parametrize(("source", "ok"), [
    ("if x:\n\tpass\n        pass\n", False),      # col 8 both, altcol 1 vs 8: TabError
    ("if x:\n        pass\n\tpass\n", False),
    ("if x:\n\tpass\n\tpass\n", True),
    ("if x:\n\t pass\n\t pass\n", True),
    ("if x:\n\t\tpass\n\t\t pass\n", False),        # an indent no block opens
    ("if x:\n  if y:\n\tpass\n", False),           # col 8 > 2 but altcol 1 < 2: TabError
    ("if x:\n    if y:\n\t\tpass\n", False),
    ("if x:\n\tif y:\n\t\tpass\n\tpass\n", True),
    ("if x:\n\tif y:\n\t\tpass\n        pass\n", False),  # dedent to col 8, altcol 8 ≠ 1
    ("if x:\n \tpass\n\t pass\n", False),           # col 8 then 9 (lark's count: 9 = 9)
    ("if x:\n    pass\n  \f  pass\n", False),       # the form feed resets: col 2
    ("if x:\n    pass\n\f    pass\n", True),
    ("if x:\n    pass\n    \f\n", True),            # a blank line does not indent
    ("if x:\n\tpass\n \t \n", True),               # nor does a whitespace-only one
    ("if x:\n\tpass\n  \t# c\n", True),
])
def test_tab_cases_agree_with_compile(source: str, ok: bool) -> None:
    assert _compiles(source) == ok, "the case table is wrong for this interpreter"
    assert is_program(compiled("python", "gpt2"), source) == ok


def test_a_tab_after_a_space_is_refused_even_where_cpython_takes_it() -> None:
    """The documented strictness: CPython accepts " \\t" used consistently."""
    source = "if x:\n \tpass\n \tpass\n"
    assert _compiles(source)
    assert not is_program(compiled("python", "gpt2"), source)


def test_carry_arithmetic() -> None:
    assert text_carry(b"\t\t  ") == 2 * TAB_UNIT + 2
    assert text_carry(b"  \t") == BROKEN
    assert text_carry(b"  \f\t ") == TAB_UNIT + 1
    assert text_carry(b"\t\n ") == 1
    assert columns(text_carry(b"\t\t  "), 8) == (18, 4)
    assert columns(BROKEN, 8) is None
    assert join(3, TAB_UNIT) == BROKEN and join(TAB_UNIT, 3) == TAB_UNIT + 3
    assert advance(BROKEN, 32) >= BROKEN and advance(BROKEN, 9) >= BROKEN


_WS = st.text(alphabet=" \t", max_size=5)
_LINE = st.tuples(
    st.sampled_from(["same", "deeper", "any", "ff"]), _WS,
    st.sampled_from(["if x:", "pass", "x = 1", "# c", ""]),
)


def _program(lines: list[tuple[str, str, str]]) -> str:
    """Lines indented like their block (often), one step deeper, or anyhow."""
    levels = [""]
    out = []
    for how, ws, stmt in lines:
        ind = {"same": levels[-1], "deeper": levels[-1] + (ws or " "), "any": ws,
               "ff": levels[-1] + "\f" + ws}[how]
        out.append(ind + stmt)
        if stmt == "if x:":
            levels.append(ind + (ws or "\t"))
        elif how == "any" and len(levels) > 1:
            levels.pop()
    if out and out[-1].endswith(":"):
        out.append(levels[-1] + "pass")
    return "\n".join(out) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, min_size=1, max_size=6))
def test_mixed_indentation_against_compile(lines: list[tuple[str, str, str]]) -> None:
    source = _program(lines)
    cg = compiled("python", "gpt2")
    got = is_program(cg, source)
    if got:
        assert _compiles(source), source
    elif _compiles(source):
        assert _space_before_tab(source), source


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_masks_agree_with_the_byte_walk(lines: list[tuple[str, str, str]], rnd) -> None:  # type: ignore[no-untyped-def]
    """Fed in random vocabulary pieces, each token is allowed exactly when the prefix it
    makes is one the byte walk accepts (the tables' newline heads and the runtime's carry
    agree), and the end agrees with the whole text's verdict."""
    source = _program(lines)
    cg = compiled("python", "gpt2")
    vocab = cg.vocab
    data = source.encode()
    c = cg.constraint("")
    i = 0
    while i < len(data):
        for n in rnd.sample(range(1, 9), 8):
            t = vocab.token_id(data[i : i + n])
            if t is not None and i + n <= len(data):
                break
        else:
            pytest.fail(f"no token for {data[i:i + 8]!r}")
        try:
            cg.constraint(c.data + data[i : i + n])
            walk_ok = True
        except gramask.InvalidPrefixError:
            walk_ok = False
        assert bool(c.allowed()[t]) == walk_ok, (c.data, data[i : i + n])
        if not walk_ok:
            return
        c.advance(t)
        i += n
    assert c.is_complete() == is_program(cg, source)
