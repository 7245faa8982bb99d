"""Grammar rules → the split LR(0) ε-automaton that the runtime's Earley recogniser runs on.

Aycock & Horspool, "Practical Earley Parsing" (2002): Earley items are (automaton state, origin)
instead of (rule, dot, origin). Kernel states hold the items that keep their origin (advanced
past nullable symbols included); each has a non-kernel partner with the items it predicts,
which start at the current position. This makes Earley sets small (a handful of items for a
programming language) and needs no special case for nullable rules at run time.
Works for any CFG, ambiguous and non-LALR included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import GrammarError
from ..grammar import Grammar
from .analysis import prune

__all__ = ["ParseTables", "build_parse_tables"]

AUGMENTED_START = "$start"


@dataclass
class ParseTables:
    """Arrays describing the automaton; symbols: terminals first (lexer order, then declared)."""

    symbols: tuple[str, ...]
    num_terminals: int  # parser terminals = lexer terminals + declared ones
    goto_indptr: np.ndarray  # (S+1,)
    goto_symbol: np.ndarray  # (E,)
    goto_target: np.ndarray  # (E,)
    completed_indptr: np.ndarray  # (S+1,)
    completed_lhs: np.ndarray  # nonterminal symbol ids completed in each state
    nonkernel: np.ndarray  # (S,) partner state, -1 if none
    accepting: np.ndarray  # (S,) bool: contains $start → start •
    start_state: int
    # the LR(0) item sets and numbered rules behind the states, when built in this process
    # (not stored in artifacts): fill-in-the-middle extends the automaton with new rules
    items: tuple[list[frozenset[tuple[int, int]]], list[tuple[int, tuple[int, ...]]]] | None = (
        field(default=None, compare=False, repr=False)
    )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "pt_goto_indptr": self.goto_indptr,
            "pt_goto_symbol": self.goto_symbol,
            "pt_goto_target": self.goto_target,
            "pt_completed_indptr": self.completed_indptr,
            "pt_completed_lhs": self.completed_lhs,
            "pt_nonkernel": self.nonkernel,
            "pt_accepting": self.accepting,
        }

    def metadata(self) -> dict[str, Any]:
        return {
            "symbols": list(self.symbols),
            "num_terminals": self.num_terminals,
            "start_state": self.start_state,
        }

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray], meta: dict[str, Any]) -> ParseTables:
        return cls(
            symbols=tuple(meta["symbols"]),
            num_terminals=int(meta["num_terminals"]),
            goto_indptr=np.asarray(a["pt_goto_indptr"]),
            goto_symbol=np.asarray(a["pt_goto_symbol"]),
            goto_target=np.asarray(a["pt_goto_target"]),
            completed_indptr=np.asarray(a["pt_completed_indptr"]),
            completed_lhs=np.asarray(a["pt_completed_lhs"]),
            nonkernel=np.asarray(a["pt_nonkernel"]),
            accepting=np.asarray(a["pt_accepting"], dtype=bool),
            start_state=int(meta["start_state"]),
        )

    @property
    def num_states(self) -> int:
        return len(self.nonkernel)


def parser_terminals(grammar: Grammar) -> list[str]:
    """Lexer terminals in lexer order, then %declare'd ones (indentation)."""
    names = [t.name for t in grammar.terminals]
    return names + [d for d in grammar.declared if d not in names]


Rule = tuple[int, tuple[int, ...]]  # (lhs symbol, rhs symbols), symbols numbered


def nullable_symbols(rules: Sequence[Rule]) -> frozenset[int]:
    """The nonterminals that derive the empty string (fixpoint)."""
    return free_closure(rules, ())


def free_closure(rules: Sequence[Rule], free: Iterable[int]) -> frozenset[int]:
    """``free`` plus every symbol all of whose rule's right-hand side is free (a fixpoint;
    with nothing free, the nullable symbols)."""
    out = set(free)
    missing: list[int] = []  # per rule: the symbols of its right-hand side not yet free
    uses: dict[int, list[int]] = {}  # symbol → the rules it is missing from
    work: list[int] = []
    for i, (lhs, rhs) in enumerate(rules):
        need = [x for x in rhs if x not in out]
        missing.append(len(need))
        for x in need:
            uses.setdefault(x, []).append(i)
        if not need:
            work.append(lhs)
    while work:  # a worklist: each symbol's rules are visited once it is known free
        x = work.pop()
        out.add(x)
        for i in uses.pop(x, ()):
            missing[i] -= 1
            if missing[i] == 0:
                work.append(rules[i][0])
    return frozenset(out)


def past_nullable(items: Iterable[tuple[int, int]], rules: Sequence[Rule],
                  nullable: frozenset[int]) -> frozenset[tuple[int, int]]:
    """LR(0) items ``(rule, dot)`` plus those with the dot moved past nullable symbols."""
    out = set(items)
    work = list(out)
    while work:
        r, d = work.pop()
        rhs = rules[r][1]
        if d < len(rhs) and rhs[d] in nullable:
            it = (r, d + 1)
            if it not in out:
                out.add(it)
                work.append(it)
    return frozenset(out)


