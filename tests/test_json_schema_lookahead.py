"""JSON Schema ``pattern``s that open with lookaheads at their anchored start, compiled as
the intersection of their parts (``json_text.pattern_lookaheads``), ``jsonschema`` as the
oracle.

Found by the held-out schemas of the fzj check: pydantic 2.12 writes a ``Decimal`` field
without ``max_digits`` as ``anyOf [number, string with pattern ^(?!^[-+.]*$)[+-]?0*\\d*\\.?\\d*$]``,
and gramask refused that pattern ("uses a lookaround"), so such a model did not compile;
password policies (``^(?=.*\\d)(?=.*[a-z]).{8,}$``) were refused the same way. (With
``max_digits`` pydantic puts a second lookahead inside an alternative: still refused.)
"""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import pytest

import gramask
from gramask import Grammar
from gramask.errors import GrammarError

from ._support import BYTES

jsonschema = pytest.importorskip("jsonschema")

DECIMAL = r"^(?!^[-+.]*$)[+-]?0*\d*\.?\d*$"  # pydantic v2's Decimal, as it writes it
PASSWORD = r"^(?=.*\d)(?=.*[a-z])(?=.*[A-Z]).{8,}$"
CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"type": "string", "pattern": DECIMAL},
     ["12.50", "-0.5", "+3", ".5", "007", "", "+", "-.", "+.", "1a", "1.2.3"]),
    ({"type": "string", "pattern": PASSWORD},
     ["abcDEF12", "Passw0rdPassw0rd", "abcdefgh", "ABCDEFG1", "aB1", "abcdefg1", "aB1\n5678"]),
    ({"type": "string", "pattern": r"^(?!www\.)[a-z]+\.com$", "maxLength": 10},
     ["abc.com", "www.com", "abcdefgh.com", "www.x.com", "wwwx.com"]),
    ({"type": "string", "pattern": r"^(?=[0-9a-f-]*$)", "format": "uuid"},
     ["123e4567-e89b-12d3-a456-426614174000", "123E4567-e89b-12d3-a456-426614174000", "x"]),
    ({"type": "string", "pattern": r"^[a-c]+$", "format": "uri-reference", "maxLength": 3},
     ["abc", "a", "abca", "", "d"]),  # refused before ("format together with pattern and a
    # length"; json_schema_fuzz --real --seed 4242)
    ({"type": "string", "pattern": r"^(?!.*\s$)\S.*", "minLength": 2},
     ["ab", "a b", "a", "ab ", " a", "ab\n", "a\u00e9"]),
]


@functools.cache
def _compiled(schema_text: str) -> gramask.CompiledGrammar:
    return gramask.compile(Grammar.from_json_schema(schema_text), BYTES, cache=False,
                           progress=False)


def _complete(cg: gramask.CompiledGrammar, text: str) -> bool:
    try:
        return cg.constraint(text).is_complete()
    except gramask.InvalidPrefixError:
        return False


@pytest.mark.parametrize(("schema", "strings"), CASES)
def test_leading_lookaheads_match_jsonschema(schema: dict[str, Any], strings: list[str]
                                             ) -> None:
    """Each string, as a JSON text, is complete iff ``jsonschema`` (format assertions on)
    takes it; these schemas were refused before. (Where ECMA 262 and Python's ``re`` differ,
    ``"1.\\n"`` beside ``$``, gramask takes what both readings take, as for any pattern.)"""
    cg = _compiled(json.dumps(schema))
    v = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    for s in strings:
        assert _complete(cg, json.dumps(s)) == v.is_valid(s), s


@pytest.mark.parametrize(("schema", "strings"), CASES)
def test_leading_lookaheads_walks_end_valid(schema: dict[str, Any], strings: list[str]
                                            ) -> None:
    """Random masked walks, finished by ``shortest_completion()``, end in valid strings (no
    dead end: the intersection's automaton is trimmed)."""
    cg = _compiled(json.dumps(schema))
    v = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    rng = random.Random(0)
    for _ in range(6):
        c = cg.constraint()
        for _ in range(rng.randint(0, 12)):
            ids = [i for i in map(int, c.allowed().nonzero()[0]) if i != BYTES.eos_token_id]
            if not ids:
                break
            c.advance(rng.choice(ids))
        text = c.data.decode("utf-8", "replace") + (
            "" if c.is_complete() else c.shortest_completion().text)
        assert v.is_valid(json.loads(text)), text


def test_pydantic_decimal_field_compiles() -> None:
    """The whole shape pydantic writes for ``amount: Decimal``."""
    schema = {"properties": {"amount": {"anyOf": [{"type": "number"}, {"type": "string",
                                                                         "pattern": DECIMAL}]}},
              "required": ["amount"], "type": "object"}
    cg = _compiled(json.dumps(schema))
    for inst, ok in (({"amount": "12.50"}, True), ({"amount": 3}, True),
                     ({"amount": "+."}, False), ({"amount": "abc"}, False)):
        assert _complete(cg, json.dumps(inst)) == ok, inst


@pytest.mark.parametrize("pattern", ["(?=a)b", "^a(?=b)", "^(?<=a)b", "^(a|(?=b)c)"])
def test_lookarounds_elsewhere_stay_refused(pattern: str) -> None:
    with pytest.raises(GrammarError, match="lookaround"):
        Grammar.from_json_schema({"type": "string", "pattern": pattern})


def test_lookaheads_beside_a_long_length_are_refused_by_name() -> None:
    with pytest.raises(GrammarError, match="with lookaheads, and a length above 64"):
        Grammar.from_json_schema({"type": "string", "pattern": PASSWORD, "maxLength": 200})


def test_leading_lookaheads_filter_an_enum() -> None:
    """Beside ``enum`` the pattern filters the listed values (it refused the schema)."""
    schema = {"enum": ["1.5", "+", 3, "x", "."], "pattern": DECIMAL}
    cg = _compiled(json.dumps(schema))
    v = jsonschema.Draft202012Validator(schema)
    for inst in schema["enum"]:
        assert _complete(cg, json.dumps(inst)) == v.is_valid(inst), inst
