"""Two ``allOf`` parts' object and tuple keywords as one schema's: each key (each item)
takes what both parts say of it.

A key one part defines in ``properties`` takes, from the other, its ``properties`` schema,
else the schemas of the ``patternProperties`` that may match it (in either reading of the
pattern, :mod:`.json_text`), and its ``additionalProperties`` unless a pattern matches it in
both readings. The other keys take the patterns of both parts; that is exact while a part
with ``additionalProperties`` has every pattern of the other (a key of the other's pattern
then never falls to it), and refused otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import json_text as jt

__all__ = ["both", "merge_objects", "merge_tuples"]

_OBJ = ("properties", "additionalProperties", "patternProperties")


def both(x: Any, y: Any) -> Any:
    """The conjunction of two schemas (``true`` left out)."""
    return y if x is True else x if y is True else {"allOf": [x, y]}


def merge_tuples(a: dict[str, Any], b: dict[str, Any], out: dict[str, Any],
                 bad: Callable[[str], Exception]) -> None:
    """``prefixItems`` and ``items`` of two parts: item ``i`` takes what each part says of
    it (its prefix schema, or its ``items``)."""
    if not any(x in b for x in ("prefixItems", "items")):
        return
    pa, pb = a.get("prefixItems", []), b.get("prefixItems", [])
    if not isinstance(pa, list) or not isinstance(pb, list):
        raise bad("prefixItems")
    ra, rb = a.get("items", True), b.get("items", True)
    n = max(len(pa), len(pb))
    if n:
        out["prefixItems"] = [both(pa[i] if i < len(pa) else ra, pb[i] if i < len(pb) else rb)
                              for i in range(n)]
    if "items" in a or "items" in b:
        out["items"] = both(ra, rb)


def merge_objects(a: dict[str, Any], b: dict[str, Any], out: dict[str, Any],
                  refuse: Callable[[str], None]) -> None:
    """``properties``, ``patternProperties`` and ``additionalProperties`` of two parts into
    ``out`` (see the module docstring); ``refuse(why)`` where that is not exact."""
    if not any(x in b for x in _OBJ):
        return
    if not any(x in a for x in _OBJ):
        out.update({x: b[x] for x in _OBJ if x in b})
        return
    pats_a, pats_b = a.get("patternProperties", {}), b.get("patternProperties", {})
    ad_a, ad_b = a.get("additionalProperties", True), b.get("additionalProperties", True)
    if not isinstance(pats_a, dict) or not isinstance(pats_b, dict):
        refuse("patternProperties must be an object")
        return
    if (ad_a is not True and not set(pats_b) <= set(pats_a)) or (
            ad_b is not True and not set(pats_a) <= set(pats_b)):
        refuse("a part with additionalProperties lacks a pattern of the other part")
        return
    try:
        tests_a, tests_b = _tests(pats_a), _tests(pats_b)
    except jt.PatternError as e:
        refuse(str(e))
        return
    pa, pb = a.get("properties", {}), b.get("properties", {})
    out["properties"] = {
        key: both(_view(key, pa, pats_a, tests_a, ad_a), _view(key, pb, pats_b, tests_b, ad_b))
        for key in dict.fromkeys([*pa, *pb])}
    if pats_a or pats_b:
        out["patternProperties"] = {p: both(pats_a.get(p, True), pats_b.get(p, True))
                                    for p in dict.fromkeys([*pats_a, *pats_b])}
    if "additionalProperties" in a or "additionalProperties" in b:
        out["additionalProperties"] = both(ad_a, ad_b)


_Tests = list[tuple[Callable[[str], bool], Callable[[str], bool]]]


def _tests(pats: dict[str, Any]) -> _Tests:
    """Per pattern: (matches in both readings, matches in either)."""
    out: _Tests = []
    for p in pats:
        where = f"pattern {p!r}"
        out.append((jt.pattern_test(jt.pattern_regex(p, where)),
                    jt.pattern_test(jt.pattern_regex(p, where, wide=True))))
    return out


def _view(key: str, props: dict[str, Any], pats: dict[str, Any], tests: _Tests,
          addl: Any) -> Any:
    """What one part asks of the value of a key ``properties`` defines (in either part)."""
    if key in props:
        return props[key]
    out: Any = True
    for (_, maybe), schema in zip(tests, pats.values(), strict=True):
        if maybe(key):
            out = both(out, schema)
    if not any(surely(key) for surely, _ in tests):
        out = both(out, addl)
    return out
