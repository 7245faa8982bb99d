"""The runtime's one bounded memo table: forgets the least recently useful half, not everything.

Two generations: new entries go to ``young``; when it is full it becomes ``old`` (the previous
``old`` is dropped). A hit in ``old`` is promoted (put into ``young`` like a new entry). So
entries in use survive a turnover, memory stays bounded (each generation holds at most
``capacity`` entries) and no step pays for rebuilding a whole cache or for the per-hit
bookkeeping of an exact LRU (``OrderedDict.move_to_end``).
"""

from __future__ import annotations

import enum
import sys
import threading
from typing import Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

__all__ = ["MISSING", "BoundedMemo", "InternTable"]

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


def _refcounts(d: dict[K, V]) -> list[int]:
    """Each value's reference count as seen from here (the dict's reference, the loop's and
    the call's included: :data:`_BASE` is that count for an object nothing else holds)."""
    return [_getrefcount(v) for v in d.values()]


_getrefcount = getattr(sys, "getrefcount", None) or (lambda _v: 0)
_BASE = _refcounts({0: object()})[0]  # (0 where refcounts are unknown: nothing survives)


class InternTable(BoundedMemo[K, V]):
    """The hash-consing table of one kind of runtime object (Earley sets, parser states): a
    :class:`BoundedMemo` whose turnover keeps every old entry whose object is still alive
    elsewhere (a constraint's history, another memo's value).

    So hash-consing stays canonical — one object, one uid, per configuration for as long as
    any object of it lives — and comparing objects by uid is comparing configurations. A
    table that forgot a live object would build a second one for the same configuration,
    with another uid: what is memoised or compared by uid would then depend on which
    requests ran before (budget masks did). Only objects nothing else holds are forgotten;
    memory stays bounded by what is alive plus two generations.

    Writers (``put``) hold the caller's intern lock; old entries are handed out under this
    table's own lock, so that a turnover never drops one a reader has just taken."""

    __slots__ = ()

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The object interned for ``key`` (promoted if it was old), else ``default``."""
        r = self.young.get(key, _MISS)
        if r is not _MISS:
            return r
        with self._lock:
            r = self._old.get(key, _MISS)
            if r is _MISS:
                return default
            self.young[key] = r  # type: ignore[assignment]  # promoted (r came from _old)
            return r

    def put(self, key: K, value: V) -> None:
        with self._lock:
            young = self.young
            if len(young) >= self.capacity:
                old = self._old
                counts = _refcounts(old)
                kept = {k: v for (k, v), n in zip(old.items(), counts, strict=True)
                        if n > _BASE}
                kept.update(young)
                self._old = kept  # before young empties: a reader finds it in one of them
                self.young = young = {}
            young[key] = value
