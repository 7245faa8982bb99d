"""The bundled C grammar's lexemes against GCC: no spelling the grammar takes is one GCC
refuses (identifier characters, octal constants, escape sequences).

A model writing C emits non-ASCII identifier characters, ``\\x`` and ``\\u`` escapes and
leading-zero constants; each of these used to be a lexeme gramask took and ``gcc -std=c11``
refused ("stray '\\342' in program", "invalid digit "8" in octal constant", "\\x used with no
following hex digits"). The terminals' regular expressions (what the compiled lexer is built
from; its exactness against lark is pinned elsewhere) are compared with GCC's verdict on one
declaration per sample, in one GCC run per test. Skipped where GCC is not installed.
"""

from __future__ import annotations

import functools
import re
import shutil
import string
import subprocess
from collections.abc import Callable, Sequence

import pytest
from lark import Lark

import gramask.grammars as bundled

GCC = shutil.which("gcc")
pytestmark = pytest.mark.skipif(GCC is None, reason="gcc is not installed")


@functools.cache
def regexes() -> dict[str, str]:
    """The bundled C grammar's terminals as lark reads them (one parser per run)."""
    parser = Lark(bundled.lark_text("c"), parser="lalr", lexer="basic", start="start")
    return {t.name: t.pattern.to_regexp() for t in parser.terminals}


def terminal(name: str) -> Callable[[str], bool]:
    """Full match of one terminal of the bundled C grammar (lark's own regex for it)."""
    rx = re.compile(regexes()[name])
    return lambda s: rx.fullmatch(s) is not None


def gcc_refuses(lines: Sequence[str]) -> set[int]:
    """Indices of the lines (one declaration each) GCC reports an error on."""
    assert GCC is not None
    src = "\n".join(lines) + "\n"
    proc = subprocess.run(
        [GCC, "-std=c11", "-fsyntax-only", "-fmax-errors=0", "-x", "c", "-"],
        input=src.encode("utf-8", "surrogatepass"), capture_output=True, timeout=120, check=False,
    )
    return {int(m.group(1)) - 1 for m in re.finditer(rb"<stdin>:(\d+):\d+: error", proc.stderr)}


def sample_code_points() -> list[int]:
    """Non-ASCII code points: around each boundary of C11's Annex D ranges, a stride through
    the rest, and characters a model emits often."""
    edges = [0xA8, 0xAA, 0xAD, 0xAF, 0xB2, 0xB5, 0xB7, 0xBA, 0xBC, 0xBE, 0xC0, 0xD6, 0xD8, 0xF6,
             0xF8, 0x300, 0x36F, 0x1680, 0x180E, 0x1DC0, 0x1DFF, 0x200B, 0x200D, 0x202A, 0x202E,
             0x203F, 0x2040, 0x2054, 0x2060, 0x20D0, 0x20FF, 0x218F, 0x2460, 0x24FF, 0x2776, 0x2793,
             0x2C00, 0x2DFF, 0x2E80, 0x2FFF, 0x3004, 0x3007, 0x3021, 0x302F, 0x3031, 0xD7FF,
             0xF900, 0xFD3D, 0xFD40, 0xFDCF, 0xFDF0, 0xFE20, 0xFE2F, 0xFE44, 0xFE47, 0xFFFD,
             0x1FFFD, 0x20000, 0xEFFFD]
    cps = {c + d for c in edges for d in (-1, 0, 1)}
    cps.update(range(0x80, 0x10FFFF, 997))
    cps.update((0x2013, 0x221E, 0xFF09, 0x201D, 0xFF0D, 0xB2, 0xA0, 0xB7, 0xBB, 0x25AA))
    return sorted(c for c in cps if 0x80 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF)


LETTERS = [*range(0xC0, 0xD7), *range(0xD8, 0xF7), *range(0xF8, 0x250), *range(0x370, 0x500)]


