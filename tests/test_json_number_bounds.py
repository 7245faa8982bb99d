"""Decimal bounds on JSON Schema numbers (``minimum: 0.5``, ``exclusiveMaximum: 2.25``): the
range regex compares the text's digits with the bound's, exactly as decimals, against
Python's ``Decimal`` as the oracle; and a schema with such bounds accepts and rejects what
``jsonschema`` does."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from gramask.frontends.json_text import number_range_regex

from ._support import accepts, byte_ids
from .test_json_schema import _compiled, check, valid

_DECIMALS = st.builds(
    lambda sign, ip, fd: Decimal(f"{sign}{ip}.{fd}" if fd else f"{sign}{ip}"),
    st.sampled_from(["", "-"]), st.sampled_from([0, 0, 1, 2, 9, 10, 99, 100]),
    st.text("0123456789", max_size=3))


@settings(deadline=None, max_examples=300)
@given(lo=st.none() | _DECIMALS, lo_incl=st.booleans(), hi=st.none() | _DECIMALS,
       hi_incl=st.booleans(), values=st.lists(_DECIMALS, min_size=1, max_size=20),
       zeros=st.integers(0, 2))
def test_range_regex_is_the_decimal_comparison(lo: Decimal | None, lo_incl: bool,
                                               hi: Decimal | None, hi_incl: bool,
                                               values: list[Decimal], zeros: int) -> None:
    rx = number_range_regex(lo, lo_incl, hi, hi_incl)
    pat = re.compile(rx) if rx else None
    for v in values:
        text = str(v) + ("0" * zeros if "." in str(v) else "")
        if text.startswith("-") and v == 0:
            continue  # "-0": a zero is written without its sign here (refused by design)
        want = ((lo is None or (v >= lo if lo_incl else v > lo))
                and (hi is None or (v <= hi if hi_incl else v < hi)))
        assert bool(pat and pat.fullmatch(text)) == want, (lo, lo_incl, hi, hi_incl, text, rx)


def test_schema_with_decimal_bounds() -> None:
    check({"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.25},
          passing=[0.5, 0.75, 1, 2, 2.2, 2.249], failing=[0.49, 0, -1, 2.25, 2.3, 3])
    check({"type": "number", "exclusiveMinimum": -0.125, "maximum": -0.1},
          passing=[-0.12, -0.1, -0.11], failing=[-0.125, -0.13, -0.09, 0])
    check({"type": "number", "minimum": 0.001, "maximum": 1000.5},
          passing=[0.001, 0.5, 1000, 1000.5], failing=[0.0009, 0, 1000.51, 1001])


_BOUNDS = st.sampled_from([0, 5, -3, 0.1, 0.3, 2.5, 1e-7, -1e-5, 1e23, 10**18 + 1,
                           -(10**30 - 1), 123456.789])


@settings(deadline=None, max_examples=150)
@given(bound=_BOUNDS, kw=st.sampled_from(["minimum", "maximum", "exclusiveMinimum",
                                          "exclusiveMaximum"]),
       offsets=st.lists(st.integers(-10**4, 10**4), min_size=1, max_size=6),
       scale=st.integers(0, 40))
def test_bounds_hold_in_jsonschemas_float_reading(bound: int | float, kw: str,
                                                  offsets: list[int], scale: int) -> None:
    """A text within the bounds passes them in ``jsonschema``'s reading too, which reads a
    text with a point as a double (``4.99999999999999999999`` is 5.0: not below
    ``exclusiveMaximum: 5``) and compares an integer with the bound exactly. Texts just
    around the bound, with up to 40 more digits."""
    schema = {"type": "number", kw: bound}
    cg = _compiled(json.dumps(schema))
    exact = Fraction(Decimal(repr(bound)) if isinstance(bound, float) else bound)
    for off in offsets:
        v = exact + Fraction(off, 10**scale)
        k = next(k for k in range(80) if (v * 10**k).denominator == 1)
        digits = str(abs(v.numerator * 10**k // v.denominator)).rjust(k + 1, "0")
        text = ("-" if v < 0 else "") + (f"{digits[:-k]}.{digits[-k:]}" if k else digits)
        for t in (text, text + ".0" if not k else text + "0"):
            if accepts(cg, byte_ids(t)):
                assert valid(schema, json.loads(t)), t
    check({"type": "number", "exclusiveMaximum": 5}, passing=[4.5, 4.999999999999999],
          failing=[5], texts=(("4.99999999999999999999", False), ("4.9", True)))
    check({"type": "number", "exclusiveMinimum": 0, "maximum": 1e-15}, passing=[],
          failing=[0, 1e-14], texts=(("0." + "0" * 15 + "5", True), ("0.5", False)))
    check({"type": "number", "minimum": 1e-120}, passing=[1, 0.5], failing=[0, -1])
