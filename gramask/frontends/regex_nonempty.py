"""A Python regex for the non-empty strings another one matches: L \\ {ε}.

A lexer terminal never matches the empty string, so a whole-output regex that may be empty
(``(\\w?)+``, ``a?b?``, ``(|x)``) becomes ``start: REGEX' | ε`` with REGEX' matching the
rest of its language. REGEX' is written from ``re``'s own parse tree, the way the GBNF front
end does it on its terminals: a nullable concatenation is the union, over its nullable parts,
of "this part non-empty, the ones before it empty, the rest as they are"; a nullable repeat
is "one non-empty copy, then the other copies". Capturing groups become non-capturing (nothing
refers to them: backreferences are refused first); flags are kept where they apply.
"""

from __future__ import annotations

from re import _constants as _c  # re's own parser (3.11+), as the regex compiler uses
from re import _parser as _sre_parse
from typing import Any

from ..compiler.regex_features import not_regular
from ..errors import UnsupportedRegexError

__all__ = ["nonempty_regex", "write_regex"]

_CATEGORY = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W", "CATEGORY_SPACE": r"\s", "CATEGORY_NOT_SPACE": r"\S",
}
# the flags that change what a regex without anchors matches (x and m do not; u is the default)
_FLAGS = ((_c.SRE_FLAG_IGNORECASE, "i"), (_c.SRE_FLAG_DOTALL, "s"), (_c.SRE_FLAG_ASCII, "a"))


def nonempty_regex(pattern: str, name: str = "REGEX") -> str | None:
    """A regex matching the non-empty strings ``pattern`` matches as a whole, or None when it
    matches only the empty string. ``pattern`` must parse (``re.error`` otherwise).

    Raises
    ------
    UnsupportedRegexError
        ``pattern`` uses a construct with no finite automaton (named, with ``name``).
    """
    parsed = _sre_parse.parse(pattern)
    body = _Writer(name, pattern).nonempty(list(parsed))
    if body is None:
        return None
    flags = _letters(int(parsed.state.flags))
    return f"(?{flags}){body}" if flags else body


def write_regex(items: list[Any], flags: int, pattern: str, name: str = "REGEX") -> str:
    """``re``'s parse-tree ``items`` (of ``pattern``, parsed with global ``flags``) written
    back as a regex of the same language (groups non-capturing).

    Raises
    ------
    UnsupportedRegexError
        ``items`` hold a construct with no finite automaton (named, with ``name``).
    """
    body = _Writer(name, pattern).seq(items)
    letters = _letters(flags)
    return f"(?{letters}){body}" if letters else body


def _letters(flags: int) -> str:
    return "".join(letter for bit, letter in _FLAGS if flags & bit)


def _char(cp: int) -> str:
    """One code point, escaped unless it is an ASCII letter, digit or ``_``."""
    ch = chr(cp)
    if ch.isascii() and (ch.isalnum() or ch == "_"):
        return ch
    if cp <= 0xFF:
        return f"\\x{cp:02x}"
    return f"\\u{cp:04x}" if cp <= 0xFFFF else f"\\U{cp:08x}"


class _Writer:
    """Writes parse-tree items back as regex text, and their non-empty parts."""

    def __init__(self, name: str, pattern: str) -> None:
        self.name = name
        self.pattern = pattern

    def refuse(self, op: Any) -> UnsupportedRegexError:
        return not_regular(self.name, self.pattern, op)

    # ------------------------------------------------------------------ which can be empty
    def nullable(self, items: list[Any]) -> bool:
        return all(self.nullable_item(op, av) for op, av in items)

    def nullable_item(self, op: Any, av: Any) -> bool:
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            return False
        if op is _c.SUBPATTERN:
            return self.nullable(list(av[3]))
        if op is _c.BRANCH:
            return any(self.nullable(list(alt)) for alt in av[1])
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            return av[0] == 0 or self.nullable(list(av[2]))
        raise self.refuse(op)

    # ------------------------------------------------------------------ L \ {ε}
    def nonempty(self, items: list[Any]) -> str | None:
        """The non-empty strings of a concatenation: its first non-empty part decides."""
        if not self.nullable(items):
            return self.seq(items)
        alts = [f"{y}{self.seq(items[i + 1:])}" for i, (op, av) in enumerate(items)
                if (y := self.nonempty_item(op, av)) is not None]
        return _alternatives(alts)

    def nonempty_item(self, op: Any, av: Any) -> str | None:
        if op is _c.SUBPATTERN:
            inner = self.nonempty(list(av[3]))
            return None if inner is None else self.group(av, inner)
        if op is _c.BRANCH:
            return _alternatives([y for alt in av[1] if (y := self.nonempty(list(alt)))
                                  is not None])
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            hi, sub = av[1], list(av[2])
            first = self.nonempty(sub) if hi != 0 else None
            if first is None:  # {0}, or copies of the empty string only
                return None
            lazy = "?" if op is _c.MIN_REPEAT else ""
            if not self.nullable(sub):  # lo == 0: at least one copy
                return _repeat(self.seq(sub), 1, hi, lazy)
            # a copy may be empty, so lo is no bound: one non-empty copy, then up to hi - 1
            rest = hi if hi == _c.MAXREPEAT else hi - 1
            return f"(?:{first})" + (_repeat(self.seq(sub), 0, rest, lazy) if rest else "")
        return self.item(op, av)  # a character: never empty

    # ------------------------------------------------------------------ as written
    def seq(self, items: list[Any]) -> str:
        return "".join(self.item(op, av) for op, av in items)

    def item(self, op: Any, av: Any) -> str:
        if op is _c.LITERAL:
            return _char(av)
        if op is _c.NOT_LITERAL:
            return f"[^{_char(av)}]"
        if op is _c.ANY:
            return "."
        if op is _c.IN:
            return "[" + "".join(self.class_item(iop, iav) for iop, iav in av) + "]"
        if op is _c.SUBPATTERN:
            return self.group(av, self.seq(list(av[3])))
        if op is _c.BRANCH:
            return "(?:" + "|".join(self.seq(list(alt)) for alt in av[1]) + ")"
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lazy = "?" if op is _c.MIN_REPEAT else ""
            return _repeat(self.seq(list(av[2])), av[0], av[1], lazy)
        raise self.refuse(op)

    def class_item(self, op: Any, av: Any) -> str:
        if op is _c.NEGATE:
            return "^"
        if op is _c.LITERAL:
            return _char(av)
        if op is _c.RANGE:
            return f"{_char(av[0])}-{_char(av[1])}"
        if op is _c.CATEGORY and str(av) in _CATEGORY:
            return _CATEGORY[str(av)]
        raise self.refuse(op)  # pragma: no cover - re's parser writes nothing else in []

    @staticmethod
    def group(av: Any, inner: str) -> str:
        """``inner`` under the group's flag changes (its group number is dropped)."""
        on, off = _letters(int(av[1])), _letters(int(av[2]))
        return f"(?{on}{'-' + off if off else ''}:{inner})"


def _repeat(body: str, lo: int, hi: int, lazy: str) -> str:
    count = _count(lo, hi)
    return f"(?:{body}){count}{lazy}" if count else f"(?:{body})"


def _count(lo: int, hi: int) -> str:
    short = {(0, _c.MAXREPEAT): "*", (1, _c.MAXREPEAT): "+", (0, 1): "?", (1, 1): ""}
    if (lo, hi) in short:
        return short[lo, hi]
    if hi == _c.MAXREPEAT:
        return f"{{{lo},}}"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def _alternatives(alts: list[str]) -> str | None:
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
