"""How a contextual table row's nodes are decided under one allowed set (a *plan*), apart from
the parser steps: see :class:`~gramask.runtime.core.contextual_lexer.ContextualLexer`."""

from __future__ import annotations

import itertools
from typing import Protocol

import numpy as np

from ..memo import BoundedMemo

__all__ = ["SMALL", "Plan", "Planner", "plan_nodes"]

SMALL = 128  # node sets planned in plain Python (numpy's per-call cost dominates below)

# How a node set is decided under one allowed set: the verdicts that need no parser step
# (END nodes; False where a node dies), and per group of LEX nodes with the same winning
# terminals: (the significant winners to shift, 0 if only ignored ones won; the positions;
# the distinct tails' key and nodes; each position's index into them)
Plan = tuple[np.ndarray, tuple[tuple[int, np.ndarray, bytes, np.ndarray, np.ndarray], ...]]


class Planner(Protocol):
    """What a plan reads of the contextual lexer (its node arrays, as lists and as arrays;
    its class vectors and winners under an allowed set)."""

    closes: bool
    acc_bits: list[int]
    ignored_bits: int
    head_l: list[int]
    tail_l: list[int]
    alt_l: list[int]
    head: np.ndarray
    tail: np.ndarray
    alt: np.ndarray
    _static: BoundedMemo[int | bytes, tuple[np.ndarray, np.ndarray]]

    def _class_vectors(self, a: int, fl: bool, extra: int | bytes | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def close(self, a: int) -> int: ...
    def _lex_key(self, s: int, a: int) -> int: ...


def plan_nodes(cx: Planner, key: int | bytes, nodes: np.ndarray, a: int, fl: bool,
               extra: int | bytes | None = None) -> Plan:
    """How ``nodes`` are decided under allowed set ``a`` (see :data:`Plan`).

    Everything but the parser steps depends only on (``a``, ``fl``): which way each
    BRANCH goes, the END verdicts, each LEX node's winning terminals and the grouping
    of the tails by them. So this is built once per (node set, allowed set) and shared
    by every parser state with that allowed set; LEX nodes with the same winners are
    merged into one group (one parser step, one sub-evaluation)."""
    cont, ends, sets = cx._class_vectors(a, fl, extra)
    if cx.closes:
        a = cx.close(a)  # the terminals that compete (``a``: what the parser takes)
    base = np.zeros(len(nodes), dtype=bool)
    by_w: dict[int, tuple[list[int], list[int]]] = {}
    groups: list[tuple[int, np.ndarray, bytes, np.ndarray, np.ndarray]] = []
    acc_bits, ign = cx.acc_bits, cx.ignored_bits
    if len(nodes) <= SMALL:  # numpy costs more than it saves on a few nodes
        head, tail, alt = cx.head_l, cx.tail_l, cx.alt_l
        for i, n in enumerate(nodes.tolist()):
            m = n
            while m >= 0 and head[m] <= -2:
                m = tail[m] if cont[-2 - head[m]] else alt[m]
            if m < 0:
                continue
            h = head[m]
            if h == -1:
                base[i] = ends[tail[m]]
            elif sets[h]:
                pos, tails = by_w.setdefault(cx._lex_key(h, a), ([], []))
                pos.append(i)
                tails.append(tail[m])
        for w, (pos, tails) in by_w.items():
            ut = sorted(set(tails))
            where = {t: j for j, t in enumerate(ut)}
            uta = np.array(ut, dtype=np.int64)
            groups.append((w & ~ign, np.array(pos, dtype=np.int64), uta.tobytes(), uta,
                           np.array([where[t] for t in tails], dtype=np.int64)))
        return base, tuple(groups)
    head_a, tail_a, alt_a = cx.head, cx.tail, cx.alt
    st = cx._static.get(key)
    if st is None:  # what does not depend on the allowed set: heads, BRANCH positions
        h0 = head_a[nodes]
        st = (h0, np.flatnonzero(h0 <= -2))
        cx._static.put(key, st)
    h, br0 = st
    cur = nodes
    if br0.size:  # follow each BRANCH the way the allowed set sends it
        cur = nodes.astype(np.int64, copy=True)
        br = br0
        while br.size:
            c = cur[br]
            nxt = np.where(cont[-2 - head_a[c]], tail_a[c], alt_a[c])
            cur[br] = nxt
            br = br[(nxt >= 0) & (head_a[nxt] <= -2)]
        h = h.copy()
        cb = cur[br0]
        h[br0] = np.where(cb >= 0, head_a[cb], -3)
    e = np.flatnonzero(h == -1)
    if e.size:
        base[e] = ends[tail_a[cur[e]]]
    lx = np.flatnonzero(h >= 0)
    if lx.size:
        lx = lx[sets[h[lx]]]
    if lx.size:
        gid = h[lx]  # LEX heads are accepting-set ids
        present = np.zeros(len(acc_bits), dtype=bool)
        present[gid] = True
        ug = np.flatnonzero(present).tolist()
        wins = [cx._lex_key(g, a) for g in ug]
        uw = sorted(set(wins))
        wmap = {w: k for k, w in enumerate(uw)}
        lut = np.zeros(len(acc_bits), dtype=np.int64)
        lut[ug] = [wmap[w] for w in wins]
        wid = lut[gid]
        # one sort by (winners, tail) for all groups, not a np.unique per group
        comb = wid * len(head_a) + tail_a[cur[lx]]
        order = np.argsort(comb)
        cs = comb[order]
        ws = wid[order]
        ts = cs - ws * len(head_a)
        first = np.ones(len(order), dtype=bool)
        first[1:] = cs[1:] != cs[:-1]
        uid = np.cumsum(first) - 1  # index of each position's distinct (winners, tail)
        cuts = [0, *(np.flatnonzero(ws[1:] != ws[:-1]) + 1).tolist(), len(order)]
        for lo, hi in itertools.pairwise(cuts):
            uniq = ts[lo:hi][first[lo:hi]]
            groups.append((uw[ws[lo]] & ~ign, lx[order[lo:hi]], uniq.tobytes(), uniq,
                           uid[lo:hi] - uid[lo]))
    return base, tuple(groups)
