"""Per-step masks from the compiled tables: one or two table rows, decided as tries.

The mask at lexer state ``q`` and parser state ``p`` is the union of
  * row ``q``: tokens whose first byte continues the current lexeme, grouped by outcome node;
    a node is allowed iff the parser accepts its terminals and its final lexeme can still end
    with a terminal the parser then expects (``expects ∩ winnable``: the early error of Microsoft's AICI controller interface);
  * if the current lexeme can end here: row 0 evaluated after its terminal, restricted to the
    tokens whose first byte ends the lexeme (the "kill set" of ``q``).
A row's nodes form a trie over the terminals they complete: the parser steps once per trie
edge it expects (memoised on the hash-consed parser states), and the nodes ending at a trie
vertex are decided by one vector lookup. Whole masks are kept in a bounded memo, so a
configuration met again costs a dictionary lookup.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import numpy as np

from ...compiler.lexer import LexerDFA
from ...compiler.table_rows import expand_row, group_row, select_tokens
from ...compiler.tables import TokenTables
from ...compiler.walk_inputs import wide_first_bytes
from ...encoding import bits_of_rows, words_of_bits
from ..limits import memo_size
from ..memo import BoundedMemo
from .contextual_lexer import ContextualLexer
from .earley import EXPECTED, BelowCut
from .end_conditions import EndConditions
from .indentation import newline_width
from .parse_state import ES, PUID, ParserContext, PState

__all__ = ["MaskBuilder", "walk_row_trie"]


class _TrieRow:
    """Row ``q`` prepared for evaluation: its tokens sorted by outcome node (``nodes``,
    ``counts``, ``tokens``), and the outcome nodes arranged as a trie over the terminals
    they complete. The trie is built in plain Python (a walk down each distinct node's cons
    list): numpy splits per trie vertex made a large row's first use cost ~10 ms (row 0 of
    SQL: ~3,000 vertices, each with its own small arrays). The nodes are kept in row order;
    ``order`` lists them by trie vertex, so that the nodes ending at vertex ``v`` are
    ``order[lo:hi]`` for ``(lo, hi) = spans[v]``, their END classes ``cls[lo:hi]``;
    ``children[v]``: (terminal or newline code, child vertex) pairs, sorted. Vertex 0 is
    the root."""

    __slots__ = ("children", "cls", "counts", "full", "n", "nodes", "order", "spans",
                 "starts", "tokens")

    def __init__(self, nodes: np.ndarray, counts: np.ndarray, tokens: np.ndarray,
                 head: list[int], tail: list[int]) -> None:
        self.n = len(nodes)
        self.nodes = nodes
        self.counts = counts
        self.tokens = tokens
        self.full: np.ndarray | None = None  # see all_tokens
        self.starts: np.ndarray | None = None  # see offsets
        children: list[dict[int, int]] = [{}]
        vert: list[int] = []
        cls: list[int] = []
        for m in nodes.tolist():
            v = 0
            h = head[m]
            while h >= 0:  # CONS(h, tail): down the edge h
                ch = children[v]
                c = ch.get(h)
                if c is None:
                    c = ch[h] = len(children)
                    children.append({})
                v = c
                m = tail[m]
                h = head[m]
            vert.append(v)
            cls.append(tail[m])  # END(class)
        va = np.array(vert, dtype=np.int64)
        self.order = np.argsort(va, kind="stable")
        self.cls = np.array(cls, dtype=np.int64)[self.order]
        bounds = np.searchsorted(va[self.order], np.arange(len(children) + 1)).tolist()
        self.spans = list(itertools.pairwise(bounds))
        self.children = [tuple(sorted(c.items())) for c in children]

    def all_tokens(self, v: int) -> np.ndarray:
        """(V,) bool of all the row's tokens (built on first use, and published only once
        filled: another thread may read it the moment it is set)."""
        full = self.full
        if full is None:
            full = np.zeros(v, dtype=bool)
            full[self.tokens] = True
            self.full = full
        return full

    def offsets(self) -> np.ndarray:
        """Where each node's tokens start in ``tokens`` (built on first use)."""
        if self.starts is None:
            self.starts = np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.int64)
        return self.starts


