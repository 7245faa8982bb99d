"""Which lexemes can come right before which: the budget's lexeme costs price a token that
finishes one lexeme and begins the next, so they need the grammar's FOLLOW relation in
lexer terminals."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...compiler.parse_tables import nullable_symbols

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from .grammar_costs import Rules

__all__ = ["lexeme_predecessors"]


def lexeme_predecessors(mb: MaskBuilder, rules: Rules, nsym: int) -> list[set[int]]:
    """Per lexer terminal b, the lexer terminals whose lexeme can come right before one
    of b: the grammar's FOLLOW relation, seen through the indentation terminals (they
    ride on the newline lexeme), plus every ignored terminal."""
    ctx = mb.ctx
    n = nsym
    nt = ctx.automaton.num_terminals
    T = mb.dfa.num_terminals
    nullable = nullable_symbols(rules)
    first: list[set[int]] = [{x} if x < nt else set() for x in range(n)]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            for x in rhs:
                if not first[x] <= first[lhs]:
                    first[lhs] |= first[x]
                    changed = True
                if x not in nullable:
                    break
    follow: list[set[int]] = [set() for _ in range(n)]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            trail = set(follow[lhs])
            for x in reversed(rhs):
                if not trail <= follow[x]:
                    follow[x] |= trail
                    changed = True
                trail = (first[x] | trail) if x in nullable else set(first[x])
    layout = {x for x in (ctx.indent_t, ctx.dedent_t) if x >= 0}
    preds: list[set[int]] = [set() for _ in range(T)]
    ignored = [t for t in range(T) if mb.dfa.ignored[t]]
    for a in range(nt):
        src = ctx.nl_t if a in layout else a
        if not 0 <= src < T:
            continue
        for b in follow[a]:
            if b < T:
                preds[b].add(src)
    for b in range(T):
        preds[b].update(ignored)
    return preds
