"""Budget checks shared by tokens whose states differ only in the indentation carry.

Inside a newline lexeme (a comment that is part of it, the blanks after a line break) the
tokens of one step that complete the same lexemes and leave the lexer in the same state lead
to states that differ only in the carry: a comment's text adds its spaces to it, so every
word of a comment is a state of its own, each checked by a walk or a search of its own.

The carry is read only where the lexeme ends (the newline's width) or the walk stops there.
A completion whose bytes, then the suffix's, continue the lexeme in progress up to a byte
that resets the carry (a line break or a form feed, as a comment's end is) reaches, after
that byte, the very same state from every carry, and nothing before it read the carry (no
lexeme ended; a token end's check reads the lexer and parser states only): so its walk,
the exact end check included, is the same walk from every state of the class, and the
completion that verified one of them verifies them all. Where the completion ends before
the reset, the end check reads the suffix from there on (and the quotient's verdict reads
the carry only where the glue it walks into the suffix ends the lexeme before a reset,
which the scan rules out). :class:`CarryClasses` keeps those completions for one step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .verify import VerifiedTokens

__all__ = ["CarryClasses"]

_RESETS = (10, 12)  # the bytes that reset the carry (indentation.advance)


class CarryClasses:
    """Per class (what :class:`~.grouping.TokenGroups` calls a token's ``raw`` group: its
    completed lexemes and final lexer state, not its carry) the completion that verified one
    of its states and holds for every carry (see the module docstring). ``rows``: the
    lexer's transition rows of every walk the constraint makes (they must all continue the
    lexeme on the completion's first byte); ``live``: per lexer state, whether it is inside a
    newline lexeme (elsewhere the carry is not part of the state); ``after_end``: the
    suffix's first bytes, what follows the middle's end (empty: the input ends there)."""

    def __init__(self, rows: Sequence[Mapping[int, list[int]]], live: Sequence[bool] | None,
                 num_states: int, token_bytes: Callable[[int], bytes],
                 after_end: bytes) -> None:
        self.rows = rows
        self.after_end = after_end
        self.live: Sequence[bool] = live or ()
        self.num_states = num_states
        self.token_bytes = token_bytes
        self.known: dict[int, tuple[int, ...]] = {}

    def representatives(self, classes: np.ndarray, order: np.ndarray) -> dict[int, None]:
        """Of the groups ``order`` lists (largest first), the first of each class inside a
        newline lexeme (``classes``: each group's class)."""
        if not self.live:
            return {}
        seen: dict[int, int] = {}
        for i in order.tolist():
            raw = int(classes[i])
            if raw not in seen and self.live[raw % self.num_states]:
                seen[raw] = i
        return dict.fromkeys(seen.values())  # in order; ``in`` at a dict's cost

    def admit(self, rec: VerifiedTokens, tokens: np.ndarray, raws: np.ndarray) -> np.ndarray:
        """Keep in ``rec`` the ``tokens`` (of classes ``raws``) whose class has a completion;
        the others, for checks of their own."""
        hit = np.zeros(tokens.size, dtype=bool)
        for raw, completion in self.known.items():
            sel = raws == raw
            if sel.any():
                rec.add(tokens[sel], completion)
                hit |= sel
        out: np.ndarray = tokens[~hit]
        return out

    def get(self, raw: int) -> tuple[int, ...] | None:
        """The completion every state of class ``raw`` is verified by, if one is known."""
        return self.known.get(raw) if raw >= 0 else None

    def learn(self, raw: int, completion: tuple[int, ...] | None) -> None:
        """Record ``completion`` (walked to an end from one state of class ``raw``) for the
        whole class where its bytes, then ``after_end``'s, continue the lexeme up to a byte
        that resets the carry."""
        if raw < 0 or completion is None or raw in self.known:
            return
        q = raw % self.num_states
        if not self.live or not self.live[q]:
            return
        data = b"".join(self.token_bytes(t) for t in completion) + self.after_end
        states = [q] * len(self.rows)
        for b in data:
            states = [r[x][b] for r, x in zip(self.rows, states, strict=True)]
            if min(states) < 0:
                return  # the lexeme ends first: its end reads the carry
            if b in _RESETS:
                self.known[raw] = completion
                return
