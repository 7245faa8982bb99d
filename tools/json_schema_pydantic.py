#!/usr/bin/env python
"""Build ``json_schemas/pydantic_tools.json``: schemas in the shapes users send for tool
calls and structured outputs, with labelled instances.

Two kinds of schema:

- pydantic v2 ``model_json_schema()`` output of the models below (nested models, ``Optional``,
  ``Union``, ``Literal``, ``Enum`` classes, discriminated unions, ``$defs``, recursion,
  ``Decimal``, dates, UUIDs, URLs, constrained fields, ``dict``/``tuple``/``set`` fields,
  ``extra="forbid"``); valid instances are model instances dumped with
  ``model_dump(mode="json")`` (keys in field order, the order of ``properties``), invalid
  ones hand-made edits;
- function-calling parameter schemas written by hand in the style of OpenAI's ``tools``
  (strict mode: every key required, ``additionalProperties: false``, nullable as a type list).

Every label is checked with ``jsonschema`` (format assertions on) before it is written, as
``bench_json_schema.load_cases`` checks it again:

    python tools/json_schema_pydantic.py [-o tools/json_schemas/pydantic_tools.json]

``--check`` also compiles each schema with gramask and forces every valid instance through
it byte by byte, and draws further valid instances of the pydantic models with hypothesis
(``st.builds``), which must be accepted unless they use a spelling gramask documents as
rejected (an exponent where a range applies).
"""

from __future__ import annotations

import argparse
import datetime as dt
import enum
import json
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl

HERE = Path(__file__).resolve().parent


# ----------------------------------------------------------------------------- models
class Unit(enum.StrEnum):
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Priority(enum.IntEnum):
    low = 1
    normal = 2
    high = 3


class Forecast(BaseModel):
    """A weather tool's arguments: enum class, Optional with bounds, a nested model."""

    class Options(BaseModel):
        hourly: bool = False
        lang: str | None = None

    location: str = Field(description="City and country", min_length=1)
    unit: Unit = Unit.celsius
    days: int | None = Field(default=None, ge=1, le=14)
    options: Options | None = None


class LineItem(BaseModel):
    sku: Annotated[str, Field(pattern=r"^[A-Z]{3}-\d{4}$")]
    quantity: Annotated[int, Field(gt=0, le=1000)]
    unit_price: Decimal = Field(max_digits=10, decimal_places=2)


class Address(BaseModel):
    street: str
    city: str
    postcode: str = Field(min_length=3, max_length=10)
    country: Literal["US", "GB", "DE", "FR", "JP"]


class Order(BaseModel):
    """Lists of models, Decimal, Literal, an optional nested model, a dict field."""

    order_id: uuid.UUID
    items: list[LineItem] = Field(min_length=1, max_length=20)
    shipping: Address
    billing: Address | None = None
    priority: Priority = Priority.normal
    created: dt.datetime
    tags: dict[str, str] = {}


class Cat(BaseModel):
    pet_type: Literal["cat"]
    meows: int


class Dog(BaseModel):
    pet_type: Literal["dog"]
    barks: float
    good_boy: bool = True


class Lizard(BaseModel):
    pet_type: Literal["reptile", "lizard"]
    scales: bool


class Owner(BaseModel):
    """A discriminated union (``oneOf`` with ``discriminator``) in a list and alone."""

    name: str
    pet: Annotated[Cat | Dog | Lizard, Field(discriminator="pet_type")]
    others: list[Annotated[Cat | Dog, Field(discriminator="pet_type")]] = []


class TreeNode(BaseModel):
    """Recursion through ``$defs``: a node's children are nodes."""

    label: str
    weight: float | None = None
    children: list[TreeNode] = []


class Contact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["email", "phone"]
    value: str = Field(max_length=64)


