"""What the runtime's public calls check in their arguments before they use them: a
bad argument is a clear error naming what was passed, never silently converted."""

from __future__ import annotations

import numpy as np

__all__ = ["bitmask_row_bytes", "check_budget", "token_int"]


def check_budget(max_tokens: object) -> int | None:
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer)):
        raise TypeError(f"max_tokens must be an int or None, got {max_tokens!r}")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    return int(max_tokens)


def bitmask_row_bytes(dest: object, v: int) -> int:
    """The bytes a packed mask of ``v`` tokens takes, checked to fit in ``dest``."""
    nb = (v + 7) // 8
    if not isinstance(dest, np.ndarray) or dest.dtype != np.uint8 or dest.ndim != 1 or (
            dest.shape[0] < nb):
        raise ValueError(f"fill_bitmask needs a 1-D uint8 array of at least {nb} bytes")
    return nb


def token_int(token_id: object) -> int:
    """A token id as an int; anything else (None from ``vocab.token_id``, a float, a string)
    is a TypeError that says what was passed, never silently converted."""
    if isinstance(token_id, (int, np.integer)) and not isinstance(token_id, bool):
        return int(token_id)
    hint = (
        " (vocab.token_id() returns None for text that is not exactly one token)"
        if token_id is None else ""
    )
    raise TypeError(f"a token id must be an int, got {token_id!r}{hint}")
