"""JSON Schema, regex and choices front ends, with ``jsonschema`` / ``re`` as the oracles.

Instances are forced through compiled grammars: on a byte-level vocabulary (every text is
forced byte by byte, so many schemas compile quickly) and on the real DeepSeek vocabulary
with its own tokenizer. Soundness is the hard rule (accepted ⇒ valid); valid instances
written in schema order must be accepted.
"""

from __future__ import annotations

import functools
import json
import re
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask import Grammar
from gramask.errors import GrammarError

from ._support import BYTES, accepts, byte_ids, hf_tokenizer

jsonschema = pytest.importorskip("jsonschema")


@functools.cache
def _compiled(schema_text: str, whitespace: str = "flexible") -> gramask.CompiledGrammar:
    g = Grammar.from_json_schema(schema_text, whitespace=whitespace)
    return gramask.compile(g, BYTES, cache=False, progress=False)


def valid(schema: Any, instance: Any) -> bool:
    cls = jsonschema.validators.validator_for(schema)
    return bool(cls(schema, format_checker=cls.FORMAT_CHECKER).is_valid(instance))


def check(schema: Any, passing: list[Any], failing: list[Any], *,
          texts: tuple[tuple[str, bool], ...] = ()) -> None:
    """Each instance in both spellings (compact, and indented with flexible whitespace)."""
    cg = _compiled(json.dumps(schema))
    for inst in passing:
        assert valid(schema, inst), inst
        for text in (json.dumps(inst, separators=(",", ":")), json.dumps(inst, indent=2)):
            assert accepts(cg, byte_ids(text)), text
    for inst in failing:
        assert not valid(schema, inst), inst
        for text in (json.dumps(inst, separators=(",", ":")), json.dumps(inst, indent=1)):
            assert not accepts(cg, byte_ids(text)), text
    for text, expected in texts:  # raw texts: accepted as expected, never when invalid
        got = accepts(cg, byte_ids(text))
        assert got == expected, text
        if got:
            assert valid(schema, json.loads(text)), text


