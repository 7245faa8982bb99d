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
# ``wide`` grammars (``grammar(rnd, wide=True)``) also draw on these: 2-, 3- and 4-byte
# UTF-8, tabs and brackets, and ranges across them
WIDE_ALPHABET = "\t[^#你😀ÿα"
WIDE_WORDS = ["你好", "😀", "\t", "a\tb", "[x]", "^", "#", "é😀", "αβ"]
WIDE_RANGES = [("à", "ÿ"), ("α", "ω"), ("一", "鿿"), ("😀", "🙏"), ("\t", "\n"), ("[", "^"),
               ("é", "你")]
_WIDE_ONLY = set(WIDE_ALPHABET + "".join(WIDE_WORDS) + "".join(a + b for a, b in WIDE_RANGES)
                 ) - set(ALPHABET + "".join(WORDS)) - {"\t", "\n", "[", "^"}


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
    if c == "\t":
        return "\\t"
    if c == "é":
        return rnd.choice(["é", "\\u00e9", "\\xe9"])
    return _wide_escape(c, rnd)


def _wide_escape(c: str, rnd: random.Random) -> str:
    """``c`` as itself or, now and then, as a \\u or \\U escape. Only the characters of
    wide grammars draw (old seeds keep their grammars); no \\x: XGrammar reads every hex
    digit after it (``\\x411`` is one character), llama.cpp two."""
    if c in _WIDE_ONLY and rnd.random() < 0.4:
        o = ord(c)
        return f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"
    return c


def _cls_char(c: str, rnd: random.Random) -> str:
    got = {"]": "\\]", "\\": "\\\\", "\n": "\\n", "\"": "\\\"", "\t": "\\t",
           "[": "\\[", "^": "\\^"}.get(c)
    return _wide_escape(c, rnd) if got is None else got


def render(n: Node, rnd: random.Random) -> str:
    """GBNF text of a node (escapes chosen at random among equivalent spellings)."""
    if isinstance(n, Lit):
        return "\"" + "".join(_lit_char(c, rnd) for c in n.text) + "\""
    if isinstance(n, Cls):
        # a single '-' goes last, bare: XGrammar reads ``\x2d0`` as one (longer) hex escape
        items = sorted(dict.fromkeys(n.items), key=lambda r: r == ("-", "-"))
        body = "".join((lo if lo == "-" else _cls_char(lo, rnd)) if lo == hi
                       else f"{_cls_char(lo, rnd)}-{_cls_char(hi, rnd)}" for lo, hi in items)
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
    def __init__(self, rnd: random.Random, names: list[str], wide: bool = False) -> None:
        self.rnd, self.names, self.feats, self.wide = rnd, names, set[str](), wide
        self.words, self.ranges, self.chars = ((WORDS + WIDE_WORDS, RANGES + WIDE_RANGES,
                                                ALPHABET + WIDE_ALPHABET) if wide
                                               else (WORDS, RANGES, ALPHABET))

    def atom(self, depth: int) -> Node:
        r = self.rnd.random()
        if r < 0.3:
            return Lit(self.rnd.choice(self.words))
        if r < 0.6:
            items = []
            for _ in range(self.rnd.randint(1, 3)):
                if self.rnd.random() < 0.5:
                    items.append(self.rnd.choice(self.ranges))
                else:
                    c = self.rnd.choice(self.chars)
                    items.append((c, c))
            neg = self.rnd.random() < 0.3
            self.feats.add("negated class" if neg else "class")
            return Cls(tuple(items), neg)
        if r < 0.8 or depth > 1 + self.wide:
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
        if self.wide and sp.startswith("{") and self.rnd.random() < 0.3:
            sp = sp.replace(",", ", ").replace("{", "{ ")  # spaces inside the braces
        return Rep(a, lo, hi, sp)

    def seq(self, depth: int) -> Seq:
        return Seq(tuple(self.item(depth) for _ in range(self.rnd.randint(1, 3))))

    def alt(self, depth: int) -> Alt:
        # nested groups stay small: big ambiguous grammars only make each mask slower
        return Alt(tuple(self.seq(depth) for _ in range(self.rnd.randint(1, 3 - (depth > 0)))))


WS = Alt((Seq((Rep(Cls(((" ", " "), ("\t", "\t"), ("\n", "\n")), False), 0, None, "*"),)),))


def grammar(rnd: random.Random, wide: bool = False) -> GenGrammar:
    """One random grammar (not checked: XGrammar and gramask decide whether it builds).
    ``wide``: also 2- to 4-byte characters, \\u and \\U escapes, escaped brackets in
    classes, groups nested deeper, spaces in ``{m, n}``, a whitespace rule ``ws``, the rules
    in any order (``root`` anywhere) with comment lines and blank lines between them."""
    names = ["root"] + [f"r{i}" for i in range(rnd.randint(0, 3))]
    if wide:
        names.append("ws")
    g = _Gen(rnd, names[1:] or ["root"], wide)
    rules = {n: WS if n == "ws" else g.alt(0) for n in names}
    if wide:
        return _wide_text(rules, g, rnd)
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


def _wide_text(rules: dict[str, Alt], g: _Gen, rnd: random.Random) -> GenGrammar:
    lines = []
    for n, a in rules.items():
        r = rnd.random()
        sep = " |\n    " if r < 0.1 else "\n    | " if r < 0.2 else " | "
        note = "  # a comment \"x\" [y] ::= z" if rnd.random() < 0.15 else ""
        body = sep.join(render(s, rnd) for s in a.items)
        lines.append(f"{n} ::= {body}{note}" if rnd.random() < 0.8 else f"{n}::={body}{note}")
    rnd.shuffle(lines)
    out: list[str] = []
    for line in lines:
        if rnd.random() < 0.2:
            out.append(rnd.choice(["", "# a comment line", "  # indented comment ::= \"", ""]))
        out.append(line)
    g.feats.add("wide")
    return GenGrammar(rules, "\n".join(out) + "\n", sorted(g.feats))


# characters a wide grammar's classes are sampled from, beyond the narrow ones
WIDE_SAMPLE = WIDE_ALPHABET + "ωàáèβ一鿿😁🙏[\\^"


class Sampler:
    """Random texts of a grammar's language, drawn from its tree; ``None`` where a draw
    runs too deep (recursion) or too long."""

    def __init__(self, rules: dict[str, Alt], rnd: random.Random, wide: bool = False) -> None:
        self.rules, self.rnd = rules, rnd
        self.chars = ALPHABET + "AZ#!~\t" + (WIDE_SAMPLE if wide else "")

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
            cs = [c for c in self.chars if n.has(c)]
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


def mutate(text: str, rnd: random.Random, alphabet: str = ALPHABET) -> str:
    """One random edit: insert, delete, replace or duplicate a slice."""
    i = rnd.randint(0, len(text))
    r = rnd.random()
    if r < 0.3:
        return text[:i] + rnd.choice(alphabet) + text[i:]
    if r < 0.55 and text:
        return text[:i] + text[i + 1:]
    if r < 0.8 and text:
        return text[:i] + rnd.choice(alphabet) + text[i + 1:]
    j = rnd.randint(i, len(text))
    return text[:j] + text[i:j] + text[j:]
