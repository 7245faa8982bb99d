"""The complement of a JSON Schema, written with the keywords gramask enforces: ``not`` and
``if``/``then``/``else`` (``(if ∧ then) ∨ (¬if ∧ else)``) become ``anyOf``/``allOf`` of
schemas the compiler already reads.

A context-free grammar has no complement in general, so only the schemas people write under
``not`` and ``if`` are negated: boolean schemas, ``type`` (the numbers that are no integer:
:data:`FRACTIONS`), ``const``/``enum`` (any JSON type but
a listed object or array), ``required`` and ``properties`` whose values negate (the usual
discriminator, ``{"properties": {"kind": {"const": "a"}}, "required": ["kind"]}``),
number bounds and ``multipleOf``, string lengths and ``pattern``, ``anyOf``/``allOf``/``not``
of those, and
local ``$ref`` to them. Anything else gives None, and the keyword is refused. Strings other
than some words, and numbers that are no multiple of something, need keywords JSON Schema
lacks: :data:`EXCEPT` and :data:`NOT_PATTERN`, read by the string compiler, and
:data:`NOT_MULTIPLE`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from .json_formats import is_json_number, listed_values

__all__ = ["EXCEPT", "FRACTIONS", "NOT_MULTIPLE", "NOT_PATTERN", "negate"]

# internal keyword of a string schema: the string is none of these words (a key automaton's
# "except" spec, on a value)
EXCEPT = "$gramask:except"
# internal keyword of a string schema: the string matches none of these patterns (in neither
# reading: ECMA 262's or Python's), a key automaton's "nomatch" spec on a value
NOT_PATTERN = "$gramask:notPattern"
# internal keyword of a number schema: a number that is no integer, read as jsonschema reads
# it too (a float: 1e200 + 0.1 is an integer there), so one of few digits (the number compiler)
FRACTIONS = "$gramask:fractions"
# internal keyword of a number schema: the number is no multiple of this (the complement of
# multipleOf, read by the number compiler)
NOT_MULTIPLE = "$gramask:notMultipleOf"

_ALL_TYPES = ("array", "boolean", "null", "number", "object", "string")
_MAX_DEPTH = 16


def negate(schema: Any, resolve: Callable[[str], Any], annotations: frozenset[str],
           depth: int = 0) -> Any:
    """A schema that holds exactly where ``schema`` does not; None where gramask cannot
    write one. ``resolve``: a local ``$ref``'s target (raising where it cannot)."""
    if schema is True:
        return False
    if schema is False:
        return True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return None
    s = {k: v for k, v in schema.items() if k not in annotations}
    if not s:
        return False
    if set(s) == {"$ref"}:
        return negate(resolve(s["$ref"]), resolve, annotations, depth + 1)
    if set(s) == {"not"}:
        return s["not"]
    if set(s) in ({"anyOf"}, {"allOf"}) and isinstance(next(iter(s.values())), list):
        parts = [negate(x, resolve, annotations, depth + 1) for x in next(iter(s.values()))]
        if any(p is None for p in parts):
            return None
        return {"allOf" if "anyOf" in s else "anyOf": parts}
    if "type" in s and set(s) - {"type"}:  # ¬(type ∧ rest) = ¬type ∨ ¬rest
        rest = {k: v for k, v in s.items() if k != "type"}
        if _object_only(rest):  # properties/required hold for non-objects: type decides
            neg_rest = _negate_object(rest, resolve, annotations, depth)
        else:
            neg_rest = negate(rest, resolve, annotations, depth + 1)
        neg_type = _negate_type(s["type"])
        if neg_rest is None or neg_type is None:
            return None
        return {"anyOf": [neg_type, neg_rest]}
    if set(s) == {"type"}:
        return _negate_type(s["type"])
    if "pattern" in s and isinstance(s["pattern"], str):  # ¬(pattern ∧ rest); every
        # other type holds for a pattern: its complement is strings only
        neg_pat = {"type": "string", NOT_PATTERN: [s["pattern"]]}
        if set(s) == {"pattern"}:
            return neg_pat
        neg = negate({k: v for k, v in s.items() if k != "pattern"}, resolve, annotations,
                     depth + 1)
        return None if neg is None else {"anyOf": [neg_pat, neg]}
    if set(s) <= {"const", "enum"}:
        values = listed_values(s)
        return _negate_values(values) if isinstance(values, list) else None
    if _object_only(s):  # holds for every non-object: its complement is objects only
        return _negate_object(s, resolve, annotations, depth)
    if set(s) <= {*_BOUNDS, "multipleOf"}:  # numbers outside the range, or no multiples
        return _out_of_range(s)  # (every other value holds)
    if set(s) <= {"minLength", "maxLength"}:  # strings outside the lengths
        lo, hi = s.get("minLength", 0), s.get("maxLength")
        if not isinstance(lo, int) or not isinstance(hi, int | None):
            return None
        beyond: list[Any] = [{"type": "string", "maxLength": lo - 1}] if lo > 0 else []
        beyond += [{"type": "string", "minLength": hi + 1}] if hi is not None else []
        return {"anyOf": beyond} if beyond else False
    return None


