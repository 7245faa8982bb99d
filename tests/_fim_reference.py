"""An exact fill-in-the-middle reference for small grammars (test support, not the product).

The question a FIM mask answers is a language-intersection question (Niels Mündler,
"Leveraging Constrained Sampling for Fill-In-the-Middle Code Completion", 2024): with L the
grammar's language over characters, token t is allowed after prefix P and generated text m iff

    L  ∩  P·m·t·Σ*·S   is non-empty,

and EOS is allowed iff P·m·S ∈ L. This module decides that directly, with nothing shared with
gramask: the grammar is expanded to a character-level CFG, and emptiness of its intersection
with the finite automaton above is decided by an Earley recogniser run over the automaton's
states instead of string positions (Bar-Hillel's product, explored only from the start).
:func:`pyformlang_nonempty` decides the same question with pyformlang's own intersection; the
tests cross-check the two on plain CFGs.

Lexing. The small grammars (:class:`SmallGrammar`) have literal terminals and one-or-more
character-class terminals (``NAME: /[a-z]+/``), optionally an ``%ignore``d space. Each lexeme in
the character-level CFG is followed by an invisible marker for its terminal, and the automaton
rejects a marker when the text after it would have let the greedy lexer take a longer lexeme
(a literal that extends it, or one more character of the class). With literals that are
prefix-closed and character classes disjoint from each other and from the literals, every text
then has exactly the greedy lexer's segmentation, so the CFG's language is the grammar's
language under gramask's lexing (docs/semantics.md) and lark's ``basic`` lexer; the tests check
that against lark on random texts.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CharCFG",
    "SmallGrammar",
    "Term",
    "balanced_01",
    "budget_allowed",
    "budget_complete",
    "budget_min_tokens",
    "fim_allowed",
    "fim_complete",
    "fim_mask",
    "nonempty",
    "pyformlang_nonempty",
    "random_grammar",
    "random_sentence",
]

MARK_BASE = 0xE000  # markers are private-use characters, never in a grammar's alphabet


@dataclass(frozen=True)
class Term:
    """A terminal: a literal string, or one or more characters of a class (``chars``)."""

    name: str
    literal: str | None = None
    chars: str | None = None
    ignored: bool = False

    def lark(self) -> str:
        if self.literal is not None:
            return '"' + self.literal.replace("\\", "\\\\").replace('"', '\\"') + '"'
        assert self.chars is not None
        return "/[" + "".join("\\" + c if c in "]\\^-" else c for c in self.chars) + "]+/"


@dataclass
class CharCFG:
    """A CFG over characters: ``rules[lhs]`` lists right-hand sides; a symbol that is a key of
    ``rules`` is a nonterminal, anything else a character. ``ext[marker]`` lists the texts that,
    right after that marker, would have extended the lexeme (greedy lexing forbids them)."""

    rules: dict[str, list[tuple[str, ...]]]
    start: str
    ext: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SmallGrammar:
    """A small Lark grammar whose character-level language is computable exactly."""

    terms: tuple[Term, ...]
    rules: dict[str, list[tuple[str, ...]]]  # rule name → alternatives of rule/terminal names
    start: str = "start"

    def reachable(self) -> set[str]:
        """Rules reachable from the start rule, and the terminals they use."""
        seen = {self.start}
        todo = [self.start]
        while todo:
            for alt in self.rules[todo.pop()]:
                for s in alt:
                    if s not in seen:
                        seen.add(s)
                        if s in self.rules:
                            todo.append(s)
        return seen

    def __post_init__(self) -> None:
        used = self.reachable()
        for t in self.terms:
            if not (t.ignored or t.name in used):  # lark (so gramask) drops unused terminals
                raise ValueError(f"terminal {t.name} is not used")
        lits = [t.literal for t in self.terms if t.literal is not None]
        classes = [set(t.chars or "") for t in self.terms if t.chars is not None]
        for lit in lits:
            if not lit:
                raise ValueError("empty literal")
            for k in range(1, len(lit)):
                if lit[:k] not in lits:  # gramask's greedy lexer does not backtrack
                    raise ValueError(f"literals must be prefix-closed: {lit[:k]!r} missing")
            if any(set(lit) & c for c in classes):
                raise ValueError(f"literal {lit!r} overlaps a character class")
        for i, a in enumerate(classes):
            if any(a & b for b in classes[i + 1:]):
                raise ValueError("character classes must be disjoint")

    def to_lark(self) -> str:
        """The grammar as Lark text (terminals named, so tests can refer to them)."""
        lines = []
        for name, alts in self.rules.items():
            lines.append(f"{name}: " + " | ".join(" ".join(a) for a in alts))
        for t in self.terms:
            lines.append(f"{t.name}: {t.lark()}")
            if t.ignored:
                lines.append(f"%ignore {t.name}")
        return "\n".join(lines) + "\n"

    def alphabet(self) -> str:
        chars: set[str] = set()
        for t in self.terms:
            chars |= set(t.literal or t.chars or "")
        return "".join(sorted(chars))

    def char_cfg(self) -> CharCFG:
        """Expand terminals to characters, each lexeme followed by its terminal's marker."""
        rules: dict[str, list[tuple[str, ...]]] = {}
        ext: dict[str, tuple[str, ...]] = {}
        lits = [t.literal for t in self.terms if t.literal is not None]
        ign = [t for t in self.terms if t.ignored]
        for i, t in enumerate(self.terms):
            mark = chr(MARK_BASE + i)
            lex = f"<{t.name}>"
            if t.literal is not None:
                rules[lex] = [(*t.literal, mark)]
                ext[mark] = tuple(w[len(t.literal):] for w in lits
                                  if len(w) > len(t.literal) and w.startswith(t.literal))
            else:
                assert t.chars is not None
                plus = f"<{t.name}+>"
                rules[plus] = [(c,) for c in t.chars] + [(c, plus) for c in t.chars]
                rules[lex] = [(plus, mark)]
                ext[mark] = tuple(t.chars)
        rules["<_>"] = [()] + [(f"<{t.name}>", "<_>") for t in ign]  # ignored lexemes
        sep = ("<_>",) if ign else ()
        for name, alts in self.rules.items():
            rules[name] = [
                tuple(s for sym in alt for s in
                      ((sym,) if sym in self.rules else (f"<{sym}>", *sep)))
                for alt in alts
            ]
        rules["<start>"] = [(*sep, self.start)]
        return CharCFG(rules, "<start>", ext)


