"""llama.cpp GBNF (and XGrammar's EBNF, the same family) → a :class:`gramask.Grammar`.

GBNF grammars have no lexer: their terminals are single characters, and the language is a
character-level context-free language. gramask needs lexer terminals for its token tables, so
this front end *chooses* them:

1. Rules that never reach a recursive rule are *lexical* (their language is regular). Every
   maximal lexical piece used by a non-lexical rule becomes one terminal (a lexical rule keeps
   its name), so a JSON string or a number is one lexeme, not one parser step per character.
2. The terminals are lexed by gramask's contextual greedy lexer, which ends a lexeme only when
   the next byte keeps no terminal alive. That is the character-level language exactly when no
   lexeme boundary is ever ambiguous: after any text a terminal matches, no byte that can
   follow that terminal in the grammar may extend a live terminal. This is checked on the
   product lexer automaton; a terminal that fails it is split one level (its alternatives,
   sequence items or repeated item become terminals, a lexical rule becomes a rule again) and
   the check repeats. Single characters never fail, so the loop ends, in the worst case at
   llama.cpp's own character-level grammar.

So the masks are exact for the language llama.cpp accepts, and the tables stay as small as the
grammar's lexical structure allows. Token syntax (``<[id]>``, ``<token>``, ``!<...>``) matches
vocabulary tokens, not text, and is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..compiler.charclass import complement
from ..errors import GrammarError

__all__ = ["GbnfGrammar", "from_gbnf", "parse_gbnf"]

MAX_CODEPOINT = 0x10FFFF
# an inlined lexical rule whose regex would be longer than this stays a rule (rules that
# reference each other twice per level would otherwise grow exponentially when inlined)
MAX_INLINE_REGEX = 20_000
# rounds of "split the terminals whose lexeme boundary is ambiguous"; each round splits at
# least one terminal, and terminals nest no deeper than the grammar does
MAX_SPLIT_ROUNDS = 64


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Terminal:
    """A chosen lexer terminal: a regex that matches at least one character."""

    name: str
    pattern: str
    is_string: bool = False
    priority: int = 0
    ignored: bool = False


@dataclass(frozen=True)
class Rule:
    """A BNF production over rule and terminal names."""

    lhs: str
    rhs: tuple[str, ...]


@dataclass(frozen=True)
class GbnfGrammar:
    """What :func:`from_gbnf` chose; ``gramask.Grammar.from_gbnf`` turns it into a Grammar
    (this module does not import the grammar layer, which imports it)."""

    terminals: tuple[Terminal, ...]
    rules: tuple[Rule, ...]
    start: str


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
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


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
        p = self.pos if pos is None else pos
        start = self.text.rfind("\n", 0, p) + 1
        end = self.text.find("\n", p)
        line_text = self.text[start: end if end >= 0 else len(self.text)]
        where = f" in rule {self.rule!r}" if self.rule else ""
        return GrammarError(
            f"{self.source}: {message}{where}", line=self.line(p), column=p - start + 1,
            context=f"{line_text}\n{' ' * (p - start)}^", name=self.rule or None,
        )

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
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            self.skip(True)
            alts.append(self.sequence(nested))
        return Alt(tuple(alts))

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
        if e in _SIMPLE_ESCAPES:
            self.pos += 2
            return ord(_SIMPLE_ESCAPES[e])
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


# --------------------------------------------------------------------------- regexes
def _cp(c: int) -> str:
    """One code point in a regex: ASCII letters and digits as is, other ASCII as ``\\xNN``,
    the rest as the character itself (interegular reads no ``\\u`` escapes)."""
    if c < 0x80:
        return chr(c) if chr(c).isalnum() else f"\\x{c:02x}"
    if 0xD800 <= c <= 0xDFFF:  # not a character; a class edge only: keep the range valid
        return chr(0xD7FF if c < 0xDC00 else 0xE000)
    return chr(c)


def _class_regex(c: Cls) -> str:
    if c == ANY:
        return "(?s:.)"
    # a class covering most of Unicode is written as the complement of the rest, which the
    # byte-automaton construction handles without enumerating code points
    size = sum(hi - lo + 1 for lo, hi in c.ranges)
    if size > (MAX_CODEPOINT + 1) // 2:
        rest = complement(c.ranges)
        return _class_regex(Cls(rest, not c.negated))
    body = "".join(_cp(lo) if lo == hi else f"{_cp(lo)}-{_cp(hi)}" for lo, hi in c.ranges)
    if c.negated:
        return f"[^{body}]" if body else "(?s:.)"
    if len(c.ranges) == 1 and c.ranges[0][0] == c.ranges[0][1]:
        return _cp(c.ranges[0][0])
    return f"[{body}]" if body else "[^\\x00-\\U0010ffff]"


class _Lexical:
    """Which rules are regular (non-recursive, referencing only such rules), their regexes,
    and nullability of any node."""

    def __init__(self, rules: dict[str, Alt]) -> None:
        self.rules = rules
        self.lexical: set[str] = set()
        self._nullable: dict[str, bool] = {}
        self._regex: dict[str, str] = {}
        self._classify()

    def _classify(self) -> None:
        # iterative DFS: a rule is lexical iff all rules it references are lexical and none
        # lies on a cycle through it
        state: dict[str, int] = {}  # 1 on stack, 2 done
        for root in self.rules:
            if root in state:
                continue
            stack: list[tuple[str, list[str]]] = [(root, sorted(_refs(self.rules[root])))]
            state[root] = 1
            cyclic: set[str] = set()
            while stack:
                name, todo = stack[-1]
                if todo:
                    r = todo.pop()
                    if r not in self.rules:
                        continue
                    if state.get(r) == 1:  # a cycle: everything on the stack from r is cyclic
                        on = [n for n, _ in stack]
                        cyclic.update(on[on.index(r):])
                    elif r not in state:
                        state[r] = 1
                        stack.append((r, sorted(_refs(self.rules[r]))))
                    continue
                stack.pop()
                state[name] = 2
                if name not in cyclic and all(
                    r in self.lexical for r in _refs(self.rules[name]) if r in self.rules
                ) and len(self.regex(self.rules[name])) <= MAX_INLINE_REGEX:
                    self.lexical.add(name)

    def is_lexical(self, node: Node) -> bool:
        if isinstance(node, Ref):
            return node.name in self.lexical
        if isinstance(node, (Seq, Alt)):
            return all(self.is_lexical(x) for x in node.items)
        if isinstance(node, Rep):
            return self.is_lexical(node.item)
        return True

    def nullable(self, node: Node) -> bool:
        if isinstance(node, Lit):
            return not node.text
        if isinstance(node, Cls):
            return False
        if isinstance(node, Ref):
            got = self._nullable.get(node.name)
            if got is None:
                self._nullable[node.name] = False  # cycles: assume not, fixed below
                got = self._nullable[node.name] = self.nullable(self.rules[node.name])
            return got
        if isinstance(node, Seq):
            return all(self.nullable(x) for x in node.items)
        if isinstance(node, Alt):
            return any(self.nullable(x) for x in node.items)
        return node.lo == 0 or node.hi == 0 or self.nullable(node.item)

    def regex(self, node: Node) -> str:
        """The regex of a lexical node (referenced rules inlined); "" for the empty string."""
        if isinstance(node, Lit):
            return "".join(_cp(ord(c)) if not c.isalnum() else c for c in node.text)
        if isinstance(node, Cls):
            return _class_regex(node)
        if isinstance(node, Ref):
            got = self._regex.get(node.name)
            if got is None:
                got = self._regex[node.name] = self.regex(self.rules[node.name])
            return got
        if isinstance(node, Seq):
            return "".join(self.regex(x) for x in node.items)
        if isinstance(node, Alt):
            if len(node.items) == 1:
                return self.regex(node.items[0])
            return "(?:" + "|".join(self.regex(x) for x in node.items) + ")"
        inner = self.regex(node.item)
        if not inner or node.hi == 0:
            return ""
        atom = inner if _is_atom(inner) else f"(?:{inner})"
        lo, hi = node.lo, node.hi
        if (lo, hi) == (0, None):
            return atom + "*"
        if (lo, hi) == (1, None):
            return atom + "+"
        if (lo, hi) == (0, 1):
            return atom + "?"
        if (lo, hi) == (1, 1):
            return inner
        if hi is None:
            return f"{atom}{{{lo},}}"
        if lo == hi:
            return f"{atom}{{{lo}}}"
        return f"{atom}{{{lo},{hi}}}"

    def nonempty(self, node: Node) -> Node | None:
        """A node for the language of ``node`` without the empty string; None if that is
        empty (the node matches only the empty string)."""
        if not self.nullable(node):
            return node
        if isinstance(node, Lit):
            return None
        if isinstance(node, Ref):
            return self.nonempty(self.rules[node.name])
        if isinstance(node, Alt):
            alts = [y for x in node.items if (y := self.nonempty(x)) is not None]
            return Alt(tuple(alts)) if alts else None
        if isinstance(node, Seq):  # every item is nullable: the first non-empty one starts it
            alts2: list[Node] = []
            for i, x in enumerate(node.items):
                y = self.nonempty(x)
                if y is not None:
                    alts2.append(Seq((y, *node.items[i + 1:])))
            return Alt(tuple(alts2)) if alts2 else None
        assert isinstance(node, Rep)
        if node.hi == 0:
            return None
        y = self.nonempty(node.item)
        if y is None:
            return None
        if not self.nullable(node.item):  # lo == 0
            return Rep(node.item, 1, node.hi)
        return Seq((y, Rep(node.item, 0, None if node.hi is None else node.hi - 1)))


def _is_atom(r: str) -> bool:
    if len(r) == 1 or re.fullmatch(r"\\x[0-9a-f]{2}|\\u[0-9a-f]{4}|\\U[0-9a-f]{8}", r):
        return True
    if r.startswith("[") and r.endswith("]") and r.count("]") == 1:
        return True
    return r == "(?s:.)"


def _refs(node: Node) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Ref):
            out.add(n.name)
        elif isinstance(n, (Seq, Alt)):
            stack.extend(n.items)
        elif isinstance(n, Rep):
            stack.append(n.item)
    return out


def _splittable(node: Node) -> bool:
    """Whether a terminal's node can be split into smaller terminals (single characters
    cannot)."""
    if isinstance(node, Cls):
        return False
    if isinstance(node, Lit):
        return len(node.text) > 1
    return True


# --------------------------------------------------------------------------- emission
class _Emitter:
    """Rules + terminals for one choice of split terminals (patterns in ``split``)."""

    def __init__(self, rules: dict[str, Alt], lex: _Lexical, split: set[str]) -> None:
        self.src = rules
        self.lex = lex
        self.split = split
        self.rules: list[Rule] = []
        self.terms: dict[str, str] = {}  # pattern -> terminal name
        self.term_nodes: dict[str, Node] = {}  # pattern -> node it came from
        self.names: set[str] = set(rules)
        self.emitted_rules: set[str] = set()
        self.counter = 0
        self.helpers: dict[tuple[object, ...], str] = {}

    def fresh(self, base: str) -> str:
        while True:
            self.counter += 1
            name = f"{base}__{self.counter}"
            if name not in self.names:
                self.names.add(name)
                return name

    def run(self, start: str) -> None:
        self.rule(start)

    def rule(self, name: str) -> str:
        """Emit rule ``name`` structurally (once) and return its symbol."""
        if name not in self.emitted_rules:
            self.emitted_rules.add(name)
            for alt in self.src[name].items:
                self.rules.append(Rule(name, tuple(self.seq_symbols(alt, name))))
        return name

    def terminal(self, node: Node, owner: str) -> list[str] | None:
        """The symbols for a lexical node as one terminal: [] for the empty string, [T] or
        [helper] where the helper rule is T | ε; None when its pattern is to be split."""
        ne = self.lex.nonempty(node)
        if ne is None:
            return []
        pattern = self.lex.regex(ne)
        if pattern in self.split and _splittable(ne):
            return None
        name = self.terms.get(pattern)
        if name is None:
            if isinstance(node, Ref):
                base = owner
            elif isinstance(ne, Lit) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", ne.text):
                base = ne.text
            else:
                base = f"{owner}_1"
            base = re.sub(r"[^A-Za-z0-9_]", "_", base).upper()
            name = base
            k = 1
            while name in self.names:
                k += 1
                name = re.sub(r"_1$", "", base) + f"_{k}"
            self.names.add(name)
            self.terms[pattern] = name
            self.term_nodes[pattern] = ne
        if ne is node:
            return [name]
        key = ("opt", name)
        helper = self.helpers.get(key)
        if helper is None:
            helper = self.helpers[key] = self.fresh(f"{owner}_opt")
            self.rules.append(Rule(helper, (name,)))
            self.rules.append(Rule(helper, ()))
        return [helper]

    def seq_symbols(self, node: Node, owner: str) -> list[str]:
        """Symbols for ``node`` in a sequence context (a Seq contributes its items)."""
        if self.lex.is_lexical(node):
            owner_t = node.name if isinstance(node, Ref) else owner
            got = self.terminal(node, owner_t)
            if got is not None:
                return got
            return self.split_symbols(node, owner)
        return self.structural(node, owner)

    def split_symbols(self, node: Node, owner: str) -> list[str]:
        """A lexical node whose terminal is split: one level of structure."""
        if isinstance(node, Lit):
            return [s for c in node.text for s in self.seq_symbols(Lit(c), owner)]
        if isinstance(node, Ref):
            return [self.rule(node.name)]
        return self.structural(node, owner)

    def structural(self, node: Node, owner: str) -> list[str]:
        if isinstance(node, Ref):
            if node.name not in self.src:
                raise GrammarError(f"rule {owner!r} references undefined rule {node.name!r}",
                                   line=node.line, name=node.name)
            return [self.rule(node.name)]
        if isinstance(node, Seq):
            return [s for x in node.items for s in self.seq_symbols(x, owner)]
        if isinstance(node, Alt):
            if len(node.items) == 1:
                return self.seq_symbols(node.items[0], owner)
            h = self.fresh(owner)
            for x in node.items:
                self.rules.append(Rule(h, tuple(self.seq_symbols(x, owner))))
            return [h]
        if isinstance(node, Rep):
            return self.repeat(node, owner)
        # a literal or class inside a structural node is lexical; not reached
        raise AssertionError(node)  # pragma: no cover

    def repeat(self, node: Rep, owner: str) -> list[str]:
        item = self.seq_symbols(node.item, owner)
        lo, hi = node.lo, node.hi
        out: list[str] = []
        if not item:
            return out
        for _ in range(lo):
            out.extend(item)
        if hi is None:  # star: h -> ε | h item
            h = self.fresh(owner)
            self.rules.append(Rule(h, ()))
            self.rules.append(Rule(h, (h, *item)))
            out.append(h)
        elif hi > lo:  # up to hi - lo more: opt_k -> ε | item opt_{k-1}
            prev: str | None = None
            for _ in range(hi - lo):
                h = self.fresh(owner)
                self.rules.append(Rule(h, ()))
                self.rules.append(Rule(h, (*item, *([prev] if prev else []))))
                prev = h
            assert prev is not None
            out.append(prev)
        return out


# --------------------------------------------------------------------------- exactness check
def _ambiguous_terminals(
    terminals: list[Terminal], rules: list[Rule], nodes: list[Node], start: str
) -> set[int]:
    """Indices of terminals to split: those whose lexeme can end where a byte that may follow
    them keeps alive a terminal the parser may allow at the same time (the greedy lexer
    would read on; the grammar may not)."""
    import numpy as np

    from ..compiler.lexer import build_lexer_dfa
    from ..compiler.regex_bytes import regex_to_byte_dfa

    dfas = [regex_to_byte_dfa(t.name, t.pattern) for t in terminals]
    dfa = build_lexer_dfa(terminals, dfas)
    n = len(terminals)
    index = {t.name: i for i, t in enumerate(terminals)}
    first_bytes = [np.flatnonzero(d.trans[0] >= 0) for d in dfas]
    follow, first_start = _follow_terminals(rules, index, start)
    # "allowed together", over-approximated: the terminals the parser allows after a lexeme
    # all follow one of the allowed terminals that lexeme matches (or start the text); a
    # lexeme matches several when they are allowed together and share a text
    nxt = np.zeros((n, n), dtype=bool)
    for i, group in follow.items():
        nxt[i, sorted(group)] = True
    together = np.zeros((n, n), dtype=bool)
    g0 = sorted(first_start)
    together[np.ix_(g0, g0)] = True
    for i in range(n):
        together |= np.outer(nxt[i], nxt[i])
    acc = dfa.accepting.astype(np.int64)
    overlap = (acc.T @ acc) > 0
    while True:
        xs, ys = np.nonzero(np.triu(together & overlap, 1))
        grown = together.copy()
        for x, y in zip(xs.tolist(), ys.tolist(), strict=True):
            u = nxt[x] | nxt[y]
            grown |= np.outer(u, u)
        if (grown == together).all():
            break
        together = grown
    blamed: set[int] = set()
    alive = dfa.trans >= 0
    for i in range(n):
        nxt_terms = sorted(follow.get(i, ()))
        if not nxt_terms:
            continue
        fb = np.unique(np.concatenate([first_bytes[j] for j in nxt_terms]))
        states = np.flatnonzero(dfa.accepting[:, i])
        if not states.size or not fb.size:
            continue
        hit = alive[np.ix_(states, fb)]
        for si, bi in zip(*np.nonzero(hit), strict=True):
            live = np.flatnonzero(dfa.live[dfa.trans[states[si], fb[bi]]] & together[i])
            if live.size:
                blamed.add(i)
                blamed.update(live.tolist())
    return {i for i in blamed if _splittable(nodes[i])}


def _follow_terminals(
    rules: list[Rule], index: dict[str, int], start: str
) -> tuple[dict[int, set[int]], set[int]]:
    """Per terminal, the terminals that can come right after it in some sentential form;
    and the terminals that can start one."""
    nts = {r.lhs for r in rules}
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.lhs not in nullable and all(s in nullable for s in r.rhs):
                nullable.add(r.lhs)
                changed = True
    first: dict[str, set[int]] = {n: set() for n in nts}
    changed = True
    while changed:
        changed = False
        for r in rules:
            acc = first[r.lhs]
            before = len(acc)
            for s in r.rhs:
                if s in index:
                    acc.add(index[s])
                    break
                acc |= first.get(s, set())
                if s not in nullable:
                    break
            changed |= len(acc) != before
    follow_nt: dict[str, set[int]] = {n: set() for n in nts}
    follow_t: dict[int, set[int]] = {}

    def first_of(seq: tuple[str, ...]) -> tuple[set[int], bool]:
        out: set[int] = set()
        for s in seq:
            if s in index:
                out.add(index[s])
                return out, False
            out |= first.get(s, set())
            if s not in nullable:
                return out, False
        return out, True

    changed = True
    while changed:
        changed = False
        for r in rules:
            for k, s in enumerate(r.rhs):
                f, through = first_of(r.rhs[k + 1:])
                if through:
                    f = f | follow_nt[r.lhs]
                if s in index:
                    tgt = follow_t.setdefault(index[s], set())
                else:
                    tgt = follow_nt.setdefault(s, set())
                before = len(tgt)
                tgt |= f
                changed |= len(tgt) != before
    return follow_t, first.get(start, set())


# --------------------------------------------------------------------------- entry point
def from_gbnf(text: str, *, start: str = "root", source: str = "<gbnf>") -> GbnfGrammar:
    """Read llama.cpp GBNF / XGrammar EBNF text and choose its terminals (see the module
    docstring); to be lexed in the contextual mode.

    Raises
    ------
    GrammarError
        Syntax errors, token syntax, undefined or duplicate rules, a missing ``start`` rule,
        an empty language; the message names the rule and the line.
    """
    rules, lines = parse_gbnf(text, source)
    if start not in rules:
        raise GrammarError(f"{source}: the grammar has no {start!r} rule (the start rule)",
                           name=start)
    for name, body in rules.items():
        for ref in sorted(_refs(body)):
            if ref not in rules:
                line = next((r.line for r in _ref_nodes(body) if r.name == ref), lines[name])
                raise GrammarError(
                    f"{source}: rule {name!r} references undefined rule {ref!r}",
                    line=line, name=ref,
                )
    lex = _Lexical(rules)
    split: set[str] = set()
    for _ in range(MAX_SPLIT_ROUNDS):
        em = _Emitter(rules, lex, split)
        if start in lex.lexical:
            # the whole language is regular: still one terminal, wrapped in a start rule
            syms = em.seq_symbols(Ref(start, lines[start]), start)
            if syms != [start]:
                em.rules.append(Rule(start, tuple(syms)))
            top = start
        else:
            em.run(start)
            top = start
        patterns = list(em.terms)
        terminals = [Terminal(name=em.terms[p], pattern=p) for p in patterns]
        nodes = [em.term_nodes[p] for p in patterns]
        if not terminals:
            raise GrammarError(f"{source}: the language of {start!r} is only the empty "
                               "string; gramask needs at least one character", name=start)
        try:
            bad = _ambiguous_terminals(terminals, em.rules, nodes, top)
        except GrammarError as e:  # a terminal over the state limits: split it, if it can be
            idx = next((i for i, t in enumerate(terminals) if t.name == e.name), None)
            if idx is None or not _splittable(nodes[idx]) or patterns[idx] in split:
                raise GrammarError(f"{source}: {e}", name=e.name) from None
            bad = {idx}
        if not bad:
            break
        split |= {patterns[i] for i in bad}
    else:  # pragma: no cover - each round splits a terminal
        raise GrammarError(f"{source}: could not choose lexer terminals in "
                           f"{MAX_SPLIT_ROUNDS} rounds")
    from ..compiler.analysis import prune

    pruned = prune(em.rules, [t.name for t in terminals], top, source=source, warn=False)
    used = {s for r in pruned for s in r.rhs}
    return GbnfGrammar(
        terminals=tuple(t for t in terminals if t.name in used),
        rules=tuple(pruned),
        start=top,
    )


def _ref_nodes(node: Node) -> list[Ref]:
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
