"""Budget plans: concrete shortest completions, found by following the bounds' choices
(:meth:`PlanSearch.completion_text`) or, where that fails, by a best-first search over the
chunks those choices are made among (:meth:`PlanSearch.search_text`); every plan is walked
with the constraint's own ``walk`` and ``complete`` before it is returned.

With a suffix (fill-in-the-middle) the search also knows the suffix's lexeme starts
(``openers``), its leading blanks (``lead``), and a ``strict`` planner to fall back on.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import numpy as np

from ...errors import NoCompletionError
from ..core.earley import EXPECTED
from ..core.indentation import BROKEN, TAB_UNIT, advance, indent_text, space_pad, text_carry
from ..core.parse_state import DEPTH, ES, INDENT
from ..limits import memo_size
from ..memo import BoundedMemo
from .route import BoundsRoute, _plain_view
from .runstate import Complete, RunState, View, Walk, memo_key, walk_ids
from .spelling import INF
from .state_costs import SearchEstimate, StateCosts

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .dead_ends import DeadEnds
    from .lexeme_costs import LexemeCosts
    from .spelling import TokenCounter
    from .state_costs import BoundaryStack, StateCosts

__all__ = ["SEARCH_NODES", "PlanSearch", "Planner", "cheapest_steps"]

SEARCH_NODES = 4000  # states a plan's fallback search expands (see PlanSearch.search_text)
_SEARCH_H_CAP = 64  # an INF estimate still orders its state (last), it does not drop it
# blank bytes a newline lexeme is not run on by, one at a time (see PlanSearch._blank_runs)
_BLANKS = frozenset({32, 13})
_NO_PLAN = "gramask found no completion of this state that the vocabulary can spell"

S = TypeVar("S", bound=RunState)


class Planner(Protocol):
    """What plans a completion (a ``strict`` fallback planner)."""

    def plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None = None,
             search: int = SEARCH_NODES, escalate: bool = False) -> tuple[int, ...]: ...


class PlanSearch(BoundsRoute):
    """Shortest completions of runtime states, walked and memoised."""

    def __init__(self, mb: MaskBuilder, vocab: Vocabulary, tok: TokenCounter,
                 lex: LexemeCosts, costs: StateCosts, markers: dict[int, int]) -> None:
        self.mb = mb
        self.ctx = mb.ctx
        self.vocab = vocab
        self.tok = tok
        self.lex = lex
        self.costs = costs
        self.markers = markers
        self.nl_t = mb.nl_t
        self.has_indent = self.ctx.nl_t >= 0
        self.tab = costs.tab
        # fill-in-the-middle: what builds the planner :meth:`plan` falls back on (on first
        # use), whose glued markers are in ``costs.glued`` (here they are free ends after any
        # lexeme; see ``budget.quotient_planner``)
        self.strict: Callable[[], Planner] | None = None
        self._strict: Planner | None = None  # built on first use
        # fill-in-the-middle, for the fallback search: lexeme starts that the suffix's first
        # line continues (a comment opener when the suffix starts inside a comment), and the
        # width of the suffix's leading blanks (a newline ending the middle is continued)
        self.openers: list[bytes] = []
        self.lead = 0
        self.suffix_widths: tuple[int, ...] = ()
        self.estimate = SearchEstimate(costs)
        # fill-in-the-middle: the middle parts of lexemes the suffix continues that these
        # bounds price as free ends (a line continuation the suffix's newline finishes): the
        # fallback search tries them as chunks too (the costs do not lead to them)
        self.glued_starts: list[bytes] = []
        # fill-in-the-middle: proofs that a state has no completion at all (see
        # ``budget.dead_ends``), where the planner's constraint walks as they read
        self.dead: DeadEnds | None = None
        # bytes from each lexer state to one where the lexeme is an ignored terminal
        acc = lex.accept
        self._ignored_end = lex.distances_to((acc >= 0) & lex.ignored[np.maximum(acc, 0)])
        nl = mb.nl_live
        self._nl_live = np.array(nl if nl is not None else [False] * mb.dfa.num_states, bool)
        lim = mb.limits
        # the per-state memos below hold a few small tuples per entry: sized by the parser
        # states, not by the whole-mask cache (at its 256 a C request in the contextual mode
        # planned a fifth of its states again after they were forgotten)
        small = memo_size(max(64, lim.parser_states // 4))
        # per state: the largest search (states expanded) that found no plan of these costs
        self._failed: BoundedMemo[tuple[int, ...], int] = BoundedMemo(small)
        # (see BoundsRoute)
        self._next: BoundedMemo[tuple[int, int], tuple[bytes | None, int]] = BoundedMemo(small)
        # per state: the plan of these costs and the states its search expanded to find it
        # (0: the bounds' own choices): a search of fewer states finds none (see _own_plan)
        self._plans: BoundedMemo[tuple[int, ...], tuple[tuple[int, ...], int]] = BoundedMemo(
            small)
        # (walk's function, state key) → :func:`_moves` from that state, as the search
        # expands it: searches of one step start from neighbouring states, and about half
        # the states a search expands were expanded by an earlier one (a pure function of
        # the state and the estimate's fields; emptied when those are replaced)
        self._expanded: BoundedMemo[tuple[object, tuple[int, ...]],
                                    tuple[tuple[bytes, RunState, int, int], ...]] = BoundedMemo(
            memo_size(max(64, lim.parser_states // 16)))
        self._expanded_of: tuple[int, ...] = ()
        # (walk's function, k, state key) → :func:`cheapest_steps`' chunks and their states
        # (at the masks' 256 it forgot two thirds of the states the detours of a C request
        # asked for again)
        self._cheapest: BoundedMemo[tuple[object, int, tuple[int, ...]],
                                    tuple[tuple[bytes, RunState], ...]] = BoundedMemo(small)

    def plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None = None,
             search: int = SEARCH_NODES, escalate: bool = False) -> tuple[int, ...]:
        """Token ids of a shortest completion from runtime state ``st``, checked by walking
        them (``walk``/``complete`` are the constraint's own; ``view(st)`` gives its lexer
        state, carry and parser state, for constraints with wider states). Where following
        the bounds' choices fails (fill-in-the-middle: the quotient's costs can be
        optimistic), a best-first search of up to ``search`` states looks further; then, for
        a full search (``search`` ≥ ``SEARCH_NODES``) or with ``escalate`` (a token's check
        searching again), the ``strict`` planner, if any.

        The answer is a function of (``st``, ``search``, ``escalate``) and what the planner
        was built with, never of the plans asked before (a planner is shared by every
        constraint and clone that plans with it, and a budget mask must depend only on its
        own request): memoised per state with the size of the search that found it, and
        the order in which the two planners are tried is the same for every state (no
        planner takes the lead because of an earlier state's plan).

        Raises
        ------
        NoCompletionError
            No completion was found (the vocabulary cannot spell one, or the search did not
            reach one).
        """
        view = view or _plain_view
        if self.dead is not None and self.dead.dead(*view(st)):
            raise NoCompletionError(_NO_PLAN)  # (no search could find one: none exists)
        full = search >= SEARCH_NODES  # a step's own plan, not a token's check
        ids = self._own_plan(st, walk, complete, view, search)
        if ids is None and self.strict is not None and (full or escalate):
            # the strict planner's costs, where these were too optimistic to lead anywhere
            ids = self._strict_plan(st, walk, complete, view, search)
        if ids is None:
            raise NoCompletionError(_NO_PLAN)
        return ids

    def _strict_plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S],
                     search: int) -> tuple[int, ...] | None:
        """The strict planner's plan (built on first use), or None."""
        if self.strict is None:
            return None
        sp = self._strict
        if sp is None:
            sp = self._strict = self.strict()
        try:
            return sp.plan(st, walk, complete, view, search)
        except NoCompletionError:
            return None

    def _own_plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S],
                  search: int) -> tuple[int, ...] | None:
        """The plan these costs find (the bounds' choices, else a search of at most
        ``search`` states), or None. Memoised per state as a function of ``search``: the
        best-first search pops states in an order that does not depend on its limit, so it
        finds its first completion after the same number of states whatever the limit; a
        plan found after ``n`` states is the answer for every ``search`` ≥ ``n`` and none
        below, and a search that found none answers none for every smaller one."""
        q, carry, _ = view(st)
        key = memo_key(q, carry, st)
        r = self._plans.get(key)
        if r is not None:
            return r[0] if r[1] <= search else None
        failed = self._failed.get(key)
        if failed is not None and failed >= search:
            return None
        ids = self._checked(st, self.completion_text(st, walk, complete, view), walk, complete)
        need = 0
        if ids is None and search > 0:
            text, need = self.search_text(st, walk, complete, view, search)
            ids = self._checked(st, text, walk, complete)
            if ids is None and text is not None:
                # the search ends at its first completion, whatever its limit: that one
                # does not spell, so no search of these costs finds one
                self._failed.put(key, INF)
                return None
        if ids is None:
            self._failed.put(key, max(search, need, failed or 0))
            return None
        self._plans.put(key, (ids, need))
        return ids

    def _checked(self, st: S, text: bytes | None, walk: Walk[S], complete: Complete[S],
                 ) -> tuple[int, ...] | None:
        """``text`` as the fewest tokens, if walking them from ``st`` ends complete."""
        ids = self.tok.tokenize(text) if text is not None else None
        if ids is None:
            return None
        end = walk_ids(walk, self.vocab.token_bytes, st, ids)
        return ids if end is not None and complete(end) else None

    def search_text(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None,
                    limit: int,
                    ) -> tuple[bytes | None, int]:
        """Best-first search for bytes that complete the input from ``st``: a state's
        children are the chunks the greedy planner chooses among (the lexeme in progress
        finished as each terminal, each expected next lexeme glued on, newlines at the open
        levels, the suffix's boundary lexemes, indentation pads), walked exactly; the order
        is tokens so far + the bound from the child (an estimate here, not a promise). At
        most ``limit`` distinct states are expanded (a state that other chunks reach again is
        popped and passed over, not counted: at most half the pops of a search of indented
        code were such repeats, and a token's check of 64 states reached only 36). Returns
        the completion (None if none was found) and how many states were expanded to find it
        (INF: none is found by any limit): the order does not depend on ``limit``, so any
        limit from that number on finds the same completion."""
        view = view or _plain_view
        est = self.estimate
        est.mirror(self.costs)
        tick = 0
        heap: list[tuple[int, int, int, bytes, S]] = [(0, 0, 0, b"", st)]
        seen: set[tuple[int, ...]] = set()
        n = 0
        while n < limit:
            if not heap:
                return None, INF  # every state expanded: no limit finds one
            _, ng, _, text, cur = heapq.heappop(heap)
            g = -ng
            q, carry, p = view(cur)
            key = memo_key(q, carry, cur)
            if key in seen:
                continue  # reached again by other chunks: not a state of its own
            seen.add(key)
            n += 1
            if complete(cur):
                return text, n
            for chunk, nst, c, h in self._expand(cur, key, (q, carry, p), walk, view):
                tick += 1
                heapq.heappush(heap, (g + c + h, -g - c, tick, text + chunk, nst))
        return None, limit

    def _expand(self, st: S, key: tuple[int, ...], here: tuple[int, int, PState],
                walk: Walk[S], view: View[S]) -> tuple[tuple[bytes, S, int, int], ...]:
        """:func:`_moves` from ``st`` (whose memo key is ``key``) with the search's
        estimate, memoised (``_expanded``)."""
        est = self.estimate
        self._expanded_of = est.refresh(self._expanded, self._expanded_of)
        mk = (getattr(walk, "__func__", walk), key)
        r = self._expanded.get(mk)
        if r is None:
            r = tuple(_moves(self, st, here, walk, view, est))
            self._expanded.put(mk, r)
        return cast("tuple[tuple[bytes, S, int, int], ...]", r)

    def _chunks(self, q: int, carry: int, p: PState) -> list[bytes]:
        """The byte strings :meth:`search_text` tries from (q, carry, p), deterministic."""
        lex = self.lex
        out: list[bytes] = []
        if q != 0:
            for t, _f in lex.fin_list[q]:
                w = lex.witness(q, t)
                if w:
                    out.append(w)
            # the lexeme in progress one byte longer than its shortest ending, one byte per
            # lexer state it can reach (the smallest): where the next lexeme's spelling
            # would run into it (``a.`` then ``a.``, read ``a.a`` ``.``), the lexeme must run
            # on first (``a.a`` then ``a.``). In a newline lexeme (at bracket depth 0) a
            # ``\n`` is tried even where a blank reached its lexer state first: it starts a
            # fresh line (another carry), the only way on from a line whose width is broken
            # (a tab after a space) or off every level
            row = lex.trans[q]
            reached: set[int] = set()
            padded = bool(self._nl_live[q]) and p[DEPTH] == 0
            skip = self._blank_runs(carry, p) if padded else frozenset()
            for b in np.flatnonzero(row >= 0).tolist():
                q2 = int(row[b])
                if b in skip:
                    continue
                if lex.fin_list[q2] and (q2 not in reached or (padded and b == 10)):
                    reached.add(q2)
                    out.append(bytes((b,)))
            if self._ignored_end[q] < INF:
                # the end of input ends any lexeme: an ignored one that nothing after it can
                # end (a '#' comment with no ignored newline) may still be the last
                w = lex.path(q, self._ignored_end)
                if w:
                    out.append(w)
            if self._nl_live[q] and p[DEPTH] == 0:
                top = p[INDENT][-1] if p[INDENT] else 0
                for level in sorted({*p[INDENT], top + 1, top + 4}):
                    d = space_pad(carry, level)
                    if d:
                        out.append(b" " * d)
            if self.costs.boundary:
                bt = self.costs.boundary_cost(q, p)[1]
                if bt:
                    out.append(bt)
            if lex.separator is not None and self.markers:
                out.append(lex.separator)
            if self.mb.accept[q] < 0:
                return out
            p2 = self.mb.lexeme_end(p, q, carry)
            if p2 is None:
                return out
        else:
            p2 = p
        exp = p2[ES][EXPECTED]
        for t in range(lex.num_terminals):
            if t == self.nl_t:
                # where a line break would run on into the lexeme at q (a newline lexeme
                # takes blank lines), an ignored lexeme keeps them apart: a block whose
                # only statement is a blank line is ``y\n #\n``
                sep = b"" if not q or lex.trans[q, 10] < 0 else lex.separator_before(q, 10)
                if p2[DEPTH] > 0 or sep is None:
                    continue
                if not self.has_indent:
                    if (exp >> t) & 1:
                        out.append(sep + b"\n")
                    continue
                top = p2[INDENT][-1] if p2[INDENT] else 0
                lead = self.lead
                deeper = (w for w in self.suffix_widths if w > top)
                for width in sorted({*p2[INDENT], top + 1, top + 4, *deeper}):
                    out.append(sep + b"\n" + indent_text(width))
                    if 0 < lead <= width and lead % TAB_UNIT <= width % TAB_UNIT:
                        out.append(sep + b"\n" + indent_text(width - lead))
                continue
            if lex.ignored[t] or not (exp >> t) & 1:
                continue
            glued = lex.glue(q, t)
            if glued is None and lex.spell[t] is None:
                # no clean end (digits that digits may follow): its raw lexeme, before
                # whatever can still come after it (``00`` then ``ab`` of ``"abc"``)
                raw = lex.raw_spelling(t)
                if raw and (not q or lex.trans[q, raw[0]] < 0):
                    glued = raw
            if glued is not None:
                out.append(glued)
        starts = [lex.path(0, d) for m, d in self.costs.boundary.items()
                  if d[0] < INF and (m in self.costs.glued or (exp >> m) & 1)]
        for w in [*starts, *self.openers, *self.glued_starts]:
            if w:
                glued = w if not q or lex.trans[q, w[0]] < 0 else (
                    None if lex.separator is None else lex.separator + w)
                if glued is not None:
                    out.append(glued)
        return list(dict.fromkeys(out))

    def _blank_runs(self, carry: int, p: PState) -> frozenset[int]:
        """Blank bytes that :meth:`_chunks` does not run a newline lexeme on by (at bracket
        depth 0, where its pads are moves): a space and a ``\\r`` only ever make a width the
        pads reach or a line a fresh ``\\n`` starts (run on too), and each is a state of its
        own (another carry) that the estimate prices like the rest, so one blank at a time
        flooded a search of a few states with the widths of one line and ``\\r``/``\\t``
        mixes (``1`` then ``"\\nif:\\n"`` before the suffix ``" 1\\n"``: 16 states of blanks,
        no plan). A tab stays where tabs indent here (the pads spell spaces only)."""
        tabs = (carry >= TAB_UNIT or self.lead >= TAB_UNIT
                or any(e >= TAB_UNIT for e in p[INDENT])
                or any(w >= TAB_UNIT for w in self.suffix_widths))
        return _BLANKS if tabs else _BLANKS | {9}

    def set_suffix(self, suffix: bytes,
                   stacks: frozenset[BoundaryStack] = frozenset(),
                   ) -> None:
        """Fill-in-the-middle: what the fallback search tries for this suffix (see
        ``openers`` and ``lead``): lexeme starts of one or two printable bytes after which
        the suffix's first line (up to 48 bytes) is read without ending the lexeme. The
        indentation ``stacks`` it needs at the boundary (its branches' assumptions) order
        the search (:class:`SearchEstimate`), and their widths (without them, its lines'
        widths) are where the search's newlines open blocks besides the usual ones."""
        head = suffix.split(b"\n", 1)[0][:48]
        lead = 0
        for b in suffix:
            if b not in (32, 9):
                break
            lead = advance(lead, b)
        self.lead = lead if lead < BROKEN else 0
        self.suffix_widths = tuple(sorted(
            {w for below, w1, _, _ in stacks for w in (*below, w1) if w is not None}
            if stacks else _line_widths(suffix)))
        self.estimate.for_suffix(stacks, self.suffix_widths)
        if not head:
            return
        trans = self.lex.trans
        one = np.arange(33, 127, dtype=np.int64)
        s1 = trans[0, one]
        s2 = np.where(s1[:, None] >= 0, trans[np.maximum(s1, 0)[:, None], one[None, :]], -1)
        cands = [bytes([int(x)]) for x in one] + [bytes([int(x), int(y)]) for x in one
                                                   for y in one]
        st = np.concatenate([s1, s2.ravel()])
        for x in head:
            st = np.where(st >= 0, trans[np.maximum(st, 0), x], -1)
        alive = [c for c, q in zip(cands, st.tolist(), strict=True) if q >= 0]
        # the shortest ones only (a one-byte opener makes its two-byte extensions moot)
        ones = {c for c in alive if len(c) == 1}
        self.openers = sorted((c for c in alive if len(c) == 1 or c[:1] not in ones),
                              key=lambda c: (len(c), c))[:8]

