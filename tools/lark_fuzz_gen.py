"""Random small Lark grammars and random texts of their languages, for ``tools/lark_fuzz.py``.

The grammars use a wide range of Lark's features (string, regex and case-insensitive
terminals, priorities, terminals built from terminals, ``%ignore``, ``%import common``,
``?rule``/``_rule``, aliases, ``[x] x? x* x+ x~m..n``, templates, ``%declare``, ``%extend``)
over a small alphabet, so that terminals collide often. Texts are random derivations of the
grammar as lark compiled it (its BNF rules and terminal regexes), so the generator needs no
reading of Lark syntax of its own.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field
from typing import ClassVar

import lark
import lark.indenter

try:  # Python 3.11+
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_p  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants as sre_c  # type: ignore[no-redef]
    import sre_parse as sre_p  # type: ignore[no-redef]

WORDS = ["a", "b", "ab", "ba", "if", "in", "int", "x", "xy", "0", "1", "01", "+", "-", "*",
         "(", ")", "[", "]", ",", ";", "=", "==", "=>", ".", "..", "...", ":", "#", "/", "//",
         "\"", "'", "aa", "abc"]
REGEXES = [r"/[a-z]+/", r"/[a-c][a-c0-9]*/", r"/[0-9]+/", r"/x+y?/", r"/(ab|a)c?/",
           r'/"[^"\n]*"/', r"/[a-z_][a-z0-9_]*/", r"/-?[0-9]+(\.[0-9]+)?/", r"/[+\-*\/]/",
           r"/b+/", r"/[ab]{2,3}/", r"/i[nf]?/", r"/#[^\n]*/", r"/\/\*(.|\n)*?\*\//",
           r"/[^\s()]+/", r"/\d+/", r"/\w+/", r"/[xy]*z/", r"/=+/", r"/(a|bc)+/"]
# --extra: regex features the pool above lacks (alternatives with a common prefix that re
# tries in order, greedy and lazy repeats mixed, classes past ASCII, inline flags), and
# several %ignore'd terminals at once. Opt-in: the default pool keeps old seeds' grammars
EXTRA_REGEXES = [r"/(a|ab)(c|bcd)?/", r"/a?(ab)?/", r"/(x|xy)+z?/", r"/(ab|a)*?b/",
                 r"/x.*?y/", r"/[a-c]+?[0-9]/", r"/[α-ω]+/", r"/[a-zé]+/i", r"/(?i:ab|a)c?/",
                 r"/--\[\[(.|\n)*?\]\]|--[^\n]*/", r'/"(\\.|[^"\\])*?"/',
                 r"/[^\x00-\x7f]+/", r"/(a|b)*(ab)?/", r"/[0-9]+(\.[0-9]*)?(e[0-9]+)?/",
                 r"/(=|==)=?/", r"/(if|i)[a-z]?/"]
EXTRA_IGNORES = [('%ignore " "\n%ignore "\\t"\n', " \t"),
                 ('_WS: /[ ]+/\n_CM: /;[^\\n]*/\n%ignore _WS\n%ignore _CM\n', " ;"),
                 ('%import common.WS\n%ignore WS\n%import common.CPP_COMMENT\n'
                  '%ignore CPP_COMMENT\n', " \n/")]
COMMON = ["NUMBER", "INT", "SIGNED_INT", "CNAME", "WORD", "LETTER", "DIGIT", "HEXDIGIT",
          "ESCAPED_STRING", "DECIMAL", "FLOAT", "LCASE_LETTER", "UCASE_LETTER"]
IGNORES = [('%import common.WS\n%ignore WS\n', " \n\t"),
           ('%ignore " "\n', " "),
           ('%import common.WS_INLINE\n%ignore WS_INLINE\n', " \t"),
           ('_SP: /[ \\t]+/\n%ignore _SP\n', " \t"),
           ('COMMENT: /#[^\\n]*/\n%ignore COMMENT\n%ignore " "\n', " "),
           ('%import common.C_COMMENT\n%ignore C_COMMENT\n%import common.WS\n%ignore WS\n', " \n"),
           ('%import common.SH_COMMENT\n%ignore SH_COMMENT\n%import common.NEWLINE\n'
            '%ignore NEWLINE\n', "\n")]


def lit(rnd: random.Random) -> str:
    """A Lark string literal (sometimes case-insensitive)."""
    w = rnd.choice(WORDS)
    s = '"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return s + ("i" if rnd.random() < 0.12 and w.isalpha() else "")


@dataclass
class GenGrammar:
    """A generated grammar: its text and the characters worth mutating texts with."""

    text: str
    alphabet: str
    features: list[str] = field(default_factory=list)
    indent: bool = False  # lark parses it with :class:`Indenter` as postlex


def grammar(rnd: random.Random, ignores: list[tuple[str, str]] | None = None,
            extra: bool = False) -> GenGrammar:
    """One random grammar (not checked: lark decides whether it builds); ``ignores``: the
    ``%ignore`` blocks to choose from (default :data:`IGNORES`); ``extra``: regexes and
    ``%ignore`` blocks from :data:`EXTRA_REGEXES` and :data:`EXTRA_IGNORES` too."""
    regexes = REGEXES + EXTRA_REGEXES if extra else REGEXES
    if ignores is None:
        ignores = IGNORES + EXTRA_IGNORES if extra else IGNORES
    feats: list[str] = []
    lines: list[str] = []
    terms: list[str] = []
    for i in range(rnd.randint(1, 4)):
        name = f"T{i}" if rnd.random() < 0.85 else f"_T{i}"
        prio = f".{rnd.randint(2, 3)}" if rnd.random() < 0.15 else ""
        r = rnd.random()
        if r < 0.35:
            body = lit(rnd)
            if rnd.random() < 0.2:
                body += " | " + lit(rnd)
        elif r < 0.75:
            body = rnd.choice(regexes)
            if rnd.random() < 0.1 and not body.endswith("i"):
                body += "i"
        elif r < 0.9 and terms:
            other = rnd.choice(terms)
            body = rnd.choice([f'{other} ("-" {other})*', f'"0x" {other}', f"{other}+",
                               f'{other} "." {other}?', f'("a".."c")+ {other}'])
            feats.append("term-of-terms")
        else:
            imp = rnd.choice(COMMON)
            lines.append(f"%import common.{imp}")
            terms.append(imp)
            feats.append("import")
            continue
        if prio:
            feats.append("term-priority")
        lines.append(f"{name}{prio}: {body}")
        terms.append(name)
    if rnd.random() < 0.08:
        lines.append("%declare DECL")
        terms.append("DECL")
        feats.append("declare")
    nrules = rnd.randint(1, 4)
    rules = [rnd.choice(["", "", "_"]) + f"r{i}" for i in range(nrules)]
    template = rnd.random() < 0.15
    if template:
        lines.append("_sep{x, sep}: x (sep x)*")
        feats.append("template")

    def atom(depth: int, idx: int) -> str:
        r = rnd.random()
        pool = [t for t in terms if t != "DECL" or rnd.random() < 0.3]
        if r < 0.35 and pool:
            return rnd.choice(pool)
        if r < 0.55:
            return lit(rnd)
        if r < 0.8 and idx + 1 < nrules:
            return rnd.choice(rules[idx + 1:])
        if r < 0.88 and depth < 2:
            return "(" + alts(depth + 1, idx) + ")"
        if r < 0.93:
            return rnd.choice(rules[: idx + 1] or ["start"])  # recursion (may be unproductive)
        return rnd.choice(terms) if terms else lit(rnd)

    def item(depth: int, idx: int) -> str:
        a = atom(depth, idx)
        r = rnd.random()
        if r < 0.1:
            feats.append("maybe")
            return f"[{a}]"
        if r < 0.18:
            return f"{a}?"
        if r < 0.28:
            return f"{a}*"
        if r < 0.36:
            return f"{a}+"
        if r < 0.4 and depth == 0:
            feats.append("repeat-range")
            return f"{a} ~ {rnd.randint(1, 2)}..{rnd.randint(2, 3)}"
        if r < 0.45 and template:
            return f'_sep{{{a}, {lit(rnd)}}}'
        return a

    def seq(depth: int, idx: int) -> str:
        items = [item(depth, idx) for _ in range(rnd.randint(1, 3))]
        return " ".join(items)

    def alts(depth: int, idx: int) -> str:
        return " | ".join(seq(depth, idx) for _ in range(rnd.randint(1, 3)))

    starts = dict.fromkeys(seq(0, -1) for _ in range(rnd.randint(1, 2)))
    body = [f"start: {' | '.join(starts)}"]
    for i, r_ in enumerate(rules):
        prefix = "?" if not r_.startswith("_") and rnd.random() < 0.25 else ""
        prio = f".{rnd.randint(2, 3)}" if rnd.random() < 0.08 else ""
        if prio:
            feats.append("rule-priority")
        alt_list = list(dict.fromkeys(seq(0, i) for _ in range(rnd.randint(1, 3))))
        if rnd.random() < 0.2 and not r_.startswith("_"):
            alt_list[0] += f" -> al{i}"
            feats.append("alias")
        body.append(f"{prefix}{r_}{prio}: " + "\n    | ".join(alt_list))
    if rnd.random() < 0.06:
        body.append(f"%extend {rnd.choice(rules)}: {lit(rnd)}")
        feats.append("extend")
    ign = ""
    alphabet = "".join(sorted(set("".join(WORDS)))) + "az09_ \n"
    if extra:
        alphabet += "éαω中"
    if rnd.random() < 0.7:
        ign, chars = rnd.choice(ignores)
        alphabet += chars
        feats.append("ignore")
    text = "\n".join(body + lines) + "\n" + ign
    return GenGrammar(text, alphabet, sorted(set(feats)))


class Indenter(lark.indenter.Indenter):
    """lark's indenter for :func:`indented_grammar` (the names gramask detects)."""

    NL_type = "_NEWLINE"
    OPEN_PAREN_types: ClassVar[list[str]] = ["LPAR", "LSQB", "LBRACE"]
    CLOSE_PAREN_types: ClassVar[list[str]] = ["RPAR", "RSQB", "RBRACE"]
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


