"""Which regex features a terminal may use: the ones with a finite automaton.

A lookaround, a backreference, an anchor, an atomic group or a possessive repeat cannot be
compiled into the lexer's DFA; they are refused before any automaton is built, with the
terminal's name (the Lark, GBNF and regex
front ends check their patterns here too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidRegexError, UnsupportedRegexError

try:  # Python ≥ 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

__all__ = ["NOT_REGULAR", "check_features", "has_category", "has_choice", "has_lazy_repeat",
           "not_regular", "parse_regex", "regex_ops"]

# the parse-tree operations with no finite automaton, as a message names them
NOT_REGULAR = {
    "ASSERT": "a lookahead/lookbehind",
    "ASSERT_NOT": "a negative lookahead/lookbehind",
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "AT": "an anchor (^, $, \\b, \\A, \\Z)",
    "ATOMIC_GROUP": "an atomic group",
    "POSSESSIVE_REPEAT": "a possessive repeat",
}
# refused before any automaton is built (the NFA builder refuses them too, and what else it
# cannot read)
_UNSUPPORTED = tuple(NOT_REGULAR)


def not_regular(name: str, pattern: str, op: object) -> UnsupportedRegexError:
    """The error for terminal ``name`` whose regex ``pattern`` uses parse-tree operation
    ``op``, which has no finite automaton."""
    what = NOT_REGULAR.get(str(op), str(op))
    return UnsupportedRegexError(
        f"terminal {name}: regex /{pattern}/ uses {what}, which has no finite automaton; "
        "rewrite it as a plain regular expression", name=name)


def check_features(name: str, pattern: str) -> Any:
    """Refuse what has no finite automaton (lookarounds, backreferences, anchors, atomic
    groups, possessive repeats), naming the terminal; a pattern ``re`` cannot parse is an :class:`InvalidRegexError`. Returns
    ``re``'s parse tree of the pattern (for :func:`has_category` and the like)."""
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error as e:
        raise InvalidRegexError(
            f"terminal {name}: invalid regex /{pattern}/: {e}", name=name
        ) from None

    op = next((op for op, _ in regex_ops(parsed) if str(op) in _UNSUPPORTED), None)
    if op is not None:
        raise not_regular(name, pattern, op)
    return parsed


def parse_regex(pattern: str) -> Any:
    """``re``'s parse tree of ``pattern``, parsed once for the questions below; None for a
    pattern ``re`` cannot parse (refused elsewhere, with its own message)."""
    try:
        return _sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return None


def has_lazy_repeat(parsed: Any) -> bool:
    """Does the pattern parsed as ``parsed`` (:func:`parse_regex`) hold a lazy repeat
    (``*?``, ``+?``, ``??``, ``{m,n}?``)? Such a terminal is read leftmost-first, as ``re``
    matches it (see ``build_byte_nfa``). False for None (a pattern ``re`` cannot parse)."""
    return parsed is not None and any(
        str(op) == "MIN_REPEAT" and av[0] != av[1] for op, av in regex_ops(parsed))


def has_choice(parsed: Any) -> bool:
    """Does the pattern parsed as ``parsed`` (:func:`parse_regex`) choose between ways to
    match (an alternation ``re`` did not fold into a class, a repeat of more than one
    count)? Only then can ``re``'s first match end before the longest one (a pattern
    without a choice matches one text at a point, or none). False for None."""
    return parsed is not None and any(
        (str(op) == "BRANCH" and len(av[1]) > 1)
        or (str(op) in ("MAX_REPEAT", "MIN_REPEAT") and av[0] != av[1])
        for op, av in regex_ops(parsed))


def has_category(parsed: Any) -> bool:
    """Does the pattern parsed as ``parsed`` (:func:`parse_regex`) use ``\\d``, ``\\w``,
    ``\\s`` or their negations (where gramask's ASCII reading and ``re``'s Unicode one can
    differ)? False for None (a pattern ``re`` cannot parse)."""
    return parsed is not None and any(
        str(op) == "IN" and any(str(iop) == "CATEGORY" for iop, _ in av)
        for op, av in regex_ops(parsed))


def regex_ops(items: Any) -> Iterator[tuple[Any, Any]]:
    """Every (op, argument) of a pattern parsed by ``re``'s parser (or a list of its items),
    those inside groups, branches and repeats included, each before what it holds."""
    for op, av in items:
        yield op, av
        for a in av if isinstance(av, (list, tuple)) else (av,):
            if isinstance(a, _sre_parse.SubPattern):
                yield from regex_ops(a)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    if isinstance(x, _sre_parse.SubPattern):
                        yield from regex_ops(x)
