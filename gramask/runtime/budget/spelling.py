"""Spelling byte strings in vocabulary tokens: the unit every budget bound is counted in."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memo import MISSING

if TYPE_CHECKING:
    from ...vocab import Vocabulary

__all__ = ["INF", "TokenCounter"]

INF = 1 << 30  # "cannot complete" (kept far from int32 overflow when added to)


class TokenCounter:
    """Fewest vocabulary tokens that spell a given byte string (dynamic programming)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.ids: dict[bytes, int] = {}
        for i, t in enumerate(vocab.tokens):
            if t and not vocab.is_special(i) and t not in self.ids:
                self.ids[t] = i
        self.max_len = max((len(t) for t in self.ids), default=1)
        self._memo: dict[bytes, tuple[int, ...] | None] = {}
        self._prefixes: frozenset[bytes] | None = None

    def prefixes(self) -> frozenset[bytes]:
        """Every prefix of a token (the tokens included): a walk along a long text stops at
        the first byte no token continues (built on first use: ~1 s for 129k tokens)."""
        if self._prefixes is None:
            self._prefixes = frozenset(t[:j] for t in self.ids for j in range(1, len(t) + 1))
        return self._prefixes

    def tokenize(self, data: bytes) -> tuple[int, ...] | None:
        """The fewest token ids whose bytes concatenate to ``data`` (None if impossible)."""
        r = self._memo.get(data, MISSING)
        if r is not MISSING:
            return r
        n = len(data)
        best = [INF] * (n + 1)
        back = [0] * (n + 1)
        best[0] = 0
        ids, ml = self.ids, self.max_len
        for i in range(n):
            if best[i] >= INF:
                continue
            c = best[i] + 1
            for j in range(i + 1, min(n, i + ml) + 1):
                if c < best[j] and data[i:j] in ids:
                    best[j] = c
                    back[j] = i
        out: tuple[int, ...] | None = None
        if best[n] < INF:
            seq = []
            j = n
            while j:
                i = back[j]
                seq.append(ids[data[i:j]])
                j = i
            out = tuple(reversed(seq))
        if len(self._memo) < 1 << 16:
            self._memo[data] = out
        return out

    def count(self, data: bytes) -> int:
        """How many tokens spell ``data`` at the fewest (INF: the vocabulary cannot)."""
        r = self.tokenize(data)
        return INF if r is None else len(r)