# --------------------------------------------------------------------------- the automaton


_St = tuple[int, frozenset[str]]  # automaton state: (position, pending texts)
_Item = tuple[int, int, _St, _St]  # rule, dot, origin state, current state


class _Query:
    """The automaton P·m·t·Σ*·S (``loop=True``) or the single text P·m·S (``loop=False``), in
    product with the greedy-lexing check on markers. States are (position, pending) where
    pending holds the texts that must not come next."""

    def __init__(self, head: str, tail: str, loop: bool, ext: dict[str, tuple[str, ...]],
                 alphabet: str) -> None:
        self.head, self.tail, self.loop, self.ext = head, tail, loop, ext
        self.alphabet = frozenset(alphabet)
        self.start: tuple[int, frozenset[str]] = (0, frozenset())
        self.end = len(head) + len(tail)

    def step(self, st: tuple[int, frozenset[str]], sym: str) -> list[tuple[int, frozenset[str]]]:
        pos, pending = st
        if sym in self.ext:  # a lexeme ends here: no text that would extend it may follow
            return [(pos, pending | frozenset(self.ext[sym]) - {""})]
        left = set()
        for r in pending:
            if r[0] == sym:
                if len(r) == 1:
                    return []  # the greedy lexer would have taken the longer lexeme
                left.add(r[1:])
        nxt = frozenset(left)
        h = len(self.head)
        out = []
        if pos < h:
            if self.head[pos] == sym:
                out.append((pos + 1, nxt))
        else:
            k = pos - h
            if k < len(self.tail) and self.tail[k] == sym:
                out.append((pos + 1, nxt))
            if self.loop and pos == h and sym in self.alphabet:
                out.append((pos, nxt))
        return out

    def final(self, st: tuple[int, frozenset[str]]) -> bool:
        return st[0] == self.end


