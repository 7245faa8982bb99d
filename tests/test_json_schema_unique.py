"""``uniqueItems`` over a few finite items (an enum/const of strings, integers, booleans,
null) is enforced exactly, with ``jsonschema`` as the oracle; anything else is refused."""

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
    {"enum": list(range(7))},  # too many subsets
])
def test_other_unique_items_are_refused(items: dict[str, Any]) -> None:
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema({"type": "array", "items": items, "uniqueItems": True})
    assert e.value.name == "uniqueItems"
