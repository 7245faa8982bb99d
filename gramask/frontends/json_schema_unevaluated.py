"""``unevaluatedProperties`` and ``unevaluatedItems`` as ``additionalProperties`` and
``items`` over what the schema evaluates, where that is known without the instance.

A property (an item) is evaluated when a keyword of the schema, or of an in-place subschema
that holds (``allOf``, ``$ref``, the ``anyOf``/``oneOf`` branches that match, ``if`` and the
``then``/``else`` taken, ``dependentSchemas`` of a present key), evaluates it: ``properties``
and ``patternProperties`` their keys, ``additionalProperties`` and a nested
``unevaluatedProperties`` every key; ``prefixItems`` the first items, ``items`` and a nested
``unevaluatedItems`` every item, ``contains`` the items it matches. Which branches hold
depends on the instance, so the schema becomes ``anyOf`` of alternatives, each a condition
(the branches taken, with the complements of the ``oneOf`` branches left out and of a failed
``if``) and what is then evaluated, plus the keyword over the rest: for ``anyOf``, every set
of branches (up to 4 branches; beyond, each branch alone, which rejects a value that needs the
keys of two matching branches). An instance accepted through an alternative is valid: the
branches it names hold, so at least what it counts is evaluated.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Unlowerable", "lower_unevaluated"]

_MAX_ALTERNATIVES = 64
_MAX_SUBSET_BRANCHES = 4


class Unlowerable(Exception):
    """Why the evaluated set is not known here."""


@dataclass(frozen=True)
class _Evaluated:
    every: bool = False
    names: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    prefix: int = 0
    contains: tuple[Any, ...] = field(default=())

    def __or__(self, o: _Evaluated) -> _Evaluated:
        return _Evaluated(self.every or o.every, tuple(dict.fromkeys(self.names + o.names)),
                          tuple(dict.fromkeys(self.patterns + o.patterns)),
                          max(self.prefix, o.prefix), self.contains + o.contains)


_Alt = tuple[tuple[Any, ...], _Evaluated]  # (conditions, evaluated then)


def _product(parts: list[list[_Alt]]) -> list[_Alt]:
    out: list[_Alt] = [((), _Evaluated())]
    for alts in parts:
        out = [(c1 + c2, e1 | e2) for c1, e1 in out for c2, e2 in alts]
        if len(out) > _MAX_ALTERNATIVES:
            raise Unlowerable(f"more than {_MAX_ALTERNATIVES} combinations of branches")
    return out


class _Walker:
    def __init__(self, kind: str, resolve: Callable[[str], Any],
                 complement: Callable[[Any], Any], exclusive: Callable[[list[Any]], bool],
                 old_draft: bool) -> None:
        self.kind = kind  # "Properties" or "Items"
        self.resolve = resolve
        self.complement = complement
        self.exclusive = exclusive
        self.old_draft = old_draft

    def own(self, s: dict[str, Any]) -> _Evaluated:
        if self.kind == "Properties":
            if "additionalProperties" in s or "unevaluatedProperties" in s:
                return _Evaluated(every=True)
            props, pats = s.get("properties", {}), s.get("patternProperties", {})
            return _Evaluated(names=tuple(props) if isinstance(props, dict) else (),
                              patterns=tuple(pats) if isinstance(pats, dict) else ())
        items = s.get("items")
        if "unevaluatedItems" in s or (isinstance(items, dict | bool) and "items" in s) or (
                isinstance(items, list) and "additionalItems" in s):
            return _Evaluated(every=True)
        prefix = items if isinstance(items, list) else (
            [] if self.old_draft else s.get("prefixItems", []))
        contains = (s["contains"],) if "contains" in s else ()
        return _Evaluated(prefix=len(prefix) if isinstance(prefix, list) else 0,
                          contains=contains)

    def alternatives(self, s: Any, stack: tuple[str, ...]) -> list[_Alt]:
        if not isinstance(s, dict):
            return [((), _Evaluated())]
        parts: list[list[_Alt]] = [[((), self.own(s))]]
        if isinstance(s.get("$ref"), str):
            ref = s["$ref"]
            if ref in stack:
                raise Unlowerable(f"the $ref {ref!r} evaluates in place through itself")
            parts.append(self.alternatives(self.resolve(ref), (*stack, ref)))
        for sub in s.get("allOf", []) if isinstance(s.get("allOf"), list) else []:
            parts.append(self.alternatives(sub, stack))
        if isinstance(s.get("anyOf"), list) and s["anyOf"]:
            parts.append(self.any_of(s["anyOf"], stack))
        if isinstance(s.get("oneOf"), list) and s["oneOf"]:
            parts.append(self.one_of(s["oneOf"], stack))
        if "if" in s:
            parts.append(self.if_then_else(s, stack))
        deps = s.get("dependentSchemas", {})
        for key, sub in deps.items() if isinstance(deps, dict) else ():
            present = [(({"required": [key]}, sub, *c), e)
                       for c, e in self.alternatives(sub, stack)]
            parts.append([(({"properties": {key: False}},), _Evaluated()), *present])
        return _product(parts)

    def branch(self, sub: Any, stack: tuple[str, ...], extra: tuple[Any, ...] = ()
               ) -> list[_Alt]:
        return [((sub, *extra, *c), e) for c, e in self.alternatives(sub, stack)]

    def any_of(self, branches: list[Any], stack: tuple[str, ...]) -> list[_Alt]:
        n = len(branches)
        if n > _MAX_SUBSET_BRANCHES or self.exclusive(branches):
            sets: list[tuple[int, ...]] = [(i,) for i in range(n)]
        else:
            sets = [t for r in range(1, n + 1) for t in itertools.combinations(range(n), r)]
        out: list[_Alt] = []
        alts: dict[int, list[_Alt]] = {}  # each branch walked once, in the order first needed
        for t in sets:
            for i in t:
                if i not in alts:
                    alts[i] = self.branch(branches[i], stack)
            out += _product([alts[i] for i in t])
        return out

    def one_of(self, branches: list[Any], stack: tuple[str, ...]) -> list[_Alt]:
        if len(branches) == 1 or self.exclusive(branches):
            return [a for b in branches for a in self.branch(b, stack)]
        negs = [self.complement(b) for b in branches]
        if any(n is None for n in negs):
            raise Unlowerable("its oneOf branches may overlap, and one has no complement")
        return [a for i, b in enumerate(branches)
                for a in self.branch(b, stack, tuple(n for j, n in enumerate(negs) if j != i))]

    def if_then_else(self, s: dict[str, Any], stack: tuple[str, ...]) -> list[_Alt]:
        neg = self.complement(s["if"])
        if neg is None:
            raise Unlowerable("its if has no complement gramask can write (see not)")
        taken = _product([self.branch(s["if"], stack), self.branch(s.get("then", True), stack)])
        other = [((neg, *c), e) for c, e in self.branch(s.get("else", True), stack)]
        return taken + other

    def rest_schema(self, e: _Evaluated, rest: Any) -> Any:
        """What the keyword asks of the properties (items) outside ``e``."""
        if e.every:
            return True
        if self.kind == "Properties":
            out: dict[str, Any] = {"additionalProperties": rest}
            if e.names:
                out["properties"] = {k: True for k in e.names}
            if e.patterns:
                out["patternProperties"] = {p: True for p in e.patterns}
            return out
        later = {"anyOf": [rest, *e.contains]} if e.contains else rest
        if self.old_draft:
            return {"items": [True] * e.prefix, "additionalItems": later} if e.prefix \
                else {"items": later}
        return {"prefixItems": [True] * e.prefix, "items": later} if e.prefix \
            else {"items": later}


def lower_unevaluated(schema: dict[str, Any], kind: str, resolve: Callable[[str], Any],
                      complement: Callable[[Any], Any],
                      exclusive: Callable[[list[Any]], bool], old_draft: bool
                      ) -> dict[str, Any]:
    """``schema`` with ``unevaluated<kind>`` (``Properties`` or ``Items``) written with
    the keywords the compiler enforces; raises :class:`Unlowerable` where it cannot."""
    kw = "unevaluated" + kind
    rest = schema[kw]
    if not isinstance(rest, dict | bool):
        raise Unlowerable("must be a schema (an object or a boolean)")
    out = {k: v for k, v in schema.items() if k != kw}
    if rest is True:
        return out
    walker = _Walker(kind, resolve, complement, exclusive, old_draft)
    alts = walker.alternatives(out, ())
    parts = [(c, walker.rest_schema(e, rest)) for c, e in alts]
    if all(r is True for _, r in parts):
        return out
    if len(parts) == 1 and not parts[0][0]:
        extra = parts[0][1]
    else:
        extra = {"anyOf": [{"allOf": [*c, r]} for c, r in parts]}
    out["allOf"] = [*out.get("allOf", []), extra]
    return out
