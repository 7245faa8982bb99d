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
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ..errors import GrammarError
from . import json_text as jt
from .bnf import GrammarBuilder, GrammarParts
from .json_formats import FORMATS as _FORMATS
from .json_formats import disjoint as _disjoint
from .json_formats import json_type as _json_type

__all__ = ["JsonSchemaOptions", "SchemaWarning", "grammar_from_json_schema", "json_value_grammar"]

WHITESPACE_MODES = ("flexible", "compact")


class SchemaWarning(UserWarning):
    """A keyword was ignored because the schema was compiled with ``lenient=True``."""


@dataclass(frozen=True)
class JsonSchemaOptions:
    """How a schema becomes a grammar.

    whitespace
        ``"flexible"``: any JSON whitespace between tokens (as llguidance); ``"compact"``:
        none, the form ``json.dumps(x, separators=(",", ":"))`` writes.
    additional_properties
        What an object without ``additionalProperties`` allows besides its ``properties``:
        ``True`` is the standard's reading; ``False`` keeps models from inventing keys.
    lenient
        Ignore keywords gramask cannot enforce (with a :class:`SchemaWarning`) instead of
        refusing the schema.
    max_rules
        Refuse schemas whose counted repeats (``maxItems: 10000``) would need more rules.
    """

    whitespace: str = "flexible"
    additional_properties: bool = True
    lenient: bool = False
    max_rules: int = 50_000


# keywords that only annotate (or hold definitions referenced by pointer)
_ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "$anchor", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
    "contentMediaType", "contentEncoding", "$vocabulary", "discriminator", "example",
    "nullable_annotation",
})
_ENFORCED = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minProperties", "maxProperties", "uniqueItems",
})
# known keywords gramask does not enforce: refused (unknown keywords are ignored, as the
# specification says)
_REFUSED = frozenset({
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "dependencies",
    "propertyNames", "contains", "minContains", "maxContains", "unevaluatedProperties",
    "unevaluatedItems", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor",
    "contentSchema",
})
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
_STRING_KW = ("minLength", "maxLength", "pattern", "format")
_NUMBER_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_OBJECT_KW = ("properties", "required", "additionalProperties", "patternProperties",
              "minProperties", "maxProperties")
_ARRAY_KW = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems")
_MAX_BOUND = 10**30
# minLength/maxLength are counted by the string terminal's automaton: ~20 byte states (escapes,
# UTF-8 continuations) per counted character, and every lexer state costs a vocabulary walk
MAX_COUNTED_LENGTH = 64

def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _ptr_join(ptr: str, *parts: object) -> str:
    for p in parts:
        ptr += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return ptr