class _DeltaRow:
    """Row ``q`` as the table stores it when it is a diff against a base row (see
    ``tables._assemble``): the base row, the tokens whose outcome differs in ``q`` (a
    small :class:`_TrieRow`) and the base's tokens that ``q`` lacks. Its mask is the base's with
    those tokens patched: the vocabulary-sized base is prepared once and shared by the dozens
    of states whose rows are nearly the same (the keyword prefixes inside a name), instead of
    each state expanding, sorting and grouping its own ~100k-token copy on its first visit."""

    __slots__ = ("base", "diff", "removed")

    def __init__(self, base: int, diff: _TrieRow, removed: np.ndarray) -> None:
        self.base = base
        self.diff = diff
        self.removed = removed


def walk_row_trie(ctx: ParserContext, num_terminals: int, p: PState, row: _TrieRow,
                  visit: Callable[[PState, int], None], carry: int) -> None:
    """Follow ``row``'s trie from parser state ``p``: ``visit(state, vertex)`` at the root
    and at every vertex the parser reaches, one parser step per edge it expects (a
    terminal, or a newline of a known width). Masks, the budget planner and
    fill-in-the-middle's boundary check all decide a row's nodes this way."""
    visit(p, 0)
    _walk_from(ctx, num_terminals, p, row, 0, visit, carry)


def _walk_from(ctx: ParserContext, nt: int, p: PState, row: _TrieRow, v: int,
               visit: Callable[[PState, int], None], carry: int) -> None:
    expected = p[ES][EXPECTED]
    children = row.children
    for h, child in children[v]:
        if h < nt and not (expected >> h) & 1:
            continue
        _edge(ctx, nt, p, row, h, child, visit, carry)


def _edge(ctx: ParserContext, nt: int, p: PState, row: _TrieRow, h: int, child: int,
          visit: Callable[[PState, int], None], carry: int) -> None:
    """One edge of ``row``'s trie from ``p`` (``h``: a terminal or an encoded newline), then
    the subtree below it."""
    p2 = ctx.shift(p, h) if h < nt else ctx.newline(p, newline_width(nt, h, carry))
    if p2 is None:
        return
    visit(p2, child)
    if row.children[child]:  # most vertices are leaves: no call for them
        _walk_from(ctx, nt, p2, row, child, visit, 0)


def walk_row_trie_cut(ctx: ParserContext, num_terminals: int, p: PState, row: _TrieRow,
                      visit: Callable[[PState, int], None], carry: int) -> None:
    """:func:`walk_row_trie` for a ``visit`` that only reads the states it is given: each
    edge's subtree is walked from ``p`` cut to its own items first (see
    :meth:`~gramask.runtime.core.earley.Automaton.cut`), whose steps are shared by every
    position with the same items, and again from ``p`` where a step completes a phrase
    below the cut (the subtree's vertices are then visited again, with the same verdicts
    where the first walk got that far)."""
    visit(p, 0)
    top = ctx.cut(p, 1)
    if top is p:
        _walk_from(ctx, num_terminals, p, row, 0, visit, carry)
        return
    expected = p[ES][EXPECTED]
    for h, child in row.children[0]:
        if h < num_terminals and not (expected >> h) & 1:
            continue
        try:
            _edge(ctx, num_terminals, top, row, h, child, visit, carry)
        except BelowCut:
            _edge(ctx, num_terminals, p, row, h, child, visit, carry)


