"""What one step of a generation leaves: the lexer DFA state, the indentation carry (the width
of the current line so far) and the parser state(s).

A prefix constraint keeps a :data:`LexState`; fill-in-the-middle keeps a second parser (basic
mode) or a second lexer and parser (contextual mode) beside it. :class:`Constraint` is generic
in its step state (:data:`StepState` bounds it); the budget planner keys its memos on the
parser states' ids, so it takes states whose parsers are all parser states (:data:`RunState`).
"""

from __future__ import annotations

from .parse_state import PState

__all__ = ["LexState", "RunState", "StepState"]

LexState = tuple[int, int, PState]  # lexer DFA state, indentation carry, parser state
# lexer state, carry, parser state, then further parser states (the budget planner's states)
RunState = tuple[int, int, PState, *tuple[PState, ...]]
# any constraint's step state: lexer state, carry and parser state first (the view masks and
# budgets work on), then what the constraint keeps beside them
StepState = tuple[int, int, PState, *tuple[int | PState, ...]]
