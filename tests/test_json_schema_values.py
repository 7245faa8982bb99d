"""JSON Schema values found wrong by fuzzing and hand-written user schemas, ``jsonschema`` as
the oracle: literals that spell alike once a terminal's name drops their punctuation, and the
``date`` format's years.

The literals were found by forcing hand-written function-calling schemas (``tools/json_schemas/user_tools.json``):
``{"enum": [0, 0.5, 1, 2.5, -3, null]}`` beside an array of ``{"enum": [1, 2, 3]}`` rejected
``-3`` — the literals ``-3`` and ``3`` were both named ``T_3``, and ``-1``/``1`` the same way,
so one schema accepted ``{"l": 1}`` for ``{"const": -1}``.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

import gramask
from gramask import Grammar
from gramask.errors import GrammarError

from ._support import BYTES, accepts, byte_ids
from .test_json_schema import check

jsonschema = pytest.importorskip("jsonschema")

# pairs of JSON literals whose text differs only in characters a terminal name cannot hold
PAIRS = [(-1, 1), (-3, 3), (-0.5, 0.5), (1e-20, 1e20), (-2.5, 2.5), ("a-b", "a_b"), ("é", "_")]


@functools.cache
def _compiled(schema_text: str) -> gramask.CompiledGrammar:
    return gramask.compile(Grammar.from_json_schema(schema_text), BYTES, cache=False,
                           progress=False)


def _accepts(schema: Any, inst: Any) -> bool:
    cg = _compiled(json.dumps(schema))
    return accepts(cg, byte_ids(json.dumps(inst, separators=(",", ":"))))


def _valid(schema: Any, inst: Any) -> bool:
    return bool(jsonschema.Draft202012Validator(schema).is_valid(inst))


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_two_properties_consts_that_name_alike_stay_apart(a: Any, b: Any) -> None:
    schema = {"properties": {"l": {"const": a}, "w": {"const": b}}}
    for inst in ({"l": a}, {"l": b}, {"w": a}, {"w": b}, {"l": a, "w": b}, {"l": b, "w": a}):
        assert _accepts(schema, inst) == _valid(schema, inst), inst


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_tuple_of_consts_that_name_alike(a: Any, b: Any) -> None:
    schema = {"type": "array", "prefixItems": [{"const": a}, {"const": b}], "items": False}
    for inst in ([a, b], [a, a], [b, b], [b, a], [a]):
        assert _accepts(schema, inst) == _valid(schema, inst), inst


def test_enum_of_signed_numbers_beside_an_array_of_them() -> None:
    schema = {"type": "object", "properties": {
        "level": {"enum": [0, 0.5, 1, 2.5, -3, None]},
        "weights": {"type": "array", "items": {"enum": [1, 2, 3]}}}}
    for inst in ({"level": -3}, {"level": 3}, {"level": -3, "weights": [3, 1]},
                 {"level": 1, "weights": [-3]}, {"level": -1}, {"level": None, "weights": [2]}):
        assert _accepts(schema, inst) == _valid(schema, inst), inst


def test_date_format_agrees_with_pythons_date_on_every_year() -> None:
    """jsonschema checks ``date`` with ``datetime.date``, which has no year 0000 (RFC 3339's
    grammar does): found by ``tools/json_schema_fuzz.py --seed 29 --vocab deepseek-v4``."""
    import datetime
    import re

    from gramask.frontends.json_formats import FORMATS

    rx = re.compile(FORMATS["date"])
    for y in range(10000):
        for md in ("01-01", "02-28", "02-29", "12-31", "04-31", "00-10", "13-01"):
            text = f"{y:04d}-{md}"
            try:
                ok = datetime.date.fromisoformat(text) is not None
            except ValueError:
                ok = False
            assert bool(rx.fullmatch(text)) == ok, text


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "^\\D$"}, {"type": "string", "pattern": "^\\W$"},
    {"type": "string", "pattern": "^\\S$"}, {"type": "string", "pattern": "^\\s$"},
    {"type": "string", "pattern": "^[^\\d]$"}, {"type": "string", "pattern": "^[\\d\\s]$"},
    {"type": "object", "patternProperties": {"^.*$": {"type": "integer"}}},
    {"type": "object", "patternProperties": {"^a$": {"type": "integer"}}},
    {"type": "object", "patternProperties": {"\\d": {"type": "integer"}},
     "additionalProperties": False},
    {"type": "object", "propertyNames": {"pattern": "^\\W+$"}},
])
def test_patterns_accept_only_what_both_readings_call_valid(schema: Any) -> None:
    """Where ECMA 262 and Python's ``re`` (jsonschema's reading) differ (``\\D`` and ``٣``,
    ``\\S`` and U+001C, ``\\s`` and U+FEFF, ``$`` before a final newline: a key ``"\\n"``
    matches ``^.*$`` for ``re``), a string is taken only where both readings agree, and a key
    only where both put it in the same region: accepted ⇒ valid. Found by
    ``tools/json_schema_fuzz.py --from tools/json_schemas/schemastore.json`` (dotnet-tools'
    ``"^.*$"`` pattern property)."""
    chars = ["٣", "é", "\u001c", "\ufeff", "\u2028", "\n", "a", "1", " ", "_", "a\n", "Ⅻ"]
    cases = [*chars, *({c: 1} for c in chars), *({c: "x"} for c in chars)]
    accepted = [i for i in cases if _accepts(schema, i)]
    assert all(_valid(schema, i) for i in accepted), [i for i in accepted if not _valid(schema, i)]
    assert accepted  # the ASCII cases the readings agree on stay


def test_enum_values_filtered_by_a_pattern_or_its_complement() -> None:
    from .test_json_schema import check

    check({"enum": ["ab", "b", 3], "pattern": "^a"}, passing=["ab", 3], failing=["b"])
    check({"enum": ["ab", "b", "\u0663"], "not": {"pattern": "^a|^\\d"}},
          passing=["b"], failing=["ab", "\u0663"])


def test_a_pattern_no_format_value_matches_describes_nothing() -> None:
    """``^x-`` and a uuid share no string: the value has none (the schema none at all, so it
    is refused), where the string terminal was kept and the walk dead-ended at the start."""
    with pytest.raises(GrammarError, match="no JSON value"):
        Grammar.from_json_schema({"type": "string", "pattern": "^x-", "format": "uuid"})
    check({"anyOf": [{"type": "string", "pattern": "^x-", "format": "uuid"},
                     {"type": "integer"}]}, passing=[3], failing=["x-1", "abc"])
    check({"type": ["string", "null"], "pattern": "^z", "format": "date"}, passing=[None],
          failing=["2024-01-01", "z"])
