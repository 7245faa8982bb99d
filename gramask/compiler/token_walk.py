"""Walking the vocabulary's tokens through a lexer DFA, row by row, eagerly or on demand.

The walks behind :mod:`gramask.compiler.tables` (see its docstring for what a row and a node
are). A :class:`TokenWalker` owns one grammar's node table and the memos the walks share:

* ``suffix``: the node of ``t[k:]`` walked from the start state, for any token ``t`` and
  offset ``k`` — the tail of every lexeme a walk completes. Walked on first use (a table of
  "not yet" entries, offsets major, so that the untouched offsets cost no memory) or, for a
  full build, for every offset, longest first, so that each walk finds its tails ready;
* ``shared``: the walk of the tokens with first byte ``b`` from the state ``b`` leads to,
  which every state stepping to that state on ``b`` shares.

A full build (:func:`gramask.compiler.tables.build_token_tables`) walks everything; a table
built for one request (a JSON Schema, a regular expression) walks only the rows the runtime
visits (:meth:`TokenWalker.row`), which is what makes a new grammar's first mask cheap.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence

import numpy as np

from ..encoding import unique_rows
from .ignored_follows import ignored_follows
from .interner import Interner
from .kept import drop_oldest
from .lexer import LexerDFA
from .local_walks import Successors, first_appearance, group_outcomes, local_automaton
from .plain_chars import PlainChains
from .row_classes import row_partition
from .suffix_memo import SuffixMemo
from .walk_inputs import (
    TAIL,
    LoopRuns,
    byte_groups,
    end_classes,
    jump_tail,
    nl_heads,
    split_classes,
    token_matrix,
    token_starts,
)

__all__ = ["SHARE_AFTER", "TokenWalker"]

# rows assembled before a lazy table looks for rows to share (row_classes): the partition
# costs ~0.2 s at 44k lexer states (220k: ~1.2 s), a row ~60 ms; most requests never pay it
SHARE_AFTER = 16


class TokenWalker:
    """Walks tokens from lexer states and interns the outcomes (see the module docstring).

    Thread-safe: :meth:`row` holds a lock, so constraints on several threads may build rows
    of one lazily built table."""

    def __init__(
        self, dfa: LexerDFA, tokens: Sequence[bytes], special: np.ndarray, *,
        nl_terminal: int = -1, tab_len: int = 8, contextual: bool = False,
        end_ids: np.ndarray | None = None, share_rows: bool = False,
    ) -> None:
        self.dfa = dfa
        self.n_states, n_terms = dfa.num_states, dfa.num_terminals
        self.n_terms = n_terms
        self.trans = dfa.trans
        self.trans_flat = np.ascontiguousarray(dfa.trans).reshape(-1)
        self.contextual = contextual
        self.nl_terminal = nl_terminal
        # end classes: what the lexeme a token stops inside can still lead to
        if contextual:
            # ignored terminals are always allowed, so which ones are live does not matter,
            # only whether one is (comment bodies of every kind share a class)
            ignored = dfa.ignored
            live_plus = np.concatenate(
                [dfa.live & ~ignored[None, :],
                 (dfa.live & ignored[None, :]).any(axis=1, keepdims=True)], axis=1
            )
            # ... split by what may follow the ignored lexemes a state can still end as (a
            # blank and a comment that only a newline ends are not alike): see ignored_follows
            classes, state_class = split_classes(*unique_rows(live_plus), ignored_follows(dfa)[0])
        else:  # (split by the ends each state reaches, where some cannot be followed)
            classes, state_class = split_classes(*unique_rows(end_classes(dfa)), end_ids)
        self.classes = classes
        self.state_class = state_class.reshape(-1).astype(np.int32)
        self.acc_any: np.ndarray = np.asarray(dfa.accepting.any(axis=1))
        self.interner = Interner(classes.shape[0], n_terms)
        self.acc_id = (self.interner.set_ids(dfa.accepting) if contextual
                       else np.zeros(0, dtype=np.int64))
        self.class_live = classes[:, :n_terms].astype(bool) if contextual else None

        v = len(tokens)
        self.v = v
        self.lens, self.buf, self.first_byte = token_matrix(tokens, special)
        lmax = self.buf.shape[1]
        self.lmax = lmax
        self.runs = LoopRuns(self.trans, self.lens, self.buf)  # jumps over looping runs
        self._memo = SuffixMemo(v, lmax)  # the suffixes walked so far
        self.valid, self.by_byte, self.byte_start = byte_groups(self.lens, self.buf)
        self.start_ok = self.trans[0] >= 0  # per byte: it starts a lexeme
        self.shared: dict[tuple[int, int], np.ndarray] = {}  # (state after b, b) -> nodes
        self._alive: dict[tuple[int, int], int] = {}  # (state after b, b) -> tokens not dead
        self._dense = np.full(v, -1, dtype=np.int64)
        self.row0: tuple[np.ndarray, np.ndarray] | None = None
        self.assembled: dict[int, None] = {}  # rows other than 0 assembled in full, in order
        self.small_local: np.ndarray | None = None  # states a local walk can serve (full build)
        self.succ = Successors(self.trans)  # what the searches for local automata share
        self.chains = PlainChains(self.trans, self.state_class, self.lens, self.buf)
        self.lock = threading.RLock()
        self.share_rows = share_rows  # (a lazy table) equal rows walked once: row_classes
        self._rep: np.ndarray | None = None
        self.near: tuple[np.ndarray, np.ndarray] | None = None  # row_partition's near, depth

    # ------------------------------------------------------------------ memos
    def suffix(self, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Nodes of ``t[k:]`` walked from the start state (-1 dead), walked on first use. A
        tail whose first byte starts no lexeme is dead without a look at the memo (most are:
        a space-prefixed word after whitespace)."""
        out = np.full(len(t), -1, dtype=np.int64)
        alive = np.flatnonzero(self.start_ok[self.buf[t, k]]) if len(t) else t
        if not alive.size:
            return out
        t, k = t[alive], k[alive]
        flat = k * self.v + t
        s = self._memo.get(flat)
        miss = np.flatnonzero(s == 0)
        if miss.size:
            s[miss] = self._fill(t[miss], k[miss])
        out[alive] = s - 2
        return out

    def _fill(self, t: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Walk the suffixes ``t[k:]`` and memoise them; returns what was stored."""
        # (a walk meets each of its tokens once: no pair twice, and a repeat would only be
        # walked twice to the same node)
        alive = self.trans[0][self.buf[t, k]] >= 0
        flat = k * self.v + t
        got = np.ones(len(t), dtype=np.int64)
        t, k = t[alive], k[alive]
        if t.size:
            got[alive] = self.walk(np.zeros(len(t), dtype=np.int64), t, k, True) + 2
        self._memo.put(flat, got)
        return got

    def all_suffixes(self) -> None:
        """Every suffix, longest offsets first (each walk then finds its tails walked)."""
        alive0 = self.trans[0]
        suf = self._memo.dense()
        for k in range(self.lmax - 1, -1, -1):
            idx = np.flatnonzero(self.lens > k)
            if not idx.size:
                continue
            ok = alive0[self.buf[idx, k]] >= 0
            suf[k, idx[~ok]] = 1
            idx = idx[ok]
            nodes = self.walk(np.zeros(len(idx), dtype=np.int64), idx, k, True)
            suf[k, idx] = nodes + 2
            if k == 0:  # row 0 (idx ascending)
                self.row0 = (idx[nodes >= 0], nodes[nodes >= 0])

    def tokens_of(self, bytes_in: list[int]) -> np.ndarray:
        """The tokens beginning with ``bytes_in``, in that order (read-only). A large group
        (a string's body: ~80 bytes, most of the vocabulary) is kept per vocabulary: every
        schema's rows inside strings ask for the same one."""
        bb, bs = self.by_byte, self.byte_start
        if len(bytes_in) < 8:
            return (np.concatenate([bb[bs[b]: bs[b + 1]] for b in bytes_in]) if bytes_in
                    else np.zeros(0, dtype=np.int64))
        key = (id(bb), bytes(bytes_in))
        hit = _TOKENS_OF.get(key)
        if hit is not None and hit[0] is bb:
            return hit[1]
        toks = np.concatenate([bb[bs[b]: bs[b + 1]] for b in bytes_in])
        toks.flags.writeable = False
        drop_oldest(_TOKENS_OF, 16)
        _TOKENS_OF[key] = (bb, toks)
        return toks

    def walk_shared(self, groups: list[tuple[int, list[int]]]) -> None:
        """The shared walks of ``groups`` (state after the first byte, those first bytes),
        their suffix walks from the start state in one batch (a walk's cost is mostly per
        step, whatever its width: row 0 has a dozen groups)."""
        pending = []
        solo: list[tuple[int, list[int], np.ndarray]] = []
        for s_after, bytes_in in groups:
            toks = self.tokens_of(bytes_in)
            gen = _local_nodes(self, s_after, bytes_in, toks)
            try:
                pending.append((s_after, bytes_in, gen, next(gen)))
            except StopIteration as stop:
                if stop.value is not None:
                    _keep(self, s_after, bytes_in, stop.value)
                else:  # no shared local walk: walked below, all such groups in one walk
                    solo.append((s_after, bytes_in, toks))
        if solo:  # (the tokens inside a chain of uniform states: no walk, see plain_chars)
            fast = self.chains.tokens([(s, toks) for s, _, toks in solo])
            rest = [toks[~f] for (_, _, toks), f in zip(solo, fast, strict=True)]
            sizes = [len(x) for x in rest]
            nodes = self.walk(None, np.concatenate(rest), 0, False,
                              first=np.repeat([x[0] for x in solo], sizes))
            for (s_after, bytes_in, _), f, part in zip(
                    solo, fast, np.split(nodes, np.cumsum(sizes)[:-1]), strict=True):
                full = np.full(len(f), int(self.state_class[s_after]), dtype=np.int64)
                full[~f] = part
                _keep(self, s_after, bytes_in, full)
        if not pending:
            return
        tails = self.suffix(np.concatenate([p[3][0] for p in pending]),
                            np.concatenate([p[3][1] for p in pending]))
        cuts = np.cumsum([len(p[3][0]) for p in pending])[:-1]
        for (s_after, bytes_in, gen, _), tail in zip(pending, np.split(tails, cuts),
                                                     strict=True):
            try:
                gen.send(tail)
            except StopIteration as stop:
                _keep(self, s_after, bytes_in, stop.value)

    def row(self, q: int) -> tuple[np.ndarray, np.ndarray]:
        """Row ``q``: (token ids ascending, node ids), its walks done on first use."""
        with self.lock:
            if q == 0:  # the suffixes at offset 0 (only row 0 reads them)
                if self.row0 is None:
                    starts = np.flatnonzero(self.trans[0] >= 0).tolist()
                    if self.nl_terminal >= 0:  # widths count from the start of the token
                        dense = self._dense
                        toks = self.tokens_of(starts)
                        dense[toks] = self.walk(np.zeros(len(toks), dtype=np.int64), toks, 0,
                                                True)
                        idx = np.flatnonzero(dense >= 0)
                        self.row0 = (idx, dense[idx])
                        dense[:] = -1
                    else:  # the shared walks of the states the first bytes lead to
                        row, _ = self.ensure_shared(0)
                        self.row0 = self.assemble(row, starts)
                return self.row0
            r = self.rep_of(q)
            if r != q:  # (a count with room for any token: the row of its class)
                return self.row(r)
            row, cont = self.ensure_shared(q)
            self.assembled[q] = None
            return self.assemble(row, cont)

    def rep_of(self, q: int) -> int:
        """The state whose row ``q``'s row is (:mod:`.row_classes`; ``q`` in a full build)."""
        if self._rep is None:  # (once rows are many: a request in a long counted string)
            if not self.share_rows or len(self.assembled) < SHARE_AFTER:
                return q
            self._rep, near, depth = row_partition(self.dfa, self.state_class, self.lmax)
            self.near = (near, depth)
        return int(self._rep[q])

    def key_row(self, q: int | np.ndarray) -> np.ndarray:
        """DFA row ``q`` (or rows) with each state replaced by :meth:`rep_of`'s: the shared walks'
        keys (the walks from states that agree on every token's bytes are equal)."""
        row: np.ndarray = self.trans[q]
        if self.rep_of(0) != 0 or self._rep is None:  # (rep_of(0) is 0: it only computes)
            return row
        keys: np.ndarray = np.where(row >= 0, self._rep[np.maximum(row, 0)], -1)
        return keys

    def assemble(self, row: np.ndarray, first: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The tokens whose first byte is in ``first`` with their shared walks' nodes from
        DFA row ``row`` (walks done: :meth:`ensure_shared`): (token ids ascending, node ids).
        Under :attr:`lock`."""
        dense, bb, bs = self._dense, self.by_byte, self.byte_start
        for b in first:
            dense[bb[bs[b]: bs[b + 1]]] = self.shared[(int(row[b]), b)]
        idx = np.flatnonzero(dense >= 0)
        node = dense[idx]
        dense[:] = -1
        return idx, node

    def ensure_shared(self, q: int, only: list[int] | None = None
                      ) -> tuple[np.ndarray, list[int]]:
        """(row ``q`` of the DFA as :meth:`key_row` keys it, the bytes continuing it, of
        ``only`` if given), their shared walks done."""
        row = self.key_row(q)
        cont = np.flatnonzero(row >= 0).tolist() if only is None else only
        missing: dict[int, list[int]] = {}
        for b in cont:
            if (int(row[b]), b) not in self.shared:
                missing.setdefault(int(row[b]), []).append(b)
        self.walk_shared(list(missing.items()))
        return row, cont

    def row_nnz(self, q: int) -> int:
        """Number of tokens in row ``q`` (its walks done, the row not assembled)."""
        with self.lock:
            if q == 0:
                return len(self.row(0)[0])
            row, cont = self.ensure_shared(q)
            return sum(self._alive[(int(row[b]), b)] for b in cont)

    # ------------------------------------------------------------------ the walk
    def walk(
        self, q_start: np.ndarray | None, idx: np.ndarray, k0: int | np.ndarray,
        from_start: bool, first: np.ndarray | None = None,
    ) -> np.ndarray:
        """Walk tokens ``idx`` from states ``q_start`` beginning at offset ``k0``; the first
        byte is assumed to continue the lexeme (``first``: the states after it, given
        instead of ``q_start``). Returns node ids (-1 dead)."""
        trans, buf, lens, state_class = self.trans, self.buf, self.lens, self.state_class
        # (a step's gather in one flat index: numpy's two-index gather costs about three)
        trans_flat, width = self.trans_flat, trans.shape[1]
        contextual, interner = self.contextual, self.interner
        n_terms, nl_terminal = self.n_terms, self.nl_terminal
        accept, ignored = self.dfa.accept, self.dfa.ignored
        out = np.full(len(idx), -1, dtype=np.int64)
        k = np.broadcast_to(np.asarray(k0, dtype=np.int64), idx.shape).copy()
        lex_start = k.copy()
        uniform = np.ndim(k0) == 0  # every lexeme began at offset k0
        tl = lens[idx]
        flat, starts = token_starts(lens, buf)
        at = starts[idx]  # each token's bytes in ``flat``
        if first is None:
            assert q_start is not None
            cur = trans[q_start, buf[idx, k]].astype(np.int64)
        else:
            cur = first.astype(np.int64)
        # contextual forks after the first byte (a fork at the first byte of a row's token is
        # the runtime's: the lexeme at q ends there, like a kill byte, when the next state's
        # live class meets nothing allowed)
        recs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        # (with indentation too, this is as exact as PlainChains.tokens before the walk, which
        # is not gated: newline heads matter only where a lexeme stops, never on a chain; it
        # is left out there only as it was made and measured for counted strings)
        chains = self.chains.begin(first is not None) if nl_terminal < 0 else None
        k += 1
        act = np.arange(len(idx))
        # A walk that jumps over a run waits for the iteration of its offset: the steps that
        # intern nodes then come in the same batches as byte by byte, so node ids (numbered in
        # order of first use) do not depend on the jumps.
        skip = self.runs.any
        entry = skip
        while act.size:
            if entry:
                self.runs.skip(act, cur, idx, k, first is not None and np.ndim(k0) == 0
                               and int(k0) == 0)
                entry = False
            if chains is None and act.size <= TAIL:  # a few long tokens: their steps in Python
                jump_tail(trans_flat, width, state_class, contextual, flat, act, cur, k, at, tl)
                skip = True
            ka = k[act]
            done = ka >= tl[act]
            if done.any():
                d = act[done]
                out[d] = state_class[cur[d]]
                act, ka = act[~done], ka[~done]
            if chains is not None and act.size:  # plain characters on a uniform chain
                act, ka, chains = chains.finish(act, ka, cur, at, out)
            if not act.size:
                break
            # the walks that step now (most iterations: all of them, and every step goes
            # on; the copies and scatters of a subset are then skipped)
            every = True
            if skip:  # (iterations where every walk waits are passed over)
                rel = ka - (int(k0) if uniform else lex_start[act])
                it = int(rel.min())
                every = it == int(rel.max())
            if every:
                step, ks = act, ka
            else:
                due = rel == it
                step, ks = act[due], ka[due]
            cs = cur[step]
            nb = trans_flat[cs * width + flat[at[step] + ks]]
            cont = nb >= 0
            all_cont = bool(cont.all())
            if contextual:
                ca, nbc, cca = ((step, nb, cs) if all_cont
                                else (step[cont], nb[cont], cs[cont]))
                sh = state_class[nbc] != state_class[cca]
                if sh.any():
                    w = ca[sh]
                    cw = state_class[nbc[sh]]
                    recs.append((w, cw, self.lex_alt(cur[w], idx[w], k[w], cw,
                                                      lex_start[w], from_start)))
            if all_cont:
                cur[step] = nb
                k[step] = ks + 1
                stop = step[:0]
            else:
                moved = step[cont]
                cur[moved] = nb[cont]
                k[moved] = ks[cont] + 1
                if every:
                    act = moved
                else:
                    due[due] = ~cont  # now: the walks that stop here
                    act = act[~due]
                stop = step[~cont]
            if stop.size and contextual:
                ends = stop[self.acc_any[cur[stop]]]
                if ends.size:
                    tail = self.suffix(idx[ends], k[ends])
                    good = tail >= 0
                    if good.any():
                        eg = ends[good]
                        out[eg] = interner.cons(
                            _lex_heads(self, cur[eg], None, idx[eg], k[eg], lex_start[eg],
                                            from_start), tail[good])
            elif stop.size:
                win = accept[cur[stop]]
                ok = win >= 0
                ends = stop[ok]
                if ends.size:
                    te = idx[ends]
                    ke = k[ends]
                    tail = self.suffix(te, ke)
                    heads = win[ok].astype(np.int64)
                    good = tail >= 0
                    ends, te, ke, tail, heads = ends[good], te[good], ke[good], tail[good], heads[good]
                    res = tail.copy()
                    if nl_terminal >= 0:
                        nl = heads == nl_terminal
                        if nl.any():
                            heads[nl] = nl_heads(self.buf, n_terms, te[nl], ke[nl],
                                                  lex_start[ends[nl]], from_start)
                    keep = (heads >= n_terms) | ~ignored[np.minimum(heads, n_terms - 1)]
                    if keep.any():
                        res[keep] = interner.cons(heads[keep], tail[keep])
                    out[ends] = res
        for w, cls, alt in reversed(recs):  # fold the forks, last first
            f = alt >= 0  # no live alternative: the continuation alone decides
            if f.any():
                wf = w[f]
                out[wf] = interner.branch(cls[f], out[wf], alt[f])
        return out

    def lex_alt(self, states: np.ndarray, tidx: np.ndarray, kpos: np.ndarray,
                 next_cls: np.ndarray, lex_start: np.ndarray | None = None,
                 from_start: bool = True) -> np.ndarray:
        """LEX(accepting terminals the next state cannot continue, the rest of the token from
        the start state), or -1 (dead). ``lex_start``, ``from_start``: where the lexemes
        began (see ``_lex_heads``; needed only with the indentation newline)."""
        assert self.class_live is not None
        sets = self.dfa.accepting[states] & ~self.class_live[next_cls]
        has = sets.any(axis=1)
        res = np.full(len(states), -1, dtype=np.int64)
        if not has.any():
            return res
        tail = np.full(len(states), -1, dtype=np.int64)
        tail[has] = self.suffix(tidx[has], kpos[has])
        ok = has & (tail >= 0)
        if ok.any():
            starts = lex_start[ok] if lex_start is not None else None
            res[ok] = self.interner.cons(
                _lex_heads(self, states[ok], sets[ok], tidx[ok], kpos[ok], starts, from_start),
                tail[ok])
        return res


def _lex_heads(w: TokenWalker, states: np.ndarray, sets: np.ndarray | None, t: np.ndarray,
               k: np.ndarray, lex_start: np.ndarray | None, from_start: bool
               ) -> np.ndarray:
    """Set ids of ``w``'s LEX nodes for lexemes of tokens ``t`` ending before byte ``k`` in
    ``states`` (``sets``: their terminal sets, None for the states' accepting sets).
    A set that holds the indentation newline is interned with the width the newline
    would carry (counted as the basic tables count it, :func:`nl_heads`). (A function of the module:
    the class stays within its size.)"""
    nl_t = w.nl_terminal
    rows = w.dfa.accepting[states] if sets is None else sets
    ids: np.ndarray = (w.acc_id[states] if sets is None
                       else w.interner.set_ids(sets))
    if nl_t < 0:
        return ids
    nl = np.flatnonzero(rows[:, nl_t])
    if nl.size:
        assert lex_start is not None, "a newline lexeme needs where it began"
        codes = nl_heads(w.buf, w.n_terms, t[nl], k[nl], lex_start[nl], from_start)
        ids = ids.copy()
        ids[nl] = w.interner.set_ids(rows[nl], codes)
    return ids


def _keep(w: TokenWalker, s_after: int, bytes_in: list[int], nodes: np.ndarray) -> None:
    """Store ``w``'s shared walk from ``s_after`` per first byte, with its live tokens
    counted in one pass (a string body's group has ~150 first bytes). (A function of the
    module: the class stays within its size.)"""
    b = np.asarray(bytes_in, dtype=np.int64)
    ends = np.cumsum(w.byte_start[b + 1] - w.byte_start[b]).tolist()
    live = np.zeros(len(nodes) + 1, dtype=np.int64)
    np.cumsum(nodes >= 0, out=live[1:])
    lo = 0
    for byte, hi in zip(bytes_in, ends, strict=True):
        w.shared[(s_after, byte)] = nodes[lo:hi]
        w._alive[(s_after, byte)] = int(live[hi] - live[lo])
        lo = hi


def _local_nodes(w: TokenWalker, s_after: int, bytes_in: list[int], toks: np.ndarray
                ) -> Generator[tuple[np.ndarray, np.ndarray], np.ndarray, np.ndarray | None]:
    """The nodes of ``w``'s shared walk of ``toks`` (first bytes ``bytes_in``) from
    ``s_after`` (:meth:`TokenWalker.walk_shared`), made from the walks inside the lexeme
    that grammars with the same local automaton (and pattern of end classes) share
    (:mod:`gramask.compiler.local_walks`); None where those do not decide it: the
    indentation newline (its width is counted across lexemes), a local automaton too large
    to share. Yields the suffixes it needs (tokens, offsets), sent their nodes. (A function
    of the module, not a method: the class stays within its size.)"""
    if w.nl_terminal >= 0:
        return None
    if w.small_local is not None and not w.small_local[s_after]:
        return None  # (known in a full build: a search per state costs it thousands)
    la = local_automaton(w.trans, s_after, w.succ)
    if la is None:
        return None
    states, local, digest = la
    # contextual: end classes numbered by first appearance (where forks are)
    pattern = (first_appearance(w.state_class[states]) if w.contextual
               else np.zeros(len(states), dtype=np.int64))
    end, kill_at, kill_in, fork, kill_byte = group_outcomes(
        local, pattern, digest, bytes_in, w.by_byte, w.byte_start, w.lens, w.buf)
    out = np.full(len(toks), -1, dtype=np.int64)
    e = np.flatnonzero(end >= 0)
    out[e] = w.state_class[states[end[e]]]
    # a lexeme ended by a byte no lexeme starts with leaves a dead tail: dropped here
    # (most of a whitespace row: " the" after a space)
    cand = np.flatnonzero((kill_in >= 0) & w.start_ok[kill_byte])
    at = states[kill_in[cand]]  # the lexer state whose lexeme the byte ends
    kill_at = kill_at[cand].astype(np.int64)
    if w.contextual:  # LEX(its accepting terminals), the rest from the start state
        ok = w.acc_any[at]
        cand, heads = cand[ok], w.acc_id[at[ok]]
    else:  # its winner, unless none
        win = w.dfa.accept[at].astype(np.int64)
        ok = win >= 0
        cand, heads = cand[ok], win[ok]
    tail = yield toks[cand], kill_at[ok]
    good = tail >= 0
    cand, heads, tail = cand[good], heads[good], tail[good]
    res = tail.copy()
    keep = (np.ones(len(heads), dtype=bool) if w.contextual
            else ~w.dfa.ignored[heads])  # an ignored terminal leaves no node
    if keep.any():
        res[keep] = w.interner.cons(heads[keep], tail[keep])
    out[cand] = res
    if fork.shape[1]:  # contextual forks, folded last first (as walk() folds them)
        for k in np.unique(fork[1])[::-1].tolist():
            at_k, _, cur, nxt = fork[:, fork[1] == k]
            cw = w.state_class[states[nxt]].astype(np.int64)
            alt = w.lex_alt(states[cur], toks[at_k], np.full(len(at_k), k), cw)
            f = alt >= 0
            if f.any():
                out[at_k[f]] = w.interner.branch(cw[f], out[at_k[f]], alt[f])
    return out


# (id of a vocabulary's by-byte order, the first bytes) → (that order, its tokens joined)
_TOKENS_OF: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray]] = {}