class Person(BaseModel):
    """``extra="forbid"`` (additionalProperties false), Union of scalars, tuples, sets of
    enum values, dates, a URL."""

    model_config = ConfigDict(extra="forbid")

    first_name: str
    last_name: str | None = None
    age: Annotated[int, Field(ge=0, le=150)] | None = None
    id_or_name: int | str
    birthday: dt.date | None = None
    homepage: HttpUrl | None = None
    contacts: list[Contact] = []
    location: tuple[float, float] | None = None
    priorities: set[Priority] = set()


class Step(BaseModel):
    explanation: str
    output: str


class MathReasoning(BaseModel):
    """OpenAI's structured-outputs chain-of-thought example, as a pydantic model."""

    steps: list[Step]
    final_answer: str


class Measurement(BaseModel):
    """Constrained numbers: multiple_of, exclusive bounds, a float ratio, a time."""

    sensor: Annotated[str, Field(min_length=2, max_length=16, pattern=r"^[a-z][a-z0-9_]*$")]
    value: Annotated[float, Field(gt=-273.15, lt=1e6)]
    step: Annotated[int, Field(multiple_of=5, ge=0)]
    ratio: Annotated[float, Field(ge=0, le=1)] = 0.5
    taken_at: dt.time | None = None
    window: dt.timedelta | None = None


class Event(BaseModel):
    class Attendee(BaseModel):
        email: str
        optional: bool = False

    title: str
    start: dt.datetime
    end: dt.datetime | None = None
    attendees: list[Attendee] = Field(default_factory=list, max_length=8)
    recurrence: Literal["daily", "weekly", "monthly"] | None = None
    reminder_minutes: list[int] = Field(default_factory=list)


class Entity(BaseModel):
    text: str
    label: Literal["PERSON", "ORG", "LOC", "DATE", "MONEY"]
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    confidence: float = Field(ge=0, le=1)


class Extraction(BaseModel):
    """An information-extraction output: a list of typed spans and a language enum."""

    language: Literal["en", "de", "fr", "es", "zh"]
    entities: list[Entity]
    summary: str | None = Field(default=None, max_length=200)


class Filter(BaseModel):
    field: str
    op: Literal["=", "!=", "<", "<=", ">", ">=", "in", "like"]
    value: str | int | float | bool | list[str] | None


class Query(BaseModel):
    """A database tool: nested unions of scalars and lists, optional limits."""

    table: Literal["users", "orders", "products"]
    columns: list[str] = Field(min_length=1)
    filters: list[Filter] = []
    order_by: str | None = None
    descending: bool = False
    limit: int | None = Field(default=None, ge=1, le=500)


