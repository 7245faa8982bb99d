"""Lexemes in progress that can end only where nothing the parser can take may follow
(basic lexer mode), decided by a search over the lexeme adjacency and the parser.

In a grammar where some terminal cannot start after some end of another
(:func:`gramask.compiler.separable.all_separable` is false; no bundled grammar) the compiler
splits the end classes by the ends each state can still reach
(:class:`gramask.compiler.separable.Adjacency`). A class is then allowed at parser state ``p``
only if the lexeme can end as an expected terminal ``a`` (or as an ignored one, a ``#``
that may still become a comment: the parser then stays at ``p``) at an end from which a
path of lexemes leads to a state where the text may end: a search over pairs (parser state, end
group), each step a terminal the parser expects whose lexeme can start after the end
(``Adjacency.delta``). That is exact — a token is refused iff no text completes the
parse as the lexer splits it — except where the search meets more than ``LIMIT`` pairs (a
grammar whose parser states keep growing along the way) or a parse past the runtime limits,
or the indentation newline (whose parser step needs the width): there the token is allowed,
as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from ...compiler.separable import Adjacency
from ...encoding import bits_of_rows
from .end_search import LIMIT, EndSearch

if TYPE_CHECKING:
    from .parse_state import ParserContext, PState

__all__ = ["LIMIT", "EndConditions"]


class EndConditions(EndSearch):
    """Per end class to decide: the (terminal, end groups) its lexeme can still reach; the
    search over pairs (parser state, end group) is :class:`EndSearch`'s."""

    __slots__ = ("_next_bytes", "classes", "delta", "n_lex", "nl_t")

    def __init__(self, adj: Adjacency, state_class: np.ndarray, class_winnable: np.ndarray,
                 nl_terminal: int = -1) -> None:
        super().__init__()
        self.delta = adj.delta
        self._next_bytes = adj.next_bytes
        self.nl_t = nl_terminal
        self.n_lex = class_winnable.shape[1] - 1  # parser terminals past it have no lexeme
        bits = bits_of_rows(class_winnable[:, :-1])
        ign_end = class_winnable[:, -1]
        seen: dict[int, int] = {}
        mixed: set[int] = set()
        for x in range(len(state_class)):
            c = int(state_class[x])
            if seen.setdefault(c, int(adj.ids[x])) != int(adj.ids[x]):
                mixed.add(c)  # (tables built before the split: keep the old verdict)
        # per class: its significant (terminal, end groups), and the groups of its ignored
        # ends (a lexeme that can also end as a comment: the parser stays, the next lexeme
        # starts after that end)
        self.classes: dict[int, tuple[tuple[tuple[int, tuple[int, ...]], ...],
                                      tuple[int, ...]]] = {}
        for c, i in seen.items():
            ends = adj.table[i]
            sig = tuple((a, gs) for a, gs in ends if a >= 0)
            ign = tuple(sorted({g for a, gs in ends if a < 0 for g in gs}))
            # a lexeme that can end as the newline (its step needs the width): as before
            if c in mixed or not ends or any(a == nl_terminal for a, _ in sig):
                continue
            own = sum(1 << a for a, _ in sig)
            # (the class's terminals are not its own ends' — with an ignored end, its own
            # and those that may follow that end: as before)
            if bool(ign) != bool(ign_end[c]) or (own & ~bits[c] if ign else own != bits[c]):
                continue
            self.classes[c] = (sig, ign)

    def refine(self, ctx: ParserContext, p: PState, bits: int, r: np.ndarray) -> np.ndarray:
        """``r`` (the class verdicts at ``p``, expected terminals ``bits``) with the classes
        to decide decided; a copy where one changes."""
        out = r
        for c, (ends, ign) in self.classes.items():
            if not r[c]:
                continue
            ok = any(self.viable(ctx, p, g) for g in ign)
            for a, groups in ends:
                if ok:
                    break
                if not (bits >> a) & 1:
                    continue
                if ctx.continues_into_suffix(p, a):
                    ok = True  # (fill-in-the-middle: the boundary masks decide it exactly)
                    break
                p2 = ctx.shift(p, a)
                ok = p2 is not None and any(self.viable(ctx, p2, g) for g in groups)
            if not ok:
                if out is r:
                    out = r.copy()
                out[c] = False
        return out

    def next_bytes(self, end: int) -> int:
        """(The search's ends are end groups.)"""
        return self._next_bytes.get(end, (1 << 256) - 1)

    def viable(self, ctx: ParserContext, p: PState, g: int) -> bool:
        """Can the text be completed from parser state ``p`` after a lexeme end of group
        ``g``? (True also where the search gives up.)"""
        return self.search(ctx, p, g, lambda p1, g1: self._steps(
            ctx, p1, g1, ctx.expects(p1) & ~ctx.ignored_bits))

    def _steps(self, ctx: ParserContext, p1: PState, g1: int, exp: int
               ) -> Iterator[tuple[PState, int] | None]:
        """The search's step from ``(p1, g1)`` over the expected terminals ``exp``: a
        terminal whose lexeme can start after an end of group ``g1``."""
        while exp:
            low = exp & -exp
            exp ^= low
            b = low.bit_length() - 1
            nxt = self.delta.get((g1, b))
            if not nxt and b < self.n_lex:
                continue
            if b == self.nl_t or b >= self.n_lex:  # a newline (its step needs the width)
                yield None  # or an indenter's _INDENT: not searched through
                return
            if ctx.continues_into_suffix(p1, b):
                yield None  # the lexeme the suffix continues: the boundary masks decide
                return
            p2 = ctx.shift(p1, b)
            if p2 is not None and nxt:
                yield from ((p2, g2) for g2 in nxt)
