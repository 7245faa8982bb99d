"""``uniqueItems`` over finite items (an enum/const of strings, integers, booleans, null, or
type boolean/null) is enforced exactly, with ``jsonschema`` as the oracle: up to six values in
any order, more in the schema's order; anything else is refused."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from gramask import Grammar
from gramask.errors import GrammarError

from ._support import accepts, byte_ids
from .test_json_schema import _compiled, valid

VALUES: list[Any] = ["a", "é", 1, True, None]


@pytest.mark.parametrize("bounds", [{}, {"minItems": 2, "maxItems": 3}])
def test_unique_items_of_an_enum(bounds: dict[str, int]) -> None:
    schema = {"type": "array", "items": {"enum": VALUES}, "uniqueItems": True, **bounds}
    cg = _compiled(json.dumps(schema))
    for n in range(4):
        for inst in itertools.product(VALUES, repeat=n):
            want = valid(schema, list(inst))
            for text in (json.dumps(list(inst)), json.dumps(list(inst), ensure_ascii=False)):
                assert accepts(cg, byte_ids(text)) == want, text
    # the same value spelled twice is a repeat; six values when five are allowed
    assert not accepts(cg, byte_ids('["é", "\\u00e9"]'))
    assert not accepts(cg, byte_ids(json.dumps([*VALUES, "b"])))


def test_unique_items_of_a_const_and_typed_enum() -> None:
    schema = {"type": "array", "uniqueItems": True,
              "items": {"type": "string", "enum": ["x", "y", 3]}, "minItems": 1}
    cg = _compiled(json.dumps(schema))
    for inst in (["x"], ["y", "x"], ["x", "x"], [3], [], ["x", "y", "x"]):
        assert accepts(cg, byte_ids(json.dumps(inst))) == valid(schema, inst), inst


@pytest.mark.parametrize("items", [
    {"type": "string"},  # not finite
    {"enum": [1, 1.0]},  # equal values spelled differently
    {"enum": [[1], [2]]},
    {"enum": list(range(1025))},  # too many values
])
def test_other_unique_items_are_refused(items: dict[str, Any]) -> None:
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema({"type": "array", "items": items, "uniqueItems": True})
    assert e.value.name == "uniqueItems"


def test_unique_items_of_many_values_come_in_the_schemas_order() -> None:
    words = [f"w{i}" for i in range(9)]
    schema = {"$defs": {"w": {"type": "string", "enum": words}}, "type": "array",
              "items": {"$ref": "#/$defs/w"}, "uniqueItems": True, "maxItems": 3}
    cg = _compiled(json.dumps(schema))
    for n in range(5):
        for inst in itertools.product(words[:5], repeat=n):
            got = accepts(cg, byte_ids(json.dumps(list(inst))))
            assert got == (valid(schema, list(inst)) and list(inst) == sorted(inst)), inst
    assert accepts(cg, byte_ids('["w0", "w5", "w8"]'))


def test_unique_booleans_and_null() -> None:
    schema = {"type": "array", "items": {"type": ["boolean", "null"]}, "uniqueItems": True}
    cg = _compiled(json.dumps(schema))
    for n in range(5):
        for inst in itertools.product([True, False, None], repeat=n):
            assert accepts(cg, byte_ids(json.dumps(list(inst)))) == valid(schema, list(inst))
