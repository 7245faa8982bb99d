"""Which pieces of a GBNF grammar become lexer terminals, and the rules around them.

:class:`Lexical` finds the regular (non-recursive) rules and writes any lexical node as a
Python regex; :class:`Emitter` turns the rule trees into BNF rules over terminals, one
terminal per maximal lexical piece, except the pieces whose patterns the caller asks to split
(:mod:`gramask.frontends.gbnf` decides that, from the lexer automaton).
"""

from __future__ import annotations

import re

from ..compiler.charclass import complement
from ..errors import GrammarError
from .bnf import Rule
from .gbnf_syntax import ANY, MAX_CODEPOINT, Alt, Cls, Lit, Node, Ref, Rep, Seq, refs

__all__ = ["Emitter", "Lexical", "splittable"]

# an inlined lexical rule whose regex would be longer than this stays a rule (rules that
# reference each other twice per level would otherwise grow exponentially when inlined)
MAX_INLINE_REGEX = 20_000


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


class Lexical:
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
            stack: list[tuple[str, list[str]]] = [(root, sorted(refs(self.rules[root])))]
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
                        stack.append((r, sorted(refs(self.rules[r]))))
                    continue
                stack.pop()
                state[name] = 2
                if name not in cyclic and all(
                    r in self.lexical for r in refs(self.rules[name]) if r in self.rules
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


def splittable(node: Node) -> bool:
    """Whether a terminal's node can be split into smaller terminals (single characters
    cannot)."""
    if isinstance(node, Cls):
        return False
    if isinstance(node, Lit):
        return len(node.text) > 1
    return True


class Emitter:
    """Rules + terminals for one choice of split terminals (patterns in ``split``)."""

    def __init__(self, rules: dict[str, Alt], lex: Lexical, split: set[str]) -> None:
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
        if pattern in self.split and splittable(ne):
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