# blanks that keep newlines for the indenter
INLINE_IGNORES = [i for i in IGNORES if "\n" not in i[1]]
NEWLINES = ["(/\\r?\\n[\\t ]*/)+", "(/\\r?\\n[\\t ]*/ | /#[^\\n]*/)+"]


def indented_grammar(rnd: random.Random) -> GenGrammar:
    """A random grammar (:func:`grammar`'s, its start rule as one line's body) inside
    Python-style blocks: ``_NEWLINE``, ``%declare _INDENT _DEDENT``, for lark's
    :class:`Indenter` and gramask's indentation."""
    inner = grammar(rnd, INLINE_IGNORES)
    body = re.sub(r"\bstart\b", "simple", inner.text)
    head = rnd.choice(['"if"', '"do" T_ARG', '/[a-z]+/ "(" ")"'])
    if "T_ARG" in head:
        body += 'T_ARG: /[0-9]+/\n'
    text = (f"start: stmt+\nstmt: simple _NEWLINE\n    | {head} \":\" _NEWLINE _INDENT stmt+ "
            f"_DEDENT\n{body}_NEWLINE: {rnd.choice(NEWLINES)}\n%declare _INDENT _DEDENT\n")
    return GenGrammar(text, inner.alphabet + "\n:", [*inner.features, "indenter"], True)


