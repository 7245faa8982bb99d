"""Lexer DFA × vocabulary → token-mask tables.

For every lexer state ``q`` and token ``t`` the greedy lexer is deterministic, so walking ``t``'s
bytes from ``q`` has exactly one outcome: dead, or the terminals it completes followed by the
lexer state it stops in. Outcomes are interned as cons lists in one node table::

    node n <  C : END(class n)           – the token stops inside a lexeme whose possible
                                            winners are winnable-class n
    node n >= C : CONS(head[n], tail[n])  – the token completes terminal head[n] (or, for the
                                            indentation newline, NEWLINE of a width) first

so tokens that do the same thing to the parser share one node, and the runtime decides each
node once per parser state instead of each token. Ignored terminals are dropped from the lists.

A token whose first byte ends the current lexeme does, from ``q``, exactly what it does from
the start state after the current lexeme's terminal: those entries are *not* stored per state
(row 0 plus the per-state kill set covers them), which keeps the tables small. Row ``q`` holds
only tokens whose first byte continues the current lexeme.

Nothing here depends on the grammar's rules: the parser only supplies, per step, which
terminals are viable. One artifact serves the plain grammar, its quotients and budgets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ..encoding import bits_of_rows, nl_code, rows_of_bits
from .lexer import LexerDFA

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["TokenTables", "build_token_tables", "walk_token"]


@dataclass
class TokenTables:
    """The compiled tables (see module docstring)."""

    rows_indptr: np.ndarray  # CSR (S, V): node id + 1 of tokens whose first byte continues q
    rows_indices: np.ndarray
    rows_data: np.ndarray
    vocab_size: int
    row_base: np.ndarray  # (S,) int32: -1, or the state whose row this row is a diff against
    node_head: np.ndarray  # (N,) int32: terminal id, NL width code (>= T), or -1 for END
    node_tail: np.ndarray  # (N,) int32: next node, or winnable class for END
    class_winnable: np.ndarray  # (C, T + 1) bool: see end_classes
    state_class: np.ndarray  # (S,) int32: winnable class of each lexer state
    first_byte: np.ndarray  # (V,) int16: first byte of each token, -1 for special/empty
    nl_terminal: int  # terminal id of the indentation newline, or -1
    # contextual tables only (empty in basic mode): BRANCH nodes' "lexeme ends" alternative
    node_alt: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    # contextual tables only: (K, T) bool, the terminal sets LEX nodes name (head = row)
    lex_sets: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))

    @property
    def contextual(self) -> bool:
        """Built for the contextual lexer (see ``build_token_tables(contextual=True)``)."""
        return bool(self.node_alt.size)

    @property
    def num_classes(self) -> int:
        return int(self.class_winnable.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.rows_indptr[-1])

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "rows_indptr": self.rows_indptr.astype(np.int64),
            "rows_indices": self.rows_indices.astype(np.int32),
            "rows_data": self.rows_data.astype(np.int32),
            "row_base": self.row_base,
            "node_head": self.node_head,
            "node_tail": self.node_tail,
            "class_winnable": np.packbits(self.class_winnable, axis=1),
            "state_class": self.state_class,
            "first_byte": self.first_byte,
            **({"node_alt": self.node_alt, "lex_sets": np.packbits(self.lex_sets, axis=1)}
               if self.contextual else {}),
        }

    @classmethod
    def from_arrays(
        cls, a: dict[str, np.ndarray], num_states: int, vocab_size: int, num_terminals: int,
        nl_terminal: int,
    ) -> TokenTables:
        indptr = np.asarray(a["rows_indptr"], dtype=np.int64)
        if len(indptr) != num_states + 1:
            raise ValueError(f"table has {len(indptr) - 1} rows for {num_states} lexer states")
        return cls(
            rows_indptr=indptr,
            rows_indices=np.asarray(a["rows_indices"], dtype=np.int32),
            rows_data=np.asarray(a["rows_data"], dtype=np.int32),
            vocab_size=vocab_size,
            row_base=np.asarray(a["row_base"], dtype=np.int32),
            node_head=np.asarray(a["node_head"], dtype=np.int32),
            node_tail=np.asarray(a["node_tail"], dtype=np.int32),
            class_winnable=np.unpackbits(
                a["class_winnable"], axis=1, count=num_terminals + 1
            ).astype(bool),
            state_class=np.asarray(a["state_class"], dtype=np.int32),
            first_byte=np.asarray(a["first_byte"], dtype=np.int16),
            nl_terminal=nl_terminal,
            node_alt=np.asarray(a.get("node_alt", np.zeros(0)), dtype=np.int32),
            lex_sets=(
                np.unpackbits(a["lex_sets"], axis=1, count=num_terminals).astype(bool)
                if "lex_sets" in a else np.zeros((0, num_terminals), dtype=bool)
            ),
        )


class _Interner:
    """Interns CONS(head, tail) pairs (and, for contextual tables, BRANCH(class, cont, alt)
    triples) in bulk, numbering after the END nodes."""

    def __init__(self, num_classes: int) -> None:
        self.ids: dict[int, int] = {}
        self.heads: list[int] = []
        self.tails: list[int] = []
        self.alts: list[int] = []
        self.branch_ids: dict[tuple[int, int, int], int] = {}
        self.base = num_classes

    def branch(self, cls: np.ndarray, cont: np.ndarray, alt: np.ndarray) -> np.ndarray:
        """BRANCH nodes: head -2 - cls; tail cont (lexeme continues); alt (it ends)."""
        if cls.size == 0:
            return np.zeros(0, dtype=np.int64)
        keys = np.stack([cls, cont, alt], axis=1).astype(np.int64)
        uniq, inv = np.unique(keys, axis=0, return_inverse=True)
        out = np.empty(len(uniq), dtype=np.int64)
        ids = self.branch_ids
        for j, (c, t, a) in enumerate(uniq.tolist()):
            k = (c, t, a)
            n = ids.get(k)
            if n is None:
                n = ids[k] = self.base + len(self.heads)
                self.heads.append(-2 - c)
                self.tails.append(t)
                self.alts.append(a)
            out[j] = n
        res: np.ndarray = out[inv.reshape(-1)]
        return res

    def cons(self, heads: np.ndarray, tails: np.ndarray) -> np.ndarray:
        if heads.size == 0:
            return np.zeros(0, dtype=np.int64)
        keys = (heads.astype(np.int64) << 32) | tails.astype(np.int64)
        uniq, inv = np.unique(keys, return_inverse=True)
        out = np.empty(len(uniq), dtype=np.int64)
        ids = self.ids
        for j, k in enumerate(uniq.tolist()):
            n = ids.get(k)
            if n is None:
                n = ids[k] = self.base + len(self.heads)
                self.heads.append(k >> 32)
                self.tails.append(k & 0xFFFFFFFF)
                self.alts.append(-1)
            out[j] = n
        result: np.ndarray = out[inv.reshape(-1)]
        return result


def build_token_tables(
    dfa: LexerDFA,
    tokens: list[bytes],
    special: np.ndarray,
    *,
    nl_terminal: int = -1,
    tab_len: int = 8,
    progress: Callable[[int], None] | None = None,
    contextual: bool = False,
) -> TokenTables:
    """Walk every token from every lexer state (vectorised over tokens).

    ``progress(k)`` is called with the number of lexer states finished since the last call.

    ``contextual``: tables for the contextual lexer (no indentation newline). A lexeme then
    ends where the next byte keeps no *allowed* terminal alive, which depends on the parser;
    so wherever the next byte shrinks the set of live terminals the walk forks into
    BRANCH(live class of the next state, node if the lexeme continues, node if it ends
    here), and a lexeme that ends is LEX(lexer state, tail) — the runtime picks its
    terminals from the state's accepting set. END classes are live-terminal classes.
    """
    n_states, n_terms = dfa.num_states, dfa.num_terminals
    trans = dfa.trans
    accept = dfa.accept
    ignored = dfa.ignored

    # end classes: what the lexeme a token stops inside can still lead to
    if contextual:
        if nl_terminal >= 0:
            raise ValueError("contextual tables do not support the indentation newline")
        # ignored terminals are always allowed, so which ones are live does not matter,
        # only whether one is (comment bodies of every kind share a class)
        live_plus = np.concatenate(
            [dfa.live & ~ignored[None, :],
             (dfa.live & ignored[None, :]).any(axis=1, keepdims=True)], axis=1
        )
        classes, state_class = np.unique(live_plus, axis=0, return_inverse=True)
    else:
        classes, state_class = np.unique(end_classes(dfa), axis=0, return_inverse=True)
    acc_any: np.ndarray = np.asarray(dfa.accepting.any(axis=1))
    # LEX nodes name a terminal set: the state's accepting set where no byte continues; at a
    # fork only the accepting terminals the continuation cannot keep alive (if the allowed
    # set met those, the lexeme would have continued), and no fork at all when that is empty
    # (the continuation then fails by itself), which keeps rows of similar states equal
    lex_set_ids: dict[bytes, int] = {}
    lex_set_rows: list[np.ndarray] = []

    def set_ids(rows: np.ndarray) -> np.ndarray:
        packed = np.packbits(rows, axis=1)
        uniq, inv = np.unique(packed, axis=0, return_inverse=True)
        ids = np.empty(len(uniq), dtype=np.int64)
        for j, r in enumerate(uniq):
            key = r.tobytes()
            n = lex_set_ids.get(key)
            if n is None:
                n = lex_set_ids[key] = len(lex_set_rows)
                lex_set_rows.append(np.unpackbits(r, count=n_terms).astype(bool))
            ids[j] = n
        return ids[inv.reshape(-1)]

    acc_id = set_ids(dfa.accepting) if contextual else np.zeros(0, dtype=np.int64)
    class_live = classes[:, :n_terms].astype(bool) if contextual else None
    state_class = state_class.reshape(-1).astype(np.int32)
    n_classes = classes.shape[0]
    interner = _Interner(n_classes)

    v = len(tokens)
    lens, buf, first_byte = token_matrix(tokens, special)
    lmax = buf.shape[1]

    # per-position indentation helpers (only used for the newline terminal)
    use_nl = nl_terminal >= 0
    if use_nl:
        # the carry of runtime.core.indentation: a newline or form feed resets it; counts of
        # spaces and tabs, broken by a tab after a space
        is_nl = (buf == 10) | (buf == 12)
        pos = np.arange(lmax)[None, :]
        # index of the last reset strictly before p (p = 0..lmax), -1 if none
        last_nl = np.full((v, lmax + 1), -1, dtype=np.int64)
        last_nl[:, 1:] = np.maximum.accumulate(np.where(is_nl, pos, -1), axis=1)
        nsp = np.zeros((v, lmax + 1), dtype=np.int64)
        nsp[:, 1:] = np.cumsum(buf == 32, axis=1)
        ntab = np.zeros((v, lmax + 1), dtype=np.int64)
        ntab[:, 1:] = np.cumsum(buf == 9, axis=1)
        last_tab = np.full((v, lmax + 1), -1, dtype=np.int64)
        last_tab[:, 1:] = np.maximum.accumulate(np.where(buf == 9, pos, -1), axis=1)
        # index of the first space at or after p (lmax if none)
        next_sp = np.full((v, lmax + 1), lmax, dtype=np.int64)
        next_sp[:, :lmax] = np.minimum.accumulate(
            np.where(buf == 32, pos, lmax)[:, ::-1], axis=1)[:, ::-1]

    # SUF[t, k]: node of walking t[k:] from the start state (-1 dead); column lmax = unused
    suf = np.full((v, lmax + 1), -1, dtype=np.int64)

    def walk(
        q_start: np.ndarray | None, idx: np.ndarray, k0: int | np.ndarray, from_start: bool,
        first: np.ndarray | None = None,
    ) -> np.ndarray:
        """Walk tokens ``idx`` from states ``q_start`` beginning at offset ``k0``; the first
        byte is assumed to continue the lexeme (``first``: the states after it, given
        instead of ``q_start``). Returns node ids (-1 dead)."""
        out = np.full(len(idx), -1, dtype=np.int64)
        k = np.broadcast_to(np.asarray(k0, dtype=np.int64), idx.shape).copy()
        lex_start = k.copy()
        if first is None:
            assert q_start is not None
            cur = trans[q_start, buf[idx, k]].astype(np.int64)
        else:
            cur = first.astype(np.int64)
        # contextual forks after the first byte (a fork at the first byte of a row's token is
        # the runtime's: the lexeme at q ends there, like a kill byte, when the next state's
        # live class meets nothing allowed)
        recs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        k += 1
        act = np.arange(len(idx))
        while act.size:
            ti = idx[act]
            done = k[act] >= lens[ti]
            if done.any():
                d = act[done]
                out[d] = state_class[cur[d]]
                act = act[~done]
                ti = idx[act]
            if not act.size:
                break
            nb = trans[cur[act], buf[ti, k[act]]]
            cont = nb >= 0
            if contextual:
                ca, nbc = act[cont], nb[cont]
                sh = state_class[nbc] != state_class[cur[ca]]
                if sh.any():
                    w = ca[sh]
                    cw = state_class[nbc[sh]]
                    recs.append((w, cw, lex_alt(cur[w], idx[w], k[w], cw)))
            cur[act[cont]] = nb[cont]
            k[act[cont]] += 1
            stop = act[~cont]
            if stop.size and contextual:
                ends = stop[acc_any[cur[stop]]]
                tail = suf[idx[ends], k[ends]]
                good = tail >= 0
                out[ends[good]] = interner.cons(acc_id[cur[ends[good]]], tail[good])
            elif stop.size:
                win = accept[cur[stop]]
                ok = win >= 0
                ends = stop[ok]
                if ends.size:
                    te = idx[ends]
                    ke = k[ends]
                    tail = suf[te, ke]
                    heads = win[ok].astype(np.int64)
                    good = tail >= 0
                    ends, te, ke, tail, heads = ends[good], te[good], ke[good], tail[good], heads[good]
                    res = tail.copy()
                    if use_nl:
                        nl = heads == nl_terminal
                        if nl.any():
                            ln = last_nl[te[nl], ke[nl]]
                            ls = lex_start[ends[nl]]
                            seg = np.maximum(ln + 1, ls)
                            tn, kn = te[nl], ke[nl]
                            lt = last_tab[tn, kn]
                            rel = (ln < ls) & (not from_start) & (ls == 0)
                            heads[nl] = nl_code(
                                n_terms, nsp[tn, kn] - nsp[tn, seg], ntab[tn, kn] - ntab[tn, seg],
                                (lt >= seg) & (next_sp[tn, seg] < lt), rel)
                    keep = (heads >= n_terms) | ~ignored[np.minimum(heads, n_terms - 1)]
                    if keep.any():
                        res[keep] = interner.cons(heads[keep], tail[keep])
                    out[ends] = res
            act = act[cont]
        for w, cls, alt in reversed(recs):  # fold the forks, last first
            f = alt >= 0  # no live alternative: the continuation alone decides
            if f.any():
                wf = w[f]
                out[wf] = interner.branch(cls[f], out[wf], alt[f])
        return out

    def lex_alt(states: np.ndarray, tidx: np.ndarray, kpos: np.ndarray,
                next_cls: np.ndarray) -> np.ndarray:
        """LEX(accepting terminals the next state cannot continue, the rest of the token from
        the start state), or -1 (dead)."""
        tail = suf[tidx, kpos]
        assert class_live is not None
        sets = dfa.accepting[states] & ~class_live[next_cls]
        ok = sets.any(axis=1) & (tail >= 0)
        res = np.full(len(states), -1, dtype=np.int64)
        if ok.any():
            res[ok] = interner.cons(set_ids(sets[ok]), tail[ok])
        return res

    # suffix walks from the start state, longest offsets first
    alive0 = trans[0]
    for k in range(lmax - 1, -1, -1):
        idx = np.flatnonzero(lens > k)
        if not idx.size:
            continue
        idx = idx[alive0[buf[idx, k]] >= 0]
        if not idx.size:
            continue
        suf[idx, k] = walk(np.zeros(len(idx), dtype=np.int64), idx, k, True)

    # per-state rows: tokens whose first byte continues the current lexeme. After that
    # byte the walk depends only on the state it leads to (the lexeme began before the
    # token either way), and many states lead to the same one on many bytes (every prefix
    # of a keyword into the identifier body, a string body into itself): walk the tokens
    # once per (state after the first byte, first byte) and let the rows share the result.
    indptr = [0]
    all_idx: list[np.ndarray] = []
    all_dat: list[np.ndarray] = []
    valid = np.flatnonzero(lens > 0)
    fb = buf[valid, 0].astype(np.int64)
    by_byte = valid[np.argsort(fb, kind="stable")]  # token ids grouped by first byte, ascending
    byte_start = np.zeros(257, dtype=np.int64)
    byte_start[1:] = np.cumsum(np.bincount(fb, minlength=256))
    inner = trans[1:] if n_states > 1 else np.zeros((0, 256), dtype=trans.dtype)
    shared: dict[tuple[int, int], np.ndarray] = {}  # (state after byte b, b) -> nodes
    walked = 0
    for s_after in np.unique(inner[inner >= 0]).tolist():
        bytes_in = np.flatnonzero((inner == s_after).any(axis=0))
        toks = np.concatenate([by_byte[byte_start[b]: byte_start[b + 1]] for b in bytes_in])
        if not toks.size:
            continue
        nodes = walk(None, toks, 0, False, first=np.full(len(toks), s_after))
        if progress is not None:  # a unit of the bar: one state's share of the walks
            progress(1)
            walked += 1
        off = 0
        for b in bytes_in.tolist():
            n = int(byte_start[b + 1] - byte_start[b])
            shared[(s_after, b)] = nodes[off: off + n]
            off += n
    dense = np.full(v, -1, dtype=np.int64)
    for q in range(n_states):
        if q == 0:
            node = suf[valid, 0]
            keep = node >= 0
            idx, node = valid[keep], node[keep]
        else:
            row = trans[q]
            for b in np.flatnonzero(row >= 0).tolist():
                got = shared.get((int(row[b]), b))
                if got is not None:
                    dense[by_byte[byte_start[b]: byte_start[b + 1]]] = got
            idx = np.flatnonzero(dense >= 0)
            node = dense[idx]
            dense[:] = -1
        all_idx.append(idx.astype(np.int32))
        all_dat.append((node + 1).astype(np.int32))
        indptr.append(indptr[-1] + len(idx))
    if progress is not None and n_states > walked:
        progress(n_states - walked)  # assembling the rows from the shared walks
    import scipy.sparse as sp

    rows = sp.csr_array(
        (
            np.concatenate(all_dat) if all_dat else np.zeros(0, np.int32),
            np.concatenate(all_idx) if all_idx else np.zeros(0, np.int32),
            np.array(indptr, dtype=np.int64),
        ),
        shape=(n_states, v),
    )
    rows, row_base = _delta_encode(rows, trans)
    node_head = np.concatenate(
        [np.full(n_classes, -1, dtype=np.int32), np.array(interner.heads, dtype=np.int32)]
    )
    node_tail = np.concatenate(
        [np.arange(n_classes, dtype=np.int32), np.array(interner.tails, dtype=np.int32)]
    )
    return TokenTables(
        rows_indptr=rows.indptr.astype(np.int64),
        rows_indices=rows.indices.astype(np.int32),
        rows_data=rows.data.astype(np.int32),
        vocab_size=v,
        row_base=row_base,
        node_head=node_head,
        node_tail=node_tail,
        class_winnable=classes.astype(bool),
        state_class=state_class,
        first_byte=first_byte,
        nl_terminal=nl_terminal,
        node_alt=(
            np.concatenate([np.full(n_classes, -1, dtype=np.int32),
                            np.array(interner.alts, dtype=np.int32)])
            if contextual else np.zeros(0, dtype=np.int32)
        ),
        lex_sets=(
            np.array(lex_set_rows, dtype=bool).reshape(len(lex_set_rows), n_terms) if contextual
            else np.zeros((0, n_terms), dtype=bool)
        ),
    )


_MATRICES: dict[int, tuple[list[bytes], bytes, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}


def token_matrix(tokens: list[bytes], special: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths, zero-padded byte matrix, first bytes) of a vocabulary, special tokens empty.

    The same for every grammar compiled against one vocabulary (a new JSON Schema per
    request): kept for the last few token lists (read-only arrays)."""
    key = id(tokens)
    hit = _MATRICES.get(key)
    if hit is not None and hit[0] is tokens and hit[1] == special.tobytes():
        return hit[2]
    v = len(tokens)
    lens = np.array([0 if special[i] else len(t) for i, t in enumerate(tokens)], dtype=np.int64)
    lmax = max(1, int(lens.max()) if v else 1)
    flat = np.frombuffer(b"".join(t for i, t in enumerate(tokens) if lens[i]), dtype=np.uint8)
    buf = np.zeros((v, lmax), dtype=np.uint8)
    rows = np.repeat(np.arange(v), lens)
    starts = np.cumsum(lens) - lens
    cols = np.arange(len(flat)) - np.repeat(starts, lens)
    buf[rows, cols] = flat
    first_byte = np.where(lens > 0, buf[:, 0].astype(np.int16), np.int16(-1)).astype(np.int16)
    for a in (lens, buf, first_byte):
        a.flags.writeable = False
    if len(_MATRICES) >= 4:
        _MATRICES.pop(next(iter(_MATRICES)))
    _MATRICES[key] = (tokens, special.tobytes(), (lens, buf, first_byte))
    return lens, buf, first_byte


