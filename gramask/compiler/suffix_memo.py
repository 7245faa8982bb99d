"""The memo of suffix walks (the node of ``t[k:]`` walked from the start state) a
:class:`~gramask.compiler.token_walk.TokenWalker` keeps, keyed ``k * V + t``.

A table built for one request (a JSON Schema) walks a few thousand suffixes: a dict holds
them (a vocabulary x longest-token array, 66 MB for DeepSeek's vocabulary, cost a page fault
per entry written). Past :data:`DICT_ENTRIES`, and for a full build, the dense array (zeroed
lazily by the system). Values: node + 2; 0 not walked yet, 1 dead.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DICT_ENTRIES", "SuffixMemo"]

DICT_ENTRIES = 1 << 16


class SuffixMemo:
    """Node + 2 per ``k * V + t`` (0: not walked yet)."""

    __slots__ = ("_dict", "_flat", "lmax", "v")

    def __init__(self, v: int, lmax: int) -> None:
        self.v, self.lmax = v, lmax
        self._dict: dict[int, int] = {}
        self._flat: np.ndarray | None = None

    def get(self, flat: np.ndarray) -> np.ndarray:
        """The values at ``flat`` (int64, a fresh array)."""
        if self._flat is not None:
            got: np.ndarray = self._flat[flat].astype(np.int64)
            return got
        get = self._dict.get
        return np.fromiter((get(x, 0) for x in flat.tolist()), dtype=np.int64,
                           count=len(flat))

    def put(self, flat: np.ndarray, values: np.ndarray) -> None:
        if self._flat is None and len(self._dict) + len(flat) > DICT_ENTRIES:
            self.dense()
        if self._flat is not None:
            self._flat[flat] = values
        else:
            self._dict.update(zip(flat.tolist(), values.tolist(), strict=True))

    def dense(self) -> np.ndarray:
        """The memo as a (longest token + 1, V) array, from now on (a full build writes it
        offset by offset)."""
        if self._flat is None:
            flat = np.zeros((self.lmax + 1) * self.v, dtype=np.int32)
            if self._dict:
                keys = np.fromiter(self._dict.keys(), dtype=np.int64, count=len(self._dict))
                vals = np.fromiter(self._dict.values(), dtype=np.int64, count=len(keys))
                flat[keys] = vals
            self._flat = flat  # published filled
            self._dict = {}
        return self._flat.reshape(self.lmax + 1, self.v)
