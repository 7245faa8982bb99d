"""What one step of a generation leaves: the lexer DFA state, the indentation carry (the width
of the current line so far) and the parser state(s).

A prefix constraint keeps a :data:`LexState`; fill-in-the-middle keeps a second parser (basic
mode) or a second lexer and parser (contextual mode) beside it. :class:`Constraint` is generic
in its step state (:data:`StepState` bounds it); the budget planner keys its memos on the
parser states' ids and the ints beside them, so it takes any of them (:data:`RunState`).
"""

from __future__ import annotations

from .parse_state import PState

__all__ = ["LexState", "RunState", "StepState"]

LexState = tuple[int, int, PState]  # lexer DFA state, indentation carry, parser state
# lexer state, carry, parser state, then further parser states and lexer states or carries
# (the budget planner's states: any step state)
RunState = tuple[int, int, PState, *tuple[int | PState, ...]]
# any constraint's step state: lexer state, carry and parser state first (the view masks and
# budgets work on), then what the constraint keeps beside them
StepState = tuple[int, int, PState, *tuple[int | PState, ...]]
