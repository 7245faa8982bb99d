"""The vocabulary's bytes as one flat table, the single copy the runtime's vectorised walks
and the artifact's arrays read.

Walks that step many tokens together one byte position at a time (the contextual dead-end
search's lockstep walks, fill-in-the-middle's boundary check) index token ``t``'s byte ``k``
as ``flat[start[t] + k]``; an artifact stores ``flat`` and ``offsets``. Built once per
:class:`~gramask.vocab.Vocabulary` (:attr:`~gramask.vocab.Vocabulary.flat_bytes`) and shared
by every compiled grammar and request of it; every array is read-only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["TokenBytes"]


class TokenBytes:
    """Every token's bytes concatenated (``flat``, uint8), with ``offsets`` (int64, V+1:
    token ``t`` is ``flat[offsets[t]:offsets[t + 1]]``), ``start`` (``offsets[:-1]``) and
    ``lens`` (int64, V)."""

    __slots__ = ("flat", "lens", "offsets", "start")

    def __init__(self, tokens: Sequence[bytes]) -> None:
        size = len(tokens)
        self.lens: np.ndarray = np.fromiter(map(len, tokens), dtype=np.int64, count=size)
        self.offsets: np.ndarray = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(self.lens, out=self.offsets[1:])
        self.flat: np.ndarray = np.frombuffer(b"".join(tokens), dtype=np.uint8)
        for a in (self.lens, self.offsets, self.flat):
            a.setflags(write=False)
        self.start: np.ndarray = self.offsets[:-1]  # (a view: read-only as well)

    @classmethod
    def of_arrays(cls, flat: np.ndarray, offsets: np.ndarray) -> TokenBytes:
        """The table over arrays already laid out so (an artifact's ``vocab_bytes`` and
        ``vocab_offsets``, validated by the caller), with no join of the tokens: a read-only
        view of ``flat`` where nobody can write to it, else a copy (the caller's arrays stay
        as they were)."""
        tb = cls.__new__(cls)
        tb.flat = flat.copy() if flat.flags.writeable else flat.view()
        tb.offsets = offsets.astype(np.int64, copy=True)
        tb.lens = np.diff(tb.offsets)
        for a in (tb.lens, tb.offsets, tb.flat):
            a.setflags(write=False)
        tb.start = tb.offsets[:-1]
        return tb
