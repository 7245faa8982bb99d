"""JSON Schema ``multipleOf`` on numbers and integers (decimal divisors, wide bounds), against
an exact oracle: the text's value as a ``Fraction`` divided by the divisor's, read as the
decimal the schema spells, and ``jsonschema``'s reading (it divides floats: ``0.07 / 0.01``
is ``7.000000000000001`` there, so it calls 0.07 no multiple of 0.01; gramask keeps only the
texts both readings take, docs/json_schema.md). Texts are forced through compiled grammars, byte by byte and
through a real tokenizer; both accepted and rejected texts are checked."""

from __future__ import annotations

import json
import re
import warnings
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask import Grammar
from gramask.errors import GrammarError
from gramask.frontends import json_text as jt
from gramask.frontends.json_numbers import (
    decimal_lcm,
    float_agreeing_digits,
    float_divisor_kind,
    multiple_dfa,
    multiple_spec,
    multiples_listed,
)
from gramask.frontends.json_schema_base import SchemaWarning

from ._support import BYTES, accepts, byte_ids, hf_tokenizer
from .test_json_schema import check, valid

_NUMBER = re.compile(jt.JSON_DECIMAL)


def exact(text: str, schema: dict[str, Any]) -> bool:
    """The oracle: ``text`` (a JSON number without exponent) valid under a number schema of
    ``type``, bounds and ``multipleOf``, in exact decimal arithmetic."""
    if not _NUMBER.fullmatch(text):
        return False
    v = Fraction(Decimal(text))
    if schema.get("type") == "integer" and "." in text:
        return False  # (gramask writes integers without a fraction, by design)
    d = schema.get("multipleOf")
    if d is not None and (v / Fraction(Decimal(repr(d)))).denominator != 1:
        return False
    for kw, holds in (("minimum", v.__ge__), ("maximum", v.__le__),
                      ("exclusiveMinimum", v.__gt__), ("exclusiveMaximum", v.__lt__)):
        if kw in schema and not holds(Fraction(Decimal(repr(schema[kw])))):
            return False
    return True


