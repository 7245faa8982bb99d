"""An incremental Earley recogniser over the split LR(0) ε-automaton, with hash-consed sets.

Each Earley set is an immutable object; an item is (automaton state, origin set). Two sets
with the same items and the same origin objects behave identically in every future, so sets
are hash-consed: building a set that already exists returns the existing object. Together with
per-set memo tables (``advance`` by terminal), this turns the chart into something like a
graph-structured LR stack: configurations that recur (a statement start at the same nesting,
an argument list after ``(``) are literally the same object, and everything computed for them
is reused. Per-step cost depends on the set's size (nesting), never on the text's length.

Rollback and clone are free: a parse state is a pointer to a set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..compiler.parse_tables import ParseTables

__all__ = ["Automaton", "EarleySet"]

_MISSING = object()


class EarleySet:
    """One Earley set; never mutated after construction (``next`` is a memo)."""

    __slots__ = ("__weakref__", "accepts", "expected", "items", "next", "uid", "waiting")

    def __init__(self, uid: int, items: tuple) -> None:
        self.uid = uid
        self.items = items  # tuple of (state, origin EarleySet or None = this set)
        self.expected = 0  # bitset of parser terminals some item can shift
        self.accepts = False
        self.waiting: dict[int, list] = {}  # nonterminal → [(target state, origin)]
        self.next: dict[int, EarleySet | None] = {}


class Automaton:
    """Runtime view of :class:`ParseTables` plus the hash-consing table."""

    MAX_INTERNED = 200_000

    def __init__(self, pt: ParseTables) -> None:
        n = pt.num_states
        nt = pt.num_terminals
        gi, gs, gt = pt.goto_indptr.tolist(), pt.goto_symbol.tolist(), pt.goto_target.tolist()
        ci, cl = pt.completed_indptr.tolist(), pt.completed_lhs.tolist()
        self.num_terminals = nt
        self.goto_t: list[dict[int, int]] = []  # terminal moves
        self.goto_n: list[tuple[tuple[int, int], ...]] = []  # nonterminal moves
        self.term_bits: list[int] = []
        for s in range(n):
            t_moves, n_moves, bits = {}, [], 0
            for e in range(gi[s], gi[s + 1]):
                sym, tgt = gs[e], gt[e]
                if sym < nt:
                    t_moves[sym] = tgt
                    bits |= 1 << sym
                else:
                    n_moves.append((sym, tgt))
            self.goto_t.append(t_moves)
            self.goto_n.append(tuple(n_moves))
            self.term_bits.append(bits)
        self.completed = [tuple(cl[ci[s] : ci[s + 1]]) for s in range(n)]
        self.nonkernel = pt.nonkernel.tolist()
        self.accepting = pt.accepting.tolist()
        self.live_state = [
            bool(self.goto_t[s] or self.goto_n[s] or self.accepting[s]) for s in range(n)
        ]
        self._interned: dict[frozenset, EarleySet] = {}
        self._next_uid = 1  # 0 stands for "this set" in keys
        self.root = self._close([(pt.start_state, None)])

    # ---------------------------------------------------------------- building
    def _close(self, seeds: list) -> EarleySet:
        items: dict[tuple[int, int], tuple] = {}
        work: list[tuple] = []
        nonkernel = self.nonkernel
        completed = self.completed

        def add(s: int, o: EarleySet | None) -> None:
            key = (s, o.uid if o is not None else 0)
            if key not in items:
                items[key] = (s, o)
                work.append((s, o))
            nk = nonkernel[s]
            if nk >= 0 and (nk, 0) not in items:
                items[(nk, 0)] = (nk, None)
                work.append((nk, None))

        for s, o in seeds:
            add(s, o)
        while work:
            s, o = work.pop()
            if o is None:
                continue  # completions at the current position are folded into the automaton
            for a in completed[s]:
                for t, k in o.waiting.get(a, ()):
                    add(t, k)

        # Items that can neither shift nor wait for a completion have done their work (they
        # completed above); dropping them makes sets that differ only in finished business
        # identical, which is what lets hash-consing share states across the text.
        live = self.live_state
        items = {k: it for k, it in items.items() if live[k[0]]}
        key = frozenset(items)
        hit = self._interned.get(key)
        if hit is not None:
            return hit
        es = EarleySet(self._next_uid, tuple(items.values()))
        self._next_uid += 1
        expected = 0
        accepts = False
        waiting: dict[int, list] = {}
        term_bits, goto_n, accepting = self.term_bits, self.goto_n, self.accepting
        for s, o in es.items:
            expected |= term_bits[s]
            accepts = accepts or accepting[s]
            origin = es if o is None else o
            for sym, tgt in goto_n[s]:
                waiting.setdefault(sym, []).append((tgt, origin))
        es.expected = expected
        es.accepts = accepts
        es.waiting = waiting
        if len(self._interned) >= self.MAX_INTERNED:
            self._interned.clear()  # sharing is an optimisation; live sets stay valid
        self._interned[key] = es
        return es

    def advance(self, es: EarleySet, terminal: int) -> EarleySet | None:
        """The set after shifting ``terminal``, or None if no item can shift it (memoised)."""
        r = es.next.get(terminal, _MISSING)
        if r is not _MISSING:
            return r  # type: ignore[return-value]
        if not (es.expected >> terminal) & 1:
            es.next[terminal] = None
            return None
        seeds = []
        for s, o in es.items:
            t = self.goto_t[s].get(terminal)
            if t is not None:
                seeds.append((t, es if o is None else o))
        res = self._close(seeds)
        es.next[terminal] = res
        return res
