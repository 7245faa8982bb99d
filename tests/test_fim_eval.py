"""The FIM evaluation's case generator (tools/fim_eval.py): seeded, and cut where it says."""

from __future__ import annotations

import io
import random
import tokenize
from pathlib import Path
from typing import Any

import pytest

from tools import fim_eval

from .conftest import compiled, hf_tokenizer

SOURCE = '''import os


def f(a, b=(1, 2)):
    """Doc."""
    if a:
        for x in b:
            print(x,
                  a)
    else:
        return [y
                for y in b]
    return a + b


class C:
    def g(self):
        pass
    x = {"k": 1}
'''


@pytest.fixture()
def files(tmp_path: Path) -> list[Path]:
    out = []
    for i in range(3):
        p = tmp_path / f"m{i}.py"
        p.write_text(SOURCE.replace("f(", f"f{i}("), encoding="utf-8")
        out.append(p)
    return out


@pytest.mark.parametrize("kind", ["random", "boundary"])
def test_cases_are_deterministic(files: list[Path], kind: str) -> None:
    a = [c.ident() for c in fim_eval.cases(kind, 12, seed=1, files=files)]
    b = [c.ident() for c in fim_eval.cases(kind, 12, seed=1, files=files)]
    c = [c.ident() for c in fim_eval.cases(kind, 12, seed=2, files=files)]
    assert len(a) == 6  # two per file by default
    assert a == b
    assert a != c


def test_random_spans_are_short_and_early(files: list[Path]) -> None:
    for case in fim_eval.cases("random", 60, seed=3, files=files, per_file=20):
        assert case.text == Path(case.source).read_text(encoding="utf-8")
        assert 1 <= len(case.middle) <= min(100, len(case.text) // 5)
        assert case.start <= 0.9 * len(case.text)


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(text).readline))


def _offset(text: str, row: int, col: int) -> int:
    return sum(len(line) for line in text.splitlines(keepends=True)[: row - 1]) + col


def test_boundary_spans_start_at_tokens_of_one_block(files: list[Path]) -> None:
    """Checked with tokenize directly: the suffix starts where a token starts; the prefix ends
    inside (or at an edge of) a token that starts no later; between the two tokens the
    indentation goes up and down but never below the first token's block and ends level."""
    n = 0
    for case in fim_eval.cases("boundary", 200, seed=4, files=files, per_file=50):
        toks = [t for t in _tokens(case.text) if t.string and t.type not in (
            tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
        assert case.start <= case.end, case.ident()
        starts = {_offset(case.text, *t.start): t for t in toks}
        assert case.end in starts, case.ident()
        left = [t for t in toks if _offset(case.text, *t.start) <= case.start
                <= _offset(case.text, *t.end)]
        assert left, case.ident()
        lo = min(_offset(case.text, *t.start) for t in left)
        depth = low = 0
        for t in _tokens(case.text):
            if lo < _offset(case.text, *t.start) <= case.end:
                depth += {tokenize.INDENT: 1, tokenize.DEDENT: -1}.get(t.type, 0)
                low = min(low, depth)
        assert depth == 0 and low == 0, case.ident()
        n += 1
    assert n == 150


def test_no_tokens_no_boundary_case() -> None:
    assert fim_eval.boundary_case("\n\n", random.Random(0)) is None
    assert fim_eval.boundary_case("x\n", random.Random(0)) is None  # one token: no pair


def test_scaling_cases_grow_and_end_at_top_level_statements() -> None:
    got = list(fim_eval.scaling_cases(1, seed=0, sizes=(0.5, 2, 8)))
    assert [kb for kb, _ in got] == [0.5, 2, 8]
    lengths = [len(c.suffix) for _, c in got]
    assert lengths == sorted(lengths) and lengths[0] >= 512
    for _, c in got:
        assert c.text.endswith("\n") and c.prefix == got[0][1].prefix
        full = Path(c.source).read_text(encoding="utf-8")
        assert full.startswith(c.text)
        assert full[len(c.text)].isalpha()  # the next top-level statement is cut off


# (prefix, true middle, suffix): the boundary situations of fill-in-the-middle for Python
PYTHON_CASES = [
    ("def f(a, b):\n    return a", " + b", "\n\nprint(f(1, 2))\n"),
    ("result = comp", "ute_val", "ue(3)\n"),  # an identifier continued by the suffix
    ("x = 12", "3", "45\n"),  # a number continued
    ("a = b ", "=", "= c\n"),  # = and = meet as ==
    ("s = 'hel", "lo wor", "ld'\n"),  # inside a string
    ('x = """doc', " string", ' here"""\n'),
    ("name = f'{x", "}", " y'\n"),
    ("x = 1  # co", "mment", "\ny = 2\n"),  # inside a comment
    ("x = 1", "", "  # tail\n"),  # nothing to add; the suffix starts with a comment
    ("if x:\n", "    y = 1\n", "    z = 2\n"),  # the suffix's first line is indented
    ("if x:\n    y = 1\n", "z = 2\n", "w = 3\n"),  # a dedent before the suffix
    ("class A:\n    def m(self):\n        return 1\n", "\n    def n(self):\n        return 2\n",
     "\nprint(A)\n"),
    ("foo(1,\n", "    2,\n", "    3)\n"),  # inside brackets: newlines are not statements
    ("x = ", "1", ""),  # empty suffix
    ("", "import os", "\nprint(os)\n"),  # empty prefix
]


@pytest.mark.parametrize(("prefix", "middle", "suffix"), PYTHON_CASES)
def test_python_fim_cases_complete_and_sound(prefix: str, middle: str, suffix: str) -> None:
    """The true middle is allowed token by token and EOS at its end; random walks from it stop
    only where ast.parse accepts (tools/fim_eval.run_case, with the GPT-2 vocabulary), apart
    from the prefix-only gaps listed in fim_eval.KNOWN_GAPS."""
    assert fim_eval.python_error(prefix + middle + suffix) is None
    cg = compiled("python", "gpt2")
    text = prefix + middle + suffix
    case = fim_eval.FimCase("hand", "test", len(prefix), len(prefix) + len(middle), text)
    failures: list[dict[str, Any]] = []
    st = fim_eval.Stats()
    for seed in range(3):
        fim_eval.run_case(cg, hf_tokenizer("gpt2"), fim_eval.python_error, case,
                          random.Random(seed), st, failures.append, walk=12)
    failures = [f for f in failures
                if not (f["check"] == "soundness" and fim_eval.known_gap(f["got"]))]
    assert not failures, "\n".join(map(str, failures[:5]))
    assert st.complete_ok == {"hand": 3}
