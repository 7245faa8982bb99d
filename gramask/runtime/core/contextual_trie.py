"""Contextual-mode masks by walking the vocabulary's byte trie: the exact path where no
token tables serve (a grammar compiled without them, the start state with an indentation
carry), and the oracle the table path is tested against."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .indentation import advance

if TYPE_CHECKING:
    from .contextual_rule import ContextualRule
    from .parse_state import PState
    from .terminal_sets import VocabTrie

__all__ = ["trie_mask"]


def trie_mask(cx: ContextualRule, trie: VocabTrie, p: PState, q: int, carry: int,
              vocab_size: int) -> np.ndarray:
    """The mask at ``(p, q, carry)`` by walking the vocabulary's byte trie under the
    contextual rule (:meth:`ContextualRule.step`, inlined: it runs once per trie edge, a
    hundred thousand times a mask), with each parser state's allowed set and each
    ``end_ok`` verdict asked once per walk."""
    children, ends = trie.children, trie.ends
    rows, live = cx.rows, cx.live
    expects, lexeme_end, end_ok = cx.allowed, cx.lexeme_end, cx.end_ok
    allowed: dict[int, int] = {}  # id(parser state) -> its allowed set
    oks: dict[tuple[int, int], bool] = {}  # (id(parser state), lexer state) -> end_ok
    keep: list[PState] = [p]  # the states whose ids key the memos stay alive
    hits: list[np.ndarray] = []
    stack: list[tuple[int, int, int, PState]] = [(0, q, carry, p)]
    while stack:
        n, q1, c1, p1 = stack.pop()
        a1 = allowed.get(id(p1))
        if a1 is None:
            a1 = allowed[id(p1)] = expects(p1)
            keep.append(p1)
        row = rows[q1]
        for b, child in children[n]:
            nq = row[b]
            p2, c2 = p1, c1
            if nq < 0 or not live[nq] & a1:
                if q1 == 0:
                    continue
                p3 = lexeme_end(p1, q1, c1)
                if p3 is None:
                    continue
                a2 = allowed.get(id(p3))
                if a2 is None:
                    a2 = allowed[id(p3)] = expects(p3)
                    keep.append(p3)
                nq = rows[0][b]
                if nq < 0 or not live[nq] & a2:
                    continue
                p2, c2 = p3, 0
            if b <= 32:
                c2 = advance(c2, b)
            e = ends[child]
            if e is not None:
                k = (id(p2), nq)
                ok = oks.get(k)
                if ok is None:
                    ok = oks[k] = end_ok(p2, nq)
                if ok:
                    hits.append(e)
            if children[child]:
                stack.append((child, nq, c2, p2))
    m = np.zeros(vocab_size, dtype=bool)
    if hits:
        m[np.concatenate(hits)] = True
    return m
