"""Earley sets from which no shift that can happen leads to the end (contextual lexer mode).

Where a terminal the parser expects can win no lexeme beside the others its LR(0) state
expects (:func:`gramask.compiler.contextual_wins.lost_shifts`: ``"abc"`` beside
``T0.2: /\\w+/``), the items waiting for it never move, and a parse that can only finish
through them is a dead end — however many lexemes it can still take (``T0 T0 T0 ...``: the
dead-end search over parser states never runs out of new ones). The automaton then refuses
such sets: stepping into one answers None, as for a terminal no item can shift, so masks,
walks and plans refuse the token that leads there.

The answer is read off the LR(0) automaton with those shifts removed, as two fixpoints over
its states: ``comp[s]``, the nonterminals an item of state ``s`` can still complete (through
shifts that can happen and nonterminals its predictions can derive), and ``reach[s]``, can
``s`` reach the accepting item. An Earley set is live iff one of its items reaches the
accepting item, or completes a nonterminal into its origin set that the origin's waiting
items turn into a live item in turn (``goal``, per set, a least fixpoint over its own
items, memoised: origin sets are shared). Exact about the shifts ``lost_shifts`` found: a
refused set has no completion; one it keeps may still be a dead end for a reason it does not
see (that is the dead-end search's, :mod:`gramask.runtime.core.contextual_ends`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...compiler.analysis import Rule, productive_symbols
from ...compiler.contextual_wins import end_reach
from ..limits import memo_size
from ..memo import BoundedMemo
from .earley import ORIGINS, STATES, UID, BelowCut

if TYPE_CHECKING:
    from ...compiler.lexer import LexerDFA
    from ...compiler.parse_tables import ParseTables
    from .earley import Automaton, EarleySet

__all__ = ["Viability", "closed_in_place", "closing_filter", "never_lexed", "unclosable_shifts"]


def never_lexed(dfa: LexerDFA, pt: ParseTables, ignored_bits: int) -> int:
    """The terminals (bits) the parser shifts somewhere but the basic lexer never produces:
    another always wins their lexemes (``CMP.2: "=" | "<"`` beside ``"="``; a warning at
    compile time). Rules needing one never finish; their sets are refused like the contextual
    mode's lost shifts, so a prefix that can only finish through one (``let x`` where every
    ``let`` needs ``"="``) is refused, not left without an end."""
    won = {int(t) for t in np.unique(dfa.accept) if t >= 0}
    nt = dfa.num_terminals
    shifted = {int(t) for t in np.unique(pt.goto_symbol) if t < nt}
    return sum(1 << t for t in shifted - won if not ignored_bits >> t & 1)


class Viability:
    """Which Earley sets of one automaton can still reach the end (see module)."""

    __slots__ = ("_goals", "comp", "goto_n", "reach")

    def __init__(self, aut: Automaton, lost: list[int],
                 accepting: list[bool] | None = None) -> None:
        self.goto_n = aut.goto_n  # (read only: shared with the automaton)
        # ``accepting``: the states whose items count as the end (default: the accepting
        # item; :func:`closing_filter` asks for a closing bracket instead)
        self.comp, self.reach = end_reach(aut.goto_t, aut.goto_n, aut.completed, aut.nonkernel,
                                          aut.accepting if accepting is None else accepting,
                                          lost)
        # set uid → the nonterminals whose completion into it leads to the end (bit set)
        self._goals: BoundedMemo[int, int] = BoundedMemo(
            memo_size(aut.limits.interned_sets // 16))

    def ok(self, es: EarleySet) -> bool:
        """Can some item of ``es`` still lead to the end? Raises :class:`BelowCut` where
        that depends on sets a cut set left out (see ``Automaton.cut``)."""
        states = array("i", es[STATES])
        reach, comp = self.reach, self.comp
        if any(reach[s] for s in states):
            return True
        for s, o in zip(states, es[ORIGINS:], strict=True):
            c = comp[s]
            if c and c & self.goal(es if o is None else o):
                return True
        return False

    def goal(self, o: EarleySet) -> int:
        """The nonterminals whose completion into ``o`` leads to the end (memoised; the
        sets it depends on, its items' origins, first, without recursion)."""
        memo = self._goals
        got = memo.get(o[UID])
        if got is not None:
            return got
        local: dict[int, int] = {}
        todo = [o]
        while todo:
            x = todo[-1]
            if x[UID] < 0:
                raise BelowCut  # a cut set's stand-in for what it left out
            if x[UID] in local:
                todo.pop()
                continue
            g = memo.get(x[UID])
            if g is not None:
                local[x[UID]] = g
                todo.pop()
                continue
            missing: dict[int, EarleySet] = {}  # (sets are unhashable: keyed by uid)
            for y in x[ORIGINS:]:
                if y is not None and y[UID] not in local:
                    gy = memo.get(y[UID]) if y[UID] >= 0 else None
                    if gy is None:
                        missing[y[UID]] = y
                    else:
                        local[y[UID]] = gy
            if missing:
                todo.extend(missing.values())
                continue
            local[x[UID]] = g = self._goal_of(x, local)
            memo.put(x[UID], g)
            todo.pop()
        return local[o[UID]]

    def _goal_of(self, x: EarleySet, known: dict[int, int]) -> int:
        """``goal(x)``, its items' origins known: a least fixpoint over ``x``'s items (an
        item predicted at ``x`` completes into ``x`` itself). Only those depend on the
        fixpoint: the items of older origins are read once, and the rounds go over the
        predicted ones alone (a wide ambiguous set holds hundreds of the former: every
        round went over them all, ~30% of a dead-end search's time on lark_fuzz seed 8901,
        grammar 7)."""
        reach, comp, goto_n = self.reach, self.comp, self.goto_n
        g = 0
        own: list[int] = []  # states of the items predicted at ``x``
        for s, o in zip(array("i", x[STATES]), x[ORIGINS:], strict=True):
            if o is None:
                own.append(s)
                continue
            b = known[o[UID]]
            for sym, t in goto_n[s]:
                if reach[t] or comp[t] & b:
                    g |= 1 << sym
        changed = True
        while changed:
            changed = False
            for s in own:
                for sym, t in goto_n[s]:
                    if not g >> sym & 1 and (reach[t] or comp[t] & g):
                        g |= 1 << sym
                        changed = True
        return g


def closing_filter(aut: Automaton, opens: frozenset[int], closes: frozenset[int],
                   barred: int, lost: list[int] | None = None) -> Viability | None:
    """Which Earley sets, right after an opening bracket, can still shift a closing one? The
    indentation layer asks for bracket depth 0 at the end, and inside brackets it drops the
    newline (so ``_INDENT``/``_DEDENT`` never come either: ``barred``, a bit set): a set
    from which no closing bracket can be shifted without them is a dead end, however the
    parse goes on (``simple: "[" T0`` where nothing closes the ``[``). The same two fixpoints
    as :class:`Viability`, with "can shift a closing bracket" as the goal. Sound: a set it
    refuses has no completion; one it keeps may still need more closing brackets than any
    text gives (the depth is a counter no finite analysis tracks). None where every
    opening bracket's own items reach a closing one (all bundled grammars): then no set is
    refused, and nothing is asked at run time. ``lost``: shifts that never happen besides."""
    if not opens:
        return None
    n = len(aut.goto_t)
    accepting = [any(c in aut.goto_t[s] for c in closes) for s in range(n)]
    no = [barred | (lost[s] if lost is not None else 0) for s in range(n)]
    v = Viability(aut, no, accepting)
    targets = {t for s in range(n) for o in opens if (t := aut.goto_t[s].get(o)) is not None}
    return None if all(v.reach[t] for t in targets) else v


def unclosable_shifts(aut: Automaton, closable: Viability, opens: frozenset[int]) -> list[int]:
    """Per LR(0) state, the opening brackets (a bit set) whose shift leads to items that can
    never shift a closing bracket, by themselves or through any nonterminal they complete:
    :func:`closing_filter` refuses every set such a shift makes, so the shift never
    happens. Removed from the automaton (:class:`Viability`), a set whose every way to the
    end goes through one is refused too: ``x`` where ``simple: T0 "("+`` and nothing closes
    the ``(`` (lark's indenter drops the newline inside it, so no line ends), which the
    masks otherwise took, with no completion after it."""
    reach, comp = closable.reach, closable.comp
    lead = 0  # nonterminals whose completion into some state can lead to a closing bracket
    changed = True
    while changed:
        changed = False
        for moves in aut.goto_n:
            for sym, t in moves:
                if not lead >> sym & 1 and (reach[t] or comp[t] & lead):
                    lead |= 1 << sym
                    changed = True
    out = [0] * len(aut.goto_t)
    for s, moves_t in enumerate(aut.goto_t):
        for o in opens:
            u = moves_t.get(o)
            if u is not None and not reach[u] and not comp[u] & lead:
                out[s] |= 1 << o
    return out


def closed_in_place(rules: Sequence[Rule], opens: Iterable[str], closes: Iterable[str],
                    barred: Iterable[str]) -> bool:
    """Does every rule that holds an opening bracket hold a closing one after it, with only
    symbols between them that derive some text without the ``barred`` terminals (the newline
    and the indentation ones)? Then the items right after an opening bracket reach a closing
    one by themselves, and :func:`closing_filter` would refuse nothing: this grammar-level
    test (a pass over the rules) spares its fixpoints over the automaton (~45 ms for the
    bundled Python grammar) wherever brackets come in pairs."""
    op, cl, bar = set(opens), set(closes), set(barred)
    heads = {r.lhs for r in rules}
    terms = {x for r in rules for x in r.rhs if x not in heads} - bar
    free = productive_symbols(rules, terms)  # derive some text without a barred terminal
    for r in rules:
        rhs = r.rhs
        for i, x in enumerate(rhs):
            if x not in op:
                continue
            for y in rhs[i + 1:]:
                if y in cl:
                    break
                if y not in free:
                    return False
            else:
                return False
    return True