PYDANTIC: list[tuple[type[BaseModel], str, list[BaseModel], list[Any]]] = [
    (Forecast, "enum class with a default, Optional int with bounds, nested Optional model", [
        Forecast(location="Oslo, NO"),
        Forecast(location="São Paulo", unit=Unit.fahrenheit, days=14,
                 options=Forecast.Options(hourly=True, lang="pt")),
        Forecast(location="東京", days=1, options=Forecast.Options()),
    ], [{"location": ""}, {"location": "x", "days": 0}, {"location": "x", "unit": "kelvin"},
        {"unit": "celsius"}]),
    (Order, "lists of $defs models, Decimal (number or pattern string), uuid, date-time, "
            "IntEnum, dict field", [
        Order(order_id=uuid.UUID(int=0x1234), items=[LineItem(
            sku="ABC-0001", quantity=2, unit_price=Decimal("9.99"))],
            shipping=Address(street="1 Main St", city="Springfield", postcode="12345",
                             country="US"),
            created=dt.datetime(2024, 5, 1, 12, 30, tzinfo=dt.UTC)),
        Order(order_id=uuid.UUID(int=7), items=[
            LineItem(sku="XYZ-9999", quantity=1000, unit_price=Decimal("0.01")),
            LineItem(sku="QQQ-0000", quantity=1, unit_price=Decimal("12345678.90"))],
            shipping=Address(street="Unter den Linden 5", city="Berlin", postcode="10117",
                             country="DE"),
            billing=Address(street="x", city="y", postcode="SW1A", country="GB"),
            priority=Priority.high, created=dt.datetime(1999, 12, 31, 23, 59, 59,
                                                        tzinfo=dt.UTC),
            tags={"gift": "yes", "note": "ring twice"}),
    ], [{"order_id": "not-a-uuid", "items": [], "shipping": {}, "created": "2024-01-01"},
        {"order_id": str(uuid.UUID(int=1)), "items": [], "shipping": {
            "street": "a", "city": "b", "postcode": "123", "country": "US"},
         "created": "2024-05-01T12:30:00Z"}]),
    (Owner, "discriminated unions (oneOf + discriminator mapping), alone and in a list", [
        Owner(name="Ann", pet=Cat(pet_type="cat", meows=3)),
        Owner(name="Bo", pet=Dog(pet_type="dog", barks=0.5, good_boy=False),
              others=[Cat(pet_type="cat", meows=0), Dog(pet_type="dog", barks=2)]),
        Owner(name="Cy", pet=Lizard(pet_type="lizard", scales=True)),
    ], [{"name": "A", "pet": {"pet_type": "fish"}},
        {"name": "A", "pet": {"pet_type": "cat", "meows": "loud"}},
        {"name": "A", "pet": {"pet_type": "dog"}}]),
    (TreeNode, "recursion through $defs (a root $ref is not used: the root is the model)", [
        TreeNode(label="root"),
        TreeNode(label="a", weight=1.5, children=[
            TreeNode(label="b", children=[TreeNode(label="c", weight=-2)]), TreeNode(label="d")]),
    ], [{"label": 1}, {"label": "a", "children": [{"weight": 1}]}]),
    (Person, "extra=forbid, Union[int, str], date, HttpUrl, tuple, set of IntEnum "
             "(uniqueItems over an enum)", [
        Person(first_name="Ada", id_or_name=1),
        Person(first_name="Grace", last_name="Hopper", age=85, id_or_name="ghopper",
               birthday=dt.date(1906, 12, 9), homepage=HttpUrl("https://example.org/gh"),
               contacts=[Contact(kind="email", value="grace@example.org")],
               location=(38.9, -77.03), priorities={Priority.high, Priority.low}),
    ], [{"first_name": "A", "id_or_name": 1, "nick": "x"},
        {"first_name": "A", "id_or_name": 1.5},
        {"first_name": "A", "id_or_name": 1, "priorities": [1, 1]},
        {"first_name": "A", "id_or_name": 1, "location": [1.0]}]),
    (MathReasoning, "OpenAI structured outputs' chain-of-thought example", [
        MathReasoning(steps=[Step(explanation="Subtract 7", output="8x = -30")],
                      final_answer="x = -3.75"),
        MathReasoning(steps=[], final_answer=""),
    ], [{"steps": [{"explanation": "x"}], "final_answer": "y"}, {"steps": []}]),
    (Measurement, "multipleOf, exclusive float bounds, a pattern with lengths, time, duration", [
        Measurement(sensor="t1", value=-273.0, step=0),
        Measurement(sensor="pressure_2", value=101.325, step=15, ratio=1.0,
                    taken_at=dt.time(8, 15, 0, tzinfo=dt.UTC), window=dt.timedelta(minutes=5)),
    ], [{"sensor": "T1", "value": 1, "step": 0}, {"sensor": "t1", "value": -300, "step": 0},
        {"sensor": "t1", "value": 1, "step": 3}, {"sensor": "t1", "value": 1, "step": 5,
                                                   "ratio": 1.5}]),
    (Event, "a calendar tool: nested model lists with maxItems, date-times, Literal or null", [
        Event(title="Standup", start=dt.datetime(2025, 1, 6, 9, 0, tzinfo=dt.UTC)),
        Event(title="Review", start=dt.datetime(2025, 2, 1, 14, 0, tzinfo=dt.UTC),
              end=dt.datetime(2025, 2, 1, 15, 0, tzinfo=dt.UTC),
              attendees=[Event.Attendee(email="a@b.co"),
                         Event.Attendee(email="c@d.io", optional=True)],
              recurrence="weekly", reminder_minutes=[10, 60]),
    ], [{"start": "2025-01-01T00:00:00Z"}, {"title": "x", "start": "2025-01-01T00:00:00Z",
                                             "recurrence": "yearly"}]),
    (Extraction, "extraction output: a list of typed spans, confidence in [0, 1]", [
        Extraction(language="en", entities=[]),
        Extraction(language="de", entities=[
            Entity(text="Angela Merkel", label="PERSON", start=0, end=13, confidence=0.98),
            Entity(text="Berlin", label="LOC", start=27, end=33, confidence=1)],
            summary="Merkel spoke in Berlin."),
    ], [{"language": "it", "entities": []},
        {"language": "en", "entities": [{"text": "x", "label": "PERSON", "start": 0,
                                         "end": 1, "confidence": 2}]}]),
    (Query, "a database tool: Literal operators, a union of scalars and a list, null", [
        Query(table="users", columns=["id"]),
        Query(table="orders", columns=["id", "total"], filters=[
            Filter(field="total", op=">=", value=100), Filter(field="status", op="in",
                                                              value=["paid", "sent"]),
            Filter(field="note", op="=", value=None), Filter(field="vip", op="=", value=True)],
            order_by="total", descending=True, limit=50),
    ], [{"table": "users", "columns": []}, {"table": "users", "columns": ["a"], "limit": 0},
        {"table": "users", "columns": ["a"], "filters": [{"field": "a", "op": "~",
                                                          "value": 1}]}]),
]


