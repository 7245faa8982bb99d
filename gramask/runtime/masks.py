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

from typing import Any

import numpy as np

from ..compiler.lexer import LexerDFA
from ..compiler.tables import TokenTables, expand_row, group_row, select_tokens
from ..encoding import bits_of_rows, decode_nl, words_of_bits
from .contextual import ContextualLexer
from .limits import memo_size
from .memo import BoundedMemo
from .parse_state import ParserContext, PState

__all__ = ["MaskBuilder"]


class _Row:
    """Row ``q`` prepared for evaluation: tokens sorted by outcome node, and the outcome
    nodes arranged as a trie over the terminals they complete. Each trie level holds the
    nodes that end there (decided together by one vector lookup of their lexeme classes) and
    one subtree per next terminal (skipped whole when the parser does not expect it)."""

    __slots__ = ("counts", "end_cls", "end_pos", "full", "groups", "n", "nodes", "starts",
                 "tokens")

    def __init__(self, nodes: np.ndarray, counts: np.ndarray, tokens: np.ndarray,
                 head: np.ndarray, tail: np.ndarray) -> None:
        self.n = len(nodes)
        self.nodes = nodes
        self.counts = counts
        self.starts: np.ndarray | None = None  # see offsets
        self.tokens = tokens
        self.full: np.ndarray | None = None  # see all_tokens
        self.end_pos, self.end_cls, self.groups = _trie(
            np.arange(len(nodes)), nodes, head, tail
        )

    def all_tokens(self, v: int) -> np.ndarray:
        """(V,) bool of all the row's tokens (built on first use)."""
        if self.full is None:
            self.full = np.zeros(v, dtype=bool)
            self.full[self.tokens] = True
        return self.full

    def offsets(self) -> np.ndarray:
        """Where each node's tokens start in ``tokens`` (built on first use)."""
        if self.starts is None:
            self.starts = np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.int64)
        return self.starts


def _trie(
    pos: np.ndarray, cur: np.ndarray, head: np.ndarray, tail: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """(END positions, their classes, [(terminal, subtrie...)]) for nodes ``cur`` at ``pos``."""
    h, t = head[cur], tail[cur]
    end = h < 0
    cons = np.flatnonzero(~end)
    groups = []
    if cons.size:
        order = cons[np.argsort(h[cons], kind="stable")]
        hs = h[order]
        cut = np.flatnonzero(np.diff(hs)) + 1
        for hh, sel in zip(np.split(hs, cut), np.split(order, cut), strict=True):
            groups.append((int(hh[0]), *_trie(pos[sel], t[sel], head, tail)))
    return pos[end], t[end], groups


class MaskBuilder:
    """Shared by every constraint of one compiled grammar (not thread-safe)."""

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
        self.head_arr = tables.node_head.astype(np.int64)
        self.tail_arr = tables.node_tail.astype(np.int64)
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
        self.trans_rows = [row.tolist() for row in dfa.trans]
        self.nl_t = tables.nl_terminal
        self.continuation_t = continuation_terminal
        # set for grammars in the contextual lexer mode: it then answers walks and masks
        self.contextual: ContextualLexer | None = None
        # token budgets' planner (gramask.runtime.budget), built on the first budget
        self.planner: Any = None
        self.nl_live = dfa.live[:, self.nl_t].tolist() if self.nl_t >= 0 else None
        self._rows: BoundedMemo[int, _Row] = BoundedMemo(memo_size(limits.row_cache))
        # (V,) bool each: bounded like rows
        self._kill: BoundedMemo[int, np.ndarray] = BoundedMemo(memo_size(limits.row_cache))
        self._masks: BoundedMemo[tuple[PState, int, int], np.ndarray] = BoundedMemo(
            memo_size(limits.mask_cache)
        )
        self.first_byte = tables.first_byte.astype(np.int64)
        self._bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # see expand_row

    # ------------------------------------------------------------------ tables
    def row(self, q: int) -> _Row:
        r = self._rows.get(q)
        if r is not None:
            return r
        uniq, counts, tokens = group_row(*expand_row(self.tables, q, self._bases))
        r = _Row(uniq, counts, tokens, self.head_arr, self.tail_arr)
        self._rows.put(q, r)
        return r

    def kill_set(self, q: int) -> np.ndarray:
        """Tokens whose first byte ends the lexeme in progress at ``q``."""
        k = self._kill.get(q)
        if k is None:
            fb = self.first_byte
            k = (fb >= 0) & (self.trans[q][np.maximum(fb, 0)] < 0)
            self._kill.put(q, k)
        return k

    # ------------------------------------------------------------------ decisions
    def class_vector(self, p: PState) -> np.ndarray:
        """Per end class: can a token that stops inside a lexeme of that class lead somewhere
        from ``p``? (``p`` expects a terminal the lexeme can become or that can follow it past
        an ignored lexeme, or the input may end here.) Vectorised, memoised on ``p``."""
        r = p.classes_np
        if r is None:
            bits = self.ctx.expects(p) & ~self.ctx.ignored_bits
            w = words_of_bits(bits, self.class_words.shape[1])
            r = np.asarray((self.class_words & w).any(axis=1))
            if self.ctx.finish(p):  # the input may also end right after an ignored lexeme
                r = r | self.class_ignored_end
            p.classes_np = r
        return r

    def _verdicts(self, p: PState) -> np.ndarray:
        """Per end class, the verdict written for a row's nodes that end there (the
        fill-in-the-middle quotient refines it, :mod:`gramask.runtime.boundary`)."""
        return self.class_vector(p)

    def end_ok(self, p: PState, q: int) -> bool:
        """May the input stop mid-lexeme at state ``q`` with the parser at ``p``?"""
        return bool(self.class_vector(p)[self.state_class[q]])

    def _eval_trie(self, p: PState, groups: list[Any], ok: np.ndarray, carry: int) -> None:
        expected = p.es.expected
        nt = self.num_terminals
        ctx = self.ctx
        for h, end_pos, end_cls, sub in groups:
            if h < nt:
                if not (expected >> h) & 1:
                    continue
                p2 = ctx.shift(p, h)
            else:
                width, relative = decode_nl(nt, h)
                p2 = ctx.newline(p, width + carry if relative else width)
            if p2 is None:
                continue
            if end_pos.size:
                ok[end_pos] = self._verdicts(p2)[end_cls]
            if sub:
                self._eval_trie(p2, sub, ok, 0)

    def row_mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Row ``q``'s allowed tokens as a fresh bool vector."""
        row = self.row(q)
        ok = np.zeros(row.n, dtype=bool)
        if row.end_pos.size:
            ok[row.end_pos] = self.class_vector(p)[row.end_cls]
        self._eval_trie(p, row.groups, ok, carry)
        return select_tokens(self.vocab_size, row.tokens, row.counts, ok,
                             lambda: row.all_tokens(self.vocab_size))

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
        if self.contextual is not None:
            return self.contextual.mask(p, q, carry)
        ckey = (p, q, carry if self.nl_live is not None and self.nl_live[q] else 0)
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

    def complete(self, p: PState, q: int, carry: int) -> bool:
        """Is the text so far a member of the language?"""
        if self.contextual is not None:
            return self.contextual.complete(p, q, carry)
        if q != 0 and self.accept[q] == self.continuation_t:
            return False  # a line continuation needs a next line
        p2 = self.lexeme_end(p, q, carry, at_eof=True)
        return p2 is not None and self.ctx.finish(p2)
