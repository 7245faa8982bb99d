"""Per-step masks from the compiled tables: a few table rows, decided node by node.

The mask at lexer state ``q`` and parser state ``p`` is the union of
  * row ``q``: tokens whose first byte continues the current lexeme, grouped by outcome node;
    a node is allowed iff the parser accepts its terminals and its final lexeme can still end
    with a terminal the parser then expects (``expects ∩ winnable``: seed 002's early error);
  * if the current lexeme can end here: row 0 evaluated after its terminal, restricted to the
    tokens whose first byte ends the lexeme (the "kill set" of ``q``).
Node decisions are memoised on the hash-consed parser state and whole masks in an LRU, so a
configuration met again costs a dictionary lookup.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..compiler.lexer import LexerDFA
from ..compiler.tables import TokenTables, expand_row
from .parse_state import ParserContext, PState

__all__ = ["MaskBuilder"]


class _Row:
    """Row ``q`` prepared for evaluation: tokens sorted by outcome node; the nodes split into
    END nodes (decided by one vector lookup) and CONS nodes grouped by their first terminal
    (a group whose terminal the parser does not expect is skipped whole)."""

    __slots__ = ("counts", "end_cls", "end_pos", "groups", "n", "tokens")

    def __init__(self, nodes: np.ndarray, counts: np.ndarray, tokens: np.ndarray,
                 head: np.ndarray, tail: np.ndarray) -> None:
        self.n = len(nodes)
        self.counts = counts
        self.tokens = tokens
        h, t = head[nodes], tail[nodes]
        end = h < 0
        self.end_pos = np.flatnonzero(end)
        self.end_cls = t[end]
        cons = np.flatnonzero(~end)
        order = cons[np.argsort(h[cons], kind="stable")]
        hs = h[order]
        cut = np.flatnonzero(np.diff(hs)) + 1
        self.groups = [
            (int(hh[0]), pp, t[pp].tolist())
            for hh, pp in zip(np.split(hs, cut), np.split(order, cut), strict=False)
            if len(pp)
        ]


class MaskBuilder:
    """Shared by every constraint of one compiled grammar (not thread-safe)."""

    ROW_CACHE = 96
    MASK_CACHE = 256

    def __init__(
        self, tables: TokenTables, dfa: LexerDFA, ctx: ParserContext, vocab_size: int,
        continuation_terminal: int = -1,
    ) -> None:
        self.tables = tables
        self.dfa = dfa
        self.ctx = ctx
        self.vocab_size = vocab_size
        self.num_terminals = dfa.num_terminals
        self.head = tables.node_head.tolist()
        self.tail = tables.node_tail.tolist()
        self.head_arr = tables.node_head.astype(np.int64)
        self.tail_arr = tables.node_tail.astype(np.int64)
        self.class_bits = [
            sum(1 << int(t) for t in np.flatnonzero(row)) for row in tables.class_winnable
        ]
        self.state_class = tables.state_class.tolist()
        self.accept = dfa.accept.tolist()
        self.ignored = dfa.ignored.tolist()
        self.trans = dfa.trans
        self.trans_rows = [row.tolist() for row in dfa.trans]
        self.nl_t = tables.nl_terminal
        self.continuation_t = continuation_terminal
        self.nl_live = dfa.live[:, self.nl_t].tolist() if self.nl_t >= 0 else None
        self._rows: OrderedDict[int, _Row] = OrderedDict()
        self._kill: dict[int, np.ndarray] = {}
        self._masks: OrderedDict[tuple, np.ndarray] = OrderedDict()
        self.first_byte = tables.first_byte.astype(np.int64)

    # ------------------------------------------------------------------ tables
    def row(self, q: int) -> _Row:
        r = self._rows.get(q)
        if r is not None:
            self._rows.move_to_end(q)
            return r
        idx, node = expand_row(self.tables, q)
        order = np.argsort(node, kind="stable")
        node_sorted = node[order]
        uniq, start = np.unique(node_sorted, return_index=True)
        counts = np.diff(np.append(start, len(node_sorted)))
        r = _Row(uniq, counts, idx[order], self.head_arr, self.tail_arr)
        self._rows[q] = r
        if len(self._rows) > self.ROW_CACHE:
            self._rows.popitem(last=False)
        return r

    def kill_set(self, q: int) -> np.ndarray:
        """Tokens whose first byte ends the lexeme in progress at ``q``."""
        k = self._kill.get(q)
        if k is None:
            fb = self.first_byte
            k = (fb >= 0) & (self.trans[q][np.maximum(fb, 0)] < 0)
            self._kill[q] = k
        return k

    # ------------------------------------------------------------------ decisions
    def class_ok(self, p: PState) -> list[bool]:
        """Per winnable class: could the lexeme in progress end with a terminal ``p`` expects?"""
        r = p.classes
        if r is None:
            bits = self.ctx.expects(p)
            r = p.classes = [(bits & c) != 0 for c in self.class_bits]
        return r

    def node_ok(self, p: PState, n: int, carry: int) -> bool:
        """Does the parser, at ``p``, accept what a token with outcome ``n`` does?"""
        h = self.head[n]
        if h < 0:
            c = p.classes
            if c is None:
                c = self.class_ok(p)
            return c[self.tail[n]]
        nt = self.num_terminals
        key: object = (n, carry) if h >= nt and (h - nt) & 1 else n
        memo = p.node_ok
        r = memo.get(key)
        if r is not None:
            return r
        if h < nt:
            if not (p.es.expected >> h) & 1:
                memo[key] = False
                return False
            p2 = self.ctx.shift(p, h)
        else:
            v = h - nt
            p2 = self.ctx.newline(p, (v >> 1) + (carry if v & 1 else 0))
        r = p2 is not None and self.node_ok(p2, self.tail[n], 0)
        memo[key] = r
        return r

    def row_tokens(self, p: PState, q: int, carry: int) -> np.ndarray:
        row = self.row(q)
        ok = np.zeros(row.n, dtype=bool)
        if row.end_pos.size:
            ok[row.end_pos] = np.array(self.class_ok(p), dtype=bool)[row.end_cls]
        expected = p.es.expected
        nt = self.num_terminals
        node_ok = self.node_ok
        for h, pos, tails in row.groups:
            if h < nt:
                if not (expected >> h) & 1:
                    continue
                p2 = self.ctx.shift(p, h)
            else:
                v = h - nt
                p2 = self.ctx.newline(p, (v >> 1) + (carry if v & 1 else 0))
            if p2 is None:
                continue
            ok[pos] = [node_ok(p2, t, 0) for t in tails]
        if ok.all():
            return row.tokens
        return row.tokens[np.repeat(ok, row.counts)]

    def lexeme_end(self, p: PState, q: int, carry: int, at_eof: bool = False) -> PState | None:
        """Parser state after the lexeme in progress ends here (None if it cannot)."""
        a = self.accept[q]
        if q == 0:
            return p
        if a < 0:
            return None
        if a == self.nl_t:
            return self.ctx.newline(p, 0 if at_eof else carry)
        if self.ignored[a]:
            return p
        return self.ctx.shift(p, a)

    def mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Allowed grammar tokens (bool, shape (V,)); never includes special tokens. Shared:
        callers must copy before writing."""
        ckey = (p, q, carry if self.nl_live is not None and self.nl_live[q] else 0)
        m = self._masks.get(ckey)
        if m is not None:
            self._masks.move_to_end(ckey)
            return m
        m = np.zeros(self.vocab_size, dtype=bool)
        m[self.row_tokens(p, q, carry)] = True
        if q != 0:
            p2 = self.lexeme_end(p, q, carry)
            if p2 is not None:
                m |= self.mask(p2, 0, 0) & self.kill_set(q)
        self._masks[ckey] = m
        if len(self._masks) > self.MASK_CACHE:
            self._masks.popitem(last=False)
        return m

    def complete(self, p: PState, q: int, carry: int) -> bool:
        """Is the text so far a member of the language?"""
        if q != 0 and self.accept[q] == self.continuation_t:
            return False  # a line continuation needs a next line
        p2 = self.lexeme_end(p, q, carry, at_eof=True)
        return p2 is not None and self.ctx.finish(p2)
