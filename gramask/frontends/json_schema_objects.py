"""JSON Schema's object keywords as BNF rules: properties in schema order, the keys no property
names (``additionalProperties``, ``patternProperties``, ``propertyNames``), property counts and
``dependentRequired``.

An object is a chain of states, one per defined property in schema order (each present or
skipped; required ones present), then any number of other keys. The state carries what the
count and dependency keywords need to know: the properties so far (up to the largest bound),
and for ``dependentRequired`` the properties still owed (a dependency's target after its
source) and those skipped that a later source needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import json_text as jt
from .json_formats import listed_values
from .json_keys import finite_words, key_region, region_empty
from .json_schema_base import _ANNOTATIONS, MAX_COUNTED_LENGTH, SchemaCompilerBase, _ptr_join

__all__ = ["ObjectKeywords"]

# patternProperties split the other keys into 2**n regions, each a key automaton
_MAX_PATTERNS = 4
# the other keys, where few, are taken as optional properties (each then comes once)
_MAX_FREE_KEYS = 16
# dependentRequired: the properties it can owe or miss are part of each state (2**n of them)
_MAX_DEPENDENCY_TARGETS = 8

# (properties still owed, properties skipped that a later one needs): indices
_Debts = tuple[frozenset[int], frozenset[int]]


class ObjectKeywords(SchemaCompilerBase):
    """The compiler of ``type: object``'s keywords."""

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
        if len(pats) > _MAX_PATTERNS:
            self.refuse("patternProperties", ptr, f"more than {_MAX_PATTERNS} patterns are "
                                                  "not supported")
            pats = dict(list(pats.items())[:_MAX_PATTERNS])
        pat_res: list[Callable[[str], bool]] = []
        # each pattern translated once, for both: (what a key matches for certain, what it
        # must avoid to match in neither reading: ECMA 262's and Python re's, jsonschema's)
        pat_rx: list[tuple[str, str] | jt.PatternError] = []
        for p in pats:
            try:
                re.compile(p)
            except re.error as e:
                raise self.bad("patternProperties", ptr, f"invalid pattern {p!r}: {e}") from None
            where = f"pattern {p!r}"
            try:  # as the key automata read the other keys
                rx = (jt.pattern_regex(p, where), jt.pattern_regex(p, where, wide=True))
            except jt.PatternError as e:  # refused by pattern_regions below
                pat_rx.append(e)
                pat_res.append(lambda k: False)
            else:
                pat_rx.append(rx)
                pat_res.append(jt.pattern_test(rx[1]))  # a defined key: schema if either
        names = self.property_names(schema.get("propertyNames", True), ptr)
        if names is None:  # no key is a valid name: only the empty object
            if required or schema.get("minProperties", 0):
                return ""
            return self.rule(self.b.fresh("object"), (self.lit("{"), self.lit("}")))
        name_regexes, name_ok = names
        if any(not name_ok(k) for k in required):
            return ""
        props: list[tuple[str, Any, str, bool]] = []
        for k, s in props_in.items():
            if not name_ok(k):
                continue  # a key propertyNames refuses: never present
            sp = _ptr_join(ptr, "properties", k)
            matched = [ps for (p, ps), test in zip(pats.items(), pat_res, strict=True)
                       if test(k)]
            if matched:
                s = {"allOf": [s, *matched]}
            props.append((k, s, sp, k in required))
        deps_in = schema.get("dependentRequired", {})
        named = [*required, *(k for k, v in deps_in.items() for k in [k, *v])] \
            if isinstance(deps_in, dict) and all(
                isinstance(v, list) and all(isinstance(t, str) for t in v)
                for v in deps_in.values()) else required  # (else refused below)
        for k in dict.fromkeys(named):  # keys other keywords name, beyond the properties:
            if k in props_in or not isinstance(k, str) or not name_ok(k):  # as optional ones
                continue
            matched = [ps for (p, ps), test in zip(pats.items(), pat_res, strict=True)
                       if test(k)]
            if matched or addl is not False or k in required:
                s = {"allOf": matched} if matched else addl
                props.append((k, s, _ptr_join(ptr, "additionalProperties"), k in required))
        defined = [k for k, *_ in props]
        deps = self.dependencies(schema, ptr, defined)
        bounds = self.counts(schema, ptr, "Properties")
        req = [r for *_, r in props]
        if bounds is not None and bounds[0] > 1 + _fewest_present(len(props), deps, req) and (
                free := self.free_keys(pats, pat_rx, addl, defined, name_regexes, ptr)):
            # the other keys are a few words: as optional properties (after the others) each
            # comes once, so the count is exact; their order is then fixed, so only here, where
            # the count is refused otherwise (none of them is a dependency's key: same indices)
            props += [(k, s, sp, False) for k, s, sp in free]
            defined = [k for k, *_ in props]
            req = [r for *_, r in props]
        if pats or name_regexes:  # (no patterns: one region, the keys names allow)
            extra = self.pattern_regions(pats, pat_rx, addl, defined, ptr, name_regexes)
        elif addl is False:
            extra = []
        else:
            extra = [(self.string_terminal(jt.JSON_STRING, hint="KEY", key=True,
                                           **{"except": defined})
                      if defined else self.string_terminal(jt.JSON_STRING),
                      self.value(addl, _ptr_join(ptr, "additionalProperties")))]
        if bounds is None:
            return ""
        lo, hi = bounds
        if extra and lo > 1 + _fewest_present(len(props), deps, req):
            # members beyond the defined properties may repeat a key: a parsed object keeps
            # one, so counting members does not count properties past the fewest defined
            # ones an object can have (required, or owed to a dependency) + 1
            self.refuse("minProperties", ptr, "keys outside 'properties' may repeat in JSON "
                        "text, so gramask can count properties only up to the required ones "
                        "(and those dependentRequired makes present) + 1 where other keys "
                        "are allowed")
        cap = max(lo, hi if hi is not None else 0, 1)
        n = len(props)
        reach = _reachable_debts(n, deps, req)
        if sum(map(len, reach)) * (cap + 1) > self.opt.max_rules:
            raise self.bad("maxProperties" if hi else "minProperties", ptr,
                           "too many property-count states")
        values = [self.value(s, sp) for _, s, sp, _ in props]
        keys = [self.key(k) for k, *_ in props]
        states: dict[tuple[int, int, _Debts], str] = {}
        comma, colon = self.lit(","), self.lit(":")

        def state(i: int, k: int, debts: _Debts) -> str:
            sk = (i, k, debts)
            if sk in states:
                return states[sk]
            name = states[sk] = self.b.fresh("members")
            alts: list[tuple[str, ...]] = []
            sep: tuple[str, ...] = (comma,) if k else ()
            can_add = hi is None or k + 1 <= hi
            if i < n:
                present, skipped = _step(i, debts, deps)
                if can_add and present is not None:
                    alts.append((*sep, keys[i], colon, values[i],
                                 state(i + 1, min(k + 1, cap), present)))
                if not props[i][3] and skipped is not None:
                    alts.append((state(i + 1, k, skipped),))
            else:
                if can_add:
                    for key_t, val in extra:
                        alts.append((*sep, key_t, colon, val, state(n, min(k + 1, cap), debts)))
                if k >= lo:
                    alts.append(())
            self.rule(name, *alts)
            return name

        # build the states from the last property back, so recursion stays shallow
        for i in range(n, -1, -1):
            for debts in reach[i]:
                for k in range(cap, -1, -1):
                    state(i, k, debts)
        name = self.b.fresh("object")
        empty: _Debts = (frozenset(), frozenset())
        return self.rule(name, (self.lit("{"), state(0, 0, empty), self.lit("}")))

    def property_names(self, names: Any, ptr: str
                       ) -> tuple[list[str], Callable[[str], bool]] | None:
        """``propertyNames``: (regexes every other key must match, a test of a defined key),
        or None where no key is valid (``false``). Taken: ``true``, and a schema of
        ``type`` ``string`` (every key is one), ``pattern``, ``minLength``/``maxLength``
        (up to ``MAX_COUNTED_LENGTH``), ``enum``/``const`` of strings; anything else is refused."""
        if names is True:
            return [], lambda k: True
        if names is False:
            return None
        taken = {"type", "pattern", "minLength", "maxLength", "enum", "const"}
        if not isinstance(names, dict) or set(names) - _ANNOTATIONS - taken or \
                names.get("type", "string") not in ("string", ["string"]):
            self.refuse("propertyNames", ptr, "supported: true, false, and a schema of type "
                        "string, pattern, minLength/maxLength and enum/const")
            return [], lambda k: True
        regexes: list[str] = []  # (a defined key is tested against them, as the others)
        try:
            if "pattern" in names:
                regexes.append(jt.pattern_regex(names["pattern"],
                                                  f"pattern {names['pattern']!r}"))
            lo, hi = names.get("minLength", 0), names.get("maxLength")
            if lo or hi is not None:
                if not isinstance(lo, int) or not isinstance(hi, int | None) or \
                        max(lo, hi or 0) > MAX_COUNTED_LENGTH:
                    raise jt.PatternError(f"lengths up to {MAX_COUNTED_LENGTH} are supported")
                regexes.append(f"[\\s\\S]{{{lo},{'' if hi is None else hi}}}")
            if "enum" in names or "const" in names:
                words = listed_values(names)
                if not isinstance(words, list):
                    raise jt.PatternError("enum must be an array")
                words = [w for w in words if isinstance(w, str)]
                if not words:
                    return None
                regexes.append("|".join(f"(?:{re.escape(w)})" for w in words))
            tests = [jt.pattern_test(r) for r in regexes]
        except (re.error, TypeError, jt.PatternError) as e:
            self.refuse("propertyNames", ptr, str(e))
            return [], lambda k: True
        return regexes, lambda k: all(t(k) for t in tests)

    def free_keys(self, pats: dict[str, Any],
                  translated: list[tuple[str, str] | jt.PatternError],
                  addl: Any, defined: list[str], names: list[str], ptr: str
                  ) -> list[tuple[str, Any, str]] | None:
        """The keys outside ``defined`` an object may hold, where they are a few words
        (``propertyNames``' enum, patterns such as ``^(a|b)$`` with no other keys allowed):
        (key, value schema, its pointer) per key, in the order of the regions
        :meth:`pattern_regions` builds, each in code-point order; None where they are not
        few (or a pattern is refused, which :meth:`pattern_regions` says)."""
        if not (pats or names) or any(isinstance(rx, jt.PatternError) for rx in translated):
            return None
        out: list[tuple[str, Any, str]] = []
        for match, nomatch, value, vptr in _regions(pats, translated, addl, ptr, names):
            words = finite_words(key_region(defined, match, nomatch), _MAX_FREE_KEYS - len(out))
            if words is None:
                return None
            out += [(w, value, vptr) for w in words]
        return out

    def dependencies(self, schema: dict[str, Any], ptr: str, defined: list[str]
                     ) -> dict[int, frozenset[int]]:
        """``dependentRequired`` (and draft 7's ``dependencies`` that name keys) over the
        defined properties, which include every key it names that an object can hold: per
        property index, the indices it needs (-1: a key no object holds, so the source is
        never present)."""
        raw = schema.get("dependentRequired", {})
        if not isinstance(raw, dict) or not all(
                isinstance(v, list) and all(isinstance(t, str) for t in v) for v in raw.values()):
            raise self.bad("dependentRequired", ptr, "must map names to arrays of names")
        index = {k: i for i, k in enumerate(defined)}
        out: dict[int, frozenset[int]] = {}
        for src, targets in raw.items():
            wanted = frozenset(index.get(t, -1) for t in targets if t != src)
            if src in index and wanted:
                out[index[src]] = wanted
        if len(set().union(*out.values()) - {-1} if out else ()) > _MAX_DEPENDENCY_TARGETS:
            self.refuse("dependentRequired", ptr, f"more than {_MAX_DEPENDENCY_TARGETS} "
                        "properties as targets are not supported")
            return {}
        return out

    def pattern_regions(self, pats: dict[str, Any],
                        translated: list[tuple[str, str] | jt.PatternError],
                        addl: Any, defined: list[str], ptr: str,
                        names: list[str]) -> list[tuple[str, str]]:
        """(key terminal, value nonterminal) per region of the keys ``properties`` does not
        define: the keys matching exactly the patterns of a subset (their schemas all
        apply), and those matching none (``additionalProperties``); every key also matches
        ``names`` (``propertyNames``; with no patterns the one region is the keys it
        allows). Empty regions, and those whose schemas include ``false``, are left out.
        ``translated``: per pattern, its ``pattern_regex`` or the error that refuses it (the
        first is refused here, where the regions are built)."""
        for rx in translated:
            if isinstance(rx, jt.PatternError):
                self.refuse("patternProperties", ptr, str(rx))
                return []
        hint = "KEY_PATTERN" if pats else "KEY_NAMED"
        out: list[tuple[str, str]] = []
        for match, nomatch, value, vptr in _regions(pats, translated, addl, ptr, names):
            if region_empty(key_region(defined, match, nomatch)):
                continue
            key_t = self.string_terminal(jt.JSON_STRING, hint=hint, key=True,
                                         match=match, nomatch=nomatch, **{"except": defined})
            out.append((key_t, self.value(value, vptr)))
        return out