def _earley_nonempty(cfg: CharCFG, q: _Query) -> bool:
    """Is some word of ``cfg`` accepted by ``q``? Earley items are (rule, dot, origin state,
    current state); a completed start item from the start state at a final state says yes."""
    prods: list[tuple[str, tuple[str, ...]]] = [
        (lhs, rhs) for lhs, alts in cfg.rules.items() for rhs in alts
    ]
    by_lhs: dict[str, list[int]] = defaultdict(list)
    for i, (lhs, _) in enumerate(prods):
        by_lhs[lhs].append(i)
    rules = cfg.rules
    seen: set[_Item] = set()
    agenda: list[_Item] = []
    waiting: dict[tuple[str, _St], list[tuple[int, int, _St]]] = defaultdict(list)
    done: dict[tuple[str, _St], set[_St]] = defaultdict(set)
    predicted: set[tuple[str, _St]] = set()
    delta: dict[tuple[_St, str], list[_St]] = {}

    def add(item: _Item) -> None:
        if item not in seen:
            seen.add(item)
            agenda.append(item)

    predicted.add((cfg.start, q.start))
    for i in by_lhs[cfg.start]:
        add((i, 0, q.start, q.start))
    while agenda:
        pid, dot, org, at = agenda.pop()
        lhs, rhs = prods[pid]
        if dot == len(rhs):
            if at in done[(lhs, org)]:
                continue
            if lhs == cfg.start and org == q.start and q.final(at):
                return True
            done[(lhs, org)].add(at)
            for p2, d2, o2 in waiting[(lhs, org)]:
                add((p2, d2 + 1, o2, at))
            continue
        sym = rhs[dot]
        if sym in rules:
            waiting[(sym, at)].append((pid, dot, org))
            for end in list(done[(sym, at)]):
                add((pid, dot + 1, org, end))
            if (sym, at) not in predicted:
                predicted.add((sym, at))
                for i in by_lhs[sym]:
                    add((i, 0, at, at))
        else:
            key = (at, sym)
            nxts = delta.get(key)
            if nxts is None:
                nxts = delta[key] = q.step(at, sym)
            for n in nxts:
                add((pid, dot + 1, org, n))
    return False


def nonempty(cfg: CharCFG, head: str, tail: str = "", *, loop: bool = True,
             alphabet: str = "") -> bool:
    """Does ``cfg`` have a word ``head·x·tail`` (x ∈ alphabet*; x = "" when ``loop`` is off)?"""
    if not alphabet:
        alphabet = "".join(sorted({s for alts in cfg.rules.values() for a in alts for s in a
                                   if s not in cfg.rules and s not in cfg.ext}))
    return _earley_nonempty(cfg, _Query(head, tail, loop, cfg.ext, alphabet))


def fim_allowed(cfg: CharCFG, prefix: str, middle: str, token: str, suffix: str) -> bool:
    """Token verdict: some x makes prefix·middle·token·x·suffix a member."""
    return nonempty(cfg, prefix + middle + token, suffix, loop=True)


def fim_complete(cfg: CharCFG, prefix: str, middle: str, suffix: str) -> bool:
    """EOS verdict: prefix·middle·suffix is a member."""
    return nonempty(cfg, prefix + middle, suffix, loop=False)


def fim_mask(cfg: CharCFG, prefix: str, middle: str, suffix: str,
             tokens: Sequence[str]) -> list[bool]:
    """The reference mask over ``tokens`` (plain grammar tokens; EOS is asked separately)."""
    return [fim_allowed(cfg, prefix, middle, t, suffix) for t in tokens]


# --------------------------------------------------------------------------- token budgets


