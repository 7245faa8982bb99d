"""JSON Schema → grammar: every keyword enforced exactly, or refused naming it and where.

A schema becomes a BNF grammar over a contextual lexer whose terminals are JSON's punctuation,
its keys and literals, and one string/number terminal per distinct string or number
constraint (regexes over the encoded JSON text, :mod:`gramask.frontends.json_text`). Objects
take their properties in schema order (as llguidance and XGrammar do), optional ones
skippable, then additional or pattern properties; counts (``minItems``, ``maxProperties``)
are states of the generated rules.

Exactness is judged against the validator semantics (draft 2020-12 unless ``$schema`` names
an older draft): an instance the grammar accepts is valid. The converse is given up in a few
documented places, always by *rejecting* valid instances: properties out of schema order,
numbers with an exponent where a range applies, integers written as ``1.0``, enum numbers in
another spelling than the schema's, and ``-0``. Anything else gramask cannot enforce is a
:class:`GrammarError` naming the keyword and its JSON pointer (``lenient=True`` drops such a
keyword with a warning instead).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import GrammarError
from . import json_text as jt
from .bnf import GrammarParts
from .json_formats import FORMATS, UNSUPPORTED_FORMATS, is_json_number, listed_values
from .json_formats import disjoint as _disjoint
from .json_formats import json_type as _json_type
from .json_numbers import (
    decimal_lcm,
    decimal_of,
    float_divisor_kind,
    is_multiple,
    is_multiple_as_floats,
)
from .json_schema_base import (
    _ANNOTATIONS,
    _ARRAY_KW,
    _KNOWN,
    _NEWER,
    _NUMBER_KW,
    _OBJECT_KW,
    _REFUSED,
    _STRING_KW,
    _TYPES,
    SOURCE,
    JsonSchemaOptions,
    SchemaWarning,
    _canon,
    _ptr_join,
)
from .json_schema_merge import merge_objects, merge_tuples
from .json_schema_negation import EXCEPT, FRACTIONS, NOT_MULTIPLE, NOT_PATTERN
from .json_schema_types import MAX_ORDERED_UNIQUE, MAX_UNIQUE_ITEMS, TypeKeywords, finite_items
from .json_schema_unevaluated import Unlowerable, lower_unevaluated

__all__ = ["JsonSchemaOptions", "SchemaWarning", "grammar_from_json_schema", "json_value_grammar"]


class _Compiler(TypeKeywords):
    """One schema's compiler: schemas, references and the combinators (``allOf`` merged,
    ``anyOf``/``oneOf`` as alternatives), dispatched to the type keywords."""

    # ------------------------------------------------------------------ schemas
    def value(self, schema: Any, ptr: str) -> str:
        """The nonterminal of the values ``schema`` accepts."""
        ptr = self.at(schema, ptr)
        if isinstance(schema, dict) and not set(schema) <= _KNOWN:
            schema = {k: v for k, v in schema.items() if k in _KNOWN}
        if schema is True or (isinstance(schema, dict) and not (set(schema) - _ANNOTATIONS)):
            return self.any_value()
        if schema is False:
            return self.empty()
        if not isinstance(schema, dict):
            raise GrammarError(f"JSON Schema at {ptr or '#'}: a schema must be an object or a "
                               f"boolean, not {_json_type(schema)}")
        key = _canon(schema)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if key in self.active:  # recursion that no $ref rule ties (a merged schema meets
            # itself again, e.g. through anyOf + $ref): a name now, its rule once it is known
            fwd = self.active[key] = self.active[key] or self.b.fresh("recursive")
            return fwd
        self.active[key] = ""
        try:
            out = self.dispatch(self.check_keywords(schema, ptr), ptr)
        finally:
            fwd = self.active.pop(key)
        if fwd:
            self.rule(fwd, (out,))
        self.memo[key] = out
        return out

    def dispatch(self, schema: dict[str, Any], ptr: str) -> str:
        if "$ref" in schema:
            siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
            if self.ref_siblings_ignored or not siblings:
                return self.ref_rule(schema["$ref"], ptr)
            return self.value({"allOf": [{"$ref": schema["$ref"]}, self.note(siblings, ptr)]},
                              ptr)
        if "allOf" in schema:
            merged, origin = self.merge_all(schema, ptr, [])
            self.origins.append((ptr, origin))  # (refusals at ptr name the part's place)
            try:
                return self.value(merged, ptr)
            finally:
                self.origins.pop()
        if "anyOf" in schema or "oneOf" in schema:
            return self.disjunction(schema, ptr)
        return self.plain(schema, ptr)

    def check_keywords(self, schema: dict[str, Any], ptr: str) -> dict[str, Any]:
        out = {k: v for k, v in schema.items() if k in _KNOWN}
        if self.ref_siblings_ignored:  # drafts 4 to 7: later keywords are unknown ones
            out = {k: v for k, v in out.items() if k not in _NEWER}
        if "format" in out and (not isinstance(out["format"], str) or (
                out["format"] not in FORMATS and out["format"] not in UNSUPPORTED_FORMATS)):
            out.pop("format")  # an unknown format only annotates (jsonschema ignores it too)
        for k in _COUNTS:  # 2.0 is an integer to JSON Schema
            v = out.get(k)
            if isinstance(v, float) and v.is_integer():
                out[k] = int(v)
        for kind in ("Properties", "Items"):  # (before the keywords below are rewritten)
            if "unevaluated" + kind in out:
                out = self.unevaluated(out, kind, ptr)
        if "dependencies" in out or "dependentSchemas" in out:
            self.dependent_schemas(out, ptr)
        if "not" in out or "if" in out:
            self.complements(out, ptr)
        for k in ("then", "else"):  # without "if" they only annotate
            out.pop(k, None)
        for k in list(out):
            if k in _REFUSED:
                self.refuse(k, ptr, "not supported by gramask")
                out.pop(k)
        if out.get("uniqueItems") is not True or out.get("maxItems", 2) <= 1:
            out.pop("uniqueItems", None)
        elif finite_items(out, lambda ref: self.resolve(ref, ptr)[0]) is None:
            self.refuse("uniqueItems", ptr, "not supported by gramask (with maxItems > 1), but "
                        "for items from an enum or const (or type boolean/null) of at most "
                        f"{MAX_ORDERED_UNIQUE} strings, integers, booleans or null; beyond "
                        f"{MAX_UNIQUE_ITEMS} values, taken in the schema's order")
            out.pop("uniqueItems")
        if self.draft4:  # draft 4: exclusiveMinimum/Maximum are booleans on minimum/maximum
            for ex, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
                if isinstance(out.get(ex), bool) and out.pop(ex) and bound in out:
                    out[ex] = out.pop(bound)
        if "type" in out:
            types = out["type"] if isinstance(out["type"], list) else [out["type"]]
            for t in types:
                if t not in _TYPES:
                    raise self.bad("type", ptr, f"unknown type {t!r}")
        return out

    def unevaluated(self, out: dict[str, Any], kind: str, ptr: str) -> dict[str, Any]:
        """``unevaluatedProperties``/``unevaluatedItems`` lowered
        (:mod:`.json_schema_unevaluated`), or refused."""
        try:
            return lower_unevaluated(out, kind, lambda ref: self.resolve(ref, ptr)[0],
                                     lambda s: self.complement(s, ptr),
                                     lambda alts: self.exclusive(alts, ptr), self.old_draft)
        except Unlowerable as e:
            self.refuse("unevaluated" + kind, ptr, f"what is evaluated is not known "
                                                   f"without the instance: {e}")
            return {k: v for k, v in out.items() if k != "unevaluated" + kind}

    def dependent_schemas(self, out: dict[str, Any], ptr: str) -> None:
        """``dependentSchemas`` (and draft 7's ``dependencies``, whose lists of names go to
        ``dependentRequired``) as ``allOf`` parts: a key absent, or present and the schema
        holds."""
        deps = out.pop("dependencies", {})
        schemas = out.pop("dependentSchemas", {})
        if not isinstance(deps, dict) or not isinstance(schemas, dict):
            raise self.bad("dependencies" if not isinstance(deps, dict) else "dependentSchemas",
                           ptr, "must be an object")
        if not all(isinstance(v, list | dict | bool) for v in deps.values()):
            raise self.bad("dependencies", ptr, "must map names to arrays of names or schemas")
        names = out.get("dependentRequired", {})
        for k, v in deps.items():
            if isinstance(v, dict) and not set(v) - _ANNOTATIONS - {"required"}:
                v = v.get("required", [])  # a schema of only required: names
            if isinstance(v, list) and isinstance(names, dict):
                names = {**names, k: [*names.get(k, []), *v]}
            else:
                schemas = {**schemas, k: {"allOf": [schemas[k], v]} if k in schemas else v}
        if not all(isinstance(s, dict | bool) for s in schemas.values()):
            raise self.bad("dependentSchemas", ptr, "must map names to schemas")
        if names:
            out["dependentRequired"] = names
        out["allOf"] = [*out.get("allOf", []), *(
            {"anyOf": [{"properties": {k: False}}, {"allOf": [{"required": [k]}, s]}]}
            for k, s in schemas.items())]
        if not out["allOf"]:
            out.pop("allOf")

    def complements(self, out: dict[str, Any], ptr: str) -> None:
        """``not`` and ``if``/``then``/``else`` as ``allOf`` parts, through the complement
        :func:`negate` writes; refused where it writes none."""
        parts: list[Any] = []
        if "not" in out:
            neg = self.note(self.complement(out.pop("not"), ptr), ptr)
            if neg is None:
                self.refuse("not", ptr, "supported over type, const/enum, required, properties, "
                                        "number bounds, multipleOf, string lengths (and "
                                        "anyOf/allOf/$ref of those) only")
            else:
                parts.append(neg)
        if "if" in out:
            cond, then, other = out.pop("if"), out.pop("then", True), out.pop("else", True)
            neg = self.note(self.complement(cond, ptr), ptr)
            if neg is None:
                self.refuse("if", ptr, "supported where the condition is over type, "
                                       "const/enum, required, properties, number bounds, "
                                       "multipleOf, string lengths (and anyOf/allOf/$ref of "
                                       "those) only")
            else:
                parts.append({"anyOf": [{"allOf": [cond, then]}, {"allOf": [neg, other]}]})
        if parts:
            out["allOf"] = [*out.get("allOf", []), *parts]

    def disjunction(self, schema: dict[str, Any], ptr: str) -> str:
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        branch_sets: list[list[tuple[Any, str]]] = []
        for kw in ("anyOf", "oneOf"):
            if kw not in schema:
                continue
            alts = schema[kw]
            if not isinstance(alts, list) or not alts:
                raise self.bad(kw, ptr, "must be a non-empty array of schemas")
            subs = [(a, _ptr_join(self.user_ptr(kw, ptr), kw, i)) for i, a in enumerate(alts)]
            if kw == "oneOf" and len(subs) > 1 and not self.exclusive([a for a, _ in subs], ptr):
                subs = self.exactly_one(subs, ptr)
            branch_sets.append(subs)
        combos: list[list[tuple[Any, str]]] = [[]]
        for subs in branch_sets:
            combos = [[*c, s] for c in combos for s in subs]
            if len(combos) > 256:
                raise self.bad("anyOf", ptr, "more than 256 combinations of anyOf/oneOf branches")
        name = self.b.fresh("any_of")
        head = [self.note(base, ptr)] if set(base) - _ANNOTATIONS else []
        alts_out = []
        for combo in combos:
            parts = head + [s for s, _ in combo]
            sub_ptr = self.at(*combo[-1])
            if len(parts) == 1:
                alts_out.append((self.value(parts[0], sub_ptr),))
            else:
                alts_out.append((self.value({"allOf": parts}, sub_ptr),))
        return self.rule(name, *alts_out)

    def exactly_one(self, subs: list[tuple[Any, str]], ptr: str) -> list[tuple[Any, str]]:
        """``oneOf`` branches that may overlap, as ``anyOf`` branches: each one with the
        complements of the others (:func:`negate`); refused where one has no complement."""
        negs = [self.note(self.complement(a, ptr), p) for a, p in subs]
        if any(n is None for n in negs) or len(subs) > 8:
            self.refuse("oneOf", ptr, "its branches may overlap, and gramask cannot write the "
                                      "complement of each of them (see not), or there are "
                                      "more than 8")
            return subs
        return [({"allOf": [a, *(n for j, n in enumerate(negs) if j != i)]}, p)
                for i, (a, p) in enumerate(subs)]

    def exclusive(self, alts: list[Any], ptr: str) -> bool:
        """Whether no value can match two of ``alts`` (by type, const/enum, or a required
        property whose const/enum values differ)."""
        infos = [self.shallow(a, ptr) for a in alts]
        for i in range(len(infos)):
            for j in range(i + 1, len(infos)):
                if not _disjoint(infos[i], infos[j]):
                    return False
        return True

    def shallow(self, schema: Any, ptr: str, depth: int = 0) -> Any:
        """The schema with a top-level $ref resolved (for overlap checks)."""
        while isinstance(schema, dict) and "$ref" in schema and depth < 32:
            schema, ptr = self.resolve(schema["$ref"], ptr)
            depth += 1
        return schema

    # ------------------------------------------------------------------ allOf
    def merge_all(self, schema: dict[str, Any], ptr: str, stack: list[str]
                  ) -> tuple[dict[str, Any], dict[str, str]]:
        """The parts of ``allOf`` merged, and the pointer of the part each keyword came from."""
        merged: dict[str, Any] = {}
        origin: dict[str, str] = {}
        for part, pptr in self.flatten(schema, ptr, stack):
            merged = self.merge(merged, part, pptr)
            for k in part:
                origin.setdefault(k, pptr)
        return merged, origin

    def flatten(self, schema: Any, ptr: str, stack: list[str]) -> list[tuple[Any, str]]:
        ptr = self.at(schema, ptr)
        if schema is True:
            return []
        if schema is False:
            return [({"type": []}, ptr)]
        if not isinstance(schema, dict):
            raise GrammarError(f"JSON Schema at {ptr}: a schema must be an object or a boolean")
        schema = self.check_keywords(schema, ptr)
        out: list[tuple[Any, str]] = []
        rest = {k: v for k, v in schema.items() if k not in ("allOf", "$ref")}
        if "$ref" in schema:
            target, tptr = self.resolve(schema["$ref"], ptr)
            if tptr in stack:
                raise self.bad("allOf", ptr, f"the recursive $ref {schema['$ref']!r} inside allOf "
                                             "is not supported")
            out += self.flatten(target, tptr, [*stack, tptr])
            if self.ref_siblings_ignored:
                return out
        for i, sub in enumerate(schema.get("allOf", [])):
            out += self.flatten(sub, _ptr_join(ptr, "allOf", i), stack)
        if set(rest) - _ANNOTATIONS:
            out.append((rest, ptr))
        return out

    def merge(self, a: dict[str, Any], b: dict[str, Any], ptr: str) -> dict[str, Any]:
        """The conjunction of two flattened schemas, as one schema."""
        out = dict(a)
        for k, v in b.items():
            if k in _ANNOTATIONS or k in ("properties", "additionalProperties",
                                          "patternProperties") or (
                    k in ("prefixItems", "items") and not self.old_draft):
                continue  # object keywords, and tuples: merged below together
            if k not in out:
                out[k] = v
                continue
            cur = out[k]
            if k == "type":
                ta = set(cur if isinstance(cur, list) else [cur])
                tb = set(v if isinstance(v, list) else [v])
                both = (ta & tb) | ({"integer"} if ("integer" in ta and "number" in tb)
                                    or ("number" in ta and "integer" in tb) else set())
                out[k] = sorted(both)
            elif k in ("enum", "const"):
                if k == "const":
                    cur, v = [cur], [v]
                keep = {_canon(x) for x in v}
                out[k] = [x for x in cur if _canon(x) in keep] if k == "enum" else cur[0]
                if k == "const" and _canon(cur[0]) not in keep:
                    out["type"] = []
            elif k == "required":
                out[k] = list(dict.fromkeys([*cur, *v]))
            elif k in (EXCEPT, NOT_PATTERN):
                out[k] = sorted({*cur, *v})
            elif k == "dependentRequired" and isinstance(cur, dict) and isinstance(v, dict):
                out[k] = {d: list(dict.fromkeys([*cur.get(d, []), *v.get(d, [])]))
                          for d in {**cur, **v}}
            elif k in ("minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"):
                out[k] = max(cur, v)
            elif k in ("maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"):
                out[k] = min(cur, v)
            elif k in ("anyOf", "oneOf"):
                out[k] = [{"allOf": [x, y]} for x in cur for y in v]
                if k == "oneOf":
                    if not self.exclusive(cur, ptr) or not self.exclusive(v, ptr):
                        self.refuse("oneOf", ptr, "its branches may overlap")
                    out["anyOf" if "anyOf" not in out else k] = out.pop(k)
            elif k == "items" and isinstance(cur, dict | bool) and isinstance(v, dict | bool):
                out[k] = {"allOf": [cur, v]}
            elif k == "multipleOf" and _positive(cur) and _positive(v):
                if any(isinstance(x, float) and float_divisor_kind(x) != "dyadic"
                       for x in (cur, v)):  # jsonschema divides by each as a double
                    self.refuse(k, ptr, f"the allOf branches' divisors {cur} and {v}: one is "
                                        "a float that is no double exactly, which jsonschema "
                                        "divides by on its own")
                lcm = decimal_lcm(decimal_of(cur), decimal_of(v))
                out[k] = (int(lcm) if lcm == lcm.to_integral_value() else float(lcm))
                if decimal_of(out[k]) != lcm:  # (a float reads back as another decimal)
                    self.refuse(k, ptr, f"the allOf branches' divisors {cur} and {v} have a "
                                        f"least common multiple ({lcm}) no float spells")
            elif _canon(cur) != _canon(v):
                internal = k in (NOT_MULTIPLE, FRACTIONS)  # (a complement's: the user's not)
                self.refuse("not" if internal else k, ptr,
                            ("two complements of multipleOf (by different divisors)" if internal
                             else "two allOf branches give it different values") + ", which "
                            "gramask cannot merge")
        if not self.old_draft:
            merge_tuples(a, b, out, lambda kw: self.bad(kw, ptr, "must be an array of schemas"))
        # items after prefixItems on one side constrain every element on the other
        arr_a = {x for x in ("prefixItems", "items", "additionalItems") if x in a}
        arr_b = {x for x in ("prefixItems", "items", "additionalItems") if x in b}
        if self.old_draft and arr_a and arr_b and ("prefixItems" in arr_a | arr_b or "additionalItems" in
                                arr_a | arr_b or isinstance(a.get("items"), list)
                                or isinstance(b.get("items"), list)):
            self.refuse("prefixItems" if "prefixItems" in arr_a | arr_b else "items", ptr,
                        "tuple-form items in two allOf branches cannot be merged")
        # object keywords: a key's schema is the conjunction of what each side says of it
        merge_objects(a, b, out, lambda why: self.refuse("patternProperties", ptr, why))
        return out

    # ------------------------------------------------------------------ one schema
    def plain(self, schema: dict[str, Any], ptr: str) -> str:
        name = self.b.fresh("value")
        if "type" in schema:
            t = schema["type"]
            types = set(t if isinstance(t, list) else [t])
        else:
            types = set(_TYPES)
        if "number" in types:
            types.discard("integer")
        if "enum" in schema or "const" in schema:
            return self.enumerated(schema, ptr, types, name)
        alts: list[tuple[str, ...]] = []
        for t in sorted(types):
            if t == "null":
                alts.append((self.lit("null"),))
            elif t == "boolean":
                alts += [(self.lit("true"),), (self.lit("false"),)]
            else:
                sym = {"object": self.object, "array": self.array, "string": self.string,
                       "number": self.real, "integer": self.integer}[t](schema, ptr)
                if sym:
                    alts.append((sym,))
        return self.rule(name, *alts)

    def enumerated(self, schema: dict[str, Any], ptr: str, types: set[str], name: str) -> str:
        if "enum" in schema and not isinstance(schema["enum"], list):
            raise self.bad("enum", ptr, "must be an array")
        values = list(listed_values(schema))
        if EXCEPT in schema:  # a complement's "none of these strings" (json_schema_negation)
            values = [v for v in values if not (isinstance(v, str) and v in schema[EXCEPT])]
        others = set(schema) - _ANNOTATIONS - {"type", "enum", "const", EXCEPT}
        for kw in sorted(others):
            kept = _kept_values(values, kw, schema[kw])
            if kept is None:  # (a complement's keyword: the user's not/if)
                self.refuse("not" if kw in (NOT_MULTIPLE, NOT_PATTERN, FRACTIONS) else kw, ptr,
                            "together with enum/const is supported for number bounds, "
                            "string lengths, patterns, formats, multipleOf, and keywords "
                            "no listed value's type has")
            else:
                values = kept
        alts = []
        for v in values:
            jtype = _json_type(v)
            if jtype in types or (jtype == "integer" and "number" in types):
                alts.append((self.const(v),))
        return self.rule(name, *alts)


def grammar_from_json_schema(schema: Mapping[str, Any] | bool | str,
                             options: JsonSchemaOptions | None = None) -> GrammarParts:
    """The grammar of the JSON texts valid under ``schema`` (a dict, bool or JSON text).

    Raises
    ------
    GrammarError
        The schema is not valid JSON / not a schema, uses a keyword gramask cannot enforce
        (naming it and its JSON pointer), or no value satisfies it.
    """
    opt = options or JsonSchemaOptions()
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise GrammarError(f"JSON Schema: not valid JSON: {e.msg}", line=e.lineno,
                               column=e.colno) from None
    comp = _Compiler(schema, opt)
    start = comp.b.fresh("start")
    comp.rule(start, (comp.value(comp.root, "#"),))
    try:
        return comp.b.parts(start, source=SOURCE, lexer="contextual")
    except GrammarError as e:
        if e.name != start:
            raise
        raise GrammarError(  # (not the generated start rule's name: the user never wrote it)
            "JSON Schema: no JSON value satisfies the schema (at '#': it is false, or every "
            "branch is false or contradicts itself)") from None


def json_value_grammar(*, object_only: bool = False, whitespace: str = "flexible") -> GrammarParts:
    """Any JSON value (or any JSON object): what ``json_object`` requests ask for."""
    schema: dict[str, Any] = {"type": "object"} if object_only else {}
    return grammar_from_json_schema(schema, JsonSchemaOptions(whitespace=whitespace))


_HOLDS = {"minimum": lambda v, b: v >= b, "maximum": lambda v, b: v <= b,
          "exclusiveMinimum": lambda v, b: v > b, "exclusiveMaximum": lambda v, b: v < b,
          "minLength": lambda v, b: len(v) >= b, "maxLength": lambda v, b: len(v) <= b}


def _kept_values(values: list[Any], kw: str, arg: Any) -> list[Any] | None:
    """The ``enum``/``const`` values that keyword ``kw`` beside them keeps; None where that
    is not decided here (a pattern, a format, ``multipleOf``, an object or array keyword, on
    values of the type it applies to)."""
    applies: Callable[[Any], bool] = (
        is_json_number if kw in (*_NUMBER_KW, NOT_MULTIPLE, FRACTIONS) else (lambda v: isinstance(v, str)) if kw in _STRING_KW
        else (lambda v: isinstance(v, dict)) if kw in _OBJECT_KW
        else (lambda v: isinstance(v, list)) if kw in (*_ARRAY_KW, "contains", "minContains",
                                                      "maxContains")
        else (lambda v: True))
    if not any(applies(v) for v in values):
        return values  # it constrains no value listed
    if kw in _HOLDS and (is_json_number(arg) if kw in _NUMBER_KW else isinstance(arg, int)):
        return [v for v in values if not applies(v) or _HOLDS[kw](v, arg)]
    if kw in ("pattern", NOT_PATTERN):  # matching in both readings; (not) in either
        try:
            ahead = jt.pattern_lookaheads(arg, "") if kw == "pattern" else None
            if ahead is not None:  # every part matched, in both readings, and no (?!B)
                yes, no = ([jt.pattern_test(r) for r in rs] for rs in ahead)
                return [v for v in values if not applies(v)
                        or (all(t(v) for t in yes) and not any(t(v) for t in no))]
            pats = [arg] if kw == "pattern" else list(arg)
            tests = [jt.pattern_test(jt.pattern_regex(p, f"pattern {p!r}",
                                                      wide=kw == NOT_PATTERN)) for p in pats]
        except (jt.PatternError, TypeError):
            return None
        if kw == "pattern":
            return [v for v in values if not applies(v) or all(t(v) for t in tests)]
        return [v for v in values if not applies(v) or not any(t(v) for t in tests)]
    if kw == "format" and arg in FORMATS:  # (simple regexes: re reads them alike)
        return [v for v in values if not applies(v) or re.fullmatch(FORMATS[arg], v)]
    if kw in ("multipleOf", NOT_MULTIPLE) and _positive(arg):  # in both readings: exactly,
        # as decimals, and as jsonschema's floats
        want = kw == "multipleOf"
        return [v for v in values if not applies(v)
                or is_multiple(decimal_of(v), decimal_of(arg)) == want
                == is_multiple_as_floats(v, arg)]
    return None


_COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
           "minContains", "maxContains")


def _positive(v: Any) -> bool:
    return is_json_number(v) and math.isfinite(v) and v > 0
