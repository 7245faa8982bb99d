"""The quotient grammar's LR(0) automaton, its states built on demand.

The right quotient (:mod:`gramask.runtime.fim.quotient`) adds a few rules to the grammar per
request. The original automaton's states are reused as they are (no original item set holds a
new rule), and a state holding a new rule is built the first time the parse reaches it, so
setup does not pay for the thousands of states the new rules could create.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from ...compiler.parse_tables import past_nullable
from ..core.earley import Automaton
from ..limits import RuntimeLimits, memo_size
from ..memo import BoundedMemo, InternTable

if TYPE_CHECKING:
    from .quotient_base import _Base

__all__ = ["LazyAutomaton"]

V = TypeVar("V")
# one state's row of the per-state tables, in Automaton's order: terminal moves, nonterminal
# moves (as pairs and as a dict), the terminals it can shift (bits), the rules completed in
# it, its nonkernel state, accepting, live
_Row = tuple[dict[int, int], tuple[tuple[int, int], ...], dict[int, int], int, tuple[int, ...],
             int, bool, bool]


class _Lazy(dict[int, V], Generic[V]):
    """A per-state table filled on first access. It holds its automaton's fill method weakly:
    the automaton holds the table, and a cycle would leave a removed request's quotient to the
    cyclic garbage collector (thousands of objects, a pause in a serving worker)."""

    __slots__ = ("fill",)

    def __init__(self, fill: Callable[[int], None]) -> None:
        super().__init__()
        self.fill = weakref.WeakMethod(fill)

    def __missing__(self, s: int) -> V:
        fill = self.fill()
        assert fill is not None, "a lazy table outlived its automaton"
        fill(s)
        return self[s]

    def as_list(self) -> list[V]:
        """This table where :class:`Automaton` keeps a list: it is only read by state index."""
        return cast("list[V]", self)


class LazyAutomaton(Automaton):
    """The runtime automaton of the quotient grammar, states built on demand (see module)."""

    def __init__(self, base: _Base, new_rules: list[tuple[int, tuple[int, ...]]],
                 num_symbols: int, terminal_ids: Iterable[int], start: int,
                 symbols: tuple[str, ...], limits: RuntimeLimits) -> None:
        self.limits = limits
        self.max_items = limits.max_items_per_step
        self.base = base
        self.num_terminals = base.num_terminals
        self.symbols = symbols
        self.is_terminal = [False] * num_symbols
        for t in range(base.num_terminals):
            self.is_terminal[t] = True
        for t in terminal_ids:
            self.is_terminal[t] = True
        aug = num_symbols  # the quotient's own augmented start symbol
        self.is_terminal.append(False)
        self.rules = [*base.rules, *new_rules, (aug, (start,))]
        self.aug_rule = len(self.rules) - 1
        self.n0 = len(base.states)
        self.by_lhs: dict[int, list[int]] = {}
        for i in range(len(base.rules), len(self.rules)):
            self.by_lhs.setdefault(self.rules[i][0], []).append(i)
        self.closures: dict[int, frozenset[tuple[int, int]]] = {}
        self.starts: dict[int, frozenset[tuple[int, int]]] = {}  # as _Base.starts, own rules
        self.states: list[frozenset[tuple[int, int]]] = []
        self.index: dict[frozenset[tuple[int, int]], int] = {}
        self._tables = (_Lazy[dict[int, int]](self._fill),
                        _Lazy[tuple[tuple[int, int], ...]](self._fill),
                        _Lazy[dict[int, int]](self._fill), _Lazy[int](self._fill),
                        _Lazy[tuple[int, ...]](self._fill), _Lazy[int](self._fill),
                        _Lazy[bool](self._fill), _Lazy[bool](self._fill))
        lz = self._tables
        self.goto_t, self.goto_n, self.goto_nd = (
            lz[0].as_list(), lz[1].as_list(), lz[2].as_list())
        self.term_bits, self.completed = lz[3].as_list(), lz[4].as_list()
        self.nonkernel, self.accepting, self.live_state = (
            lz[5].as_list(), lz[6].as_list(), lz[7].as_list())
        self._interned = InternTable(memo_size(limits.interned_sets))  # see Automaton
        self._next = BoundedMemo(memo_size(limits.step_memo))
        self._uids = itertools.count(1)  # as Automaton's: atomic, 0 is "this set"
        self._intern_lock = threading.Lock()
        self._state_lock = threading.Lock()  # numbering of states built on demand
        self._origin_shift = 32  # states are built on demand: no bound known
        self._completions = BoundedMemo(memo_size(limits.interned_sets // 16))
        self._cuts = BoundedMemo(memo_size(limits.interned_sets // 4))  # see Automaton.cut
        self.start_state = self._intern(self._skip_nullable([(self.aug_rule, 0)]))
        self.root = self._close([(self.start_state, None)])

    # -------------------------------------------------------------- LR(0) items
    def _skip_nullable(self, items: Iterable[tuple[int, int]]) -> frozenset[tuple[int, int]]:
        return past_nullable(items, self.rules, self.base.nullable)

    def _closure(self, a: int) -> frozenset[tuple[int, int]]:
        """Items predicted by nonterminal ``a`` (memoised; shared across requests for the
        original nonterminals)."""
        base = self.base
        own = a in self.by_lhs
        memo = self.closures if own else base.closures
        r = memo.get(a)
        if r is not None:
            return r
        out: set[tuple[int, int]] = set()
        seen = {a}
        work = [a]
        rules = self.rules
        n_base = len(base.rules)
        while work:
            x = work.pop()
            if own and x != a:
                if x not in self.by_lhs:
                    # an original nonterminal: its predictions never reach the quotient's
                    # own rules and are memoised in the base, shared by every request
                    out |= self._closure(x)
                    continue
                done = self.closures.get(x)
                if done is not None:  # a closure is complete: no need to walk it again
                    out |= done
                    continue
            for ri in self.by_lhs.get(x) or base.by_lhs.get(x) or ():
                starts = base.starts if ri < n_base else self.starts
                first = starts.get(ri)
                if first is None:
                    first = starts[ri] = self._skip_nullable([(ri, 0)])
                for it in first:
                    if it not in out:
                        out.add(it)
                        rhs = rules[it[0]][1]
                        if it[1] < len(rhs):
                            y = rhs[it[1]]
                            if not self.is_terminal[y] and y not in seen:
                                seen.add(y)
                                work.append(y)
        r = frozenset(out)
        memo[a] = r
        return r

    def _intern(self, items: frozenset[tuple[int, int]]) -> int:
        j = self.base.index.get(items)
        if j is not None:
            return j
        j = self.index.get(items)
        if j is None:
            with self._state_lock:  # a number and its list slot, taken together
                j = self.index.get(items)
                if j is None:
                    self.states.append(items)
                    j = self.index[items] = self.n0 + len(self.states) - 1
        return j

    def _fill(self, s: int) -> None:
        if s < self.n0:
            b = self.base.automaton
            vals: _Row = (b.goto_t[s], b.goto_n[s], b.goto_nd[s], b.term_bits[s],
                          b.completed[s], b.nonkernel[s], b.accepting[s], b.live_state[s])
        else:
            vals = self._build(self.states[s - self.n0])
        lz = self._tables
        dict.__setitem__(lz[0], s, vals[0])
        dict.__setitem__(lz[1], s, vals[1])
        dict.__setitem__(lz[2], s, vals[2])
        dict.__setitem__(lz[3], s, vals[3])
        dict.__setitem__(lz[4], s, vals[4])
        dict.__setitem__(lz[5], s, vals[5])
        dict.__setitem__(lz[6], s, vals[6])
        dict.__setitem__(lz[7], s, vals[7])

    def _build(self, items: frozenset[tuple[int, int]]) -> _Row:
        rules, is_t = self.rules, self.is_terminal
        moves: dict[int, list[tuple[int, int]]] = {}
        predicted: set[tuple[int, int]] = set()
        done: set[int] = set()
        accepting = False
        for r, d in items:
            lhs, rhs = rules[r]
            if d < len(rhs):
                x = rhs[d]
                moves.setdefault(x, []).append((r, d + 1))
                if not is_t[x]:
                    predicted |= self._closure(x)
            elif r == self.aug_rule:
                accepting = True
            else:
                done.add(lhs)
        goto_t: dict[int, int] = {}
        goto_n: list[tuple[int, int]] = []
        bits = 0
        for x in sorted(moves):
            tgt = self._intern(self._skip_nullable(moves[x]))
            if is_t[x]:
                goto_t[x] = tgt
                bits |= 1 << x
            else:
                goto_n.append((x, tgt))
        nk = self._intern(frozenset(predicted)) if predicted else -1
        live = bool(goto_t or goto_n or accepting)
        return (goto_t, tuple(goto_n), dict(goto_n), bits, tuple(sorted(done)), nk,
                accepting, live)