def build_parse_tables(grammar: Grammar) -> ParseTables:
    terms = parser_terminals(grammar)
    term_set = set(terms)
    nonterms: list[str] = []
    seen = set()
    for r in grammar.rules:
        if r.lhs not in seen:
            seen.add(r.lhs)
            nonterms.append(r.lhs)
    for r in grammar.rules:
        for s in r.rhs:
            if s not in term_set and s not in seen:
                raise GrammarError(f"rule {r.lhs!r} uses undefined symbol {s!r}", name=s)
    # a Grammar built by hand has not been through from_lark's analysis: prune it here too
    # (a no-op for grammars that have), so that every reachable item can still complete
    kept = prune(grammar.rules, terms, grammar.start, warn=False)
    kept_lhs = {r.lhs for r in kept}
    nonterms = [a for a in nonterms if a in kept_lhs]
    symbols = [*terms, AUGMENTED_START, *nonterms]
    sid = {s: i for i, s in enumerate(symbols)}
    nt_count = len(terms)
    rules: list[tuple[int, tuple[int, ...]]] = [(sid[AUGMENTED_START], (sid[grammar.start],))]
    rules += [(sid[r.lhs], tuple(sid[s] for s in r.rhs)) for r in kept]
    by_lhs: dict[int, list[int]] = {}
    for i, (lhs, _) in enumerate(rules):
        by_lhs.setdefault(lhs, []).append(i)

    nullable = nullable_symbols(rules)

    def skip_nullable(items: Sequence[tuple[int, int]]) -> frozenset[tuple[int, int]]:
        return past_nullable(items, rules, nullable)

    def predict(items: frozenset[tuple[int, int]]) -> frozenset[tuple[int, int]]:
        want = set()
        work = []
        for r, d in items:
            rhs = rules[r][1]
            if d < len(rhs) and rhs[d] >= nt_count:
                work.append(rhs[d])
        out: set[tuple[int, int]] = set()
        while work:
            a = work.pop()
            if a in want:
                continue
            want.add(a)
            for r in by_lhs.get(a, ()):
                for it in skip_nullable([(r, 0)]):
                    if it not in out:
                        out.add(it)
                        r2, d2 = it
                        rhs2 = rules[r2][1]
                        if d2 < len(rhs2) and rhs2[d2] >= nt_count:
                            work.append(rhs2[d2])
        return frozenset(out)

    index: dict[frozenset[tuple[int, int]], int] = {}
    states: list[frozenset[tuple[int, int]]] = []

    def intern(items: frozenset[tuple[int, int]]) -> int:
        j = index.get(items)
        if j is None:
            j = index[items] = len(states)
            states.append(items)
        return j

    start = intern(skip_nullable([(0, 0)]))
    # Only kernel states (the start and goto targets) get a partner: a non-kernel state is
    # closed under prediction already, and the recogniser adds partners only for the states it
    # shifts into. Predicting from non-kernel states too made a chain of n rules build n
    # shrinking copies of the first prediction (quadratic: 6M items for 2,000 rules).
    kernel = {start}
    gotos: list[dict[int, int]] = []
    nonkernel: list[int] = []
    i = 0
    while i < len(states):
        items = states[i]
        moves: dict[int, list[tuple[int, int]]] = {}
        for ri, d in items:
            rhs = rules[ri][1]
            if d < len(rhs):
                moves.setdefault(rhs[d], []).append((ri, d + 1))
        g = {sym: intern(skip_nullable(its)) for sym, its in sorted(moves.items())}
        kernel.update(g.values())
        gotos.append(g)
        nk = predict(items) if i in kernel else frozenset()
        nonkernel.append(intern(nk) if nk else -1)
        i += 1

    n = len(states)
    goto_indptr = np.zeros(n + 1, dtype=np.int64)
    gs, gt = [], []
    comp_indptr = np.zeros(n + 1, dtype=np.int64)
    comp = []
    accepting = np.zeros(n, dtype=bool)
    for st in range(n):
        for sym, t in gotos[st].items():
            gs.append(sym)
            gt.append(t)
        goto_indptr[st + 1] = len(gs)
        lhs_done = sorted(
            {rules[r][0] for r, d in states[st] if d == len(rules[r][1]) and r != 0}
        )
        comp.extend(lhs_done)
        comp_indptr[st + 1] = len(comp)
        accepting[st] = (0, 1) in states[st]
    pt = ParseTables(
        symbols=tuple(symbols),
        num_terminals=nt_count,
        goto_indptr=goto_indptr,
        goto_symbol=np.array(gs, dtype=np.int32),
        goto_target=np.array(gt, dtype=np.int32),
        completed_indptr=comp_indptr,
        completed_lhs=np.array(comp, dtype=np.int32),
        nonkernel=np.array(nonkernel, dtype=np.int32),
        accepting=accepting,
        start_state=start,
        items=(states, rules),
    )
    return pt