@pytest.mark.parametrize("where", ["first", "later"])
def test_identifier_characters_are_ones_gcc_takes(where: str) -> None:
    """Every identifier character the grammar takes is one GCC takes; the grammar takes ASCII
    letters, digits, '_' and the Latin, Greek and Cyrillic letters, nothing else."""
    ident = terminal("IDENTIFIER")
    ascii_ = [*map(ord, string.ascii_letters + string.digits + "_")]
    cps = sorted({*ascii_, *LETTERS, *sample_code_points()})
    names = [f"{chr(c)}a" if where == "first" else f"a{chr(c)}" for c in cps]
    refused = gcc_refuses([f"int {n}_{i};" for i, n in enumerate(names)])
    wrong = [hex(cps[i]) for i, n in enumerate(names) if ident(n) and i in refused]
    assert not wrong, f"identifiers the grammar takes and GCC refuses: {wrong}"
    expected = {c for c in [*ascii_, *LETTERS] if where == "later" or not chr(c).isdigit()}
    taken = {c for c, n in zip(cps, names, strict=True) if ident(n)}
    assert taken == expected, sorted(map(hex, taken ^ expected))[:20]


def test_universal_character_names_in_strings() -> None:
    literal = terminal("STRING")
    values = sorted({*range(0, 0x10000, 37), *range(0, 0x100), *range(0xD7F0, 0xE010)})
    lits = [f'"\\u{v:04x}"' for v in values] + [f'"\\U{v:08x}"' for v in values]
    lits += ['"\\U0010ffff"', '"\\U00110000"', '"\\u12"', '"\\x"', '"\\xg"', '"\\x7f"', '"\\q"']
    refused = gcc_refuses([f"char *s{i} = {lit};" for i, lit in enumerate(lits)])
    wrong = [lit for i, lit in enumerate(lits) if literal(lit) and i in refused]
    assert not wrong, f"string literals the grammar takes and GCC refuses: {wrong}"
    # \U above U+10FFFF is refused on purpose (GCC 12 takes it, the UCS codespace ends there)
    missed = [lit for i, lit in enumerate(lits)
              if not literal(lit) and i not in refused and lit != '"\\U00110000"']
    assert not missed, f"string literals GCC takes and the grammar refuses: {missed}"


def test_character_constants() -> None:
    char = terminal("CHARACTER")
    lits = ["'a'", "'\\x'", "'\\x41'", "'\\u0041'", "'\\u00e9'", "'\\0'", "'\\777'", "''",
            "'\\n'", "'\\''", "L'\\xffff'", "u8'a'", "'\\u12'", "'\\ud800'", "'ab'"]
    refused = gcc_refuses([f"int c{i} = {lit};" for i, lit in enumerate(lits)])
    wrong = [lit for i, lit in enumerate(lits) if char(lit) and i in refused]
    assert not wrong, f"character constants the grammar takes and GCC refuses: {wrong}"
    missed = [lit for i, lit in enumerate(lits) if not char(lit) and i not in refused]
    assert not missed, f"character constants GCC takes and the grammar refuses: {missed}"


def test_numeric_constants() -> None:
    number = terminal("NUMBER")
    lits = ["0", "00", "07", "08", "048", "0777", "0778", "10", "09.5", "048.", "08e1", "0x1F",
            "0x", "0b101", "0b12", "1u", "1ULL", "1lu", "1lul", "1.0e", "1.0e5", "0x1p3", "0x1p",
            ".5f", "1.f", "1e+5L", "0x1.8p-2", "0u", "017LL", "0189"]
    refused = gcc_refuses([f"double x{i} = {lit};" for i, lit in enumerate(lits)])
    wrong = [lit for i, lit in enumerate(lits) if number(lit) and i in refused]
    assert not wrong, f"numeric constants the grammar takes and GCC refuses: {wrong}"
    missed = [lit for i, lit in enumerate(lits) if not number(lit) and i not in refused]
    assert not missed, f"numeric constants GCC takes and the grammar refuses: {missed}"
