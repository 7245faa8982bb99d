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

import itertools
import threading
from array import array
from collections.abc import Iterable
from itertools import compress
from typing import TYPE_CHECKING, Final, Protocol, TypeAlias, cast

from ...errors import LimitExceededError
from ..limits import RuntimeLimits, memo_size
from ..memo import MISSING, BoundedMemo, InternTable

if TYPE_CHECKING:
    from ...compiler.parse_tables import ParseTables

__all__ = ["ACCEPTS", "EXPECTED", "ORIGINS", "STATES", "TOTAL", "UID", "Automaton",
           "BelowCut", "EarleySet", "SetFilter", "set_items"]

_MEMO_DEPTH = 64  # nested completion memos built at once, far below Python's recursion limit


# One Earley set; never mutated after construction. A flat exact tuple, not a class: a cold
# step builds dozens of sets, and CPython's cyclic GC untracks an exact tuple whose members are
# atoms or untracked tuples on its first pass, while a class instance (and any tuple or list
# it holds) stays tracked for life: ~50k sets with their item containers made the full
# collections of a cold pass the slowest masks. So the item states are bytes (not a GC
# object) and the origins are the tuple's own tail (no container); an origin is an older
# set, mostly untracked by the time this one is looked at (else a later pass gets both).
# Fields (read them by these indices):
#   UID       unique id (0 stands for "this set" in keys)
#   EXPECTED  bitset of parser terminals some item can shift
#   ACCEPTS   some item accepts
#   TOTAL     items along the sets this one was first built from
#   STATES    item states as int32s (read ``array("i", es[STATES])``) in a bytearray: not a
#             GC object, and unhashable, so that hashing a set by value (its origins nest,
#             the hash would walk them all) fails at once: key sets by ``es[UID]``
#   es[ORIGINS:]  origin set per item, None = this set
EarleySet: TypeAlias = "tuple[int, int, bool, int, bytearray, *tuple[EarleySet | None, ...]]"
UID: Final = 0
EXPECTED: Final = 1
ACCEPTS: Final = 2
TOTAL: Final = 3
STATES: Final = 4
ORIGINS: Final = 5


class SetFilter(Protocol):
    """What refuses Earley sets (:class:`gramask.runtime.core.viability.Viability`)."""

    def ok(self, es: EarleySet) -> bool: ...


class BelowCut(Exception):
    """A step from a cut set (see :meth:`Automaton.cut`) completed a phrase into an origin
    below the cut: its outcome depends on more of the parse than the cut keeps."""


# The origin of every item a cut set keeps below its cut (see ``Automaton.cut``): an empty
# set that no phrase may complete into, the same for every automaton (uid -1: no other set's)
_BELOW: EarleySet = (-1, 0, False, 0, bytearray())


def set_items(es: EarleySet) -> tuple[tuple[int, EarleySet | None], ...]:
    """(state, origin) pairs of ``es`` (origin None = this set)."""
    return tuple(zip(array("i", es[STATES]), es[ORIGINS:], strict=True))