def _text(v: Fraction | Decimal, zeros: int) -> str:
    """``v`` (a decimal value) written exactly without exponent, and ``zeros`` more fraction
    zeros where it has a fraction."""
    v = Fraction(v)
    k = next(k for k in range(200) if (v * 10**k).denominator == 1)
    digits = str(abs(v.numerator * 10**k // v.denominator)).rjust(k + 1, "0")
    text = ("-" if v < 0 else "") + (f"{digits[:-k]}.{digits[-k:]}" if k else digits)
    return text + "0" * zeros if k else text


_DIVISORS = st.builds(lambda c, e: Decimal(c).scaleb(e),
                      st.sampled_from([1, 2, 3, 5, 7, 12, 25, 125, 36]), st.integers(-4, 3))
# and wider moduli, whose automata over a range may be refused (for integers, below)
_WIDE_DIVISORS = _DIVISORS | st.builds(lambda c, e: Decimal(c).scaleb(e),
                                       st.sampled_from([1024, 997]), st.integers(-2, 2))
_DECIMALS = st.builds(lambda n, e: Decimal(n).scaleb(e), st.integers(-10**7, 10**7),
                      st.integers(-5, 2))


@settings(deadline=None, max_examples=150)
@given(d=_DIVISORS, lo=st.none() | _DECIMALS, hi=st.none() | _DECIMALS,
       incl=st.tuples(st.booleans(), st.booleans()),
       k=st.lists(st.integers(-10**6, 10**6), min_size=1, max_size=12),
       others=st.lists(_DECIMALS, max_size=12), zeros=st.integers(0, 2),
       negate=st.booleans())
def test_automaton_is_the_exact_decimal_reading(d: Decimal, lo: Decimal | None,
                                                hi: Decimal | None, incl: tuple[bool, bool],
                                                k: list[int], others: list[Decimal],
                                                zeros: int, negate: bool) -> None:
    """The multiples (``negate``: the others, a complement's) among the regex's texts."""
    rx = (jt.number_range_regex(lo, incl[0], hi, incl[1])
          if lo is not None or hi is not None else jt.JSON_DECIMAL)
    if not rx:
        return
    dfa = multiple_dfa(json.loads(multiple_spec(d, rx, negate=negate)))
    texts = [_text(Fraction(d) * n, zeros) for n in k] + [_text(x, zeros) for x in others]
    texts += [_text(Fraction(d) * n + Fraction(1, 10**6), 0) for n in k]  # just past one
    for text in texts:
        if text.startswith("-") and Decimal(text) == 0:
            continue  # "-0": a range regex leaves it out by design
        want = (re.fullmatch(rx, text) is not None
                and ((Fraction(Decimal(text)) / Fraction(d)).denominator == 1) != negate)
        assert dfa.matches(text.encode()) == want, (d, lo, hi, incl, text)


@settings(deadline=None, max_examples=60)
@given(d=_WIDE_DIVISORS, lo=st.integers(-10**9, 10**9), width=st.integers(0, 10**12),
       k=st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=8))
def test_integer_multiples_in_wide_ranges(d: Decimal, lo: int, width: int,
                                          k: list[int]) -> None:
    """The integers of [lo, lo + width] that are multiples of ``d``: the range's automaton
    times the residues, or refused (never a wrong answer)."""
    rx = jt.integer_range_regex(lo, lo + width)
    try:
        dfa = multiple_dfa(json.loads(multiple_spec(decimal_lcm(d, Decimal(1)), rx)))
    except GrammarError as e:
        assert "automaton" in str(e)
        return
    step = int(decimal_lcm(d, Decimal(1)))
    for n in [*k, lo, lo + width, lo - 1, lo + width + 1]:
        for x in (n, n - n % step, n - n % step + step):
            want = lo <= x <= lo + width and (Fraction(x) / Fraction(d)).denominator == 1
            assert dfa.matches(str(x).encode()) == want, (d, lo, width, x)


@pytest.mark.parametrize("schema", [
    {"type": "number", "multipleOf": 0.01},
    {"type": "number", "multipleOf": 0.05, "minimum": 0, "exclusiveMaximum": 100},
    {"type": "number", "multipleOf": 2.5, "exclusiveMinimum": -10, "maximum": 10.5},
    {"type": "number", "multipleOf": 500},
    {"type": "number", "multipleOf": 1},
    {"type": "integer", "multipleOf": 5, "minimum": 0, "maximum": 10**12},
    {"type": "integer", "multipleOf": 7, "minimum": -10**9},
    {"type": "integer", "multipleOf": 0.4},
    {"type": "integer", "multipleOf": 1e-8},
])
def test_schema_accepts_exactly_the_multiples(schema: dict[str, Any]) -> None:
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    d = Fraction(Decimal(repr(schema["multipleOf"])))
    texts = {"0", "1", "-1", "0.07", "0.070", "1.505", "-3.10", "2.5", "7.5", "10", "12.5",
             "100", "99.99", "100.00", "-0.05", "1000", "1500", "2000.000", "0.4", "2",
             "1000000000000", "1000000000005", "999999999995", "-14", "-21", "-1000000000",
             "-1000000007", "0.00000001"}
    for n in (1, 3, 14, 40, 399, 2001):  # multiples, spelled with trailing zeros
        texts |= {_text(d * n, 0), _text(d * n, 2), _text(-d * n, 1)}
    seen = set()
    for text in sorted(texts):
        got = accepts(cg, byte_ids(text))
        assert got == (exact(text, schema) and both_readings(text, schema)), (schema, text)
        seen.add(got)
    assert seen == {True, False}
    for text in ("1e2", "5E+1", "1.0e1"):  # with an exponent: rejected by design
        assert not accepts(cg, byte_ids(text))


def both_readings(text: str, schema: dict[str, Any]) -> bool:
    """Whether ``jsonschema`` finds ``text`` valid, and a float divisor's automaton keeps it:
    integers, and fractions below 999 multiples, for a divisor no double spells (``0.01``),
    texts of at most
    ``float_agreeing_digits`` digits for one a double spells exactly (``0.25``)."""
    if not valid(schema, json.loads(text)):
        return False
    d = schema.get("multipleOf")
    if not isinstance(d, float):
        return True
    kind = float_divisor_kind(d)
    if kind == "integers" and "." in text:  # small fractions only, listed, and no integer
        v = Fraction(Decimal(text))
        return schema.get("type") != "integer" and v.denominator != 1 and abs(v) <= Fraction(
            Decimal(repr(d))) * 999
    return kind != "dyadic" or sum(c.isdigit() for c in text) <= float_agreeing_digits(d)


def test_decimal_reading_where_jsonschema_divides_floats() -> None:
    """0.07 is 7 × 0.01 exactly, but ``jsonschema``'s float division says no: a divisor no
    double spells keeps the integers (whose quotients the floats get right), one that is
    a double exactly its multiples of at most 15 digits, and any other is refused unless
    the bounds hold few multiples, listed where both readings agree."""
    schema = {"type": "number", "multipleOf": 0.01}
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    assert not accepts(cg, byte_ids("0.07")) and not valid(schema, 0.07)
    assert accepts(cg, byte_ids("7")) and valid(schema, 7)
    assert not accepts(cg, byte_ids("0.075")) and not valid(schema, 0.075)
    with pytest.raises(GrammarError, match=r"'multipleOf' at #: .*double"):
        Grammar.from_json_schema({"type": "number", "multipleOf": 0.07})
    narrow = {"type": "number", "multipleOf": 0.07, "minimum": 0, "maximum": 1}
    cg = gramask.compile(Grammar.from_json_schema(narrow), BYTES, cache=False, progress=False)
    for n in range(15):
        text = _text(Fraction(7, 100) * n, 0)
        assert accepts(cg, byte_ids(text)) == valid(narrow, json.loads(text)), text
    with pytest.raises(GrammarError, match=r"'multipleOf' at #/allOf/1: .*0\.3 and 0\.2"):
        Grammar.from_json_schema({"allOf": [{"multipleOf": 0.3}, {"multipleOf": 0.2}]})


def test_huge_divisor_refused_naming_it_or_listed_in_a_narrow_range() -> None:
    schema = {"properties": {"a": {"type": "number", "multipleOf": 0.123456789}}}
    with pytest.raises(GrammarError, match=r"'multipleOf' at #/properties/a: .*automaton") as e:
        Grammar.from_json_schema(schema)
    assert e.value.name == "multipleOf"
    with warnings.catch_warnings(record=True) as w:  # lenient: ignored, with a warning
        warnings.simplefilter("always")
        Grammar.from_json_schema(schema, lenient=True)
    assert any(issubclass(x.category, SchemaWarning) for x in w)
    # a narrow range: its multiples listed one by one
    narrow = {"type": "number", "multipleOf": 0.123456789, "minimum": -1, "maximum": 1}
    cg = gramask.compile(Grammar.from_json_schema(narrow), BYTES, cache=False, progress=False)
    for text in ("0", "0.0", "0.123456789", "-0.9876543120", "0.2469135780", "0.12345678",
                 "1", "0.1234567891", "-0.123456788"):
        assert accepts(cg, byte_ids(text)) == (exact(text, narrow)
                                               and both_readings(text, narrow)), text


def test_divisors_that_would_multiply_the_lexer_are_refused() -> None:
    """The schema's number terminals share one lexer, which follows their residues at once:
    coprime divisors multiply its states, so past a bound the last one is refused."""
    props = {f"f{i}": {"type": "integer", "multipleOf": d} for i, d in enumerate((7, 11, 13))}
    Grammar.from_json_schema({"properties": props})  # residues modulo 1,001
    props["f3"] = {"type": "integer", "multipleOf": 17}
    with pytest.raises(GrammarError, match=r"'multipleOf' at #/properties/f3: .*17,017"):
        Grammar.from_json_schema({"properties": props})
    props["f3"] = {"type": "number", "multipleOf": 7.0}  # residues modulo 7 again: kept
    Grammar.from_json_schema({"properties": props})


def test_listing_is_exact() -> None:
    for d, lo, hi, integer in ((Decimal("0.003"), Decimal("1e29"),
                                Decimal("100000000000000000000000000000.01"), False),
                               (Decimal("0.25"), Decimal(-1), Decimal(1), False),
                               (Decimal(3), Decimal(-10), Decimal(10), True)):
        for lo_incl in (True, False):
            rx = multiples_listed(d, lo, lo_incl, hi, False, integer=integer, limit=100)
            assert rx is not None
            step = Fraction(d)
            first = Fraction(lo) // step - 1
            for n in range(int(first), int(first) + 12):
                v = step * n
                text = _text(v, 1 if not integer else 0)
                want = (lo < v if not lo_incl else lo <= v) and v < hi
                assert (re.fullmatch(rx, text) is not None) == want, (d, lo, text)


def test_multiple_of_merges_across_all_of_and_filters_enums() -> None:
    schema = {"type": "number", "allOf": [{"multipleOf": 0.75}, {"multipleOf": 0.5}]}
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    for text, ok in (("1.5", True), ("3", True), ("0.75", False), ("0.5", False),
                     ("4.5", True), ("-6", True), ("2.25", False)):
        assert accepts(cg, byte_ids(text)) == ok, text
    schema = {"enum": [0.07, 0.075, 3, "x", 1.5], "multipleOf": 0.01}
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    # (0.07 is a multiple of 0.01 exactly, not in jsonschema's floats: a value listed is kept
    # where both readings agree)
    for text, ok in (("0.07", False), ("0.075", False), ("3", True), ('"x"', True),
                     ("1.5", True)):
        assert accepts(cg, byte_ids(text)) == ok, text


def test_wide_bound_negated_exactly() -> None:
    """A 30-digit bound is negated exactly (``Decimal``'s unary minus rounded it to 28 digits,
    so -10**30 passed ``minimum: -(10**30 - 1)``)."""
    for t in ("number", "integer"):
        schema = {"type": t, "minimum": -(10**30 - 1), "exclusiveMaximum": -(10**29 + 1)}
        cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False,
                             progress=False)
        for n in (-10**30, -(10**30 - 1), -(10**29 + 1), -(10**29 + 2)):
            assert accepts(cg, byte_ids(str(n))) == valid(schema, n), (t, n)


