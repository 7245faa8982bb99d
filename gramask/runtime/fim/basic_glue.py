"""The basic lexer mode's glue of the middle's last lexeme to the suffix, and the memos of its
walks: :class:`~gramask.runtime.fim.constraint.FimConstraint`'s base. (The contextual mode
glues on its own lexer, with no greedy end to test: :mod:`gramask.runtime.fim.contextual`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
        # per (lexer state, carry, original parser uid): do the branches hold the suffix's
        # real terminals there (FimConstraint._covered)
        self._covers: dict[tuple[int, int, int], bool] = {}
        # walks per (lexer state, carry, both parsers' uids, bytes) (FimConstraint._walk)
        self._walks: BoundedMemo[tuple[int, int, int, int, bytes], FimState | int] = (
            BoundedMemo(1 << 14))
        super().__init__(*args, **kwargs)

    def _glue_fresh(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The glue (see :meth:`_glue_walk`) where greedy lexing ends the lexeme at ``k``
        (the DFA accepts there and ``suffix[k]`` cannot continue it), else None."""
        b, s = self._b, self._suffix
        rows = b.trans_rows
        res = self._run_suffix(rows, q, k)
        if res is None:
            return None
        qq = res[0]
        if (qq == 0 or b.accept[qq] >= 0) and (k == len(s) or qq == 0 or rows[qq][s[k]] < 0):
            return res
        return None

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
