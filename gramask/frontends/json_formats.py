"""What JSON Schema's ``format`` values mean as regexes over the decoded string, and when two
schemas provably share no value (``oneOf`` is taken only then)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["FORMATS", "UNSUPPORTED_FORMATS", "disjoint", "json_type"]


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def listed_values(schema: dict[str, Any]) -> Any:
    """The values a schema's ``enum`` and ``const`` leave: with both, the enum's values equal
    to the const. An ``enum`` that is not a list is returned as it is (the caller names the
    error)."""
    values = schema["enum"] if "enum" in schema else [schema["const"]]
    if "const" in schema and "enum" in schema and isinstance(values, list):
        values = [v for v in values if _canon(v) == _canon(schema["const"])]
    return values


def is_json_number(v: Any) -> bool:
    """A decoded JSON number (``bool`` is an ``int`` subclass in Python, not a JSON number)."""
    return isinstance(v, int | float) and not isinstance(v, bool)


def json_type(v: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (a whole float is an integer)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


# years 0001-9999: RFC 3339 allows 0000, but Python's ``date`` (jsonschema's check, and what a
# client parses into) starts at year 1
_YEAR = r"(?:[1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_DATE = (rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
         r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
         r"|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][48]|[2468]0|[13579][26])00)"
         r"-02-29)")
_TIME = (r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?"
         r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,60}[A-Za-z0-9])?"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_H16 = r"[0-9a-fA-F]{1,4}"
_IPV6 = "(?:" + "|".join([
    rf"(?:{_H16}:){{7}}{_H16}",
    rf"(?:{_H16}:){{1,7}}:",
    rf"(?:{_H16}:){{1,6}}:{_H16}",
    rf"(?:{_H16}:){{1,5}}(?::{_H16}){{1,2}}",
    rf"(?:{_H16}:){{1,4}}(?::{_H16}){{1,3}}",
    rf"(?:{_H16}:){{1,3}}(?::{_H16}){{1,4}}",
    rf"(?:{_H16}:){{1,2}}(?::{_H16}){{1,5}}",
    rf"{_H16}:(?::{_H16}){{1,6}}",
    rf":(?:(?::{_H16}){{1,7}}|:)",
]) + ")"
# RFC 3986's URI grammar, exactly (a URI's ASCII spelling; jsonschema checks "uri" with the
# rfc3987 or rfc3986-validator package where one is installed, both built from that grammar):
# after "//" an authority, whose port is digits (``http://a:b:c`` is no URI), then a path;
# without one, a path that does not start with "//"
_PCT = r"%[0-9A-Fa-f]{2}"
_SUB = r"A-Za-z0-9\-._~!$&'()*+,;="  # unreserved and sub-delims
_PCHAR = rf"(?:[{_SUB}:@]|{_PCT})"
_AUTHORITY = (rf"(?:(?:[{_SUB}:]|{_PCT})*@)?(?:\[{_IPV6}\]|(?:[{_SUB}]|{_PCT})*)"
              r"(?::[0-9]*)?")
_ABEMPTY = rf"(?:/{_PCHAR}*)*"
_ROOTLESS = rf"{_PCHAR}+{_ABEMPTY}"
_QUERY = rf"(?:{_PCHAR}|[/?])*"
_TAIL = rf"(?:\?{_QUERY})?(?:#{_QUERY})?"
_URI = (rf"[A-Za-z][A-Za-z0-9+.\-]*:(?://{_AUTHORITY}{_ABEMPTY}|/(?:{_ROOTLESS})?|{_ROOTLESS})?"
        rf"{_TAIL}")
# a relative reference: its first segment without ":" (else it would read as a scheme)
_NOSCHEME = rf"(?:[{_SUB}@]|{_PCT})+{_ABEMPTY}"
_URI_REFERENCE = (rf"(?:{_URI}|(?://{_AUTHORITY}{_ABEMPTY}|/(?:{_ROOTLESS})?|{_NOSCHEME})?"
                  rf"{_TAIL})")
_EMAIL = (r"[A-Za-z0-9!#$%&'*+=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+=?^_`{|}~-]+)*"
          rf"@{_LABEL}(?:\.{_LABEL}){{0,3}}")
_JSON_POINTER = r"(?:/(?:[^/~]|~[01])*)*"
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARSPEC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*(?::[1-9][0-9]{{0,3}}|\*)?"

def _regex_format(depth: int) -> str:
    """Regexes that both Python's ``re`` (jsonschema's check) and ECMA 262 compile: literals,
    escapes, ``.``, classes of characters and of the ranges a-z, A-Z, 0-9, groups nested up
    to ``depth``, alternation, one quantifier per atom (``{n,m}`` only where it cannot be
    reversed), anchors unquantified; a regular subset (nesting is not regular)."""
    esc = r"\\[\\.^$*+?()\[\]{}|/dDwWsSntrf]"
    item = r"(?:a-z|A-Z|0-9|[^\]\\\[\-\n^]|\\[\\\]\[\-^dDwWsSntrf])"
    atom = rf"(?:[^\\.^$*+?()\[\]{{}}|]|{esc}|\.|\[\^?{item}+\])"
    quant = r"(?:[*+?]|\{(?:[0-9]{1,3},?|0,[0-9]{1,3}|1,[1-9][0-9]{0,2})\})\??"
    alt = ""
    for _ in range(depth + 1):
        group = rf"|\((?:\?:)?{alt}\)" if alt else ""
        piece = rf"(?:(?:{atom}{group})(?:{quant})?|\^|\$|\\[bB])"
        alt = rf"{piece}*(?:\|{piece}*)*"
    return alt


# the formats: regexes over the decoded string, all ASCII without characters JSON escapes
FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": _DATE + "T" + _TIME,
    "duration": (r"P(?:(?:[0-9]+Y(?:[0-9]+M)?(?:[0-9]+D)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)"
                 r"(?:T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S))?"
                 r"|T(?:[0-9]+H(?:[0-9]+M)?(?:[0-9]+S)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)"
                 r"|[0-9]+W)"),
    "email": _EMAIL,
    # at most 4 labels of at most 62 characters: never over the 253-character limit
    "hostname": rf"{_LABEL}(?:\.{_LABEL}){{0,3}}",
    "ipv4": rf"{_OCTET}(?:\.{_OCTET}){{3}}",
    "ipv6": _IPV6,
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "uri": _URI,
    # the URIs (an IRI may also hold non-ASCII characters: rejected here), and relative
    # references
    "iri": _URI,
    "uri-reference": _URI_REFERENCE,
    "iri-reference": _URI_REFERENCE,
    # ASCII addresses: jsonschema asks only for an "@"
    "idn-email": _EMAIL,
    "json-pointer": _JSON_POINTER,
    "relative-json-pointer": rf"(?:0|[1-9][0-9]*)(?:#|{_JSON_POINTER})",
    # RFC 6570: literals, and expressions of variables with their modifiers (ASCII)
    "regex": _regex_format(2),
    "uri-template": (r"(?:[!#$&()*+,\-./0-9:;=?@A-Z\[\]_a-z~]|%[0-9A-Fa-f]{2}"
                     rf"|\{{[+#./;?&]?{_VARSPEC}(?:,{_VARSPEC})*\}})*"),
}
# formats the jsonschema package can check that gramask does not enforce (refused); any
# other format is unknown, and only annotates (jsonschema's FormatChecker ignores it too)
UNSUPPORTED_FORMATS = frozenset({"idn-hostname", "color", "host-name", "ip-address"})


def _types_of(schema: Any, depth: int = 0) -> set[str] | None:
    """The types a value of ``schema`` may have (None: any): its ``const``/``enum``/``type``,
    or, without those, the union of its ``anyOf``/``oneOf`` branches' (a ``$ref`` among them,
    unresolved here, is any type)."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return {json_type(schema["const"])}
    if "enum" in schema and isinstance(schema["enum"], list):
        return {json_type(v) for v in schema["enum"]}
    t = schema.get("type")
    if t is None:
        for kw in ("anyOf", "oneOf"):
            alts = schema.get(kw)
            if isinstance(alts, list) and alts and depth < 8:
                each = [set() if x is False else _types_of(x, depth + 1) for x in alts]
                if all(ts is not None for ts in each):
                    return set().union(*each)  # type: ignore[arg-type]
        return None
    ts = set(t if isinstance(t, list) else [t])
    if "number" in ts:
        ts.add("integer")
    if "integer" in ts:
        ts.add("number_int")
    return ts