def test_object_properties_required_additional() -> None:
    schema = {"type": "object",
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name"]}
    check(schema,
          passing=[{"name": "x"}, {"name": "é\n\"", "age": -3}, {"name": "a", "extra": [1, {}]},
                   {"name": "a", "age": 0, "nam": None}],
          failing=[{}, {"age": 1}, {"name": 1}, {"name": "a", "age": 1.5}, [], "name"],
          # a repeated key is refused (valid for jsonschema: the last one counts); printable
          # ASCII spelled \u0061 is refused in keys and constrained strings
          texts=(('{"name":"a","name":"b"}', False), ('{"name":"a","n\\u0061me":"b"}', False),
                 ('{"n\\u0061me":"a"}', False), ('{"name":"\\ud83d\\ude00"}', True),
                 ('{"name":"a","caf\\u00e9":1}', True), ('{"name":"a","\\u00e9":1}', True),
                 ('{"name":"\\ud83d"}', True)))


def test_additional_properties_false_and_schema() -> None:
    check({"properties": {"a": {"type": "boolean"}}, "additionalProperties": False},
          passing=[{}, {"a": True}], failing=[{"b": 1}, {"a": 1}, {"a": True, "c": 2}])
    check({"properties": {"a": {}}, "additionalProperties": {"type": "integer"}},
          passing=[{"a": "s", "b": 1, "c": 2}], failing=[{"b": "s"}, {"a": 1, "b": 1.5}])


def test_strings() -> None:
    check({"type": "string", "minLength": 2, "maxLength": 3},
          passing=["ab", "😀😀", "é\n\"", "abc"], failing=["a", "abcd", "😀", 12])
    check({"type": "string", "pattern": "^[a-z]+[0-9]{2}$"},
          passing=["ab12", "z00"], failing=["ab1", "AB12", "1ab12"],
          # Python's $ also matches before a final newline; ECMA's (and gramask's) does not
          texts=(('"ab12\\n"', False),))
    check({"type": "string", "pattern": "b+c"}, passing=["abbcd", "bc"], failing=["ac", ""])
    check({"type": "string", "pattern": "^x", "maxLength": 2},
          passing=["x", "xy"], failing=["xyz", "yx"])
    check({"enum": ["red", "green", 3, None, [1, "a"]]},
          passing=["red", "green", 3, None, [1, "a"]], failing=["blue", "re", 4, [1]])
    check({"const": "café"}, passing=["café"], failing=["cafe", "caf"])


@pytest.mark.parametrize(("fmt", "good", "bad"), [
    ("date", ["2024-02-29", "2023-12-31", "0001-01-01", "0400-02-29", "2000-02-29"],
     ["2023-02-29", "2023-13-01", "2023-1-01", "0000-01-01", "0000-02-29", "1900-02-29"]),
    ("date-time", ["2024-01-02T03:04:05Z", "2024-01-02T03:04:05.5+01:00"],
     ["2024-01-02 03:04:05", "2024-01-02T25:00:00Z"]),
    ("ipv4", ["192.168.0.1", "0.0.0.0"], ["256.1.1.1", "01.1.1.1", "1.1.1"]),
    ("ipv6", ["::1", "fe80::1", "2001:db8:0:0:0:0:2:1"], ["1:2:3", ":::", "1::2::3"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000"]),
    ("email", ["a.b@example.com"], ["no-at-sign"]),
    ("idn-email", ["a.b@example.com"], ["no-at-sign"]),
    ("json-pointer", ["", "/a", "/a~0b/~1/é/\"x", "//"], ["a", "/~2", "/a~"]),
    ("relative-json-pointer", ["0", "1#", "12/a", "0/"], ["01", "-1", "#", "/a", ""]),
    ("uri-reference", ["http://x/y", "a/b", "/x//y", "?q", "#f", "", "../a"],
     ["a:b/c d", ":a", "\\\\WINDOWS\\share"]),
    ("iri", ["http://x/y"], ["a/b", "x y"]),
    # RFC 3986: an authority's port is digits; a path without an authority never starts
    # with "//"; a relative reference's first segment holds no ":"
    ("uri", ["http://a:80/b?c#d", "a:b:c", "file:///x", "mailto:a@b", "http://[::1]:8/",
             "urn:isbn:0", "x:", "http://u:p@h/"],
     ["http://a:b:c", "http://a:8b", "http://[::1", "http://a b", "a/b", "http://%zz",
      "1a:b", "http://a/b#c#d"]),
    ("uri-reference", ["//h:1/p", "//", "a@b/c:d"], ["//a:b:c", "a:b:c d"]),
    ("uri-template", ["http://x/{a}", "{+a,b:3}", "/x{?q*}", ""], ["{", "{a", "{a b}", "x'"]),
])
def test_formats(fmt: str, good: list[str], bad: list[str]) -> None:
    cg = _compiled(json.dumps({"type": "string", "format": fmt}))
    for s in good:
        assert accepts(cg, byte_ids(json.dumps(s))), s
    for s in bad:
        assert not accepts(cg, byte_ids(json.dumps(s))), s


def test_unknown_formats_only_annotate_and_known_unenforced_ones_are_refused() -> None:
    # jsonschema's FormatChecker ignores a format it does not know: so does gramask
    check({"type": "string", "format": "int64"}, passing=["", "x", "12"], failing=[3])
    check({"enum": ["a@b.c", "ab", 3], "format": "email"}, passing=["a@b.c", 3],
          failing=["ab"])
    with pytest.raises(GrammarError, match="'format' at #/properties/r") as e:
        Grammar.from_json_schema({"properties": {"r": {"format": "idn-hostname"}}})
    assert e.value.name == "format"


def test_counts_written_as_integral_floats() -> None:
    check({"maxItems": 2.0, "items": {"minLength": 1.0}, "maxProperties": 1.0},
          passing=[[], ["a", "b"], {"a": 1}], failing=[[1, 2, 3], [""], {"a": 1, "b": 2}])


def test_numbers() -> None:
    check({"type": "integer", "minimum": -3, "exclusiveMaximum": 12},
          passing=[-3, 0, 11], failing=[-4, 12, 100, 1.5, "1"])
    check({"type": "number", "exclusiveMinimum": 0, "maximum": 10},
          passing=[0.5, 1, 10, 10.0, 9.99], failing=[0, 0.0, -1, 10.01, 11])
    check({"type": "integer", "multipleOf": 5}, passing=[0, 5, -15, 1000], failing=[3, 51])
    check({"type": ["integer", "null"], "maximum": 2}, passing=[None, 2, -7], failing=[3, "x"])


def test_arrays() -> None:
    check({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
          passing=[[1], [1, 2, 3]], failing=[[], [1, 2, 3, 4], [1, "a"]])
    check({"prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": False},
          passing=[[], ["a"], ["a", True]], failing=[[1], ["a", True, 1]])
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
          passing=[["a", 1, 2]], failing=[["a", "b"], [1]])


def test_refs_recursion_and_combinators() -> None:
    tree = {"$defs": {"node": {"type": "object",
                               "properties": {"v": {"type": "integer"},
                                              "kids": {"type": "array",
                                                       "items": {"$ref": "#/$defs/node"}}},
                               "required": ["v"], "additionalProperties": False}},
            "$ref": "#/$defs/node"}
    check(tree, passing=[{"v": 1}, {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}],
          failing=[{"v": 1, "kids": [{"w": 2}]}, {"kids": []}])
    check({"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer", "minimum": 5}]},
          passing=["a", 5, 99], failing=["ab", 4])
    check({"oneOf": [{"type": "string"}, {"type": "null"}]}, passing=["a", None], failing=[1])
    check({"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                     {"properties": {"a": {"minimum": 3}, "b": {"type": "string"}}}]},
          passing=[{"a": 3}, {"a": 4, "b": "x"}], failing=[{"a": 2}, {"b": "x"},
                                                           {"a": 3, "b": 1}])
    check({"type": "object", "minProperties": 1, "maxProperties": 2},
          passing=[{"a": 1}, {"a": 1, "b": 2}], failing=[{}, {"a": 1, "b": 2, "c": 3}])
    check({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False},
          passing=[{}, {"x-a": 1}], failing=[{"y": 1}, {"x-a": "s"}])


def test_pattern_properties_split_the_other_keys() -> None:
    """Each key that ``properties`` does not define gets the schemas of the patterns it
    matches (all of them), or ``additionalProperties`` when it matches none."""
    check({"type": "object", "properties": {"a": {"type": "integer"}},
           "patternProperties": {"^x-": {"type": "string"}}},
          passing=[{"a": 1, "x-y": "s", "b": [1]}, {"x-": "", "zz": None}],
          failing=[{"x-y": 1}, {"a": "s"}])
    check({"patternProperties": {"^a": {"type": "integer"}, "b$": {"minimum": 3}},
           "additionalProperties": {"type": "boolean"}},
          passing=[{"a": 1, "ab": 4, "xb": 7.5, "c": True}, {}],
          failing=[{"ab": 2}, {"ab": 3.5}, {"xb": 2}, {"c": 1}, {"a": "s"}])
    # a defined key that a pattern matches takes both schemas
    check({"properties": {"ab": {"type": "string"}}, "patternProperties": {"^a": {"maxLength": 2}},
           "additionalProperties": False},
          passing=[{"ab": "xy"}, {"ac": 1}], failing=[{"ab": "xyz"}, {"ab": 1}, {"b": 1}])
    check({"patternProperties": {"^a": False}}, passing=[{"b": 1}], failing=[{"a": 1}, {"ab": 1}])


def test_defined_keys_take_a_pattern_that_either_reading_matches() -> None:
    """ECMA 262 and Python's ``re`` (the ``jsonschema`` oracle's reading) differ on ``\\d``
    (ASCII or Unicode) and on ``$`` before a final newline. A defined key takes a
    ``patternProperties`` schema where either reading matches (``{"٣": "x"}`` was accepted,
    which ``jsonschema`` calls invalid); ``propertyNames`` must match in both readings. Only
    valid instances are accepted; those the readings judge apart are rejected."""
    schema = {"properties": {"\u0663": {"type": "string"}, "a\n": {"type": "string"}},
              "patternProperties": {"^\\d$": {"type": "integer"}, "^a$": {"type": "integer"}}}
    cg = _compiled(json.dumps(schema))
    for text, ok in (('{"\u0663":"x"}', False), ('{"\u0663":1}', False), ('{"a\\n":"x"}', False),
                     ('{"a\\n":1}', False), ('{"7":1}', True), ('{"7":"x"}', False),
                     ('{"a":1}', True), ('{"a":"x"}', False)):
        assert accepts(cg, byte_ids(text)) == ok, text
    names = {"properties": {"\u0663": {"type": "string"}, "7": {}},
             "propertyNames": {"pattern": "^\\d$"}}
    cg = _compiled(json.dumps(names))
    assert accepts(cg, byte_ids('{"7":1}'))
    assert not accepts(cg, byte_ids('{"\u0663":"x"}'))


def test_a_pattern_property_with_no_automaton_is_refused_with_its_pointer() -> None:
    """Refused (lenient: ignored with a warning) at the object's JSON pointer, naming the
    pattern (the pointer once); not at all where the object can hold no other key."""
    from gramask.frontends.json_schema import SchemaWarning

    obj = {"type": "object", "properties": {"ab": {}},
           "patternProperties": {"^a": {"type": "integer"}, "x(?!y)": {}}}
    why = r"'patternProperties' at #/properties/o: pattern 'x\(\?!y\)' uses a lookaround"
    with pytest.raises(GrammarError, match=why) as e:
        Grammar.from_json_schema({"properties": {"o": obj}})
    assert e.value.name == "patternProperties"
    with pytest.warns(SchemaWarning, match=why):
        g = Grammar.from_json_schema({"properties": {"o": obj}}, lenient=True)
    cg = gramask.compile(g, BYTES, cache=False, progress=False)
    assert accepts(cg, byte_ids('{"o":{"ab":1}}'))
    assert not accepts(cg, byte_ids('{"o":{"ab":"s"}}'))  # ("^a" still holds for "ab")
    with pytest.raises(GrammarError, match="'propertyNames'"):
        Grammar.from_json_schema({**obj, "propertyNames": {"format": "email"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Grammar.from_json_schema({**obj, "propertyNames": False}, lenient=True)


def test_recursion_through_merged_siblings() -> None:
    # SchemaStore's resjson: anyOf + $ref with a sibling keyword merges into a schema that
    # meets itself again with no $ref rule in between (it recursed without end)
    node = {"minProperties": 1, "anyOf": [{"type": "string"}, {"$ref": "#/definitions/r"}]}
    schema = {"type": "object", "additionalProperties": node,
              "definitions": {"r": {"type": "object", "additionalProperties": node}}}
    check(schema, passing=[{}, {"a": "x"}, {"a": {"b": "y"}}, {"a": {"b": {"c": "d"}}}],
          failing=[{"a": {}}, {"a": {"b": {}}}, {"a": 1}])


def test_unknown_keywords_only_annotate() -> None:
    # vendor keywords (x-taplo, markdownDescription, enumDescriptions) mean nothing to a
    # validator: beside enum/const too, they are ignored, never refused
    check({"enum": ["a", "b"], "x-taplo": {"hidden": True}, "enumDescriptions": ["A", "B"],
           "markdownDescription": "*a* or *b*"}, passing=["a", "b"], failing=["c", 1])
    check({"type": "object", "properties": {"n": {"type": "integer", "x-intellij-html": "n"}},
           "x-tombi-table-keys-order": "schema"},
          passing=[{"n": 1}, {}], failing=[{"n": "1"}])


def test_any_json_value_and_object() -> None:
    cg = gramask.compile(Grammar.json_value(object_only=True), BYTES, cache=False,
                         progress=False)
    for text in ('{}', '{"a": [1, {"b": null}], "c": "\\u00e9"}'):
        assert accepts(cg, byte_ids(text))
    for text in ('[]', '1', '{"a":}', '{"a":1,}'):
        assert not accepts(cg, byte_ids(text))


def test_compact_whitespace() -> None:
    cg = _compiled(json.dumps({"type": "array", "items": {"type": "integer"}}), "compact")
    assert accepts(cg, byte_ids("[1,2]"))
    assert not accepts(cg, byte_ids("[1, 2]"))


@pytest.mark.parametrize(("schema", "keyword", "pointer"), [
    ({"properties": {"a": {"not": {"items": {"type": "string"}}}}}, "not", "#/properties/a"),
    ({"items": {"uniqueItems": True}}, "uniqueItems", "#/items"),
    ({"type": "string", "format": "idn-hostname"}, "format", "#"),
    ({"if": {"items": {"type": "string"}}, "then": {}}, "if", "#"),
    ({"$ref": "http://example.com/s.json"}, "$ref", "#"),
    ({"oneOf": [{"items": {"type": "string"}}, {"minItems": 2}]}, "oneOf", "#"),
    ({"type": "string", "pattern": "(a)\\1"}, "pattern", "#"),
    ({"properties": {"a": {"items": {"enum": ["x", "y"]}, "uniqueItems": True,
                           "contains": {"const": "x"}}}}, "contains", "#/properties/a"),
])
def test_unsupported_keywords_are_refused(schema: Any, keyword: str, pointer: str) -> None:
    with pytest.raises(GrammarError) as e:
        Grammar.from_json_schema(schema)
    assert repr(keyword) in str(e.value) and pointer in str(e.value)
    assert e.value.name == keyword


def test_lenient_ignores_with_a_warning() -> None:
    from gramask.frontends.json_schema import SchemaWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = Grammar.from_json_schema({"type": "array", "not": {"items": False}}, lenient=True)
    assert any(issubclass(w.category, SchemaWarning) and "'not'" in str(w.message)
               for w in caught)
    assert g.rules


def test_bad_schemas() -> None:
    for bad in ("{", {"type": "strin"}, {"$ref": "#/nowhere"}, {"type": "object",
                                                               "required": ["a"],
                                                               "additionalProperties": False}):
        with pytest.raises(GrammarError):
            Grammar.from_json_schema(bad)


# ------------------------------------------------------------------ properties (hypothesis)
PROPERTY_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer", "minimum": -5, "maximum": 20},
                   "tag": {"type": "string", "maxLength": 3},
                   "on": {"type": "boolean"}},
    "required": ["id"],
    "additionalProperties": {"type": ["number", "null"]},
}
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-30, 30),
                      st.floats(-1e3, 1e3, allow_nan=False), st.text(max_size=4))
json_values = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                           max_leaves=8)
candidate = st.fixed_dictionaries(
    {}, optional={"id": st.one_of(st.integers(-8, 25), json_leaf), "tag": json_leaf,
                  "on": json_leaf}).flatmap(
    lambda d: st.dictionaries(st.text(max_size=3), json_values, max_size=2).map(
        lambda extra: {**{k: d[k] for k in PROPERTY_SCHEMA["properties"] if k in d},
                       **{k: v for k, v in extra.items()
                          if k not in PROPERTY_SCHEMA["properties"]}}))  # schema order


