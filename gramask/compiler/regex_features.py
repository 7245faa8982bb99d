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

__all__ = ["check_features"]

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
