"""llama.cpp GBNF / XGrammar EBNF text → a syntax tree of rules (:func:`parse_gbnf`).

Only the reading of the text lives here (as llama.cpp's ``llama_grammar_parser`` reads it:
newlines only where it allows them, its escapes, its errors named by rule, line and column);
which pieces become lexer terminals is :mod:`gramask.frontends.gbnf_terminals`' job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import GrammarError, text_position

__all__ = ["ANY", "MAX_CODEPOINT", "Alt", "Cls", "Lit", "Node", "Ref", "Rep", "Seq",
           "parse_gbnf", "ref_nodes", "refs"]

MAX_CODEPOINT = 0x10FFFF

# --------------------------------------------------------------------------- syntax tree
@dataclass(frozen=True)
class Lit:
    """A literal string (possibly empty)."""

    text: str


@dataclass(frozen=True)
class Cls:
    """One character from ``ranges`` (inclusive code point pairs), or from their complement."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


@dataclass(frozen=True)
class Ref:
    name: str
    line: int


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    """``item{lo,hi}``; ``hi`` None is unbounded (``*`` = {0,}, ``+`` = {1,}, ``?`` = {0,1})."""

    item: Node
    lo: int
    hi: int | None


Node = Lit | Cls | Ref | Seq | Alt | Rep
ANY = Cls(((0, MAX_CODEPOINT),))


# --------------------------------------------------------------------------- parser
_NAME = re.compile(r"[A-Za-z0-9_-]+")
# llama.cpp's escapes, then those XGrammar reads too: C's control escapes and three
# punctuation marks anywhere (and, in _CLASS_PUNCTUATION, regex punctuation inside a class:
# [a\-z], [\^a], [\.])
_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]",
            "0": "\0", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v",
            "'": "'", "/": "/", "?": "?"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_CLASS_PUNCTUATION = set("$()*+-./?^{|}")