class _BudgetQuery:
    """The automaton head·(v1|...|vk)^{≤n}·tail over characters (the grammar intersected with
    at most n tokens of the vocabulary: Niels Mündler, "Proper Well-Formedness Guarantees for
    Finite LLM Sampling"), with the same greedy-lexing check on markers as :class:`_Query`. Positions: ``i`` < len(head) inside the head, then ``("b", j)`` at a token
    boundary after j tokens, ``("t", j, ti, off)`` inside token ti."""

    def __init__(self, head: str, tokens: Sequence[str], n: int,
                 ext: dict[str, tuple[str, ...]], tail: str = "") -> None:
        self.head, self.tokens, self.n, self.ext = head, list(tokens), n, ext
        self.tail = tail
        self.start: tuple[Any, frozenset[str]] = (0 if head else ("b", 0), frozenset())

    def _moves(self, pos: Any, sym: str) -> list[Any]:
        h = self.head
        if isinstance(pos, int):
            if h[pos] != sym:
                return []
            return [pos + 1 if pos + 1 < len(h) else ("b", 0)]
        if pos[0] == "s":  # inside the tail (the suffix)
            k = pos[1]
            return [("s", k + 1)] if k < len(self.tail) and self.tail[k] == sym else []
        if pos[0] == "b":
            j = pos[1]
            out: list[Any] = []
            if self.tail and self.tail[0] == sym:
                out.append(("s", 1))
            if j >= self.n:
                return out
            for ti, t in enumerate(self.tokens):
                if t and t[0] == sym:
                    out.append(("b", j + 1) if len(t) == 1 else ("t", j, ti, 1))
            return out
        _, j, ti, off = pos
        t = self.tokens[ti]
        if t[off] != sym:
            return []
        return [("b", j + 1) if off + 1 == len(t) else ("t", j, ti, off + 1)]

    def step(self, st: tuple[Any, frozenset[str]], sym: str) -> list[tuple[Any, frozenset[str]]]:
        pos, pending = st
        if sym in self.ext:
            return [(pos, pending | frozenset(self.ext[sym]) - {""})]
        left = set()
        for r in pending:
            if r[0] == sym:
                if len(r) == 1:
                    return []
                left.add(r[1:])
        nxt = frozenset(left)
        return [(p, nxt) for p in dict.fromkeys(self._moves(pos, sym))]

    def final(self, st: tuple[Any, frozenset[str]]) -> bool:
        pos = st[0]
        if not isinstance(pos, tuple):
            return False
        if self.tail:
            return pos[0] == "s" and pos[1] == len(self.tail)
        return bool(pos[0] == "b")


def budget_allowed(cfg: CharCFG, head: str, token: str, tokens: Sequence[str], n: int,
                   tail: str = "") -> bool:
    """Token verdict under a budget: some x of at most ``n`` tokens makes head·token·x·tail
    a member (``n`` counts the tokens after ``token``)."""
    if n < 0:
        return False
    q = _BudgetQuery(head + token, tokens, n, cfg.ext, tail)
    return _earley_nonempty(cfg, q)  # type: ignore[arg-type]


def budget_complete(cfg: CharCFG, head: str, tail: str = "") -> bool:
    """EOS verdict: ``head·tail`` is a member."""
    return nonempty(cfg, head, tail, loop=False)


def budget_min_tokens(cfg: CharCFG, head: str, tokens: Sequence[str], cap: int = 12,
                      tail: str = "") -> int | None:
    """The fewest tokens x with head·x·tail a member (None if more than ``cap``)."""
    for n in range(cap + 1):
        if _earley_nonempty(cfg, _BudgetQuery(head, tokens, n, cfg.ext, tail)):  # type: ignore[arg-type]
            return n
    return None


# --------------------------------------------------------------------------- pyformlang


def pyformlang_nonempty(cfg_text: str, head: str, vocab: Iterable[str], tail: str) -> bool:
    """Seed-free second opinion: pyformlang's CFG ∩ regex ``head(v1|v2|...)*tail`` non-empty.

    ``cfg_text`` is pyformlang's ``CFG.from_text`` syntax over single-character terminals;
    ``vocab`` must be plain alphanumeric strings (they are joined into a regex unescaped)."""
    from pyformlang.cfg import CFG
    from pyformlang.regular_expression import PythonRegex

    cfg = CFG.from_text(cfg_text)
    if not head + tail and cfg.generate_epsilon():
        return True  # pyformlang's intersection does not carry the empty word over
    if not head + tail and not vocab:
        return False
    alts = "|".join(vocab)
    regex = PythonRegex(f"{head}({alts})*{tail}" if alts else head + tail)
    return not cfg.intersection(regex).is_empty()


def balanced_01() -> CharCFG:
    """S → ε | 0 S 1: the balanced 0s-and-1s language of the intersection write-up."""
    return CharCFG({"S": [(), ("0", "S", "1")]}, "S")


# --------------------------------------------------------------------------- random grammars

