"""Grammar-side budget costs: the fewest tokens of terminal strings that complete a parse.

Per automaton symbol the cheapest complete derivation (each terminal priced by its lexeme,
:mod:`.lexeme_costs`); per LR(0) state the cheapest way to finish each rule it is inside
(``K``); per Earley set, continued through the origin sets' waiting items (``W``), memoised on
the hash-consed sets. A trailing newline and dedents cost nothing at the very end of the input
(the end of input supplies them, as ``ParserContext.finish`` does).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ...compiler.analysis import cheapest_derivations, rule_uses
from ..core.earley import UID, set_items
from ..limits import memo_size
from ..memo import BoundedMemo
from .spelling import INF

if TYPE_CHECKING:
    import numpy as np

    from ..core.earley import EarleySet
    from ..core.masks import MaskBuilder

__all__ = ["ACCEPT", "GrammarCosts", "Rules"]

ACCEPT = -1  # pseudo-symbol: the augmented start rule completed
Rules = Sequence[tuple[int, tuple[int, ...]]]  # (lhs, rhs) as symbol ids of the automaton
# per LR(0) state: (Kn, Kt, Kz), see GrammarCosts.kernel
Kernel = tuple[dict[int, int], dict[int, int], frozenset[int]]


class _Predicted(NamedTuple):
    """What an item of one automaton state with no origin in set ``o`` gives, whatever the
    set (per ``k``): ``edges[b]`` = (a, w): once ``b`` is completed with origin ``o`` after
    ``w`` tokens from ``a``'s move, ``a`` is (:meth:`GrammarCosts.set_costs`'s graph);
    ``accept[a]``: tokens to finish the input from ``a``'s move alone; ``free_tail[b]`` =
    (a, w): ``w`` tokens finish from ``a``'s move where ``b`` is free in ``o``
    (``free_keys``: its keys); ``same[b]``: the ``a`` free once ``b`` is, and ``free_now``:
    those free at once (:meth:`GrammarCosts.set_free`)."""

    edges: dict[int, list[tuple[int, int]]]
    accept: dict[int, int]
    free_tail: dict[int, list[tuple[int, int]]]
    free_keys: frozenset[int]
    same: dict[int, list[int]]
    free_now: frozenset[int]
    # per start node: (node, distance) of every node ``edges`` reach from it (itself at 0),
    # filled as sets start there (a set with this one prediction state then merges these
    # instead of running Dijkstra)
    reach: dict[int, list[tuple[int, int]]]


class GrammarCosts:
    """Fewest tokens to complete a parse, per symbol, LR(0) state and Earley set, with a
    newline lexeme priced ``k`` (the caller's bound over the indentation widths in use)."""

    def __init__(self, mb: MaskBuilder, rules: Rules, nsym: int, lexeme_cost: np.ndarray,
                 markers: dict[int, int], free: frozenset[int]) -> None:
        """``lexeme_cost``: per lexer terminal, the tokens of one lexeme; ``markers``: the
        fill-in-the-middle marker terminals' costs; ``free``: the symbols the end of input
        supplies."""
        ctx = mb.ctx
        self.ctx = ctx
        self.automaton = a = ctx.automaton
        self.nt = a.num_terminals  # parser terminals
        self.indent_t = ctx.indent_t
        self.dedent_t = ctx.dedent_t
        self.has_indent = ctx.nl_t >= 0
        self.rules = rules
        self.nsym = nsym
        self.lexeme_cost = lexeme_cost
        self.markers = markers
        self.free = free
        self._sym_costs: dict[int, list[int]] = {}
        self._header: int | None = None
        self._uses: list[list[int]] | None = None  # see _rule_uses
        self._K: dict[int, dict[int, Kernel]] = {}
        lim = mb.limits
        self._W: BoundedMemo[tuple[int, int], dict[int, int]] = BoundedMemo(
            memo_size(lim.step_memo))
        self._Wz: BoundedMemo[int, frozenset[int]] = BoundedMemo(memo_size(lim.step_memo))
        self._H: BoundedMemo[tuple[int, int], int] = BoundedMemo(memo_size(lim.step_memo))
        self._shifted: BoundedMemo[tuple[int, int, int], int] = BoundedMemo(
            memo_size(lim.step_memo)
        )
        # per set: terminal → the items after shifting it (:meth:`shifted_cost` is asked
        # for every terminal a set expects)
        self._moves: BoundedMemo[int, dict[int, list[tuple[int, EarleySet]]]] = BoundedMemo(
            memo_size(lim.step_memo))
        # per (automaton state, k): what an item of that state with no origin (a prediction,
        # or the start item) gives :meth:`set_costs` and :meth:`set_free`, which met the same
        # few prediction states in every new set (see _Predicted)
        self._pred: dict[tuple[int, int], _Predicted] = {}

    def symbol_costs(self, k: int) -> list[int]:
        """Per automaton symbol, the fewest tokens of a complete derivation (newline lexeme
        cost ``k``; indentation tokens ride on it)."""
        c = self._sym_costs.get(k)
        if c is not None:
            return c
        n = self.nsym
        cost = [INF] * n
        lexc = self.lexeme_cost
        for t in range(min(self.nt, len(lexc))):
            cost[t] = int(lexc[t])
        for m, mc in self.markers.items():
            cost[m] = mc
        if self.has_indent:
            cost[self.ctx.nl_t] = k
            if self.indent_t >= 0:
                cost[self.indent_t] = 0
            if self.dedent_t >= 0:
                cost[self.dedent_t] = 0
        cheapest_derivations(cost, self.rules, self._rule_uses(), INF)
        self._sym_costs[k] = cost
        return cost

    def _rule_uses(self) -> list[list[int]]:
        """:func:`~gramask.compiler.analysis.rule_uses`, built once, read by every ``k``'s
        :meth:`symbol_costs`."""
        if self._uses is None:
            self._uses = rule_uses(self.rules, self.nsym)
        return self._uses

    def header_cost(self) -> int:
        """Fewest tokens of a block header (newlines free): what a rule spells before a
        symbol that opens with the indentation terminal, ``"else" ":"`` before a suite. A
        plan's search estimates the blocks a middle must open with it; INF without one."""
        if self._header is not None:
            return self._header
        hdr = INF
        if self.has_indent and self.indent_t >= 0:
            cost = self.symbol_costs(0)
            pre = [INF] * self.nsym  # fewest tokens before the indent a symbol opens with
            pre[self.indent_t] = 0
            # pre[lhs] ≤ (the symbols before x) + pre[x]: shortest paths from the indent
            edges: dict[int, list[tuple[int, int]]] = {}
            for lhs, rhs in self.rules:
                s = 0
                for x in rhs:
                    edges.setdefault(x, []).append((s, lhs))
                    s += cost[x]
                    if s >= INF:
                        break
            _shortest(pre, edges)
            for _lhs, rhs in self.rules:
                s = 0
                for x in rhs:
                    if s > 0 and pre[x] < INF:
                        hdr = min(hdr, s + pre[x])
                    s += cost[x]
                    if s >= INF:
                        break
        self._header = hdr
        return hdr

    def tail_costs(self, k: int) -> list[int]:
        """Like :meth:`symbol_costs`, for a derivation at the very end of the input: its
        trailing free symbols (newline, dedents) cost nothing."""
        key = -1 - k
        c = self._sym_costs.get(key)
        if c is not None:
            return c
        full = self.symbol_costs(k)
        free = self.free
        n = len(full)
        cost = [0 if x in free else full[x] for x in range(n)]
        for x in range(self.nt, n):
            cost[x] = 0 if x in free else INF
        # per rule, the positions after which only free symbols follow: lhs ≤ (full cost of
        # the symbols before x) + tail[x], shortest paths from the symbols' own values
        edges: dict[int, list[tuple[int, int]]] = {}
        for lhs, rhs in self.rules:
            if not rhs:
                cost[lhs] = 0
                continue
            j = len(rhs)
            while j > 0 and rhs[j - 1] in free:
                j -= 1
            i0 = max(j - 1, 0)
            pre = 0
            for x in rhs[:i0]:
                pre = min(INF, pre + full[x])
            for x in rhs[i0:]:
                if pre >= INF:
                    break
                edges.setdefault(x, []).append((pre, lhs))
                pre += full[x]
        _shortest(cost, edges)
        self._sym_costs[key] = cost
        return cost

    def kernel(self, s: int, k: int) -> Kernel:
        """For automaton state ``s``: (Kn, Kt, Kz) — per completed left-hand side (or
        ACCEPT), the fewest tokens to finish it from ``s`` without / with a free tail, and
        the ones finished by free symbols alone."""
        memo = self._K.setdefault(k, {})
        r = memo.get(s)
        if r is not None:
            return r
        a = self.automaton
        cost = self.symbol_costs(k)
        tail = self.tail_costs(k)
        # iterative post-order over the (acyclic) goto graph
        stack = [(s, False)]
        while stack:
            st, ready = stack.pop()
            if st in memo:
                continue
            succ = [*a.goto_t[st].items(), *a.goto_n[st]]
            if not ready:
                stack.append((st, True))
                for _, t in succ:
                    if t not in memo:
                        stack.append((t, False))
                continue
            kn: dict[int, int] = {x: 0 for x in a.completed[st]}
            if a.accepting[st]:
                kn[ACCEPT] = 0
            kz = set(kn)
            kt = dict(kn)
            for x, t in succ:
                tn, tt, tz = memo[t]
                c = cost[x]
                if c < INF:
                    for b, v in tn.items():
                        if c + v < kn.get(b, INF):
                            kn[b] = c + v
                    for b, v in tt.items():
                        if c + v < kt.get(b, INF):
                            kt[b] = c + v
                if x in self.free:
                    for b in tz:
                        kz.add(b)
                        kt[b] = 0
                ct = tail[x]
                if ct < INF:  # the free tail starts inside x's derivation
                    for b in tz:
                        if ct < kt.get(b, INF):
                            kt[b] = ct
            memo[st] = (kn, kt, frozenset(kz))
        return memo[s]

    # ------------------------------------------------------------------ Earley sets
    def set_costs(self, o: EarleySet, k: int) -> dict[int, int]:
        """Per nonterminal that items of ``o`` wait for: the fewest tokens to finish the
        input once it is completed with origin ``o``. One shortest-path problem per set: the
        kernel items (origins earlier, solved first) give start values, the set's own
        predictions are edges between its nonterminals (Dijkstra; costs are ≥ 0)."""
        key = (o[UID], k)
        r = self._W.get(key)
        if r is not None:
            return r
        _origins_first(o, lambda x: self._W.get((x[UID], k)) is not None,
                       lambda x: self.set_costs(x, k))
        free = self.set_free(o, k)
        base: dict[int, int] = {}
        goto_n = self.automaton.goto_n
        preds: list[_Predicted] = []
        for s, origin in set_items(o):
            if origin is None:  # a prediction of this set (or the start item)
                pr = self._predicted(s, k)
                preds.append(pr)
                for a, w in pr.accept.items():
                    if w < base.get(a, INF):
                        base[a] = w
                for b in free & pr.free_keys:
                    for a, w in pr.free_tail[b]:
                        if w < base.get(a, INF):
                            base[a] = w
                continue
            moves = goto_n[s]
            if not moves:
                continue
            after = self.set_costs(origin, k)
            free_o = self.set_free(origin, k)
            for a, t in moves:
                kn, kt, _ = self.kernel(t, k)
                best = base.get(a, INF)
                for b, w in kn.items():
                    if w < best:
                        best = min(best, w + (0 if b == ACCEPT else after.get(b, INF)))
                for b, w in kt.items():
                    if w < best and (b == ACCEPT or b in free_o):
                        best = w
                if best < INF:
                    base[a] = best
        if len(preds) == 1:  # (most sets): the closure from each start, once per state
            reach = preds[0].reach
            dist: dict[int, int] = {}
            for a, v in base.items():
                ra = reach.get(a)
                if ra is None:
                    ra = reach[a] = _reach(preds[0].edges, a)
                for b, d in ra:
                    if v + d < dist.get(b, INF):
                        dist[b] = v + d
            self._W.put(key, dist)
            return dist
        dist = dict(base)
        if preds:
            _relax(dist, _merged([p.edges for p in preds]))
        self._W.put(key, dist)
        return dist

    def set_free(self, o: EarleySet, k: int) -> frozenset[int]:
        """The nonterminals whose completion with origin ``o`` lets the input end with only
        free symbols (the end of input's newline and dedents) after it."""
        r = self._Wz.get(o[UID])
        if r is not None:
            return r
        _origins_first(o, lambda x: self._Wz.get(x[UID]) is not None,
                       lambda x: self.set_free(x, k))
        free: set[int] = set()
        sames: list[dict[int, list[int]]] = []  # b → a: a is free once b is
        goto_n = self.automaton.goto_n
        for s, origin in set_items(o):
            if origin is None:
                pr = self._predicted(s, k)  # (the free sets do not depend on k)
                free |= pr.free_now
                sames.append(pr.same)
                continue
            for a, t in goto_n[s]:
                _, _, kz = self.kernel(t, k)
                if any(b == ACCEPT or b in self.set_free(origin, k) for b in kz):
                    free.add(a)
        if sames:
            work = list(free)
            while work:
                b = work.pop()
                for same in sames:
                    for a in same.get(b, ()):
                        if a not in free:
                            free.add(a)
                            work.append(a)
        out = frozenset(free)
        self._Wz.put(o[UID], out)
        return out

    def _predicted(self, s: int, k: int) -> _Predicted:
        """:class:`_Predicted` of automaton state ``s`` (an item with no origin), built once
        per ``k``: the loops over its moves' kernels that every set holding it ran again."""
        r = self._pred.get((s, k))
        if r is None:
            edges: dict[int, list[tuple[int, int]]] = {}
            accept: dict[int, int] = {}
            tails: dict[int, list[tuple[int, int]]] = {}
            same: dict[int, list[int]] = {}
            now: set[int] = set()
            for a, t in self.automaton.goto_n[s]:
                kn, kt, kz = self.kernel(t, k)
                for b, w in kn.items():
                    if b == ACCEPT:
                        accept[a] = min(accept.get(a, INF), w)
                    else:
                        edges.setdefault(b, []).append((a, w))
                for b, w in kt.items():
                    if b == ACCEPT:
                        accept[a] = min(accept.get(a, INF), w)
                    else:
                        tails.setdefault(b, []).append((a, w))
                for b in kz:
                    if b == ACCEPT:
                        now.add(a)
                    else:
                        same.setdefault(b, []).append(a)
            r = self._pred[(s, k)] = _Predicted(edges, accept, tails, frozenset(tails), same,
                                                frozenset(now), {})
        return r

    def _items_cost(self, es: EarleySet, items: Iterable[tuple[int, EarleySet | None]], k: int) -> int:
        best = INF
        for s, o in items:
            org = es if o is None else o
            kn, kt, _ = self.kernel(s, k)
            after: dict[int, int] | None = None  # (set_costs of the origin, read once per item)
            for b, v in kn.items():
                if v < best:
                    if b == ACCEPT:
                        best = v
                        continue
                    if after is None:
                        after = self.set_costs(org, k)
                    c = v + after.get(b, INF)
                    if c < best:
                        best = c
            free: frozenset[int] | None = None
            for b, v in kt.items():
                if v < best:
                    if b == ACCEPT:
                        best = v
                        continue
                    if free is None:
                        free = self.set_free(org, k)
                    if b in free:
                        best = v
        return best

    def earley_cost(self, es: EarleySet, k: int) -> int:
        """Fewest tokens of terminals that complete the input from set ``es``."""
        key = (es[UID], k)
        r = self._H.get(key)
        if r is not None:
            return r
        # kernel items only: predictions (origin None, some item's partner state) finish
        # through the items that predicted them
        nk = self.automaton.nonkernel
        partners = {nk[s] for s, _ in set_items(es)}
        items = [(s, o) for s, o in set_items(es) if not (o is None and s in partners)]
        r = self._items_cost(es, items, k)
        self._H.put(key, r)
        return r

    def shifted_cost(self, es: EarleySet, terminal: int, k: int) -> int:
        """``earley_cost`` of the set after shifting ``terminal``, without building it."""
        key = (es[UID], terminal, k)
        r = self._shifted.get(key)
        if r is not None:
            return r
        moves = self._moves.get(es[UID])
        if moves is None:  # (every terminal's items from one pass over the set's)
            moves = {}
            goto_t = self.automaton.goto_t
            for s, o in set_items(es):
                for x, t in goto_t[s].items():
                    moves.setdefault(x, []).append((t, es if o is None else o))
            self._moves.put(es[UID], moves)
        items = moves.get(terminal)
        r = self._items_cost(es, items, k) if items else INF
        self._shifted.put(key, r)
        return r



def _shortest(dist: list[int], edges: dict[int, list[tuple[int, int]]]) -> None:
    """Lower ``dist`` in place to the least fixpoint of ``dist[b] ≤ dist[a] + w`` over
    ``edges[a] = [(w, b), ...]`` (w ≥ 0): Dijkstra from every finite entry."""
    heap = [(d, x) for x, d in enumerate(dist) if d < INF]
    heapq.heapify(heap)
    while heap:
        d, x = heapq.heappop(heap)
        if d != dist[x]:
            continue
        for w, b in edges.get(x, ()):
            nd = d + w
            if nd < dist[b]:
                dist[b] = nd
                heapq.heappush(heap, (nd, b))


def _merged(parts: list[dict[int, list[tuple[int, int]]]]) -> dict[int, list[tuple[int, int]]]:
    """The union of several edge lists keyed by their source."""
    out: dict[int, list[tuple[int, int]]] = {}
    for part in parts:
        for b, es in part.items():
            out.setdefault(b, []).extend(es)
    return out


def _reach(edges: dict[int, list[tuple[int, int]]], start: int) -> list[tuple[int, int]]:
    """(node, shortest distance) of every node reachable from ``start`` over ``edges``
    (``start`` itself at 0)."""
    dist = {start: 0}
    _relax(dist, edges)
    return list(dist.items())


def _relax(dist: dict[int, int], edges: dict[int, list[tuple[int, int]]]) -> None:
    """Lower ``dist`` in place to the shortest distances over ``edges[b] = [(a, w), ...]``
    (w ≥ 0) from its entries (Dijkstra; a node missing is unreached)."""
    heap = [(d, a) for a, d in dist.items()]
    heapq.heapify(heap)
    while heap:
        d, b = heapq.heappop(heap)
        if d > dist.get(b, INF):
            continue
        for a, w in edges.get(b, ()):
            nd = d + w
            if nd < dist.get(a, INF):
                dist[a] = nd
                heapq.heappush(heap, (nd, a))


def _origins_first(o: EarleySet, done: Callable[[EarleySet], bool],
                   solve: Callable[[EarleySet], object]) -> None:
    """``solve`` the sets ``o``'s items come from that are not ``done``, each after its own
    origins, without recursion: a set's answer needs its origins', and a right-recursive
    rule (``ws ::= ([ \t\n] ws)?``) opens one origin per character, so 1,000 blanks
    recursed past Python's limit (RecursionError in ``shortest_completion``)."""
    stack: list[tuple[EarleySet, bool]] = [(x, False) for _, x in set_items(o)
                                           if x is not None and not done(x)]
    while stack:
        x, ready = stack.pop()
        if ready:
            solve(x)  # (its origins are solved: they were pushed after it)
        elif not done(x):
            stack.append((x, True))
            stack += [(y, False) for _, y in set_items(x) if y is not None and not done(y)]
