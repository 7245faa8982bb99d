"""``not``, ``if``/``then``/``else`` and overlapping ``oneOf`` through the complement gramask
writes (gramask.frontends.json_schema_negation), with ``jsonschema`` as the oracle: the written
complement holds exactly where the schema does not, and compiled schemas accept exactly the
valid instances."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gramask import Grammar
from gramask.errors import GrammarError
from gramask.frontends.json_schema_base import _ANNOTATIONS
from gramask.frontends.json_schema_negation import EXCEPT, negate

from ._support import accepts, byte_ids
from .test_json_schema import _compiled, check, valid

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, -1.5]),
                    st.sampled_from(["", "a", "b", "ab"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=2),
    st.dictionaries(st.sampled_from(["k", "n", "z"]), inner, max_size=2)), max_leaves=4)
TYPES = st.sampled_from(["null", "boolean", "number", "string", "object", "array"])


def _schemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(lambda t: {"type": t}, st.one_of(TYPES, st.lists(TYPES, min_size=1,
                                                                      max_size=3))),
        st.builds(lambda v: {"const": v}, SCALARS),
        st.builds(lambda v: {"enum": v}, st.lists(SCALARS, min_size=1, max_size=3)),
        st.builds(lambda r: {"required": r}, st.lists(st.sampled_from(["k", "n"]), min_size=1,
                                                       max_size=2)),
        st.builds(lambda p, r: {"properties": p, **({"required": r} if r else {})},
                  st.dictionaries(st.sampled_from(["k", "n"]), inner, min_size=1, max_size=2),
                  st.lists(st.sampled_from(["k", "n"]), max_size=1)),
        st.builds(lambda k, v: {k: v}, st.sampled_from(["minimum", "exclusiveMaximum"]),
                  st.integers(-2, 2)),
        st.builds(lambda lo, hi: {"minLength": lo, "maxLength": lo + hi}, st.integers(0, 2),
                  st.integers(0, 1)),
        st.builds(lambda t, s: {"type": t, **s}, TYPES, inner.filter(
            lambda s: isinstance(s, dict) and "type" not in s)),
        st.builds(lambda xs: {"anyOf": xs}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda xs: {"allOf": xs}, st.lists(inner, min_size=1, max_size=2)),
        st.builds(lambda x: {"not": x}, inner),
        st.booleans(),
    )


SCHEMAS = st.recursive(_schemas(st.just(True)), _schemas, max_leaves=4)


def _valid(schema: Any, instance: Any) -> bool:
    """jsonschema's verdict; the internal EXCEPT keyword read as what it means."""
    def lower(s: Any) -> Any:
        if isinstance(s, dict):
            out = {k: lower(v) for k, v in s.items() if k != EXCEPT}
            if EXCEPT in s:
                out["not"] = {"enum": s[EXCEPT]}
            return out
        if isinstance(s, list):
            return [lower(x) for x in s]
        return s

    return bool(jsonschema.Draft202012Validator(lower(schema)).is_valid(instance))


@settings(max_examples=300, deadline=None)
@given(schema=SCHEMAS, instances=st.lists(VALUES, min_size=1, max_size=6))
def test_the_complement_holds_exactly_where_the_schema_does_not(schema, instances) -> None:
    neg = negate(schema, lambda ref: pytest.fail("no $ref here"), _ANNOTATIONS)
    if neg is None:
        return
    for x in instances:
        assert _valid(neg, x) == (not _valid(schema, x)), (schema, neg, x)