def cheapest_steps(search: PlanSearch, st: S, walk: Walk[S], view: View[S], k: int
                   ) -> list[tuple[bytes, S]]:
    """The ``k`` chunks of :meth:`PlanSearch.search_text` from ``st`` that rank cheapest
    (tokens of the chunk + the bound from where it leads, as the search orders them; ties by
    the order of :meth:`PlanSearch._chunks`), each with the state its walk reaches: the first
    steps of a short detour (an operand after ``>=``, the ``)`` after ``(t``) before a route
    known to end is rejoined.

    The bound from a chunk's state (``state_cost``) is what a state's ranking costs; it is
    never below 0, so the chunks are taken by their own tokens first and the bound is asked
    only while a chunk's tokens alone could still rank among the ``k`` cheapest (the same
    ``k`` chunks as ranking them all). Memoised per state (and ``walk``'s function: the
    states are the constraint's own)."""
    here = view(st)
    key = (getattr(walk, "__func__", walk), k, memo_key(here[0], here[1], st))
    known = search._cheapest.get(key)
    if known is not None:
        return cast("list[tuple[bytes, S]]", list(known))
    costs = search.costs
    by_tokens = sorted((search.tok.count(chunk), i, chunk)
                       for i, chunk in enumerate(search._chunks(*here)))
    best: list[tuple[int, int, bytes, S]] = []  # (rank, order, chunk, state), the k cheapest
    for c, i, chunk in by_tokens:
        if c >= INF or (len(best) >= k and c > best[-1][0]):
            break  # this chunk and all after it rank behind the k kept (bounds are >= 0)
        nst = walk(st, chunk)
        if isinstance(nst, int):
            continue
        rank = c + min(costs.state_cost(*view(nst)), _SEARCH_H_CAP)
        if len(best) < k or (rank, i) < best[-1][:2]:
            best.append((rank, i, chunk, nst))
            best.sort(key=lambda e: (e[0], e[1]))
            del best[k:]
    out = [(chunk, nst) for _, _, chunk, nst in best]
    search._cheapest.put(key, tuple(out))
    return out


