"""Budget bounds per runtime state: upper bounds on the tokens that complete the input from
(lexer state, indentation carry, parser state).

At a lexeme boundary the bound is the grammar's (:mod:`.grammar_costs`), a newline lexeme's
width taken at the worst the completion can use; inside a lexeme it is the cheapest way to
finish that lexeme as some terminal (:mod:`.lexeme_costs`) plus the bound after it. With a
suffix (fill-in-the-middle) the lexeme in progress may also be the one the suffix continues
(``boundary``, ``glued``), and "the input may end here" is the view's (``end_check``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..core.earley import EXPECTED
from ..core.indentation import TAB_UNIT, columns, indent_text, space_pad, text_carry
from ..core.parse_state import BOL, DEPTH, ES, INDENT, PUID
from ..limits import memo_size
from ..memo import BoundedMemo
from .spelling import INF

K = TypeVar("K")
V = TypeVar("V")

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .grammar_costs import GrammarCosts
    from .lexeme_costs import LexemeCosts
    from .spelling import TokenCounter

__all__ = ["BoundaryStack", "EndCheck", "SearchEstimate", "StateCosts", "stack_distance"]

EndCheck = Callable[[int, int, "PState"], bool]  # (lexer state, carry, parser state) → may end
# fill-in-the-middle: an indentation stack the suffix needs at the boundary: its levels below
# a width, that width (None: not on it, the suffix's first newline indents to it), how many
# levels above it, and whether the middle must end with a block header (an indent follows
# its end at once)
BoundaryStack = tuple[tuple[int, ...], int | None, int, bool]


class StateCosts:
    """Upper bounds on the tokens to complete from parser states (at a lexeme boundary) and
    from runtime states (inside a lexeme), memoised per parser state."""

    def __init__(self, mb: MaskBuilder, tok: TokenCounter, lex: LexemeCosts,
                 grammar: GrammarCosts, tab_len: int) -> None:
        self.mb = mb
        self.ctx = mb.ctx
        self.tok = tok
        self.lex = lex
        self.grammar = grammar
        self.tab = tab_len
        self.nl_t = mb.nl_t
        self.has_indent = self.ctx.nl_t >= 0
        # fill-in-the-middle: markers that stand for the middle's last lexeme continued by the
        # suffix → distances (bytes, per lexer state) to where the suffix's head ends it
        self.boundary: dict[int, np.ndarray] = {}
        # fill-in-the-middle: the boundary markers (above) whose lexeme does not stand in the
        # parse (a comment, blanks, a newline lexeme the suffix continues): the marker comes
        # after it, not instead of it; with the width a newline lexeme ends at (the last
        # line of the suffix's part of it; None: not known here)
        self.glued: dict[int, tuple[frozenset[int], int | None]] = {}
        # fill-in-the-middle: "the input may end here" exactly as far as the view knows
        # (the quotient's own finish ignores how the suffix glues on)
        self.end_check: EndCheck | None = None
        lim = mb.limits
        self._H: BoundedMemo[tuple[int, int], int] = BoundedMemo(memo_size(lim.step_memo))
        self._nlb: BoundedMemo[int, int] = BoundedMemo(memo_size(lim.parser_states))
        # per parser state, a vector over lexer states (8 bytes each): fewer of them
        self._cls: BoundedMemo[int, np.ndarray] = BoundedMemo(
            memo_size(max(64, lim.parser_states // 16)))
        # per parser state, :meth:`loose_costs`' answers: lexer state → (bound, loose)
        self._loose: BoundedMemo[int, dict[int, tuple[int, bool]]] = BoundedMemo(
            memo_size(max(64, lim.parser_states // 16)))
        self._nl_cost: dict[int, int] = {}
        self._k_by_top: dict[tuple[int, tuple[int, ...]], int] = {}
        self._k_newline: dict[tuple[int, ...], int] = {}  # k_newline per indentation stack
        # (q, carry, parser uid) → :meth:`state_cost`: plan searches and detours ask it of
        # every chunk's state and meet the same ones again; valid while the fields it reads
        # are the same objects (:meth:`_memo_of`; they are replaced, never changed in place)
        self._sc: BoundedMemo[tuple[int, int, int], int] = BoundedMemo(1 << 16)
        self._sc_of: tuple[int, ...] = ()

    def nl_cost(self, width: int) -> int:
        """Tokens that spell a newline followed by ``width`` spaces."""
        c = self._nl_cost.get(width)
        if c is None:
            c = self._nl_cost[width] = self.tok.count(b"\n" + indent_text(width))
        return c

    def k_newline(self, p: PState) -> int:
        """The cost charged per newline lexeme from ``p``: the dearest of the widths a
        completion from here can use (the open levels and up to eight more)."""
        levels = p[INDENT] if self.has_indent else ()
        k = self._k_newline.get(levels)  # (asked per terminal of every state priced)
        if k is None:
            top = levels[-1] if levels else 0
            cap = max(top % TAB_UNIT + 8, 64)
            bases = tuple(sorted({e - e % TAB_UNIT for e in levels})) if levels else (0,)
            k = self._k_by_top.get((cap, bases))
            if k is None:
                k = self._k_by_top[(cap, bases)] = max(
                    self.nl_cost(b + w) for b in bases for w in range(cap + 1))
            self._k_newline[levels] = k
        return k


    # ------------------------------------------------------------------ parser states
    def parser_cost(self, p: PState) -> int:
        """Fewest tokens that complete the input from ``p`` at a lexeme boundary."""
        if self.ctx.finish(p):
            return 0
        k = self.k_newline(p)
        if not (self.has_indent and p[BOL] and p[DEPTH] == 0):
            return self.grammar.earley_cost(p[ES], k)
        # Right after a newline lexeme the indentation it made is final: an INDENT or DEDENT
        # the parser still expects cannot come before another statement, and another newline
        # would have been part of that lexeme. So the next lexeme is a plain terminal.
        r = self._H.get((p[PUID], -1 - k))
        if r is None:
            r = INF
            exp, lexc = p[ES][EXPECTED], self.lex.cost
            for t in range(self.lex.num_terminals):
                if (exp >> t) & 1 and t != self.nl_t and lexc[t] < INF:
                    r = min(r, int(lexc[t]) + self.grammar.shifted_cost(p[ES], t, k))
            self._H.put((p[PUID], -1 - k), r)
        return r

    def after_terminal(self, p: PState, t: int) -> int:
        """Tokens needed once a lexeme of lexer terminal ``t`` ends at ``p`` (INF where the
        parser cannot take it); the newline terminal bounded over every indentation width."""
        if t == self.nl_t:
            r = self._nlb.get(p[PUID])
            if r is None:
                r = self._newline_bound(p)
                self._nlb.put(p[PUID], r)
            return r
        if self.lex.ignored[t]:
            here = self.parser_cost(p)
            return here if (t != self.lex.continuation_t or here > 0) else self.nl_cost(0)
        if (p[ES][EXPECTED] >> t) & 1:
            return self.grammar.shifted_cost(p[ES], t, self.k_newline(p))
        return INF

    def newline_cost(self, p: PState, carry: int) -> int:
        """Tokens to complete once a newline lexeme whose last line is ``carry`` wide so far
        ends: spaces may still be added to reach an open level (or one deeper), or a fresh
        line started."""
        if p[DEPTH] > 0:
            return self.parser_cost(p)
        return min(self.newline_options(p, carry), default=(INF, b""))[0]

    def newline_options(self, p: PState, carry: int) -> list[tuple[int, bytes]]:
        """(tokens to complete, bytes that extend the newline lexeme) per way to end it."""
        ctx = self.ctx
        out = []
        levels = sorted({*p[INDENT], p[INDENT][-1] + 1})
        for w in sorted({*levels, carry}):
            d = space_pad(carry, w)
            if d is None:
                continue
            q = ctx.newline(p, w)
            if q is None:
                continue
            pad = b" " * d
            extra = self.tok.count(pad) if pad else 0
            out.append((extra + self.parser_cost(q), pad))
        if self.lex.nl_renews:
            for w in levels:
                q = ctx.newline(p, w)
                if q is not None:
                    data = b"\n" + indent_text(w)
                    out.append((self.tok.count(data) + self.parser_cost(q), data))
        return out

    def _newline_bound(self, p: PState) -> int:
        """``newline_cost`` for the worst width a token can leave the lexeme at."""
        if p[DEPTH] > 0 or not self.has_indent:
            return self.parser_cost(p)
        top = p[INDENT][-1]
        col = columns(top, self.ctx.tab_len) or (0, 0)
        widths = set(range(col[0] + 3))
        for e in p[INDENT]:
            base = e - e % TAB_UNIT
            widths.update(base + s for s in range(top % TAB_UNIT + 3))
        return max(self.newline_cost(p, w) for w in widths)

    # ------------------------------------------------------------------ lexer states
    # ------------------------------------------------------------------ lexer states
    def state_costs(self, p: PState, states: np.ndarray) -> np.ndarray:
        """Per lexer state in ``states``: tokens to complete from it with the parser at
        ``p`` (a newline lexeme's width taken at its worst). Memoised per parser state as a
        vector over lexer states (-1: not computed yet), filled where asked."""
        known = self._cls.get(p[PUID])
        if known is None:
            known = np.full(self.lex.num_states, -1, dtype=np.int64)
            self._cls.put(p[PUID], known)
        vals: np.ndarray = known[states]
        missing = vals < 0
        if missing.any():
            after: dict[int, int] = {}  # per terminal: the lexer states share its cost here
            for f in np.unique(states[missing]).tolist():
                known[f] = self._state_bound(p, f, after)
            vals = known[states]
        return vals

    def loose_costs(self, p: PState, states: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`state_costs`, but a lexer state not priced yet is priced without asking
        whether the input may end right there (a parse that shifts a lexeme's terminal and
        finishes: ~a quarter of a cold step's bounds): still an upper bound, only never 0
        where that check alone would make it 0. Returns the bounds and, per state, whether
        it is such a loose one (None: all exact); :meth:`state_costs` gives the exact one
        where a loose bound is over the budget."""
        key = p[PUID]
        # (Python values, not vectors: a call asks for a few states, and numpy's per-call
        # overhead was a third of its time)
        mine = self._loose.get(key)
        if mine is None:
            mine = {}
            self._loose.put(key, mine)
        known = self._cls.get(key)
        after: dict[int, int] = {}
        costs: list[int] = []
        flags: list[bool] = []
        for f in states.tolist():
            e = mine.get(f)
            if e is None or e[1]:  # (a loose one: exact now if state_costs priced it since)
                v = -1 if known is None else int(known[f])
                if v >= 0:
                    e = mine[f] = (v, False)
                elif e is None:
                    v = self._state_bound(p, f, after, check=False)
                    e = (v, not (f == 0 or v == 0 or self._open_width(f)))  # (the check: no say)
                    mine[f] = e
            costs.append(e[0])
            flags.append(e[1])
        vals = np.array(costs, dtype=np.int64)
        return (vals, np.array(flags, dtype=bool)) if any(flags) else (vals, None)

    def settle(self, p: PState, f: int, loose: int) -> int:
        """The exact bound of lexer state ``f`` at ``p`` whose :meth:`loose_costs` bound is
        the loose ``loose``: only the end-of-input check it skipped is missing (a loose one
        has ``f`` != 0, a bound != 0 and no open width), so 0 where the text may end at
        ``f``, else ``loose``. Recorded for :meth:`state_costs` and :meth:`loose_costs`."""
        key = p[PUID]
        known = self._cls.get(key)
        if known is None:
            known = np.full(self.lex.num_states, -1, dtype=np.int64)
            self._cls.put(key, known)
        v = int(known[f])
        if v < 0:
            v = 0 if self.mb.complete(p, f, 0) else loose
            known[f] = v
        mine = self._loose.get(key)
        if mine is not None:
            mine[f] = (v, False)
        return v

    def _open_width(self, f: int) -> bool:
        """Does a lexeme ending at ``f`` end in a newline lexeme whose width counts at the
        end (lark's Indenter, not CPython's end of input: a comment that is one, its blanks
        the width)? The text may then end there only at some widths, and the carry a token
        leaves is not known: the bound takes the worst, never 0 by the end check."""
        return bool(self.mb.accept[f] == self.nl_t >= 0) and not self.ctx.cpython_ends

    def _state_bound(self, p: PState, f: int, after: dict[int, int], check: bool = True,
                     ) -> int:
        """``state_costs`` of one lexer state ``f`` (with no known indentation carry);
        ``after``: ``after_terminal`` at ``p`` per terminal, as far as known; ``check``:
        0 where the text may end right here (see :meth:`loose_costs`)."""
        if f == 0:
            return self.parser_cost(p)
        # The text may end right here; but see _open_width
        if check and not self._open_width(f) and self.mb.complete(p, f, 0):
            return 0
        v = self.boundary_cost(f, p)[0] if self.boundary else INF
        nl_t = self.nl_t
        for t, c in self.lex.fin_list[f]:
            if c < v:
                if t == nl_t:  # (its witness may hold a newline: a width of its own)
                    v = min(v, c + self.after_finishing(f, t, p))
                    continue
                a = after.get(t)
                if a is None:
                    a = after[t] = self.after_terminal(p, t)
                v = min(v, c + a)
        return v

    def state_cost(self, q: int, carry: int, p: PState) -> int:
        """Upper bound on the tokens that complete the input from runtime state (q, carry, p).
        Memoised."""
        self._sc_of = self.refresh(self._sc, self._sc_of)
        key = (q, carry, p[PUID])
        r = self._sc.get(key)
        if r is None:
            r = self._state_cost(q, carry, p)
            self._sc.put(key, r)
        return r

    def _memo_of(self) -> tuple[int, ...]:
        """The identities of the fields :meth:`state_cost` reads besides its arguments."""
        return id(self.boundary), id(self.glued), id(self.end_check)

    def refresh(self, memo: BoundedMemo[K, V], was: tuple[int, ...]) -> tuple[int, ...]:
        """Empty ``memo``, filled while those fields had the identities ``was``, if they
        were replaced since; returns their identities now (to keep as the new ``was``). The
        one rule for every memo whose entries read them: this one's bounds, a plan
        search's expansions."""
        of = self._memo_of()
        if of != was:
            memo.clear()
        return of

    def _state_cost(self, q: int, carry: int, p: PState) -> int:
        mb = self.mb
        if self.end_check(q, carry, p) if self.end_check is not None else mb.complete(p, q, carry):
            return 0
        if q == 0:
            return self.parser_cost(p)
        best = self.boundary_cost(q, p)[0]
        for t, f in self.lex.fin_list[q]:
            if f >= best:
                continue
            if t == self.nl_t and f == 0:
                extra = self.newline_cost(p, carry)
            else:
                extra = self.after_finishing(q, t, p)
            best = min(best, f + extra)
        return best

    def after_finishing(self, q: int, t: int, p: PState) -> int:
        """``after_terminal``, once the lexeme at ``q`` is finished as ``t`` by its witness:
        a newline lexeme whose witness holds a newline has a known width (no worst case)."""
        if t == self.nl_t:
            w = self.lex.witness(q, t)
            if b"\n" in w:
                return self.newline_cost(p, text_carry(w))
        return self.after_terminal(p, t)

    def boundary_cost(self, q: int, p: PState) -> tuple[int, bytes]:
        """Fill-in-the-middle: the cheapest way to make the lexeme in progress at ``q`` the
        one the suffix continues (tokens to complete, bytes to add); (INF, b"") if none."""
        best, text = INF, b""
        for m, d in self.boundary.items():
            if d[q] >= INF:
                continue
            rest = self.marker_rest(p, m)
            if rest >= best:
                continue
            w = self.lex.path(q, d)
            c = self.tok.count(w) + rest if w else rest
            if c < best:
                best, text = c, w
        return best, text

    def marker_rest(self, p: PState, m: int) -> int:
        """Tokens to complete once the lexeme in progress is the one boundary marker ``m``
        stands for (INF: the parser at ``p`` cannot take it): the marker shifted instead of
        the lexeme, or, for a glued one, after the lexeme (a newline lexeme at its width)."""
        k = self.k_newline(p)
        g = self.glued.get(m)
        if g is None:
            return self.grammar.shifted_cost(p[ES], m, k) if (p[ES][EXPECTED] >> m) & 1 else INF
        ends, width = g
        best = INF
        for t in ends:
            p2: PState | None = p
            if t == self.nl_t and p[DEPTH] == 0:
                top = p[INDENT][-1] if p[INDENT] else 0
                p2 = self.ctx.newline(p, top if width is None else width)
            elif not self.lex.ignored[t]:
                continue
            if p2 is not None and (p2[ES][EXPECTED] >> m) & 1:
                best = min(best, self.grammar.shifted_cost(p2[ES], m, k))
        return best


class SearchEstimate(StateCosts):
    """The order of a plan's fallback search (:meth:`PlanSearch.search_text`), an estimate
    and not a bound (only that search reads it):

    * each newline lexeme is priced at the widths the search spells (the open levels, one
      deeper, the suffix's), not at the worst a token could leave: with a vocabulary that
      spells blanks one token each (GPT-2) the bound's worst (64 columns) prices every
      statement still to come above the search's cap;
    * fill-in-the-middle: the quotient's costs end the middle wherever a marker fits,
      whatever the indentation stack, though the suffix needs one of a few stacks
      (``stacks``, the branches' assumptions); the estimate is at least the newline and the
      block headers that reach the nearest of them (:func:`stack_distance`). Without it a
      middle that must open a block at a width of the suffix's ranks with the thousands of
      one-line expressions that merely look one token from a marker.

    ``mirror`` keeps its fill-in-the-middle fields those of the bounds."""

    def __init__(self, bounds: StateCosts) -> None:
        super().__init__(bounds.mb, bounds.tok, bounds.lex, bounds.grammar, bounds.tab)
        self.suffix_widths: tuple[int, ...] = ()
        self.stacks: frozenset[BoundaryStack] = frozenset()
        self._k_by_levels: dict[tuple[int, ...], int] = {}
        self._dist: dict[tuple[int, ...], int] = {}
        self.mirror(bounds)

    def for_suffix(self, stacks: frozenset[BoundaryStack], widths: tuple[int, ...]) -> None:
        """The suffix's stacks and widths; the memos derived from them are emptied."""
        self.stacks, self.suffix_widths = stacks, widths
        self._k_by_levels.clear()
        self._dist.clear()

    def mirror(self, bounds: StateCosts) -> None:
        """Take the fill-in-the-middle fields the planner set on ``bounds``."""
        self.boundary, self.glued, self.end_check = bounds.boundary, bounds.glued, bounds.end_check

    def k_newline(self, p: PState) -> int:
        if not self.has_indent:
            return self.nl_cost(0)
        levels = p[INDENT]
        k = self._k_by_levels.get(levels)
        if k is None:
            top = levels[-1] if levels else 0
            k = self._k_by_levels[levels] = max(
                self.nl_cost(w) for w in {*levels, top + 1, *self.suffix_widths})
        return k

    def _memo_of(self) -> tuple[int, ...]:
        return (*super()._memo_of(), id(self.stacks), id(self.suffix_widths))

    def _state_cost(self, q: int, carry: int, p: PState) -> int:
        h = super()._state_cost(q, carry, p)
        if h == 0 or not self.stacks or not self.has_indent:
            return h
        levels = p[INDENT]
        d = self._dist.get(levels)
        if d is None:
            hdr = self.grammar.header_cost()
            d = self._dist[levels] = 0 if hdr >= INF else min(
                stack_distance(levels, s, hdr, self.nl_cost) for s in self.stacks)
        return max(h, d)


def stack_distance(levels: tuple[int, ...], want: BoundaryStack, header: int,
                   nl_cost: Callable[[int], int]) -> int:
    """Fewest tokens that take the indentation stack ``levels`` to one ``want`` describes:
    a newline that dedents, if any must go, then per level to open a block ``header`` and a
    newline at its width, and a last ``header`` where the middle must end with one. 0 where
    tabs make the widths incomparable as numbers."""
    below, width, above, opens = want
    if (levels and levels[-1] >= TAB_UNIT) or (width is not None and width >= TAB_UNIT):
        return 0
    return (header if opens else 0) + _blocks_to(levels, below, width, above, header, nl_cost)


def _blocks_to(levels: tuple[int, ...], below: tuple[int, ...], width: int | None, above: int,
               header: int, nl_cost: Callable[[int], int]) -> int:
    """``stack_distance`` but for the last header."""
    core = below if width is None else (*below, width)
    common = 0
    while common < min(len(levels), len(core)) and levels[common] == core[common]:
        common += 1
    if common == len(core):
        extra = len(levels) - common
        if extra == above:
            return 0
        if extra > above:
            return nl_cost(levels[common + above - 1] if common + above else 0)
        return sum(header + nl_cost((levels[-1] if levels else 0) + i + 1)
                   for i in range(above - extra))
    cost = nl_cost(levels[common - 1]) if common < len(levels) and common else 0
    top = core[-1] if core else 0
    return (cost + sum(header + nl_cost(w) for w in core[common:])
            + sum(header + nl_cost(top + i + 1) for i in range(above)))