# ----------------------------------------------------------------------------- tools
def _strict(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}


HAND: list[dict[str, Any]] = [
    {"name": "openai_search_flights",
     "source": "OpenAI strict function calling: nested arrays of closed objects, enums, "
               "nullable date strings",
     "schema": _strict({
         "origin": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "IATA code"},
         "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
         "depart": {"type": "string", "format": "date"},
         "return": {"type": ["string", "null"], "format": "date"},
         "cabin": {"type": "string", "enum": ["economy", "premium", "business", "first"]},
         "passengers": {"type": "array", "minItems": 1, "maxItems": 9, "items": _strict({
             "type": {"type": "string", "enum": ["adult", "child", "infant"]},
             "age": {"type": ["integer", "null"], "minimum": 0, "maximum": 120}})}}),
     "valid": [{"origin": "OSL", "destination": "JFK", "depart": "2025-07-01", "return": None,
                "cabin": "economy", "passengers": [{"type": "adult", "age": None}]},
               {"origin": "LHR", "destination": "HND", "depart": "2025-12-24",
                "return": "2026-01-02", "cabin": "first", "passengers": [
                    {"type": "adult", "age": 40}, {"type": "infant", "age": 0}]}],
     "invalid": [{"origin": "osl", "destination": "JFK", "depart": "2025-07-01",
                  "return": None, "cabin": "economy", "passengers": []},
                 {"origin": "OSL", "destination": "JFK", "depart": "2025-02-30", "return": None,
                  "cabin": "economy", "passengers": [{"type": "adult", "age": None}]}]},
    {"name": "openai_send_email",
     "source": "a send-email tool (non-strict): email formats in arrays, optional keys, "
               "a body with a length cap",
     "schema": {"type": "object", "properties": {
         "to": {"type": "array", "items": {"type": "string", "format": "email"},
                "minItems": 1},
         "cc": {"type": "array", "items": {"type": "string", "format": "email"}},
         "subject": {"type": "string", "maxLength": 120},
         "body": {"type": "string"},
         "importance": {"type": "string", "enum": ["low", "normal", "high"],
                        "default": "normal"}},
         "required": ["to", "subject", "body"]},
     "valid": [{"to": ["a@example.com"], "subject": "Hi", "body": "Hello\nthere"},
               {"to": ["x.y+z@mail.example.org", "b@c.de"], "cc": [], "subject": "",
                "body": "\u00e9\u00e8 \"quoted\" \\ tab\t", "importance": "high"}],
     "invalid": [{"to": [], "subject": "x", "body": "y"},
                 {"to": ["not an email"], "subject": "x", "body": "y"},
                 {"to": ["a@b.co"], "subject": "x"}]},
    {"name": "openai_tool_choice_union",
     "source": "several tools as one output: anyOf of closed objects told apart by a "
               "const name, arguments nested",
     "schema": {"anyOf": [
         _strict({"name": {"type": "string", "const": "get_time"},
                  "arguments": _strict({"timezone": {"type": "string"}})}),
         _strict({"name": {"type": "string", "const": "convert"},
                  "arguments": _strict({"amount": {"type": "number"},
                                        "from": {"type": "string", "enum": ["USD", "EUR"]},
                                        "to": {"type": "string", "enum": ["USD", "EUR"]}})}),
         _strict({"name": {"type": "string", "const": "final_answer"},
                  "arguments": _strict({"text": {"type": "string"}})})]},
     "valid": [{"name": "get_time", "arguments": {"timezone": "Europe/Oslo"}},
               {"name": "convert", "arguments": {"amount": 12.5, "from": "USD", "to": "EUR"}},
               {"name": "final_answer", "arguments": {"text": ""}}],
     "invalid": [{"name": "get_time", "arguments": {"amount": 1}},
                 {"name": "convert", "arguments": {"amount": "1", "from": "USD", "to": "EUR"}},
                 {"name": "other", "arguments": {}}]},
    {"name": "openai_structured_recursive_ui",
     "source": "OpenAI structured outputs' recursive UI example: a root $ref-free object "
               "whose children refer to the root with '#'",
     "schema": {"type": "object", "properties": {
         "type": {"type": "string", "enum": ["div", "button", "header", "section", "field",
                                              "form"]},
         "label": {"type": "string"},
         "children": {"type": "array", "items": {"$ref": "#"}},
         "attributes": {"type": "array", "items": _strict({
             "name": {"type": "string"}, "value": {"type": "string"}})}},
         "required": ["type", "label", "children", "attributes"],
         "additionalProperties": False},
     "valid": [{"type": "form", "label": "Sign up", "children": [
         {"type": "field", "label": "Name", "children": [], "attributes": [
             {"name": "placeholder", "value": "Ada"}]},
         {"type": "button", "label": "Go", "children": [], "attributes": []}],
         "attributes": []}],
     "invalid": [{"type": "form", "label": "x", "children": [{"type": "span", "label": "y",
                                                             "children": [],
                                                             "attributes": []}],
                  "attributes": []}]},
    {"name": "openai_moderation_scores",
     "source": "a classification output: a closed object of number scores in [0, 1], a "
               "boolean, an enum list with uniqueItems",
     "schema": _strict({
         "flagged": {"type": "boolean"},
         "categories": {"type": "array", "uniqueItems": True, "items": {
             "type": "string", "enum": ["hate", "harassment", "self-harm", "sexual",
                                        "violence"]}},
         "scores": _strict({k: {"type": "number", "minimum": 0, "maximum": 1}
                            for k in ("hate", "harassment", "violence")})}),
     "valid": [{"flagged": False, "categories": [], "scores": {
         "hate": 0, "harassment": 0.01, "violence": 1}},
               {"flagged": True, "categories": ["violence", "hate"], "scores": {
                   "hate": 0.5, "harassment": 0.25, "violence": 0.999}}],
     "invalid": [{"flagged": True, "categories": ["hate", "hate"], "scores": {
         "hate": 0.5, "harassment": 0.25, "violence": 0.9}},
                 {"flagged": True, "categories": [], "scores": {
                     "hate": 1.5, "harassment": 0, "violence": 0}}]},
    {"name": "draft7_tool_with_definitions",
     "source": "a draft-07 tool schema (as older SDKs write it): definitions, $ref with "
               "siblings ignored, oneOf of a format and a type, dependencies",
     "schema": {"$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {"money": {"type": "object", "properties": {
                    "amount": {"type": "string", "pattern": "^-?\\d+(\\.\\d{1,2})?$"},
                    "currency": {"type": "string", "minLength": 3, "maxLength": 3}},
                    "required": ["amount", "currency"]}},
                "type": "object", "properties": {
                    "payee": {"oneOf": [{"type": "string", "format": "email"},
                                        {"type": "integer", "minimum": 1}]},
                    "total": {"$ref": "#/definitions/money", "description": "the sum"},
                    "memo": {"type": "string"},
                    "memo_lang": {"type": "string", "enum": ["en", "fr"]}},
                "required": ["payee", "total"], "dependencies": {"memo_lang": ["memo"]}},
     "valid": [{"payee": "a@b.io", "total": {"amount": "10.50", "currency": "EUR"}},
               {"payee": 12345,
                "total": {"amount": "-3", "currency": "USD"}, "memo": "r",
                "memo_lang": "en"}],
     "invalid": [{"payee": "a@b.io", "total": {"amount": "1.234", "currency": "EUR"}},
                 {"payee": "a@b.io", "total": {"amount": "1", "currency": "EUR"},
                  "memo_lang": "en"},
                 {"payee": 0, "total": {"amount": "1", "currency": "EUR"}}]},
    {"name": "if_then_by_kind",
     "source": "a shape users write by hand: a kind enum selecting required fields with "
               "allOf of if/then",
     "schema": {"type": "object", "properties": {
         "kind": {"enum": ["circle", "rect"]}, "r": {"type": "number", "exclusiveMinimum": 0},
         "w": {"type": "number", "exclusiveMinimum": 0},
         "h": {"type": "number", "exclusiveMinimum": 0}},
         "required": ["kind"], "additionalProperties": False,
         "allOf": [{"if": {"properties": {"kind": {"const": "circle"}}},
                    "then": {"required": ["r"]}},
                   {"if": {"properties": {"kind": {"const": "rect"}}},
                    "then": {"required": ["w", "h"]}}]},
     "valid": [{"kind": "circle", "r": 1}, {"kind": "rect", "w": 2.5, "h": 0.1}],
     "invalid": [{"kind": "circle"}, {"kind": "rect", "w": 1}, {"kind": "circle", "r": 0}]},
    {"name": "llm_judge_rubric",
     "source": "an evaluation output: integer scores 1-5 per criterion in a map with "
               "propertyNames, a verdict enum, an optional rationale",
     "schema": {"type": "object", "properties": {
         "scores": {"type": "object", "propertyNames": {"pattern": "^[a-z_]{1,20}$"},
                    "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 5},
                    "minProperties": 1},
         "verdict": {"type": "string", "enum": ["pass", "fail", "unsure"]},
         "rationale": {"type": ["string", "null"], "maxLength": 500}},
         "required": ["scores", "verdict"]},
     "valid": [{"scores": {"accuracy": 5}, "verdict": "pass"},
               {"scores": {"accuracy": 1, "tone_match": 3}, "verdict": "unsure",
                "rationale": None}],
     "invalid": [{"scores": {}, "verdict": "pass"},
                 {"scores": {"Accuracy": 5}, "verdict": "pass"},
                 {"scores": {"a": 6}, "verdict": "pass"}]},
]


