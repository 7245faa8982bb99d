"""Byte automata of JSON numbers that are exact multiples of a decimal divisor (JSON Schema
``multipleOf``), within the texts a number regex allows (a range, or any number).

The divisor is read as a decimal ``d = c·10^e`` (``c`` an integer not divisible by 10); a
number's text is ``mantissa·10^-f`` (its digits, ``f`` of them after the point). The value is
a multiple of ``d`` iff the text, shifted ``-e`` places, is an integer divisible by ``c``.
That is decided digit by digit, left to right, by a residue modulo ``c`` and a count that
stops at ``|e|``:

* ``e <= 0`` (``0.01``, ``2.5``, ``7``): the residue of the digits read so far, and how many
  fraction digits were read (up to ``-e``; past that, only zeros: a later non-zero digit leaves
  the integers). Accepting where the residue, shifted by the fraction digits still missing, is
  0 mod ``c``.
* ``e > 0`` (``500``, ``1e6``): the number must be an integer ending in ``e`` zeros whose
  quotient by ``10^e`` is divisible by ``c``: the residue of the digits before the current run
  of zeros, and the run's length up to ``e`` (then each further zero multiplies the quotient
  by 10); a fraction may follow only in zeros.

The automaton is the product of that with the number regex's own automaton, explored from
the start (only the pairs some text reaches), then trimmed and minimised. Exponents are not
read here (the regex has none): ``d`` and the exponent together compare an exponent with a
count of digits, which no finite automaton does in general. Exact decimal arithmetic
throughout, unlike the ``jsonschema`` package, which divides floats (``0.07 / 0.01`` is
``7.000000000000001``: not a multiple there, a multiple here).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from ..compiler.regex_bytes import (
    MAX_BYTE_STATES,
    MAX_TERMINAL_STATES,
    ByteDFA,
    _trim_classes,
    regex_to_byte_dfa,
)
from ..errors import GrammarError

__all__ = [
    "EXACT_INT_DIGITS",
    "MAX_EXPLORED_STATES",
    "MAX_NUMBER_STATES",
    "decimal_lcm",
    "decimal_of",
    "float_agreeing_digits",
    "float_divisor_kind",
    "float_safe_bound",
    "is_multiple",
    "is_multiple_as_floats",
    "multiple_dfa",
    "multiple_spec",
    "multiples_listed",
    "residue_modulus",
    "small_fractions",
]

# product states explored before giving up (each costs a Python step per byte class)
MAX_EXPLORED_STATES = 2 * MAX_BYTE_STATES
# states of the minimised automaton: the lexer's product with the schema's other terminals
MAX_NUMBER_STATES = MAX_TERMINAL_STATES
# the symbols a number automaton reads: digits 0-9, then these
_DOT, _MINUS, _OTHER = 10, 11, 12


def decimal_of(value: Any) -> Decimal:
    """A schema number read exactly: an int as itself, a float as the shortest decimal that
    reads back as it (the schema's own text for any number written with at most 15
    significant digits: ``0.01`` is ``Decimal("0.01")``, not the double's expansion)."""
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def is_multiple(value: Decimal, divisor: Decimal) -> bool:
    """Whether ``value`` is an integer multiple of ``divisor`` (> 0), exactly (as fractions:
    ``Decimal``'s remainder fails where the quotient has more digits than its context)."""
    return (Fraction(value) / Fraction(divisor)).denominator == 1


def float_divisor_kind(divisor: float) -> str:
    """Which multiples of a float ``multipleOf`` the ``jsonschema`` package also finds
    (it divides the value's double by the divisor's and asks for an integer):

    * ``"dyadic"``: the double is the divisor's decimal (``0.25``, ``2.5``): every multiple
      whose text has at most :func:`float_agreeing_digits` digits is a double, and so is
      its quotient;
    * ``"integers"``: a divisor below 1 whose double is close enough to the decimal
      (``0.01``, ``0.1``): an integer text is an exact double (below ``2^53``), and its
      quotient ``N / (1 + η)`` rounds back to ``N`` (checked at the top of each binade,
      where half a unit in the last place is smallest against ``N``; past ``2^53`` every
      double is an integer); a fraction's does not always (``0.07 / 0.01`` is
      ``7.000000000000001``);
    * ``"listed"``: neither (``0.07``: ``14 / 0.07`` is ``200.00000000000003``)."""
    exact, double = Fraction(decimal_of(divisor)), Fraction(divisor)
    if exact == double:
        return "dyadic"
    rel = abs(exact / double - 1)  # N·rel: how far the exact quotient lies from N
    if exact < 1 and all((2 ** (p + 1) - 1) * rel < Fraction(2**p, 2**53) for p in range(53)):
        return "integers"
    return "listed"


def float_safe_bound(bound: int | float, inclusive: bool, *, upper: bool,
                     digits: int) -> Decimal:
    """An inclusive decimal bound, with at most ``digits`` after the point, that a number's
    text within passes ``bound`` in both readings: exactly, and as the ``jsonschema`` package
    reads it (a text with a point is a double: ``4.99999999999999999999`` is 5.0, no number
    below ``exclusiveMaximum: 5``).

    ``g``, the double nearest ``bound`` that passes it, is written as its shortest spelling
    (or exactly, where it is whole); texts up to it round to doubles up to ``g`` (rounding is
    monotone), and an integer text up to it is at most ``g`` (no integer lies between a
    double that is no integer and its spelling). Rounded toward the inside past ``digits``."""
    def passes(g: float) -> bool:
        if g == bound:
            return inclusive
        return g < bound if upper else g > bound

    g = float(bound)
    while not passes(g):
        g = math.nextafter(g, -math.inf if upper else math.inf)
    y = Decimal(g) if g.is_integer() else Decimal(repr(g))
    exponent = y.as_tuple().exponent
    if isinstance(exponent, int) and exponent < -digits:
        with localcontext() as ctx:
            ctx.prec = 2 * digits + 400
            y = y.quantize(Decimal(1).scaleb(-digits),
                           rounding=ROUND_FLOOR if upper else ROUND_CEILING)
    return y


def is_multiple_as_floats(value: int | float, divisor: int | float) -> bool:
    """Whether the ``jsonschema`` package reads ``value`` (decoded JSON) as a multiple of
    ``divisor`` (> 0): a float divisor divides in doubles (exact fractions where that
    overflows), an integer one takes the remainder."""
    if isinstance(divisor, float):
        try:
            quotient = value / divisor
            return int(quotient) == quotient
        except OverflowError:
            pass
        return (Fraction(value) / Fraction(divisor)).denominator == 1
    return value % divisor == 0


def residue_modulus(divisor: Decimal) -> int:
    """The modulus the automaton of ``divisor``'s multiples follows the digits' residue by."""
    return _split(divisor)[0]


def decimal_lcm(a: Decimal, b: Decimal) -> Decimal:
    """The least common multiple of two positive decimals: the numbers that are multiples of
    both are the multiples of it (``allOf`` of two ``multipleOf``; an integer's divisor: the
    integers that are multiples of ``0.4`` are those of ``lcm(0.4, 1) = 2``)."""
    (ca, ea), (cb, eb) = _split(a), _split(b)
    low = min(ea, eb)
    x, y = ca * 10 ** (ea - low), cb * 10 ** (eb - low)
    return Decimal(f"{x * y // math.gcd(x, y)}E{low}")


def multiple_spec(divisor: Decimal, number_regex: str, *, negate: bool = False,
                  digits: int | None = None, point_digits: int | None = None) -> str:
    """The terminal spec (``TerminalSpec.automaton``) of the texts ``number_regex`` matches
    whose value is a multiple of ``divisor`` (``negate``: is none), and that have at most
    ``digits`` digits where given, and at most ``point_digits`` before a point where they
    have one; built by :func:`multiple_dfa`."""
    c, e = _split(divisor)
    spec: dict[str, Any] = {"multiple_of": f"{c}E{e}", "number": number_regex}
    if negate:
        spec["negate"] = True
    if digits is not None:
        spec["digits"] = digits
    if point_digits is not None:
        spec["point_digits"] = point_digits
    return json.dumps(spec, sort_keys=True)


# Digits an integer part may have for its double to be the integer exactly (below 2^53): a
# text with a point is a double to ``jsonschema``, whose remainder by an int divisor is exact
# only then (``9007199254740993.0`` is 9007199254740992.0 there: no multiple of 3).
EXACT_INT_DIGITS = 15


def float_agreeing_digits(schema_divisor: int | float) -> int:
    """How many digits a number's text may have for the ``jsonschema`` package's float
    reading to find it no multiple of ``schema_divisor`` wherever the exact reading does.

    That package reads a text with a point as a double, and divides by a float divisor in
    doubles (``2.0000000000000000001`` is ``2.0`` there: a multiple of 1). A text of ``s``
    digits is ``a·10^-f`` with ``|a| < 10^s``; over a divisor ``c·10^e`` that is no integer,
    its quotient lies at least ``1/M`` from every integer, ``M`` its reduced denominator, so
    ``|quotient|·M <= |a|·10^max(0, -e-f) < 10^(s + max(0, -e))``. Parsing, the divisor's
    double and the division err by under 3.4e-16 of the quotient in all; below ``10^15``
    that stays under ``1/M``, and the double quotient is no integer either."""
    e = _split(decimal_of(schema_divisor))[1]
    return 15 - max(0, -e)


def _split(divisor: Decimal) -> tuple[int, int]:
    """``divisor`` (> 0) as (c, e) with ``divisor = c·10^e`` and ``c`` not divisible by 10,
    exactly (``Decimal.normalize`` rounds to the context's 28 digits)."""
    sign, digits, exp = divisor.as_tuple()
    assert sign == 0 and isinstance(exp, int)
    c = int("".join(map(str, digits)))
    assert c > 0
    while c % 10 == 0:
        c, exp = c // 10, exp + 1
    return c, exp


def _residue_table(c: int, e: int) -> tuple[int, np.ndarray, np.ndarray]:
    """The divisibility automaton as (start, table (states, 13 symbols), finals), -1 dead:
    ``c·(|e| + 2) + 3`` states at most (see the module docstring)."""
    r = np.arange(c, dtype=np.int64)
    dead = np.full(c, -1, dtype=np.int64)
    blocks: list[np.ndarray] = []
    fin: list[np.ndarray] = []
    if e <= 0:  # phase 0: the integer part; phase 1 + j: j fraction digits read (j <= -e)
        k = -e
        for phase in range(k + 2):
            j = max(phase - 1, 0)
            t = np.empty((c, 13), dtype=np.int64)
            for dg in range(10):
                nxt = (10 * r + dg) % c
                t[:, dg] = (nxt if phase == 0 else (phase + 1) * c + nxt if j < k
                            else phase * c + r if dg == 0 else dead)  # past -e: zeros only
            t[:, _DOT] = c + r if phase == 0 else dead
            t[:, _MINUS] = phase * c + r
            t[:, _OTHER] = dead
            blocks.append(t)
            fin.append(r * pow(10, k - j, c) % c == 0)
        return 0, np.vstack(blocks), np.concatenate(fin)
    # phase z (0..e): the run of trailing zeros so far (capped at e), and the residue of the
    # digits before it (at e: of the quotient by 10^e); then start, a leading 0, a zero fraction
    start, zero, tail = (e + 1) * c, (e + 1) * c + 1, (e + 1) * c + 2
    for z in range(e + 1):
        t = np.empty((c, 13), dtype=np.int64)
        t[:, 0] = (z + 1) * c + r if z < e else e * c + 10 * r % c
        for dg in range(1, 10):
            t[:, dg] = (pow(10, z + 1, c) * r + dg) % c
        t[:, _DOT] = np.where((z == e) & (r == 0), tail, -1)
        t[:, _MINUS] = z * c + r
        t[:, _OTHER] = dead
        blocks.append(t)
        fin.append((z == e) & (r == 0))
    ends = np.full((3, 13), -1, dtype=np.int64)
    ends[0, :10] = [zero, *(np.arange(1, 10) % c)]
    ends[0, _MINUS] = start
    ends[1, _DOT] = tail  # "0": then only a zero fraction
    ends[2, 0] = tail  # zeros after the point
    blocks.append(ends)
    fin.append(np.array([False, True, True]))
    return start, np.vstack(blocks), np.concatenate(fin)


def _capped(mod: np.ndarray, finals: np.ndarray, start: int, cap: int
            ) -> tuple[int, np.ndarray, np.ndarray]:
    """The residue automaton times a count of the digits read (0..``cap``; one more is
    dead): state ``s·(cap + 1) + k``."""
    n = cap + 1
    count = np.empty((n, 13), dtype=np.int64)
    k = np.arange(n)
    count[:, :10] = np.where(k < cap, k + 1, -1)[:, None]
    count[:, _DOT] = count[:, _MINUS] = k
    count[:, _OTHER] = -1
    return _times(mod, finals, start, count)


def _times(mod: np.ndarray, finals: np.ndarray, start: int, count: np.ndarray
           ) -> tuple[int, np.ndarray, np.ndarray]:
    """The residue automaton times a counter automaton ``count`` (its start 0, all final):
    state ``s·n + k``."""
    n = count.shape[0]
    both = (mod[:, None, :] >= 0) & (count[None, :, :] >= 0)
    table = np.where(both, mod[:, None, :] * n + count[None, :, :], -1).reshape(-1, 13)
    return start * n, table, np.repeat(finals, n)


def _point_capped(mod: np.ndarray, finals: np.ndarray, start: int, cap: int
                  ) -> tuple[int, np.ndarray, np.ndarray]:
    """The residue automaton times a count of the digits before a point: 0..``cap``, then
    ``cap + 1`` (more, no point yet: a point is dead there), then ``cap + 2`` (a point
    after at most ``cap``): state ``s·(cap + 3) + k``."""
    n = cap + 3
    count = np.empty((n, 13), dtype=np.int64)
    k = np.arange(n)
    count[:, :10] = np.where(k < cap + 2, np.minimum(k + 1, cap + 1), k)[:, None]
    count[:, _DOT] = np.where(k <= cap, cap + 2, -1)
    count[:, _MINUS] = k
    count[:, _OTHER] = -1
    return _times(mod, finals, start, count)


def _symbols() -> np.ndarray:
    sym = np.full(256, _OTHER, dtype=np.int64)
    sym[0x30:0x3A] = np.arange(10)
    sym[ord(".")] = _DOT
    sym[ord("-")] = _MINUS
    return sym


def multiple_dfa(spec: dict[str, Any], *, limit: int = MAX_EXPLORED_STATES) -> ByteDFA:
    """The byte DFA of a :func:`multiple_spec` (parsed): the number regex's automaton times
    the divisibility automaton, the pairs reached from the start explored breadth first
    (vectorised: a level of pairs at a time).

    Raises
    ------
    GrammarError
        The divisibility automaton, or the pairs reached, exceed ``limit`` states, or the
        minimised automaton :data:`MAX_NUMBER_STATES` (a divisor with many digits not
        divisible by 10, over a wide range).
    """
    divisor = Decimal(spec["multiple_of"])
    if not divisor.is_finite() or divisor <= 0:
        raise GrammarError(f"multipleOf {spec['multiple_of']}: must be a number above 0")
    c, e = _split(divisor)
    if c * (abs(e) + 2) > limit:
        raise _too_many(divisor, limit)
    start, mod, mod_finals = _residue_table(c, e)
    if spec.get("negate"):  # the complement within the regex's texts: each dead move of
        # the residues (a digit that leaves the multiples for good, or a syntax error the
        # regex refuses anyway) goes to a final sink instead
        sink = mod.shape[0]
        mod = np.vstack([np.where(mod >= 0, mod, sink), np.full((1, 13), sink)])
        mod_finals = np.append(~mod_finals, True)
    if spec.get("digits") is not None:  # times a count of the digits, up to the cap
        start, mod, mod_finals = _capped(mod, mod_finals, start, int(spec["digits"]))
    if spec.get("point_digits") is not None:  # times a count of the integer part's digits
        start, mod, mod_finals = _point_capped(mod, mod_finals, start,
                                               int(spec["point_digits"]))
    rng = regex_to_byte_dfa("NUMBER", spec["number"])
    r_cls, r_class = rng.classes()
    sym = _symbols()
    # byte classes: the regex's, split by symbol; numbered by first byte
    keys = (r_class.astype(np.int64) * 16 + sym).tolist()
    number: dict[int, int] = {}
    byte_class = np.array([number.setdefault(k, len(number)) for k in keys], dtype=np.int64)
    first = np.zeros(len(number), dtype=np.int64)
    first[byte_class[::-1]] = np.arange(255, -1, -1)
    rc, sy = r_class[first].astype(np.int64), sym[first]
    r_tab = r_cls.astype(np.int64)
    m = mod.shape[0]

    def successors(pairs: np.ndarray) -> np.ndarray:  # (pairs,) -> (pairs, columns), -1 dead
        a, b = r_tab[pairs // m][:, rc], mod[pairs % m][:, sy]
        return np.where((a >= 0) & (b >= 0), a * m + b, -1)

    seen = np.array([start], dtype=np.int64)  # the start pair (state 0) first
    level = seen
    while level.size:
        nxt = successors(level).ravel()
        nxt = np.unique(nxt[nxt >= 0])
        level = nxt[~np.isin(nxt, seen)]
        seen = np.concatenate([seen, level])
        if seen.size > limit:
            raise _too_many(divisor, limit)
    order = np.argsort(seen, kind="stable")
    succ = successors(seen)
    ids = np.where(succ >= 0, order[np.searchsorted(seen, succ, sorter=order)], -1)
    finals = rng.finals[seen // m] & mod_finals[seen % m]
    got = _trim_classes(ids, byte_class, finals, reachable=True)
    if got.num_states > MAX_NUMBER_STATES:
        raise _too_many(divisor, MAX_NUMBER_STATES)
    return got


def _too_many(divisor: Decimal, limit: int) -> GrammarError:
    c, _ = _split(divisor)
    return GrammarError(f"its multiples need an automaton of more than {limit:,} states here "
                        f"(a residue modulo {c:,} per digit position the bounds tell apart)")


def multiples_listed(divisor: Decimal, lo: Decimal, lo_incl: bool, hi: Decimal, hi_incl: bool,
                     *, integer: bool, limit: int,
                     keep: Callable[[Fraction], bool] | None = None) -> str | None:
    """A regex of the multiples of ``divisor`` in the range (those ``keep`` keeps), each in
    every spelling without an exponent (a fraction's trailing zeros; ``0``, not ``-0``); ''
    where there is none, None where there are more than ``limit``: a divisor whose automaton
    is too large over a narrow range."""
    q_lo, q_hi = Fraction(lo) / Fraction(divisor), Fraction(hi) / Fraction(divisor)
    first = math.ceil(q_lo) + (1 if q_lo.denominator == 1 and not lo_incl else 0)
    last = math.floor(q_hi) - (1 if q_hi.denominator == 1 and not hi_incl else 0)
    if last - first + 1 > limit:
        return None
    c, e = _split(divisor)
    alts = []
    for n in range(first, last + 1):
        if keep is not None and not keep(n * Fraction(divisor)):
            continue
        digits = str(abs(n) * c) + "0" * max(e, 0)  # the value's digits, exactly
        point = len(digits) + min(e, 0)
        ip = digits[:point].lstrip("0") or "0"
        fp = ("0" * max(-point, 0) + digits[max(point, 0):]).rstrip("0")
        if integer and fp:
            continue
        text = ("-" if n < 0 else "") + ip
        alts.append(text if integer else f"{text}\\.{fp}0*" if fp else f"{text}(?:\\.0+)?")
    return "(?:" + "|".join(alts) + ")" if alts else ""


def small_fractions(divisor: float, lo: int | float | None, lo_incl: bool,
                    hi: int | float | None, hi_incl: bool, *, limit: int, digits: int) -> str:
    """A regex of the multiples of a float ``divisor`` that are no integer, within the
    bounds and below ``limit / 2`` multiples in magnitude, that ``jsonschema``'s floats take
    too (0.05 and 9.99 for ``0.01``, not 0.07): what a divisor of kind ``"integers"``
    (:func:`float_divisor_kind`) keeps beside the integers. '' where there is none."""
    d = decimal_of(divisor)
    reach = d * (limit // 2 - 1)
    b_lo = -reach if lo is None else max(-reach, float_safe_bound(lo, lo_incl, upper=False,
                                                                  digits=digits))
    b_hi = reach if hi is None else min(reach, float_safe_bound(hi, hi_incl, upper=True,
                                                                digits=digits))
    if b_lo > b_hi:
        return ""
    return multiples_listed(d, b_lo, True, b_hi, True, integer=False, limit=limit,
                            keep=lambda v: v.denominator != 1
                            and is_multiple_as_floats(float(v), divisor)) or ""
