"""What fill-in-the-middle builds once per compiled grammar: the original grammar's LR(0)
items (for the lazy quotient automaton, :mod:`gramask.runtime.fim.lazy_automaton`) and the
reversed grammar's automaton (for parsing suffixes backwards, :mod:`gramask.runtime.fim.quotient`).
"""

from __future__ import annotations

import threading
from dataclasses import replace

from ...compiler.parse_tables import build_parse_tables, nullable_symbols
from ...grammar import Grammar, RuleSpec
from ..core.earley import Automaton
from ..core.masks import MaskBuilder

__all__ = ["base_for", "reversed_grammar"]


class _Base:
    """Per compiled grammar, built once: the original grammar's LR(0) items (for the lazy
    quotient automaton) and the reversed grammar's automaton (for parsing suffixes)."""

    def __init__(self, grammar: Grammar) -> None:
        pt = build_parse_tables(grammar)
        self.pt = pt
        self.automaton = Automaton(pt)
        assert pt.items is not None  # built just above
        states, rules = pt.items
        self.states: list[frozenset[tuple[int, int]]] = states
        self.rules: list[tuple[int, tuple[int, ...]]] = rules
        self.index = {st: i for i, st in enumerate(states)}
        self.symbols: tuple[str, ...] = pt.symbols
        self.num_terminals = pt.num_terminals
        self.nullable = nullable_symbols(rules)
        self.by_lhs: dict[int, list[int]] = {}
        for i, (lhs, _) in enumerate(rules):
            self.by_lhs.setdefault(lhs, []).append(i)
        self.closures: dict[int, frozenset[tuple[int, int]]] = {}  # predictions per nonterminal
        # rule → its items with the dot at the start and past nullable symbols
        self.starts: dict[int, frozenset[tuple[int, int]]] = {}
        rpt = build_parse_tables(reversed_grammar(grammar))
        if rpt.symbols[: len(pt.symbols)] != pt.symbols:  # pragma: no cover
            raise AssertionError("reversed grammar numbers its symbols differently")
        self.rev_symbols: tuple[str, ...] = rpt.symbols
        self.rev = Automaton(rpt)
        self.rev_start = rpt.start_state  # the root's item (a set holding it may end here)
        assert rpt.items is not None
        rstates, rrules = rpt.items
        # per reversed state: [(lhs, rhs, dot)]
        self.rev_items = [[(rrules[r][0], rrules[r][1], d) for r, d in sorted(st)]
                          for st in rstates]
        # per reversed state: next symbol c -> [(lhs, the quotient rule's head before C!o)]
        self._waiting: list[dict[int, list[tuple[int, tuple[int, ...]]]] | None] = [
            None] * len(rstates)

    def waiting(self, s: int) -> dict[int, list[tuple[int, tuple[int, ...]]]]:
        """The items of reversed state ``s`` waiting for each symbol ``c``, as what a quotient
        rule ``lhs!o → head C!o`` needs: ``(lhs, head)``. Built once per state: the quotient
        asks this for every (symbol, origin) pair, and scanning the state's items each time
        cost most of a long suffix's setup."""
        w = self._waiting[s]
        if w is None:
            w = {}
            for lhs, rhs, d in self.rev_items[s]:
                if d < len(rhs):
                    w.setdefault(rhs[d], []).append((lhs, tuple(reversed(rhs[d + 1:]))))
            self._waiting[s] = w
        return w


def reversed_grammar(grammar: Grammar) -> Grammar:
    """The grammar of the reversed language, with lists kept left-recursive.

    Reversing ``A → α | A β`` (how lark expands ``x*``) gives a right-recursive rule, which an
    Earley parser completes in time proportional to the list's length at every element: the
    backward parse of a long suffix would be quadratic. ``A^R → A~tail α^R``,
    ``A~tail → ε | A~tail β^R`` describes the same reversed language left-recursively. The
    helper ``A~tail`` is numbered after every original symbol, and never appears in a
    quotient rule's right-hand side other than as a quotient symbol ``A~tail!o``.
    """
    by_lhs: dict[str, list[tuple[str, ...]]] = {}
    for r in grammar.rules:
        by_lhs.setdefault(r.lhs, []).append(r.rhs)
    listy = {a for a, rs in by_lhs.items()
             if any(len(x) > 1 and x[0] == a for x in rs) and all(x[:1] != (a,) or len(x) > 1
                                                              for x in rs)}
    out: list[RuleSpec] = []
    extra: list[RuleSpec] = []
    for r in grammar.rules:
        a = r.lhs
        if a not in listy:
            out.append(RuleSpec(a, tuple(reversed(r.rhs))))
        elif r.rhs[:1] == (a,):
            extra.append(RuleSpec(f"{a}~tail", (f"{a}~tail", *reversed(r.rhs[1:]))))
        else:
            out.append(RuleSpec(a, (f"{a}~tail", *reversed(r.rhs))))
    extra += [RuleSpec(f"{a}~tail", ()) for a in sorted(listy)]
    return replace(grammar, rules=tuple(out + extra))


_BUILD_LOCK = threading.Lock()  # one _Base built at a time (once per compiled grammar)


def base_for(ob: MaskBuilder, grammar: Grammar) -> _Base:
    """The one :class:`_Base` of ``ob``'s grammar, built on first use. One, also when
    fill-in-the-middle requests start on several threads at once: a request's suffix is
    parsed backwards by the base's reversed automaton and its quotient is built against the
    base's sets by identity (the contextual mode asks for the base twice), so two bases
    raced into place gave that request two automata and no middle connected its suffix."""
    r: _Base | None = getattr(ob, "_fim_base", None)
    if r is None:
        with _BUILD_LOCK:
            r = getattr(ob, "_fim_base", None)
            if r is None:
                r = _Base(grammar)
                ob._fim_base = r  # type: ignore[attr-defined]
    return r