# ----------------------------------------------------------------------------- build
def cases() -> list[dict[str, Any]]:
    """Every case, its labels checked with ``jsonschema``."""
    import jsonschema

    out = []
    for model, source, good, bad in PYDANTIC:
        for m in good:  # (pydantic validates them too)
            model.model_validate(m.model_dump(mode="json"))
        out.append({"name": "pydantic_" + model.__name__.lower(),
                    "source": f"pydantic v2 model_json_schema(): {source}",
                    "schema": model.model_json_schema(),
                    "valid": [m.model_dump(mode="json") for m in good], "invalid": bad})
    out += HAND
    for case in out:
        cls = jsonschema.validators.validator_for(case["schema"])
        v = cls(case["schema"], format_checker=cls.FORMAT_CHECKER)
        for inst in case["valid"]:
            assert v.is_valid(inst), (case["name"], inst)
        for inst in case["invalid"]:
            assert not v.is_valid(inst), (case["name"], inst)
    return out


def accepts(cg: Any, text: str) -> bool:
    """``text`` forced byte by byte (a byte-level vocabulary decides membership)."""
    c = cg.constraint()
    for b in text.encode():
        if not c.allowed()[b]:
            return False
        c.advance(b)
    return bool(c.allowed()[cg.vocab.eos_token_id])


