"""Anchors that whole-match makes true, taken out of a ``from_regex`` pattern.

``re.fullmatch`` reads the pattern against the whole text, so a ``^``/``\\A`` that begins a
top-level alternative (through groups, not repeats) stands at the start of the text and a
``$``/``\\Z`` that ends one at its end: both always hold there. A ``\\b`` there holds where the
character beside it is a word character: it is dropped where every character that can stand
there is one (``\\bfoo\\b``, ``\\b[A-Z]\\w*\\b``, ``\\b\\d+\\b``). The pattern is written again
from ``re``'s parse tree only where it has anchors; one left anywhere else (``a^b``, ``(a$)*``,
``\\b(a|-)``) is refused by ``check_features``, naming it.
"""

from __future__ import annotations

from re import _constants as _c
from typing import Any

from ..compiler.regex_features import parse_regex, regex_ops

__all__ = ["without_edge_anchors"]

_AT_START = ("AT_BEGINNING", "AT_BEGINNING_STRING")  # ^ and \A
_AT_END = ("AT_END", "AT_END_STRING")  # $ and \Z
_CHARS = (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN)


def without_edge_anchors(body: str) -> str:
    """``body`` without the anchors whole-match makes true (unchanged if it has none, or if
    another is left)."""
    from .regex_nonempty import write_regex

    parsed = parse_regex(body)
    if parsed is None or not any(str(op) == "AT" for op, _ in regex_ops(parsed)):
        return body
    flags = int(parsed.state.flags)
    items = _strip(_strip(list(parsed), 0, _AT_START, flags), -1, _AT_END, flags)
    if any(str(op) == "AT" for op, _ in regex_ops(items)):
        return body
    return write_regex(items, flags, body)


def _strip(items: list[Any], end: int, kinds: tuple[str, ...], flags: int) -> list[Any]:
    """``items`` without the anchors of ``kinds`` (and the ``\\b`` that hold) at their
    ``end`` (0: first, -1: last), inside the groups and alternatives there too."""
    items = list(items)
    while items and str(items[end][0]) == "AT":
        at = str(items[end][1])
        beside = items[1:] if end == 0 else items[:-1]
        if at in kinds or (at == "AT_BOUNDARY" and _all_word(beside, end, flags)):
            items.pop(end)
        else:
            break
    if items:
        op, av = items[end]
        if op is _c.SUBPATTERN:
            inner = _strip(list(av[3]), end, kinds, (flags | av[1]) & ~av[2])
            items[end] = (op, (av[0], av[1], av[2], inner))
        elif op is _c.BRANCH:
            items[end] = (op, (av[0], [_strip(list(alt), end, kinds, flags) for alt in av[1]]))
    return items


def _all_word(items: list[Any], end: int, flags: int) -> bool:
    """Is the first (``end`` 0) or last (-1) character of every match of ``items`` a word
    character, as a ``\\b`` under ``flags`` counts them (and ``items`` never empty)?"""
    from ..compiler.regex_nfa import word_chars

    chars, nullable = _edge(items, end, flags)
    if chars is None or nullable:
        return False
    word = word_chars(bool(flags & _c.SRE_FLAG_ASCII))
    return all(any(lo >= a and hi <= b for a, b in word) for lo, hi in chars)


Edge = tuple[list[tuple[int, int]] | None, bool]


def _edge(items: list[Any], end: int, flags: int) -> Edge:
    """(the characters that can stand first (``end`` 0) or last (-1) in a match of
    ``items``, None where that is not known here; whether the match may be empty)."""
    out: list[tuple[int, int]] = []
    for op, av in items if end == 0 else items[::-1]:
        chars, nullable = _item_edge(op, av, end, flags)
        if chars is None:
            return None, False
        out += chars
        if not nullable:
            return out, False
    return out, True


def _item_edge(op: Any, av: Any, end: int, flags: int) -> Edge:
    from ..compiler.regex_nfa import char_set

    if op in _CHARS:
        return list(char_set(op, av, flags)), False
    if op is _c.SUBPATTERN:
        return _edge(list(av[3]), end, (flags | av[1]) & ~av[2])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
        if av[1] == 0:
            return [], True
        chars, nullable = _edge(list(av[2]), end, flags)
        return chars, nullable or av[0] == 0
    if op is _c.BRANCH:
        edges = [_edge(list(alt), end, flags) for alt in av[1]]
        if any(chars is None for chars, _ in edges):
            return None, False
        return [r for chars, _ in edges for r in chars or ()], any(n for _, n in edges)
    return None, False  # an anchor or another construct: not known here