class Automaton:
    """Runtime view of :class:`ParseTables` plus the hash-consing table."""

    # refuses sets no shift that can happen leads on from to the end (None: keeps them all;
    # set by the runtime's builder where some shift never happens, see
    # :mod:`gramask.runtime.core.viability`)
    viable: SetFilter | None = None

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
        # symbol → {state: target}: the moves of a set's items over one symbol are then one
        # C-level ``map`` over its states (see ``_moves``)
        by_symbol: list[dict[int, int]] = [
            {} for _ in range(max(len(self.symbols), max(gs, default=-1) + 1))]
        for s in range(n):
            for e in range(gi[s], gi[s + 1]):
                by_symbol[gs[e]][s] = gt[e]
        self._by_symbol: list[dict[int, int]] | None = by_symbol
        self.completed = [tuple(cl[ci[s] : ci[s + 1]]) for s in range(n)]
        self.nonkernel = pt.nonkernel.tolist()
        self.accepting = pt.accepting.tolist()
        self.live_state = [
            bool(self.goto_t[s] or self.goto_n[s] or self.accepting[s]) for s in range(n)
        ]
        # canonical while alive (see InternTable): sets are compared and memoised by uid
        self._interned: InternTable[tuple[int, ...], EarleySet] = InternTable(
            memo_size(limits.interned_sets)
        )
        # (set uid, terminal) → next set. Kept here, bounded, not on the sets: a set holding
        # its successors would form cycles with their origins and keep every explored set alive.
        self._next: BoundedMemo[tuple[int, int], EarleySet | None] = BoundedMemo(
            memo_size(limits.step_memo)
        )
        # set uids: next() on a count is atomic under the GIL, so threads never share one
        self._uids = itertools.count(1)  # 0 stands for "this set" in keys
        # held while a missing set is built and interned: threads that meet the same new
        # set get one object, as a single thread would
        self._intern_lock = threading.Lock()
        self._completions: BoundedMemo[tuple[int, int], dict[int, EarleySet | None]] = (
            BoundedMemo(memo_size(limits.interned_sets // 16))
        )
        # item key = state | origin uid << _origin_shift: as few bits as the states need, so
        # that keys stay one-digit ints (below 2**30) for as long as possible
        self._origin_shift = max(1, n.bit_length())
        self._cuts: BoundedMemo[tuple[int, int], EarleySet] = BoundedMemo(
            memo_size(limits.interned_sets // 4))
        self.root = self._close([(pt.start_state, None)])

    # ---------------------------------------------------------------- building
    _by_symbol: list[dict[int, int]] | None = None  # None: states built on demand

    def _moves(self, es: EarleySet, symbol: int, table: list[dict[int, int]],
               newest_first: bool = False) -> Iterable[tuple[int, EarleySet | None]]:
        """(target, origin) of each item of ``es`` whose state moves over ``symbol`` (origin
        None: ``es``), in the set's order or ``newest_first``. Items that do not move are
        skipped at C level (``compress``): on an ambiguous grammar a set holds hundreds of
        items of which a few wait for any one symbol. ``table`` (``goto_t`` or ``goto_nd``)
        serves automata whose states are built on demand."""
        states = array("i", es[STATES])
        origins = es[ORIGINS:]
        if newest_first:
            states.reverse()
            origins = origins[::-1]
        by = self._by_symbol
        if by is not None:
            m = by[symbol]
            hits = compress(zip(map(m.get, states), origins, strict=True),
                            map(m.__contains__, states))
            return cast("Iterable[tuple[int, EarleySet | None]]", hits)  # no None target
        return [(t, o) for s, o in zip(states, origins, strict=True)
                if (t := table[s].get(symbol)) is not None]

    def _completion(self, o: EarleySet, a: int, depth: int = 0
                    ) -> dict[int, EarleySet | None]:
        """The items (key -> origin, see ``_close``) that completing nonterminal ``a`` into set
        ``o`` adds to a new set, transitively: the items of ``o`` waiting for ``a``, advanced,
        and whatever their own completions add. This depends only on ``o`` and ``a``, so it is
        memoised (bounded): every terminal shifted at a position that completes the same
        phrase (an identifier, a number, a closing bracket, ...) reuses it, merged with one
        C-level ``dict.update`` instead of walking the origin chain item by item."""
        if o is _BELOW:
            raise BelowCut
        key = (o[UID], a)
        memo = self._completions
        r = memo.young.get(key)
        if r is None:
            r = memo.get(key)
        if r is None:
            r = self._complete_into(o, a, depth=depth)
            memo.put(key, r)
        return r

    def _complete_into(self, o: EarleySet, a: int, memo: bool = True, depth: int = 0
                       ) -> dict[int, EarleySet | None]:
        """``_completion(o, a)``, computed: the items of ``o`` waiting for ``a``, advanced over
        it, and transitively what those that complete in turn add. Completions into earlier
        sets come from those sets' memos (``memo``; recursion bounded by ``_MEMO_DEPTH``, past
        it they are walked here as the plain Earley completer does); completions into ``o``
        itself (phrases that started at ``o`` and end together) are walked here.

        On an ambiguous grammar the same phrase completes into the same origin along many
        paths, and one completion holds many others (``s: s s | "a"``: completing ``s`` into
        a set completes it into every older one): a (origin, nonterminal) pair is merged
        once per set (here and in ``_close``), and the newest origins go first, so that the
        items the older ones add are found in ``r`` and not followed. Merging every pair met
        merged 5.5 times the items (lark_fuzz seed 8904, grammar 3: 644M against 119M over
        36 masks of three random walks, most of a 5 s mask)."""
        ob = self._origin_shift
        goto_nd, nonkernel, completed = self.goto_nd, self.nonkernel, self.completed
        r: dict[int, EarleySet | None] = {}
        if memo and depth >= _MEMO_DEPTH:
            memo = False  # a long chain of phrases ending together (``not not ... x``)
        # depth: completion memos being built above this one, on this call chain (an
        # argument, not a counter on the automaton: threads have call chains of their own)
        todo = [(o, a)]
        done = {(o[UID], a)}  # the pairs whose completions are in ``r`` (or on ``todo``)
        while todo:
            x, b = todo.pop()
            # newest origins first: their completions hold most of the older ones', whose
            # items are then found in ``r`` and not followed again
            for t, k in self._moves(x, b, goto_nd, True):
                if k is None:
                    k = x
                key = t | k[UID] << ob
                if key in r:
                    continue  # added with its own completions
                r[key] = k
                nk = nonkernel[t]
                if nk >= 0 and nk not in r:
                    r[nk] = None
                for c in completed[t]:
                    kc = (k[UID], c)
                    if kc in done:
                        continue  # in ``r`` already, or its items on their way
                    if memo and k is not o:
                        done.add(kc)
                        r.update(self._completion(k, c, depth + 1))  # k older: no cycle
                    else:
                        if k is _BELOW:
                            raise BelowCut
                        done.add(kc)
                        todo.append((k, c))
        return r

    def _close(self, seeds: list[tuple[int, EarleySet | None]], base: int = 0) -> EarleySet:
        """The set holding ``seeds`` and their completions (hash-consed). ``base``: items of
        the sets before it, for ``max_total_items``."""
        # Items are keyed by one int (state | origin uid << bits): no tuple per item.
        ob = self._origin_shift
        sm = (1 << ob) - 1
        items: dict[int, EarleySet | None] = {}
        nonkernel = self.nonkernel
        completed = self.completed
        done: set[tuple[int, int]] = set()  # pairs merged (see ``_complete_into``)
        for s, o in reversed(seeds):  # newest origins first, as in ``_complete_into``
            key = s if o is None else s | o[UID] << ob
            if key in items:
                continue
            items[key] = o
            nk = nonkernel[s]
            if nk >= 0 and nk not in items:
                items[nk] = None
            if o is not None:  # completions at the current position are in the automaton
                for a in completed[s]:
                    oa = (o[UID], a)
                    if oa not in done:  # many items complete the same phrase: merged once
                        done.add(oa)
                        items.update(self._completion(o, a))

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
        keys = sorted([k for k in items if live[k & sm]])
        set_key = tuple(keys)  # ints only: untracked by the GC after its first pass
        hit = self._interned.young.get(set_key)
        if hit is None:
            hit = self._interned.get(set_key)
        if hit is not None:
            return hit
        with self._intern_lock:
            hit = self._interned.get(set_key)  # another thread may have built it meanwhile
            if hit is not None:
                return hit
            return self._new_set(set_key, keys, items, base)

    def _new_set(self, set_key: tuple[int, ...], keys: list[int],
                 items: dict[int, EarleySet | None], base: int) -> EarleySet:
        """Build and intern the set of ``keys`` (under ``_intern_lock``)."""
        sm = (1 << self._origin_shift) - 1
        n = len(keys)
        if base + n > self.limits.max_total_items:
            raise LimitExceededError(
                f"the parse would hold {base + n:,} Earley items in all (limit "
                f"RuntimeLimits.max_total_items = {self.limits.max_total_items:,}): the "
                "grammar is too ambiguous for text this long",
                limit="max_total_items", value=base + n,
            )
        states = [k & sm for k in keys]
        expected = 0
        accepts = False
        term_bits, accepting = self.term_bits, self.accepting
        for s in states:
            expected |= term_bits[s]
            if accepting[s]:
                accepts = True
        es: EarleySet = (next(self._uids), expected, accepts, base + n,
                         bytearray(array("i", states)), *[items[k] for k in keys])
        self._interned.put(set_key, es)  # forgotten only once nothing else holds it
        return es

    def cut(self, es: EarleySet, depth: int) -> EarleySet:
        """``es`` with its origins followed ``depth`` sets down and no further: the items of
        the sets below are kept, their origins replaced by one empty set that no phrase may
        complete into (:class:`BelowCut`, raised from the steps that would). Steps from a cut
        set that do not raise see exactly the states, expected terminals and acceptance the
        same steps from ``es`` see, and cut sets are hash-consed like any other: parse
        positions with the same top (the same statement start inside different functions)
        share one cut set, so what is memoised for it is reused across the text."""
        if depth <= 0 or es is _BELOW:
            return _BELOW
        key = (es[UID], depth)
        r = self._cuts.get(key)
        if r is not None:
            return r
        ob = self._origin_shift
        items: dict[int, EarleySet | None] = {}
        below: dict[int, EarleySet] = {}  # origin uid → its cut: a set has few origins
        for s, o in zip(array("i", es[STATES]), es[ORIGINS:], strict=True):
            if o is None:
                items[s] = None
            else:
                c = below.get(o[UID])
                if c is None:
                    c = below[o[UID]] = self.cut(o, depth - 1)
                items[s | c[UID] << ob] = c
        keys = sorted(items)
        set_key = tuple(keys)
        r = self._interned.get(set_key)
        if r is None:
            with self._intern_lock:
                r = self._interned.get(set_key)
                if r is None:
                    r = self._new_set(set_key, keys, items, max(0, es[TOTAL] - len(keys)))
        self._cuts.put(key, r)
        return r

    def advance(self, es: EarleySet, terminal: int) -> EarleySet | None:
        """The set after shifting ``terminal``, or None if no item can shift it (memoised)."""
        if not (es[EXPECTED] >> terminal) & 1:
            return None
        memo = self._next
        mkey = (es[UID], terminal)
        r = memo.young.get(mkey, MISSING)
        if r is MISSING:
            r = memo.get(mkey, MISSING)
        if r is not MISSING:
            if r is _BELOW:
                raise BelowCut
            return r
        seeds: list[tuple[int, EarleySet | None]] = [
            (t, es if o is None else o) for t, o in self._moves(es, terminal, self.goto_t)]
        try:
            res = self._kept(self._close(seeds, es[TOTAL]))
        except BelowCut:  # remembered: a cut set is tried again and again (see ``cut``)
            memo.put(mkey, _BELOW)
            raise
        memo.put(mkey, res)
        return res

    def _kept(self, made: EarleySet) -> EarleySet | None:
        """``made``, or None where it is a set no shift that can happen leads on from
        (``viable``; raises :class:`BelowCut` as it does)."""
        return None if self.viable is not None and not self.viable.ok(made) else made

    def advance_any(self, es: EarleySet, terminals: int) -> EarleySet | None:
        """The set after a lexeme that is every terminal in the bitset ``terminals`` at once:
        the union of the items that can shift any of them (the contextual lexer's ties).
        None if no item can shift any (memoised)."""
        if not es[EXPECTED] & terminals:
            return None
        if not terminals & (terminals - 1):
            return self.advance(es, terminals.bit_length() - 1)
        mkey = (es[UID], -1 - terminals)
        r = self._next.get(mkey, MISSING)
        if r is not MISSING:
            if r is _BELOW:
                raise BelowCut
            return r
        seeds: list[tuple[int, EarleySet | None]] = []
        both = es[EXPECTED] & terminals
        while both:  # per terminal, the items that shift it (the set's order is immaterial)
            term = both.bit_length() - 1
            both ^= 1 << term
            seeds += [(t, es if o is None else o) for t, o in self._moves(es, term, self.goto_t)]
        try:
            res = self._kept(self._close(seeds))
        except BelowCut:
            self._next.put(mkey, _BELOW)
            raise
        self._next.put(mkey, res)
        return res

    def join(self, shifts: list[tuple[EarleySet, int]], sets: list[EarleySet]
             ) -> EarleySet | None:
        """One set for a position that several lexemes lead to (a lattice of lexemes, as the
        contextual-mode suffix of fill-in-the-middle is): the items of shifting each
        ``(set, terminal)``, plus every item of each of ``sets`` (reached by an ignored lexeme,
        so the parser is where it was; a prediction keeps that set as its origin). None if
        nothing is left."""
        seeds: list[tuple[int, EarleySet | None]] = []
        base = 0
        goto_t = self.goto_t
        for es, terminal in shifts:
            if not (es[EXPECTED] >> terminal) & 1:
                continue
            base = max(base, es[TOTAL])
            for s, o in zip(array("i", es[STATES]), es[ORIGINS:], strict=True):
                t = goto_t[s].get(terminal)
                if t is not None:
                    seeds.append((t, es if o is None else o))
        for es in sets:
            base = max(base, es[TOTAL])
            seeds += [(s, es if o is None else o)
                      for s, o in zip(array("i", es[STATES]), es[ORIGINS:], strict=True)]
        if not seeds:
            return None
        return self._close(seeds, base)
