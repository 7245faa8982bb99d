"""The node table of the token tables: outcomes of token walks, hash-consed in bulk.

Numbering starts after the END classes (see :mod:`gramask.compiler.tables`). Contextual
tables also intern BRANCH triples and the terminal sets their LEX nodes name.
"""

from __future__ import annotations

import numpy as np

from ..encoding import unique_rows

__all__ = ["Interner"]

_SMALL = 64  # batches up to this size are interned through Python sets


class Interner:
    """Interns CONS(head, tail) pairs (and, for contextual tables, BRANCH(class, cont, alt)
    triples and LEX terminal sets) in bulk, numbering after the END nodes."""

    def __init__(self, num_classes: int, num_terminals: int) -> None:
        self.ids: dict[int, int] = {}
        self.heads: list[int] = []
        self.tails: list[int] = []
        self.alts: list[int] = []
        self.branch_ids: dict[tuple[int, int, int], int] = {}
        self.base = num_classes
        self.num_terminals = num_terminals
        self.set_index: dict[bytes, int] = {}
        self.set_rows: list[np.ndarray] = []
        self.set_nl: list[int] = []  # per set: its indentation newline's head, or -1

    def __len__(self) -> int:
        """Number of nodes, END classes included."""
        return self.base + len(self.heads)

    def set_ids(self, rows: np.ndarray, nl: np.ndarray | None = None) -> np.ndarray:
        """Ids of terminal sets (bool rows), new ones appended to ``set_rows``. ``nl``: per
        row, the head (:func:`gramask.encoding.nl_code`) of the indentation newline the
        lexeme would be, -1 if none: a set that may end as the newline is interned once per
        width, so that the runtime knows the width from the set id alone."""
        packed = np.packbits(rows, axis=1)
        codes = (np.full(len(rows), -1, dtype=np.int64) if nl is None
                 else np.asarray(nl, dtype=np.int64))
        keyed = np.concatenate([packed, codes.astype("<i8").view(np.uint8).reshape(-1, 8)],
                               axis=1)
        uniq, inv = unique_rows(keyed)
        ids = np.empty(len(uniq), dtype=np.int64)
        index = self.set_index
        nb = packed.shape[1]
        for j, r in enumerate(uniq):
            key = r.tobytes()
            n = index.get(key)
            if n is None:
                n = index[key] = len(self.set_rows)
                self.set_rows.append(np.unpackbits(r[:nb], count=self.num_terminals)
                                     .astype(bool))
                self.set_nl.append(int(r[nb:].view("<i8")[0]))
            ids[j] = n
        out: np.ndarray = ids[inv.reshape(-1)]
        return out

    def branch(self, cls: np.ndarray, cont: np.ndarray, alt: np.ndarray) -> np.ndarray:
        """BRANCH nodes: head -2 - cls; tail cont (lexeme continues); alt (it ends)."""
        if cls.size == 0:
            return np.zeros(0, dtype=np.int64)
        keys = np.stack([cls, cont, alt], axis=1).astype(np.int64)
        uniq, inv = unique_rows(keys)
        out = np.empty(len(uniq), dtype=np.int64)
        ids = self.branch_ids
        for j, (c, t, a) in enumerate(uniq.tolist()):
            k = (c, t, a)
            n = ids.get(k)
            if n is None:
                n = ids[k] = self.base + len(self.heads)
                self.heads.append(-2 - c)
                self.tails.append(t)
                self.alts.append(a)
            out[j] = n
        res: np.ndarray = out[inv.reshape(-1)]
        return res

    def cons(self, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
        if heads.size == 0:
            return np.zeros(0, dtype=np.int64)
        keys = (heads.astype(np.int64) << 32) | tails.astype(np.int64)
        ids = self.ids
        if len(keys) <= _SMALL:  # (np.unique's fixed cost is most of a small batch)
            listed = keys.tolist()
            for k in sorted(set(listed)):  # new nodes numbered in key order, as below
                if k not in ids:
                    ids[k] = self.base + len(self.heads)
                    self.heads.append(k >> 32)
                    self.tails.append(k & 0xFFFFFFFF)
                    self.alts.append(-1)
            return np.array([ids[k] for k in listed], dtype=np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        out = np.empty(len(uniq), dtype=np.int64)
        for j, k in enumerate(uniq.tolist()):
            n = ids.get(k)
            if n is None:
                n = ids[k] = self.base + len(self.heads)
                self.heads.append(k >> 32)
                self.tails.append(k & 0xFFFFFFFF)
                self.alts.append(-1)
            out[j] = n
        result: np.ndarray = out[inv.reshape(-1)]
        return result

    def node_arrays(self, start: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(head, tail, alt) of nodes ``start`` onwards as int32 arrays."""
        c = self.base
        lo = max(0, start - c)
        ends = np.arange(min(start, c), c, dtype=np.int32)
        head = np.concatenate([np.full(len(ends), -1, np.int32),
                               np.array(self.heads[lo:], dtype=np.int32)])
        tail = np.concatenate([ends, np.array(self.tails[lo:], dtype=np.int32)])
        alt = np.concatenate([np.full(len(ends), -1, np.int32),
                              np.array(self.alts[lo:], dtype=np.int32)])
        return head, tail, alt

    def lex_sets(self) -> np.ndarray:
        """(K, T) bool: the terminal sets interned so far."""
        return np.array(self.set_rows, dtype=bool).reshape(len(self.set_rows),
                                                           self.num_terminals)

    def lex_nl(self) -> np.ndarray:
        """(K,) int32: each interned set's newline head, -1 if none (see ``set_ids``)."""
        return np.array(self.set_nl, dtype=np.int32)