class _Compiler:
    def __init__(self, root: Any, options: JsonSchemaOptions) -> None:
        self.root = root
        self.opt = options
        self.b = GrammarBuilder()
        self.memo: dict[str, str] = {}
        self.ref_rules: dict[str, str] = {}
        self.any_rule: str | None = None
        self.n_rules = 0
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = any(d in str(schema_uri) for d in ("draft-03", "draft-04", "draft-06",
                                                             "draft-07", "draft/2019-09"))
        self.ref_siblings_ignored = any(d in str(schema_uri) for d in ("draft-03", "draft-04",
                                                                       "draft-06", "draft-07"))
        self.draft4 = any(d in str(schema_uri) for d in ("draft-03", "draft-04"))
        if options.whitespace not in WHITESPACE_MODES:
            raise GrammarError(f"whitespace must be one of {', '.join(WHITESPACE_MODES)}, "
                               f"not {options.whitespace!r}")
        if options.whitespace == "flexible":
            self.b.terminal(r"[ \t\n\r]+", hint="WS", ignored=True)

    # ------------------------------------------------------------------ errors
    def refuse(self, keyword: str, ptr: str, why: str) -> None:
        """Refuse (or, lenient, warn about) a keyword gramask cannot enforce."""
        msg = f"JSON Schema keyword {keyword!r} at {ptr or '#'}: {why}"
        if self.opt.lenient:
            warnings.warn(f"gramask: ignored {msg}", SchemaWarning, stacklevel=5)
            return
        raise GrammarError(msg, name=keyword)

    def bad(self, keyword: str, ptr: str, why: str) -> GrammarError:
        return GrammarError(f"JSON Schema keyword {keyword!r} at {ptr or '#'}: {why}",
                            name=keyword)

    # ------------------------------------------------------------------ symbols
    def lit(self, text: str) -> str:
        return self.b.literal(text, hint={"{": "LBRACE", "}": "RBRACE", "[": "LSQB",
                                          "]": "RSQB", ",": "COMMA", ":": "COLON"}.get(text, text))

    def rule(self, lhs: str, *alts: tuple[str, ...]) -> str:
        self.n_rules += len(alts)
        if self.n_rules > self.opt.max_rules:
            raise GrammarError(f"JSON Schema: the grammar needs more than {self.opt.max_rules:,} "
                               "rules (counted repeats such as a large maxItems); refused")
        return self.b.rule(lhs, *alts)

    def string_terminal(self, text_regex: str, hint: str = "STRING", **spec: Any) -> str:
        """A JSON string terminal: ``regex`` (over the encoded text), or, with ``spec``, the
        automaton of the decoded language it names (``regex`` then only for reading)."""
        if not spec:
            return self.b.terminal(text_regex, hint=hint)
        return self.b.terminal(text_regex, hint=hint,
                               automaton=json.dumps(spec, sort_keys=True))

    # ------------------------------------------------------------------ any JSON value
    def any_value(self) -> str:
        if self.any_rule is not None:
            return self.any_rule
        v = self.any_rule = self.b.fresh("any")
        obj, arr = self.b.fresh("any_object"), self.b.fresh("any_array")
        members, elems = self.b.fresh("any_members"), self.b.fresh("any_elements")
        s = self.string_terminal(jt.JSON_STRING)
        n = self.b.terminal(jt.JSON_NUMBER, hint="NUMBER")
        self.rule(v, (obj,), (arr,), (s,), (n,), (self.lit("true"),), (self.lit("false"),),
                  (self.lit("null"),))
        self.rule(obj, (self.lit("{"), self.lit("}")), (self.lit("{"), members, self.lit("}")))
        self.rule(members, (s, self.lit(":"), v), (members, self.lit(","), s, self.lit(":"), v))
        self.rule(arr, (self.lit("["), self.lit("]")), (self.lit("["), elems, self.lit("]")))
        self.rule(elems, (v,), (elems, self.lit(","), v))
        return v

    def empty(self) -> str:
        """A rule with no alternatives: the empty language (pruned at the end)."""
        return self.b.fresh("nothing")

    # ------------------------------------------------------------------ references
    def resolve(self, ref: str, ptr: str) -> tuple[Any, str]:
        if not isinstance(ref, str):
            raise self.bad("$ref", ptr, "must be a string")
        if not ref.startswith("#"):
            self.refuse("$ref", ptr, f"only local references (#...) are supported, not {ref!r}")
            return True, ptr
        target: Any = self.root
        path = ref[1:]
        if path and not path.startswith("/"):
            self.refuse("$ref", ptr, f"anchor references ({ref!r}) are not supported")
            return True, ptr
        for raw in path.split("/")[1:]:
            part = unquote(raw).replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            elif isinstance(target, dict) and part in target:
                target = target[part]
            else:
                raise self.bad("$ref", ptr, f"{ref!r} points to nothing in the schema")
        return target, "#" + path

    def ref_rule(self, ref: str, ptr: str) -> str:
        target, tptr = self.resolve(ref, ptr)
        name = self.ref_rules.get(tptr)
        if name is None:
            name = self.ref_rules[tptr] = self.b.fresh("ref")
            self.rule(name, (self.value(target, tptr),))
        return name

    # ------------------------------------------------------------------ schemas
    def value(self, schema: Any, ptr: str) -> str:
        """The nonterminal of the values ``schema`` accepts."""
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
        schema = self.check_keywords(schema, ptr)
        if "$ref" in schema:
            siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in _ANNOTATIONS}
            if self.ref_siblings_ignored or not siblings:
                out = self.ref_rule(schema["$ref"], ptr)
            else:
                out = self.value({"allOf": [{"$ref": schema["$ref"]}, siblings]}, ptr)
        elif "allOf" in schema:
            out = self.value(self.merge_all(schema, ptr, []), ptr)
        elif "anyOf" in schema or "oneOf" in schema:
            out = self.disjunction(schema, ptr)
        else:
            out = self.plain(schema, ptr)
        self.memo[key] = out
        return out

    def check_keywords(self, schema: dict[str, Any], ptr: str) -> dict[str, Any]:
        out = dict(schema)
        if "$id" in schema and ptr not in ("#", "") and isinstance(schema["$id"], str) \
                and not schema["$id"].startswith("#"):
            # an embedded resource: $refs below it resolve against its URI, not the root
            self.refuse("$id", ptr, "embedded schema resources ($id below the root) are not "
                                    "supported")
        for k in schema:
            if k in _REFUSED:
                self.refuse(k, ptr, "not supported by gramask")
                out.pop(k)
        if out.get("uniqueItems") is True:
            if out.get("maxItems", 2) > 1:
                self.refuse("uniqueItems", ptr, "not supported by gramask (with maxItems > 1)")
            out.pop("uniqueItems")
        out.pop("uniqueItems", None)
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

    def disjunction(self, schema: dict[str, Any], ptr: str) -> str:
        base = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        branch_sets: list[list[tuple[Any, str]]] = []
        for kw in ("anyOf", "oneOf"):
            if kw not in schema:
                continue
            alts = schema[kw]
            if not isinstance(alts, list) or not alts:
                raise self.bad(kw, ptr, "must be a non-empty array of schemas")
            subs = [(a, _ptr_join(ptr, kw, i)) for i, a in enumerate(alts)]
            if kw == "oneOf" and len(subs) > 1 and not self.exclusive([a for a, _ in subs], ptr):
                self.refuse("oneOf", ptr, "its branches may overlap (gramask takes oneOf only "
                                          "where no value can match two branches)")
            branch_sets.append(subs)
        combos: list[list[tuple[Any, str]]] = [[]]
        for subs in branch_sets:
            combos = [[*c, s] for c in combos for s in subs]
            if len(combos) > 256:
                raise self.bad("anyOf", ptr, "more than 256 combinations of anyOf/oneOf branches")
        name = self.b.fresh("any_of")
        base_has = bool(set(base) - _ANNOTATIONS)
        alts_out = []
        for combo in combos:
            parts = ([base] if base_has else []) + [s for s, _ in combo]
            sub_ptr = combo[-1][1]
            if len(parts) == 1:
                alts_out.append((self.value(parts[0], sub_ptr),))
            else:
                alts_out.append((self.value({"allOf": parts}, sub_ptr),))
        return self.rule(name, *alts_out)

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
    def merge_all(self, schema: dict[str, Any], ptr: str, stack: list[str]) -> dict[str, Any]:
        parts = self.flatten(schema, ptr, stack)
        merged: dict[str, Any] = {}
        for part, pptr in parts:
            merged = self.merge(merged, part, pptr)
        return merged

    def flatten(self, schema: Any, ptr: str, stack: list[str]) -> list[tuple[Any, str]]:
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
                                          "patternProperties"):
                continue  # object keywords: merged below together
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
            elif k == "multipleOf" and isinstance(cur, int) and isinstance(v, int):
                out[k] = cur * v // math.gcd(cur, v)
            elif _canon(cur) != _canon(v):
                self.refuse(k, ptr, "two allOf branches give it different values, which "
                                    "gramask cannot merge")
        # items after prefixItems on one side constrain every element on the other
        arr_a = {x for x in ("prefixItems", "items", "additionalItems") if x in a}
        arr_b = {x for x in ("prefixItems", "items", "additionalItems") if x in b}
        if arr_a and arr_b and ("prefixItems" in arr_a | arr_b or "additionalItems" in
                                arr_a | arr_b or isinstance(a.get("items"), list)
                                or isinstance(b.get("items"), list)):
            self.refuse("prefixItems" if "prefixItems" in arr_a | arr_b else "items", ptr,
                        "tuple-form items in two allOf branches cannot be merged")
        # object keywords: a key's schema is the conjunction of what each side says of it
        obj_a = any(x in a for x in ("properties", "additionalProperties", "patternProperties"))
        obj_b = any(x in b for x in ("properties", "additionalProperties", "patternProperties"))
        if obj_a and obj_b:
            if "patternProperties" in a or "patternProperties" in b:
                self.refuse("patternProperties", ptr, "cannot be merged across allOf branches")
            pa, pb = a.get("properties", {}), b.get("properties", {})
            ad_a, ad_b = a.get("additionalProperties", True), b.get("additionalProperties", True)
            props = {}
            for key in dict.fromkeys([*pa, *pb]):
                props[key] = {"allOf": [pa.get(key, ad_a), pb.get(key, ad_b)]}
            out["properties"] = props
            if "additionalProperties" in a or "additionalProperties" in b:
                out["additionalProperties"] = {"allOf": [ad_a, ad_b]}
        elif obj_b:
            for x in ("properties", "additionalProperties", "patternProperties"):
                if x in b:
                    out[x] = b[x]
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
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        if "const" in schema and "enum" in schema:
            values = [v for v in values if _canon(v) == _canon(schema["const"])]
        others = set(schema) - _ANNOTATIONS - {"type", "enum", "const"}
        for kw in sorted(others):
            self.refuse(kw, ptr, "together with enum/const is not supported (gramask "
                                 "enforces enum/const with type only)")
        alts = []
        for v in values:
            jtype = _json_type(v)
            if jtype in types or (jtype == "integer" and "number" in types):
                alts.append((self.const(v),))
        return self.rule(name, *alts)

    def const(self, v: Any) -> str:
        key = "const:" + _canon(v)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if isinstance(v, str):
            out = self.string_terminal(jt.literal_string_regex(v), hint="S_" + v, words=[v])
        elif v is None or isinstance(v, bool | int | float):
            if isinstance(v, float) and not math.isfinite(v):
                raise GrammarError(f"JSON Schema: {v} is not a JSON value")
            out = self.lit(json.dumps(v))
        elif isinstance(v, list):
            out = self.b.fresh("const_array")
            seq: list[str] = [self.lit("[")]
            for i, x in enumerate(v):
                if i:
                    seq.append(self.lit(","))
                seq.append(self.const(x))
            self.rule(out, (*seq, self.lit("]")))
        else:
            out = self.b.fresh("const_object")
            seq = [self.lit("{")]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    seq.append(self.lit(","))
                seq += [self.key(k), self.lit(":"), self.const(x)]
            self.rule(out, (*seq, self.lit("}")))
        self.memo[key] = out
        return out

    def key(self, k: str) -> str:
        return self.string_terminal(jt.literal_string_regex(k), hint="K_" + k, words=[k])

    # ------------------------------------------------------------------ strings
    def string(self, schema: dict[str, Any], ptr: str) -> str:
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength")
        for kw, val in (("minLength", lo), ("maxLength", hi)):
            if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val < 0):
                raise self.bad(kw, ptr, "must be a non-negative integer")
        if hi is not None and lo > hi:
            return ""
        if max(lo, hi or 0) > MAX_COUNTED_LENGTH:
            self.refuse("maxLength" if (hi or 0) > MAX_COUNTED_LENGTH else "minLength", ptr,
                        f"string lengths above {MAX_COUNTED_LENGTH} are not supported (each "
                        "counted character costs the lexer some 20 states)")
            lo, hi = (lo if lo <= MAX_COUNTED_LENGTH else 0), (
                hi if hi is not None and hi <= MAX_COUNTED_LENGTH else None)
        spec: dict[str, Any] = {}
        if lo:
            spec["min"] = lo
        if hi is not None:
            spec["max"] = hi
        if "pattern" in schema and "format" in schema:
            self.refuse("format", ptr, "together with pattern is not supported")
        if "pattern" in schema:
            pat = schema["pattern"]
            if not isinstance(pat, str):
                raise self.bad("pattern", ptr, "must be a string")
            try:
                spec["regex"] = jt.pattern_regex(pat, _ptr_join(ptr, "pattern"))
            except jt.PatternError as e:
                self.refuse("pattern", ptr, str(e))
        elif "format" in schema:
            fmt = schema["format"]
            body = _FORMATS.get(fmt)
            if body is None:
                self.refuse("format", ptr, f"format {fmt!r} is not supported (supported: "
                                           f"{', '.join(sorted(_FORMATS))})")
            else:
                spec["regex"] = body
        if not spec:
            return self.string_terminal(jt.JSON_STRING)
        return self.string_terminal(jt.JSON_STRING, hint=str(schema.get("format", "STRING")),
                                    **spec)

    # ------------------------------------------------------------------ numbers
    def integer(self, schema: dict[str, Any], ptr: str) -> str:
        return self.number(schema, ptr, integer=True)

    def real(self, schema: dict[str, Any], ptr: str) -> str:
        return self.number(schema, ptr, integer=False)

    def number(self, schema: dict[str, Any], ptr: str, *, integer: bool) -> str:
        lo: Any = None
        hi: Any = None
        lo_incl = hi_incl = True
        for kw in _NUMBER_KW:
            v = schema.get(kw)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise self.bad(kw, ptr, "must be a number")
        if "minimum" in schema:
            lo = schema["minimum"]
        if "exclusiveMinimum" in schema and (lo is None or schema["exclusiveMinimum"] >= lo):
            lo, lo_incl = schema["exclusiveMinimum"], False
        if "maximum" in schema:
            hi = schema["maximum"]
        if "exclusiveMaximum" in schema and (hi is None or schema["exclusiveMaximum"] <= hi):
            hi, hi_incl = schema["exclusiveMaximum"], False
        for kw, bound in (("minimum", lo), ("maximum", hi)):
            if bound is not None and abs(bound) > _MAX_BOUND:
                self.refuse(kw, ptr, f"bounds beyond ±1e30 are not supported ({bound})")
                return ""
        mult = schema.get("multipleOf")
        if mult is not None:
            if mult <= 0:
                raise self.bad("multipleOf", ptr, "must be greater than 0")
            if float(mult).is_integer() and integer:
                mult = int(mult)
            elif float(mult).is_integer() and not integer and int(mult) == 1:
                integer, mult = True, 1  # number, multipleOf 1 = integer
            else:
                self.refuse("multipleOf", ptr, "only integer multipleOf on integers is "
                                               "supported")
                mult = None
        if integer:
            ilo = None if lo is None else (math.ceil(lo) if lo_incl else math.floor(lo) + 1)
            ihi = None if hi is None else (math.floor(hi) if hi_incl else math.ceil(hi) - 1)
            if mult is not None and mult != 1:
                rx = self.multiple_of(mult, ilo, ihi, ptr)
            else:
                rx = jt.integer_range_regex(ilo, ihi)
            return self.b.terminal(rx, hint="INTEGER") if rx else ""
        if lo is None and hi is None:
            return self.b.terminal(jt.JSON_NUMBER, hint="NUMBER")
        for kw, bound in (("minimum", lo), ("maximum", hi)):
            if bound is not None and not float(bound).is_integer():
                self.refuse(kw, ptr, f"non-integral bounds on numbers are not supported "
                                     f"({bound})")
                return self.b.terminal(jt.JSON_NUMBER, hint="NUMBER")
        rx = jt.number_range_regex(None if lo is None else int(lo), lo_incl,
                                   None if hi is None else int(hi), hi_incl)
        return self.b.terminal(rx, hint="NUMBER_RANGE") if rx else ""

    def multiple_of(self, k: int, lo: int | None, hi: int | None, ptr: str) -> str:
        """Integers divisible by ``k`` where k divides 10**j (a rule on the last j digits),
        or a short explicit list within a small range."""
        if lo is not None and hi is not None and hi - lo <= 2000:
            vals = [x for x in range(lo, hi + 1) if x % k == 0]
            return "(?:" + "|".join(str(x) for x in vals) + ")" if vals else ""
        j = next((j for j in range(1, 5) if 10**j % k == 0), None)
        if j is None or lo is not None or hi is not None:
            self.refuse("multipleOf", ptr, f"multipleOf {k} is supported only for divisors of "
                                           "10000 without bounds, or within a range of at most "
                                           "2000 integers")
            return jt.integer_range_regex(lo, hi)
        ends = [f"{x:0{j}d}" for x in range(0, 10**j, k)]  # last j digits of longer numbers
        short = [str(x) for x in range(k, 10**j, k)]  # the positive multiples below 10**j
        body = "(?:0|" + "|".join([*short, "[1-9][0-9]*(?:" + "|".join(ends) + ")"]) + ")"
        return f"-?{body}"

    # ------------------------------------------------------------------ arrays
    def array(self, schema: dict[str, Any], ptr: str) -> str:
        items = schema.get("items", True)
        if isinstance(items, list):
            if not self.old_draft:
                raise self.bad("items", ptr, "an array of schemas is draft 2019-09 and older "
                                             "(use prefixItems)")
            prefix = [(s, _ptr_join(ptr, "items", i)) for i, s in enumerate(items)]
            rest, rest_ptr = schema.get("additionalItems", True), _ptr_join(ptr,
                                                                            "additionalItems")
        else:
            pre = schema.get("prefixItems", []) if not self.old_draft else []
            prefix = [(s, _ptr_join(ptr, "prefixItems", i)) for i, s in enumerate(pre)]
            rest, rest_ptr = items, _ptr_join(ptr, "items")
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems")
        for kw, val in (("minItems", lo), ("maxItems", hi)):
            if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val < 0):
                raise self.bad(kw, ptr, "must be a non-negative integer")
        if hi is not None and lo > hi:
            return ""
        cap = max(len(prefix), lo, hi if hi is not None else 0, 1)
        if cap > 10_000:
            self.refuse("maxItems" if hi is not None and hi > 10_000 else "minItems", ptr,
                        "counts above 10,000 are not supported")
            cap, lo, hi = max(len(prefix), 1), 0, None
        elem_cache: dict[int, str] = {}

        def elem(i: int) -> str:  # the schema of element i
            j = min(i, len(prefix))
            if j not in elem_cache:
                s, p = prefix[j] if j < len(prefix) else (rest, rest_ptr)
                elem_cache[j] = self.value(s, p)
            return elem_cache[j]

        tails: dict[int, str] = {}

        def tail(i: int) -> str:  # after i >= 1 elements; states above cap repeat cap's
            if i in tails:
                return tails[i]
            t = tails[i] = self.b.fresh("items")
            alts: list[tuple[str, ...]] = []
            if i >= lo:
                alts.append(())
            if hi is None or i < hi:
                alts.append((self.lit(","), elem(i), tail(min(i + 1, cap))))
            self.rule(t, *alts)
            return t

        for i in range(cap, 0, -1):  # from the last state back: no deep recursion
            tail(i)
        alts: list[tuple[str, ...]] = []
        if lo == 0:
            alts.append((self.lit("["), self.lit("]")))
        if hi is None or hi >= 1:
            alts.append((self.lit("["), elem(0), tail(1), self.lit("]")))
        return self.rule(self.b.fresh("array"), *alts)

    # ------------------------------------------------------------------ objects
    def object(self, schema: dict[str, Any], ptr: str) -> str:
        props_in = schema.get("properties", {})
        if not isinstance(props_in, dict):
            raise self.bad("properties", ptr, "must be an object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise self.bad("required", ptr, "must be an array of strings")
        addl = schema.get("additionalProperties", self.opt.additional_properties)
        pats = schema.get("patternProperties", {})
        if not isinstance(pats, dict):
            raise self.bad("patternProperties", ptr, "must be an object")
        pat_items = [(p, s) for p, s in pats.items() if s is not False]
        if pats and addl is not False:
            self.refuse("patternProperties", ptr, "is supported only with "
                                                  "additionalProperties false")
        if len(pat_items) > 1:
            self.refuse("patternProperties", ptr, "more than one pattern is not supported")
            pat_items = pat_items[:1]
        pat_res = []
        for p, _ in pats.items():
            try:
                pat_res.append(re.compile(p))
            except re.error as e:
                raise self.bad("patternProperties", ptr, f"invalid pattern {p!r}: {e}") from None
        props: list[tuple[str, Any, str, bool]] = []
        for k, s in props_in.items():
            sp = _ptr_join(ptr, "properties", k)
            matched = [ps for (p, ps), rx in zip(pats.items(), pat_res, strict=True)
                       if rx.search(k)]
            if matched:
                s = {"allOf": [s, *matched]}
            props.append((k, s, sp, k in required))
        for k in required:
            if k not in props_in:
                matched = [ps for (p, ps), rx in zip(pats.items(), pat_res, strict=True)
                           if rx.search(k)]
                s = {"allOf": matched} if matched else addl
                props.append((k, s, _ptr_join(ptr, "additionalProperties"), True))
        defined = [k for k, *_ in props]
        extra: list[tuple[str, str]] = []  # (key terminal, value nonterminal)
        if pat_items:
            p, ps = pat_items[0]
            try:
                key_t = self.string_terminal(jt.JSON_STRING, hint="KEY_PATTERN", regex=(
                    jt.pattern_regex(p, _ptr_join(ptr, "patternProperties", p))))
            except jt.PatternError as e:
                self.refuse("patternProperties", ptr, str(e))
                key_t = self.string_terminal(jt.JSON_STRING)
            if any(re.search(p, k) for k in defined):
                self.refuse("patternProperties", ptr, "a pattern matching a key of properties "
                                                      "is not supported")
            extra.append((key_t,
                          self.value(ps, _ptr_join(ptr, "patternProperties", p))))
        elif addl is not False and not pats:
            key_t = (self.string_terminal(jt.JSON_STRING, hint="KEY", **{"except": defined})
                     if defined else self.string_terminal(jt.JSON_STRING))
            extra.append((key_t,
                          self.value(addl, _ptr_join(ptr, "additionalProperties"))))
        lo = schema.get("minProperties", 0)
        hi = schema.get("maxProperties")
        for kw, val in (("minProperties", lo), ("maxProperties", hi)):
            if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val < 0):
                raise self.bad(kw, ptr, "must be a non-negative integer")
        if hi is not None and lo > hi:
            return ""
        cap = max(lo, hi if hi is not None else 0, 1)
        n = len(props)
        if (n + 1) * (cap + 1) > self.opt.max_rules:
            raise self.bad("maxProperties" if hi else "minProperties", ptr,
                           "too many property-count states")
        values = [self.value(s, sp) for _, s, sp, _ in props]
        keys = [self.key(k) for k, *_ in props]
        states: dict[tuple[int, int], str] = {}
        comma, colon = self.lit(","), self.lit(":")

        def state(i: int, k: int) -> str:
            sk = (i, k)
            if sk in states:
                return states[sk]
            name = states[sk] = self.b.fresh("members")
            alts: list[tuple[str, ...]] = []
            sep: tuple[str, ...] = (comma,) if k else ()
            can_add = hi is None or k + 1 <= hi
            if i < n:
                if can_add:
                    alts.append((*sep, keys[i], colon, values[i], state(i + 1, min(k + 1, cap))))
                if not props[i][3]:
                    alts.append((state(i + 1, k),))
            else:
                if can_add:
                    for key_t, val in extra:
                        alts.append((*sep, key_t, colon, val, state(n, min(k + 1, cap))))
                if k >= lo:
                    alts.append(())
            self.rule(name, *alts)
            return name

        # build the states from the last property back, so recursion stays shallow
        for i in range(n, -1, -1):
            for k in range(cap, -1, -1):
                state(i, k)
        name = self.b.fresh("object")
        return self.rule(name, (self.lit("{"), state(0, 0), self.lit("}")))


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
    comp.rule(start, (comp.value(schema, "#"),))
    return comp.b.parts(start, source="<json schema>", lexer="contextual")


def json_value_grammar(*, object_only: bool = False, whitespace: str = "flexible") -> GrammarParts:
    """Any JSON value (or any JSON object): what ``json_object`` requests ask for."""
    schema: dict[str, Any] = {"type": "object"} if object_only else {}
    return grammar_from_json_schema(schema, JsonSchemaOptions(whitespace=whitespace))
