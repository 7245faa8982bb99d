"""Serving many requests at once: :class:`ConstraintPool` fills a batch's bitmask from worker
processes, one call per step (see ``pool.py`` and the README's "Serving" section)."""

from .pool import ConstraintPool, RequestError, RequestId

__all__ = ["ConstraintPool", "RequestError", "RequestId"]