LITERAL_POOL = ["(", ")", "[", "]", ",", ";", "+", "=", "==", "<", "<=", "-", "->", "*", "**"]
CLASS_POOL = [("NAME", "abc"), ("NUMBER", "01")]


def random_grammar(rnd: random.Random, *, max_rules: int = 3, space: float = 0.5) -> SmallGrammar:
    """A random small grammar: 1..max_rules rules of up to 3 alternatives of up to 3 symbols,
    some multi-character literals (made prefix-closed), maybe NAME/NUMBER classes and an
    ignored space (with probability ``space``). Every rule has a finite derivation (its first alternative only uses later
    rules), so the language is non-empty."""
    lits = set(rnd.sample(LITERAL_POOL, rnd.randint(1, 4)))
    for lit in list(lits):
        lits |= {lit[:k] for k in range(1, len(lit))}
    terms = [Term(f"L{i}", literal=lit) for i, lit in enumerate(sorted(lits))]
    for name, chars in CLASS_POOL:
        if rnd.random() < 0.5:
            terms.append(Term(name, chars=chars))
    if rnd.random() < space:
        terms.append(Term("WS", literal=" ", ignored=True))
    usable = [t.name for t in terms if not t.ignored]
    names = ["start"] + [f"r{i}" for i in range(1, rnd.randint(1, max_rules))]
    rules: dict[str, list[tuple[str, ...]]] = {}
    for i, name in enumerate(names):
        alts = []
        later = names[i + 1:]
        alts.append(tuple(rnd.choice(usable + later) for _ in range(rnd.randint(0, 2))))
        for _ in range(rnd.randint(0, 2)):
            alts.append(tuple(rnd.choice(usable + names) for _ in range(rnd.randint(1, 3))))
        rules[name] = list(dict.fromkeys(alts))
    used = SmallGrammar((), rules).reachable()
    rules = {n: alts for n, alts in rules.items() if n in used}
    unused = [t for t in usable if t not in used]  # lark would drop them from its lexer
    for k in range(0, len(unused), 2):
        rules[rnd.choice(list(rules))].append(tuple(unused[k:k + 2]))
    return SmallGrammar(tuple(terms), rules)


def random_sentence(g: SmallGrammar, rnd: random.Random, *, depth: int = 6,
                    space: float = 0.3) -> str:
    """A random text derived from ``g`` (past ``depth``, each rule takes its first alternative,
    which terminates). Adjacent lexemes may merge under greedy lexing, so the text is usually,
    not always, a member; the callers ask the reference or lark."""
    by_name = {t.name: t for t in g.terms}
    has_ws = any(t.ignored for t in g.terms)
    out: list[str] = []

    def gen(sym: str, d: int) -> None:
        if sym in g.rules:
            alts = g.rules[sym]
            alt = alts[0] if d >= depth else rnd.choice(alts)
            for s in alt:
                gen(s, d + 1)
            return
        t = by_name[sym]
        out.append(t.literal if t.literal is not None
                   else "".join(rnd.choice(t.chars or "") for _ in range(rnd.randint(1, 2))))
        if has_ws and rnd.random() < space:
            out.append(" ")

    gen(g.start, 0)
    return "".join(out)


@dataclass
class BudgetCase:
    """A random budget request: a small grammar, a vocabulary of its letters and a few short
    words, a cut of one of its sentences, and the fewest tokens that complete it."""

    grammar: SmallGrammar
    tokens: list[str]
    cfg: CharCFG
    prefix: str
    suffix: str
    need: int | None  # None: no completion within the search cap


def random_budget_case(rnd: random.Random, *, fim: bool) -> BudgetCase:
    """What the budget tests walk (``fim``: keep a suffix of the sentence too)."""
    g = random_grammar(rnd, space=1.0)
    alphabet = g.alphabet()
    tokens = list(dict.fromkeys([*alphabet] + [
        "".join(rnd.choice(alphabet) for _ in range(rnd.randint(2, 3))) for _ in range(4)]))
    cfg = g.char_cfg()
    text = random_sentence(g, rnd)
    i = rnd.randint(0, len(text))
    prefix = text[:i]
    suffix = text[rnd.randint(i, len(text)):] if fim else ""
    need = budget_min_tokens(cfg, prefix, tokens, cap=5, tail=suffix)
    return BudgetCase(g, tokens, cfg, prefix, suffix, need)
