"""Budget plans: concrete shortest completions, found by following the bounds' choices
(:meth:`PlanSearch.completion_text`) or, where that fails, by a best-first search over the
chunks those choices are made among (:meth:`PlanSearch.search_text`); every plan is walked
with the constraint's own ``walk`` and ``complete`` before it is returned.

With a suffix (fill-in-the-middle) the search also knows the suffix's lexeme starts
(``openers``), its leading blanks (``lead``), and a ``strict`` planner to fall back on.
"""

from __future__ import annotations

import contextlib
import heapq
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import numpy as np

from ...errors import NoCompletionError
from ..core.earley import EXPECTED
from ..core.indentation import BROKEN, TAB_UNIT, advance, indent_text, space_pad, text_carry
from ..core.parse_state import DEPTH, ES, INDENT, PUID
from ..limits import memo_size
from ..memo import BoundedMemo
from .runstate import Complete, LexState, RunState, View, Walk
from .spelling import INF
from .state_costs import SearchEstimate, StateCosts

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .lexeme_costs import LexemeCosts
    from .spelling import TokenCounter
    from .state_costs import BoundaryStack, StateCosts

__all__ = ["SEARCH_NODES", "PlanSearch", "Planner", "cheapest_steps"]

_MAX_PLAN_LEXEMES = 256  # a longer shortest completion is not looked for
SEARCH_NODES = 4000  # states a plan's fallback search expands (see PlanSearch.search_text)
_SEARCH_H_CAP = 64  # an INF estimate still orders its state (last), it does not drop it
_NO_PLAN = "gramask found no completion of this state that the vocabulary can spell"
_PADS = (*(b" " * i for i in range(1, 17)), b"\t")

S = TypeVar("S", bound=RunState)


class Planner(Protocol):
    """What plans a completion (a ``strict`` fallback planner)."""

    def plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None = None,
             search: int = SEARCH_NODES, escalate: bool = False) -> tuple[int, ...]: ...


