"""Grammar analysis: which symbols can derive a terminal string, which are reachable, and how
short their shortest derivation is.

Why: a rule that can never finish (``x: "c" x``) makes the runtime allow tokens that lead
nowhere, and a start symbol that derives nothing gives an all-False mask. Removing
non-productive symbols first and then unreachable rules (in that order: removing a rule can
make symbols unreachable, never the reverse) leaves a grammar in which every item the Earley
parser can reach can still complete, which is what "a mask is never all False before the
program can end" rests on. The same fixpoints give per-symbol minimum lengths, which token
budgets need.

All functions work on plain names (lists of :class:`Rule`) and are iterative, so grammars nested
thousands deep cannot overflow the stack.
"""

from __future__ import annotations

import heapq
import warnings
from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

from ..errors import GrammarError

__all__ = [
    "GrammarWarning",
    "cheapest_derivations",
    "min_lengths",
    "productive_symbols",
    "prune",
    "reachable_symbols",
    "rule_uses",
]


class GrammarWarning(UserWarning):
    """A grammar had rules that can never be used; they were removed."""



class Rule(Protocol):
    """A BNF production by symbol names (``gramask.grammar.RuleSpec`` is one; this module
    needs only its shape, so the grammar layer can call it without an import cycle)."""

    @property
    def lhs(self) -> str: ...
    @property
    def rhs(self) -> tuple[str, ...]: ...


R = TypeVar("R", bound=Rule)

def productive_symbols(rules: Sequence[R], terminals: Iterable[str]) -> set[str]:
    """Symbols that derive at least one string of terminals (terminals included)."""
    return set(min_lengths(rules, terminals))


def min_lengths(rules: Sequence[R], terminals: Iterable[str]) -> dict[str, int]:
    """Per productive symbol, the fewest terminals it derives (a terminal counts 1)."""
    ids: dict[str, int] = {}
    for t in terminals:
        ids.setdefault(t, len(ids))
    n_terms = len(ids)
    coded = [(ids.setdefault(r.lhs, len(ids)), [ids.setdefault(s, len(ids)) for s in r.rhs])
             for r in rules]
    unknown = 1 << 62  # (no derivation yet: above any sum of lengths)
    cost = [1] * n_terms + [unknown] * (len(ids) - n_terms)
    cheapest_derivations(cost, coded, rule_uses(coded, len(ids)), unknown)
    return {s: cost[i] for s, i in ids.items() if cost[i] < unknown}


def rule_uses(rules: Sequence[tuple[int, Sequence[int]]], nsym: int) -> list[list[int]]:
    """Per symbol, the rules whose right-hand side holds it (once per occurrence): what
    :func:`cheapest_derivations` reads, kept by a caller that prices the same rules often."""
    uses: list[list[int]] = [[] for _ in range(nsym)]
    for r, (_lhs, rhs) in enumerate(rules):
        for x in rhs:
            uses[x].append(r)
    return uses


def cheapest_derivations(cost: list[int], rules: Sequence[tuple[int, Sequence[int]]],
                         uses: Sequence[Sequence[int]], inf: int) -> None:
    """Lower ``cost`` in place to each symbol's cheapest complete derivation: the least
    fixpoint of ``cost[lhs] ≤ Σ cost[rhs]`` from the prices set (``inf``: none yet), found
    in one pass by Knuth's generalisation of Dijkstra's algorithm to grammars (Donald E.
    Knuth, "A generalization of Dijkstra's algorithm", 1977): a rule fires once the last
    symbol of its right-hand side is final, symbols made final cheapest first, instead of
    sweeping every rule until nothing changes. ``uses``: :func:`rule_uses` of ``rules``."""
    left = [len(rhs) for _, rhs in rules]
    acc = [0] * len(rules)
    heap = [(c, x) for x, c in enumerate(cost) if c < inf]
    for lhs, rhs in rules:
        if not rhs and cost[lhs] > 0:
            cost[lhs] = 0
            heap.append((0, lhs))
    heapq.heapify(heap)
    done = [False] * len(cost)
    while heap:
        d, x = heapq.heappop(heap)
        if done[x] or d != cost[x]:
            continue
        done[x] = True
        for r in uses[x]:
            acc[r] += d
            left[r] -= 1
            if not left[r]:
                lhs = rules[r][0]
                if acc[r] < cost[lhs]:
                    cost[lhs] = acc[r]
                    heapq.heappush(heap, (acc[r], lhs))


def reachable_symbols(rules: Sequence[R], start: str) -> set[str]:
    """Symbols that occur in some sentential form derived from ``start``."""
    by_lhs: dict[str, list[R]] = {}
    for r in rules:
        by_lhs.setdefault(r.lhs, []).append(r)
    seen = {start}
    work = [start]
    while work:
        for r in by_lhs.get(work.pop(), ()):
            for s in r.rhs:
                if s not in seen:
                    seen.add(s)
                    work.append(s)
    return seen


def prune(
    rules: Sequence[R],
    terminals: Iterable[str],
    start: str,
    *,
    warn: bool = True,
    source: str = "<grammar>",
    unproduced: Sequence[str] = (),
) -> tuple[R, ...]:
    """The rules that can take part in a derivation of a terminal string from ``start``.

    ``unproduced``: declared terminals (``%declare``) that nothing produces; they are not in
    ``terminals``, and the messages name them as the cause.

    Raises
    ------
    GrammarError
        ``start`` derives no terminal string (the language is empty), or only the empty
        string.

    Warns
    -----
    GrammarWarning
        Naming the non-productive nonterminals and the unreachable rules removed.
    """
    terms = set(terminals)
    good = productive_symbols(rules, terms)
    used = {s for r in rules for s in r.rhs}
    never = [t for t in unproduced if t in used]
    why = (f"; declared terminals that nothing produces: {', '.join(never)} (only the "
           "indenter's _INDENT/_DEDENT are produced by gramask)") if never else ""
    if start not in good:
        raise GrammarError(
            f"{source}: the language is empty: rule {start!r} derives no terminal string "
            f"(every alternative needs a rule that never finishes{why})",
            name=start,
        )
    lhs_all = {r.lhs for r in rules}
    dead = sorted(lhs_all - good)
    kept = [r for r in rules if all(s in good for s in r.rhs) and r.lhs in good]
    reach = reachable_symbols(kept, start)
    unreachable = sorted({r.lhs for r in kept if r.lhs not in reach})
    out = tuple(r for r in kept if r.lhs in reach)
    if not any(s in terms for r in out for s in r.rhs):
        # the token tables need a terminal: nothing to constrain (and nothing to build)
        gone = f" (once the rules that never finish are removed: {', '.join(dead)})" if dead else ""
        raise GrammarError(
            f"{source}: the language of {start!r} is only the empty string{gone}; gramask "
            "needs at least one terminal", name=start)
    if warn and (dead or unreachable or never):
        parts = []
        if dead:
            parts.append(f"non-productive (derive no terminal string): {', '.join(dead)}")
        if unreachable:
            parts.append(f"unreachable from {start!r}: {', '.join(unreachable)}")
        if never:
            parts.append(why[2:])
        warnings.warn(f"{source}: removed rules that can never be used; " + "; ".join(parts),
                      GrammarWarning, stacklevel=3)
    return out