def _moves(search: PlanSearch, st: S, here: tuple[int, int, PState], walk: Walk[S],
           view: View[S], costs: StateCosts) -> Iterator[tuple[bytes, S, int, int]]:
    """The chunks :meth:`PlanSearch.search_text` tries from ``st`` (whose view is ``here``)
    that walk and spell: (chunk, the state it reaches, its tokens, ``costs``' bound from
    there, capped as the search caps it)."""
    for chunk in search._chunks(*here):
        nst = walk(st, chunk)
        if isinstance(nst, int):
            continue
        c = search.tok.count(chunk)
        if c >= INF:
            continue
        yield chunk, nst, c, min(costs.state_cost(*view(nst)), _SEARCH_H_CAP)


def _line_widths(suffix: bytes, most: int = 8) -> set[int]:
    """The indentation widths of the suffix's lines after its first (blank lines left out),
    the first ``most`` distinct ones: a block the middle opens and the suffix continues is
    at one of them (where the branches do not say which, see ``set_suffix``)."""
    out: set[int] = set()
    for line in suffix.split(b"\n")[1:]:
        body = line.lstrip(b" \t")
        if body.strip():
            w = text_carry(line[:len(line) - len(body)])
            if w < BROKEN:
                out.add(w)
                if len(out) >= most:
                    break
    return out
