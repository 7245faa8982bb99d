"""The suffix as a lattice of lexemes, parsed backwards: fill-in-the-middle's suffix side in
the contextual lexer mode.

In the contextual mode (docs/semantics.md) how the suffix ``S`` lexes depends on the parser
state at each of its lexeme starts, hence on the middle, unknown at setup. But at a lexeme
start ``i`` the lexeme is every allowed terminal ``T`` that accepts ``S[i:j]`` where the next
byte kills every allowed terminal; ``T`` is allowed, so ``T`` dies there too: ``j`` is where
``T`` alone dies (one walk of the lexer DFA from ``i`` finds it for every ``T``). So ``S``
lexes into a DAG of at most one edge ``(T, i, j)`` per terminal and start, whatever the
middle. Of the conditions that depend on the parser state (``T`` allowed there, no allowed
terminal alive longer, none of higher priority accepting the same span) only the part that
holds in every state expecting ``T`` is checked (:class:`_EndRule`); the rest only adds
edges: the lattice holds every real lexing of ``S``, and maybe some that no middle makes. The
middle's last lexeme may also continue into ``S[:k]`` (as in the basic mode's branches):
``k`` is where a terminal alive in some lexer state accepts and the next byte kills it.

The lattice is pruned to the edges on a path from a boundary to the end of ``S`` and parsed
backwards with the reversed grammar's Earley recogniser, merging at each node the sets its
edges lead to (:meth:`Automaton.join`; an ignored lexeme keeps the parser where it was). The
set at each boundary is what :func:`gramask.runtime.fim.quotient.build_quotient` turns into the
quotient's rules, as for one branch of the basic mode.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from ...encoding import bit_indices
from ..core.contextual_lexer import ContextualLexer
from ..core.earley import Automaton, EarleySet
from .suffix_lexing import Branch

__all__ = ["SuffixLattice", "boundary_ends", "lattice_edges", "parse_suffix_lattice"]


@dataclass
class SuffixLattice:
    walked: list[tuple[Branch, EarleySet]]  # per live boundary, the suffix parsed backwards
    error_offset: int  # where lexing or the backward parse failed furthest in, -1 if none
    edges: int  # edges kept after pruning (for tests and measurements)


class _EndRule:
    """Which terminals can really end a lexeme where the lexer DFA goes from ``q`` to ``nq``
    (``-1``: dies, or the text ends), whatever the parser state.

    Each terminal ``T`` that accepts at ``q`` and is dead at ``nq`` may, unless a terminal the
    parser surely expects along with ``T`` forbids it: one alive at ``nq`` (the lexeme would
    go on) or one of higher priority accepting at ``q`` (it would win). "Surely along with
    ``T``": every parse-automaton state that can shift ``T`` can shift it too (the expected
    set is a union over states), or it is ignored (always allowed). Pruning by this never
    drops a real lexeme, and removes the shorter readings that the grammar's states always
    rule out (``"/"`` before a comment's second ``/``, ``A`` where ``AB`` always competes)."""

    def __init__(self, cx: ContextualLexer) -> None:
        self.live, self.accepting = cx.live, cx.accepting
        ign = cx.ignored_bits
        nt = cx.ctx.num_lexer_terminals
        full = (1 << nt) - 1
        implied = [full] * nt
        seen = [False] * nt
        for bits in cx.ctx.automaton.term_bits:
            b = bits & full
            for t in bit_indices(b):
                implied[t] &= b
                seen[t] = True
        for t in range(nt):
            if (ign >> t) & 1 or not seen[t]:
                implied[t] = ign
            implied[t] = (implied[t] | ign) & ~(1 << t)
        self.implied = implied
        prio = cx.prio
        self.higher = [sum(1 << u for u in range(nt) if prio[u] > prio[t]) for t in range(nt)]
        self.width = len(cx.rows) + 1
        self._memo: dict[int, int] = {}  # q * width + nq (nq = -1: dies or the text ends)

    def ends(self, q: int, nq: int) -> int:
        """The terminals (bitset) a lexeme can end as here (see the class docstring)."""
        key = q * self.width + nq
        r = self._memo.get(key)
        if r is None:
            after = self.live[nq] if nq >= 0 else 0
            acc = self.accepting[q]
            r = 0
            for t in bit_indices(acc & ~after):
                imp = self.implied[t]
                if not (after & imp or acc & imp & self.higher[t]):
                    r |= 1 << t
            self._memo[key] = r
        return r


def end_rule(cx: ContextualLexer) -> _EndRule:
    """The :class:`_EndRule` of a contextual lexer (built once, kept on it)."""
    r: _EndRule | None = getattr(cx, "_fim_end_rule", None)
    if r is None:
        r = _EndRule(cx)
        cx._fim_end_rule = r  # type: ignore[attr-defined]
    return r


def boundary_ends(cx: ContextualLexer, suffix: bytes) -> dict[int, int]:
    """Every ``k > 0`` at which the middle's last lexeme, continued into the suffix, can end
    (some lexer state's terminal accepts there and ``suffix[k]`` kills it, or ``k`` is the end
    of the suffix), with the terminals (bitset) it can end as. Walks from every lexer state
    at once."""
    rows = cx.rows
    rule = end_rule(cx).ends
    cur = set(range(1, len(rows)))
    out: dict[int, int] = {}
    n = len(suffix)
    for i in range(n):
        byte = suffix[i]
        nxt = set()
        ends = 0
        for q in cur:
            nq = rows[q][byte]
            if i > 0:
                ends |= rule(q, nq)
            if nq >= 0:
                nxt.add(nq)
        if ends:
            out[i] = ends
        cur = nxt
        if not cur:
            break
    else:
        last = 0
        for q in cur:
            last |= rule(q, -1)
        if n and last:
            out[n] = last
    return out


def lattice_edges(cx: ContextualLexer, suffix: bytes, starts: list[int]
                  ) -> dict[int, list[tuple[int, int]]]:
    """Per lexeme start reachable from ``starts``: its edges ``(terminal, end)``, one per
    terminal that accepts the text up to where it dies (see the module docstring).

    Walks from different starts that reach the same lexer state at the same offset go on
    alike, so a walk stops there and takes the other's later edges: each (state, offset) is
    walked once, and a terminal that runs to the end of a line (``/[^\\n]+/``) from every
    word of it costs the line once, not once per word."""
    rows = cx.rows
    rule = end_rule(cx)
    width = len(rows) + 1
    n = len(suffix)
    reach = bytearray(n + 1)
    for s in starts:
        reach[s] = 1
    # per walk: its edges (ends ascending) and where it joined an earlier walk; None once
    # no later walk can join it (memory stays proportional to the lexemes open at a time,
    # not to the suffix: a walk from i only looks at offsets after i)
    walks: list[tuple[list[tuple[int, int]], list[int], int] | None] = []
    # offset -> {lexer state -> walk that passed there}, dropped once the walks start past it
    seen_at: dict[int, dict[int, int]] = {}
    last_at: dict[int, list[int]] = {}  # offset -> walks whose last recorded offset it is
    edges: dict[int, list[tuple[int, int]]] = {}
    for i in range(n):
        seen_at.pop(i, None)
        for dead in last_at.pop(i, ()):
            walks[dead] = None
        if not reach[i]:
            continue
        w = len(walks)
        own: list[tuple[int, int]] = []
        tail = -1
        q = rows[0][suffix[i]]
        j = i + 1
        last = -1
        while q >= 0 and j < n:
            at = seen_at.get(j)
            if at is None:
                at = seen_at[j] = {}
            elif q in at:
                tail = j * width + q
                break
            at[q] = w
            last = j
            nq = rows[q][suffix[j]]
            died = rule.ends(q, nq)
            if died:
                own += [(t, j) for t in bit_indices(died)]
            q = nq
            j += 1
        else:
            if q >= 0 and j == n:
                own += [(t, n) for t in bit_indices(rule.ends(q, -1))]
        walks.append((own, [e for _, e in own], tail) if last >= 0 else None)
        if last >= 0:
            last_at.setdefault(last, []).append(w)
        out = list(own)
        while tail >= 0:  # the later edges of the walks this one joined
            joined = walks[seen_at[tail // width][tail % width]]
            assert joined is not None  # it passed an offset after i
            ev, ends, tail2 = joined
            out += ev[bisect.bisect_left(ends, tail // width):]
            tail = tail2
        for _, e in out:
            reach[e] = 1
        edges[i] = out
    return edges


def parse_suffix_lattice(cx: ContextualLexer, rev: Automaton, suffix: bytes) -> SuffixLattice:
    """The boundaries of ``suffix`` (``k = 0`` and every ``k`` of :func:`boundary_ends`), each
    with the lattice from ``k`` parsed backwards (the reversed grammar's automaton ``rev``)."""
    n = len(suffix)
    ends = boundary_ends(cx, suffix)
    ks = [0, *sorted(ends)]
    edges = lattice_edges(cx, suffix, ks)
    ignored = cx.ignored_bits
    sets: dict[int, EarleySet] = {n: rev.root}
    kept = 0
    fail = -1
    advance = rev.advance
    for i in sorted(edges, reverse=True):
        out = edges[i]
        if len(out) == 1:  # the common case: one reading
            t, j = out[0]
            e1 = sets.get(j)
            if e1 is None:
                continue
            kept += 1
            e1 = e1 if (ignored >> t) & 1 else advance(e1, t)
            if e1 is None:
                fail = max(fail, i)
            else:
                sets[i] = e1
            continue
        moves = [(t, sets[j]) for t, j in out if j in sets]
        if not moves:
            continue
        kept += len(moves)
        sig = [(e, t) for t, e in moves if not (ignored >> t) & 1]
        ign = [e for t, e in moves if (ignored >> t) & 1]
        e2: EarleySet | None
        if not ign and len(sig) == 1:
            e2 = rev.advance(sig[0][0], sig[0][1])
        elif not sig and all(e is ign[0] for e in ign):
            e2 = ign[0]
        else:
            e2 = rev.join(sig, list({id(e): e for e in ign}.values()))
        if e2 is None:
            fail = max(fail, i)  # the backward parse fails at this lexeme
        else:
            sets[i] = e2
    if n and not any(j == n for out in edges.values() for _, j in out):
        fail = max(edges)  # no lexing reaches the end: the furthest lexeme start
    walked: list[tuple[Branch, EarleySet]] = []
    for k in ks:
        e = sets.get(k)
        if e is None:
            continue
        term_ends = frozenset(bit_indices(ends.get(k, 0)))
        walked.append((Branch(k, frozenset((0,)), (), (), ends=term_ends), e))
    return SuffixLattice(walked, fail, kept)
