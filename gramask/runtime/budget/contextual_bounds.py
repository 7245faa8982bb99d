"""Upper bounds that hold in the contextual lexer mode: the greedy lexer's own.

The contextual mode's planner (:mod:`.contextual_costs`) widens its lexeme costs where the
contextual lexer reads what the greedy one does not, so its costs only order the work. The
basic mode's bounds, built on the same product DFA with greedy longest match over *all*
terminals and no widening, are upper bounds here too, wherever the grammar has no
indentation terminal: the completion they price is a sequence of lexemes, each spelled where
its terminal ``t`` is the greedy winner, with a separator wherever the greedy lexer would run
on into the next one. The contextual lexer, at a parser state ``p`` that shifts ``t``, reads
that text into the same lexemes:

* inside a lexeme of ``t`` the contextual lexer goes on (``t`` is alive and ``t`` is in
  ``expects(p)``);
* where the greedy lexer stops (no terminal at all goes on), so does the contextual one (no
  allowed terminal goes on);
* where it ends, ``t`` has the highest priority among *all* accepting terminals, so among the
  allowed ones too; an allowed rival of equal priority is shifted with it (the parser state
  is the union of both readings, which completes wherever the reading as ``t`` does);
* a token may stop inside such a lexeme (``end_ok``: ``t`` is alive and shiftable), or inside
  a separator that a lexeme the parser takes follows.

So a group of tokens whose greedy bound fits what is left is admitted without a walk; the
completion that the next step plans from is walked only for the token chosen
(:meth:`ContextualBudgetConstraint._bound_completion`). With an indentation terminal (the
carry, the contextual newline rule) the argument is not made: those grammars keep the walked
checks alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .planner import BudgetPlanner

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from .grammar_costs import Rules

__all__ = ["greedy_bounds"]


def greedy_bounds(mb: MaskBuilder, vocab: Vocabulary, rules: Rules, tab_len: int
                  ) -> BudgetPlanner | None:
    """The basic mode's planner over the contextual builder ``mb`` (its bounds: upper bounds
    for the contextual walk, see the module docstring), or None where the argument does not
    cover the grammar (an indentation newline or a line continuation terminal)."""
    cx = mb.contextual
    if cx is None or cx.nl_t >= 0 or cx.cont_t >= 0:
        return None
    return BudgetPlanner(mb, vocab, rules, tab_len)