# ------------------------------------------------------------------ texts


def sample_regex(pattern: str, rnd: random.Random, limit: int = 3) -> str:
    """A random string matching ``pattern`` (no lookarounds)."""
    tree = sre_p.parse(pattern)
    return _sample(list(tree), rnd, limit, ignore_case=bool(tree.state.flags & re.I))


def _sample(items: list[tuple[object, object]], rnd: random.Random, limit: int,
            ignore_case: bool) -> str:
    out: list[str] = []
    for op, av in items:
        out.append(_sample_op(op, av, rnd, limit, ignore_case))
    return "".join(out)


_PRINT = string.ascii_letters + string.digits + " _-+*/=.,;:()[]{}\"'#\n\t"


def _chars_in(av: list[tuple[object, object]]) -> list[str]:
    neg = False
    pool: set[str] = set()
    for op, a in av:
        if op is sre_c.NEGATE:
            neg = True
        elif op is sre_c.LITERAL:
            pool.add(chr(a))  # type: ignore[arg-type]
        elif op is sre_c.RANGE:
            lo, hi = a  # type: ignore[misc]
            pool.update(chr(c) for c in range(lo, min(hi, lo + 200) + 1))
        elif op is sre_c.CATEGORY:
            pool.update(c for c in _PRINT if re.fullmatch(_CAT[a], c))
    if neg:
        return [c for c in _PRINT if c not in pool]
    return sorted(pool)


