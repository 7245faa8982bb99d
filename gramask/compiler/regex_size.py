"""A cheap lower bound on a regex's DFA size, computed before any real determinisation.

Why: interegular determinises a terminal's regex in pure Python before gramask sees a single
state, so a regex like ``/(a|b)*a(a|b){20}/`` (2^21 states: the automaton must remember the
last 21 letters) would run for hours. Here a Thompson NFA is built from ``re``'s own parse and
determinised over a small set of representative characters (every literal and range end in
the pattern, plus a few of each category), stopping as soon as the count passes the limit.
Every word over those characters is a word of the full alphabet, so every subset reached here
is reached by the full determinisation too: the count is a lower bound, and a regex refused
here would really have exceeded the limit. Patterns this module does not model (case folding,
anchors, lookarounds, huge expansions) are left to the full construction, which checks the
limit as well.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from re import _constants as _c  # re's own parser: the regexes are Python regexes
from re import _parser as _sre_parse
from typing import Any

__all__ = ["dfa_states_at_least", "dfa_states_from_width"]

MAX_NFA_NODES = 50_000
_FIXED_REPS = "aZ09 \t\n_-.é中\x00\U0001f600"
_CATEGORIES: dict[str, re.Pattern[str]] = {
    "CATEGORY_DIGIT": re.compile(r"\d"), "CATEGORY_NOT_DIGIT": re.compile(r"\D"),
    "CATEGORY_SPACE": re.compile(r"\s"), "CATEGORY_NOT_SPACE": re.compile(r"\S"),
    "CATEGORY_WORD": re.compile(r"\w"), "CATEGORY_NOT_WORD": re.compile(r"\W"),
}


class _Unmodelled(Exception):
    """The pattern uses something this estimate does not model."""


class _NFA:
    def __init__(self) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[Callable[[str], bool], int]]] = []
        self.chars: set[str] = set(_FIXED_REPS)
        self.predicates: dict[tuple[str, str, bool], Callable[[str], bool]] = {}

    def node(self) -> int:
        if len(self.eps) >= MAX_NFA_NODES:
            raise _Unmodelled
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def build(self, items: Any, start: int, dotall: bool) -> int:
        """Wire ``items`` (a parsed sequence) from ``start``; returns the end node."""
        cur = start
        for op, av in items:
            cur = self.atom(str(op), av, cur, dotall)
        return cur

    def atom(self, op: str, av: Any, cur: int, dotall: bool) -> int:
        if op in ("LITERAL", "NOT_LITERAL", "IN", "ANY"):
            key = (op, repr(av), dotall)  # a repeated atom: one predicate for every copy
            pred = self.predicates.get(key)
            if pred is None:
                pred = self.predicates[key] = self.predicate(op, av, dotall)
            end = self.node()
            self.moves[cur].append((pred, end))
            return end
        if op == "SUBPATTERN":
            _group, add, dele, sub = av
            if (add | dele) & re.IGNORECASE:
                raise _Unmodelled
            d = bool(add & re.DOTALL) or (dotall and not dele & re.DOTALL)
            return self.build(sub, cur, d)
        if op == "BRANCH":
            _, alts = av
            end = self.node()
            for alt in alts:
                s = self.node()
                self.eps[cur].append(s)
                self.eps[self.build(alt, s, dotall)].append(end)
            return end
        if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            lo, hi, sub = av
            for _ in range(lo):
                cur = self.build(sub, cur, dotall)
            if hi == _c.MAXREPEAT:
                loop = self.node()
                self.eps[cur].append(loop)
                self.eps[self.build(sub, loop, dotall)].append(loop)
                return loop
            end = self.node()
            for _ in range(hi - lo):
                self.eps[cur].append(end)
                cur = self.build(sub, cur, dotall)
            self.eps[cur].append(end)
            return end
        raise _Unmodelled  # anchors, lookarounds, backreferences, atomic groups

    def predicate(self, op: str, av: Any, dotall: bool) -> Callable[[str], bool]:
        if op == "ANY":
            return _anything if dotall else _not_newline
        if op in ("LITERAL", "NOT_LITERAL"):
            lit = chr(av)
            self.chars.add(lit)
            return _Class([(lit, lit)], [], op == "NOT_LITERAL")
        negate = False
        ranges: list[tuple[str, str]] = []
        cats: list[re.Pattern[str]] = []
        for kind, x in av:
            k = str(kind)
            if k == "NEGATE":
                negate = True
            elif k == "LITERAL":
                ranges.append((chr(x), chr(x)))
            elif k == "RANGE":
                ranges.append((chr(x[0]), chr(x[1])))
            elif k == "CATEGORY" and str(x) in _CATEGORIES:
                cats.append(_CATEGORIES[str(x)])
            else:
                raise _Unmodelled
        for lo, hi in ranges:
            self.chars.update((lo, hi))
        return _Class(ranges, cats, negate)


def _anything(ch: str) -> bool:
    return True


def _not_newline(ch: str) -> bool:
    return ch != "\n"


class _Class:
    """A character class: ranges and categories, possibly negated."""

    def __init__(self, ranges: list[tuple[str, str]], cats: list[re.Pattern[str]],
                 negate: bool) -> None:
        self.ranges, self.cats, self.negate = ranges, cats, negate

    def __call__(self, ch: str) -> bool:
        hit = any(lo <= ch <= hi for lo, hi in self.ranges) or any(
            c.fullmatch(ch) is not None for c in self.cats)
        return hit != self.negate


def dfa_states_at_least(pattern: str, limit: int) -> int | None:
    """A lower bound on the states of ``pattern``'s DFA, counted up to ``limit + 1``; None
    when the pattern uses something not modelled here (the caller then finds out the slow
    way)."""
    try:
        parsed = _sre_parse.parse(pattern)
        if parsed.state.flags & re.IGNORECASE:
            return None
        nfa = _NFA()
        start = nfa.node()
        final = nfa.build(parsed, start, bool(parsed.state.flags & re.DOTALL))
    except (_Unmodelled, re.error, RecursionError, TypeError, ValueError):
        return None
    del final  # acceptance does not change which subsets are reachable
    reps = sorted(nfa.chars)
    eps = nfa.eps
    # each move as a bitmask over the representatives: each predicate runs once per
    # representative, not per subset nor per copy of a repeated atom
    mask_of: dict[int, int] = {}

    def mask(pred: Callable[[str], bool]) -> int:
        got = mask_of.get(id(pred))
        if got is None:
            got = mask_of[id(pred)] = sum(1 << i for i, ch in enumerate(reps) if pred(ch))
        return got

    moves = [[(mask(pred), t) for pred, t in ms] for ms in nfa.moves]

    def closure(nodes: set[int]) -> frozenset[int]:
        out = set(nodes)
        work = list(nodes)
        while work:
            for m in eps[work.pop()]:
                if m not in out:
                    out.add(m)
                    work.append(m)
        return frozenset(out)

    first = closure({start})
    seen = {first}
    work = [first]
    while work:
        subset = work.pop()
        for i in range(len(reps)):
            nxt = {t for n in subset for mask, t in moves[n] if mask >> i & 1}
            if not nxt:
                continue
            s = closure(nxt)
            if s not in seen:
                seen.add(s)
                if len(seen) > limit:
                    return len(seen)
                work.append(s)
    return len(seen)


def dfa_states_from_width(pattern: str) -> int:
    """A lower bound on the states of ``pattern``'s trimmed character DFA from its match
    lengths alone, in time linear in the pattern: along a shortest match the states are
    pairwise distinct (each is exactly one character further from acceptance), and so are
    they along a longest match when matches are bounded. So ``/x{50000}/`` or a 100 KB
    literal is refused before any automaton is built. 0 when the pattern does not parse."""
    try:
        lo, hi = _sre_parse.parse(pattern).getwidth()
    except (re.error, RecursionError, OverflowError):
        return 0
    bounded = hi < _c.MAXREPEAT
    return int(max(lo, hi if bounded else 0)) + 1
