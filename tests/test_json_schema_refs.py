"""``$ref`` resolved as the specification says within one document (``$id`` bases, anchors,
pointer escapes, ``$dynamicRef`` without a dynamic scope), against ``jsonschema``."""

from __future__ import annotations

import pytest

from gramask import Grammar
from gramask.errors import GrammarError

from .test_json_schema import check

pytest.importorskip("jsonschema")


def test_refs_relative_to_embedded_ids_and_anchors() -> None:
    schema = {"$id": "http://example.com/root.json",
              "properties": {"a": {"$ref": "item.json"}, "b": {"$ref": "#num"},
                             "c": {"$ref": "http://example.com/item.json#/$defs/flag"}},
              "$defs": {"item": {"$id": "item.json", "type": "string",
                                 "$defs": {"flag": {"type": "boolean"}}},
                        "n": {"$anchor": "num", "type": "integer"}}}
    check(schema, passing=[{"a": "x", "b": 2, "c": True}],
          failing=[{"a": 1}, {"b": "x"}, {"c": 1}])


def test_fragment_refs_inside_an_embedded_resource_are_its_own() -> None:
    schema = {"$defs": {"x": {"type": "integer"},
                        "res": {"$id": "http://example.com/res.json",
                                "items": {"$ref": "#/$defs/x"},
                                "$defs": {"x": {"type": "string"}}}},
              "$ref": "http://example.com/res.json"}
    check(schema, passing=[["a", "b"], []], failing=[[1], ["a", 2]])


def test_pointer_escapes_and_draft7_fragment_ids() -> None:
    check({"$defs": {"a/b": {"type": "integer"}, "c~d": {"type": "string"},
                     "e%f": {"type": "null"}},
           "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"},
                          "z": {"$ref": "#/$defs/e%25f"}}},
          passing=[{"x": 1, "y": "s", "z": None}], failing=[{"x": "1"}, {"y": 1}, {"z": 1}])
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "definitions": {"i": {"$id": "#int", "type": "integer"}},
           "items": {"$ref": "#int"}}, passing=[[1, 2]], failing=[["1"]])


def test_draft7_root_ref_beside_an_id() -> None:
    # (draft 7 ignores $ref's siblings, the root's $id too: "#/..." is the document's)
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "$id": "https://example.com/s.json", "$ref": "#/definitions/root",
           "definitions": {"root": {"type": "array", "items": {"$ref": "#/definitions/i"}},
                           "i": {"type": "integer"}}},
          passing=[[1]], failing=[["a"], 1])


def test_dynamic_ref_without_a_dynamic_scope_is_a_ref() -> None:
    check({"$id": "http://example.com/list", "type": "array",
           "items": {"$dynamicRef": "#item"},
           "$defs": {"item": {"$dynamicAnchor": "item", "type": "string"}}},
          passing=[["a"]], failing=[[1]])


def test_remote_and_dangling_refs_are_refused() -> None:
    with pytest.raises(GrammarError, match="'\\$ref' at #/properties/a") as e:
        Grammar.from_json_schema({"$id": "http://example.com/r.json",
                                  "properties": {"a": {"$ref": "other.json"}}})
    assert e.value.name == "$ref"
    with pytest.raises(GrammarError, match="points to nothing"):
        Grammar.from_json_schema({"properties": {"a": {"$ref": "#/$defs/none"}}})
