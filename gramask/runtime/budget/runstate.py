"""What the budget planner needs from a constraint: its step states and the callables that
walk them (each constraint passes its own, so one planner serves prefix, fill-in-the-middle
and contextual constraints alike)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from ..core.parse_state import PState

__all__ = ["Complete", "LexState", "RunState", "View", "Walk"]

LexState = tuple[int, int, "PState"]  # lexer DFA state, indentation carry, parser state
# a constraint's step state: lexer state, carry, then the parser states it keeps (the
# planner keys its memos on their ids)
RunState = tuple[int, int, "PState", *tuple["PState", ...]]

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
