"""A JSON text may repeat a key; the parsed object (``json.loads``, what ``jsonschema``
validates) keeps one. So ``minProperties`` is a count of members only as far as the keys
cannot repeat: the defined properties come once each, any other key may come twice.
Found by ``tools/json_schema_fuzz.py --seed 12``: ``{"a":-4,"a":""}`` passed
``minProperties: 2`` with ``propertyNames: {"enum": ["x-y", "a"]}``."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

import gramask
from gramask import Grammar, SchemaWarning
from gramask.errors import GrammarError

from ._support import BYTES, accepts, byte_ids

jsonschema = pytest.importorskip("jsonschema")


def _valid(schema: Any, text: str) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(json.loads(text)))


@pytest.mark.parametrize("schema", [
    {"type": "object", "minProperties": 2},
    {"type": "object", "minProperties": 2, "propertyNames": {"enum": ["x-y", "a"]}},
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2},
    {"patternProperties": {"^a$": {}}, "additionalProperties": False, "minProperties": 2},
    {"type": "object", "properties": {"a": {}}, "required": ["a"], "minProperties": 3},
])
def test_a_count_that_repeated_keys_would_meet_is_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(GrammarError, match=r"minProperties.*may repeat"):
        Grammar.from_json_schema(schema)
    with warnings.catch_warnings(record=True) as got:  # lenient: said, then counted
        warnings.simplefilter("always")
        Grammar.from_json_schema(schema, lenient=True)
    assert any(issubclass(w.category, SchemaWarning) for w in got)


@pytest.mark.parametrize(("schema", "texts"), [
    # at most one member beyond the required ones: a repeat cannot make up the count
    ({"type": "object", "minProperties": 1},
     ['{"a":1,"a":2}', '{}', '{"a":1}']),
    ({"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"],
      "minProperties": 2},
     ['{"a":1,"c":2,"c":3}', '{"a":1,"b":2}', '{"a":1}', '{"a":1,"c":2}']),
    # only defined keys: each comes once, the count is exact
    ({"properties": {"a": {}, "b": {}}, "additionalProperties": False, "minProperties": 2},
     ['{"a":1,"b":2}', '{"a":1}', '{"b":1}']),
])
def test_counts_that_repeats_cannot_fool_are_exact(schema: dict[str, Any],
                                                   texts: list[str]) -> None:
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    for text in texts:
        assert accepts(cg, byte_ids(text)) == _valid(schema, text), text
