"""The contextual lexer mode at runtime: only the terminals the parser can take compete.

A lexeme that starts with the parser at ``p`` is lexed under the allowed set
``A = expects(p)`` (the terminals some live Earley item can shift, plus every ``%ignore``d
terminal). ``p`` only changes when a lexeme ends, so the runtime state (lexer state ``q``,
indentation carry, ``p``) already determines ``A``. Walking a byte from ``q``:

* the lexeme continues iff the product DFA's next state keeps some terminal of ``A`` alive;
* otherwise it ends as ``accepting(q) ∩ A`` restricted to the highest priority present. If
  that set holds non-ignored terminals the parser shifts all of them at once (the union of the
  Earley items that can shift any of them: "the lexeme is each of them, the parser continues
  with whichever fits"); if it holds only ignored ones the lexeme is dropped; the indentation
  newline, when present, wins.

Masks come from the contextual token tables when the grammar has them (every grammar
without Python-style indentation): a table entry is a small tree of BRANCH / LEX / END nodes
(see ``gramask.compiler.tables``), decided here vectorised over a row's distinct nodes — a
BRANCH by one lookup of "does the allowed set meet this live class", a LEX by stepping the
parser once per distinct accepting set. Grammars with indentation fall back to walking the
vocabulary as a byte trie (exact, but its cost grows with the number of live tokens).
``advance`` walks the token's bytes with the same rule.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np

from ..compiler.tables import TokenTables, expand_row, group_row, select_tokens
from .lexing import NEWLINE, indent_widths
from .limits import memo_size
from .memo import BoundedMemo
from .parse_state import ParserContext, PState

if TYPE_CHECKING:
    from ..compiler.lexer import LexerDFA

__all__ = ["ContextualLexer"]

LexState = tuple[int, int, PState]


def _words(rows: np.ndarray) -> np.ndarray:
    """(n, T) bool → (n, ceil(T / 64)) uint64 bitsets (terminal t = bit t % 64 of word t // 64)."""
    n, t = rows.shape
    w = max(1, (t + 63) // 64)
    padded = np.zeros((n, w * 64), dtype=bool)
    padded[:, :t] = rows
    return np.packbits(padded.reshape(n, w, 64), axis=2, bitorder="little").view("<u8")[:, :, 0]


def _int_words(bits: int, w: int) -> np.ndarray:
    return np.array([(bits >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(w)], dtype=np.uint64)


def _bits(row: np.ndarray) -> int:
    out = 0
    for t in np.flatnonzero(row).tolist():
        out |= 1 << t
    return out


class _Trie:
    """The vocabulary's non-special tokens as a byte trie: per node, children and the token
    ids that end there."""

    __slots__ = ("children", "ends")

    def __init__(self, tokens: list[bytes], special: np.ndarray) -> None:
        children: list[dict[int, int]] = [{}]
        ends: list[list[int]] = [[]]
        for i, tok in enumerate(tokens):
            if special[i] or not tok:
                continue
            n = 0
            for b in tok:
                c = children[n].get(b)
                if c is None:
                    c = len(children)
                    children[n][b] = c
                    children.append({})
                    ends.append([])
                n = c
            ends[n].append(i)
        self.children = [tuple(sorted(c.items())) for c in children]
        self.ends = [np.array(e, dtype=np.int64) if e else None for e in ends]


class ContextualLexer:
    """Walks, lexeme ends, end checks and masks under the contextual rule (shared, not
    thread-safe, like :class:`~gramask.runtime.masks.MaskBuilder`)."""


    def __init__(
        self,
        dfa: LexerDFA,
        ctx: ParserContext,
        priorities: list[int],
        tokens: list[bytes],
        special: np.ndarray,
        *,
        nl_terminal: int = -1,
        continuation_terminal: int = -1,
        tab_len: int = 8,
        tables: TokenTables | None = None,
    ) -> None:
        self.ctx = ctx
        self.rows = [row.tolist() for row in dfa.trans]
        self.live = [_bits(r) for r in dfa.live]
        self.accepting = [_bits(r) for r in dfa.accepting]
        self.ignored_bits = _bits(dfa.ignored)
        self.prio = priorities
        self.nl_t = nl_terminal
        self.cont_t = continuation_terminal
        self.tab = tab_len
        self.widths = indent_widths(tab_len)
        self.vocab_size = len(tokens)
        self._tokens = tokens
        self._special = special
        self._trie: _Trie | None = None
        limits = ctx.automaton.limits  # the bounds every memo of this runtime follows
        self._masks: BoundedMemo[tuple[PState, int, int], np.ndarray] = BoundedMemo(
            memo_size(limits.mask_cache))
        self.tables = tables
        if tables is not None:
            self.head = tables.node_head.astype(np.int64)
            self.tail = tables.node_tail.astype(np.int64)
            self.alt = tables.node_alt.astype(np.int64)
            self.class_has_ignored = tables.class_winnable[:, -1].copy()
            self.acc_bits = [_bits(r) for r in tables.lex_sets]
            self.acc_words = _words(tables.lex_sets)
            sig_rows = tables.class_winnable[:, :-1] & ~dfa.ignored[None, :]
            self.class_sig_words = _words(sig_rows)
            self.trans = dfa.trans
            self.state_class = tables.state_class.astype(np.int64)
            self.first_byte = tables.first_byte.astype(np.int64)
            self._fb_ok = self.first_byte >= 0
            self._bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # see expand_row
            # row → (V,) bool of all its tokens (see ``select_tokens``)
            self._full: BoundedMemo[int, np.ndarray] = BoundedMemo(memo_size(limits.row_cache))
            self._fb_idx = np.maximum(self.first_byte, 0)
            # (lexer state, allowed terminals) → kill set: few distinct allowed sets recur
            self._kills: BoundedMemo[tuple[int, int], np.ndarray] = BoundedMemo(
                memo_size(limits.row_cache)
            )
            self._rows: BoundedMemo[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = (
                BoundedMemo(memo_size(limits.row_cache))
            )
            # (parser state, distinct tail nodes) → verdicts: the lexemes after a token's
            # first completed one meet the same parser states again and again
            self._sub: BoundedMemo[tuple[int, bytes], np.ndarray] = BoundedMemo(8192)
            # the same per single node, for the many small tail sets (numpy costs more there)
            self._one: BoundedMemo[tuple[int, int], bool] = BoundedMemo(65536)
            self.head_l = self.head.tolist()
            self.tail_l = self.tail.tolist()
            self.alt_l = self.alt.tolist()

    def for_context(self, ctx: ParserContext) -> ContextualLexer:
        """The same lexer over another parser (the quotient of fill-in-the-middle): the
        lexer-side tables and memos are shared, the ones keyed by parser states are fresh
        (parser state ids are per context)."""
        c = copy.copy(self)
        c.ctx = ctx
        limits = ctx.automaton.limits
        c._masks = BoundedMemo(memo_size(limits.mask_cache))
        if self.tables is not None:
            c._sub = BoundedMemo(8192)
            c._one = BoundedMemo(65536)
        return c

    # ------------------------------------------------------------------ one lexeme
    def allowed(self, p: PState) -> int:
        """The terminals that compete for a lexeme starting at parser state ``p``."""
        return self.ctx.expects(p)

    def winners(self, q: int, a: int) -> int:
        """The terminals a lexeme ending at ``q`` under allowed set ``a`` is: the allowed
        accepting terminals of the highest priority among them (0: none)."""
        return self._winners(self.accepting[q] & a)

    def _winners(self, acc: int) -> int:
        if not acc or not (acc & (acc - 1)):
            return acc
        best, out, b = None, 0, acc
        prio = self.prio
        while b:
            low = b & -b
            t = low.bit_length() - 1
            b ^= low
            pr = prio[t]
            if best is None or pr > best:
                best, out = pr, low
            elif pr == best:
                out |= low
        return out

    def lexeme_end(self, p: PState, q: int, carry: int, at_eof: bool = False) -> PState | None:
        """Parser state after the lexeme in progress at ``q`` ends here (None if it cannot)."""
        if q == 0:
            return p
        return self._end_with(p, self.accepting[q], carry, at_eof)

    def _end_with(self, p: PState, accepting: int, carry: int, at_eof: bool = False
                  ) -> PState | None:
        w = self._winners(accepting & self.allowed(p))
        if not w:
            return None
        if self.nl_t >= 0 and (w >> self.nl_t) & 1:
            return self.ctx.newline(p, 0 if at_eof else carry)
        sh = w & ~self.ignored_bits
        if not sh:
            return p
        return self.ctx.shift_any(p, sh)

    def end_ok(self, p: PState, q: int) -> bool:
        """May the input stop mid-lexeme at ``q``? Some allowed terminal is still alive and
        is either significant (the parser takes it: it is in ``expects(p)``) or ignored with
        something able to follow it."""
        live = self.live[q] & self.allowed(p)
        if live & ~self.ignored_bits:
            return True
        if not live:
            return False
        return bool(p.es.expected) or self.ctx.finish(p)

    def complete(self, p: PState, q: int, carry: int) -> bool:
        if q != 0 and self.cont_t >= 0 and (self.accepting[q] >> self.cont_t) & 1:
            return False  # a line continuation needs a next line
        p2 = self.lexeme_end(p, q, carry, at_eof=True)
        return p2 is not None and self.ctx.finish(p2)

    # ------------------------------------------------------------------ bytes
    def step(self, q: int, carry: int, p: PState, byte: int) -> LexState | None:
        """One byte; None if no lexeme can take it."""
        rows, live, widths = self.rows, self.live, self.widths
        nq = rows[q][byte]
        if nq < 0 or not live[nq] & self.allowed(p):
            if q == 0:
                return None
            p2 = self.lexeme_end(p, q, carry)
            if p2 is None:
                return None
            p, carry = p2, 0
            nq = rows[0][byte]
            if nq < 0 or not live[nq] & self.allowed(p):
                return None
        carry = 0 if byte == NEWLINE else carry + widths[byte]
        return (nq, carry, p)

    def walk(self, st: LexState, data: bytes) -> LexState | int:
        """Feed bytes; the new state, or the offset where the offending lexeme starts."""
        q, carry, p = st
        rows, live, allowed, widths = self.rows, self.live, self.allowed, self.widths
        lex_start = 0
        for i, byte in enumerate(data):
            nq = rows[q][byte]
            if nq < 0 or not live[nq] & allowed(p):
                if q == 0:
                    return i
                p2 = self.lexeme_end(p, q, carry)
                if p2 is None:
                    return lex_start
                p, carry, lex_start = p2, 0, i
                nq = rows[0][byte]
                if nq < 0 or not live[nq] & allowed(p):
                    return i
            q = nq
            carry = 0 if byte == NEWLINE else carry + widths[byte]
        if q != 0 and not self._walk_end_ok(p, q, lex_start == 0):
            return lex_start
        return (q, carry, p)

    def _walk_end_ok(self, p: PState, q: int, whole: bool) -> bool:
        """``end_ok`` at the end of a walk; ``whole``: its last lexeme began at the walk's
        first byte or before (fill-in-the-middle checks that case more closely)."""
        return self.end_ok(p, q)

    # ------------------------------------------------------------------ masks
    def mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Allowed grammar tokens (bool, shape (V,)); shared: callers copy before writing."""
        key = (p, q, carry if self.nl_t >= 0 else 0)
        m = self._masks.get(key)
        if m is not None:
            return m
        if self.tables is not None:
            m = self._table_mask(p, q)
            self._masks.put(key, m)
            return m
        if self._trie is None:
            self._trie = _Trie(self._tokens, self._special)
        trie = self._trie
        children, ends = trie.children, trie.ends
        m = np.zeros(self.vocab_size, dtype=bool)
        step, end_ok = self.step, self.end_ok
        stack: list[tuple[int, int, int, PState]] = [(0, q, carry, p)]
        while stack:
            n, q1, c1, p1 = stack.pop()
            for b, child in children[n]:
                r = step(q1, c1, p1, b)
                if r is None:
                    continue
                e = ends[child]
                if e is not None and end_ok(r[2], r[0]):
                    m[e] = True
                if children[child]:
                    stack.append((child, *r))
        self._masks.put(key, m)
        return m

    # ------------------------------------------------------------------ tables
    def _row(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row ``q``: (distinct nodes, their token counts, tokens sorted by node)."""
        r = self._rows.get(q)
        if r is not None:
            return r
        assert self.tables is not None
        r = group_row(*expand_row(self.tables, q, self._bases))
        self._rows.put(q, r)
        return r

    def _class_vectors(self, p: PState) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per live class, under ``p``'s allowed set: does a lexeme whose next state has this
        class continue; may a token stop inside a lexeme of this class (see ``end_ok``)."""
        r = p.lex_vecs  # on the state: asked for every node evaluated there
        if r is None:
            aw = _int_words(self.allowed(p), self.class_sig_words.shape[1])
            # a class's live terminals are its significant ones plus "some ignored one"
            sig = (self.class_sig_words & aw).any(axis=1)
            cont = sig | self.class_has_ignored
            # an ignored lexeme ends well when something may follow it (or the input end)
            ends = cont.copy() if bool(p.es.expected) or self.ctx.finish(p) else sig
            sets = (self.acc_words & aw).any(axis=1)  # LEX sets that can end under p
            r = (cont, ends, sets)
            p.lex_vecs = r
        return r

    def _eval_one(self, p: PState, n: int) -> bool:
        """``_eval`` for one node, in plain Python, memoised per (parser state, node)."""
        key = (p.uid, n)
        r = self._one.get(key)
        if r is not None:
            return r
        cont, ends, sets = self._class_vectors(p)
        head, tail, alt = self.head_l, self.tail_l, self.alt_l
        m = n
        while m >= 0 and head[m] <= -2:
            m = tail[m] if cont[-2 - head[m]] else alt[m]
        if m < 0:
            r = False
        elif head[m] == -1:
            r = bool(ends[tail[m]])
        elif not sets[head[m]]:
            r = False
        else:
            p2 = self._end_with(p, self.acc_bits[head[m]], 0)
            r = p2 is not None and self._eval_one(p2, tail[m])
        self._one.put(key, r)
        return r

    def _eval(self, p: PState, nodes: np.ndarray) -> np.ndarray:
        """Is each node (a token's outcome) allowed from parser state ``p`` at a lexeme
        start or inside a lexeme that began at ``p``?"""
        if len(nodes) <= 16:
            return np.array([self._eval_one(p, n) for n in nodes.tolist()], dtype=bool)
        head, tail, alt = self.head, self.tail, self.alt
        cont, ends, sets = self._class_vectors(p)
        cur = nodes.astype(np.int64, copy=True)
        while True:
            live = cur >= 0
            br = np.flatnonzero(live & (head[np.maximum(cur, 0)] <= -2))
            if not br.size:
                break
            c = cur[br]
            cur[br] = np.where(cont[-2 - head[c]], tail[c], alt[c])
        ok = np.zeros(len(cur), dtype=bool)
        live = cur >= 0
        h = np.where(live, head[np.maximum(cur, 0)], -3)
        e = np.flatnonzero(h == -1)
        if e.size:
            ok[e] = ends[tail[cur[e]]]
        lx = np.flatnonzero(h >= 0)
        if lx.size:
            lx = lx[sets[h[lx]]]
        if lx.size:
            gid = h[lx]  # LEX heads are accepting-set ids
            if gid[0] == gid[-1] and (gid == gid[0]).all():
                groups = [(int(gid[0]), lx)]  # the common case: one accepting set
            else:
                order = np.argsort(gid, kind="stable")
                gs = gid[order]
                cut = np.flatnonzero(gs[1:] != gs[:-1]) + 1
                groups = [(int(gs[i]), lx[o])
                          for i, o in zip(np.append(0, cut).tolist(), np.split(order, cut),
                                          strict=True)]
            for g, sel in groups:
                p2 = self._end_with(p, self.acc_bits[g], 0)
                if p2 is None:
                    continue
                tails = tail[cur[sel]]
                ut, inv = np.unique(tails, return_inverse=True)
                key = (p2.uid, ut.tobytes())
                sub = self._sub.get(key)
                if sub is None:
                    sub = self._eval(p2, ut)
                    self._sub.put(key, sub)
                ok[sel] = sub[inv.reshape(-1)]
        return ok

    def _full_row(self, q: int, toks: np.ndarray) -> np.ndarray:
        f = self._full.get(q)
        if f is None:
            f = np.zeros(self.vocab_size, dtype=bool)
            f[toks] = True
            self._full.put(q, f)
        return f

    def _row_tokens(self, p: PState, q: int) -> np.ndarray:
        """Row ``q``'s allowed tokens (those whose first byte continues the lexeme)."""
        nodes, counts, toks = self._row(q)
        if nodes.size:
            ok = self._eval(p, nodes)
            return select_tokens(self.vocab_size, toks, counts, ok,
                                 lambda: self._full_row(q, toks))
        return np.zeros(self.vocab_size, dtype=bool)

    def _table_mask(self, p: PState, q: int) -> np.ndarray:
        m = self._row_tokens(p, q)
        if q != 0:
            p2 = self.lexeme_end(p, q, 0)
            if p2 is not None:
                m |= self.mask(p2, 0, 0) & self._kill(q, p)
        return m

    def _kill(self, q: int, p: PState) -> np.ndarray:
        """Tokens whose first byte ends the lexeme at ``q``: no terminal continues with it, or
        none that the allowed set holds (the row's entries for those tokens are then false)."""
        key = (q, self.allowed(p))  # all that ``cont`` depends on
        out = self._kills.get(key)
        if out is None:
            nxt = self.trans[q]
            cont = self._class_vectors(p)[0]
            dead = (nxt < 0) | ~cont[self.state_class[np.maximum(nxt, 0)]]
            out = self._fb_ok & dead[self._fb_idx]
            self._kills.put(key, out)
        return out

