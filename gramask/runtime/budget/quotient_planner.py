"""The budget planner of one fill-in-the-middle request: the planner of the grammar's right
quotient by the suffix, sharing the base grammar's lexer-side tables, with the costs of the
quotient's boundary markers (what the suffix needs from the middle's last lexeme)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ..core.indentation import text_carry
from .dead_ends import DeadEnds
from .planner import INF, BudgetPlanner

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..fim.suffix_lexing import Branch
    from .lexeme_costs import LexemeCosts
    from .state_costs import BoundaryStack

__all__ = ["quotient_planner"]


def quotient_planner(qb: MaskBuilder, vocab: Vocabulary, tab: int,
                      markers: list[tuple[Branch, int, int]],
                      parent: Callable[[], BudgetPlanner], suffix: bytes,
                      cls: type[BudgetPlanner] = BudgetPlanner,
                      ) -> Callable[[], BudgetPlanner]:
    """The budget planner of one request's quotient (built on first use). A marker after the
    middle's last lexeme costs nothing — or a separator, where the suffix's first byte would
    continue some lexeme the middle can end with; one that stands for a lexeme the suffix
    continues costs that lexeme's middle part, and is planned through the lexer states from
    which the suffix's head ends it (``BudgetPlanner.boundary``).

    A lexeme the suffix continues that the parser does not shift as it is (a comment, blanks,
    a newline lexeme: its marker comes *after* it) is priced as a free end after any lexeme
    by the planner returned; where that planner finds no completion, its ``strict`` one is
    tried, which plans such markers only through their lexeme (``BudgetPlanner.glued``). The
    free end is optimistic (the suffix fixes that newline lexeme's width, so its indentation
    may not follow: ``)\n    `` costs 0 when the suffix continues a comment opened there and
    then needs a deeper block), which can leave no plan at all; but it finds shorter
    completions through a comment the middle opens, so it is tried first. ``cls``: the
    planner class (the contextual mode's plans its searches with the contextual lexer; its
    costs there only order them)."""
    made: list[BudgetPlanner] = []

    def get() -> BudgetPlanner:
        if not made:
            base = parent()
            lex = base.lex
            glue = 0
            sep = lex.separator
            # lexemes the next byte would run on: they need the separator after them
            ends = [e for t, e in enumerate(lex.ends) if not lex.ignored[t] and e.size]
            # (with no separator the middle cannot end in such a lexeme, but it can in the
            # others: ``:`` before the suffix ``"\n ;\n"``, where a newline lexeme would run
            # on; free then, as those lexemes are: an INF here made every plain marker
            # unreachable, no plan of ``";\nif:"``, the search's estimate INF after ``"\nif"``)
            if suffix and sep is not None and any((lex.trans[e, suffix[0]] >= 0).any()
                                                  for e in ends):
                glue = base.tok.count(sep)
            loose = {m: glue for _, m, a in markers if a < 0}
            strict = {m: glue for br, m, a in markers if a < 0 and not br.k}
            bounds: dict[int, np.ndarray] = {}
            glued: dict[int, tuple[frozenset[int], int | None]] = {}
            for br, m, a in markers:
                head = suffix[:br.k]
                after = suffix[br.k] if br.k < len(suffix) else None
                if a < 0:
                    if not br.k:
                        continue
                    strict[m] = INF
                    kinds = frozenset(t for t in br.ends if lex.ignored[t] or t == lex.nl_t)
                    d = lex.distances_to(lex.boundary_targets(head, kinds, after))
                    if not kinds or not (d < INF).any():
                        continue
                    glued[m] = (kinds, _last_line_width(head, tab, at_eof=after is None))
                else:
                    d = lex.distances_to(lex.boundary_targets(head, a, after))
                bounds[m] = d
                # as a fresh lexeme: its middle part, after any lexeme (separated if needed)
                w = lex.path(0, d) if d[0] < INF else None
                if not w:
                    if m not in glued:
                        loose[m] = strict[m] = INF  # empty middle part: plain markers cover it
                    continue
                worst = base.tok.count(w)
                # (no separator: after the lexemes it cannot merge with, as above)
                if sep is not None and any((lex.trans[e, w[0]] >= 0).any() for e in ends):
                    worst = max(worst, base.tok.count(sep + w))
                if m not in glued:  # (a glued one stays INF in the strict tables)
                    loose[m] = strict[m] = worst
            stacks = _boundary_stacks(markers, qb.ctx.nl_t, qb.ctx.indent_t)
            rules = list(qb.ctx.automaton.rules)  # type: ignore[attr-defined]  # a LazyAutomaton
            pl = cls(qb, vocab, rules, tab, parent=base, markers=loose)
            pl.boundary = {m: d for m, d in bounds.items() if m not in glued}
            dead = _dead_ends(qb, lex, markers, suffix) if cls is BudgetPlanner else None
            pl.search.dead = dead
            pl.set_suffix(suffix, stacks)
            pl.search.glued_starts = sorted({w for m, d in bounds.items() if m in glued
                                             and d[0] < INF and (w := lex.path(0, d))})
            if glued:
                def make_strict() -> BudgetPlanner:
                    sp = cls(qb, vocab, rules, tab, parent=base, markers=strict)
                    sp.boundary = bounds
                    sp.glued = glued
                    sp.end_check = pl.end_check
                    sp.set_suffix(suffix, stacks)
                    sp.search.dead = dead
                    return sp

                pl.strict = make_strict
            made.append(pl)
        return made[0]

    return get


def _dead_ends(qb: MaskBuilder, lex: LexemeCosts, markers: list[tuple[Branch, int, int]],
               suffix: bytes) -> DeadEnds | None:
    """The proofs of states with no completion (:mod:`.dead_ends`), for the basic lexer mode
    (its walk is the one they read), where the quotient lexes with the base's DFA."""
    trans = np.asarray(qb.trans)
    if trans.shape != lex.trans.shape or not np.array_equal(trans, lex.trans):
        return None
    return DeadEnds(qb, lex, [(suffix[:br.k], a) for br, _m, a in markers if a >= 0],
                    [(suffix[:br.k], suffix[br.k] if br.k < len(suffix) else None, m)
                     for br, m, a in markers if a < 0])


def _last_line_width(head: bytes, tab: int, at_eof: bool) -> int | None:
    """The indentation width a newline lexeme ends at when the suffix's first bytes ``head``
    finish it: that of its last line if ``head`` holds a newline, 0 at the end of input (which
    closes the line), else None (it depends on the middle's part)."""
    if b"\n" in head:
        return text_carry(head)
    return 0 if at_eof else None


def _boundary_stacks(markers: list[tuple[Branch, int, int]], nl: int, indent: int,
                     ) -> frozenset[BoundaryStack]:
    """The indentation stacks the branches' assumptions need at the boundary, as
    :class:`~.state_costs.SearchEstimate` reads them (empty: any stack, as where a branch
    assumes none or only counts the levels the end of input closes). A branch whose
    terminals start with the newline and an indent needs the middle to end with a block
    header."""
    out: set[BoundaryStack] = set()
    for br, _m, _a in markers:
        if not br.assumptions:
            return frozenset()
        for _d0, w1, outcome, below, eof_nl in br.assumptions:
            if eof_nl is not None or w1 is None:
                return frozenset()
            opens = outcome < 0 and br.terms[:2] == (nl, indent)
            out.add((below, None, 0, opens) if outcome < 0 else (below, w1, outcome, False))
    return frozenset(out)
