"""Step grouping for budgets: a step's grammar-allowed tokens grouped by the runtime state
they lead to, so that one bound (or one plan) decides a whole group.

A token's state after a step is (parser state after the lexemes it completes, lexer state it
leaves the lexer in); the first comes from the mask's row trie (:func:`walk_row_trie`), the
second from a vectorised walk of the vocabulary's byte matrix (:class:`TokenMatrix`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..core.indentation import FORMFEED, NEWLINE, TAB_UNIT, text_carry
from ..core.masks import walk_row_trie
from ..core.parse_state import PUID
from ..limits import memo_size
from ..memo import BoundedMemo

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..core.masks import _TrieRow as TrieRow
    from ..core.parse_state import PState
    from .state_costs import StateCosts

__all__ = ["StepGrouping", "StepUnits", "TokenGroups", "TokenMatrix", "token_widths_of"]


class TokenGroups(NamedTuple):
    """What :meth:`StepGrouping.token_groups` knows per token: ``group``: tokens of one
    group lead to the same runtime state (:meth:`state`; -1 where the indentation carry is
    not known)."""

    group: np.ndarray
    vertices: list[PState]  # parser states after the tokens' completed lexemes
    num_states: int  # lexer states: group = vertex index × num_states + lexer state
    # the group of every token, also where ``group`` is -1 (the carry is not known)
    raw: np.ndarray
    # the vertex index of tokens that complete no lexeme (``stay``), and of those that end
    # the lexeme in progress at their first byte and complete no other (``killed``); -1: none
    stay: int = -1
    killed: int = -1

    def state(self, g: int) -> tuple[int, int, PState]:
        """The runtime state (lexer state, carry 0, parser state) of group ``g``."""
        return g % self.num_states, 0, self.vertices[g // self.num_states]


class StepUnits(NamedTuple):
    """One step's grammar-allowed tokens in groups that lead to the same runtime state
    (:meth:`StepGrouping.step_units`): per group its id (as :class:`TokenGroups` numbers
    them), bound, lexer state and parser state (``vertices[vertex[i]]``)."""

    gids: np.ndarray
    costs: np.ndarray
    finals: np.ndarray
    vertices: list[PState]
    vertex: np.ndarray
    parts: list[tuple[RowFinals, np.ndarray]]  # per group: its row and its sorted runs
    sizes: np.ndarray  # per group: how many tokens it holds
    nl_live: np.ndarray  # per lexer state: a newline lexeme whose width is still open
    # per group: its bound is loose (:meth:`StateCosts.loose_costs`; None: none is); a
    # group whose loose bound is over what is left gets the exact one (:meth:`settle`)
    loose: np.ndarray | None = None

    def settle(self, costs: StateCosts, over: np.ndarray) -> None:
        """Make the bounds of the groups where ``over`` holds exact (in place: the units
        are memoised, and an exact bound is at most the loose one it replaces)."""
        if self.loose is None:
            return
        for i in np.flatnonzero(over & self.loose).tolist():
            self.costs[i] = costs.settle(self.vertices[int(self.vertex[i])],
                                         int(self.finals[i]), int(self.costs[i]))
            self.loose[i] = False  # (after the bound: a reader never sees a loose one as exact)

    def tokens(self, groups: list[int]) -> np.ndarray:
        """The token ids of ``groups`` (one gather per row)."""
        by_row: dict[int, tuple[RowFinals, list[np.ndarray]]] = {}
        for i in groups:
            rf, runs = self.parts[i]
            by_row.setdefault(id(rf), (rf, []))[1].append(runs)
        out = [rf.tokens_of(np.concatenate(rs)) for rf, rs in by_row.values()]
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def state(self, i: int) -> tuple[int, int, PState]:
        """The runtime state (lexer state, carry 0, parser state) group ``i`` leads to."""
        return int(self.finals[i]), 0, self.vertices[int(self.vertex[i])]


class RowFinals:
    """A row's tokens sorted by (node, lexer state they leave the lexer in), so that the
    tokens of a trie vertex's nodes can be grouped by final state without touching each
    token: ``vertex(pos)`` gives the distinct final states and, per state, the sorted runs
    that hold its tokens."""

    __slots__ = ("_memo", "hi", "keys", "lo", "num_states", "restrict", "row", "runs",
                 "sorted_tokens")

    def __init__(self, row: TrieRow, restrict: np.ndarray | None, finals: np.ndarray,
                 num_states: int) -> None:
        self.row = row
        self.restrict = restrict
        self.num_states = S = num_states
        toks = row.tokens
        node = np.repeat(np.arange(row.n, dtype=np.int64), row.counts)
        if restrict is not None:
            keep = restrict[toks]
            toks, node = toks[keep], node[keep]
        key = node * S + np.maximum(finals[toks], 0)
        order = np.argsort(key, kind="stable")
        self.sorted_tokens = toks[order].astype(np.int32)  # kept per row: half the bytes
        sk = key[order]
        cut = np.flatnonzero(np.diff(sk)) + 1 if sk.size else np.zeros(0, np.int64)
        starts = np.concatenate(([0], cut)).astype(np.int64) if sk.size else cut
        self.keys = sk[starts]  # one per run: node × S + final state
        self.runs = np.append(starts, sk.size).astype(np.int64)
        nodes = np.arange(row.n + 1, dtype=np.int64) * S
        bounds = np.searchsorted(self.keys, nodes)
        self.lo, self.hi = bounds[:-1], bounds[1:]
        self._memo: dict[tuple[int, bytes], tuple[np.ndarray, list[np.ndarray], np.ndarray]] = {}

    def vertex(self, v: int, ok: np.ndarray,
               ) -> tuple[np.ndarray, list[np.ndarray], np.ndarray]:
        """(distinct final states, per state its run indices, per state its token count) of
        the tokens of the nodes that end at trie vertex ``v`` where ``ok`` holds."""
        k = (v, ok.tobytes())
        r = self._memo.get(k)
        if r is not None:
            return r
        lo, hi = self.row.spans[v]
        pos = self.row.order[lo:hi][ok]
        idx = _ranges(self.lo[pos], self.hi[pos] - self.lo[pos])
        f = self.keys[idx] % self.num_states
        order = np.argsort(f, kind="stable")
        fs = f[order]
        cut = np.flatnonzero(np.diff(fs)) + 1
        first = np.concatenate(([0], cut)).astype(np.int64) if fs.size else cut
        fu = fs[first]
        lens = self.runs[idx + 1] - self.runs[idx]
        sz = np.add.reduceat(lens[order], first) if fs.size else lens
        r = fu, (np.split(idx[order], cut) if fs.size else []), sz.astype(np.int64)
        if len(self._memo) < 1 << 14:
            self._memo[k] = r
        return r

    def tokens_of(self, runs: np.ndarray) -> np.ndarray:
        """The token ids in ``runs``."""
        lo: np.ndarray = self.runs[runs]
        out: np.ndarray = self.sorted_tokens[_ranges(lo, self.runs[runs + 1] - lo)]
        return out


class TokenMatrix:
    """The vocabulary as a zero-padded byte matrix, its tokens' indentation widths, and per
    lexer state the state each token leaves the lexer in (one per lexer and vocabulary:
    a fill-in-the-middle planner shares its parent's)."""

    def __init__(self, mb: MaskBuilder, vocab: Vocabulary, trans: np.ndarray,
                 tab_len: int) -> None:
        self.vocab = vocab
        self.trans = trans
        self.tab = tab_len
        self.vocab_size = mb.vocab_size
        self._tok_bytes: np.ndarray | None = None  # (V, longest) token bytes, zero-padded
        self._tok_lens: np.ndarray | None = None
        self._widths: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        # per lexer state: (final states, the tokens they were asked for; None: all)
        self._finals: BoundedMemo[int, tuple[np.ndarray, np.ndarray | None]] = BoundedMemo(
            memo_size(mb.limits.row_cache))
        self._columns: tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray] | None = None

    def matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """(the (V, longest) zero-padded byte matrix, per token its length), built once."""
        mat, lens = self._tok_bytes, self._tok_lens  # read once: threads may build it too
        if mat is None or lens is None:
            tb = self.vocab.flat_bytes  # (the vocabulary's one flat copy of its bytes)
            lens = tb.lens
            width = int(lens.max(initial=1))
            mat = np.zeros((lens.size, width), dtype=np.uint8)
            rows = np.repeat(np.arange(lens.size), lens)
            cols = np.arange(tb.flat.size) - np.repeat(tb.start, lens)
            mat[rows, cols] = tb.flat
            self._tok_bytes, self._tok_lens = mat, lens
        return mat, lens

    def final_states(self, q: int, tokens: np.ndarray | None = None) -> np.ndarray:
        """The lexer state each of ``tokens`` (None: every token) leaves the lexer in from
        ``q`` (greedy: a byte that kills the lexeme starts the next one; -1: one kills the
        next lexeme too; -1 too for a token not asked), vectorised over the tokens.
        Memoised per lexer state (the tables keep only a token's lexeme class; budgets need
        the state); a row asks for its own tokens, the same every time."""
        r = self._finals.get(q)
        if r is not None and (r[1] is None or r[1] is tokens or (
                tokens is not None and np.array_equal(r[1], tokens))):
            return r[0]
        out = self._walk_tokens(q, tokens)
        self._finals.put(q, (out, tokens))
        return out

    def _walk_columns(self) -> tuple[np.ndarray, list[np.ndarray], np.ndarray, np.ndarray]:
        """(the tokens longest first, per byte position j the j-th bytes of those longer
        than j as one contiguous array, the greedy step table: ``step[s * 256 + b]`` is the
        state after byte ``b`` in state ``s``, a dead lexeme restarted from state 0, and the
        extra state ``S`` a sink for a byte no lexeme starts with; per token its place in
        the first). Built once: a walk
        then reads each column in order instead of gathering one byte from each token's
        row of the byte matrix (a row's walk took ~20 ms for 129k tokens)."""
        r = self._columns
        if r is None:
            mat, lens = self.matrix()
            order = np.argsort(-lens, kind="stable")
            olens = lens[order]
            longest = int(olens[0]) if order.size else 0
            cols = []
            for j in range(longest):
                n = int(np.searchsorted(-olens, -j, side="left"))  # tokens longer than j
                cols.append(np.ascontiguousarray(mat[order[:n], j]).astype(np.int64))
            trans = np.asarray(self.trans, dtype=np.int64)
            S = trans.shape[0]
            step = np.where(trans >= 0, trans, trans[0][None, :])
            step = np.where(step >= 0, step, S)
            step = np.concatenate([step, np.full((1, step.shape[1]), S, np.int64)])
            if step.shape[1] < 256:  # (a table over fewer byte values: the rest are dead)
                step = np.concatenate(
                    [step, np.full((S + 1, 256 - step.shape[1]), S, np.int64)], axis=1)
            rank = np.empty(order.size, dtype=np.int64)
            rank[order] = np.arange(order.size)
            r = self._columns = (order, cols, step.reshape(-1), rank)
        return r

    def _walk_tokens(self, q: int, tokens: np.ndarray | None) -> np.ndarray:
        order, cols, step, rank = self._walk_columns()
        # the tokens' places in ``order`` (longest first): those longer than j are then a
        # prefix of them, and each column is read at increasing places
        pos = np.arange(order.size) if tokens is None else np.sort(rank[tokens])
        state = np.full(pos.size, q, dtype=np.int64)
        for col in cols:
            n = int(np.searchsorted(pos, col.size))  # (pos sorted: those longer than j)
            if not n:
                break
            state[:n] = step[state[:n] * 256 + col[pos[:n]]]
        S = step.size // 256 - 1
        out = np.full(self.vocab_size, -1, dtype=np.int32)  # per row, kept: half the bytes
        out[order[pos]] = np.where(state == S, -1, state)
        return out

    def token_widths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per token: (holds a newline, width of the bytes after its last newline, width of
        all its bytes) — the indentation carry it leaves (see :mod:`.lexing`). Built once,
        a column of the byte matrix at a time (the first budgeted request of a process
        paid ~0.4 s for a loop over the tokens); :func:`token_widths_of` is the same per
        token."""
        r = self._widths
        if r is None:
            mat, _ = self.matrix()
            has = (mat == NEWLINE).any(axis=1)
            # the carry after the last reset (a newline or form feed): a tab there makes it
            # TAB_UNIT or more (BROKEN after a space), so the capped width is TAB_UNIT; else
            # it counts the spaces (padding and other bytes leave it alone)
            reset = (mat == NEWLINE) | (mat == FORMFEED)
            width = mat.shape[1]
            last = np.where(reset.any(axis=1), width - 1 - reset[:, ::-1].argmax(axis=1), -1)
            tail = np.arange(width)[None, :] > last[:, None]
            after = np.where(((mat == 9) & tail).any(axis=1), TAB_UNIT,
                             np.minimum(((mat == 32) & tail).sum(axis=1), TAB_UNIT))
            # a tab or form feed does not add to a carry: at least TAB_UNIT, which tells the
            # caller to walk the token
            total = np.where(((mat == 9) | (mat == FORMFEED)).any(axis=1), TAB_UNIT,
                             (mat == 32).sum(axis=1)).astype(np.int64)
            r = self._widths = (has, after, total)
        return r


class StepGrouping:
    """One step's tokens grouped by the runtime state they lead to (:class:`TokenGroups`
    per token, :class:`StepUnits` per group with each group's bound)."""

    def __init__(self, mb: MaskBuilder, costs: StateCosts, tokens: TokenMatrix) -> None:
        self.mb = mb
        self.ctx = mb.ctx
        self.costs = costs
        self.tokens = tokens
        self.num_states = mb.dfa.num_states
        nl = mb.nl_live
        self._nl_live = np.array(nl if nl is not None else [False] * mb.dfa.num_states, bool)
        lim = mb.limits
        self._vec: BoundedMemo[tuple[int, int, int], TokenGroups] = BoundedMemo(
            memo_size(lim.mask_cache)
        )
        self._units: BoundedMemo[tuple[int, int, int], StepUnits] = BoundedMemo(
            memo_size(lim.mask_cache))
        self._rfinals: BoundedMemo[tuple[int, int | None], RowFinals] = BoundedMemo(
            memo_size(lim.row_cache))

    def token_groups(self, p: PState, q: int, carry: int) -> TokenGroups:
        """Per token, the runtime state it leads to, as vocabulary-sized group vectors (for
        fill-in-the-middle budgets, which tell tokens apart by their indentation carry too;
        :meth:`step_units` is the same grouping without per-token vectors). Only meaningful
        where the grammar mask allows the token. Memoised."""
        mb = self.mb
        ckey = (p[PUID], q, carry if mb.nl_live is not None and mb.nl_live[q] else 0)
        r = self._vec.get(ckey)
        if r is not None:
            return r
        gid = np.full(mb.vocab_size, -1, dtype=np.int64)
        raw = np.full(mb.vocab_size, -1, dtype=np.int64)
        killed = -1
        vertices: list[PState] = []
        row = mb.row(q)
        finals = self.tokens.final_states(q, row.tokens)
        starts = np.concatenate(([0], np.cumsum(row.counts)[:-1]))
        nl_live = self._nl_live

        S = self.num_states

        def settle(pp: PState, pos: np.ndarray) -> None:
            if not pos.size:
                return
            toks = row.tokens[_ranges(starts[pos], row.counts[pos])]
            f = np.maximum(finals[toks], 0)
            g = len(vertices) * S + f  # group: (parser state after the token, lexer state)
            raw[toks] = g
            gid[toks] = np.where(nl_live[f], -1, g)  # a newline's width is not known here
            vertices.append(pp)

        lo, hi = row.spans[0]
        stay = len(vertices) if lo < hi else -1

        def at(p2: PState, v: int) -> None:
            lo, hi = row.spans[v]
            settle(p2, row.order[lo:hi])

        walk_row_trie(self.ctx, mb.num_terminals, p, row, at, carry)
        if q != 0:
            p2 = mb.lexeme_end(p, q, carry)
            if p2 is not None:
                kill = mb.kill_set(q)
                sub = self.token_groups(p2, 0, 0)
                shift = len(vertices) * S
                gid[kill] = np.where(sub.group[kill] >= 0, sub.group[kill] + shift, -1)
                raw[kill] = np.where(sub.raw[kill] >= 0, sub.raw[kill] + shift, -1)
                killed = len(vertices) + sub.stay if sub.stay >= 0 else -1
                vertices.extend(sub.vertices)
        r = TokenGroups(gid, vertices, S, raw, stay, killed)
        self._vec.put(ckey, r)
        return r

    def step_units(self, p: PState, q: int, carry: int) -> StepUnits:
        """The grammar-allowed tokens at (q, carry, p) grouped by the runtime state they lead
        to, each group with its bound (per token: the bound of the state it leads to; loose
        where not asked yet whether the input may end there, see :meth:`StepUnits.settle`),
        without vocabulary-sized vectors. A step where every group fits the budget (most steps, see
        the README) then costs the trie walk and the groups' bounds, and no token's entry;
        the tokens of a group are gathered only where the budget cuts it. Memoised."""
        mb = self.mb
        key = (p[PUID], q, carry if mb.nl_live is not None and mb.nl_live[q] else 0)
        r = self._units.get(key)
        if r is not None:
            return r
        gids: list[np.ndarray] = []
        costs: list[np.ndarray] = []
        loose: list[np.ndarray] = []
        finals: list[np.ndarray] = []
        parts: list[tuple[RowFinals, np.ndarray]] = []
        sizes: list[np.ndarray] = []
        verts: list[PState] = []
        unit_vertex: list[int] = []
        S = self.num_states
        nv = 0  # vertex index as token_groups counts them (its groups' ids)

        def visit(rf: RowFinals, pp: PState, v: int) -> None:
            nonlocal nv
            lo, hi = rf.row.spans[v]
            if lo == hi:
                return
            fu, ks, sz = rf.vertex(v, self.mb.class_vector(pp)[rf.row.cls[lo:hi]])
            if fu.size:
                gids.append(nv * S + fu)
                c, lz = self.costs.loose_costs(pp, fu)
                costs.append(c)
                loose.append(lz if lz is not None else np.zeros(fu.size, bool))
                finals.append(fu)
                sizes.append(sz)
                parts.extend((rf, k) for k in ks)
                unit_vertex.extend([len(verts)] * fu.size)
                verts.append(pp)
            nv += 1

        row = mb.row(q)
        rf = self._row_finals(q, row, None)
        walk_row_trie(self.ctx, mb.num_terminals, p, row,
                      lambda p2, v: visit(rf, p2, v), carry)
        if q != 0:
            p2 = mb.lexeme_end(p, q, carry)
            if p2 is not None:
                row0 = mb.row(0)
                rk = self._row_finals(0, row0, mb.kill_set(q))
                walk_row_trie(self.ctx, mb.num_terminals, p2, row0,
                              lambda p3, v: visit(rk, p3, v), 0)
        lz = np.concatenate(loose) if loose else np.zeros(0, bool)
        r = StepUnits(_cat(gids), _cat(costs), _cat(finals), verts,
                      np.array(unit_vertex, dtype=np.int64), parts, _cat(sizes), self._nl_live,
                      lz if lz.any() else None)
        self._units.put(key, r)
        return r

    def _row_finals(self, q: int, row: TrieRow, restrict: np.ndarray | None) -> RowFinals:
        """Row ``q``'s tokens sorted by (node, final lexer state), restricted to the tokens
        where ``restrict`` is True (a kill set). Memoised per row object and restriction."""
        key = (q, None if restrict is None else id(restrict))
        r = self._rfinals.get(key)
        if r is not None and r.row is row and r.restrict is restrict:
            return r
        f = self.tokens.final_states(q, row.tokens)
        r = RowFinals(row, restrict, f, self.num_states)
        self._rfinals.put(key, r)
        return r



def _cat(xs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(xs) if xs else np.zeros(0, np.int64)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + c)`` for each pair (vectorised)."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return offs + np.arange(total)


def token_widths_of(t: bytes) -> tuple[bool, int, int]:
    """:meth:`TokenMatrix.token_widths` of one token, as a loop reads it (the reference the
    vectorised version is tested against)."""
    after = min(text_carry(t[t.rfind(b"\n") + 1:]), TAB_UNIT)
    total = t.count(b" ") if b"\t" not in t and b"\f" not in t else TAB_UNIT
    return b"\n" in t, after, total
