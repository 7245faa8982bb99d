"""Random small GBNF grammars and random texts of their languages, for ``tools/gbnf_fuzz.py``.

Grammars use the syntax llama.cpp and XGrammar share: literals with escapes, character
classes (ranges, ``^`` negation, escaped ``]``), groups, ``|``, ``* + ?``, ``{m}``, ``{m,}``,
``{m,n}`` and rule references (recursion included). ``.`` is left out: XGrammar's EBNF has
no such symbol. The generator keeps its own tree of each grammar, so texts are sampled from
it directly (no GBNF reading of our own), over a small alphabet where literals, classes and
repeats collide often.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# the characters everything is drawn from (one non-ASCII, to cover UTF-8 in classes)
ALPHABET = "abcxyz019 +-*()\"\\\n]é"
WORDS = ["a", "b", "ab", "ba", "abc", "x", "xy", "0", "1", "01", "+", "-", "*", "(", ")", " ",
         "  ", "\"", "\\", "\n", "]", "é", "aé", "if", "in", "int", "a b", "()", "--", ""]
RANGES = [("a", "c"), ("0", "9"), ("x", "z"), (" ", "+"), ("a", "z"), ("(", "*")]


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Cls:
    items: tuple[tuple[str, str], ...]  # inclusive ranges
    neg: bool

    def has(self, c: str) -> bool:
        return any(lo <= c <= hi for lo, hi in self.items) != self.neg


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Rep:
    item: Node
    lo: int
    hi: int | None
    spelling: str  # "*", "+", "?", "{m}", "{m,}" or "{m,n}"


@dataclass(frozen=True)
class Ref:
    name: str


Node = Lit | Cls | Seq | Alt | Rep | Ref


def _lit_char(c: str, rnd: random.Random) -> str:
    if c == "\"":
        return "\\\""
    if c == "\\":
        return "\\\\"
    if c == "\n":
        return "\\n"
    if c == "é":
        return rnd.choice(["é", "\\u00e9", "\\xe9"])
    return c


def _cls_char(c: str) -> str:
    return {"]": "\\]", "\\": "\\\\", "\n": "\\n", "\"": "\\\""}.get(c, c)


def render(n: Node, rnd: random.Random) -> str:
    """GBNF text of a node (escapes chosen at random among equivalent spellings)."""
    if isinstance(n, Lit):
        return "\"" + "".join(_lit_char(c, rnd) for c in n.text) + "\""
    if isinstance(n, Cls):
        # a single '-' goes last, bare: XGrammar reads ``\x2d0`` as one (longer) hex escape
        items = sorted(dict.fromkeys(n.items), key=lambda r: r == ("-", "-"))
        body = "".join((lo if lo == "-" else _cls_char(lo)) if lo == hi
                       else f"{_cls_char(lo)}-{_cls_char(hi)}" for lo, hi in items)
        return "[" + ("^" if n.neg else "") + body + "]"
    if isinstance(n, Seq):
        return " ".join(render(x, rnd) for x in n.items)
    if isinstance(n, Alt):
        return "(" + " | ".join(render(x, rnd) for x in n.items) + ")"
    if isinstance(n, Rep):
        inner = render(n.item, rnd)
        if isinstance(n.item, Seq) and len(n.item.items) > 1:
            inner = "(" + inner + ")"
        return inner + n.spelling
    return n.name


@dataclass
class GenGrammar:
    """A generated grammar: its rules (``root`` first) and its GBNF text."""

    rules: dict[str, Alt]
    text: str
    features: list[str] = field(default_factory=list)


class _Gen:
    def __init__(self, rnd: random.Random, names: list[str]) -> None:
        self.rnd, self.names, self.feats = rnd, names, set[str]()

    def atom(self, depth: int) -> Node:
        r = self.rnd.random()
        if r < 0.3:
            return Lit(self.rnd.choice(WORDS))
        if r < 0.6:
            items = []
            for _ in range(self.rnd.randint(1, 3)):
                if self.rnd.random() < 0.5:
                    items.append(self.rnd.choice(RANGES))
                else:
                    c = self.rnd.choice(ALPHABET)
                    items.append((c, c))
            neg = self.rnd.random() < 0.3
            self.feats.add("negated class" if neg else "class")
            return Cls(tuple(items), neg)
        if r < 0.8 or depth > 1:
            self.feats.add("reference")
            return Ref(self.rnd.choice(self.names))
        self.feats.add("group")
        return self.alt(depth + 1)

    def item(self, depth: int) -> Node:
        a = self.atom(depth)
        r = self.rnd.random()
        if r < 0.55:
            return a
        m, n = self.rnd.randint(0, 2), self.rnd.randint(0, 3)
        lo, hi, sp = [(0, None, "*"), (1, None, "+"), (0, 1, "?"), (m, m, f"{{{m}}}"),
                      (m, None, f"{{{m},}}"), (m, m + n, f"{{{m},{m + n}}}")][
            self.rnd.randrange(6)]
        self.feats.add("repeat " + ("{}" if sp.startswith("{") else sp))
        return Rep(a, lo, hi, sp)

    def seq(self, depth: int) -> Seq:
        return Seq(tuple(self.item(depth) for _ in range(self.rnd.randint(1, 3))))

    def alt(self, depth: int) -> Alt:
        # nested groups stay small: big ambiguous grammars only make each mask slower
        return Alt(tuple(self.seq(depth) for _ in range(self.rnd.randint(1, 3 - (depth > 0)))))


def grammar(rnd: random.Random) -> GenGrammar:
    """One random grammar (not checked: XGrammar and gramask decide whether it builds)."""
    names = ["root"] + [f"r{i}" for i in range(rnd.randint(0, 3))]
    g = _Gen(rnd, names[1:] or ["root"])
    rules = {n: g.alt(0) for n in names}
    lines = []
    for n, a in rules.items():
        # alternatives continued on the next line after '|' (or before it, as XGrammar
        # reads it), and comments, now and then (one draw, as before: old seeds keep their
        # grammars but for where the '|' stands)
        r = rnd.random()
        sep = " |\n    " if r < 0.1 else "\n    | " if r < 0.2 else " | "
        note = "  # a comment \"x\" [y]" if rnd.random() < 0.15 else ""
        lines.append(f"{n} ::= " + sep.join(render(s, rnd) for s in a.items) + note)
    return GenGrammar(rules, "\n".join(lines) + "\n", sorted(g.feats))


class Sampler:
    """Random texts of a grammar's language, drawn from its tree; ``None`` where a draw
    runs too deep (recursion) or too long."""

    def __init__(self, rules: dict[str, Alt], rnd: random.Random) -> None:
        self.rules, self.rnd = rules, rnd

    def sample(self, budget: int = 60) -> str | None:
        out: list[str] = []
        self.steps = budget
        return "".join(out) if self._emit(Ref("root"), out, 0) else None

    def _emit(self, n: Node, out: list[str], depth: int) -> bool:
        self.steps -= 1
        if self.steps < 0 or depth > 30:
            return False
        rnd = self.rnd
        if isinstance(n, Lit):
            out.append(n.text)
        elif isinstance(n, Cls):
            cs = [c for c in ALPHABET + "AZ#!~\t" if n.has(c)]
            if not cs:
                return False
            out.append(rnd.choice(cs))
        elif isinstance(n, Seq):
            return all(self._emit(x, out, depth + 1) for x in n.items)
        elif isinstance(n, Alt):
            return self._emit(rnd.choice(n.items), out, depth + 1)
        elif isinstance(n, Rep):
            hi = n.hi if n.hi is not None else n.lo + rnd.choice([0, 1, 2, 4])
            return all(self._emit(n.item, out, depth + 1)
                       for _ in range(rnd.randint(n.lo, hi)))
        else:
            return self._emit(self.rules[n.name], out, depth + 1)
        return True


def mutate(text: str, rnd: random.Random) -> str:
    """One random edit: insert, delete, replace or duplicate a slice."""
    i = rnd.randint(0, len(text))
    r = rnd.random()
    if r < 0.3:
        return text[:i] + rnd.choice(ALPHABET) + text[i:]
    if r < 0.55 and text:
        return text[:i] + text[i + 1:]
    if r < 0.8 and text:
        return text[:i] + rnd.choice(ALPHABET) + text[i + 1:]
    j = rnd.randint(i, len(text))
    return text[:j] + text[i:j] + text[j:]
