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

from collections.abc import Callable, Sequence

import numpy as np

from .lexer import LexerDFA
from .local_walks import small_local
from .token_walk import TokenWalker

__all__ = ["TokenTables", "build_token_tables", "lazy_token_tables", "walk_token"]


class TokenTables:
    """The compiled tables (see module docstring).

    Built in full (:func:`build_token_tables`), loaded from an artifact, or lazily
    (:func:`lazy_token_tables`): a lazy table walks a row when the runtime first reads it
    (:func:`expand_row`), and reading its CSR arrays (``rows_*``, ``nnz``, ``arrays``:
    saving, statistics) builds every row first, so that what is written is the full table.
    The node arrays of a lazy table grow as rows are built (``num_nodes``)."""

    def __init__(
        self, *, rows_indptr: np.ndarray, rows_indices: np.ndarray, rows_data: np.ndarray,
        vocab_size: int, row_base: np.ndarray, node_head: np.ndarray, node_tail: np.ndarray,
        class_winnable: np.ndarray, state_class: np.ndarray, first_byte: np.ndarray,
        nl_terminal: int, node_alt: np.ndarray | None = None, lex_sets: np.ndarray | None = None,
        lex_nl: np.ndarray | None = None, walker: TokenWalker | None = None,
    ) -> None:
        self._indptr = rows_indptr  # CSR (S, V): node id + 1 of tokens whose first byte continues q
        self._indices = rows_indices
        self._data = rows_data
        self.vocab_size = vocab_size
        self._base = row_base  # (S,) int32: -1, or the state whose row this row is a diff against
        self._head = node_head  # (N,) int32: terminal id, NL width code (>= T), or -1 for END
        self._tail = node_tail  # (N,) int32: next node, or winnable class for END
        self.class_winnable = class_winnable  # (C, T + 1) bool: see end_classes
        self.state_class = state_class  # (S,) int32: winnable class of each lexer state
        self.first_byte = first_byte  # (V,) int16: first byte of each token, -1 if special/empty
        self.nl_terminal = nl_terminal  # terminal id of the indentation newline, or -1
        # contextual tables only (empty in basic mode): BRANCH nodes' "lexeme ends" alternative
        self._alt = node_alt if node_alt is not None else np.zeros(0, dtype=np.int32)
        # contextual tables only: (K, T) bool, the terminal sets LEX nodes name (head = row)
        self._lex_sets = lex_sets if lex_sets is not None else np.zeros((0, 0), dtype=bool)
        # contextual tables with the indentation newline: (K,) int32, per LEX set the head
        # (encoding.nl_code) of the newline the lexeme would be, -1 if none (see set_ids)
        self._lex_nl = lex_nl if lex_nl is not None else np.zeros(0, dtype=np.int32)
        self.walker = walker  # a lazy table's rows still to walk (None once built in full)
        self._snapshot: tuple[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = (
            -1, (self._head, self._tail, self._alt, self._lex_sets))

    @property
    def contextual(self) -> bool:
        """Built for the contextual lexer (see ``build_token_tables(contextual=True)``)."""
        if self.walker is not None:
            return self.walker.contextual
        return bool(self._alt.size)

    @property
    def num_classes(self) -> int:
        return int(self.class_winnable.shape[0])

    @property
    def num_nodes(self) -> int:
        """Nodes so far (a lazy table's grow as its rows are walked)."""
        w = self.walker
        return len(w.interner) if w is not None else len(self._head)

    def nodes(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(node_head, node_tail, node_alt, lex_sets) as of now, read together."""
        w = self.walker
        if w is None:
            return self._head, self._tail, self._alt, self._lex_sets
        with w.lock:
            if self._snapshot[0] != len(w.interner):
                head, tail, alt = w.interner.node_arrays()
                sets = w.interner.lex_sets()
                if not w.contextual:
                    alt, sets = np.zeros(0, np.int32), np.zeros((0, w.n_terms), dtype=bool)
                self._snapshot = (len(head), (head, tail, alt, sets))
            return self._snapshot[1]

    @property
    def node_head(self) -> np.ndarray:
        return self.nodes()[0]

    @property
    def node_tail(self) -> np.ndarray:
        return self.nodes()[1]

    @property
    def node_alt(self) -> np.ndarray:
        return self.nodes()[2]

    @property
    def lex_sets(self) -> np.ndarray:
        return self.nodes()[3]

    @property
    def lex_nl(self) -> np.ndarray:
        """Per LEX set, its newline head or -1 (all -1 without the indentation newline);
        read after :meth:`nodes` it covers every set those nodes name."""
        w = self.walker
        if w is None:
            return self._lex_nl
        with w.lock:
            return w.interner.lex_nl()

    @property
    def row_base(self) -> np.ndarray:
        """A lazy table's rows are whole until it is built in full (then some are diffs)."""
        return self._base

    @property
    def rows_indptr(self) -> np.ndarray:
        self.materialize()
        return self._indptr

    @property
    def rows_indices(self) -> np.ndarray:
        self.materialize()
        return self._indices

    @property
    def rows_data(self) -> np.ndarray:
        self.materialize()
        return self._data

    @property
    def nnz(self) -> int:
        return int(self.rows_indptr[-1])

    def materialize(self) -> None:
        """Walk a lazy table's remaining rows and store it as a full table would be."""
        w = self.walker
        if w is None:
            return
        with w.lock:
            if self.walker is None:
                return
            full = _assemble(w)
            self._indptr, self._indices, self._data = full._indptr, full._indices, full._data
            self._head, self._tail, self._alt, self._lex_sets = full.nodes()
            self._lex_nl = full._lex_nl
            self._base = full._base
            self.walker = None

    def arrays(self) -> dict[str, np.ndarray]:
        self.materialize()
        return {
            "rows_indptr": self._indptr.astype(np.int64),
            "rows_indices": self._indices.astype(np.int32),
            "rows_data": self._data.astype(np.int32),
            "row_base": self._base,
            "node_head": self._head,
            "node_tail": self._tail,
            "class_winnable": np.packbits(self.class_winnable, axis=1),
            "state_class": self.state_class,
            "first_byte": self.first_byte,
            **({"node_alt": self._alt, "lex_sets": np.packbits(self._lex_sets, axis=1)}
               if self.contextual else {}),
            **({"lex_nl": self._lex_nl} if self.contextual and self.nl_terminal >= 0 else {}),
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
            lex_nl=np.asarray(a["lex_nl"], dtype=np.int32) if "lex_nl" in a else None,
        )


def build_token_tables(
    dfa: LexerDFA,
    tokens: Sequence[bytes],
    special: np.ndarray,
    *,
    nl_terminal: int = -1,
    tab_len: int = 8,
    progress: Callable[[int], None] | None = None,
    contextual: bool = False,
    end_ids: np.ndarray | None = None,
) -> TokenTables:
    """Walk every token from every lexer state (vectorised over tokens).

    ``progress(k)`` is called with the number of lexer states finished since the last call.

    ``contextual``: tables for the contextual lexer. A lexeme then
    ends where the next byte keeps no *allowed* terminal alive, which depends on the parser;
    so wherever the next byte shrinks the set of live terminals the walk forks into
    BRANCH(live class of the next state, node if the lexeme continues, node if it ends
    here), and a lexeme that ends is LEX(lexer state, tail) — the runtime picks its
    terminals from the state's accepting set. END classes are live-terminal classes. A set
    holding the indentation newline is named once per width the newline would carry
    (``lex_nl``), so the runtime can feed the parser that width.
    """
    w = TokenWalker(dfa, tokens, special, nl_terminal=nl_terminal, tab_len=tab_len,
                    contextual=contextual, end_ids=end_ids)
    # suffix walks from the start state, longest offsets first
    w.all_suffixes()
    # per-state rows: tokens whose first byte continues the current lexeme. After that
    # byte the walk depends only on the state it leads to (the lexeme began before the
    # token either way), and many states lead to the same one on many bytes (every prefix
    # of a keyword into the identifier body, a string body into itself): walk the tokens
    # once per (state after the first byte, first byte) and let the rows share the result.
    walked = _all_shared(w, progress)
    tables = _assemble(w)
    if progress is not None and dfa.num_states > walked:
        progress(dfa.num_states - walked)  # assembling the rows from the shared walks
    return tables


def _all_shared(w: TokenWalker, progress: Callable[[int], None] | None = None) -> int:
    """Every shared walk of ``w``: once per state a byte leads to from a state other than
    the start, over the tokens beginning with the bytes that lead there. Returns the number
    of walks (a unit of the progress bar each)."""
    inner = w.trans[1:] if w.n_states > 1 else np.zeros((0, 256), w.trans.dtype)
    walked = 0
    if w.nl_terminal < 0:  # which states a local walk can serve: one pass, not a search each
        w.small_local = small_local(w.trans)
    # (state after, byte) pairs, sorted by state then byte, in one pass over the table
    # (not a scan of the whole table per state: quadratic in the states)
    _, cols = np.nonzero(inner >= 0)
    pairs = np.unique(inner[inner >= 0].astype(np.int64) * 256 + cols)
    after, byte = pairs // 256, pairs % 256
    cuts = np.flatnonzero(np.diff(after)) + 1
    for grp_s, grp_b in zip(np.split(after, cuts), np.split(byte, cuts), strict=True):
        if not grp_s.size:
            continue
        s_after, bytes_in = int(grp_s[0]), grp_b.tolist()
        if not w.tokens_of(bytes_in).size:
            continue
        w.walk_shared([(s_after, bytes_in)])
        walked += 1
        if progress is not None:
            progress(1)
    return walked


def lazy_token_tables(
    dfa: LexerDFA, tokens: Sequence[bytes], special: np.ndarray, *, nl_terminal: int = -1,
    tab_len: int = 8, contextual: bool = False, end_ids: np.ndarray | None = None,
) -> TokenTables:
    """The tables of :func:`build_token_tables` with no row walked yet: each is walked when
    first read (a grammar compiled per request visits a few of its lexer states)."""
    w = TokenWalker(dfa, tokens, special, nl_terminal=nl_terminal, tab_len=tab_len,
                    contextual=contextual, end_ids=end_ids, share_rows=True)
    empty = np.zeros(0, dtype=np.int32)
    return TokenTables(
        rows_indptr=np.zeros(1, dtype=np.int64), rows_indices=empty, rows_data=empty,
        vocab_size=w.v, row_base=np.full(dfa.num_states, -1, dtype=np.int32),
        node_head=empty, node_tail=empty, class_winnable=w.classes.astype(bool),
        state_class=w.state_class, first_byte=w.first_byte, nl_terminal=nl_terminal,
        walker=w,
    )


def _assemble(w: TokenWalker) -> TokenTables:
    """The full table, every row walked, rows stored as diffs where small.

    States whose first byte continues the same byte set (keyword prefixes of NAME, the
    bodies of string terminals) have rows that differ in few tokens. The largest row of each
    such group is kept whole; the others keep (token, node + 1) where they differ, and
    (token, 0) where the base has the token and they do not. Rows are encoded one at a time
    from the shared walks they are made of (:func:`_row_diff`), so that peak memory is the
    encoded table, not every row expanded."""
    n, v = w.n_states, w.v
    nnz = np.array([w.row_nnz(q) for q in range(n)], dtype=np.int64)
    _, group = np.unique(np.packbits(w.trans >= 0, axis=1), axis=0, return_inverse=True)
    group = group.reshape(-1)
    base_of: dict[int, int] = {}
    for g in np.unique(group).tolist():
        members = np.flatnonzero(group == g)
        base_of[g] = int(members[np.argmax(nnz[members])])
    row_base = np.full(n, -1, dtype=np.int32)
    indptr = np.zeros(n + 1, dtype=np.int64)
    parts_i: list[np.ndarray] = []
    parts_d: list[np.ndarray] = []
    for q in range(n):
        b = base_of[int(group[q])]
        stored = False
        if b != q and nnz[q] > 64:
            got = (_row_diff(w, q, b, int(nnz[q]) // 2) if 0 not in (b, q)
                   else _dense_diff(w, q, b))
            if got is not None and len(got[0]) < nnz[q] // 2:
                parts_i.append(got[0])
                parts_d.append(got[1])
                row_base[q] = b
                stored = True
        if not stored:
            idx, node = w.row(q)
            parts_i.append(idx.astype(np.int32))
            parts_d.append((node + 1).astype(np.int32))
        indptr[q + 1] = indptr[q] + len(parts_i[-1])
    head, tail, alt = w.interner.node_arrays()
    return TokenTables(
        rows_indptr=indptr,
        rows_indices=np.concatenate(parts_i) if parts_i else np.zeros(0, np.int32),
        rows_data=np.concatenate(parts_d) if parts_d else np.zeros(0, np.int32),
        vocab_size=v,
        row_base=row_base,
        node_head=head,
        node_tail=tail,
        class_winnable=w.classes.astype(bool),
        state_class=w.state_class,
        first_byte=w.first_byte,
        nl_terminal=w.nl_terminal,
        node_alt=alt if w.contextual else np.zeros(0, dtype=np.int32),
        lex_sets=(w.interner.lex_sets() if w.contextual
                  else np.zeros((0, w.n_terms), dtype=bool)),
        lex_nl=w.interner.lex_nl() if w.contextual else None,
    )


def _dense_diff(w: TokenWalker, q: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_row_diff` over vocabulary-sized vectors (row 0 is not made of shared walks)."""
    dq, db = np.zeros(w.v, dtype=np.int32), np.zeros(w.v, dtype=np.int32)
    for d, r in ((dq, q), (db, b)):
        idx, node = w.row(r)
        d[idx] = node + 1
    diff = np.flatnonzero(dq != db)
    return diff.astype(np.int32), dq[diff]


def _row_diff(w: TokenWalker, q: int, b: int, limit: int
              ) -> tuple[np.ndarray, np.ndarray] | None:
    """Row ``q`` against row ``b`` of the same byte set: (token ids ascending, node + 1 in
    row ``q`` or 0) where they differ, or None once ``limit`` tokens differ (the row is
    then stored whole: neither sorted nor kept). Both rows are made of the shared walks of
    their bytes, so only the bytes on which ``q`` and ``b`` lead to different states can
    differ, and only those are compared (not two vocabulary-sized vectors)."""
    rq, rb = w.key_row(q), w.key_row(b)  # (the shared walks' keys)
    bb, bs = w.by_byte, w.byte_start
    ids: list[np.ndarray] = []
    data: list[np.ndarray] = []
    count = 0
    for x in np.flatnonzero((rq >= 0) & (rq != rb)).tolist():
        nq, nb = w.shared[(int(rq[x]), x)], w.shared[(int(rb[x]), x)]
        m = nq != nb
        ids.append(bb[bs[x]: bs[x + 1]][m])
        data.append(nq[m] + 1)
        count += len(ids[-1])
        if count >= limit:
            return None
    if not ids:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    t = np.concatenate(ids)
    order = np.argsort(t)
    return t[order].astype(np.int32), np.concatenate(data)[order].astype(np.int32)


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
