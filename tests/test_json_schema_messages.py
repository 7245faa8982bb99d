"""A refused JSON Schema keyword is named once with its JSON pointer, and the message says
what in it is refused (the pattern's text, not the pointer again)."""

from __future__ import annotations

from typing import Any

import pytest

from gramask import Grammar
from gramask.errors import GrammarError


@pytest.mark.parametrize(("schema", "keyword", "ptr", "pattern"), [
    ({"properties": {"a": {"type": "string", "pattern": "(?=a)b"}}}, "pattern",
     "#/properties/a", "(?=a)b"),
    ({"items": {"patternProperties": {"(\\w)\\1": {}}}}, "patternProperties", "#/items",
     "(\\w)\\1"),
    ({"propertyNames": {"pattern": "(?i)x"}}, "propertyNames", "#", "(?i)x"),
])
def test_pattern_refusal_names_the_pointer_once(schema: Any, keyword: str, ptr: str,
                                                pattern: str) -> None:
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema(schema)
    msg = str(e.value)
    assert e.value.name == keyword
    assert msg.startswith(f"JSON Schema keyword {keyword!r} at {ptr}: pattern {pattern!r} ")
    assert msg.count("#") == 1, msg


def test_refusal_of_two_complements_names_the_users_keyword() -> None:
    """Two ``not multipleOf`` by different divisors cannot be merged: the refusal names
    ``not``, the user's keyword (it named the complement's internal keyword)."""
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema({"type": "number", "allOf": [{"not": {"multipleOf": 3}},
                                                              {"not": {"multipleOf": 5}}]})
    assert e.value.name == "not"
    assert "$gramask" not in str(e.value)


_LOOK = {"type": "string", "pattern": "(?=a)b"}  # a lookaround: refused wherever it stands


@pytest.mark.parametrize(("schema", "ptr"), [
    ({"if": {"type": "object"}, "then": {"properties": {"a": _LOOK}}}, "#/then/properties/a"),
    ({"if": {"required": ["b"]}, "else": {"properties": {"a": _LOOK}}}, "#/else/properties/a"),
    ({"allOf": [{"type": "object"}, {"properties": {"a": _LOOK}}]}, "#/allOf/1/properties/a"),
    ({"allOf": [{"properties": {"a": {"pattern": "(?=a)b"}}},
                {"properties": {"a": {"type": "string"}}}]}, "#/allOf/0/properties/a"),
    ({"dependentSchemas": {"k": {"properties": {"a": _LOOK}}}},
     "#/dependentSchemas/k/properties/a"),
    ({"$schema": "http://json-schema.org/draft-07/schema#",
      "dependencies": {"k": {"properties": {"a": _LOOK}}}}, "#/dependencies/k/properties/a"),
    ({"allOf": [{"items": {"properties": {"a": _LOOK}}}, {"items": {"type": "object"}}]},
     "#/allOf/0/items/properties/a"),
    ({"properties": {"x": {"if": {"type": "object"}, "then": {"allOf": [{"properties": {
        "a": _LOOK}}]}}}}, "#/properties/x/then/allOf/0/properties/a"),
])
def test_refusal_names_the_users_pointer_through_rewrites(schema: Any, ptr: str) -> None:
    """``if``/``then``/``else``, ``allOf`` merges and ``dependentSchemas`` are compiled as
    rewritten schemas (``anyOf`` of ``allOf``s, one merged schema): a refusal inside them
    names where the user wrote the keyword, not the rewrite's ``#/anyOf/0``."""
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema(schema)
    assert str(e.value).startswith(f"JSON Schema keyword 'pattern' at {ptr}: "), str(e.value)


@pytest.mark.parametrize(("schema", "keyword", "ptr"), [
    ({"if": {"type": "number"}, "then": {"allOf": [{"multipleOf": 0.1}, {"multipleOf": 0.3}]}},
     "multipleOf", "#/then/allOf/1"),
    ({"if": {"type": "array"}, "then": {"uniqueItems": True, "items": {"type": "object"}}},
     "uniqueItems", "#/then"),
    ({"$defs": {"A": {"type": "array"}}, "properties": {"x": {
        "$ref": "#/$defs/A", "uniqueItems": True, "items": {"type": "object"}}}},
     "uniqueItems", "#/properties/x"),
    ({"if": {"type": "object"}, "then": {"oneOf": [{"type": "string"}, {"type": "object"}],
                                         "uniqueItems": True}}, "uniqueItems", "#/then"),
    ({"minimum": 2, "not": {"type": "integer"}}, "not", "#"),
    ({"properties": {"a": {"allOf": [{"minimum": 2}, {"not": {"type": "integer"}}]}}}, "not",
     "#/properties/a/allOf/1"),
    ({"oneOf": [{"minimum": 2}, {"type": "integer"}]}, "not", "#/oneOf/1"),
])
def test_refused_keyword_of_a_rewritten_schema_names_its_place(schema: Any, keyword: str,
                                                              ptr: str) -> None:
    """The keyword sits in ``then`` or beside a ``$ref`` (compiled as an ``allOf`` part):
    the refusal names that schema's own place."""
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema(schema)
    assert str(e.value).startswith(f"JSON Schema keyword {keyword!r} at {ptr}: "), str(e.value)