@settings(max_examples=150, deadline=None)
@given(candidate, st.booleans())
def test_accepted_iff_valid_in_schema_order(inst: dict[str, Any], compact: bool) -> None:
    cg = _compiled(json.dumps(PROPERTY_SCHEMA))
    text = json.dumps(inst, separators=(",", ":")) if compact else json.dumps(inst, indent=1)
    # rejected by design (docs/json_schema.md): an integer spelt as a float (``0.0``), which
    # the standard counts as an integer
    by_design = isinstance(inst.get("id"), float)
    assert accepts(cg, byte_ids(text)) == (valid(PROPERTY_SCHEMA, inst) and not by_design)


# ------------------------------------------------------------------ the real vocabulary
def test_forcing_through_deepseek_tokens() -> None:
    tok = hf_tokenizer("deepseek-v4")
    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    schema = {"type": "object",
              "properties": {"city": {"type": "string", "maxLength": 20},
                             "temps": {"type": "array", "items": {"type": "number"},
                                       "maxItems": 4},
                             "unit": {"enum": ["celsius", "fahrenheit"]}},
              "required": ["city", "unit"], "additionalProperties": False}
    cg = gramask.compile(Grammar.from_json_schema(schema), vocab, progress=False)
    good = [{"city": "Zürich", "temps": [1.5, -2, 30], "unit": "celsius"},
            {"city": "", "unit": "fahrenheit"}]
    bad = [{"city": "x" * 21, "unit": "celsius"}, {"city": "a", "unit": "kelvin"},
           {"city": "a", "temps": [1, 2, 3, 4, 5], "unit": "celsius"}, {"unit": "celsius"}]
    for inst in good:
        for text in (json.dumps(inst, separators=(",", ":")), json.dumps(inst, indent=2),
                     json.dumps(inst, ensure_ascii=False)):
            assert accepts(cg, tok(text)), text
    for inst in bad:
        assert not accepts(cg, tok(json.dumps(inst))), inst


