"""``unevaluatedProperties``/``unevaluatedItems`` over what the schema evaluates, against
``jsonschema``: adjacent keywords, ``allOf``/``$ref``, the branches that hold, ``if``."""

from __future__ import annotations

import pytest

from gramask import Grammar
from gramask.errors import GrammarError

from .test_json_schema import check

pytest.importorskip("jsonschema")


def test_unevaluated_properties_beside_properties_and_through_allof_ref() -> None:
    check({"type": "object", "properties": {"a": {"type": "integer"}},
           "unevaluatedProperties": {"type": "string"}},
          passing=[{"a": 1, "b": "x"}, {}], failing=[{"b": 1}, {"a": "x"}])
    check({"$defs": {"base": {"properties": {"id": {"type": "integer"}}}},
           "allOf": [{"$ref": "#/$defs/base"}], "properties": {"name": {"type": "string"}},
           "unevaluatedProperties": False},
          passing=[{"id": 1, "name": "n"}, {"id": 2}], failing=[{"id": 1, "x": 1}, {"y": 0}])
    # a cousin's properties are not seen: only {} is valid
    check({"allOf": [{"properties": {"a": True}}, {"unevaluatedProperties": False}]},
          passing=[{}, 3], failing=[{"a": 1}])


def test_unevaluated_properties_through_the_branches_that_hold() -> None:
    check({"anyOf": [{"properties": {"a": {"const": 1}}, "required": ["a"]},
                     {"properties": {"b": {"const": 2}}, "required": ["b"]}],
           "unevaluatedProperties": False},
          passing=[{"a": 1}, {"b": 2}, {"a": 1, "b": 2}], failing=[{"a": 1, "c": 3}, {"a": 2}])
    check({"if": {"properties": {"t": {"const": "x"}}, "required": ["t"]},
           "then": {"properties": {"x": {"type": "integer"}}},
           "else": {"properties": {"y": {"type": "integer"}}},
           "unevaluatedProperties": False},
          # (a failed if evaluates nothing: its t is then unevaluated)
          passing=[{"t": "x", "x": 1}, {"y": 1}],
          failing=[{"t": "x", "y": 1}, {"t": "z", "y": 2}, {"x": 1}])


def test_unevaluated_items() -> None:
    check({"prefixItems": [{"type": "string"}], "unevaluatedItems": False},
          passing=[[], ["a"]], failing=[["a", 1], [1]])
    check({"contains": {"type": "string"}, "unevaluatedItems": {"type": "integer"}},
          passing=[["a", 1, "b"], ["x"]], failing=[["a", None], [1]])
    check({"items": {"type": "integer"}, "unevaluatedItems": False},
          passing=[[1, 2]], failing=[["a"]])


def test_unlowerable_is_refused_naming_it() -> None:
    with pytest.raises(GrammarError, match="'unevaluatedProperties' at #/properties/p"):
        Grammar.from_json_schema({"properties": {"p": {
            "oneOf": [{"items": {"type": "string"}}, {"minItems": 2}],
            "unevaluatedProperties": False}}})


def test_pattern_properties_merge_across_allof_parts() -> None:
    check({"patternProperties": {"^x": {"type": "integer"}}, "unevaluatedProperties": False},
          passing=[{"x1": 1}, {}], failing=[{"y": 1}, {"x": "s"}])
    check({"allOf": [{"properties": {"xa": {"minimum": 2}}},
                     {"patternProperties": {"^x": {"type": "integer"}}}]},
          passing=[{"xa": 2, "xb": 1, "y": "s"}], failing=[{"xa": 1}, {"xa": 2.5}, {"xb": "s"}])
    with pytest.raises(GrammarError, match="'patternProperties' at #"):
        Grammar.from_json_schema({"allOf": [{"patternProperties": {"^x": True},
                                             "additionalProperties": False},
                                            {"patternProperties": {"^y": True}}]})
