"""The runtime's one bounded memo table: forgets the least recently useful half, not everything.

Two generations: new entries go to ``young``; when it is full it becomes ``old`` (the previous
``old`` is dropped). A hit in ``old`` is promoted (put into ``young`` like a new entry). So
entries in use survive a turnover, memory stays bounded (each generation holds at most
``capacity`` entries) and no step pays for rebuilding a whole cache or for the per-hit
bookkeeping of an exact LRU (``OrderedDict.move_to_end``).
"""

from __future__ import annotations

import enum
import threading
from typing import Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

__all__ = ["MISSING", "BoundedMemo"]

_MISS = object()


class _Missing(enum.Enum):
    """Type of :data:`MISSING`: a one-member enum, so that ``r is not MISSING`` narrows."""

    MISSING = enum.auto()


MISSING = _Missing.MISSING  # the default to pass to ``get`` when None is a stored value


class BoundedMemo(Generic[K, V]):
    """A bounded, approximately-LRU mapping (see the module docstring)."""

    __slots__ = ("_lock", "_old", "capacity", "young")

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a memo needs a capacity of at least 1, got {capacity}")
        self.capacity = capacity
        # the young generation. Hot callers read it directly (``memo.young.get(key,
        # MISSING)``: one C-level lookup, no method call) and call ``get`` on a miss (the
        # entry may be old); they never write to it (``put`` turns the generations over)
        self.young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._lock = threading.Lock()  # taken only to turn generations over

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value for ``key`` (promoted if it was old), else ``default``. Pass a private
        sentinel as ``default`` when ``None`` is a value you store."""
        r = self.young.get(key, _MISS)  # one lookup on a hit: this is on the hot path
        if r is _MISS:
            r = self._old.get(key, _MISS)
            if r is _MISS:
                return default
            self.put(key, r)  # type: ignore[arg-type]  # r came from _old: a V
        return r

    def put(self, key: K, value: V) -> None:
        young = self.young
        if len(young) >= self.capacity:
            with self._lock:  # two threads that find it full turn it over once
                if self.young is young:
                    self._old = young
                    self.young = {}
                young = self.young
        young[key] = value

    def clear(self) -> None:
        self.young = {}
        self._old = {}

    def __len__(self) -> int:
        return len(self.young) + len(self._old)