def test_regex_and_choices() -> None:
    cg = gramask.compile(Grammar.from_regex(r"\d{3}-\d{4}"), BYTES, cache=False,
                         progress=False)
    for text, ok in (("555-1234", True), ("555-123", False), ("5551234", False)):
        assert accepts(cg, byte_ids(text)) == ok == bool(re.fullmatch(r"\d{3}-\d{4}", text))
    cg = gramask.compile(Grammar.from_regex(r"^(ab)*$"), BYTES, cache=False, progress=False)
    assert accepts(cg, []) and accepts(cg, byte_ids("abab")) and not accepts(cg, byte_ids("a"))
    cg = gramask.compile(Grammar.from_choices(["yes", "no", "yesno"]), BYTES, cache=False,
                         progress=False)
    for text in ("yes", "no", "yesno"):
        assert accepts(cg, byte_ids(text))
    for text in ("", "ye", "noyes"):
        assert not accepts(cg, byte_ids(text))
    for bad in ("(?<=a)b", "(a", "a{0}"):
        with pytest.raises(GrammarError):
            Grammar.from_regex(bad)
    with pytest.raises(GrammarError):
        Grammar.from_choices([])


def test_cli_compiles_schema_regex_choices(tmp_path: Any, capsys: Any) -> None:
    from gramask.cli import main

    schema = tmp_path / "point.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"x": {"type": "integer"}},
                                  "required": ["x"], "additionalProperties": False}))
    out = tmp_path / "point.gmask"
    assert main(["compile", str(schema), "--vocab", "gpt2", "-o", str(out), "-q"]) == 0
    prefix = tmp_path / "prefix.txt"
    prefix.write_text('{"x": 1')
    assert main(["mask", str(out), "--prefix-file", str(prefix), "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["complete"] is False
    assert main(["compile", "--regex", "[0-9]{3}", "--vocab", "gpt2", "-o",
                 str(tmp_path / "r.gmask"), "-q"]) == 0
    assert main(["inspect", str(tmp_path / "r.gmask")]) == 0
    assert main(["compile", "--choices", "yes", "no", "--vocab", "gpt2", "-o",
                 str(tmp_path / "c.gmask"), "-q"]) == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"properties": {"a": {"not": {"items": {"type": "string"}}}}}')
    assert main(["compile", str(bad), "--vocab", "gpt2", "-q"]) == 1
    assert "'not' at #/properties/a" in capsys.readouterr().err


def test_allof_merges_are_exact_or_refused() -> None:
    # the suite's "prefixItems in allOf does not constrain items": the other part's items
    # constrain every item, the prefix ones too
    check({"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}},
          passing=[[5, 5], []], failing=[[3, 5], [5, 4]])
    check({"allOf": [{"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
                     {"prefixItems": [True, {"minimum": 2}]}]},
          passing=[["a", 2, 1], ["a"]], failing=[["a", 1], [1], ["a", 2, "b"]])
    check({"allOf": [{"type": "array", "items": {"type": "integer"}}, {"maxItems": 2}],
           "items": {"minimum": 0}},
          passing=[[], [0, 7]], failing=[[-1], [1, 2, 3], ["a"]])


def test_long_counted_lengths() -> None:
    """Strings are counted up to 10,000 characters: plain ones laid out directly, with a pattern
    or format while their product fits; above, or past the product's limit, refused naming
    the keyword."""
    check({"properties": {"q": {"type": "string", "minLength": 66, "maxLength": 80}}},
          passing=[{}, {"q": "é" * 66}, {"q": "a\n" * 40}, {"q": "😀" * 80}],
          failing=[{"q": "x" * 65}, {"q": "é" * 81}])
    with pytest.raises(GrammarError, match="'maxLength' at #/properties/q"):
        Grammar.from_json_schema({"properties": {"q": {"type": "string", "maxLength": 10_001}}})
    name = {"type": "string", "maxLength": 90, "pattern": "^[a-z]+(-[a-z]+)?$"}
    check({"properties": {"q": name}},
          passing=[{"q": "a" * 90}, {"q": "a" * 44 + "-" + "b" * 45}],
          failing=[{"q": "a" * 91}, {"q": "a-" * 30}, {"q": ""}])
    with pytest.raises(GrammarError, match=r"'maxLength' at #/properties/q: .* above 64 together"):
        Grammar.from_json_schema({"properties": {"q": {"type": "string", "maxLength": 400,
                                                       "pattern": "^[^/:]+$"}}})


@pytest.mark.parametrize("schema", [False, {"anyOf": [False, False]}, {"allOf": [True, False]},
                                    {"type": "object", "properties": {"a": False},
                                     "required": ["a"]}])
def test_a_schema_no_value_satisfies_is_named_so(schema: object) -> None:
    """Not by the generated start rule's name, which the user never wrote."""
    with pytest.raises(GrammarError, match="no JSON value satisfies the schema") as info:
        Grammar.from_json_schema(schema)
    assert info.value.name is None and "start" not in str(info.value)


def test_request_diagnostics_wait_for_stats_or_save(monkeypatch, tmp_path):
    """A schema compiled per request (no cache) leaves its lexer diagnostics (only logged at
    DEBUG) until stats() or save() reads them: none run before the first mask, and they are
    what the eager check gives."""
    import gramask.compiler.diagnostics as diag

    schema = {"anyOf": [{"type": "string", "enum": ["ab"]}, {"type": "string",
                                                              "pattern": "^a+b$"}]}
    g = Grammar.from_json_schema(schema)
    calls: list[int] = []
    real = diag.check_lexer
    monkeypatch.setattr(diag, "check_lexer", lambda *a: calls.append(1) or real(*a))
    cg = gramask.compile(g, gramask.Vocabulary.bundled("gpt2"), cache=False, progress=False)
    cg.constraint().allowed()
    assert not calls and "lexer_diagnostics" not in cg.info
    got = cg.stats()["lexer_diagnostics"]
    assert calls == [1] and got == real(g, cg.dfa, cg.parse_tables)
    assert [d["kind"] for d in got] == ["collision"]
    cg.save(tmp_path / "a.gmask")  # computed once
    assert calls == [1]
    assert gramask.CompiledGrammar.load(tmp_path / "a.gmask").info["lexer_diagnostics"] == got


@pytest.mark.parametrize(("schema", "prefix"), [
    ({"type": "object", "patternProperties": {"^n": {"type": "null"}},
      "additionalProperties": {"type": "string"}}, '{"x": "x'),
    ({"type": "object", "patternProperties": {"^n": {"type": "null"}},
      "additionalProperties": {"type": "string", "format": "email"}}, '{"x": "ab'),
    ({"type": "object", "properties": {"name": {"type": "integer"}},
      "additionalProperties": {"type": "string"}}, '{"a": "nam'),
])
def test_shortest_completion_of_a_value_that_a_key_also_spells(schema: Any, prefix: str) -> None:
    """Keys and string values overlap (a key region takes most strings); the contextual lexer
    never compares them, and the planner, which follows the greedy winner where it can, must
    not be routed around the keys: keys rank after values."""
    cg = gramask.compile(Grammar.from_json_schema(schema), gramask.Vocabulary.bundled("gpt2"),
                         cache=False, progress=False)
    done = cg.constraint(prefix).shortest_completion().text
    assert valid(schema, json.loads(prefix + done)), done
    assert len(done) <= len('a@a"}')


def test_string_constraints_that_no_string_meets_are_an_empty_language() -> None:
    with pytest.raises(GrammarError, match="no JSON value satisfies"):
        Grammar.from_json_schema({"type": "string", "maxLength": 2, "format": "ipv4"})
    # one branch empty: the other stays
    check({"anyOf": [{"type": "string", "maxLength": 3, "format": "date"}, {"type": "integer"}]},
          passing=[1], failing=["2024-01-01", "ab"])


def test_property_names() -> None:
    """``propertyNames`` restricts the defined keys (one it refuses is never present) and the
    regions of the other keys; ``false`` leaves only ``{}``."""
    check({"propertyNames": {"pattern": "^[a-z]+$", "maxLength": 3},
           "properties": {"ab": {"type": "integer"}, "LONG": {"type": "integer"}}},
          passing=[{}, {"ab": 1}, {"ab": 1, "xyz": None}, {"q": [1]}],
          failing=[{"ab": "s"}, {"LONG": 1}, {"abcd": 1}, {"Ab": 2}, {"ab": 1, "x1": 2}])
    check({"propertyNames": {"enum": ["a", "b"]}, "patternProperties": {"^b": {"type": "string"}}},
          passing=[{"a": 1}, {"a": 1, "b": "x"}], failing=[{"c": 1}, {"b": 1}])
    check({"propertyNames": False}, passing=[{}, 1, "x"], failing=[{"a": 1}])
    # enum and const together: the enum's values equal to the const
    check({"propertyNames": {"enum": ["a", "b"], "const": "a"}, "properties": {"b": {}}},
          passing=[{}, {"a": 1}], failing=[{"b": 1}, {"a": 1, "b": 2}, {"c": 1}])
    check({"required": ["zz"], "propertyNames": {"maxLength": 1}}, passing=[[]],
          failing=[{}, {"zz": 1}, {"z": 1}])


def test_dependent_required() -> None:
    """A key present makes the keys it names required, wherever they come in schema order;
    keys only ``dependentRequired`` names are optional keys of their own (with the
    ``additionalProperties`` schema); draft 7's ``dependencies`` lists mean the same."""
    schema = {"properties": {"a": {}, "b": {}, "c": {}},
              "dependentRequired": {"c": ["a"], "a": ["b"], "x": ["c"]}}
    check(schema, passing=[{}, {"b": 1}, {"a": 1, "b": 2}, {"a": 1, "b": 2, "c": 3},
                           {"a": 1, "b": 2, "c": 3, "x": 0}, {"z": 1}],
          failing=[{"a": 1}, {"c": 1}, {"b": 1, "c": 2}, {"x": 1}, {"a": 1, "b": 2, "x": 0}])
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "additionalProperties": False, "properties": {"u": {}, "t": {}},
           "dependencies": {"u": ["t"], "t": {"required": ["u"]}, "w": ["u"]}},
          passing=[{}, {"u": 1, "t": 2}], failing=[{"u": 1}, {"t": 1}, {"w": 1}])
    with pytest.raises(GrammarError, match="'dependentRequired' at #: must map names"):
        Grammar.from_json_schema({"dependentRequired": {"a": "b"}})


def test_dependent_schemas() -> None:
    """A key present makes the instance meet a schema: ``dependentSchemas``, and draft 7's
    ``dependencies`` with a schema (its lists of names stay ``dependentRequired``)."""
    check({"properties": {"a": {}, "b": {"type": "integer"}},
           "dependentSchemas": {"a": {"properties": {"b": {"minimum": 5}}, "required": ["b"]}}},
          passing=[{}, {"b": 1}, {"a": 0, "b": 5}, "x"],
          failing=[{"a": 0}, {"a": 0, "b": 4}, {"b": "s"}])
    check({"$schema": "http://json-schema.org/draft-07/schema#",
           "properties": {"a": {}, "b": {}, "c": {}},
           "dependencies": {"a": {"properties": {"b": {"type": "string"}}}, "c": ["a"]}},
          passing=[{}, {"a": 1, "b": "s"}, {"a": 1, "c": 2}, {"b": 3}],
          failing=[{"a": 1, "b": 3}, {"c": 1}])


def test_contains() -> None:
    """``contains`` counts the matching items (at least ``minContains``, default 1; at most
    ``maxContains``, through the complement of its schema), beside the items' own schemas."""
    check({"contains": {"const": 1}}, passing=[[1], [2, 1, "a"], "x", {}],
          failing=[[], [2], [[1]]])
    check({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 5},
           "minContains": 2, "maxContains": 3, "maxItems": 6},
          passing=[[5, 6], [1, 5, 2, 9, 7], [0, 5, 5, 5, 0, 0]],
          failing=[[5], [5, 6, 7, 8], [1, 2], [5, 6, "x"], [5, 6, 1, 1, 1, 1, 1]])
    check({"prefixItems": [{"type": "string"}], "contains": {"type": "string"},
           "maxContains": 1},
          passing=[["a"], ["a", 1, None]], failing=[["a", "b"], [1], [], ["x", "b", "c"]])
    check({"contains": {"type": "null"}, "minContains": 0, "maxContains": 0},
          passing=[[], [1, 2]], failing=[[None], [1, None]])


