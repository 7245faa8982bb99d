"""Token budgets: how many vocabulary tokens a runtime state still needs to become a program.

Constraining a generation to at most N tokens is intersecting the grammar with
(vocabulary)^{≤N} (Niels Mündler, "Proper Well-Formedness Guarantees for Finite LLM
Sampling"). Done exactly per step that is a search over token sequences; here it is an *upper
bound* ``U(state)`` assembled from tables, cheap per step, and realised by a concrete completion
(:meth:`BudgetPlanner.plan`), so a generation that only takes tokens with
``U(after) ≤ remaining − 1`` (or the plan's own next token) can always still finish in time:

* **the lexeme in progress**: the shortest byte string that ends it as terminal ``T`` (a
  breadth-first search on the lexer DFA per terminal), counted in vocabulary tokens (fewest
  tokens that spell that string);
* **the terminals after it**: each spelled by its shortest lexeme, counted in tokens; where the
  greedy lexer would merge it with the lexeme before (a name after a name), a separating
  ignored lexeme (a space) is spelled with it (often for free: ``" pass"`` is one token);
* **the grammar**: fewest such costs over terminal strings that complete the Earley set — per
  LR(0) state the cheapest way to finish each rule it is inside (``K``), continued through the
  origin sets' waiting items (``W``), memoised on the hash-consed sets; a trailing newline and
  dedents cost nothing (the end of input supplies them, as ``ParserContext.finish`` does).

Where a bound is used instead of an exact count (lexemes spelled one by one, a token's final
lexer state known only up to its class, newline widths bounded over the levels in use), it is
an over-estimate: it can forbid a token the exact answer allows (measured in the README), never
the other way. Tokens that span two lexemes (``")\\n"``) make real completions shorter than the
bound; a plan tokenises the whole text at once and may come out below it.

:class:`BudgetPlanner` wires one object per seam: spelling in tokens (:mod:`.spelling`), the
lexer's costs (:mod:`.lexeme_costs`), the grammar's (:mod:`.grammar_costs`), bounds per runtime
state (:mod:`.state_costs`), step grouping (:mod:`.grouping`) and plans (:mod:`.search`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ...compiler.parse_tables import free_closure
from .grammar_costs import GrammarCosts, Rules
from .grouping import StepGrouping, StepUnits, TokenGroups, TokenMatrix
from .lexeme_costs import LexemeCosts
from .lexeme_follows import lexeme_predecessors
from .runstate import Complete, RunState, View, Walk
from .search import SEARCH_NODES, Planner, PlanSearch
from .spelling import INF, TokenCounter
from .state_costs import EndCheck, StateCosts

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .state_costs import BoundaryStack

__all__ = ["INF", "SEARCH_NODES", "BudgetPlanner", "StepUnits", "TokenGroups"]

S = TypeVar("S", bound=RunState)


class BudgetPlanner:
    """Per compiled grammar (basic lexer mode): upper bounds on the tokens to complete, the
    step groups masks are filtered with, and concrete shortest completions. Each seam is
    its own object: ``tok`` (spelling in tokens), ``lex`` (lexeme costs), ``grammar``
    (parser costs), ``costs`` (bounds per runtime state), ``tokens`` and ``grouping``
    (step grouping), ``search`` (plans)."""

    lexeme_costs_class: type[LexemeCosts] = LexemeCosts  # the contextual mode's: a subclass
    search_class: type[PlanSearch] = PlanSearch

    def __init__(
        self, mb: MaskBuilder, vocab: Vocabulary, rules: Rules, tab_len: int, *,
        parent: BudgetPlanner | None = None, markers: dict[int, int] | None = None,
    ) -> None:
        """``rules``: the grammar's rules as symbol ids of ``mb``'s automaton. A planner for
        a quotient grammar (fill-in-the-middle) shares its ``parent``'s lexer-side tables
        (same lexer, same vocabulary); ``markers`` gives its marker terminals' costs, and the
        end of the middle is not the end of input (no free trailing newline)."""
        self.mb = mb
        self.vocab = vocab
        self.markers = dict(markers or {})
        ctx = mb.ctx
        nsym = max([len(ctx.automaton.symbols), *(1 + max((lhs, *rhs)) for lhs, rhs in rules)])
        if parent is None:
            self.tok = TokenCounter(vocab)
            self.lex = self.lexeme_costs_class(mb, self.tok, lexeme_predecessors(mb, rules, nsym))
            self.tokens = TokenMatrix(mb, vocab, self.lex.trans, tab_len)
        else:
            self.tok, self.lex, self.tokens = parent.tok, parent.lex, parent.tokens
        free: set[int] = set()
        if ctx.nl_t >= 0 and parent is None:  # (the newline only where the end supplies it)
            free = ({ctx.nl_t} if ctx.cpython_ends else set()) | (
                {ctx.dedent_t} if ctx.dedent_t >= 0 else set())
        self.grammar = GrammarCosts(mb, rules, nsym, self.lex.cost, self.markers,
                                    free_closure(rules, free))
        self.costs = StateCosts(mb, self.tok, self.lex, self.grammar, tab_len)
        self.grouping = StepGrouping(mb, self.costs, self.tokens)
        self.search = self.search_class(mb, vocab, self.tok, self.lex, self.costs, self.markers)

    # ------------------------------------------------------------------ what constraints use
    def plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None = None,
             search: int = SEARCH_NODES, escalate: bool = False) -> tuple[int, ...]:
        """Token ids of a shortest completion from ``st``, walked (:meth:`PlanSearch.plan`).

        Raises
        ------
        NoCompletionError
            No completion was found.
        """
        return self.search.plan(st, walk, complete, view, search, escalate)

    def step_units(self, p: PState, q: int, carry: int) -> StepUnits:
        """The step's tokens grouped, with bounds (:meth:`StepGrouping.step_units`)."""
        return self.grouping.step_units(p, q, carry)

    def token_groups(self, p: PState, q: int, carry: int) -> TokenGroups:
        """Per token, the state it leads to (:meth:`StepGrouping.token_groups`)."""
        return self.grouping.token_groups(p, q, carry)

    def state_cost(self, q: int, carry: int, p: PState) -> int:
        """Upper bound on the tokens that complete from (q, carry, p)."""
        return self.costs.state_cost(q, carry, p)

    def state_costs(self, p: PState, states: np.ndarray) -> np.ndarray:
        """Per lexer state in ``states``: the bound with the parser at ``p``."""
        return self.costs.state_costs(p, states)

    def token_widths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per token: (holds a newline, width after its last newline, width of all)."""
        return self.tokens.token_widths()

    # ------------------------------------------------------------------ fill-in-the-middle
    def set_suffix(self, suffix: bytes,
                   stacks: frozenset[BoundaryStack] = frozenset(),
                   ) -> None:
        """What the fallback search tries for this suffix (:meth:`PlanSearch.set_suffix`)."""
        self.search.set_suffix(suffix, stacks)

    @property
    def boundary(self) -> dict[int, np.ndarray]:
        """Markers for the lexeme the suffix continues → distances to where it ends."""
        return self.costs.boundary

    @boundary.setter
    def boundary(self, value: dict[int, np.ndarray]) -> None:
        self.costs.boundary = value

    @property
    def glued(self) -> dict[int, tuple[frozenset[int], int | None]]:
        """Boundary markers that come after their lexeme (:class:`StateCosts`)."""
        return self.costs.glued

    @glued.setter
    def glued(self, value: dict[int, tuple[frozenset[int], int | None]]) -> None:
        self.costs.glued = value

    @property
    def end_check(self) -> EndCheck | None:
        """"The input may end here" as the view knows it (None: the quotient's own)."""
        return self.costs.end_check

    @end_check.setter
    def end_check(self, value: EndCheck | None) -> None:
        self.costs.end_check = value

    @property
    def strict(self) -> Callable[[], Planner] | None:
        """What builds the planner :meth:`plan` falls back on (:class:`PlanSearch`)."""
        return self.search.strict

    @strict.setter
    def strict(self, value: Callable[[], Planner] | None) -> None:
        self.search.strict = value
