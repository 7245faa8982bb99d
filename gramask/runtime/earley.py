"""An incremental Earley recogniser over the split LR(0) ε-automaton, with hash-consed sets.

Each Earley set is an immutable object; an item is (automaton state, origin set). Two sets
with the same items and the same origin objects behave identically in every future, so sets
are hash-consed: building a set that already exists returns the existing object. Together with
a memo of ``advance`` keyed by (set, terminal), this turns the chart into something like a
graph-structured LR stack: configurations that recur (a statement start at the same nesting,
an argument list after ``(``) are literally the same object, and everything computed for them
is reused. Per-step cost depends on the set's size (nesting), never on the text's length.

Rollback and clone are free: a parse state is a pointer to a set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LimitExceededError
from .limits import RuntimeLimits, memo_size
from .memo import MISSING, BoundedMemo

if TYPE_CHECKING:
    from ..compiler.parse_tables import ParseTables

__all__ = ["Automaton", "EarleySet"]


class EarleySet:
    """One Earley set; never mutated after construction (``_waiting`` is a lazy index)."""

    __slots__ = ("_automaton", "_waiting", "accepts", "expected", "items", "total", "uid")

    def __init__(self, uid: int, items: tuple[Any, ...], automaton: Automaton) -> None:
        self.uid = uid
        self.items = items  # tuple of (state, origin EarleySet or None = this set)
        self.expected = 0  # bitset of parser terminals some item can shift
        self.accepts = False
        self.total = len(items)  # items along the sets this one was first built from
        self._automaton = automaton
        self._waiting: dict[int, list[Any]] | None = None  # built on the first completion into it

    def waiting_for(self, nonterminal: int) -> list[Any]:
        """[(target state, origin)] of the items here that wait for ``nonterminal``
        (memoised per nonterminal: a set is completed into for few of them). Origin None
        means this set: no object refers to itself, so no reference cycles."""
        w = self._waiting
        if w is None:
            w = self._waiting = {}
        r = w.get(nonterminal)
        if r is None:
            goto_nd = self._automaton.goto_nd
            r = []
            for s, o in self.items:
                t = goto_nd[s].get(nonterminal)
                if t is not None:
                    r.append((t, o))
            w[nonterminal] = r
        return r


class Automaton:
    """Runtime view of :class:`ParseTables` plus the hash-consing table."""

    def __init__(self, pt: ParseTables, limits: RuntimeLimits | None = None) -> None:
        limits = limits if limits is not None else RuntimeLimits()
        self.limits = limits
        self.max_items = limits.max_items_per_step
        n = pt.num_states
        nt = pt.num_terminals
        gi, gs, gt = pt.goto_indptr.tolist(), pt.goto_symbol.tolist(), pt.goto_target.tolist()
        ci, cl = pt.completed_indptr.tolist(), pt.completed_lhs.tolist()
        self.num_terminals = nt
        self.symbols = pt.symbols
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
        self.goto_nd = [dict(moves) for moves in self.goto_n]
        self.completed = [tuple(cl[ci[s] : ci[s + 1]]) for s in range(n)]
        self.nonkernel = pt.nonkernel.tolist()
        self.accepting = pt.accepting.tolist()
        self.live_state = [
            bool(self.goto_t[s] or self.goto_n[s] or self.accepting[s]) for s in range(n)
        ]
        self._interned: BoundedMemo[frozenset[tuple[int, int]], EarleySet] = BoundedMemo(
            memo_size(limits.interned_sets)
        )
        # (set uid, terminal) → next set. Kept here, bounded, not on the sets: a set holding
        # its successors would form cycles with their origins and keep every explored set alive.
        self._next: BoundedMemo[tuple[int, int], EarleySet | None] = BoundedMemo(
            memo_size(limits.step_memo)
        )
        self._next_uid = 1  # 0 stands for "this set" in keys
        self.root = self._close([(pt.start_state, None)])

    # ---------------------------------------------------------------- building
    def _close(self, seeds: list[tuple[int, EarleySet | None]], base: int = 0) -> EarleySet:
        """The set holding ``seeds`` and their completions (hash-consed). ``base``: items of
        the sets before it, for ``max_total_items``."""
        # The add-an-item block below appears twice (seeds, completions) on purpose: this is
        # the hottest loop of the runtime, and a helper call per item costs ~15% of p99.
        items: dict[tuple[int, int], tuple[Any, ...]] = {}
        work: list[tuple[Any, ...]] = []
        nonkernel = self.nonkernel
        completed = self.completed
        for s, o in seeds:
            key = (s, o.uid if o is not None else 0)
            if key not in items:
                items[key] = (s, o)
                work.append((s, o))
            nk = nonkernel[s]
            if nk >= 0 and (nk, 0) not in items:
                items[(nk, 0)] = (nk, None)
        while work:
            s, o = work.pop()
            if o is None:
                continue  # completions at the current position are folded into the automaton
            for a in completed[s]:
                for t, k in o.waiting_for(a):
                    if k is None:
                        k = o
                    key = (t, k.uid)
                    if key not in items:
                        items[key] = (t, k)
                        work.append((t, k))
                    nk = nonkernel[t]
                    if nk >= 0 and (nk, 0) not in items:
                        items[(nk, 0)] = (nk, None)

        # Items that can neither shift nor wait for a completion have done their work (they
        # completed above); dropping them makes sets that differ only in finished business
        # identical, which is what lets hash-consing share states across the text.
        if len(items) > self.max_items:  # checked once per set built, not per item
            raise LimitExceededError(
                f"the parser would hold {len(items):,} Earley items at one position (limit "
                f"RuntimeLimits.max_items_per_step = {self.max_items:,}): the grammar is "
                "too ambiguous here",
                limit="max_items_per_step", value=len(items),
            )
        live = self.live_state
        set_key = frozenset(k for k in items if live[k[0]])
        hit = self._interned.get(set_key)
        if hit is not None:
            return hit
        kept = tuple(it for k, it in items.items() if live[k[0]])
        if base + len(kept) > self.limits.max_total_items:
            raise LimitExceededError(
                f"the parse would hold {base + len(kept):,} Earley items in all (limit "
                f"RuntimeLimits.max_total_items = {self.limits.max_total_items:,}): the "
                "grammar is too ambiguous for text this long",
                limit="max_total_items", value=base + len(kept),
            )
        es = EarleySet(self._next_uid, kept, self)
        es.total = base + len(kept)
        self._next_uid += 1
        expected = 0
        accepts = False
        term_bits, accepting = self.term_bits, self.accepting
        for s, _ in kept:
            expected |= term_bits[s]
            if accepting[s]:
                accepts = True
        es.expected = expected
        es.accepts = accepts
        self._interned.put(set_key, es)  # sharing is an optimisation; forgotten sets stay valid
        return es

    def advance(self, es: EarleySet, terminal: int) -> EarleySet | None:
        """The set after shifting ``terminal``, or None if no item can shift it (memoised)."""
        if not (es.expected >> terminal) & 1:
            return None
        memo = self._next
        mkey = (es.uid, terminal)
        r = memo.get(mkey, MISSING)
        if r is not MISSING:
            return r
        seeds = []
        for s, o in es.items:
            t = self.goto_t[s].get(terminal)
            if t is not None:
                seeds.append((t, es if o is None else o))
        res = self._close(seeds, es.total)
        memo.put(mkey, res)
        return res

    def advance_any(self, es: EarleySet, terminals: int) -> EarleySet | None:
        """The set after a lexeme that is every terminal in the bitset ``terminals`` at once:
        the union of the items that can shift any of them (the contextual lexer's ties).
        None if no item can shift any (memoised)."""
        if not es.expected & terminals:
            return None
        if not terminals & (terminals - 1):
            return self.advance(es, terminals.bit_length() - 1)
        mkey = (es.uid, -1 - terminals)
        r = self._next.get(mkey, MISSING)
        if r is not MISSING:
            return r
        seeds = []
        for s, o in es.items:
            for term, t in self.goto_t[s].items():
                if (terminals >> term) & 1:
                    seeds.append((t, es if o is None else o))
        res = self._close(seeds)
        self._next.put(mkey, res)
        return res
