"""JSON Schema → grammar, the keywords of one instance type: strings (lengths, patterns,
formats), numbers (ranges, ``multipleOf``), arrays (items, counts) and objects (properties
in schema order, additional and pattern properties, counts).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..errors import GrammarError
from . import json_text as jt
from .json_formats import FORMATS as _FORMATS
from .json_formats import json_type as _json_type
from .json_formats import listed_values
from .json_numbers import (
    EXACT_INT_DIGITS,
    MAX_NUMBER_STATES,
    decimal_lcm,
    decimal_of,
    float_agreeing_digits,
    float_divisor_kind,
    float_safe_bound,
    is_multiple_as_floats,
    multiple_spec,
    multiples_listed,
    residue_modulus,
    small_fractions,
)
from .json_schema_base import (
    _ANNOTATIONS,
    _MAX_BOUND,
    _NUMBER_KW,
    MAX_COUNTED_LENGTH,
    MAX_PLAIN_LENGTH,
    _canon,
    _ptr_join,
)
from .json_schema_negation import EXCEPT, FRACTIONS, NOT_MULTIPLE, NOT_PATTERN
from .json_schema_objects import ObjectKeywords
from .json_strings import spec_dfa

# decimal bounds of numbers are compared digit by digit: a regex as long as their digits, so a
# bound is rounded inward to this many after the point (exclusiveMinimum 0: from 1e-20 on)
_MAX_FRACTION_DIGITS = 20
# numbers that are no integer in either reading, exact decimals or jsonschema's floats: below
# 1e9 in magnitude, at most 6 fraction digits, the last one not 0 (at least 1e-6 from an
# integer, where a float's error is below 1.2e-7)
_FRACTION = r"-?(?:0|[1-9][0-9]{0,8})\.[0-9]{0,5}[1-9]"
# multiples of a divisor whose automaton is too large, spelled one by one in a narrow range
_MAX_LISTED = 2000

__all__ = ["MAX_ORDERED_UNIQUE", "MAX_UNIQUE_ITEMS", "TypeKeywords", "finite_items"]


MAX_UNIQUE_ITEMS = 6  # an array of distinct items: a rule per subset of them used so far
# more distinct values, up to this: taken in the order the schema lists them
MAX_ORDERED_UNIQUE = 1024


def finite_items(schema: dict[str, Any], resolve: Callable[[str], Any] | None = None
                 ) -> list[Any] | None:
    """The values an array's items may take, when ``uniqueItems`` can be enforced exactly: an
    ``items`` enum/const (with ``type`` at most), or ``type`` boolean/null, possibly behind a
    local ``$ref``, of at most :data:`MAX_ORDERED_UNIQUE` values whose equality is their
    spelling's (strings, integers, booleans, null: ``1`` and ``1.0`` are equal values, so no
    floats); else None."""
    items = schema.get("items")
    for _ in range(8):  # (a chain of $refs)
        if resolve is None or not isinstance(items, dict) or set(items) - _ANNOTATIONS != {"$ref"}:
            break
        items = resolve(items["$ref"])
    if "prefixItems" in schema or not isinstance(items, dict) or (
            set(items) - _ANNOTATIONS - {"type", "enum", "const"}):
        return None
    t = items.get("type", [])
    types = set(t if isinstance(t, list) else [t])
    if "enum" in items or "const" in items:
        values = listed_values(items)
    elif types and types <= {"boolean", "null"}:
        values = [*([True, False] if "boolean" in types else []),
                  *([None] if "null" in types else [])]
    else:
        return None
    if not isinstance(values, list):
        return None
    if "type" in items:
        values = [v for v in values if _json_type(v) in types
                  or (_json_type(v) == "integer" and "number" in types)]
    if any(not (v is None or isinstance(v, str | bool | int)) for v in values):
        return None
    distinct = list({_canon(v): v for v in values}.values())
    return distinct if len(distinct) <= MAX_ORDERED_UNIQUE else None


def _intersected(schema: dict[str, Any], lo: int, hi: int | None) -> dict[str, Any] | None:
    """The key-region spec (:mod:`.json_strings`) of a ``pattern`` that opens with
    lookaheads (``jt.pattern_lookaheads``: pydantic 2.12's ``Decimal``, password policies), with
    the schema's format and length beside it, or of a pattern beside a format (``^x-`` and
    a uuid, and a length up to 64); None where one regex does. Raises ``PatternError``."""
    pat, fmt = schema.get("pattern"), schema.get("format")
    if not isinstance(pat, str):
        return None
    where = f"pattern {pat!r}"
    parts = jt.pattern_lookaheads(pat, where)
    if parts is None:
        if fmt not in _FORMATS:
            return None
        parts = [jt.pattern_regex(pat, where)], []
    match, nomatch = parts
    if fmt is not None:
        if fmt not in _FORMATS:
            raise jt.PatternError(f"{where} with lookaheads beside format {fmt!r} is not "
                                  "supported")
        match.append(_FORMATS[fmt])
    if lo or hi is not None:
        if max(lo, hi or 0) > MAX_COUNTED_LENGTH:
            raise jt.PatternError(f"{where} beside a format, or with lookaheads, and a length "
                                  f"above {MAX_COUNTED_LENGTH} is not supported")
        match.append(f"(?:[^\\n]|\\n){{{lo},{'' if hi is None else hi}}}")
    return {"match": match, "nomatch": nomatch, "except": []}


class TypeKeywords(ObjectKeywords):
    """The compilers of ``type``'s keywords, one method per instance type."""

    # ------------------------------------------------------------------ strings
    def string(self, schema: dict[str, Any], ptr: str) -> str:
        if EXCEPT in schema or NOT_PATTERN in schema:
            return self.complement_string(schema, ptr)
        bounds = self.counts(schema, ptr, "Length")
        if bounds is None:
            return ""
        lo, hi = bounds
        counted = "maxLength" if (hi or 0) >= lo else "minLength"
        if max(lo, hi or 0) > MAX_PLAIN_LENGTH:
            self.refuse(counted, ptr, f"string lengths above {MAX_PLAIN_LENGTH} are not "
                        "supported (each counted character costs the lexer some 22 states; "
                        "compiling 10,000 takes ~10 s)")
            lo, hi = (lo if lo <= MAX_PLAIN_LENGTH else 0), (
                hi if hi is not None and hi <= MAX_PLAIN_LENGTH else None)
        spec: dict[str, Any] = {}
        if lo:
            spec["min"] = lo
        if hi is not None:
            spec["max"] = hi
        try:  # several regexes at once: a key region's automaton, their intersection
            both = _intersected(schema, lo, hi)
        except jt.PatternError as e:
            self.refuse("pattern", ptr, str(e))
            schema, both = {k: v for k, v in schema.items() if k != "pattern"}, None
        if both is not None:
            return self.string_terminal(jt.JSON_STRING, hint=str(schema.get("format", "STRING")),
                                        key=False, **both)
        if "pattern" in schema and "format" in schema:
            self.refuse("format", ptr, "together with pattern and a length is not supported")
        if "pattern" in schema:
            pat = schema["pattern"]
            if not isinstance(pat, str):
                raise self.bad("pattern", ptr, "must be a string")
            try:
                spec["regex"] = jt.pattern_regex(pat, f"pattern {pat!r}")
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
        if "regex" in spec and max(lo, hi or 0) > MAX_COUNTED_LENGTH:
            try:  # the product with the count is built state by state: try it (it is kept)
                spec_dfa(json.dumps(spec, sort_keys=True))
            except GrammarError as e:
                self.refuse(counted, ptr, f"a length above {MAX_COUNTED_LENGTH} together with "
                            f"a pattern or format is supported while the product fits: {e}")
                spec.pop("min", None)
                spec.pop("max", None)
        if not spec:
            return self.string_terminal(jt.JSON_STRING)
        return self.string_terminal(jt.JSON_STRING, hint=str(schema.get("format", "STRING")),
                                    **spec)

    def complement_string(self, schema: dict[str, Any], ptr: str) -> str:
        """A complement's strings (json_schema_negation): none of some words, matching none
        of some patterns (in neither reading), and the schema's own ``pattern`` (in both):
        a key region's automaton."""
        if set(schema) & {"minLength", "maxLength", "format"}:
            self.refuse("not", ptr, "a string that is none of some words or matches none of "
                                    "some patterns, with a length or format, is not supported")
        try:
            match = [jt.pattern_regex(schema["pattern"], f"pattern {schema['pattern']!r}")] \
                if "pattern" in schema else []
            nomatch = [jt.pattern_regex(p, f"pattern {p!r}", wide=True)
                       for p in schema.get(NOT_PATTERN, [])]
        except jt.PatternError as e:
            self.refuse("not", ptr, str(e))
            return self.string_terminal(jt.JSON_STRING)
        words = list(schema.get(EXCEPT, []))
        if not match and not nomatch:
            return self.string_terminal(jt.JSON_STRING, hint="STRING", key=False,
                                        **{"except": words})
        return self.string_terminal(jt.JSON_STRING, hint="STRING", key=False, match=match,
                                    nomatch=nomatch, **{"except": words})

    # ------------------------------------------------------------------ numbers
    def integer(self, schema: dict[str, Any], ptr: str) -> str:
        return self.number(schema, ptr, integer=True)

    def real(self, schema: dict[str, Any], ptr: str) -> str:
        return self.number(schema, ptr, integer=False)

    def number(self, schema: dict[str, Any], ptr: str, *, integer: bool) -> str:
        if FRACTIONS in schema:  # a complement's numbers that are no integer
            if integer:
                return ""
            if set(schema) & {*_NUMBER_KW, NOT_MULTIPLE}:
                self.refuse("not", ptr, "the numbers that are no integer, with bounds or "
                                        "multipleOf, are not supported")
            return self.b.terminal(_FRACTION, hint="FRACTION")
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
        divisor = None
        negate = NOT_MULTIPLE in schema  # (a complement's: no multiple of it)
        kw = NOT_MULTIPLE if negate else "multipleOf"
        if negate and "multipleOf" in schema:
            self.refuse("not", ptr, "multipleOf beside the complement of another multipleOf is "
                                    "not supported")
        # a float divisor: the multiples jsonschema's floats find as well (float_divisor_kind)
        kind = (float_divisor_kind(schema[kw]) if not negate and isinstance(schema.get(kw), float)
                and schema[kw] > 0 else "")
        fractions = "" if kind != "integers" or integer else small_fractions(
            schema[kw], lo, lo_incl, hi, hi_incl, limit=_MAX_LISTED, digits=_MAX_FRACTION_DIGITS)
        if kind == "integers":  # the integers: 0.07 is no multiple of 0.01 there (and, on
            integer = True  # numbers, the small fractions both readings take, listed)
        if schema.get(kw) is not None:
            if schema[kw] <= 0:
                raise self.bad(kw, ptr, "must be greater than 0")
            divisor = decimal_of(schema[kw])
            if integer:  # the integers that are multiples of 2.5 are those of 5
                divisor = decimal_lcm(divisor, Decimal(1))
                if divisor == 1:
                    if negate:  # every integer is a multiple
                        return ""
                    divisor = None
        # the integers within (exactly, as Python compares an int with a bound)
        ilo = None if lo is None else (math.ceil(lo) if lo_incl else math.floor(lo) + 1)
        ihi = None if hi is None else (math.floor(hi) if hi_incl else math.ceil(hi) - 1)
        if integer:
            rx = jt.integer_range_regex(ilo, ihi)
            whole = self.multiples(divisor, rx, ptr, schema, integer=True, kind=kind, bounds=(
                None if ilo is None else Decimal(ilo), True,
                None if ihi is None else Decimal(ihi), True)) if divisor is not None else (
                self.b.terminal(rx, hint="INTEGER") if rx else "")
            if not fractions:
                return whole
            part = self.b.terminal(fractions, hint="MULTIPLES")
            return self.rule(self.b.fresh("number"), (whole,), (part,)) if whole else part
        if lo is None and hi is None and divisor is None:
            return self.b.terminal(jt.JSON_NUMBER, hint="NUMBER")
        # bounds that hold in both readings, exact and jsonschema's floats (inclusive)
        exact = [None if b is None else float_safe_bound(b, incl, upper=upper,
                                                         digits=_MAX_FRACTION_DIGITS)
                 for b, incl, upper in ((lo, lo_incl, False), (hi, hi_incl, True))]
        lo_incl = hi_incl = True
        rx = (jt.number_range_regex(exact[0], lo_incl, exact[1], hi_incl)
              if lo is not None or hi is not None else jt.JSON_DECIMAL)
        if ((ilo is not None and exact[0] is not None and ilo < exact[0])
                or (ihi is not None and exact[1] is not None and ihi > exact[1])):
            # a bound no double spells (an int past 2^53): integers up to it as well
            whole = jt.integer_range_regex(ilo, ihi)
            rx = f"(?:{rx}|{whole})" if rx and whole else rx or whole
        if divisor is not None:
            return self.multiples(divisor, rx, ptr, schema, integer=False,
                                  bounds=(exact[0], lo_incl, exact[1], hi_incl), kind=kind)
        return self.b.terminal(rx, hint="NUMBER_RANGE") if rx else ""

    def multiples(self, divisor: Decimal, rx: str, ptr: str, schema: dict[str, Any], *,
                  integer: bool, bounds: tuple[Decimal | None, bool, Decimal | None, bool],
                  kind: str) -> str:
        """The texts of ``rx`` (numbers without an exponent) whose value is a multiple of
        ``divisor`` (with the complement's keyword: is none), exactly: an automaton of
        residues (:mod:`.json_numbers`), or, where that is too large, a list of the multiples
        of a narrow range. ``kind``: the divisor's :func:`float_divisor_kind` ("" for an
        int, or in a complement)."""
        shown: Any = schema.get(NOT_MULTIPLE, schema.get("multipleOf"))
        if not rx:
            return ""
        negate = NOT_MULTIPLE in schema
        kw = "not" if negate else "multipleOf"  # (a complement's keyword: the user's not/if)
        why = ("jsonschema divides it as a double, which finds no multiple where the decimal "
               "does for some texts (no automaton follows that)" if kind == "listed" else "")
        if not why:
            # the complement keeps only texts short enough that jsonschema's float reading
            # finds no multiple either (an integer's remainder by an integer is exact: no
            # need); so do the multiples of a float that is a double exactly
            exact_ints = integer and isinstance(shown, int)
            digits = (max(float_agreeing_digits(shown), 0)
                      if (negate and not exact_ints) or kind == "dyadic" else None)
            point = EXACT_INT_DIGITS if isinstance(shown, int) and digits is None else None
            spec = multiple_spec(divisor, rx, negate=negate, digits=digits, point_digits=point)
            try:
                if not spec_dfa(spec).finals.any():
                    return ""
            except GrammarError as e:
                why = str(e)
        if why:
            lo, lo_incl, hi, hi_incl = bounds
            keep = None if kind != "listed" else (lambda v: is_multiple_as_floats(
                int(v) if integer else float(v), shown))
            listed = None if lo is None or hi is None or negate else multiples_listed(
                divisor, lo, lo_incl, hi, hi_incl, integer=integer, limit=_MAX_LISTED,
                keep=keep)
            if listed is not None:
                return self.b.terminal(listed, hint="MULTIPLES") if listed else ""
            self.refuse(kw, ptr, f"multipleOf {shown}{' on integers' if integer else ''}: {why}"
                                 + ("" if negate else f"; bounds that hold at most "
                                    f"{_MAX_LISTED:,} multiples would list them instead"))
            return self.b.terminal(rx, hint="INTEGER" if integer else "NUMBER")
        residues = math.lcm(self.residues, residue_modulus(divisor))
        if residues > MAX_NUMBER_STATES:  # the lexer would follow every residue at once
            self.refuse(kw, ptr, f"multipleOf {shown}: beside the schema's other divisors, "
                        f"the lexer would follow the digits' residue modulo {residues:,} "
                        f"(at most {MAX_NUMBER_STATES:,} are supported)")
            return self.b.terminal(rx, hint="INTEGER" if integer else "NUMBER")
        self.residues = residues
        return self.b.terminal(rx, hint="MULTIPLE", automaton=spec)

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
        bounds = self.counts(schema, ptr, "Items")
        if bounds is None:
            return ""
        lo, hi = bounds
        if schema.get("uniqueItems") is True:  # kept only for a few finite items
            values = finite_items(schema, lambda ref: self.resolve(ref, ptr)[0])
            assert values is not None
            if "contains" in schema:
                self.refuse("contains", ptr, "not supported beside uniqueItems")
            if len(values) > MAX_UNIQUE_ITEMS:
                return self.ordered_unique_array(values, lo, hi, ptr)
            return self.unique_array(values, lo, hi)
        cap = max(len(prefix), lo, hi if hi is not None else 0, 1)
        if cap > 10_000:
            self.refuse("maxItems" if hi is not None and hi > 10_000 else "minItems", ptr,
                        "counts above 10,000 are not supported")
            cap, lo, hi = max(len(prefix), 1), 0, None
        contains = self.contains(schema, ptr)  # (its schema, its complement, min, max)
        if contains and contains[2] == 0 and contains[3] is None:
            contains = None  # at least none: every array
        c_min, c_max = (contains[2], contains[3]) if contains else (0, None)
        c_cap = max(c_min, c_max or 0)  # matching items counted up to here
        if (cap + 1) * (c_cap + 1) > self.opt.max_rules:
            raise self.bad("minContains", ptr, "too many item-count states")
        elem_cache: dict[tuple[int, int], str] = {}

        def elem(i: int, match: int = 0) -> str:  # element i (match: 1 meets contains,
            key = (min(i, len(prefix)), match)  # -1 does not, 0 either)
            if key not in elem_cache:
                s, p = prefix[key[0]] if key[0] < len(prefix) else (rest, rest_ptr)
                if contains and match:
                    s = {"allOf": [s, contains[0] if match > 0 else contains[1]]}
                elem_cache[key] = self.value(s, p)
            return elem_cache[key]

        def choices(i: int, c: int) -> list[tuple[str, int]]:
            """Element ``i``'s choices after ``c`` matching ones: (symbol, matches after)."""
            if not contains:
                return [(elem(i), 0)]
            if c_max is None:  # a match counts (ambiguous with "any": the union is exact)
                return [(elem(i, 1), min(c + 1, c_cap)), (elem(i), c)]
            out = [(elem(i, -1), c)]
            return [*out, (elem(i, 1), c + 1)] if c < c_max else out

        tails: dict[tuple[int, int], str] = {}

        def tail(i: int, c: int) -> str:  # after i >= 1 elements, c of them matching;
            if (i, c) in tails:  # states above cap repeat cap's
                return tails[i, c]
            t = tails[i, c] = self.b.fresh("items")
            alts: list[tuple[str, ...]] = []
            if i >= lo and c >= c_min:
                alts.append(())
            if hi is None or i < hi:
                alts += [(self.lit(","), sym, tail(min(i + 1, cap), nc))
                         for sym, nc in choices(i, c)]
            self.rule(t, *alts)
            return t

        for i in range(cap, 0, -1):  # from the last state back: no deep recursion
            for c in range(c_cap, -1, -1):
                tail(i, c)
        alts: list[tuple[str, ...]] = []
        if lo == 0 and c_min == 0:
            alts.append((self.lit("["), self.lit("]")))
        if hi is None or hi >= 1:
            alts += [(self.lit("["), sym, tail(1, nc), self.lit("]")) for sym, nc in choices(0, 0)]
        return self.rule(self.b.fresh("array"), *alts)

    def contains(self, schema: dict[str, Any], ptr: str
                 ) -> tuple[Any, Any, int, int | None] | None:
        """``contains`` with ``minContains``/``maxContains``: (its schema, its complement
        where ``maxContains`` needs one, min, max); None without ``contains``."""
        if "contains" not in schema:
            return None
        if not isinstance(schema["contains"], dict | bool):
            raise self.bad("contains", ptr, "must be a schema (an object or a boolean)")
        bounds = self.counts(schema, ptr, "Contains")
        if bounds is None:  # no count fits: no array does
            return False, True, 1, 0
        lo, hi = schema.get("minContains", 1), bounds[1]
        neg: Any = None
        if hi is not None:
            neg = self.complement(schema["contains"], ptr)
            if neg is None:
                self.refuse("maxContains", ptr, "supported where the contains schema has a "
                            "complement gramask can write (see not)")
                hi = None
        return schema["contains"], neg, lo, hi

    def ordered_unique_array(self, values: list[Any], lo: int, hi: int | None,
                             ptr: str) -> str:
        """Arrays of distinct ``values`` in the order the schema lists them (so none
        repeats), ``lo`` to ``hi`` of them: per value, whether it comes, and a count."""
        consts = [self.const(v) for v in values]
        n = len(values)
        hi = None if hi is not None and hi >= n else hi
        top = n if hi is None else min(hi, n)
        if lo > top:
            return ""
        cap = max(lo, 1) if hi is None else top  # items counted up to here
        if (n + 1) * (cap + 1) * 2 > self.opt.max_rules:
            raise self.bad("uniqueItems", ptr, "too many item-count states")
        picks: dict[tuple[int, int], str] = {}
        tails: dict[tuple[int, int], str] = {}

        def pick(i: int, k: int) -> str:  # the next item, from value i on, after k items
            if (i, k) not in picks:
                r = picks[i, k] = self.b.fresh("unique_pick")
                alts: list[tuple[str, ...]] = []
                if i < n:
                    alts += [(consts[i], tail(i + 1, min(k + 1, cap))), (pick(i + 1, k),)]
                self.rule(r, *alts)
            return picks[i, k]

        def tail(i: int, k: int) -> str:  # after k items, the last one value i - 1
            if (i, k) not in tails:
                r = tails[i, k] = self.b.fresh("unique_items")
                alts: list[tuple[str, ...]] = [()] if k >= lo else []
                if i < n and (hi is None or k < hi):
                    alts.append((self.lit(","), pick(i, k)))
                self.rule(r, *alts)
            return tails[i, k]

        for i in range(n, -1, -1):  # from the last value back: no deep recursion
            for k in range(cap, -1, -1):
                pick(i, k)
                tail(i, k)
        alts: list[tuple[str, ...]] = [(self.lit("["), self.lit("]"))] if lo == 0 else []
        if top >= 1:
            alts.append((self.lit("["), pick(0, 0), self.lit("]")))
        return self.rule(self.b.fresh("array"), *alts)

    def unique_array(self, values: list[Any], lo: int, hi: int | None) -> str:
        """Arrays of distinct ``values``, ``lo`` to ``hi`` of them: a rule per set of values
        used so far (distinct values have disjoint terminals, so no spelling repeats one)."""
        consts = [self.const(v) for v in values]
        top = len(values) if hi is None else min(hi, len(values))
        if lo > top:
            return ""
        after: dict[int, str] = {}

        def rest(used: int) -> str:  # after the values in ``used`` (a bit set)
            if used in after:
                return after[used]
            r = after[used] = self.b.fresh("unique_items")
            n = bin(used).count("1")
            alts: list[tuple[str, ...]] = [()] if n >= lo else []
            if n < top:
                alts += [(self.lit(","), c, rest(used | 1 << i))
                         for i, c in enumerate(consts) if not used >> i & 1]
            self.rule(r, *alts)
            return r

        alts: list[tuple[str, ...]] = [(self.lit("["), self.lit("]"))] if lo == 0 else []
        if top >= 1:
            alts += [(self.lit("["), c, rest(1 << i), self.lit("]"))
                     for i, c in enumerate(consts)]
        return self.rule(self.b.fresh("array"), *alts)