def test_not_and_if_then_else_compiled() -> None:
    check({"type": "object", "not": {"required": ["a"]}},
          passing=[{}, {"b": 1}], failing=[{"a": 1}, [], 1])
    check({"not": {"enum": ["x", 1, None]}},
          passing=["y", 2, 1.5, True, [], {}], failing=["x", 1, None])
    kind = {"type": "object", "properties": {"kind": {"enum": ["a", "b"]}, "v": {}},
            "required": ["kind"],
            "if": {"properties": {"kind": {"const": "a"}}},
            "then": {"properties": {"v": {"type": "integer"}}, "required": ["v"]},
            "else": {"properties": {"v": {"type": "string"}}}}
    check(kind, passing=[{"kind": "a", "v": 1}, {"kind": "b"}, {"kind": "b", "v": "s"}],
          failing=[{"kind": "a"}, {"kind": "a", "v": "s"}, {"kind": "b", "v": 2}, {"v": 1}])
    check({"if": {"exclusiveMaximum": 0}, "then": {"minimum": -10}, "else": {"maximum": 5}},
          passing=[-10, -1, 0, 5, 2.5, "s"], failing=[-11, 6, 5.5])
    check({"oneOf": [{"minimum": 2}, {"maximum": 5}]},  # overlap: 2..5, and every non-number
          passing=[1, 6, 1.5], failing=[3, 2, 5, "t", None])
    check({"oneOf": [{"type": "string"}, {"enum": ["a", 1, 2.5]},
                     {"type": "number", "minimum": 2}]},
          passing=["b", 1, 2, 3.5], failing=["a", 2.5, True, None])
    check({"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
          passing=[{"a": 1}, {"b": 2, "c": 3}], failing=[{}, {"a": 1, "b": 2}])
    with pytest.raises(GrammarError, match="'not' at #"):
        Grammar.from_json_schema({"not": {"items": {"type": "string"}}})


def test_the_complement_of_a_pattern_is_the_strings_matching_it_in_neither_reading() -> None:
    check({"not": {"pattern": "^a"}}, passing=["b", ""], failing=["a", "abc", 1, None])
    # overlapping oneOf branches over patterns: each with the complements of the others
    check({"oneOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "string",
                                                                 "pattern": "^a"}]},
          passing=["bc", "a1"], failing=["ab", "1", 3])
    check({"type": "string", "not": {"pattern": "x", "minLength": 2}},
          passing=["", "a", "ab"], failing=["xy", "axb"])
    # \d is ASCII in ECMA 262 and Unicode in Python: "٣" matches in one reading only, so
    # it is no string the complement takes
    check({"type": "string", "not": {"pattern": "^\\d$"}}, passing=["a"], failing=["1"],
          texts=(('"\\u0663"', False),))


def test_the_complement_of_words_beside_a_pattern() -> None:
    check({"type": "string", "pattern": "^[a-z]+$", "not": {"enum": ["any", "none"]}},
          passing=["some", "an"], failing=["any", "none", "A", 3])


def test_the_complement_of_integer_holds_the_fractions() -> None:
    # (few digits: jsonschema reads a float, and 1e20 + 0.5 is an integer there)
    check({"not": {"type": ["integer", "boolean"]}},
          passing=["a", 1.5, -0.25, None, [], {}], failing=[1, 0, True, 1.0],
          texts=(("100000000000000000000.5", False), ("1.0000000000000000001", False)))
    check({"type": "number", "if": {"type": "integer"}, "then": {"minimum": 0}},
          passing=[3, -0.5, 0.5], failing=[-3])


_NOT_MULTIPLE = [({"type": "number", "not": {"multipleOf": 1}}, ["2.5", "-0.75", "3.25"]),
                 ({"type": "number", "not": {"multipleOf": 3}}, ["4", "2.5", "-7.25"]),
                 ({"type": "number", "not": {"multipleOf": 0.1}}, ["0.25", "-3.05"]),
                 ({"type": "number", "not": {"multipleOf": 0.01}}, ["0.125"]),
                 ({"type": "number", "not": {"multipleOf": 2.5}}, ["1", "2.4"]),
                 ({"type": "integer", "not": {"multipleOf": 1.5}}, ["4", "-5"]),
                 ({"type": "integer", "not": {"multipleOf": 7}}, ["100000000000000000001"])]


@settings(deadline=None, max_examples=300)
@given(i=st.integers(0, len(_NOT_MULTIPLE) - 1), k=st.integers(-10**19, 10**19),
       shift=st.integers(0, 25), tail=st.integers(1, 999))