def _regions(pats: dict[str, Any], translated: list[tuple[str, str] | jt.PatternError],
             addl: Any, ptr: str, names: list[str]
             ) -> list[tuple[list[str], list[str], Any, str]]:
    """(regexes its keys match, those they do not, value schema, its pointer) per region of
    the other keys that ``patternProperties`` and ``additionalProperties`` allow (regions may
    be empty); ``translated``: the patterns' regexes (none refused), narrow and wide: a key
    in a region matches its patterns in both readings and the others in neither (a key the
    readings tell apart is in none)."""
    narrow = [rx[0] for rx in translated if isinstance(rx, tuple)]
    wide = [rx[1] for rx in translated if isinstance(rx, tuple)]
    schemas = list(pats.values())
    out: list[tuple[list[str], list[str], Any, str]] = []
    for subset in range(1 << len(pats)):
        inside = [i for i in range(len(pats)) if subset >> i & 1]
        if subset:
            if any(schemas[i] is False for i in inside):
                continue
            value = (schemas[inside[0]] if len(inside) == 1
                     else {"allOf": [schemas[i] for i in inside]})
            vptr = _ptr_join(ptr, "patternProperties", list(pats)[inside[0]])
        elif addl is False:
            continue
        else:
            value, vptr = addl, _ptr_join(ptr, "additionalProperties")
        out.append(([narrow[i] for i in inside] + names,
                    [r for i, r in enumerate(wide) if i not in inside], value, vptr))
    return out


