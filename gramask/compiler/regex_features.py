"""Which regex features a terminal may use: the ones with a finite automaton.

A lookaround, a backreference or an anchor cannot be compiled into the lexer's DFA; they are
refused before any automaton is built, with the terminal's name (the Lark, GBNF and regex
front ends check their patterns here too).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..errors import InvalidRegexError, UnsupportedRegexError

try:  # Python ≥ 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

__all__ = ["check_features", "has_lazy_repeat"]

_UNSUPPORTED = {
    "ASSERT": "a lookahead/lookbehind",
    "ASSERT_NOT": "a negative lookahead/lookbehind",
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "AT": "an anchor (^, $, \\b, \\A, \\Z)",
}


def check_features(name: str, pattern: str) -> None:
    """Refuse what has no finite automaton (lookarounds, backreferences, anchors), naming
    the terminal; a pattern ``re`` cannot parse is an :class:`InvalidRegexError`."""
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error as e:
        raise InvalidRegexError(
            f"terminal {name}: invalid regex /{pattern}/: {e}", name=name
        ) from None

    def walk(items: object) -> Iterator[str]:
        for op, av in items:  # type: ignore[attr-defined]
            opname = str(op)
            if opname in _UNSUPPORTED:
                yield _UNSUPPORTED[opname]
            if isinstance(av, (list, tuple)):
                for a in av:
                    if isinstance(a, _sre_parse.SubPattern):
                        yield from walk(a)
                    elif isinstance(a, (list, tuple)):
                        for x in a:
                            if isinstance(x, _sre_parse.SubPattern):
                                yield from walk(x)
            elif isinstance(av, _sre_parse.SubPattern):
                yield from walk(av)

    for feature in walk(parsed):
        raise UnsupportedRegexError(
            f"terminal {name}: regex /{pattern}/ uses {feature}, which has no finite "
            "automaton; rewrite it as a plain regular expression",
            name=name,
        )


def has_lazy_repeat(pattern: str) -> bool:
    """Does ``pattern`` hold a lazy repeat (``*?``, ``+?``, ``??``, ``{m,n}?``)? Such a
    terminal's lazy alternatives end at their first match (see ``build_byte_nfa``). False for a
    pattern ``re`` cannot parse (refused elsewhere, with its own message)."""
    try:
        parsed = _sre_parse.parse(pattern)
    except (re.error, RecursionError):
        return False

    def walk(items: object) -> bool:
        for op, av in items:  # type: ignore[attr-defined]
            if str(op) == "MIN_REPEAT" and av[0] != av[1]:
                return True
            subs = av if isinstance(av, (list, tuple)) else (av,)
            for a in subs:
                if isinstance(a, _sre_parse.SubPattern) and walk(a):
                    return True
                if isinstance(a, (list, tuple)) and any(
                        isinstance(x, _sre_parse.SubPattern) and walk(x) for x in a):
                    return True
        return False

    return walk(parsed)
