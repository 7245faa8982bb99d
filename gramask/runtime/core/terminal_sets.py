"""Sets of terminals as the contextual lexer keeps them (uint64 words for numpy, Python ints for
one-off tests), and the vocabulary as a byte trie its walks descend."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["VocabTrie", "int_of_row", "words_of_int", "words_of_rows"]


def words_of_rows(rows: np.ndarray) -> np.ndarray:
    """(n, T) bool → (n, ceil(T / 64)) uint64 bitsets (terminal t = bit t % 64 of word t // 64)."""
    n, t = rows.shape
    w = max(1, (t + 63) // 64)
    padded = np.zeros((n, w * 64), dtype=bool)
    padded[:, :t] = rows
    return np.packbits(padded.reshape(n, w, 64), axis=2, bitorder="little").view("<u8")[:, :, 0]


def words_of_int(bits: int, w: int) -> np.ndarray:
    """A Python-int terminal set as ``w`` uint64 words (the layout of :func:`words_of_rows`)."""
    return np.array([(bits >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(w)], dtype=np.uint64)


def int_of_row(row: np.ndarray) -> int:
    """A bool row over terminals as a Python-int set (bit t = terminal t)."""
    out = 0
    for t in np.flatnonzero(row).tolist():
        out |= 1 << t
    return out


class VocabTrie:
    """The vocabulary's non-special tokens as a byte trie: per node, children and the token
    ids that end there."""

    __slots__ = ("children", "ends")

    def __init__(self, tokens: Sequence[bytes], special: np.ndarray) -> None:
        children: list[dict[int, int]] = [{}]
        ends: list[list[int]] = [[]]
        for i, tok in enumerate(tokens):
            if special[i] or not tok:
                continue
            n = 0
            for b in tok:
                c = children[n].get(b)
                if c is None:
                    c = len(children)
                    children[n][b] = c
                    children.append({})
                    ends.append([])
                n = c
            ends[n].append(i)
        self.children = [tuple(sorted(c.items())) for c in children]
        self.ends = [np.array(e, dtype=np.int64) if e else None for e in ends]