# each bound, and the bound of the numbers beyond it: (keyword beyond, inclusive?)
_BOUNDS = {"minimum": "exclusiveMaximum", "exclusiveMinimum": "maximum",
           "maximum": "exclusiveMinimum", "exclusiveMaximum": "minimum"}


def _out_of_range(s: dict[str, Any]) -> Any:
    if not all(is_json_number(v) for v in s.values()) or s.get("multipleOf", 1) <= 0:
        return None
    parts = [{"type": "number", _BOUNDS[k]: v} if k in _BOUNDS
             else {"type": "number", NOT_MULTIPLE: v} for k, v in s.items()]
    return {"anyOf": parts} if parts else False


def _object_only(s: dict[str, Any]) -> bool:
    return bool(s) and set(s) <= {"required", "properties"}


def _negate_object(s: dict[str, Any], resolve: Callable[[str], Any],
                   annotations: frozenset[str], depth: int) -> Any:
    """The objects ``s`` (``required`` and ``properties`` only) does not hold for: one
    required key absent, or one property present with a value its schema refuses."""
    required = s.get("required", [])
    props = s.get("properties", {})
    if not isinstance(required, list) or not isinstance(props, dict):
        return None
    branches: list[Any] = [{"type": "object", "properties": {k: False}}
                           for k in dict.fromkeys(required) if isinstance(k, str)]
    for k, sub in props.items():
        neg = negate(sub, resolve, annotations, depth + 1)
        if neg is None:
            return None
        if neg is not False:
            branches.append({"type": "object", "required": [k], "properties": {k: neg}})
    return {"anyOf": branches} if branches else False


def _negate_type(t: Any) -> Any:
    types = set(t if isinstance(t, list) else [t])
    if "integer" in types and "number" not in types:  # and the numbers that are not
        rest = [x for x in _ALL_TYPES if x not in types and x != "number"]  # integers
        fractions = {"type": "number", FRACTIONS: True}
        return {"anyOf": [{"type": rest}, fractions]} if rest else fractions
    if "number" in types:
        types.add("integer")
    rest = [x for x in _ALL_TYPES if x not in types]
    return {"type": rest} if rest else False


def _negate_values(values: list[Any]) -> Any:
    """Every JSON value but ``values``: per type, what is left of it."""
    if any(isinstance(v, dict | list) for v in values):
        return None
    branches: list[Any] = []
    if None not in values:
        branches.append({"type": "null"})
    bools = [b for b in (True, False) if not any(v is b for v in values)]
    if bools:
        branches.append({"type": "boolean", "enum": bools})
    words = sorted({v for v in values if isinstance(v, str)})
    branches.append({"type": "string", EXCEPT: words} if words else {"type": "string"})
    nums = sorted({v for v in values if is_json_number(v)})
    if not nums:
        branches.append({"type": "number"})
    else:  # the numbers around and between the listed ones (1 == 1.0, as JSON Schema says)
        branches.append({"type": "number", "exclusiveMaximum": nums[0]})
        branches += [{"type": "number", "exclusiveMinimum": a, "exclusiveMaximum": b}
                     for a, b in itertools.pairwise(nums) if a != b]
        branches.append({"type": "number", "exclusiveMinimum": nums[-1]})
    branches += [{"type": "object"}, {"type": "array"}]
    return {"anyOf": branches}
