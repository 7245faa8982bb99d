"""Hopcroft's partition refinement, the minimisation that always settles (a long chain such
as ``/[a-z]{1000}/``, where refinement by rounds needs a round per state): the coarsest
partition of a DFA's states (Hopcroft, "An n log n algorithm for minimizing states in a finite
automaton", 1971)."""

from __future__ import annotations

import numpy as np

__all__ = ["hopcroft"]


def hopcroft(full: np.ndarray, finals: np.ndarray) -> list[int]:
    """The coarsest partition of ``full``'s states (the dead sink last) that respects
    finality and transitions, as a block number per state."""
    n, k = full.shape[0] - 1, full.shape[1]
    preds: list[tuple[list[int], list[int]]] = []
    for c in range(k):
        col = full[:, c]
        by_target = np.argsort(col, kind="stable")
        preds.append((by_target.tolist(),
                      np.searchsorted(col[by_target], np.arange(n + 2)).tolist()))
    is_final = [*finals.tolist(), False]
    blocks = [b for b in ({q for q in range(n + 1) if not is_final[q]},
                          {q for q in range(n + 1) if is_final[q]}) if b]
    block_of = [0] * (n + 1)
    for i, members0 in enumerate(blocks):
        for q in members0:
            block_of[q] = i
    smallest = min(range(len(blocks)), key=lambda i: len(blocks[i]))
    work = {(smallest, c) for c in range(k)} if len(blocks) > 1 else set()
    while work:
        b, c = work.pop()
        order, bounds = preds[c]
        touched: dict[int, list[int]] = {}
        for q in blocks[b]:
            for p in order[bounds[q]:bounds[q + 1]]:
                touched.setdefault(block_of[p], []).append(p)
        for y, members in touched.items():
            whole = blocks[y]
            if len(members) == len(whole):
                continue
            part = set(members)
            if 2 * len(part) > len(whole):
                part = whole - part
            whole -= part
            new = len(blocks)
            blocks.append(part)
            for q in part:
                block_of[q] = new
            for c2 in range(k):
                if (y, c2) in work:
                    work.add((new, c2))
                else:
                    work.add((new, c2) if len(part) <= len(whole) else (y, c2))
    return block_of
