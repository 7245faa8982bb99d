"""Budget plans by following the bounds' choices: from a runtime state, finish the lexeme in
progress as the terminal the costs rank cheapest, then add the cheapest next lexeme, until the
input is complete (:meth:`BoundsRoute.completion_text`). Most plans are found this way; where
it fails, :class:`~.search.PlanSearch` searches."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..core.earley import EXPECTED
from ..core.indentation import indent_text, space_pad, text_carry
from ..core.parse_state import DEPTH, ES, INDENT, PUID
from ..memo import BoundedMemo
from .runstate import Complete, LexState, RunState, View, Walk
from .spelling import INF

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from ..core.parse_state import ParserContext, PState
    from .lexeme_costs import LexemeCosts
    from .spelling import TokenCounter
    from .state_costs import StateCosts

__all__ = ["BoundsRoute"]

_PADS = (*(b" " * i for i in range(1, 17)), b"\t")
# fill-in-the-middle: newline widths of the suffix's a failed route is followed again with
# (see BoundsRoute.completion_text)
_WIDTH_FORKS = 4

S = TypeVar("S", bound=RunState)


class BoundsRoute:
    """The bounds' own route to a completion (a base of :class:`~.search.PlanSearch`, which
    sets these fields)."""

    mb: MaskBuilder
    ctx: ParserContext
    tok: TokenCounter
    lex: LexemeCosts
    costs: StateCosts
    markers: dict[int, int]
    nl_t: int
    _nl_live: np.ndarray
    suffix_widths: tuple[int, ...]  # fill-in-the-middle: where the suffix's blocks are
    # (parser uid, lexer state before) → the cheapest next lexeme (plans from sibling
    # states mostly end the same way: their tails hit this)
    _next: BoundedMemo[tuple[int, int], tuple[bytes | None, int]]

    def completion_text(self, st: S, walk: Walk[S], complete: Complete[S],
                        view: View[S] | None = None,
                        ) -> bytes | None:
        """Bytes that complete the input from runtime state ``st``, following the bounds'
        choices (see :meth:`~.search.PlanSearch.plan` for the arguments); None if that fails.

        Fill-in-the-middle: where that route fails, it is followed again from each newline
        lexeme it ended at a block the costs chose the width of, with the block opened at
        one of the suffix's widths instead (the first _WIDTH_FORKS of them, one fork a
        route): the costs price a new block at its cheapest width, but a suffix that goes on
        inside the block fixes it (``def g():`` then a docstring the suffix continues at
        width 8, where the costs open the block at 5)."""
        view = view or _plain_view
        forks: list[tuple[S, bytes]] = []
        text = self._route(st, walk, complete, view, forks, False)
        if text is not None:
            return text
        for nst, head in forks[:_WIDTH_FORKS]:
            rest = self._route(nst, walk, complete, view, None, True)
            if rest is not None:
                return head + rest
        return None

    def _route(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S],
               forks: list[tuple[S, bytes]] | None, finished: bool) -> bytes | None:
        """:meth:`completion_text`'s route from ``st``; with ``forks``, the states (and the
        bytes up to them) of the newline widths to try where it fails are added to it.
        ``finished``: the lexeme in progress at ``st`` ends as it is (a fork's newline)."""
        mb = self.mb
        lex = self.lex
        out = bytearray()
        last = INF + 1
        while True:  # (ends: each lexeme's cost to finish is below the one before)
            q, carry, p = view(st)
            if complete(st):
                return bytes(out)
            # a fork's newline lexeme has its width: straight to its end below
            settled, finished = finished, False
            if not settled and q != 0 and self.markers and self._nl_live[q]:
                # fill-in-the-middle: the suffix may continue this newline lexeme (its
                # indentation): a few spaces more may be all the middle needs
                for pad in _PADS:
                    nst = walk(st, pad)
                    if not isinstance(nst, int) and complete(nst):
                        return bytes(out + pad)
            if q != 0 and not settled:
                # finish the lexeme in progress as the cheapest terminal
                best, choice = INF, -1
                for t, f in lex.fin_list[q]:
                    extra = (self.costs.newline_cost(p, carry) if t == self.nl_t and f == 0
                             else self.costs.after_finishing(q, t, p))
                    if f + extra < best:
                        best, choice = f + extra, t
                bcost, btext = self.costs.boundary_cost(q, p) if self.costs.boundary else (INF, b"")
                if bcost < best:
                    nst = walk(st, btext) if btext else st
                    if not isinstance(nst, int) and complete(nst):
                        return bytes(out + btext)
                alt = self._finish_alternative(q, p, best)
                nst = walk(st, alt) if alt is not None else -1
                if alt is not None and not isinstance(nst, int):
                    out += alt  # (walked: where it fails, the costs' choice stands)
                    st = nst
                else:
                    if choice < 0:
                        return None
                    w = lex.witness(q, choice)
                    if choice == self.nl_t:
                        now = text_carry(w, carry)
                        pad = self._nl_pad(p, now)
                        if forks is not None and self.markers:
                            forks += self._width_forks(st, bytes(out), w, p, now, pad, walk)
                        w += pad
                    if w:
                        nst = walk(st, w)
                        if isinstance(nst, int):
                            return None
                        out += w
                        st = nst
            if q != 0:
                q, carry, p = view(st)
                if complete(st):
                    return bytes(out)
                glued = self._glue_to_suffix(st, q, carry, p, walk, complete)
                if glued is not None:
                    return bytes(out + glued)
                p2 = mb.lexeme_end(p, q, carry)  # ended by the next lexeme's first byte
                if p2 is None:
                    return None
                p = p2
            elif mb.complete(p, q, carry):
                glued = self._glue_to_suffix(st, q, carry, p, walk, complete)
                return None if glued is None else bytes(out + glued)
            nxt, cost = self._next_lexeme(p, q)
            if nxt is None or cost >= last:
                return None  # no way on, or the costs stopped decreasing (inconsistent)
            last = cost
            if self.markers and nxt[:1] == b"\n" and nxt.strip(b" \t") == b"\n":
                # fill-in-the-middle: the line break alone first, the loop then tries the
                # fewest spaces that complete (the suffix's own indentation may be all the
                # new line needs: ``\n`` before a suffix ``     i`` opens the block at 5,
                # where the width the costs chose, 5 more spaces, took five tokens more)
                nxt = b"\n"
            nst = walk(st, nxt)
            if isinstance(nst, int):
                return None
            out += nxt
            st = nst

    def _width_forks(self, st: S, head: bytes, w: bytes, p: PState, now: int, pad: bytes,
                     walk: Walk[S]) -> list[tuple[S, bytes]]:
        """Where the route ends the newline lexeme in progress at ``st`` (``head``: its
        bytes so far) with ``w`` (which leaves the line ``now`` wide) then ``pad``: the
        states, with the route's bytes to them, that end it at each of the suffix's widths
        deeper than the open levels instead, nearest first, where the parser opens a block
        there."""
        if p[DEPTH] > 0 or not p[INDENT]:
            return []
        top = p[INDENT][-1]
        out: list[tuple[S, bytes]] = []
        chosen = text_carry(pad, now)
        for width in sorted(x for x in self.suffix_widths if x > top and x != chosen):
            d = space_pad(now, width)
            if d is None or self.ctx.newline(p, width) is None:
                continue
            data = w + b" " * d
            nst = walk(st, data) if data else st
            if not isinstance(nst, int):
                out.append((nst, head + data))
        return out

    def _finish_alternative(self, q: int, p: PState, best: int) -> bytes | None:
        """Bytes that finish the lexeme at ``q`` for fewer tokens than ``best`` in a way the
        costs do not see (None here; the contextual mode's planner reads the parser's
        expected terminals)."""
        return None

    def _glue_to_suffix(self, st: S, q: int, carry: int, p: PState, walk: Walk[S],
                        complete: Complete[S]) -> bytes | None:
        """Where the quotient says the middle may end but the suffix's first byte would
        continue the middle's last lexeme: the separator that keeps them apart, if that
        completes the program (a marker's cost counts it, see ``quotient_planner``)."""
        sep = self.lex.separator
        if not self.markers or sep is None or not self.mb.complete(p, q, carry):
            return None
        st2 = walk(st, sep)
        if isinstance(st2, int) or not complete(st2):
            return None
        return sep

    def _nl_pad(self, p: PState, carry: int) -> bytes:
        """The bytes that end a newline lexeme at ``carry`` the cheapest way."""
        if p[DEPTH] > 0:
            return b""
        return min(self.costs.newline_options(p, carry), default=(INF, b""))[1]

    def _next_lexeme(self, p: PState, prev: int) -> tuple[bytes | None, int]:
        """The cheapest next lexeme at a boundary after a lexeme that ended in lexer state
        ``prev``: its bytes, separator included (None if there is none), and the tokens to
        complete that it leads to, its own included. Memoised (the suffix's boundary
        markers are fixed when the planner is built)."""
        key = (p[PUID], prev)
        r = self._next.get(key)
        if r is None:
            r = self._next_lexeme_uncached(p, prev)
            self._next.put(key, r)
        return r

    def _next_lexeme_uncached(self, p: PState, prev: int) -> tuple[bytes | None, int]:
        lex = self.lex
        best, text = INF, None
        k = self.costs.k_newline(p)
        exp = p[ES][EXPECTED]
        for t in range(lex.num_terminals):
            if not (exp >> t) & 1 and not (t == self.nl_t and p[DEPTH] > 0):
                continue
            if t == self.nl_t:
                if p[DEPTH] > 0 or (prev and lex.trans[prev, 10] >= 0):
                    continue
                for width in sorted({*p[INDENT], p[INDENT][-1] + 1}):
                    q = self.ctx.newline(p, width)
                    if q is None:
                        continue
                    c = self.costs.nl_cost(width) + self.costs.parser_cost(q)
                    if c < best:
                        best, text = c, b"\n" + indent_text(width)
                continue
            if lex.ignored[t]:
                continue
            glued = lex.glue(prev, t)
            if glued is None:
                continue
            c = self.tok.count(glued) + self.costs.grammar.shifted_cost(p[ES], t, k)
            if c < best:
                best, text = c, glued
        for m, d in self.costs.boundary.items():
            if d[0] >= INF:
                continue
            w = lex.path(0, d)
            if not w:
                continue  # the suffix's head alone: a plain boundary, not this marker
            glued = w if not prev or lex.trans[prev, w[0]] < 0 else (
                None if lex.separator is None else lex.separator + w)
            if glued is None:
                continue
            c = self.tok.count(glued) + self.costs.marker_rest(p, m)
            if c < best:
                best, text = c, glued
        return text, best


def _plain_view(st: RunState) -> LexState:
    return st[0], st[1], st[2]
