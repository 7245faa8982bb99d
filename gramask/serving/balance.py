"""Which worker of a :class:`~gramask.serving.ConstraintPool` gets a new request: the one
whose requests cost the least per step, not the one with the fewest requests.

A step waits for its slowest worker, and requests differ in cost by an order of magnitude (a
fill-in-the-middle row costs about twice a prefix-only one; a JSON row, a fiftieth). Each
worker reports, per step, the seconds each of its requests took (its queued tokens and its
row); the pool keeps a moving average per request and sums it per worker. A request not yet
measured counts as the mean of the measured ones of its grammar (of all, where none of its
grammar is); with nothing measured, the counts decide, as before.
"""

from __future__ import annotations

from collections.abc import Container, Hashable, Iterable, Mapping

__all__ = ["CostTable"]

# weight of the latest step in a request's moving average of its step seconds
_ALPHA = 0.25


class CostTable:
    """Each request's measured cost per step (see the module doc); the pool keeps which
    worker owns which request and its grammar key."""

    def __init__(self) -> None:
        self.cost: dict[Hashable, float] = {}

    def forget(self, rid: Hashable) -> None:
        self.cost.pop(rid, None)

    def measured(self, costs: Iterable[tuple[Hashable, float]], live: Container[Hashable]
                 ) -> None:
        """A step's (request, seconds) from one worker (requests no longer ``live``, e.g.
        removed while the step ran, are skipped)."""
        cost = self.cost
        for rid, s in costs:
            if rid in live:
                old = cost.get(rid)
                cost[rid] = s if old is None else old + _ALPHA * (s - old)

    def pick(self, workers: int, owner: Mapping[Hashable, int], key_of: Mapping[Hashable, str],
             key: str) -> int:
        """The worker whose requests are expected to cost the least per step (then the one
        with the fewest requests, then the lowest index) for a new request of ``key``."""
        cost = self.cost
        guess = _mean(c for r, c in cost.items() if key_of.get(r) == key)
        if guess is None:
            guess = _mean(cost.values())
        load = [0.0] * workers
        count = [0] * workers
        for rid, w in owner.items():
            count[w] += 1
            load[w] += cost.get(rid, guess or 0.0)
        return min(range(workers), key=lambda w: (load[w], count[w], w))


def _mean(values: Iterable[float]) -> float | None:
    n, total = 0, 0.0
    for v in values:
        n += 1
        total += v
    return total / n if n else None