_CAT = {sre_c.CATEGORY_DIGIT: r"\d", sre_c.CATEGORY_NOT_DIGIT: r"\D",
        sre_c.CATEGORY_SPACE: r"\s", sre_c.CATEGORY_NOT_SPACE: r"\S",
        sre_c.CATEGORY_WORD: r"\w", sre_c.CATEGORY_NOT_WORD: r"\W"}


def _case(c: str, rnd: random.Random, ignore_case: bool) -> str:
    return (c.upper() if rnd.random() < 0.5 else c.lower()) if ignore_case else c


def _sample_op(op: object, av: object, rnd: random.Random, limit: int,
               ignore_case: bool) -> str:
    if op is sre_c.LITERAL:
        return _case(chr(av), rnd, ignore_case)  # type: ignore[arg-type]
    if op is sre_c.NOT_LITERAL:
        return rnd.choice([c for c in _PRINT if c != chr(av)])  # type: ignore[arg-type]
    if op is sre_c.ANY:
        return rnd.choice(_PRINT.replace("\n", ""))
    if op is sre_c.IN:
        pool = _chars_in(av)  # type: ignore[arg-type]
        return _case(rnd.choice(pool), rnd, ignore_case) if pool else ""
    if op is sre_c.BRANCH:
        return _sample(list(rnd.choice(av[1])), rnd, limit, ignore_case)  # type: ignore[index]
    if op is sre_c.SUBPATTERN:
        _g, add, _del, sub = av  # type: ignore[misc]
        return _sample(list(sub), rnd, limit, ignore_case or bool(add & re.I))
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
        lo, hi, sub = av  # type: ignore[misc]
        hi = min(hi, lo + limit) if hi != sre_c.MAXREPEAT else lo + limit
        n = rnd.randint(lo, hi)
        return "".join(_sample(list(sub), rnd, limit, ignore_case) for _ in range(n))
    if op is sre_c.CATEGORY:
        return rnd.choice([c for c in _PRINT if re.fullmatch(_CAT[av], c)])
    return ""  # AT and the like: nothing to emit


def terminal_text(t: lark.lexer.TerminalDef, rnd: random.Random) -> str:
    p = t.pattern
    if isinstance(p, lark.lexer.PatternStr) and not p.flags:
        return str(p.value)
    for _ in range(20):
        s = sample_regex(p.to_regexp(), rnd)
        if s and re.fullmatch(p.to_regexp(), s):
            return s
    return sample_regex(p.to_regexp(), rnd)