class MaskBuilder:
    """Shared by every constraint of one compiled grammar (and by their threads: see the
    runtime contract in :mod:`gramask.runtime.core.constraint`)."""

    # (parser state id, lexer state, carry) → ``mask``
    _masks: BoundedMemo[tuple[int, int, int], np.ndarray]
    # (parser state id, lexer state, carry, EOS id) → ``mask`` packed with its EOS bit: see
    # ``packed_mask``
    _packed: BoundedMemo[tuple[int, int, int, int], np.ndarray]

    def __init__(
        self, tables: TokenTables, dfa: LexerDFA, ctx: ParserContext, vocab_size: int,
        continuation_terminal: int = -1,
    ) -> None:
        limits = ctx.automaton.limits
        self.limits = limits
        self.tables = tables
        self.dfa = dfa
        self.ctx = ctx
        self.vocab_size = vocab_size
        self.num_terminals = dfa.num_terminals
        self.head_l: list[int] = tables.node_head.tolist()
        self.tail_l: list[int] = tables.node_tail.tolist()
        self._nodes_lock = threading.Lock()  # see _sync_nodes
        cw = tables.class_winnable
        class_bits = bits_of_rows(cw[:, :-1])
        self.class_ignored_end = cw[:, -1].copy()
        # winnable classes as 64-bit words, for one vectorised "expects ∩ winnable" per state
        n_words = max(1, (dfa.num_terminals + 63) // 64)
        self.class_words = np.array(
            [words_of_bits(b, n_words) for b in class_bits], dtype=np.uint64
        ).reshape(len(class_bits), n_words)
        self.state_class = tables.state_class.tolist()
        self.accept = dfa.accept.tolist()
        self.ignored = dfa.ignored.tolist()
        self.trans = dfa.trans
        self.trans_rows = dfa.rows()
        self.nl_t = tables.nl_terminal
        self.continuation_t = continuation_terminal
        # set for grammars in the contextual lexer mode: it then answers walks and masks
        self.contextual: ContextualLexer | None = None
        # lexemes that can end only where some follower cannot start (set by the compiled
        # grammar: gramask.runtime.core.end_conditions)
        self.end_conditions: EndConditions | None = None
        # token budgets' planner (gramask.runtime.budget.planner), built on the first budget
        self.planner: object = None
        self.nl_live = dfa.live[:, self.nl_t].tolist() if self.nl_t >= 0 else None
        # rows expanded in full (``row``), and as masks use them (``_mask_row``: a diff row
        # is small, its base is a full row)
        self._rows: BoundedMemo[int, _TrieRow] = BoundedMemo(memo_size(limits.row_cache))
        self._mrows: BoundedMemo[int, _TrieRow | _DeltaRow] = BoundedMemo(
            memo_size(limits.row_cache))
        # (V,) bool each: bounded like rows
        self._kill: BoundedMemo[bytes, np.ndarray] = BoundedMemo(memo_size(limits.row_cache))
        self._kill_sig: dict[int, bytes] = {}  # lexer state → the bytes that continue it
        # (row, verdicts of its nodes) → its tokens: parser states that decide a row alike
        # share the vocabulary-sized scatter (returned copied: callers write to masks)
        self._selected: BoundedMemo[tuple[int, bytes], np.ndarray] = BoundedMemo(
            memo_size(limits.row_cache))
        self.forget_masks()
        self.first_byte = wide_first_bytes(tables.first_byte)[0]
        self._bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # see expand_row
        # expected terminals → class vectors: (if the input may not end here, if it may; None
        # when the same) (see ``class_vector``)
        self._class_vecs: BoundedMemo[int, tuple[np.ndarray, np.ndarray | None]] = (
            BoundedMemo(4096))

    def forget_masks(self) -> None:
        """Fresh, empty memos of masks. They are keyed by parser state ids, which are per
        parser context, and hold what a boundary filter let through: a copy of this builder
        for another parser (the quotient of fill-in-the-middle) or with a boundary filter
        calls this, and keeps sharing the lexer-side tables and memos."""
        n = memo_size(self.limits.mask_cache)
        self._masks = BoundedMemo(n)
        self._packed = BoundedMemo(n)

    # ------------------------------------------------------------------ tables
    def row(self, q: int) -> _TrieRow:
        """Row ``q`` expanded in full (also where the table stores it as a diff)."""
        r = self._rows.get(q)
        if r is not None:
            return r
        ids, nodes = expand_row(self.tables, q, self._bases)
        self._sync_nodes()  # before the trie reads the nodes
        r = _TrieRow(*group_row(ids, nodes), self.head_l, self.tail_l)
        self._rows.put(q, r)
        return r

    def _sync_nodes(self) -> None:
        """A lazily built table's nodes grow with its rows: extend the lists (in place:
        copies of this builder share them, and their lock). One thread extends them; the
        tails first, because readers take the heads' length as the nodes they may read."""
        if self.tables.num_nodes == len(self.head_l):
            return
        with self._nodes_lock:
            head, tail = self.tables.nodes()[:2]  # read together
            k = len(self.head_l)
            if len(head) > k:
                self.tail_l.extend(tail[k:].tolist())
                self.head_l.extend(head[k:].tolist())

    def _mask_row(self, q: int) -> _TrieRow | _DeltaRow:
        """Row ``q`` as masks use it: a diff against its base row when stored as one."""
        r = self._mrows.get(q)
        if r is not None:
            return r
        tb = self.tables
        b = int(tb.row_base[q])
        if b < 0:
            r = self.row(q)
        else:
            self._sync_nodes()
            lo, hi = int(tb.rows_indptr[q]), int(tb.rows_indptr[q + 1])
            idx = tb.rows_indices[lo:hi].astype(np.int64)
            dat = tb.rows_data[lo:hi].astype(np.int64)
            add = dat > 0  # (token, node + 1) where q differs; (token, 0) where q lacks it
            uniq, counts, tokens = group_row(idx[add], dat[add] - 1)
            r = _DeltaRow(b, _TrieRow(uniq, counts, tokens, self.head_l, self.tail_l),
                          idx[~add])
        self._mrows.put(q, r)
        return r

    def kill_set(self, q: int) -> np.ndarray:
        """Tokens whose first byte ends the lexeme in progress at ``q``."""
        sig = self._kill_sig.get(q)
        if sig is None:
            # it depends only on which bytes continue q, which whole groups of states share
            sig = self._kill_sig[q] = np.packbits(self.trans[q] >= 0).tobytes()
        k = self._kill.get(sig)
        if k is None:
            fb = self.first_byte
            k = (fb >= 0) & (self.trans[q][np.maximum(fb, 0)] < 0)
            self._kill.put(sig, k)
        return k

    # ------------------------------------------------------------------ decisions
    def class_vector(self, p: PState) -> np.ndarray:
        """Per end class: can a token that stops inside a lexeme of that class lead somewhere
        from ``p``? (``p`` expects a terminal the lexeme can become or that can follow it past
        an ignored lexeme, or the input may end here.) Vectorised, memoised on ``p``. Whether
        the input may end (``finish``: for an indentation grammar, a newline and dedents
        stepped through the parser) is asked only when it changes the verdict of a class."""
        memo = self.ctx.class_vectors
        r = memo.young.get(p[PUID])
        if r is None:
            r = memo.get(p[PUID])
        if r is None:
            bits = self.ctx.keep_openers(p, self.ctx.expects(p) & ~self.ctx.ignored_bits)
            # all it depends on: thousands of states share a few hundred of these
            vecs = self._class_vecs.get(bits)
            if vecs is None:
                w = words_of_bits(bits, self.class_words.shape[1])
                r0 = np.asarray((self.class_words & w).any(axis=1))
                # the input may also end right after an ignored lexeme
                r1 = r0 | self.class_ignored_end
                vecs = (r0, r1 if (r1 != r0).any() else None)
                self._class_vecs.put(bits, vecs)
            r0, ends = vecs
            r = ends if ends is not None and self.ctx.finish(p) else r0
            if self.end_conditions is not None:  # (none for the bundled grammars)
                r = self.end_conditions.refine(self.ctx, p, bits, r)
            memo.put(p[PUID], r)
        return r

    def _verdicts(self, p: PState) -> np.ndarray:
        """Per end class, the verdict for a row's nodes that end there: ``class_vector``
        (the fill-in-the-middle quotient refines it, :mod:`gramask.runtime.fim.boundary`)."""
        return self.class_vector(p)

    def end_ok(self, p: PState, q: int) -> bool:
        """May the input stop mid-lexeme at state ``q`` with the parser at ``p``?"""
        return bool(self.class_vector(p)[self.state_class[q]])

    def _row_ok(self, p: PState, row: _TrieRow, carry: int) -> np.ndarray:
        """Per distinct node of ``row``: is it allowed at ``p``? The parser steps once per
        trie edge it expects; the nodes ending at a vertex are decided by one lookup of
        their classes."""
        ok = np.zeros(row.n, dtype=bool)
        spans, order, cls = row.spans, row.order, row.cls

        def decide(p2: PState, v: int) -> None:
            lo, hi = spans[v]
            if lo < hi:
                ok[order[lo:hi]] = self.class_vector(p2)[cls[lo:hi]]

        walk_row_trie_cut(self.ctx, self.num_terminals, p, row, decide, carry)
        return ok

    def row_mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Row ``q``'s allowed tokens as a fresh bool vector."""
        row = self._mask_row(q)
        if isinstance(row, _DeltaRow):
            m = self.row_mask(p, row.base, carry)
            m[row.removed] = False
            d = row.diff
            if d.n:
                m[d.tokens] = np.repeat(self._row_ok(p, d, carry), d.counts)
            return m
        ok = self._row_ok(p, row, carry)
        skey = (q, ok.tobytes())
        sel = self._selected.get(skey)
        if sel is None:
            sel = select_tokens(self.vocab_size, row.tokens, row.counts, ok,
                                lambda: row.all_tokens(self.vocab_size))
            self._selected.put(skey, sel)
        return sel.copy()

    def lexeme_end(self, p: PState, q: int, carry: int, at_eof: bool = False) -> PState | None:
        """Parser state after the lexeme in progress ends here (None if it cannot)."""
        a = self.accept[q]
        if q == 0:
            return p
        if a < 0:
            return None
        if a == self.nl_t:
            return self.ctx.newline(p, 0 if at_eof and self.ctx.cpython_ends else carry)
        if self.ignored[a]:
            return p
        return self.ctx.shift(p, a)

    def mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Allowed grammar tokens (bool, shape (V,)); never includes special tokens. Shared:
        callers must copy before writing."""
        if self.contextual is not None:
            return self.contextual.mask(p, q, carry)
        ckey = (p[PUID], q, carry if self.nl_live is not None and self.nl_live[q] else 0)
        m = self._masks.get(ckey)
        if m is not None:
            return m
        m = self.row_mask(p, q, carry)
        if q != 0:
            p2 = self.lexeme_end(p, q, carry)
            if p2 is not None:
                m |= self.mask(p2, 0, 0) & self.kill_set(q)
        self._masks.put(ckey, m)
        return m

    def packed_mask(self, p: PState, q: int, carry: int, eos: int) -> np.ndarray:
        """:meth:`mask` with token ``eos`` set iff :meth:`complete` (``eos`` < 0: none), as
        little-endian packed bits (a bitmask row's bytes): ``allowed()`` packed. Shared,
        never written: a server's bitmask fill of a configuration met before is one lookup
        and a 16 KB copy, not a pack of 129k bools. Keyed like the mask memo (a mask and
        its completeness are functions of the configuration), in a memo of its own, 1/8 of
        the mask memo's size at most."""
        key = (p[PUID], q, carry, eos)
        pk = self._packed.young.get(key)
        if pk is None:
            pk = self._packed.get(key)
        if pk is not None:
            return pk
        pk = np.packbits(self.mask(p, q, carry), bitorder="little")
        if 0 <= eos < self.vocab_size:
            byte, bit = eos >> 3, 1 << (eos & 7)
            pk[byte] = (int(pk[byte]) | bit) if self.complete(p, q, carry) else (
                int(pk[byte]) & ~bit & 0xFF)
        pk.flags.writeable = False
        self._packed.put(key, pk)
        return pk

    def complete(self, p: PState, q: int, carry: int) -> bool:
        """Is the text so far a member of the language?"""
        if self.contextual is not None:
            return self.contextual.complete(p, q, carry)
        if q != 0 and self.accept[q] == self.continuation_t:
            return False  # a line continuation needs a next line
        p2 = self.lexeme_end(p, q, carry, at_eof=True)
        return p2 is not None and self.ctx.finish(p2)
