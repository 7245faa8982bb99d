"""A JSON text may repeat a key; the parsed object (``json.loads``, what ``jsonschema``
validates) keeps one. So ``minProperties`` is a count of members only as far as the keys
cannot repeat: the defined properties come once each, any other key may come twice.
Found by ``tools/json_schema_fuzz.py --seed 12``: ``{"a":-4,"a":""}`` passed
``minProperties: 2`` with ``propertyNames: {"enum": ["x-y", "a"]}``."""

from __future__ import annotations

import itertools
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
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"a": {"type": "integer"}}, "minProperties": 2},
    {"type": "object", "properties": {"a": {}}, "required": ["a"], "minProperties": 3},
    # a dependency that forces one more property: still one short of the count
    {"properties": {"a": {}, "b": {}}, "required": ["a"], "dependentRequired": {"a": ["b"]},
     "minProperties": 4},
    # a dependency whose source may be skipped forces nothing
    {"properties": {"a": {}, "b": {}}, "dependentRequired": {"a": ["b"]}, "minProperties": 2},
    # the other keys are many (a pattern with a loop), or more than a few
    {"patternProperties": {"^a+$": {}}, "additionalProperties": False, "minProperties": 2},
    {"propertyNames": {"maxLength": 1}, "minProperties": 2},
    {"propertyNames": {"enum": [f"k{i}" for i in range(40)]}, "minProperties": 2},
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


def _texts(keys: list[str], n: int) -> list[str]:
    """Objects of up to ``n`` members over ``keys`` (repeats included), in every order."""
    out = ['{}']
    for m in range(1, n + 1):
        for combo in itertools.product(keys, repeat=m):
            out.append("{" + ",".join(f'"{k}":{i}' for i, k in enumerate(combo)) + "}")
    return out


@pytest.mark.parametrize(("schema", "keys"), [
    # dependentRequired makes b present with a (required): 2 defined + 1 other key
    ({"properties": {"a": {}, "b": {}}, "required": ["a"], "dependentRequired": {"a": ["b"]},
      "minProperties": 3}, ["a", "b", "c"]),
    # draft 7's dependencies array; c is owed by b, after it, and a before it
    ({"$schema": "http://json-schema.org/draft-07/schema#",
      "properties": {"a": {}, "b": {}, "c": {}}, "required": ["b"],
      "dependencies": {"b": ["c", "a"]}, "minProperties": 4}, ["a", "b", "c", "d"]),
    # the other keys are a few words: optional properties, each once, the count exact
    # (a key spelled with an escape is the same key)
    ({"type": "object", "minProperties": 2, "propertyNames": {"enum": ["x-y", "a"]}},
     ["a", "x-y", "b", "\\u0061"]),
    ({"patternProperties": {"^a$": {}}, "additionalProperties": False, "minProperties": 2},
     ["a", "b", "\\u0061"]),
    ({"properties": {"b": {}}, "patternProperties": {"^(a|c)$": {"type": "integer"}},
      "additionalProperties": False, "minProperties": 3}, ["a", "b", "c", "d"]),
    ({"properties": {"z": {}}, "required": ["z"], "propertyNames": {"enum": ["z", "q"]},
      "minProperties": 2}, ["q", "z"]),
])
def test_counts_once_refused_are_exact(schema: dict[str, Any], keys: list[str]) -> None:
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    check = jsonschema.validators.validator_for(schema)(schema)
    accepted = set()
    for text in _texts(keys, 4):  # never an object whose parsed value breaks the count
        if accepts(cg, byte_ids(text)):
            assert check.is_valid(json.loads(text)), text
            accepted.add(frozenset(json.loads(text)))
    for m in range(len(keys) + 1):  # every valid object, in some key order
        for combo in itertools.combinations([k for k in keys if "\\" not in k], m):
            obj = {k: i for i, k in enumerate(combo)}
            if check.is_valid(obj):
                assert frozenset(combo) in accepted or any(
                    accepts(cg, byte_ids(json.dumps({k: i for i, k in enumerate(p)}))) for p in
                    itertools.permutations(combo)), obj


@pytest.mark.parametrize(("regex", "limit", "want"), [
    ("a|bc|", 16, ["", "a", "bc"]),
    ("[a-c]x?", 16, ["a", "ax", "b", "bx", "c", "cx"]),
    ("[a-c]x?", 5, None),  # more than the limit
    ("a+", 16, None),  # a loop: infinitely many
    ("[\\s\\S]", 16, None),
])
def test_finite_words_lists_a_few_keys_or_none(regex: str, limit: int,
                                               want: list[str] | None) -> None:
    from gramask.frontends.json_keys import finite_words, key_region
    assert finite_words(key_region([], [regex], []), limit) == want
    if want:  # keys already defined are not among them
        assert finite_words(key_region(want[:1], [regex], []), limit) == want[1:]


def test_a_long_counted_unicode_pattern_beside_a_format() -> None:
    """``[^"\\s]{1,128}`` spells ~23 byte states per count in JSON (raw UTF-8 and escapes):
    its construction passes 16,384 states before it is minimised to 2,947."""
    schema = {"type": "object", "required": ["tag", "email"], "additionalProperties": False,
              "properties": {"tag": {"type": "string", "pattern": '^[^"\\s]{1,128}$'},
                             "email": {"type": "string", "format": "email"}}}
    cg = gramask.compile(Grammar.from_json_schema(schema), BYTES, cache=False, progress=False)
    checker = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    cases = [(t, "a@b.co") for t in ("", "é", "é" * 128, "é" * 129, "中😀a" * 42 + "bc",
                                      "中😀a" * 43, "a b", "\\" * 128)] + [("é", "ab")]
    for i, (tag, email) in enumerate(cases):
        text = json.dumps({"tag": tag, "email": email}, ensure_ascii=i % 2 == 0)
        got = accepts(cg, byte_ids(text))
        assert got == checker.is_valid(json.loads(text)), text