class Deriver:
    """Random derivations over lark's compiled rules, going to the shortest alternatives
    once deep enough."""

    def __init__(self, parser: lark.Lark) -> None:
        self.rules: dict[str, list[list[lark.grammar.Symbol]]] = {}
        for r in parser.rules:
            self.rules.setdefault(r.origin.name, []).append(list(r.expansion))
        self.terms = {t.name: t for t in parser.terminals}
        self.ignore = list(parser.ignore_tokens)
        self.declared = [n for r in self.rules.values() for a in r for s in a
                         if s.is_term and s.name not in self.terms for n in [s.name]]
        self.indented = {"_INDENT", "_DEDENT"} <= set(self.declared)  # an indenter's grammar
        inf = 10**9
        cost = {n: inf for n in self.rules}
        changed = True
        while changed:
            changed = False
            for n, alts in self.rules.items():
                for a in alts:
                    c = 1 + sum(cost.get(s.name, inf) if not s.is_term else 1 for s in a)
                    if c < cost[n]:
                        cost[n], changed = c, True
        self.cost = cost

    def derive(self, rnd: random.Random, start: str = "start", depth: int = 12) -> list[str]:
        """Terminal names of a random derivation of ``start``; [] if none is finite."""
        if self.cost.get(start, 10**9) >= 10**9:
            return []
        out: list[str] = []
        self._go(start, rnd, depth, out)
        return out

    def _go(self, n: str, rnd: random.Random, depth: int, out: list[str]) -> None:
        alts = [a for a in self.rules[n]
                if all(s.is_term or self.cost.get(s.name, 10**9) < 10**9 for s in a)]
        if depth <= 0:
            best = min(1 + sum(self.cost[s.name] if not s.is_term else 1 for s in a)
                       for a in alts)
            alts = [a for a in alts if 1 + sum(self.cost[s.name] if not s.is_term else 1
                                               for s in a) == best]
        for s in rnd.choice(alts):
            if s.is_term:
                out.append(s.name)
            else:
                self._go(s.name, rnd, depth - 1, out)

    def text(self, names: list[str], rnd: random.Random, spaced: float) -> str | None:
        """The terminals spelled out, with ignored text between them now and then."""
        parts: list[str] = []
        gaps = [self.terms[n] for n in self.ignore if n in self.terms]
        widths = [0]  # the open blocks' widths, for an indenter's _NEWLINE
        for i, n in enumerate(names):
            if n in ("_INDENT", "_DEDENT"):
                continue
            if n == "_NEWLINE" and self.indented:
                parts.append(self._newline(names, i, widths, rnd))
                continue
            if n not in self.terms:
                return None  # a %declare'd terminal: no text
            if gaps and rnd.random() < spaced:
                parts.append(terminal_text(rnd.choice(gaps), rnd))
            parts.append(terminal_text(self.terms[n], rnd))
        if gaps and rnd.random() < spaced / 3:
            parts.append(terminal_text(rnd.choice(gaps), rnd))
        return "".join(parts)


    @staticmethod
    def _newline(names: list[str], i: int, widths: list[int], rnd: random.Random) -> str:
        """An indenter's newline at ``names[i]``: blank lines now and then, then the width
        the ``_INDENT``/``_DEDENT``s after it give (``widths`` updated)."""
        j = i + 1
        while j < len(names) and names[j] in ("_INDENT", "_DEDENT"):
            if names[j] == "_INDENT":
                widths.append(widths[-1] + rnd.choice([1, 2, 4]))
            elif len(widths) > 1:
                widths.pop()
            j += 1
        return "\n" + rnd.choice(["", "", "", "\n", "  \n"]) + " " * widths[-1]


def mutate(text: str, alphabet: str, rnd: random.Random) -> str:
    """A small random edit of ``text``."""
    r = rnd.random()
    i = rnd.randint(0, len(text))
    if r < 0.3 and text:
        j = min(len(text), i + rnd.randint(1, 3))
        return text[:i] + text[j:]
    if r < 0.6:
        return text[:i] + rnd.choice(alphabet) + text[i:]
    if r < 0.8 and text:
        j = min(len(text), i + rnd.randint(1, 4))
        return text[:i] + text[i:j] + text[i:]
    if text:
        return text[:i]
    return rnd.choice(alphabet)