def test_forcing_multiples_through_deepseek_tokens() -> None:
    tok = hf_tokenizer("deepseek-v4")
    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    schema = {"type": "object",
              "properties": {"price": {"type": "number", "multipleOf": 0.01, "minimum": 0},
                             "qty": {"type": "integer", "multipleOf": 5, "minimum": 0,
                                     "maximum": 10**12}},
              "required": ["price", "qty"], "additionalProperties": False}
    cg = gramask.compile(Grammar.from_json_schema(schema), vocab, progress=False)
    # (0.01: the integers, jsonschema's floats find 0.07 no multiple)
    good = ['{"price": 19, "qty": 1000000000000}', '{"price":0,"qty":0}',
            '{"price": 12, "qty": 995}', '{"price": 3, "qty": 5}']
    bad = ['{"price": 19.999, "qty": 5}', '{"price": -0.01, "qty": 5}', '{"price":0.07,"qty":0}',
           '{"price": 1, "qty": 1000000000005}', '{"price": 1, "qty": 7}',
           '{"price": 1e2, "qty": 5}']
    for text in good:
        assert accepts(cg, tok(text)), text
    for text in bad:
        assert not accepts(cg, tok(text)), text


@pytest.mark.parametrize("schema", [
    {"type": "number", "multipleOf": 0.05, "minimum": -10, "maximum": 1000},
    {"type": "number", "multipleOf": 2.5},
    {"type": "integer", "multipleOf": 7, "exclusiveMinimum": 0, "maximum": 10**12},
])
def test_masked_walks_end_in_multiples(schema: dict[str, Any]) -> None:
    """Random walks through the masks (real tokens), finished by the shortest completion:
    every text they end in is a multiple, in the range, by the exact reading."""
    import random

    import numpy as np

    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    cg = gramask.compile(Grammar.from_json_schema(schema), vocab, progress=False)
    rng = random.Random(7)
    toks = [vocab.token_bytes(i) for i in range(len(vocab))]
    # tokens of a number's characters, and those with a point: walks that reach fractions
    digits = np.array([bool(t) and not t.strip(b"0123456789.-") for t in toks])
    points = digits & np.array([b"." in t for t in toks])
    for _ in range(30):
        c = cg.constraint()
        for _ in range(rng.randint(0, 8)):
            m = c.allowed()
            m[vocab.eos_token_id] = False
            ids = np.flatnonzero(m & (points if rng.random() < 0.3 else digits))
            if not ids.size:
                ids = np.flatnonzero(m)
            if not ids.size:
                break
            c.advance(int(rng.choice(ids)))
        text = c.data.decode() + ("" if c.is_complete() else c.shortest_completion().text)
        assert exact(text.strip(), schema) and valid(schema, json.loads(text)), (schema, text)


