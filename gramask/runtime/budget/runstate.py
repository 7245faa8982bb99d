"""What the budget planner needs from a constraint: its step states and the callables that
walk them (each constraint passes its own, so one planner serves prefix, fill-in-the-middle
and contextual constraints alike)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

from ..core.parse_state import PUID
from ..core.step_state import LexState, RunState

__all__ = ["Complete", "LexState", "RunState", "View", "Walk", "memo_key", "walk_ids"]

S = TypeVar("S", bound=RunState)
S_contra = TypeVar("S_contra", bound=RunState, contravariant=True)


class Walk(Protocol[S]):
    """The state after ``data`` from ``st``, or the offset of the byte that failed."""

    def __call__(self, st: S, data: bytes, /) -> S | int: ...


class Complete(Protocol[S_contra]):
    """May the input end at ``st``?"""

    def __call__(self, st: S_contra, /) -> bool: ...


class View(Protocol[S_contra]):
    """(lexer state, carry, parser state) of ``st``: what the planner's costs work on."""

    def __call__(self, st: S_contra, /) -> LexState: ...


def memo_key(q: int, carry: int, st: RunState) -> tuple[int, ...]:
    """A runtime state as a memo key: the view's lexer state and carry, then the rest of the
    state (parser states by their uid; a contextual fill-in-the-middle state also holds the
    original side's lexer state and carry, plain ints)."""
    return (q, carry, *(x if isinstance(x, int) else x[PUID] for x in st[2:]))


def walk_ids(walk: Walk[S], token_bytes: Callable[[int], bytes], st: S, ids: Iterable[int],
             ) -> S | None:
    """The state after the tokens ``ids`` from ``st``, walked token by token as a generation
    takes them (each token's end checked), or None where one fails."""
    for t in ids:
        nxt = walk(st, token_bytes(t))
        if isinstance(nxt, int):
            return None
        st = nxt
    return st
