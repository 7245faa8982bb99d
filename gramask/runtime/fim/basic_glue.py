"""The basic lexer mode's glue of the middle's last lexeme to the suffix, and the memos of its
walks: :class:`~gramask.runtime.fim.constraint.FimConstraint`'s base. (The contextual mode
glues on its own lexer, with no greedy end to test: :mod:`gramask.runtime.fim.contextual`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.indentation import advance
from ..core.parse_state import PState
from ..memo import BoundedMemo
from .base import FimBase

if TYPE_CHECKING:
    from .suffix_lexing import Branch

__all__ = ["BasicFimBase", "FimState"]

# (lexer state, indentation carry, quotient parser state, original parser state)
FimState = tuple[int, int, PState, PState]


class BasicFimBase(FimBase[FimState]):
    """:class:`FimBase` with the basic mode's glue (greedy lexing must end the lexeme where a
    branch needs) and its memos, made before the base reads the prefix."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # per lexer state: the branches its glue can end (:meth:`_glued_branches`)
        self._glued: dict[int, list[tuple[Branch, int, int, int, int, int]]] = {}
        # walks per (lexer state, carry, both parsers' uids, bytes) (FimConstraint._walk)
        self._walks: BoundedMemo[tuple[int, int, int, int, bytes], FimState | int] = (
            BoundedMemo(1 << 14))
        super().__init__(*args, **kwargs)

    def _glue_walk(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The middle's last lexeme (lexer state ``q``) continued by ``suffix[:k]`` and ended
        there: (final lexer state, whether a newline reset the carry, width added), or None
        if greedy lexing would not end it at ``k``. Memoised per (q, k)."""
        key = (q, k)
        if key in self._glue:
            return self._glue[key]
        s = self._suffix
        b = self._b
        rows = b.trans_rows
        res: tuple[int, int, int] | None = None
        qq = q
        reset, width = 0, 0
        ok = True
        for byte in s[:k]:
            qq = rows[qq][byte]
            if qq < 0:
                ok = False
                break
            if byte in (10, 12):
                reset = 1
            if byte <= 32:
                width = advance(width, byte)
        if ok and (qq == 0 or b.accept[qq] >= 0) and (
                k == len(s) or qq == 0 or rows[qq][s[k]] < 0):
            res = (qq, reset, width)
        self._glue[key] = res
        return res

    def _glued_branches(self, q: int) -> list[tuple[Branch, int, int, int, int, int]]:
        """The branches whose glue from lexer state ``q`` ends where they need
        (the tests of its :meth:`_quotient_verdict` that read ``q`` alone: each verdict of a
        new parser state redid them, about 20 per state on real suffixes), with the glue."""
        b, n, out = self._b, len(self._suffix), []
        for br, marker, a in self._branches:
            g = self._glue_walk(q, br.k)
            if g is None or (g[0] != 0 and br.k == n and b.accept[g[0]] == b.continuation_t >= 0):
                continue  # no glue; or input may not end in a line continuation
            if a < 0 or b.accept[g[0]] == a:
                out.append((br, marker, a, *g))
        return out