@pytest.mark.parametrize(("schema", "texts"), [
    ({"not": {"multipleOf": 0.01}},
     ["0.07", "0.075", "1", "1.5", "1.505", "-0.001", "3.0001", "3.00010"]),
    ({"type": "integer", "not": {"multipleOf": 3}}, ["3", "4", "-5", "0", "9", "10"]),
    ({"not": {"minimum": 0, "multipleOf": 2.5}}, ["-5", "5", "7", "-7", "10.0", "2.50", "1"]),
    ({"type": "number", "if": {"multipleOf": 2}, "then": {"minimum": 10},
      "else": {"maximum": 0}}, ["12", "4", "3", "-3", "-4", "10.0", "11", "-0.5", "0.5"]),
])
def test_complement_of_multiple_of(schema: dict[str, Any], texts: list[str]) -> None:
    """``not``/``if`` over ``multipleOf``: the numbers that are no multiple (a non-number
    holds ``multipleOf``, so its complement has none), exactly."""
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    d = Fraction(Decimal(repr(_find(schema, "multipleOf"))))
    seen = set()
    for text in texts:
        v = Fraction(Decimal(text))
        multiple = (v / d).denominator == 1
        if "if" in schema:
            want = v >= 10 if multiple else v <= 0
        else:
            inner = schema["not"]
            want = not (multiple and v >= inner.get("minimum", v))
            want = want and (schema.get("type") != "integer" or "." not in text)
        got = accepts(cg, byte_ids(text))
        assert got == want, (schema, text)
        seen.add(got)
    assert seen == {True, False}
    assert not accepts(cg, byte_ids('"x"')) and not accepts(cg, byte_ids("null"))


