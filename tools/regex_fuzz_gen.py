"""Random regexes in Python ``re`` syntax, and random choice lists, for ``tools/regex_fuzz.py``.

A regex is generated as a small tree (:class:`Node`) and written out; the tree also samples
strings meant to match (``re.fullmatch`` decides, the sampler is no oracle). The syntax drawn
from: literals (ASCII, Latin, CJK, astral, characters special to ``re`` escaped), ``.``,
classes (ranges, negated, with categories inside), ``\\d \\w \\s`` and their negations,
``\\x.. \\u.... \\U........`` escapes, concatenation, alternation (empty branches too),
capturing, named, non-capturing and scoped-flag groups (``(?i:`` ``(?s:`` ``(?a:`` ``(?-i:``),
greedy and lazy ``* + ? {m} {m,} {m,n} {,n}``; around the whole: ``^``/``\\A``, ``$``/``\\Z``,
global flags (``(?i)``, ``(?s)``, ``(?a)``, ``(?x)`` with blanks between items). Rarely, a
construct with no finite automaton (a possessive repeat, an atomic group, a lookaround, a
backreference, ``\\b``, an anchor inside): gramask must refuse it with a ``GrammarError``.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

# characters texts and literals are drawn from: case pairs that re folds specially
# (ſ/s, K/k, ß), Unicode digits and spaces, CJK, astral, a combining mark, re's specials
POOL = list("abcxyzABXZ019_-. \n\t") + list("é É ß ſ \u212a ٣ \u3000 \xa0 中 😀 \u0301 Σσς İı"
                                         .replace(" ", "")) + list("|()[]{}*+?\\^$#&~")
SPECIAL = set("()[]{}*+?\\^$|.#&~ \t\n-")
CLASSES = [r"[abc]", r"[a-z]", r"[^a-c]", r"[\d_]", r"[^\W\d]", r"[\s\S]", r"[é-ü]",
           r"[-a]", r"[a\-z]", r"[]a]", r"[^\n]", r"[.|]", r"[\u4e00-\u9fff]", r"[A-Za-z0-9]",
           r"[^ ]", r"[\x00-\x7f]", r"[ſK]", r"[😀-😂a]"]
CATEGORIES = [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S"]
# constructs with no finite automaton, each a template over a sub-pattern {0}
NOT_REGULAR = ["(?:{0})*+", "(?:{0})++", "(?:{0})?+", "(?>{0})", "(?={0})x", "(?!{0})",
               "(?<=a){0}", "(?<!b){0}", "(?P<r{n}>{0})(?P=r{n})", "\\b{0}", "{0}\\B", "a^{0}", "{0}$a",
               "(a)?(?(1){0}|b)"]
# ``wide`` patterns (``regex(r, wide=P)``) also draw, with chance P per atom, one of these:
# (pattern, a string it is meant to match) — other escapes (\t \r \f \v \a \0, octal,
# \N{…}), escapes in classes, and braces re reads as literal text (``a{}``, ``a{2, 3}``,
# ``{``) or as a repeat (``a{,}``)
WIDE_ATOMS = [
    ("\\t\\r\\f\\v", "\t\r\f\v"), ("\\a\\0", "\x07\x00"), ("\\101\\0101", "A\x081"),
    ("\\N{GREEK SMALL LETTER ALPHA}", "α"), ("\\N{LATIN SMALL LETTER E WITH ACUTE}", "é"),
    ("[\\N{GREEK SMALL LETTER ALPHA}-\\N{GREEK SMALL LETTER OMEGA}]", "β"),
    ("[\\]\\\\\\-^]", "]"), ("[\\t-\\r]", "\n"), ("[^\\t-\\r ]", "x"), ("[\\w-]", "-"),
    ("[a-]", "-"), ("[\\x41-\\x5a\\u00e0-\\u00ff]", "à"), ("[\\s\\d]", "٣"), ("[^\\W\\d_]", "ß"),
    ("a{}", "a{}"), ("a{,}", "aa"), ("b{2, 3}", "b{2, 3}"), ("x{", "x{"), ("}", "}"),
    ("a{,1}", ""), ("[{}]", "{"), ("\\{2\\}", "{2}"), ("(?#note)", ""), ("[[]", "["),
    ("[\\[\\]]", "]"), ("(?i:\\u212a)", "k"), ("(?i:ß)", "ß"),
    ("(?i:[^k])", "x"), ("(?i:σ)", "ς"), ("(?i:İ)", "İ"), ("(?i:[à-ö])", "À"),
]
WIDE_SAMPLES = dict(WIDE_ATOMS)


@dataclass
class Node:
    """One regex construct: ``kind`` with its text pieces and children."""

    kind: str  # atom, seq, alt, group, repeat, bad
    text: str = ""  # atom: the pattern; group: the opening; repeat: the quantifier
    kids: list[Node] = field(default_factory=list)
    lo: int = 0
    hi: int = -1  # repeat bounds, -1: unbounded

    def write(self, blank: str = "") -> str:
        if self.kind == "atom":
            return self.text
        if self.kind == "seq":
            return blank.join(k.write(blank) for k in self.kids)
        if self.kind == "alt":
            return "|".join(k.write(blank) for k in self.kids)
        if self.kind == "group":
            return f"{self.text}{self.kids[0].write(blank)})"
        if self.kind == "repeat":
            return f"(?:{self.kids[0].write(blank)}){self.text}"
        return self.text.format(self.kids[0].write(blank))  # bad


def literal(r: random.Random) -> str:
    """One character as a pattern: escaped where re would read it otherwise, sometimes as
    a ``\\x``/``\\u``/``\\U`` escape."""
    c = r.choice(POOL)
    cp = ord(c)
    k = r.random()
    if k < 0.15 and cp <= 0xFF:
        return f"\\x{cp:02x}"
    if k < 0.25 and cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    if k < 0.3:
        return f"\\U{cp:08x}"
    return "\\" + c if c in SPECIAL else c


def atom(r: random.Random) -> Node:
    k = r.random()
    if k < 0.45:
        return Node("atom", "".join(literal(r) for _ in range(r.randint(1, 3))))
    if k < 0.55:
        return Node("atom", ".")
    if k < 0.8:
        return Node("atom", r.choice(CLASSES))
    return Node("atom", r.choice(CATEGORIES))


QUANTS = [("*", 0, -1), ("+", 1, -1), ("?", 0, 1), ("{2}", 2, 2), ("{1,}", 1, -1),
          ("{0,2}", 0, 2), ("{1,3}", 1, 3), ("{,2}", 0, 2), ("{0}", 0, 0), ("{3,5}", 3, 5)]
# long counted repeats of one class (usernames, ids, JSON Schema patterns: ``\w{1,64}``),
# drawn only with ``long`` > 0 (the streams of the other seeds are unchanged)
LONG_QUANTS = [("{1,64}", 1, 64), ("{1,300}", 1, 300), ("{0,100}", 0, 100), ("{3,64}", 3, 64),
               ("{1,128}", 1, 128), ("{32}", 32, 32), ("{2,256}", 2, 256)]
GROUPS = ["(", "(?:", "(?P<g{n}>", "(?i:", "(?s:", "(?a:", "(?-i:", "(?is:"]


def node(r: random.Random, depth: int, bad: float, reps: int = 0, long: float = 0.0,
         wide: float = 0.0) -> Node:
    """A random tree; ``bad``: the chance of a construct with no automaton at each node;
    ``reps``: the repeats around it (at most two deep: ``re`` backtracks exponentially on
    deeper nested repeats, and the oracle would time out, not gramask); ``long``: the chance
    of a long counted repeat of a class (:data:`LONG_QUANTS`) where no repeat is around."""
    if long and not reps and r.random() < long:
        q, lo, hi = r.choice(LONG_QUANTS)
        kid = Node("atom", r.choice([".", *CLASSES, *CATEGORIES]))
        return Node("repeat", q + ("?" if r.random() < 0.1 else ""), [kid], lo, hi)
    if wide and r.random() < wide:
        return Node("atom", r.choice(WIDE_ATOMS)[0])
    if depth <= 0 or r.random() < 0.3:
        return atom(r)
    if r.random() < bad:
        bad_one = r.choice(NOT_REGULAR).replace("{n}", str(r.randint(0, 999)))
        return Node("bad", bad_one, [node(r, depth - 1, 0, reps + 1)])
    k = r.random()
    if k < 0.35:
        return Node("seq", kids=[node(r, depth - 1, bad, reps, long, wide)
                                 for _ in range(r.randint(2, 3))])
    if k < 0.55:
        kids = [node(r, depth - 1, bad, reps, long, wide) for _ in range(r.randint(2, 3))]
        if r.random() < 0.1:
            kids.append(Node("seq"))  # an empty branch
        return Node("group", "(?:", [Node("alt", kids=kids)])
    if k < 0.75 and reps < 2:
        q, lo, hi = r.choice(QUANTS)
        return Node("repeat", q + ("?" if r.random() < 0.25 else ""),
                    [node(r, depth - 1, bad, reps + 1, wide=wide)], lo, hi)
    opening = r.choice(GROUPS).replace("{n}", str(r.randint(0, 999)))
    return Node("group", opening, [node(r, depth - 1, bad, reps, long, wide)])


@dataclass
class GenRegex:
    """A random pattern, its tree, and whether it holds a construct with no automaton."""

    pattern: str
    tree: Node
    flags: str
    not_regular: bool


def regex(r: random.Random, depth: int = 4, long: float = 0.0, wide: float = 0.0) -> GenRegex:
    """A random pattern that ``re`` compiles: the tree, then anchors and global flags
    around it (``long``: see :func:`node`; ``wide``: the chance of a :data:`WIDE_ATOMS`
    atom at each node, and the global flag ``m`` too)."""
    while True:
        g = _regex(r, depth, long, wide)
        try:
            re.compile(g.pattern)
        except re.error:
            continue
        return g


def _regex(r: random.Random, depth: int, long: float = 0.0, wide: float = 0.0) -> GenRegex:
    tree = node(r, depth, bad=0.04, long=long, wide=wide)
    if r.random() < 0.1:  # ^A$|^B: anchors at the edges of top-level alternatives
        tree = Node("alt", kids=[Node("seq", kids=[Node("atom", r.choice(["", "^", "\\A"])), k,
                                                   Node("atom", r.choice(["", "$", "\\Z"]))])
                                 for k in (node(r, depth - 1, 0.02), node(r, depth - 1, 0.02))])
    flags = "".join(f for f in ("isaxm" if wide else "isax") if r.random() < 0.08)
    blank = " " if "x" in flags else ""
    body = tree.write(blank)
    if "x" in flags:  # a blank inside a class or escaped stays; #, space, tab escaped by us
        body = re.sub(r"(?<!\\)\\\n", r"\\n", body)
    pre = r.choice(["", "", "", "^", "\\A"])
    post = r.choice(["", "", "", "$", "\\Z"])
    pattern = (f"(?{flags})" if flags else "") + pre + body + post
    return GenRegex(pattern, tree, flags, "bad" in _kinds(tree))


def _kinds(n: Node) -> set[str]:
    return {n.kind}.union(*(_kinds(k) for k in n.kids)) if n.kids else {n.kind}


class Sampler:
    """Strings the tree is meant to match (flags tracked where they scope)."""

    def __init__(self, r: random.Random) -> None:
        self.r = r

    def sample(self, n: Node, flags: str = "") -> str:
        r = self.r
        if n.kind == "atom":
            return self._atom(n.text, flags)
        if n.kind == "seq":
            return "".join(self.sample(k, flags) for k in n.kids)
        if n.kind == "alt":
            return self.sample(r.choice(n.kids), flags) if n.kids else ""
        if n.kind == "group":
            m = re.fullmatch(r"\(\?([a-z]*)(?:-([a-z]*))?:", n.text)
            if m:
                flags = "".join(sorted(set(flags + m.group(1)) - set(m.group(2) or "")))
            return self.sample(n.kids[0], flags)
        if n.kind == "repeat":
            hi = n.hi if n.hi >= 0 else n.lo + 3
            return "".join(self.sample(n.kids[0], flags) for _ in range(r.randint(n.lo, hi)))
        return self.sample(n.kids[0], flags)

    def _atom(self, text: str, flags: str) -> str:
        """A character for each one-character piece, chosen among those ``re`` matches."""
        if text in WIDE_SAMPLES:
            return WIDE_SAMPLES[text]
        single = text in (".", *CLASSES, *CATEGORIES)
        pieces = [text] if single else re.findall(r"\\U\w{8}|\\u\w{4}|\\x\w{2}|\\.|.", text,
                                                  re.S)
        out = []
        for p in pieces:
            pat = f"(?{flags}:{p})" if flags else p
            try:
                fits = [c for c in POOL if re.fullmatch(pat, c)]
            except re.error:
                fits = []
            out.append(self.r.choice(fits) if fits else "")
        return "".join(out)


def mutate(s: str, r: random.Random) -> str:
    """A small edit: insert, delete, replace or duplicate a piece."""
    k = r.random()
    i = r.randint(0, len(s))
    if k < 0.3:
        return s[:i] + r.choice(POOL) + s[i:]
    if k < 0.55 and s:
        i = min(i, len(s) - 1)
        return s[:i] + s[i + 1:]
    if k < 0.8 and s:
        i = min(i, len(s) - 1)
        return s[:i] + r.choice(POOL) + s[i + 1:]
    j = r.randint(i, len(s))
    return s[:j] + s[i:j] + s[j:]


def choices(r: random.Random) -> list[str]:
    """A random choice list: words with shared prefixes (one a prefix of another), re's
    special characters, Unicode, duplicates, sometimes the empty string."""
    words: list[str] = []
    for _ in range(r.randint(1, 6)):
        k = r.random()
        if words and k < 0.35:  # extend or cut one already there
            w = r.choice(words)
            words.append(w + "".join(r.choice(POOL) for _ in range(r.randint(1, 3)))
                         if r.random() < 0.6 else w[: r.randint(0, len(w))])
        elif words and k < 0.45:
            words.append(r.choice(words))  # a duplicate
        else:
            words.append("".join(r.choice(POOL) for _ in range(r.randint(1, 5))))
    if r.random() < 0.15:
        words.append("")
    r.shuffle(words)
    return words