@pytest.mark.parametrize(("schema", "message"), [
    ({"contains": 5}, "'contains' at #: must be a schema"),
    ({"dependentSchemas": {"a": 4}}, "'dependentSchemas' at #: must map names to schemas"),
    ({"dependencies": {"a": 4}}, "'dependencies' at #: must map names"),
    ({"dependentRequired": {"a": [{}]}}, "'dependentRequired' at #: must map names"),
    ({"propertyNames": {"pattern": "("}}, "'propertyNames' at #"),
    ({"maxContains": -1, "contains": {}}, "'maxContains' at #: must be a non-negative"),
])
def test_this_rounds_keywords_name_bad_values(schema: Any, message: str) -> None:
    with pytest.raises(GrammarError, match=re.escape(message)):
        Grammar.from_json_schema(schema)


def test_regex_format_and_format_beside_pattern() -> None:
    check({"type": "string", "format": "regex"},
          passing=["^[a-z]+$", "(a|b)*c?", "\\d{3}-\\d{4}", "", "é+", "[^\\]]"],
          failing=["(", "a**", "[z-a]", "^*", "a{2,1}", "[^]", 1])
    check({"type": "string", "format": "ipv4", "pattern": "^10\\."},
          passing=["10.0.0.1"], failing=["11.0.0.1", "10.0.0.256", "10.a"])