def drawn_rejects(model: type[BaseModel], v: Any, cg: Any, draws: int) -> list[str]:
    """Valid JSON texts of hypothesis's instances of ``model`` that ``cg`` rejects."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    extra: list[str] = []

    @settings(max_examples=draws, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.from_type(model))
    def one(m: Any) -> None:
        try:
            text = json.dumps(m.model_dump(mode="json"), allow_nan=False)
        except ValueError:  # NaN is no JSON (Python's json reads it)
            return
        if v.is_valid(json.loads(text)) and not accepts(cg, text):
            extra.append(text)

    try:
        one()
    except Exception as e:  # hypothesis's own strategies for pydantic fail on some
        # constrained Optional fields ('<=' between int and None)
        extra.append(f"(hypothesis could not draw: {type(e).__name__})")
    return extra


def check(out: list[dict[str, Any]], draws: int) -> int:
    """Compile each case, force its labels and (pydantic cases) hypothesis's valid models."""
    import warnings

    import jsonschema

    import gramask

    vocab = gramask.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"],
                                           eos_token_id=256, name="bytes")
    bad = 0
    models = {"pydantic_" + m.__name__.lower(): m for m, *_ in PYDANTIC}
    for case in out:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cg = gramask.compile(gramask.Grammar.from_json_schema(case["schema"]), vocab,
                                     cache=False, progress=False)
        except gramask.GrammarError as e:
            print(f"{case['name']}: REFUSED {str(e).splitlines()[0]}")
            continue
        cls = jsonschema.validators.validator_for(case["schema"])
        v = cls(case["schema"], format_checker=cls.FORMAT_CHECKER)
        rejected = [i for i in case["valid"] if not accepts(cg, json.dumps(i))]
        accepted = [i for i in case["invalid"] if accepts(cg, json.dumps(i))]
        extra = drawn_rejects(models[case["name"]], v, cg, draws) \
            if case["name"] in models and draws else []
        bad += len(rejected) + len(accepted)
        print(f"{case['name']}: valid {len(case['valid']) - len(rejected)}/"
              f"{len(case['valid'])}, invalid refused {len(case['invalid']) - len(accepted)}/"
              f"{len(case['invalid'])}, hypothesis texts rejected {len(extra)}")
        for x in rejected:
            print("   REJECTED VALID", json.dumps(x))
        for x in accepted:
            print("   ACCEPTED INVALID", json.dumps(x))
        for t in extra[:3]:
            print("   hypothesis text rejected", t)
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--out", type=Path, default=HERE / "json_schemas" /
                    "pydantic_tools.json")
    ap.add_argument("--check", action="store_true", help="compile and force the labels")
    ap.add_argument("--draws", type=int, default=30,
                    help="hypothesis draws per pydantic model with --check")
    args = ap.parse_args(argv)
    out = cases()
    args.out.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(out)} schemas, {sum(len(c['valid']) for c in out)} valid and "
          f"{sum(len(c['invalid']) for c in out)} invalid instances -> {args.out}")
    return 1 if args.check and check(out, args.draws) else 0


if __name__ == "__main__":
    sys.exit(main())
