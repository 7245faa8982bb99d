"""Fill-in-the-middle: can a lexeme in progress still be the one the suffix continues?

A boundary marker of the quotient (:mod:`gramask.runtime.fim.quotient`) stands for the middle's
last lexeme continued into ``S[:k]`` and ended there as terminal ``a``, then the rest of the
suffix. That a lexeme in progress can still become ``a`` is not enough for it to be that
lexeme: it must also be able to take ``S[:k]``. After ``--`` with the suffix ``>``
(terminals ``-`` and ``->``), the token ``>`` makes the lexeme ``->``, which no continuation
joins to the suffix's ``>``: allowing it would leave an empty mask next.

Per marker, setup computes the lexer states from which ``S[:k]`` ends the lexeme as ``a``
(one forward walk of ``S`` from every lexer state at once serves every ``k``), and every
state that can reach one of them (backwards over the lexer DFA): a lexeme in progress at any
other state cannot be the boundary lexeme. Masks then decide per end class: allowed without
the boundary terminals, or every state of the class reaches a marker's set (allowed), or
none does (refused), or some do: then each of the class's tokens is checked by its own final
lexer state (a walk of its bytes, memoised per row and outcome node, shared by requests).
In the contextual mode only tokens whose last lexeme starts at their first byte (or before)
get that per-token check: elsewhere the tables do not say where the allowed sets end lexemes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ...compiler.table_rows import select_tokens
from ...encoding import words_of_bits
from ..core.contextual_lexer import ContextualLexer
from ..core.earley import EXPECTED
from ..core.masks import MaskBuilder, walk_row_trie
from ..core.parse_state import ES, PUID, ParserContext, PState
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo
from .suffix_lexing import Branch

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.contextual_rule import ContextualRule

__all__ = ["BoundaryContextualLexer", "BoundaryFilter", "BoundaryMaskBuilder", "boundary_filter",
           "reach_sets", "with_boundary"]

MAX_CODES = 120  # distinct reach sets a request may name in int8 verdicts (then: allowed)


def _preds(ob: MaskBuilder) -> list[list[int]]:
    """Per lexer state, the distinct states with a transition into it (once per grammar)."""
    r: list[list[int]] | None = getattr(ob, "_boundary_preds", None)
    if r is None:
        rows = ob.trans_rows
        r = [[] for _ in range(len(rows))]
        for s in range(len(rows)):
            for d in set(rows[s]):
                if d >= 0:
                    r[d].append(s)
        ob._boundary_preds = r  # type: ignore[attr-defined]
    return r


def reach_sets(ob: MaskBuilder, suffix: bytes, wanted: list[tuple[int, int]],
               ends_as: Callable[[np.ndarray, int], np.ndarray], kill: bool
               ) -> dict[tuple[int, int], np.ndarray]:
    """Per (k, a): the lexer states (bool, shape (S,)) from which some continuation and then
    ``suffix[:k]`` keep one lexeme going and end it there as ``a`` (``ends_as(states, a)``;
    with ``kill``, ``suffix[k]`` must also kill it, as greedy lexing requires)."""
    trans = ob.trans
    n_states = trans.shape[0]
    preds = _preds(ob)
    out: dict[tuple[int, int], np.ndarray] = {}
    idx = np.arange(1, n_states, dtype=np.int64)  # origins still alive
    cur = idx.copy()  # where each is after suffix[:pos]
    pos = 0
    n = len(suffix)
    for k in sorted({k for k, _ in wanted}):
        while pos < k and idx.size:
            nxt = trans[cur, suffix[pos]]
            alive = nxt >= 0
            idx, cur = idx[alive], nxt[alive].astype(np.int64)
            pos += 1
        for kk, a in wanted:
            if kk != k or (kk, a) in out:
                continue
            sel = ends_as(cur, a) if idx.size else np.zeros(0, dtype=bool)
            if kill and k < n and idx.size:
                sel &= trans[cur, suffix[k]] < 0
            reach = np.zeros(n_states, dtype=bool)
            work = idx[sel].tolist()
            reach[work] = True
            while work:  # backwards over the DFA: states some continuation leads to a start
                s = work.pop()
                for t in preds[s]:
                    if not reach[t]:
                        reach[t] = True
                        work.append(t)
            if reach[0]:
                # the lexeme in progress may also end as an ignored one (a space) before the
                # boundary lexeme starts afresh
                reach |= _ignorable(ob)
            out[(k, a)] = reach
    return out


def _ignorable(ob: MaskBuilder) -> np.ndarray:
    """Lexer states whose lexeme can still end as an ignored terminal (once per grammar)."""
    r: np.ndarray | None = getattr(ob, "_boundary_ignorable", None)
    if r is None:
        dfa = ob.dfa
        ign = np.flatnonzero(dfa.ignored)
        r = np.asarray(dfa.live[:, ign].any(axis=1)) if ign.size else np.zeros(
            dfa.trans.shape[0], dtype=bool)
        ob._boundary_ignorable = r  # type: ignore[attr-defined]
    return r


class BoundaryFilter:
    """One request's boundary markers with their reach sets (see the module docstring)."""

    def __init__(self, ob: MaskBuilder, vocab: Vocabulary, boundary: list[tuple[int, int]],
                 reach: dict[int, np.ndarray], state_class: np.ndarray, greedy: bool) -> None:
        self.boundary = tuple(boundary)  # (marker, terminal)
        self.reach = reach  # marker → (S,) bool
        self.state_class = state_class
        self.n_classes = int(state_class.max()) + 1 if state_class.size else 0
        self.class_size = np.bincount(state_class, minlength=self.n_classes)
        self.trans = ob.trans
        self.greedy = greedy
        self._ob = ob
        self._vocab = vocab
        # reach sets named by int8 verdict codes (code c ≥ 2 → rsets[c - 2]); the last
        # entry of each is True for an unknown final state (-1)
        self.rsets: list[np.ndarray] = []
        self._lock = threading.Lock()  # see info
        self._sets: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        memo: BoundedMemo[tuple[int, int], np.ndarray] | None = getattr(
            ob, "_boundary_finals", None)
        if memo is None:
            memo = BoundedMemo(memo_size(ob.limits.row_cache))
            ob._boundary_finals = memo  # type: ignore[attr-defined]
        self._finals = memo
        self._quiet: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # see _under

    def expected(self, p: PState) -> tuple[int, ...]:
        """The boundary markers ``p`` expects."""
        e = p[ES][EXPECTED]
        return tuple(m for m, _ in self.boundary if (e >> m) & 1)

    def info(self, ms: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """For a set of expected markers: (reach, per class: some state reaches, every state
        reaches, verdict code for "check each token")."""
        r = self._sets.get(ms)
        if r is not None:
            return r
        reach = np.zeros(len(self.state_class) + 1, dtype=bool)
        for m in ms:
            reach[:-1] |= self.reach[m]
        reach[-1] = True
        counts = np.bincount(self.state_class[reach[:-1]], minlength=self.n_classes)
        # a code is its reach set's index: numbered and appended by one thread at a time
        # (clones of a constraint on two threads took one number for two sets)
        with self._lock:
            r = self._sets.get(ms)
            if r is None:
                code = len(self.rsets) + 2
                if code > MAX_CODES:
                    code = 1  # too many distinct sets: allow (an over-approximation)
                else:
                    self.rsets.append(reach)
                r = (reach, counts > 0, counts == self.class_size, code)
                self._sets[ms] = r
        return r

    def codes(self, normal: np.ndarray, ms: tuple[int, ...]) -> np.ndarray:
        """int8 per class: 0 refused, 1 allowed, c ≥ 2 allowed where the final state is in
        ``rsets[c - 2]``; ``normal``: allowed without the boundary terminals."""
        _, some, every, code = self.info(ms)
        out = np.where(some, np.int8(code), np.int8(0)).astype(np.int8)
        out[normal | every] = 1
        return out

    def finals(self, q: int, node: int, toks: np.ndarray) -> np.ndarray:
        """The lexer state each token of (row ``q``, outcome ``node``) stops in (-1 unknown):
        the bytes walked from ``q``, restarting from the start state where a lexeme ends
        (greedy) or not at all (-1 where the walk dies)."""
        trans, greedy = self.trans, self.greedy

        def step(was: np.ndarray, b: np.ndarray) -> np.ndarray:
            nq: np.ndarray = trans[was, b].astype(np.int64)
            if greedy:
                dead = nq < 0
                if dead.any():
                    nq[dead] = trans[0, b[dead]]
            return nq

        return self._walk((q, node), q, toks, step)

    def quiet_finals(self, cx: ContextualRule, a: int, q: int, toks: np.ndarray
                     ) -> np.ndarray:
        """Contextual mode: the lexer state each token stops in, walked from ``q`` under the
        allowed set ``a``, where every lexeme it ends is an ignored one (the parser state,
        so ``a``, stays); -1 where it ends a significant lexeme (the parser moves: the
        tables do not say where the next allowed set ends lexemes) or dies."""
        trans = self.trans
        alive, quiet = self._under(cx, a)

        def step(was: np.ndarray, b: np.ndarray) -> np.ndarray:
            nq: np.ndarray = trans[was, b].astype(np.int64)
            dead = nq < 0
            dead[~dead] = ~alive[nq[~dead]]
            if dead.any():  # the lexeme ends: an ignored one lets the next start afresh
                fresh = trans[0, b[dead]].astype(np.int64)
                ok = quiet[was[dead]] & (fresh >= 0)
                ok[ok] = alive[fresh[ok]]
                nq[dead] = np.where(ok, fresh, -1)
            return nq

        return self._walk((-1 - q, a), q, toks, step)  # (the basic walks' keys have q >= 0)

    def _walk(self, key: tuple[int, int], q: int, toks: np.ndarray,
              step: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Every token of ``toks`` walked from lexer state ``q`` in lockstep over the
        vocabulary's flat byte table, ``step(states, bytes)`` giving the next states (-1:
        the walk stops there); memoised per ``key`` and shared by requests."""
        r = self._finals.get(key)
        if r is not None and len(r) == len(toks):
            return r
        tb = self._vocab.flat_bytes  # (the vocabulary's one table, built on first use)
        cur = np.full(len(toks), q, dtype=np.int64)
        ln, st = tb.lens[toks], tb.start[toks]
        for j in range(int(ln.max()) if ln.size else 0):
            act = np.flatnonzero((ln > j) & (cur >= 0))
            if not act.size:
                break
            cur[act] = step(cur[act], tb.flat[st[act] + j])
        self._finals.put(key, cur)
        return cur

    def _under(self, cx: ContextualRule, a: int) -> tuple[np.ndarray, np.ndarray]:
        """Per lexer state, under the allowed set ``a``: is some allowed terminal alive; does
        a lexeme ending there end as ignored terminals only (the start state: no)."""
        r = self._quiet.get(a)
        if r is None:
            dfa = self._ob.dfa
            cols = [t for t in range(dfa.live.shape[1]) if (a >> t) & 1]
            alive = np.asarray(dfa.live[:, cols].any(axis=1)) if cols else np.zeros(
                dfa.live.shape[0], dtype=bool)
            ign = cx.ignored_bits
            quiet = np.array([bool(w) and not w & ~ign
                              for w in (cx._winners(acc & a) for acc in cx.accepting)],
                             dtype=bool)
            quiet[0] = False
            r = self._quiet[a] = (alive, quiet)
        return r

    def refine(self, m: np.ndarray, q: int, nodes: np.ndarray, offsets: np.ndarray,
               counts: np.ndarray, toks: np.ndarray, pos: np.ndarray, codes: np.ndarray
               ) -> None:
        """Clear from ``m`` the tokens of row ``q`` at node positions ``pos`` (verdict codes
        ``codes``) whose final lexer state is outside the code's reach set."""
        for j, c in zip(pos.tolist(), codes.tolist(), strict=True):
            lo = int(offsets[j])
            tj = toks[lo: lo + int(counts[j])]
            fin = self.finals(q, int(nodes[j]), tj)
            bad = ~self.rsets[c - 2][fin]
            if bad.any():
                m[tj[bad]] = False


class BoundaryMaskBuilder(MaskBuilder):
    """The quotient's mask builder (basic lexer mode) with the boundary check."""

    boundary: BoundaryFilter
    _codes_memo: BoundedMemo[int, np.ndarray]

    def _normal(self, p: PState) -> np.ndarray:
        """``class_vector`` without the boundary markers' terminals (with the dead-end
        search's verdicts where the grammar has one: ``class_vector`` counts a class that
        may be the boundary lexeme as a way on, whatever else it may become)."""
        ctx = self.ctx
        bits = ParserContext.expects(ctx, p) & ~ctx.ignored_bits
        w = words_of_bits(bits, self.class_words.shape[1])
        r = np.asarray((self.class_words & w).any(axis=1))
        if ctx.finish(p):
            r = r | self.class_ignored_end
        if self.end_conditions is not None:
            r = self.end_conditions.refine(ctx, p, bits, r)
        return r

    def _verdicts(self, p: PState) -> np.ndarray:
        r = self._codes_memo.get(p[PUID])
        if r is None:
            loose = self.class_vector(p)
            ms = self.boundary.expected(p)
            if ms:
                r = self.boundary.codes(self._normal(p), ms)
                r[~loose] = 0
            else:
                r = loose.astype(np.int8)
            self._codes_memo.put(p[PUID], r)
        return r

    def end_ok(self, p: PState, q: int) -> bool:
        c = int(self._verdicts(p)[self.state_class[q]])
        return c == 1 or (c > 1 and bool(self.boundary.rsets[c - 2][q]))

    def row_mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        # the row expanded in full (not as a diff against its base row): the per-token
        # check walks each token's bytes from ``q`` itself
        row = self.row(q)
        ok = np.zeros(row.n, dtype=np.int8)

        def decide(p2: PState, v: int) -> None:
            lo, hi = row.spans[v]
            if lo < hi:
                ok[row.order[lo:hi]] = self._verdicts(p2)[row.cls[lo:hi]]

        walk_row_trie(self.ctx, self.num_terminals, p, row, decide, carry)
        m = select_tokens(self.vocab_size, row.tokens, row.counts, ok > 0,
                          lambda: row.all_tokens(self.vocab_size))
        pos = np.flatnonzero(ok > 1)
        if pos.size:
            self.boundary.refine(m, q, row.nodes, row.offsets(), row.counts, row.tokens, pos,
                                 ok[pos])
        return m


class BoundaryContextualLexer(ContextualLexer):
    """The quotient's contextual lexer with the boundary check (top-level outcomes only: a
    token that ends a lexeme inside itself stops in a state the tables do not pin down, and
    is checked by its class alone)."""

    boundary: BoundaryFilter
    _codes_memo: BoundedMemo[int, np.ndarray | None]

    def _normal_ends(self, p: PState) -> np.ndarray:
        """``_class_vectors``' ``ends`` without the boundary markers' terminals (shared:
        not to be written)."""
        return self._class_vectors(ParserContext.expects(self.ctx, p), self._follows(p))[1]

    def _codes(self, p: PState) -> np.ndarray | None:
        """Verdict codes per class (as :meth:`BoundaryFilter.codes`), None without markers."""
        known = self._codes_memo.get(p[PUID], MISSING)
        if known is not MISSING:
            return known
        ms = self.boundary.expected(p)
        r = self.boundary.codes(self._normal_ends(p), ms) if ms else None
        self._codes_memo.put(p[PUID], r)
        return r

    def _plan_extra(self, p: PState) -> bytes | None:
        c = self._codes(p)
        return None if c is None else c.tobytes()

    def _class_vectors(self, a: int, fl: bool, extra: int | bytes | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cont, ends, sets = super()._class_vectors(a, fl)
        if not isinstance(extra, bytes):  # (only its own ``_plan_extra``'s codes come here)
            return cont, ends, sets
        # the codes are all a plan needs of the boundary check (a function of them alone),
        # so plans stay shared across requests, keyed by the codes
        return cont, ends & (np.frombuffer(extra, dtype=np.int8) > 0), sets

    def may_be_boundary(self, p: PState, q: int) -> bool:
        """Does ``q`` reach the set of a boundary marker ``p`` expects?"""
        return any(bool(self.boundary.reach[m][q]) for m in self.boundary.expected(p))

    def _walk_end_ok(self, p: PState, q: int, whole: bool) -> bool:
        """As the mask decides: by ``q`` itself when the walk's last lexeme began at its first
        byte or before, or the lexemes it ended were all ignored ones (the state is then
        known), else by ``q``'s class."""
        if not super()._walk_end_ok(p, q, whole):
            return False
        c = self._codes(p)
        if c is None:
            return True
        v = int(c[self.state_class[q]])
        if v == 1 or (v > 1 and not whole):
            return True
        return v > 1 and bool(self.boundary.rsets[v - 2][q])

    def _row_tokens(self, p: PState, q: int, carry: int = 0) -> np.ndarray:
        c = self._codes(p)
        if c is None or not (c > 1).any():
            return super()._row_tokens(p, q, carry)
        # the row expanded in full (not as a diff against its base row): the per-token check
        # walks each token's bytes from ``q`` itself
        nodes, counts, toks = self._row(q)
        if not nodes.size:
            return np.zeros(self.vocab_size, dtype=bool)
        m = select_tokens(self.vocab_size, toks, counts, self._eval(p, q, nodes, carry),
                          lambda: self._full_row(q, toks))
        # the outcome each node has under p's allowed set without ending a lexeme: forks
        # taken by "the lexeme continues" (an END reached so stops in δ(q, token))
        head, tail, alt = self.head, self.tail, self.alt
        cont = self._class_vectors(self.ctx.expects(p), self._follows(p))[0]
        cur = nodes.astype(np.int64, copy=True)
        while True:
            live = cur >= 0
            br = np.flatnonzero(live & (head[np.maximum(cur, 0)] <= -2))
            if not br.size:
                break
            x = cur[br]
            cur[br] = np.where(cont[-2 - head[x]], tail[x], alt[x])
        e = np.flatnonzero((cur >= 0) & (head[np.maximum(cur, 0)] == -1))
        if not e.size:
            return m
        codes = c[tail[cur[e]]]
        pos = e[codes > 1]
        if pos.size:
            offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
            self.boundary.refine(m, q, nodes, offsets, counts, toks, pos, c[tail[cur[pos]]])
        self._refine_quiet(m, p, q, toks, c)
        return m

    def _refine_quiet(self, m: np.ndarray, p: PState, q: int, toks: np.ndarray,
                      c: np.ndarray) -> None:
        """Clear from ``m`` the tokens that end only ignored lexemes inside themselves (a
        blank, then the start of the boundary lexeme) and stop in a state outside their
        class's reach set: the parser, so the allowed set, stays across an ignored lexeme,
        so the state they stop in is known (as :meth:`_walk_end_ok` checks it)."""
        live = toks[m[toks]]
        if not live.size:
            return
        fin = self.boundary.quiet_finals(self, self.allowed(p), q, toks)[m[toks]]
        known = fin >= 0
        live, fin = live[known], fin[known]
        v = c[self.state_class[fin]]
        for code in np.unique(v[v > 1]).tolist():
            sel = v == code
            bad = ~self.boundary.rsets[code - 2][fin[sel]]
            m[live[sel][bad]] = False


def boundary_filter(ob: MaskBuilder, vocab: Vocabulary, suffix: bytes,
                    markers: list[tuple[Branch, int, int]], contextual: bool
                    ) -> BoundaryFilter | None:
    """The filter for one request's markers ``(branch, marker, terminal)``; None when no
    marker stands for a boundary lexeme."""
    wanted = sorted({(br.k, a) for br, _, a in markers if a >= 0})
    if not wanted:
        return None
    if contextual:
        cx = ob.contextual
        if cx is None or cx.tables is None or cx.nl_t >= 0:
            # masks by walking the vocabulary: no end classes to refine (an indentation
            # grammar's tables are checked against that walk, so they refine nothing either)
            return None
        acc = ob.dfa.accepting

        def ends_as(states: np.ndarray, a: int) -> np.ndarray:
            return np.asarray(acc[states, a])
        state_class = np.asarray(cx.state_class, dtype=np.int64)
    else:
        accept = ob.dfa.accept

        def ends_as(states: np.ndarray, a: int) -> np.ndarray:
            return np.asarray(accept[states] == a)
        state_class = np.asarray(ob.state_class, dtype=np.int64)
    sets = reach_sets(ob, suffix, wanted, ends_as, kill=not contextual)
    reach = {m: sets[(br.k, a)] for br, m, a in markers if a >= 0}
    return BoundaryFilter(ob, vocab, [(m, a) for _, m, a in markers if a >= 0], reach,
                          state_class, greedy=not contextual)


def with_boundary(qb: MaskBuilder, f: BoundaryFilter | None) -> MaskBuilder:
    """``qb`` (the quotient's builder) checking boundary lexemes with ``f``."""
    if f is None:
        return qb
    memo_n = memo_size(qb.limits.mask_cache)
    if qb.contextual is not None:
        cx = qb.contextual
        ncx = BoundaryContextualLexer.__new__(BoundaryContextualLexer)
        ncx.__dict__.update(cx.__dict__)
        ncx.boundary = f
        ncx._codes_memo = BoundedMemo(memo_n)
        qb.contextual = ncx
        qb.forget_masks()  # (packed masks are keyed by configuration)
        return qb
    nb = BoundaryMaskBuilder.__new__(BoundaryMaskBuilder)
    nb.__dict__.update(qb.__dict__)
    nb.boundary = f
    nb._codes_memo = BoundedMemo(memo_n)
    nb.forget_masks()
    return nb