def test_not_multiple_of_holds_in_jsonschemas_float_reading(i: int, k: int, shift: int,
                                                            tail: int) -> None:
    """The complement of ``multipleOf`` accepts no text that ``jsonschema`` reads as a multiple:
    it reads a text with a point as a double (``2.0000000000000000001`` is 2.0 there) and
    divides by a float divisor in doubles; only texts short enough for both readings to find
    no multiple are kept. (A multiple, just past one: ``k·d + tail·10^-shift``.)"""
    schema, kept = _NOT_MULTIPLE[i]
    cg = _compiled(json.dumps(schema))
    d = Fraction(Decimal(repr(schema["not"]["multipleOf"])))
    near = k * d + Fraction(tail, 10**shift)
    for text in (_decimal_text(k * d), _decimal_text(near), _decimal_text(Fraction(k, 10**shift))):
        if accepts(cg, byte_ids(text)):
            assert valid(schema, json.loads(text)), text
    for text in kept:  # (not empty)
        assert accepts(cg, byte_ids(text)) and valid(schema, json.loads(text)), text


def _decimal_text(v: Fraction) -> str:
    k = next(k for k in range(60) if (v * 10**k).denominator == 1)
    digits = str(abs(v.numerator * 10**k // v.denominator)).rjust(k + 1, "0")
    return ("-" if v < 0 else "") + (f"{digits[:-k]}.{digits[-k:]}" if k else digits)


def test_one_of_closed_objects_told_apart_by_a_required_key() -> None:
    """Closed objects that each require a key the others forbid (a tagged union without a
    tag: SchemaStore's utam selector) are exclusive: ``oneOf`` is their ``anyOf`` (it was
    refused, the complement of ``additionalProperties`` being unwritten)."""
    def closed(key: str) -> dict[str, Any]:
        return {"type": "object", "properties": {key: {"type": "string"}, "all": {
            "type": "boolean"}}, "required": [key], "additionalProperties": False}
    check({"oneOf": [closed("css"), closed("xpath"), closed("id")]},
          passing=[{"css": "a"}, {"xpath": "//b", "all": True}, {"id": "c"}],
          failing=[{"css": "a", "xpath": "b"}, {}, {"all": True}, {"css": 1}])
    # 'false' for the key in properties forbids it too (every value is in one branch)
    check({"oneOf": [{"type": "object", "required": ["a"]},
                     {"properties": {"a": False}}]},
          passing=[{"a": 1}, {"b": 1}, {}, 3, "x"], failing=[])


def test_one_of_branch_types_through_any_of() -> None:
    """A branch's types are its ``anyOf`` branches' (nodemon's ignore: a string or an
    ``{"re": ...}`` object, or an array of them): exclusive by type."""
    pattern = {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"re": {
        "type": "string"}}, "required": ["re"], "additionalProperties": False}]}
    check({"$defs": {"p": pattern}, "oneOf": [{"$ref": "#/$defs/p"},
                                              {"type": "array", "items": {"$ref": "#/$defs/p"}}]},
          passing=["a", {"re": "x"}, ["a", {"re": "y"}], []],
          failing=[1, None, {"re": 1}, [1]])


@pytest.mark.parametrize("schema", [
    # a key one branch requires and the other allows through patternProperties: overlap
    {"oneOf": [{"type": "object", "required": ["a"]},
               {"type": "object", "patternProperties": {"^a$": {}},
                "additionalProperties": False}]},
    # the closed branch has the key: overlap
    {"oneOf": [{"type": "object", "required": ["a"]},
               {"type": "object", "properties": {"a": {}}, "additionalProperties": False}]},
    # an anyOf branch with a $ref is of any type
    {"$defs": {"s": {"type": "string"}}, "oneOf": [{"anyOf": [{"$ref": "#/$defs/s"}]},
                                                    {"type": "string", "minLength": 2}]},
])
def test_overlapping_one_of_is_not_taken_for_exclusive(schema: Any) -> None:
    """Where the branches share a value, ``oneOf`` is not compiled as their ``anyOf``: it is
    compiled with complements, or refused; never a text valid under both."""
    try:
        cg = _compiled(json.dumps(schema))
    except GrammarError:
        return
    for inst in [{"a": 1}, "ab", "a", {}]:
        if accepts(cg, byte_ids(json.dumps(inst))):
            assert valid(schema, inst), inst