def end_classes(dfa: LexerDFA) -> np.ndarray:
    """(S, T + 1) bool: per lexer state, the non-ignored terminals that can come next from it
    — as the winner of the lexeme in progress, or, if that lexeme can end as an ignored
    terminal, as a lexeme after it (which must start with a byte that ends the ignored one:
    after a Python comment, only a newline) — and, in the last column, whether the lexeme can
    end as an ignored terminal at all (so that the input may end there).

    This is what makes "a comment right after ``x.``" a dead end the mask excludes: the
    comment itself is ignored, but only a newline can follow it.
    """
    n, nt = dfa.num_states, dfa.num_terminals
    trans, accept, ignored = dfa.trans, dfa.accept.tolist(), dfa.ignored.tolist()
    ign_bits = sum(1 << t for t in range(nt) if ignored[t])
    win = [b & ~ign_bits for b in bits_of_rows(dfa.winnable)]
    ign_acc = [s for s in range(n) if accept[s] >= 0 and ignored[accept[s]]]
    preds: list[set[int]] = [set() for _ in range(n)]
    for q in range(n):
        for t in set(trans[q][trans[q] >= 0].tolist()):
            preds[t].add(q)
    reach: list[list[int]] = [[] for _ in range(n)]  # ignored-accepting states reachable
    for s in ign_acc:
        seen, stack = {s}, [s]
        while stack:
            x = stack.pop()
            reach[x].append(s)
            for y in preds[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
    start_row = trans[0]
    next_start = {
        s: sorted({int(start_row[b]) for b in range(256)
                   if trans[s, b] < 0 and start_row[b] >= 0})
        for s in ign_acc
    }
    eff = list(win)
    changed = True
    while changed:
        changed = False
        follow = {}
        for s in ign_acc:
            bits = 0
            for r in next_start[s]:
                bits |= eff[r]
            follow[s] = bits
        for q in range(n):
            bits = win[q]
            for s in reach[q]:
                bits |= follow[s]
            if bits != eff[q]:
                eff[q] = bits
                changed = True
    out = rows_of_bits(eff, nt + 1)
    out[:, nt] = [bool(r) for r in reach]
    return out


def _delta_encode(rows: sp.csr_array, trans: np.ndarray) -> tuple[sp.csr_array, np.ndarray]:
    """Store a row as its differences from a similar row when that is much smaller.

    States whose first byte continues the same byte set (keyword prefixes of NAME, the
    bodies of string terminals) have rows that differ in few tokens. The largest row of each
    such group is kept whole; the others keep (token, node + 1) where they differ, and
    (token, 0) where the base has the token and they do not.
    """
    import scipy.sparse as sp

    n = rows.shape[0]
    nnz = np.diff(rows.indptr)
    sig = np.packbits(trans >= 0, axis=1)
    _, group = np.unique(sig, axis=0, return_inverse=True)
    group = group.reshape(-1)
    base = np.full(n, -1, dtype=np.int32)
    out_rows: list[sp.csr_array] = []
    for q in range(n):
        members = np.flatnonzero(group == group[q])
        b = int(members[np.argmax(nnz[members])])
        if b != q and nnz[q] > 64:
            rq, rb = rows[[q]], rows[[b]]
            changed = (rq != rb).astype(np.int8)  # where the node differs or one side is missing
            diff_idx = changed.indices
            if len(diff_idx) < nnz[q] // 2:
                vals = rq[[0]].toarray().reshape(-1)[diff_idx] if len(diff_idx) else diff_idx
                out_rows.append(
                    sp.csr_array(
                        (vals.astype(np.int32), diff_idx.astype(np.int32), [0, len(diff_idx)]),
                        shape=(1, rows.shape[1]),
                    )
                )
                base[q] = b
                continue
        out_rows.append(rows[[q]])
    stacked = sp.vstack(out_rows, format="csr")
    return sp.csr_array(stacked), base


def expand_row(
    tables: TokenTables, q: int, bases: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Row ``q`` as (token ids ascending, node ids), base rows applied. ``bases``: a memo of
    expanded base rows (a table has a handful of bases, shared by most rows), which the
    runtime keeps so that a row costs its own entries, not a vocabulary-sized array."""
    lo, hi = tables.rows_indptr[q], tables.rows_indptr[q + 1]
    idx, dat = tables.rows_indices[lo:hi], tables.rows_data[lo:hi]
    b = int(tables.row_base[q])
    if b < 0:
        return idx.astype(np.int64), dat.astype(np.int64) - 1
    base = bases.get(b) if bases is not None else None
    if base is None:
        base = expand_row(tables, b, bases)
        if bases is not None:
            bases[b] = base
    bidx, bnode = base
    idx = idx.astype(np.int64)
    # q's entries replace the base's at the same tokens (data 0: the token is not in row q)
    pos = np.minimum(np.searchsorted(bidx, idx), max(len(bidx) - 1, 0))
    kept = np.ones(len(bidx), dtype=bool)
    if len(bidx):
        kept[pos[bidx[pos] == idx]] = False
    add = dat > 0
    ids = np.concatenate([bidx[kept], idx[add]])
    nodes = np.concatenate([bnode[kept], dat[add].astype(np.int64) - 1])
    order = np.argsort(ids, kind="stable")  # two ascending runs: a linear merge
    return ids[order], nodes[order]


def group_row(idx: np.ndarray, node: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A row's tokens grouped by outcome node: (distinct nodes ascending, tokens per node,
    tokens ordered by node then id)."""
    order = np.argsort(node, kind="stable")
    ns = node[order]
    if not len(ns):
        return ns, ns.copy(), idx[order]
    start = np.flatnonzero(np.concatenate(([True], ns[1:] != ns[:-1])))  # sorted already
    counts = np.diff(np.append(start, len(ns)))
    return ns[start], counts, idx[order]


def select_tokens(v: int, toks: np.ndarray, counts: np.ndarray, ok: np.ndarray,
                  full: Callable[[], np.ndarray]) -> np.ndarray:
    """A fresh (V,) bool vector of a grouped row's tokens (``group_row``) whose node is
    ``ok``, written from the smaller side: the allowed tokens into zeros, or the refused ones
    out of ``full()``, the row's whole token set (the caller's memo): scattering the indices
    is what a large row costs."""
    n_ok = int(counts[ok].sum())
    if 2 * n_ok <= len(toks):
        m = np.zeros(v, dtype=bool)
        m[toks[np.repeat(ok, counts)]] = True
        return m
    m = full().copy()
    if n_ok < len(toks):
        m[toks[np.repeat(~ok, counts)]] = False
    return m


def walk_token(
    dfa: LexerDFA, q: int, data: bytes
) -> tuple[list[tuple[int, int, int]], int] | None:
    """Reference walk of one token (pure Python): the completed lexemes as
    (terminal, start offset, end offset) — offsets in ``data``, start -1 when the lexeme began
    before it — and the final state; None if the token dies. Ignored terminals included."""
    trans, accept = dfa.trans, dfa.accept
    out = []
    start = -1 if q != 0 else 0
    for i, b in enumerate(data):
        nq = int(trans[q, b])
        if nq >= 0:
            q = nq
            continue
        a = int(accept[q])
        if a < 0 or q == 0:
            return None
        out.append((a, start, i))
        start = i
        q = int(trans[0, b])
        if q < 0:
            return None
    return out, q
