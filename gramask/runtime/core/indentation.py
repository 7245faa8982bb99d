"""What a byte does to the width of a line's leading whitespace (Python indentation), shared by
every lexer walk of the runtime (basic and contextual, prefix and suffix)."""

from __future__ import annotations

import functools

__all__ = ["NEWLINE", "indent_widths"]

NEWLINE = 10  # the byte that resets the carry


@functools.cache
def indent_widths(tab: int) -> tuple[int, ...]:
    """Per byte, what it adds to the carry (space 1, tab ``tab``; the newline resets it)."""
    w = [0] * 256
    w[32] = 1
    w[9] = tab
    return tuple(w)
