"""Automata over code points (:class:`CharDFA`): the decoded languages of JSON strings —
keys, their complements, lengths, patterns — before :mod:`gramask.frontends.json_strings`
spells them in bytes."""

from __future__ import annotations

import bisect

import interegular
from interegular.fsm import anything_else

from ..compiler.charclass import MAX_CODEPOINT as MAX_CP
from ..compiler.charclass import complement
from ..errors import GrammarError

__all__ = ["CharDFA", "Piece", "with_gaps"]

Piece = tuple[int, int, int]


class CharDFA:
    """A DFA over code points: ``edges[q]`` are sorted disjoint (lo, hi, target) ranges."""

    def __init__(self, edges: list[list[Piece]], finals: list[bool]) -> None:
        self.edges = edges
        self.finals = finals
        self._los = [[lo for lo, _, _ in e] for e in edges]

    def step(self, q: int, cp: int) -> int:
        los = self._los[q]
        i = bisect.bisect_right(los, cp) - 1
        if i >= 0:
            _, hi, t = self.edges[q][i]
            if cp <= hi:
                return t
        return -1

    def pieces(self, q: int, lo: int, hi: int) -> tuple[Piece, ...]:
        """The transitions of ``q`` restricted to [lo, hi] (gaps are dead)."""
        out = []
        for a, b, t in self.edges[q]:
            if b < lo or a > hi:
                continue
            out.append((max(a, lo), min(b, hi), t))
        return tuple(out)

    def trimmed(self) -> CharDFA:
        """Edges into states that cannot reach a final state removed."""
        n = len(self.edges)
        alive = list(self.finals)
        changed = True
        while changed:
            changed = False
            for q in range(n):
                if not alive[q] and any(alive[t] for _, _, t in self.edges[q]):
                    alive[q] = changed = True
        edges = [[p for p in e if alive[p[2]]] if alive[q] else [] for q, e in
                 enumerate(self.edges)]
        return CharDFA(edges, self.finals)

    @staticmethod
    def words(words: list[str], *, complement: bool = False) -> CharDFA:
        """One of ``words`` (or, ``complement``, any string but them): a trie."""
        kids: list[dict[int, int]] = [{}]
        ends = [False]
        for w in words:
            q = 0
            for c in w:
                nxt = kids[q].get(ord(c))
                if nxt is None:
                    nxt = kids[q][ord(c)] = len(kids)
                    kids.append({})
                    ends.append(False)
                q = nxt
            ends[q] = True
        if not complement:
            edges = [[(c, c, t) for c, t in sorted(k.items())] for k in kids]
            return CharDFA(edges, ends)
        free = len(kids)
        edges = [with_gaps([(cp, cp, t) for cp, t in sorted(k.items())], free) for k in kids]
        edges.append([(0, MAX_CP, free)])
        return CharDFA(edges, [not x for x in ends] + [True])

    @staticmethod
    def length(lo: int, hi: int | None) -> CharDFA:
        """Strings of ``lo`` to ``hi`` code points (``hi`` None: no upper bound)."""
        top = hi if hi is not None else lo
        edges: list[list[Piece]] = [[(0, MAX_CP, i + 1)] for i in range(top)]
        edges.append([(0, MAX_CP, top)] if hi is None else [])
        return CharDFA(edges, [i >= lo for i in range(top + 1)])

    @staticmethod
    def regex(pattern: str) -> CharDFA:
        """The strings a Python regex matches as a whole (via interegular)."""
        try:
            fsm = interegular.parse_pattern(pattern).to_fsm()
        except Exception as e:  # interegular raises its own and ValueErrors
            raise GrammarError(f"pattern /{pattern}/ cannot be compiled: {e}") from None
        by_key: dict[object, list[int]] = {}
        other_key: object = None
        for tkey, symbols in fsm.alphabet.by_transition.items():
            cps = by_key.setdefault(tkey, [])
            for ch in symbols:
                if ch is anything_else:
                    other_key = tkey
                else:
                    cps.append(ord(ch))
        explicit = sorted(cp for cps in by_key.values() for cp in cps)
        key_ranges: dict[object, list[tuple[int, int]]] = {}
        for key, cps in by_key.items():
            rs = _ranges(sorted(cps))
            if key == other_key:
                rs = sorted(rs + list(complement(tuple(_ranges(explicit)))))
            key_ranges[key] = rs
        states = sorted(fsm.states, key=repr)
        index = {s: i for i, s in enumerate(states)}
        edges: list[list[Piece]] = [[] for _ in states]
        for s, moves in fsm.map.items():
            for key, t in moves.items():
                for lo, hi in key_ranges.get(key, ()):
                    edges[index[s]].append((lo, hi, index[t]))
        for row in edges:
            row.sort()
        finals = [s in fsm.finals for s in states]
        # start state first
        start = index[fsm.initial]
        if start:
            perm = list(range(len(states)))
            perm[0], perm[start] = start, 0
            inv = {old: new for new, old in enumerate(perm)}
            edges = [[(lo, hi, inv[t]) for lo, hi, t in edges[old]] for old in perm]
            finals = [finals[old] for old in perm]
        return CharDFA(edges, finals)

    def product(self, other: CharDFA) -> CharDFA:
        """The intersection of two languages."""
        index: dict[tuple[int, int], int] = {(0, 0): 0}
        order = [(0, 0)]
        edges: list[list[Piece]] = []
        i = 0
        while i < len(order):
            a, b = order[i]
            i += 1
            e: list[Piece] = []
            for lo, hi, ta in self.edges[a]:
                for lo2, hi2, tb in other.pieces(b, lo, hi):
                    key = (ta, tb)
                    if key not in index:
                        index[key] = len(order)
                        order.append(key)
                    e.append((lo2, hi2, index[key]))
            edges.append(e)
        finals = [self.finals[a] and other.finals[b] for a, b in order]
        return CharDFA(edges, finals)


def with_gaps(row: list[Piece], sink: int) -> list[Piece]:
    """A state's sorted disjoint ranges with every code point they miss sent to ``sink``: a
    complete row (what a complement needs)."""
    full: list[Piece] = []
    nxt = 0
    for lo, hi, t in row:
        if lo > nxt:
            full.append((nxt, lo - 1, sink))
        full.append((lo, hi, t))
        nxt = hi + 1
    if nxt <= MAX_CP:
        full.append((nxt, MAX_CP, sink))
    return full


def _ranges(cps: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for cp in cps:
        if out and cp == out[-1][1] + 1:
            out[-1] = (out[-1][0], cp)
        elif not out or cp > out[-1][1]:
            out.append((cp, cp))
    return out


# ---------------------------------------------------------------- char DFA → byte DFA
# per UTF-8 lead byte: continuation bytes to go and the range of the first one
