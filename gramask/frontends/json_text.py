"""Regexes for JSON Schema's value constraints: JSON numbers in a range (digit by digit),
JSON Schema ``pattern`` (ECMA 262) as a Python regex over the decoded string, and the
``json.dumps`` spellings of a literal string. Character sets are lists of inclusive
code-point ranges. (String *terminals* are built as automata: :mod:`.json_strings`.)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from re import _constants as _sre_c
from re import _parser as _sre_parse
from typing import Any

from ..compiler.charclass import MAX_CODEPOINT as MAX_CP
from ..compiler.charclass import complement as code_point_gaps
from ..compiler.regex_nfa import unicode_category
from ..errors import GrammarError

__all__ = [
    "JSON_DECIMAL",
    "JSON_NUMBER",
    "JSON_STRING",
    "JSON_WS",
    "digit_range_regex",
    "integer_range_regex",
    "literal_string_regex",
    "number_range_regex",
    "pattern_lookaheads",
    "pattern_regex",
]

Ranges = list[tuple[int, int]]

_SURROGATES = (0xD800, 0xDFFF)
_ALL: Ranges = [(0, 0xD7FF), (0xE000, MAX_CP)]
# raw in a JSON string: anything but '"', '\' and the C0 controls (RFC 8259)
_RAW: Ranges = [(0x20, 0x21), (0x23, 0x5B), (0x5D, 0xD7FF), (0xE000, MAX_CP)]


def _norm(ranges: Iterable[tuple[int, int]]) -> Ranges:
    out: Ranges = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def intersect(a: Ranges, b: Ranges) -> Ranges:
    out = [(max(x, y), min(p, q)) for x, p in a for y, q in b]
    return _norm(r for r in out if r[0] <= r[1])


def complement(a: Ranges) -> Ranges:
    return intersect(list(code_point_gaps(tuple(_norm(a)))), _ALL)


def _cls_char(cp: int) -> str:
    """One code point inside a regex class (the character itself: interegular reads no
    \\u escapes; controls as \\x escapes)."""
    c = chr(cp)
    if cp < 0x20 or cp == 0x7F:
        return f"\\x{cp:02x}"
    if c in "\\]^-[":
        return "\\" + c
    return c


def _class(ranges: Ranges) -> str:
    """A regex character class for code-point ranges ('' for none); written negated when
    that is shorter, since interegular enumerates the characters of a positive class."""
    if not ranges:
        return ""
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        cp = ranges[0][0]
        c = chr(cp)
        return c if (c.isalnum() and cp < 128) else "[" + _cls_char(cp) + "]"
    # the complement over all code points, surrogates counted as members (the byte-level
    # automaton leaves them out anyway)
    comp: Ranges = list(code_point_gaps(tuple(_norm([*ranges, _SURROGATES]))))
    size = sum(hi - lo + 1 for lo, hi in ranges)
    comp_size = sum(hi - lo + 1 for lo, hi in comp)
    negate = comp_size < size
    body = "".join(
        _cls_char(lo) if lo == hi else f"{_cls_char(lo)}-{_cls_char(hi)}"
        for lo, hi in (comp if negate else ranges)
    )
    if negate and not body:
        return "[\\s\\S]"
    return f"[^{body}]" if negate else f"[{body}]"


_HEX = "0123456789abcdef"


def _hex_digit_class(lo: int, hi: int) -> str:
    chars = set()
    for d in range(lo, hi + 1):
        chars.add(_HEX[d])
        chars.add(_HEX[d].upper())
    if len(chars) == 1:
        return next(iter(chars))
    if lo == 0 and hi == 15:
        return "[0-9a-fA-F]"
    return "[" + "".join(sorted(chars)) + "]"


def _dec_digit_class(lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    return f"[{lo}-{hi}]"


def digit_range_regex(lo: int, hi: int, width: int, base: int = 10) -> str:
    """Regex for the ``width``-digit strings (leading zeros kept) whose value is in
    [lo, hi]; base 16 digits match either case."""
    dclass = _hex_digit_class if base == 16 else _dec_digit_class

    def digits(x: int) -> list[int]:
        out = []
        for _ in range(width):
            out.append(x % base)
            x //= base
        return out[::-1]

    def rec(a: list[int], b: list[int]) -> str:
        if not a:
            return ""
        n = len(a) - 1
        rest_any = dclass(0, base - 1) + (f"{{{n}}}" if n > 1 else "") if n else ""
        if a[0] == b[0]:
            return dclass(a[0], a[0]) + rec(a[1:], b[1:])
        if all(d == 0 for d in a[1:]) and all(d == base - 1 for d in b[1:]):
            return dclass(a[0], b[0]) + rest_any
        parts = []
        lo_first = a[0]
        if all(d == 0 for d in a[1:]):
            mid_lo = a[0]
        else:
            parts.append(dclass(a[0], a[0]) + rec(a[1:], [base - 1] * n))
            mid_lo = a[0] + 1
        del lo_first
        if all(d == base - 1 for d in b[1:]):
            mid_hi = b[0]
            tail = None
        else:
            mid_hi = b[0] - 1
            tail = dclass(b[0], b[0]) + rec([0] * n, b[1:])
        if mid_lo <= mid_hi:
            parts.append(dclass(mid_lo, mid_hi) + rest_any)
        if tail is not None:
            parts.append(tail)
        return "(?:" + "|".join(parts) + ")" if len(parts) > 1 else parts[0]

    if lo > hi:
        raise ValueError("empty range")
    return rec(digits(lo), digits(hi))


# the bundled JSON grammar's string: every spelling, lone surrogate escapes included
_LOOSE_CHAR = r'(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))'
JSON_STRING = f'"{_LOOSE_CHAR}*"'
JSON_NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
JSON_DECIMAL = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"  # a JSON number without an exponent
JSON_WS = r"[ \t\n\r]+"  # insignificant whitespace (RFC 8259), one or more


def literal_string_regex(value: str) -> str:
    """The JSON spellings of the string ``value`` that ``json.dumps`` writes (with and
    without ``ensure_ascii``)."""
    import json
    import re

    forms = dict.fromkeys([json.dumps(value, ensure_ascii=False), json.dumps(value)])
    return "|".join(re.escape(f) for f in forms) if len(forms) == 1 else (
        "(?:" + "|".join(re.escape(f) for f in forms) + ")")


# ---------------------------------------------------------------- patterns (ECMA 262 subset)

_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
# ECMA-262 WhiteSpace and LineTerminator
_SPACE: Ranges = _norm([(9, 13), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                        (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
                        (0xFEFF, 0xFEFF)])
_LINE_TERMINATORS: Ranges = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGIT, "CATEGORY_NOT_DIGIT": complement(_DIGIT),
    "CATEGORY_WORD": _WORD, "CATEGORY_NOT_WORD": complement(_WORD),
    "CATEGORY_SPACE": _SPACE, "CATEGORY_NOT_SPACE": complement(_SPACE),
}




def _python_category(name: str) -> Ranges:
    """``\\d \\w \\s`` or a negation as Python's ``re`` reads it in a str pattern (Unicode:
    what the ``jsonschema`` package tests ``pattern`` with)."""
    positive = list(unicode_category(name.replace("NOT_", "")))
    return complement(positive) if "NOT_" in name else intersect(positive, _ALL)


def _union(a: Ranges, b: Ranges) -> Ranges:
    return intersect(_norm([*a, *b]), _ALL)


def _both(a: Ranges, b: Ranges) -> Ranges:
    """``a`` ∩ ``b`` through complements (linear; ``intersect`` pairs every two ranges)."""
    return complement(_norm([*complement(a), *complement(b)]))


class PatternError(GrammarError):
    """A ``pattern`` that cannot be turned into a finite automaton over JSON text."""


def _set_of(items: list[tuple[Any, Any]], where: str, wide: bool) -> Ranges:
    """A class's code points read both as ECMA 262 and as Python's ``re`` read them: those
    both readings take (``wide`` False), or those either takes (True)."""
    ecma: Ranges = []
    py: Ranges = []
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            ecma.append((int(av), int(av)))
            py.append(ecma[-1])
        elif name == "RANGE":
            lo, hi = av
            ecma.append((int(lo), int(hi)))
            py.append(ecma[-1])
        elif name == "CATEGORY":
            ecma.extend(_CATEGORIES.get(str(av), []) or _bad(where, f"class {av}"))
            py.extend(_python_category(str(av)))
        else:
            _bad(where, name)
    e, p = _norm(ecma), _norm(py)
    if negate:  # wide: outside e or outside p; narrow: outside both
        return _union(complement(e), complement(p)) if wide else complement(_norm([*e, *p]))
    return _union(e, p) if wide else _both(e, p)


def _bad(where: str, what: str) -> Ranges:
    raise PatternError(f"{where} uses {what}, which gramask cannot compile")


_ANY_DECODED = "(?:[^\\n]|\\n)"


def pattern_regex(pattern: str, where: str, wide: bool = False) -> str:
    """A Python regex, over the *decoded* string and matched as a whole, for the strings
    that contain a match of the JSON Schema ``pattern`` (ECMA 262's unanchored search;
    ``^``/``$`` only at the ends of the whole pattern).

    Where ECMA 262 and Python's ``re`` (the ``jsonschema`` package's reading) differ — ``.``
    and the line terminators, ``\\d \\w \\s`` ASCII or Unicode, ``$`` before a final
    newline — the strings both readings match (``wide`` False: what a string must be to
    match for certain), or those either matches (True: what a key must not be to match
    neither). Raises :class:`PatternError` (a GrammarError) for a pattern with lookaround,
    backreferences, inline flags or anchors elsewhere, its message opening with ``where``
    (``pattern '(?=a)'``: the caller's refusal names the keyword and its pointer).
    """
    items = _parsed(pattern, where)
    start_anchor = _starts_anchored(items)
    return _anchored(items[start_anchor:], start_anchor, where, wide)


def _parsed(pattern: str, where: str) -> list[tuple[Any, Any]]:
    """``re``'s parse of a pattern, refused (``where`` named) if invalid or with inline flags."""
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception as e:  # re.error, OverflowError
        raise PatternError(f"{where} is invalid: {e}") from None
    if parsed.state.flags & ~(_sre_c.SRE_FLAG_UNICODE):
        _bad(where, "inline flags")
    return list(parsed)


def _starts_anchored(items: list[tuple[Any, Any]]) -> bool:
    return bool(items) and str(items[0][0]) == "AT" and str(items[0][1]) in (
        "AT_BEGINNING", "AT_BEGINNING_STRING")


def _anchored(items: list[tuple[Any, Any]], start_anchor: bool, where: str, wide: bool) -> str:
    """:func:`pattern_regex` of parsed items, their leading ``^`` already read."""
    end_anchor = False
    if items and str(items[-1][0]) == "AT" and str(items[-1][1]) in ("AT_END", "AT_END_STRING"):
        end_anchor = True
        items = items[:-1]
    body = _seq(items, where, wide)
    any_rep = f"{_ANY_DECODED}*"
    end = any_rep if not end_anchor else "\\n?" if wide else ""  # re reads $ before a final newline too
    return ("" if start_anchor else any_rep) + body + end


def pattern_lookaheads(pattern: str, where: str) -> tuple[list[str], list[str]] | None:
    """A pattern that opens with lookaheads at its anchored start (``^(?=.*\\d)(?!0+$)...``,
    pydantic 2.12's ``Decimal`` and password policies): the whole-match regexes a string must
    match for certain (each ``(?=A)``, then the rest) and those it must match in neither
    reading (each ``(?!B)``), as :func:`pattern_regex` reads them; the language is their
    intersection, a regular one that a key region's automaton builds. None for a pattern
    without such a start (a lookaround anywhere else stays refused)."""
    items = _parsed(pattern, where)
    if not _starts_anchored(items):
        return None
    k = 1
    while k < len(items) and str(items[k][0]) in ("ASSERT", "ASSERT_NOT") \
            and items[k][1][0] == 1:  # a lookahead (a lookbehind's direction is -1)
        k += 1
    if k == 1:
        return None
    match, nomatch = [], []
    for op, (_dir, sub) in items[1:k]:
        body = list(sub)  # at the string's start: its own ^ holds, as the outer one does
        body = body[_starts_anchored(body):]
        if str(op) == "ASSERT":
            match.append(_anchored(body, True, where, wide=False))
        else:  # excluded where either reading matches
            nomatch.append(_anchored(body, True, where, wide=True))
    match.append(_anchored(items[k:], True, where, wide=False))
    return match, nomatch


def pattern_test(regex: str) -> Callable[[str], bool]:
    """Whether a (decoded) string is in ``regex``, a :func:`pattern_regex` translation: the
    ECMA 262 reading of its pattern, not Python's (``\\d`` matching ``٣``, ``$`` before a
    final newline), so a defined key is tested as the key automata test the others."""
    rx = re.compile(regex)
    return lambda text: rx.fullmatch(text) is not None


def _seq(items: Iterable[tuple[Any, Any]], where: str, wide: bool) -> str:
    return "".join(_item(op, av, where, wide) for op, av in items)


def _item(op: Any, av: Any, where: str, wide: bool) -> str:
    name = str(op)
    if name == "LITERAL":
        return _class([(int(av), int(av))])
    if name == "NOT_LITERAL":
        return _class(complement([(int(av), int(av))]))
    if name == "ANY":  # ECMA: no line terminator; re: no \\n
        return _class(complement([(0x0A, 0x0A)] if wide else _LINE_TERMINATORS))
    if name == "IN":
        rx = _class(_set_of(av, where, wide))
        if not rx:
            _bad(where, "an empty character class")
        return rx
    if name == "SUBPATTERN":
        _group, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            _bad(where, "inline flags")
        return "(?:" + _seq(sub, where, wide) + ")"
    if name == "BRANCH":
        _, alts = av
        return "(?:" + "|".join(_seq(a, where, wide) for a in alts) + ")"
    if name in ("MAX_REPEAT", "MIN_REPEAT"):
        lo, hi, sub = av
        inner = "(?:" + _seq(sub, where, wide) + ")"
        if hi == _sre_c.MAXREPEAT:
            return inner + ("*" if lo == 0 else "+" if lo == 1 else f"{{{lo},}}")
        return inner + (f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}")
    what = {"AT": "an anchor or word boundary inside the pattern", "ASSERT": "a lookaround",
            "ASSERT_NOT": "a lookaround", "GROUPREF": "a backreference",
            "GROUPREF_EXISTS": "a conditional group"}.get(name, name)
    _bad(where, what)
    return ""  # pragma: no cover


# ---------------------------------------------------------------- numbers
def _nonneg_int_regex(lo: int, hi: int | None) -> str:
    """Decimal integers in [lo, hi] (hi None: unbounded), lo >= 0, no leading zeros; '' if
    empty."""
    if hi is not None and lo > hi:
        return ""
    parts = []
    n_lo = len(str(lo))
    n_hi = len(str(hi)) if hi is not None else n_lo
    for width in range(n_lo, n_hi + 1):
        a = max(lo, 10 ** (width - 1) if width > 1 else 0)
        b = 10**width - 1 if hi is None else min(hi, 10**width - 1)
        if a <= b:
            parts.append(digit_range_regex(a, b, width))
    if hi is None:
        parts.append(f"[1-9][0-9]{{{n_lo},}}")
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def integer_range_regex(lo: int | None, hi: int | None) -> str:
    """JSON integers (no fraction, no exponent) in [lo, hi]; None is unbounded. '' if
    empty."""
    parts = []
    if hi is None or hi >= 0:
        pos = _nonneg_int_regex(max(lo, 0) if lo is not None else 0, hi)
        if pos:
            parts.append(pos)
    if lo is None or lo < 0:  # magnitudes of the negative part: [max(1, -hi), -lo]
        neg = _nonneg_int_regex(max(1, -hi) if hi is not None else 1,
                                -lo if lo is not None else None)
        if neg:
            parts.append("-" + neg)
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


_ANY_FRAC = r"(?:\.[0-9]+)?"


def _split(d: Decimal) -> tuple[int, str]:
    """A non-negative decimal as (integer part, fraction digits without trailing zeros)."""
    ip, _, fp = format(d, "f").partition(".")
    return int(ip), fp.rstrip("0")


@functools.lru_cache(maxsize=4096)
def _fraction_digits(lo: str | None, lo_incl: bool, hi: str | None, hi_incl: bool
                     ) -> tuple[bool, str | None]:
    """The digit strings ``f`` (none at all included) with 0.lo <(=) 0.f <(=) 0.hi, where
    ``lo``/``hi`` are fraction digits without trailing zeros and None is no bound (0 <= 0.f,
    0.f < 1): (whether ``f`` may be empty, a regex of the non-empty ones or None). Digit by
    digit: a digit above the lower bound's (below the upper bound's) frees that side."""
    if lo == "" and lo_incl:
        lo = None  # 0.f >= 0 always holds
    if lo is None and hi is None:
        return True, "[0-9]+"
    if hi == "":  # 0.f <= 0: zeros only
        return (True, "0+") if hi_incl and lo is None else (False, None)
    if lo == "" and hi is None:  # 0.f > 0
        return False, "0*[1-9][0-9]*"
    groups: dict[str, list[int]] = {}
    for d in range(int(lo[0]) if lo else 0, (int(hi[0]) if hi else 9) + 1):
        n_lo = None if lo is None or (lo == "" and d > 0) or (lo and d > int(lo[0])) \
            else (lo if lo == "" else lo[1:])
        n_hi = None if hi is None or d < int(hi[0]) else hi[1:]
        empty, rest = _fraction_digits(n_lo, lo_incl, n_hi, hi_incl)
        if rest is not None:
            groups.setdefault(f"(?:{rest})?" if empty else rest, []).append(d)
        elif empty:
            groups.setdefault("", []).append(d)
    alts = [("[" + "".join(map(str, ds)) + "]" if len(ds) > 1 else str(ds[0])) + tail
            for tail, ds in groups.items()]
    return lo is None, ("(?:" + "|".join(alts) + ")" if alts else None)


def _with_fraction(n: int, lo: str | None, lo_incl: bool, hi: str | None, hi_incl: bool
                   ) -> str:
    """The integer part ``n`` with the fractions :func:`_fraction_digits` allows; '' if none."""
    empty, rest = _fraction_digits(lo, lo_incl, hi, hi_incl)
    if rest is None:
        return str(n) if empty else ""
    return f"{n}(?:\\.{rest})?" if empty else f"{n}\\.{rest}"


def _magnitude_regex(a: Decimal, a_incl: bool, b: Decimal | None, b_incl: bool) -> list[str]:
    """Decimals n[.f] (no exponent) whose value m satisfies a <(=) m <(=) b, a >= 0: any
    fraction strictly between the integer parts of the bounds, the fraction digits compared
    digit by digit at each bound's own integer part."""
    big_a, frac_a = _split(a)
    if b is None:
        parts = [_nonneg_int_regex(big_a + 1, None) + _ANY_FRAC,
                 _with_fraction(big_a, frac_a, a_incl, None, True)]
    else:
        big_b, frac_b = _split(b)
        if big_a == big_b:
            parts = [_with_fraction(big_a, frac_a, a_incl, frac_b, b_incl)]
        elif big_a > big_b:
            parts = []
        else:
            inner = _nonneg_int_regex(big_a + 1, big_b - 1)
            parts = [inner + _ANY_FRAC if inner else "",
                     _with_fraction(big_a, frac_a, a_incl, None, True),
                     _with_fraction(big_b, None, True, frac_b, b_incl)]
    return [p for p in parts if p]


def number_range_regex(lo: Decimal | int | None, lo_incl: bool, hi: Decimal | int | None,
                       hi_incl: bool) -> str:
    """JSON numbers without exponent in the range given by decimal bounds (None: unbounded),
    compared exactly as decimals. '' if empty. (Exponents are left out: the range check is
    digit by digit.)"""
    lo = None if lo is None else Decimal(lo)
    hi = None if hi is None else Decimal(hi)
    zero = Decimal(0)
    parts: list[str] = []
    # non-negative values: magnitude in [max(lo, 0), hi]
    if hi is None or hi > 0 or (hi == 0 and hi_incl):
        if lo is None or lo < 0:
            parts += _magnitude_regex(zero, True, hi, hi_incl)
        else:
            parts += _magnitude_regex(lo, lo_incl, hi, hi_incl)
    # negative values: magnitude in (max(-hi, 0), -lo] (copy_negate: exact, where unary
    # minus rounds to the context's 28 digits: -(10**30 - 1) became -10**30)
    if lo is None or lo < 0:
        if hi is None or hi >= 0:
            mags = _magnitude_regex(zero, False, None if lo is None else lo.copy_negate(),
                                    lo_incl)
        else:
            mags = _magnitude_regex(hi.copy_negate(), hi_incl,
                                    None if lo is None else lo.copy_negate(), lo_incl)
        parts += ["-" + m for m in mags]
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