class PlanSearch:
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
        self._strict: Planner | None = None
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
        # bytes from each lexer state to one where the lexeme is an ignored terminal
        acc = lex.accept
        self._ignored_end = lex.distances_to((acc >= 0) & lex.ignored[np.maximum(acc, 0)])
        nl = mb.nl_live
        self._nl_live = np.array(nl if nl is not None else [False] * mb.dfa.num_states, bool)
        lim = mb.limits
        self._failed: BoundedMemo[tuple[int, ...], int] = BoundedMemo(memo_size(lim.mask_cache))
        # (parser uid, lexer state before) → the cheapest next lexeme (plans from sibling
        # states mostly end the same way: their tails hit this)
        self._next: BoundedMemo[tuple[int, int], tuple[bytes | None, int]] = BoundedMemo(
            memo_size(lim.mask_cache))
        self._plans: BoundedMemo[tuple[int, ...], tuple[int, ...]] = BoundedMemo(
            memo_size(lim.mask_cache)
        )
        # (walk's function, k, state key) → :func:`cheapest_steps`' chunks and their states
        self._cheapest: BoundedMemo[tuple[object, int, tuple[int, ...]],
                                    tuple[tuple[bytes, RunState], ...]] = BoundedMemo(
            memo_size(lim.mask_cache))

    def plan(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None = None,
             search: int = SEARCH_NODES, escalate: bool = False) -> tuple[int, ...]:
        """Token ids of a shortest completion from runtime state ``st``, checked by walking
        them (``walk``/``complete`` are the constraint's own; ``view(st)`` gives its lexer
        state, carry and parser state, for constraints with wider states). Memoised. Where
        following the bounds' choices fails (fill-in-the-middle: the quotient's costs can be
        optimistic), a best-first search of up to ``search`` states looks further; then, for
        a full search (``search`` ≥ ``SEARCH_NODES``) or with ``escalate`` (a token's check
        searching again), the ``strict`` planner, if any — which from then on is tried
        first (these costs led nowhere with this suffix).

        Raises
        ------
        NoCompletionError
            No completion was found (the vocabulary cannot spell one, or the search did not
            reach one).
        """
        view = view or _plain_view
        q, carry, _ = view(st)
        key = _memo_key(q, carry, st)
        r = self._plans.get(key)
        if r is not None:
            return r
        failed = self._failed.get(key)
        if failed is not None and failed >= search:
            raise NoCompletionError(_NO_PLAN)
        ids = None
        full = search >= SEARCH_NODES  # a step's own plan, not a token's check
        sp = self._strict
        if sp is not None:
            # these costs once led nowhere with this suffix: the strict planner leads
            with contextlib.suppress(NoCompletionError):
                ids = sp.plan(st, walk, complete, view, search)
        if ids is None and (sp is None or full):
            ids = self._checked(st, self.completion_text(st, walk, complete, view), walk,
                                complete)
            if ids is None and search > 0:
                text = self.search_text(st, walk, complete, view, search)
                ids = self._checked(st, text, walk, complete)
        if ids is None and sp is None and self.strict is not None and (full or escalate):
            # the strict planner's costs, where these were too optimistic to lead anywhere
            self._strict = sp = self.strict()
            with contextlib.suppress(NoCompletionError):
                ids = sp.plan(st, walk, complete, view, search)
        if ids is None:
            self._failed.put(key, search)
            raise NoCompletionError(_NO_PLAN)
        self._plans.put(key, ids)
        return ids

    def _checked(self, st: S, text: bytes | None, walk: Walk[S], complete: Complete[S],
                 ) -> tuple[int, ...] | None:
        """``text`` as the fewest tokens, if walking them from ``st`` ends complete."""
        ids = self.tok.tokenize(text) if text is not None else None
        if ids is None:
            return None
        cur = st
        for i in ids:
            nxt = walk(cur, self.vocab.token_bytes(i))
            if isinstance(nxt, int):
                return None
            cur = nxt
        return ids if complete(cur) else None

    def search_text(self, st: S, walk: Walk[S], complete: Complete[S], view: View[S] | None,
                    limit: int,
                    ) -> bytes | None:
        """Best-first search for bytes that complete the input from ``st``: a state's
        children are the chunks the greedy planner chooses among (the lexeme in progress
        finished as each terminal, each expected next lexeme glued on, newlines at the open
        levels, the suffix's boundary lexemes, indentation pads), walked exactly; the order
        is tokens so far + the bound from the child (an estimate here, not a promise). At
        most ``limit`` states are expanded; None if no completion is found."""
        view = view or _plain_view
        est = self.estimate
        est.mirror(self.costs)
        tick = 0
        heap: list[tuple[int, int, int, bytes, S]] = [(0, 0, 0, b"", st)]
        seen: set[tuple[int, ...]] = set()
        for _ in range(limit):
            if not heap:
                return None
            _, ng, _, text, cur = heapq.heappop(heap)
            g = -ng
            q, carry, p = view(cur)
            key = _memo_key(q, carry, cur)
            if key in seen:
                continue
            seen.add(key)
            if complete(cur):
                return text
            for chunk, nst, c, h in _moves(self, cur, (q, carry, p), walk, view, est):
                tick += 1
                heapq.heappush(heap, (g + c + h, -g - c, tick, text + chunk, nst))
        return None

    def _chunks(self, q: int, carry: int, p: PState) -> list[bytes]:
        """The byte strings :meth:`search_text` tries from (q, carry, p), deterministic."""
        lex = self.lex
        out: list[bytes] = []
        if q != 0:
            for t, _f in lex.fin_list[q]:
                w = lex.witness(q, t)
                if w:
                    out.append(w)
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
                if p2[DEPTH] > 0 or (q and lex.trans[q, 10] >= 0):
                    continue
                if not self.has_indent:
                    if (exp >> t) & 1:
                        out.append(b"\n")
                    continue
                top = p2[INDENT][-1] if p2[INDENT] else 0
                lead = self.lead
                deeper = (w for w in self.suffix_widths if w > top)
                for width in sorted({*p2[INDENT], top + 1, top + 4, *deeper}):
                    out.append(b"\n" + indent_text(width))
                    if 0 < lead <= width and lead % TAB_UNIT <= width % TAB_UNIT:
                        out.append(b"\n" + indent_text(width - lead))
                continue
            if lex.ignored[t] or not (exp >> t) & 1:
                continue
            glued = lex.glue(q, t)
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

    def completion_text(self, st: S, walk: Walk[S], complete: Complete[S],
                        view: View[S] | None = None,
                        ) -> bytes | None:
        """Bytes that complete the input from runtime state ``st``, following the bounds'
        choices (see :meth:`plan` for the arguments); None if that fails."""
        view = view or _plain_view
        mb = self.mb
        lex = self.lex
        out = bytearray()
        last = INF + 1
        for _ in range(_MAX_PLAN_LEXEMES):
            q, carry, p = view(st)
            if complete(st):
                return bytes(out)
            if q != 0 and self.markers and self._nl_live[q]:
                # fill-in-the-middle: the suffix may continue this newline lexeme (its
                # indentation): a few spaces more may be all the middle needs
                for pad in _PADS:
                    nst = walk(st, pad)
                    if not isinstance(nst, int) and complete(nst):
                        return bytes(out + pad)
            if q != 0:
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
                if choice < 0:
                    return None
                w = lex.witness(q, choice)
                if choice == self.nl_t:
                    now = text_carry(w, carry)
                    w += self._nl_pad(p, now)
                if w:
                    nst = walk(st, w)
                    if isinstance(nst, int):
                        return None
                    out += w
                    st = nst
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
            nst = walk(st, nxt)
            if isinstance(nst, int):
                return None
            out += nxt
            st = nst
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
    key = (getattr(walk, "__func__", walk), k, _memo_key(here[0], here[1], st))
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


def _plain_view(st: RunState) -> LexState:
    return st[0], st[1], st[2]


def _memo_key(q: int, carry: int, st: RunState) -> tuple[int, ...]:
    """A runtime state as a memo key: the view's lexer state and carry, then the rest of the
    state (parser states by their uid; a contextual fill-in-the-middle state also holds the
    original side's lexer state and carry, plain ints)."""
    return (q, carry, *(x if isinstance(x, int) else x[PUID] for x in st[2:]))
