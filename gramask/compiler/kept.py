"""The module-level caches' eviction (kept per vocabulary, per pattern: the last few).

Grammars may be compiled, and lazily built tables walked, on several threads at once; each
such cache is a plain dict read and written without a lock (an entry is a pure function of
its key), so dropping the oldest entry must survive another thread doing the same.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["drop_oldest"]

K = TypeVar("K")
V = TypeVar("V")


def drop_oldest(cache: dict[K, V], keep: int) -> None:
    """Drop ``cache``'s oldest entries until fewer than ``keep`` are left. Two threads may
    pick the same oldest key (``pop(k)`` alone raised KeyError for the second), or another
    may change the dict between ``iter`` and ``next`` (RuntimeError): both only mean that
    someone else dropped an entry, so the size is looked at again."""
    while len(cache) >= keep:
        try:
            cache.pop(next(iter(cache)), None)
        except (StopIteration, RuntimeError):
            continue