def _find(schema: Any, key: str) -> Any:
    if isinstance(schema, dict):
        if key in schema:
            return schema[key]
        for v in schema.values():
            got = _find(v, key)
            if got is not None:
                return got
    return None


def test_listed_values_are_multiples_in_both_readings() -> None:
    """``enum`` values beside ``multipleOf`` (or its complement) are kept only where the exact
    reading and ``jsonschema``'s floats agree: 0.07 / 0.01 is 7.000000000000001 there, and
    356242412524554.44 / 0.1 an integer."""
    check({"enum": [0.07, 0.05, 1, 0.29, "x"], "multipleOf": 0.01},
          passing=[0.05, 1, "x"], failing=[0.07, 0.29])
    check({"enum": [356242412524554.44, 0.07, 2, 7.925169245717314e+16],
           "not": {"multipleOf": 0.1}},
          passing=[0.07], failing=[356242412524554.44, 2, 0.1])
    check({"enum": [7.925169245717314e+16, 4], "not": {"multipleOf": 3}},
          passing=[4], failing=[7.925169245717314e+16])


_FLOAT_DIVISORS = [0.01, 0.1, 0.05, 0.3, 0.25, 2.5, 0.001, 5.0, 0.15]


@settings(deadline=None, max_examples=200)
@given(i=st.integers(0, len(_FLOAT_DIVISORS) - 1), integer=st.booleans(),
       k=st.integers(-10**17, 10**17), shift=st.integers(0, 22), tail=st.integers(-99, 99))
def test_float_divisors_hold_in_jsonschemas_reading(i: int, integer: bool, k: int, shift: int,
                                                    tail: int) -> None:
    """``multipleOf`` a float: every text accepted is valid for ``jsonschema``, which divides
    doubles (multiples, and just past them: ``k·d + tail·10^-shift``)."""
    d = _FLOAT_DIVISORS[i]
    schema = {"type": "integer" if integer else "number", "multipleOf": d}
    cg = _schema_compiled(json.dumps(schema))
    exact_d = Fraction(Decimal(repr(d)))
    for v in (k * exact_d, k * exact_d + Fraction(tail, 10**shift), Fraction(k, 10**shift)):
        for zeros in (0, 1):
            text = _text(v, zeros)
            if accepts(cg, byte_ids(text)):
                assert valid(schema, json.loads(text)), (schema, text)


def _schema_compiled(schema_text: str) -> gramask.CompiledGrammar:
    from .test_json_schema import _compiled
    return _compiled(schema_text)


_INT_DIVISORS = [3, 7, 4, 1, 10, 12]


@settings(deadline=None, max_examples=150)
@given(i=st.integers(0, len(_INT_DIVISORS) - 1), typ=st.sampled_from(["integer", "number"]),
       negate=st.booleans(), k=st.integers(0, 10**22), zeros=st.integers(1, 3))
def test_int_divisors_hold_for_texts_with_a_point(i: int, typ: str, negate: bool, k: int,
                                                  zeros: int) -> None:
    """An int divisor, a text with a point: ``jsonschema`` reads ``9007199254740993.0`` as
    the double 9007199254740992.0 (no multiple of 3), so an integer part past 15 digits is
    refused there; without a point the text is an int, exact at any length."""
    d = _INT_DIVISORS[i]
    if negate and d == 1 and typ == "integer":
        return  # no integer is no multiple of 1: an empty schema, refused
    inner = {"multipleOf": d}
    schema = {"type": typ, **({"not": inner} if negate else inner)}
    cg = _schema_compiled(json.dumps(schema))
    for v in (k * d, k * d + 1, k):
        for text in (str(v), f"{v}.{'0' * zeros}", f"-{v}.0"):
            if accepts(cg, byte_ids(text)):
                assert valid(schema, json.loads(text)), (schema, text)
    big = 3 * 3002399751580331  # 9007199254740993, a multiple of 3 no double spells
    cg3 = _schema_compiled(json.dumps({"type": "number", "multipleOf": 3}))
    assert accepts(cg3, byte_ids(str(big)))
    assert not accepts(cg3, byte_ids(f"{big}.0"))
    assert accepts(cg3, byte_ids("999999999999999.00"))