def _forbids(schema: dict[str, Any], key: str) -> bool:
    """Whether no object ``schema`` accepts has the property ``key`` (it is closed without
    it, or its ``properties`` give it ``false``)."""
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return False
    if key in props:
        return props[key] is False
    return schema.get("additionalProperties") is False and not schema.get("patternProperties")


def _values_of(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return {_canon(schema["const"])}
    if "enum" in schema and isinstance(schema["enum"], list):
        return {_canon(v) for v in schema["enum"]}
    return None


def disjoint(a: Any, b: Any) -> bool:
    """Conservative: True only if no JSON value can satisfy both schemas."""
    if a is False or b is False:
        return True
    ta, tb = _types_of(a), _types_of(b)
    if ta is not None and tb is not None:
        norm = {"integer": "number", "number_int": "number"}
        if not ({norm.get(t, t) for t in ta} & {norm.get(t, t) for t in tb}):
            return True
    va, vb = _values_of(a), _values_of(b)
    if va is not None and vb is not None and not (va & vb):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        if {"object"} in (ta, tb):  # a value of both is an object: one that has a key the
            # other requires, where the other forbids it, is none
            for x, y in ((a, b), (b, a)):
                req = x.get("required", [])
                if isinstance(req, list) and any(isinstance(k, str) and _forbids(y, k)
                                                 for k in req):
                    return True
        pa, pb = a.get("properties", {}), b.get("properties", {})
        ra, rb = set(a.get("required", [])), set(b.get("required", []))
        for k in ra & rb:
            if k in pa and k in pb:
                xa, xb = _values_of(pa[k]), _values_of(pb[k])
                if xa is not None and xb is not None and not (xa & xb):
                    return True
    return False