class _Parser:
    """Recursive descent over GBNF text, as llama.cpp's ``llama_grammar_parser`` reads it."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.pos = 0
        self.rule = ""

    # ---- positions and errors
    def line(self, pos: int | None = None) -> int:
        return self.text.count("\n", 0, self.pos if pos is None else pos) + 1

    def error(self, message: str, pos: int | None = None) -> GrammarError:
        line, column, context = text_position(self.text, self.pos if pos is None else pos)
        where = f" in rule {self.rule!r}" if self.rule else ""
        return GrammarError(f"{self.source}: {message}{where}", line=line, column=column,
                            context=context, name=self.rule or None)

    # ---- whitespace: newlines only where llama.cpp allows them (nested / after '|')
    def skip(self, newlines: bool) -> None:
        t = self.text
        while self.pos < len(t):
            c = t[self.pos]
            if c == "#":
                while self.pos < len(t) and t[self.pos] not in "\r\n":
                    self.pos += 1
            elif c in " \t" or (newlines and c in "\r\n"):
                self.pos += 1
            else:
                return

    def parse(self) -> tuple[dict[str, Alt], dict[str, int]]:
        rules: dict[str, Alt] = {}
        lines: dict[str, int] = {}
        t = self.text
        self.skip(True)
        while self.pos < len(t):
            m = _NAME.match(t, self.pos)
            if not m:
                raise self.error(f"expected a rule name, found {t[self.pos]!r}")
            name = m.group()
            start = self.pos
            self.pos = m.end()
            self.skip(False)
            if not t.startswith("::=", self.pos):
                raise self.error(f"expected '::=' after rule name {name!r}")
            if name in rules:
                self.rule = ""
                raise self.error(f"rule {name!r} is defined twice (first on line "
                                 f"{lines[name]})", start)
            self.rule = name
            self.pos += 3
            self.skip(True)
            body = self.alternatives(nested=False)
            rules[name] = body
            lines[name] = self.line(start)
            if self.pos < len(t) and t[self.pos] not in "\r\n":
                raise self.error(f"unexpected {t[self.pos]!r}")
            self.rule = ""
            self.skip(True)
        return rules, lines

    def alternatives(self, nested: bool) -> Alt:
        alts = [self.sequence(nested)]
        while True:
            end = self.pos
            if not nested:  # a line that begins with '|' goes on with the rule (as XGrammar
                self.skip(True)  # reads it; llama.cpp wants the '|' at the end of the line)
            if self.pos >= len(self.text) or self.text[self.pos] != "|":
                self.pos = end
                return Alt(tuple(alts))
            self.pos += 1
            self.skip(True)
            alts.append(self.sequence(nested))

    def sequence(self, nested: bool) -> Node:
        t = self.text
        items: list[Node] = []
        while self.pos < len(t):
            c = t[self.pos]
            if c == '"':
                items.append(self.literal())
            elif c == "[":
                items.append(self.char_class())
            elif c == ".":
                self.pos += 1
                items.append(ANY)
            elif c == "(":
                self.pos += 1
                self.skip(True)
                inner = self.alternatives(nested=True)
                if self.pos >= len(t) or t[self.pos] != ")":
                    raise self.error("expected ')'")
                self.pos += 1
                items.append(inner)
            elif c in "*+?":
                if not items:
                    raise self.error(f"{c!r} with nothing before it to repeat")
                self.pos += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
                items[-1] = Rep(items[-1], lo, hi)
            elif c == "{":
                if not items:
                    raise self.error("'{' with nothing before it to repeat")
                lo2, hi2 = self.braces()
                items[-1] = Rep(items[-1], lo2, hi2)
            elif c == "<" or (c == "!" and t.startswith("<", self.pos + 1)):
                raise self.error(
                    "token syntax (<[id]>, <token>, !<...>) matches vocabulary tokens, not "
                    "text; gramask grammars constrain text: write the token's text as a "
                    "literal instead"
                )
            elif _NAME.match(t, self.pos):
                m = _NAME.match(t, self.pos)
                assert m is not None
                # a name followed by ::= starts the next rule (a rule ends at a newline)
                items.append(Ref(m.group(), self.line()))
                self.pos = m.end()
            elif c in "|)":
                break
            elif c in "\r\n":
                if not nested:
                    break
                self.pos += 1
            else:
                raise self.error(f"unexpected {c!r}")
            self.skip(nested)
        if len(items) == 1:
            return items[0]
        return Seq(tuple(items))

    def braces(self) -> tuple[int, int | None]:
        m = re.compile(r"\{\s*(\d+)\s*(,\s*(\d*)\s*)?\}").match(self.text, self.pos)
        if not m:
            raise self.error("expected a repetition {m}, {m,} or {m,n}")
        lo = int(m.group(1))
        hi: int | None = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if hi is not None and hi < lo:
            raise self.error(f"repetition {{{lo},{hi}}}: the maximum is below the minimum")
        self.pos = m.end()
        return lo, hi

    def char(self, end: str) -> int:
        """One character of a literal or class, escapes decoded; returns its code point."""
        t = self.text
        if self.pos >= len(t) or t[self.pos] in "\r\n":
            raise self.error(f"unterminated {'string' if end == chr(34) else 'character class'}")
        c = t[self.pos]
        if c != "\\":
            self.pos += 1
            return ord(c)
        e = t[self.pos + 1: self.pos + 2]
        if e in _ESCAPES:
            self.pos += 2
            return ord(_ESCAPES[e])
        if end == "]" and e in _CLASS_PUNCTUATION:
            self.pos += 2
            return ord(e)
        if e in _HEX_ESCAPES:
            n = _HEX_ESCAPES[e]
            digits = t[self.pos + 2: self.pos + 2 + n]
            if len(digits) != n or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"escape \\{e} needs {n} hex digits")
            cp = int(digits, 16)
            if cp > MAX_CODEPOINT:
                raise self.error(f"escape \\{e}{digits} is beyond U+10FFFF")
            self.pos += 2 + n
            return cp
        raise self.error(f"unknown escape \\{e}")

    def literal(self) -> Lit:
        self.pos += 1
        out: list[int] = []
        while True:
            if self.pos < len(self.text) and self.text[self.pos] == '"':
                self.pos += 1
                return Lit("".join(map(chr, out)))
            out.append(self.char('"'))

    def char_class(self) -> Cls:
        self.pos += 1
        negated = self.text.startswith("^", self.pos)
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if self.pos < len(self.text) and self.text[self.pos] == "]":
                self.pos += 1
                break
            lo = self.char("]")
            hi = lo
            if self.text.startswith("-", self.pos) and not self.text.startswith("-]", self.pos):
                self.pos += 1
                hi = self.char("]")
                if hi < lo:
                    raise self.error(f"character range {chr(lo)!r}-{chr(hi)!r} is reversed")
            ranges.append((lo, hi))
        return Cls(_merge(ranges), negated)


def _merge(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def parse_gbnf(text: str, source: str = "<gbnf>") -> tuple[dict[str, Alt], dict[str, int]]:
    """GBNF text → (rule bodies by name, definition line by name).

    Raises
    ------
    GrammarError
        A syntax error, a duplicate rule or token syntax; names the rule, line and column.
    """
    return _Parser(text, source).parse()


def refs(node: Node) -> set[str]:
    """The names of the rules ``node`` references."""
    return {r.name for r in ref_nodes(node)}


def ref_nodes(node: Node) -> list[Ref]:
    """Every rule reference in ``node`` (with its line)."""
    out: list[Ref] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Ref):
            out.append(n)
        elif isinstance(n, (Seq, Alt)):
            stack.extend(n.items)
        elif isinstance(n, Rep):
            stack.append(n.item)
    return out
