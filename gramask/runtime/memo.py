"""A bounded memo table that forgets the least recently useful half, not everything at once.

Two generations: new entries go to ``young``; when it is full it becomes ``old`` (the previous
``old`` is dropped). A hit in ``old`` is promoted. So entries in use survive a turnover, memory
stays bounded (at most ``2 * capacity`` entries) and no step pays for rebuilding a whole cache.
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")

__all__ = ["BoundedMemo"]


class BoundedMemo(Generic[K, V]):
    __slots__ = ("_old", "_young", "capacity")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def get(self, key: K, default: object = None) -> V | object:
        r = self._young.get(key, default)
        if r is default:
            r = self._old.get(key, default)
            if r is not default:
                self._young[key] = r  # type: ignore[assignment]
        return r

    def put(self, key: K, value: V) -> None:
        young = self._young
        if len(young) >= self.capacity:
            self._old = young
            young = self._young = {}
        young[key] = value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)