def _step(i: int, debts: _Debts, deps: dict[int, frozenset[int]]
          ) -> tuple[_Debts | None, _Debts | None]:
    """The debts after property ``i`` is present, and after it is skipped (None where that
    breaks a dependency)."""
    owed, missed = debts
    needs = deps.get(i, frozenset())
    present: _Debts | None = None
    if not (needs & missed) and -1 not in needs:
        later = {t for t in needs if t > i}
        present = ((owed - {i}) | later, _still_needed(missed, i + 1, deps))
    skipped: _Debts | None = None
    if i not in owed:
        gone = missed | ({i} if any(i in ts for s, ts in deps.items() if s > i) else set())
        skipped = (owed, _still_needed(frozenset(gone), i + 1, deps))
    return present, skipped


def _still_needed(missed: frozenset[int], nxt: int, deps: dict[int, frozenset[int]]
                  ) -> frozenset[int]:
    """The skipped properties a source at ``nxt`` or later still depends on."""
    return frozenset(m for m in missed if any(m in ts for s, ts in deps.items() if s >= nxt))


def _reachable_debts(n: int, deps: dict[int, frozenset[int]], required: list[bool]
                     ) -> list[set[_Debts]]:
    """Per position 0 .. n, the debts some sequence of present/skipped properties reaches
    (without dependencies: only "nothing owed, nothing missed")."""
    reach: list[set[_Debts]] = [set() for _ in range(n + 1)]
    reach[0].add((frozenset(), frozenset()))
    for i in range(n):
        for debts in reach[i]:
            present, skipped = _step(i, debts, deps)
            if present is not None:
                reach[i + 1].add(present)
            if skipped is not None and not required[i]:
                reach[i + 1].add(skipped)
    return reach


def _fewest_present(n: int, deps: dict[int, frozenset[int]], required: list[bool]) -> int:
    """The fewest defined properties an accepted object holds: the required ones and those
    ``dependentRequired`` then owes (a lower bound: values are taken as satisfiable)."""
    best: dict[_Debts, int] = {(frozenset(), frozenset()): 0}
    for i in range(n):
        nxt: dict[_Debts, int] = {}
        for debts, k in best.items():
            present, skipped = _step(i, debts, deps)
            if present is not None:
                nxt[present] = min(nxt.get(present, n), k + 1)
            if skipped is not None and not required[i]:
                nxt[skipped] = min(nxt.get(skipped, n), k)
        best = nxt
    return min(best.values(), default=n)
