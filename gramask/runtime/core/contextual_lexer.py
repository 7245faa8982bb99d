"""The contextual lexer mode's masks (its rule, which terminals compete and how a lexeme
ends: :mod:`gramask.runtime.core.contextual_rule`).

Masks come from the contextual token tables when the grammar has them: a table entry is a small tree of BRANCH / LEX / END nodes
(see ``gramask.compiler.tables``), decided here vectorised over a row's distinct nodes — a
BRANCH by one lookup of "does the allowed set meet this live class", a LEX by stepping the
parser once per distinct set of winning terminals. All but the parser steps depends only on
the allowed set, which thousands of parser states share: that part is planned once per
(node set, allowed set) and reused. A LEX set that may end as the indentation newline
names the width the newline carries (``TokenTables.lex_nl``); the parser takes it as a
newline of that width (joined to the carry when the line began before the token). The parser
steps for a token's later lexemes start from the parser state cut to its top (``_eval``), so
positions with the same top share them. Without tables (and at the start state with a carry,
which the tables do not count) masks come from walking the vocabulary as a byte trie (exact,
but its cost grows with the number of live tokens). ``advance`` walks the token's bytes with
the same rule.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...compiler.ignored_follows import class_follows, follow_vector
from ...compiler.table_rows import expand_row, group_row, lazy_diff, select_tokens
from ...compiler.tables import TokenTables
from ...compiler.walk_inputs import wide_first_bytes
from ...encoding import bits_of_rows
from ..limits import memo_size
from ..memo import BoundedMemo
from .contextual_plan import SMALL, Plan, plan_nodes
from .contextual_rule import ContextualRule
from .contextual_starts import Row0Parts, kill_tokens
from .contextual_trie import trie_mask
from .earley import EXPECTED, BelowCut
from .indentation import newline_width
from .parse_state import ES, PUID, ParserContext, PState
from .terminal_sets import VocabTrie, words_of_int, words_of_rows

if TYPE_CHECKING:
    from ...compiler.lexer import LexerDFA

__all__ = ["ContextualLexer"]

# How the lexemes after a token's first are decided (see ``_eval``): first from the parser
# state cut to its top, ``_TOP`` sets down its origins (here: its own items only; their
# origins are cut), cut again every ``_RECUT`` lexemes; where that meets a phrase completed
# below the cut, again from the exact state: where the first lexeme itself did (an operator
# after a name, a closing bracket), its tails are tried cut again from the state it leads
# to (``if (x) {`` shares ``) {`` with every other if); where a later lexeme did, they go
# exact. Deeper cuts (2 to 4 sets) shared less than they cost on C-, Lua- and JS-like
# grammars. Modes of ``_eval``: ``_TRY`` (an exact state: try cut first), ``_EXACT`` (an
# exact state under a cut that failed past its first lexeme: go exact, the cut would fail
# again), k >= 0 (a cut state, k lexemes since its cut)
_TOP, _RECUT = 1, 3
_TRY, _EXACT = -1, -2
_NONE = np.zeros(0, dtype=np.int64)  # an empty token or node list, read-only
_NONE.flags.writeable = False
_DEEPER = np.zeros(0, dtype=bool)  # memoised: "from this cut state, the cut was too shallow"
_Vectors = tuple[np.ndarray, np.ndarray, np.ndarray]  # see ``_class_vectors``



class ContextualLexer(ContextualRule):
    """Masks under the contextual rule (walks, lexeme ends and end checks:
    :class:`~gramask.runtime.core.contextual_rule.ContextualRule`), shared like
    :class:`~gramask.runtime.core.masks.MaskBuilder`."""

    def __init__(
        self,
        dfa: LexerDFA,
        ctx: ParserContext,
        priorities: list[int],
        tokens: Sequence[bytes],
        special: np.ndarray,
        *,
        nl_terminal: int = -1,
        continuation_terminal: int = -1,
        tab_len: int = 8,
        tables: TokenTables | None = None,
        reserved: Sequence[tuple[int, int]] = (),
        close: bool = True,
        fragile: int | None = None,
    ) -> None:
        super().__init__(dfa, ctx, priorities, nl_terminal=nl_terminal,
                         continuation_terminal=continuation_terminal, tab_len=tab_len,
                         reserved=reserved, close=close, fragile=fragile)
        self.vocab_size = len(tokens)
        self.n_terms = dfa.num_terminals  # newline heads sit above the terminal bits
        self._tokens = tokens
        self._special = special
        self._trie: VocabTrie | None = None
        self.dead_ends = None  # set by CompiledGrammar where needed
        limits = ctx.automaton.limits  # the bounds every memo of this runtime follows
        self._masks: BoundedMemo[tuple[int, int, int], np.ndarray] = BoundedMemo(
            memo_size(limits.mask_cache))
        self.tables = tables
        self._nodes_lock = threading.Lock()  # see _load_nodes (copies share it)
        self.head_l: list[int] = []
        if tables is not None:
            self._load_nodes(tables)
            self.class_has_ignored = tables.class_winnable[:, -1].copy()
            sig_rows = tables.class_winnable[:, :-1] & ~dfa.ignored[None, :]
            self.class_sig_words = words_of_rows(sig_rows)
            self.trans = dfa.trans
            self.state_class = tables.state_class.astype(np.int64)
            self.class_follow = class_follows(self.state_class, self.follow_ids,
                                              self.follow_pairs, len(self.class_has_ignored))
            self.first_byte, self._fb_ok, self._fb_idx = wide_first_bytes(tables.first_byte)
            self._bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # see expand_row
            # row → (V,) bool of all its tokens (see ``select_tokens``)
            self._full: BoundedMemo[int, np.ndarray] = BoundedMemo(memo_size(limits.row_cache))
            # (lexer state, allowed terminals) → kill set: few distinct allowed sets recur
            self._kills: BoundedMemo[tuple[bytes, int], np.ndarray] = BoundedMemo(
                memo_size(limits.row_cache))
            self._kill_sig: dict[int, bytes] = {}  # see ``kill_tokens``
            self._kills_by_bytes: BoundedMemo[bytes, np.ndarray] = BoundedMemo(
                memo_size(limits.row_cache))
            # (row, verdicts of its nodes) → its tokens: parser states that decide a row
            # alike share the vocabulary-sized scatter (returned copied)
            self._selected: BoundedMemo[tuple[int, bytes], np.ndarray] = BoundedMemo(
                memo_size(limits.row_cache))
            self._diffs: BoundedMemo[int, tuple[np.ndarray, np.ndarray, np.ndarray,
                                                np.ndarray]] = BoundedMemo(
                memo_size(limits.row_cache))
            self._lazy: BoundedMemo[int, tuple[int, np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray]] = BoundedMemo(
                memo_size(limits.row_cache))
            self._rows: BoundedMemo[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = (
                BoundedMemo(memo_size(limits.row_cache))
            )
            self._row0 = Row0Parts()  # row 0 walked for the first bytes a state allows
            # (parser state, distinct tail nodes) → verdicts: the lexemes after a token's
            # first completed one meet the same parser states again and again
            self._sub: BoundedMemo[tuple[int, bytes], np.ndarray] = BoundedMemo(8192)
            # (row or tail set, allowed set, follows) → its plan (see ``plan_nodes``)
            self._plans: BoundedMemo[tuple[int | bytes | bool, ...], Plan] = BoundedMemo(8192)
            self._big_plans: BoundedMemo[tuple[int | bytes | bool, ...], Plan] = (
                BoundedMemo(memo_size(4 * limits.row_cache)))
            # large row or tail set → (its nodes' heads, BRANCH positions), see ``plan_nodes``
            self._static: BoundedMemo[int | bytes, tuple[np.ndarray, np.ndarray]] = (
                BoundedMemo(memo_size(4 * limits.row_cache)))
            # (allowed set, follows) → class vectors (see ``_class_vectors``)
            self._vecs: BoundedMemo[tuple[object, ...], _Vectors] = BoundedMemo(4096)

    def _sync_nodes(self, tables: TokenTables) -> None:
        """The node arrays loaded again where a lazily built table's walks added nodes."""
        if tables.num_nodes != len(self.head):
            self._load_nodes(tables)

    def _load_nodes(self, tables: TokenTables) -> None:
        """The node arrays (again when a lazily built table's rows have added nodes). One
        thread at a time, and never older ones than those loaded: a thread that read the
        arrays before another loaded newer ones would put shorter ones back under nodes
        that other threads' rows already name."""
        with self._nodes_lock:
            head, tail, alt, sets = tables.nodes()
            if len(head) > len(self.head_l):
                self._set_nodes(tables, head, tail, alt, sets)

    def _set_nodes(self, tables: TokenTables, head: np.ndarray, tail: np.ndarray,
                   alt: np.ndarray, sets: np.ndarray) -> None:
        # ``head`` last: readers take its length as the nodes every other array covers (a
        # thread may read them while another reloads; nodes only grow, so newer is fine)
        self.tail, self.alt = (a.astype(np.int64) for a in (tail, alt))
        self.acc_words = words_of_rows(sets)  # before acc_bits: see _class_vectors
        self.acc_bits = bits_of_rows(sets)
        self.tail_l, self.alt_l = tail.tolist(), alt.tolist()
        self.lex_nl: list[int] = tables.lex_nl.tolist()
        self.head_l = head.tolist()
        self.head = head.astype(np.int64)

    def for_context(self, ctx: ParserContext) -> ContextualLexer:
        """The same lexer over another parser (the quotient of fill-in-the-middle): the
        lexer-side tables and memos are shared, the ones keyed by parser states are fresh
        (parser state ids are per context)."""
        if self.tables is None and self._trie is None:
            # the vocabulary trie depends only on the tokens: built once, shared (else each
            # copy made before the original's first mask would build its own, ~1 s)
            self._trie = VocabTrie(self._tokens, self._special)
        c = copy.copy(self)
        c.ctx = ctx
        # (dead_ends shared: verdicts per parser context; see ContextualEnds._into_suffix)
        c._kept = c.kept_memo(ctx)  # (keyed by the other parser's state ids)
        limits = ctx.automaton.limits
        c._masks = BoundedMemo(memo_size(limits.mask_cache))
        if self.tables is not None:  # plans, class vectors, kills: per allowed set, shared
            c._sub = BoundedMemo(8192)
        return c

    # ------------------------------------------------------------------ masks
    def mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        """Allowed grammar tokens (bool, shape (V,)); shared: callers copy before writing."""
        if self.nl_t < 0 or not (self.live[q] >> self.nl_t) & 1:
            carry = 0  # no lexeme from q can end as the newline: the carry decides nothing
        key = (p[PUID], q, carry)
        m = self._masks.get(key)
        if m is not None:
            return m
        if self.tables is not None and (q != 0 or carry == 0):
            m = self._table_mask(p, q, carry)
        else:
            if self._trie is None:
                self._trie = VocabTrie(self._tokens, self._special)
            m = trie_mask(self, self._trie, p, q, carry, self.vocab_size)
        if self.dead_ends is not None:  # (contextual_ends; none for the bundled grammars)
            m = self.dead_ends.refine(self, p, q, carry, m)
        self._masks.put(key, m)
        return m

    # ------------------------------------------------------------------ tables
    def _row(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row ``q``: (distinct nodes, their token counts, tokens sorted by node)."""
        assert self.tables is not None
        r = self._rows.get(q)
        if r is None:
            r = group_row(*expand_row(self.tables, q, self._bases))
            self._rows.put(q, r)
        self._sync_nodes(self.tables)
        return r

    def _class_vectors(self, a: int, fl: bool, extra: int | bytes | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per live class, under allowed set ``a``: does a lexeme whose next state has this
        class continue; may a token stop inside a lexeme of this class (see ``end_ok``; ``fl``:
        something may follow an ignored lexeme). ``a`` is ``expects(p)``, before the reserved
        pairs close it. Memoised on (``a``, ``fl``), not on the parser state: thousands of
        states share a few hundred allowed sets."""
        key = (a, fl) if extra is None else (a, fl, extra)
        r = self._vecs.get(key)
        if r is None or len(r[2]) != len(self.acc_bits):  # a lazy table's LEX sets grew
            nw = self.class_sig_words.shape[1]
            aw = words_of_int(a, nw)
            # a class's live terminals are its significant ones plus "some ignored one"
            sig = (self.class_sig_words & aw).any(axis=1)
            ends = sig
            if isinstance(extra, int):  # (``_plan_extra``: only the shifts the parser keeps)
                ends = (self.class_sig_words & words_of_int(extra, nw)).any(1)
            if self.closes:  # the lexeme goes on under A closed; it may stop under A
                aw = words_of_int(self.close(a), nw)
                sig = (self.class_sig_words & aw).any(axis=1)
            cont = sig | self.class_has_ignored
            # an ignored lexeme ends well where the input may end, or before a lexeme of A
            ends = ends | (self.class_has_ignored if fl else follow_vector(
                self.class_follow, self.close(a) if self.closes else a))
            sets = (self.acc_words & aw).any(axis=1)  # LEX sets that can end under a
            r = (cont, ends, sets)
            self._vecs.put(key, r)
        return r

    def _follows(self, p: PState) -> bool:
        """May the input end after an ignored lexeme ending at ``p``? (What else may follow
        it depends on the allowed set alone: ``_class_vectors``.)"""
        return self.ctx.finish(p)

    def _plan_extra(self, p: PState) -> int | bytes | None:
        """A plan's key beyond (allowed set, ``_follows``): ``kept_fewer`` (FIM: bytes)."""
        return self.kept_fewer(p)

    def _lex_key(self, s: int, a: int) -> int:
        """The winners of LEX set ``s`` under allowed set ``a``; when the indentation newline
        wins, its head (the width, see ``TokenTables.lex_nl``) rides above the terminal
        bits, so that plans group newlines by width."""
        w = self._winners(self.acc_bits[s] & a)
        if self.nl_t >= 0 and (w >> self.nl_t) & 1:
            return w | (self.lex_nl[s] << self.n_terms)
        return w

    def _newline(self, p: PState, head: int, carry: int) -> PState | None:
        """The parser after a newline lexeme of head ``head`` (see ``_lex_key``)."""
        return self.ctx.newline(p, newline_width(self.n_terms, head, carry))

    def _eval(self, p: PState, key: int | bytes, nodes: np.ndarray, carry: int = 0,
              mode: int = _TRY) -> np.ndarray:
        """Is each node (a token's outcome) allowed from parser state ``p`` at a lexeme
        start or inside a lexeme that began at ``p``? ``key`` names ``nodes`` (a row, or a
        tail set by its bytes); ``carry``: the indentation carry where the lexeme began
        (read only by newline heads relative to it: a row's first lexeme). The result may
        be shared: do not write to it.

        The lexemes after a token's first are tried from ``p`` cut to its top first (see
        :meth:`Automaton.cut` and ``_TOP``; ``mode``: ``_TRY``, ``_EXACT`` or a cut state's):
        positions with the same top (an argument list opened inside different calls) then
        share what is memoised for the tails, and a run of openings ("((((((((") stops
        making new parser states once it is deeper than the cut; where the lexemes complete
        a phrase below the cut they are decided from ``p``, as before. After a newline
        lexeme they go on from the state it leads to (exact, unless ``p`` is already cut)."""
        a = self.ctx.expects(p)  # (plans close it under the reserved pairs themselves)
        fl = self._follows(p)
        extra = self._plan_extra(p)
        pk = (key, a, fl) if extra is None else (key, a, fl, extra)
        # large plans (a row's: tens of KB each) are bounded apart, by the row-cache bound
        plans = self._plans if len(nodes) <= SMALL else self._big_plans
        plan = plans.young.get(pk)
        if plan is None:
            plan = plans.get(pk)
        if plan is None:
            plan = plan_nodes(self, key, nodes, a, fl, extra)
            plans.put(pk, plan)
        base, groups = plan
        if not groups:
            return base
        ok = base.copy()
        exp = p[ES][EXPECTED]
        nt = self.n_terms
        top: PState | None = None
        sub: np.ndarray | None
        for sh, sel, tkey, ut, inv in groups:
            if sh >> nt:  # the indentation newline of a known width
                nxt = self._newline(p, sh >> nt, carry)
                if nxt is None:
                    continue
                sub = self._sub_eval(nxt, tkey, ut, _EXACT if mode == _TRY else mode)
            elif not sh:  # only ignored terminals won: nothing to shift
                sub = self._sub_eval(p, tkey, ut, mode)
            elif not exp & sh:
                continue  # no item shifts any of them: every node of the group dies
            elif mode == _TRY:
                if top is None:
                    top = self.ctx.cut(p, _TOP)
                try:
                    self.ctx.shift_any(top, sh)  # (memoised: ``_after`` repeats it for free)
                except BelowCut:  # the lexeme completes a phrase below: its tails cut again
                    sub = self._after(p, sh, tkey, ut, _TRY)
                else:
                    try:
                        sub = self._after(top, sh, tkey, ut, 0)
                    except BelowCut:  # a later lexeme did: a cut would fail again
                        sub = self._after(p, sh, tkey, ut, _EXACT)
            else:
                sub = self._after(p, sh, tkey, ut, mode if mode >= 0 else _EXACT)
            if sub is not None:
                ok[sel] = sub[inv]
        return ok

    def _after(self, p: PState, sh: int, tkey: bytes, ut: np.ndarray, mode: int
               ) -> np.ndarray | None:
        """The tail nodes ``ut`` after shifting ``sh`` from ``p`` (None: it cannot shift)."""
        p2 = self.ctx.shift_any(p, sh)
        if p2 is None:
            return None
        if mode >= 0:  # cut again: a chain of openings ("((((((((") recurs past the cut
            mode += 1
            if mode >= _RECUT:
                p2, mode = self.ctx.cut(p2, _TOP), 0
        return self._sub_eval(p2, tkey, ut, mode)

    def _sub_eval(self, p: PState, tkey: bytes, ut: np.ndarray, mode: int) -> np.ndarray:
        """``_eval`` of a tail set, memoised on (parser state, tail set); from a cut state,
        that it raised :class:`BelowCut` is memoised too (the next try goes exact at once)."""
        skey = (p[PUID], tkey)
        sub_memo = self._sub
        sub = sub_memo.young.get(skey)
        if sub is None:
            sub = sub_memo.get(skey)
        if sub is _DEEPER and mode >= 0:
            raise BelowCut
        if sub is None or sub is _DEEPER:  # (an uncut state may be its own cut: tried cut)
            try:
                sub = self._eval(p, tkey, ut, mode=mode)
            except BelowCut:
                sub_memo.put(skey, _DEEPER)
                raise
            sub_memo.put(skey, sub)
        return sub

    def _full_row(self, q: int, toks: np.ndarray) -> np.ndarray:
        f = self._full.get(q)
        if f is None:
            f = np.zeros(self.vocab_size, dtype=bool)
            f[toks] = True
            self._full.put(q, f)
        return f

    def _diff(self, q: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Row ``q`` stored as a diff against its base row: (the base's tokens ``q`` lacks,
        then the differing tokens grouped as ``_row`` groups a row)."""
        r = self._diffs.get(q)
        if r is None:
            tb = self.tables
            assert tb is not None
            lo, hi = int(tb.rows_indptr[q]), int(tb.rows_indptr[q + 1])
            idx = tb.rows_indices[lo:hi].astype(np.int64)
            dat = tb.rows_data[lo:hi].astype(np.int64)
            add = dat > 0  # (token, node + 1) where q differs; (token, 0) where q lacks it
            r = (idx[~add], *group_row(idx[add], dat[add] - 1))
            self._diffs.put(q, r)
            self._sync_nodes(tb)  # (a lazy table built in full since)
        return r

    def _lazy_diff(self, q: int) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Row ``q`` of a lazily built table as a diff against a row assembled in full
        (:func:`~gramask.compiler.table_rows.lazy_diff`): (that row or -1 where none fits,
        then as ``_diff``)."""
        r = self._lazy.get(q)
        if r is None:
            tb = self.tables
            w = tb.walker if tb is not None else None
            d = lazy_diff(w, q, self.vocab_size // 4) if w is not None else None
            r = (-1, _NONE, _NONE, _NONE, _NONE) if d is None else (
                d[0], d[1], *group_row(d[2], d[3]))
            self._lazy.put(q, r)
            if tb is not None:
                self._sync_nodes(tb)
        return r

    def _row_tokens(self, p: PState, q: int, carry: int = 0) -> np.ndarray:
        """Row ``q``'s allowed tokens as a fresh bool vector. A row stored as a diff is its
        base row's vector patched at the differing tokens: the vocabulary-sized base is
        prepared once for the dozens of states whose rows are nearly the same (keyword
        prefixes inside a name), not expanded, sorted and grouped again for each."""
        assert self.tables is not None
        w = self.tables.walker
        part = self._row0.row(self, w, p, self._rows) if q == 0 and w is not None else None
        if part is not None:  # (before row 0 is walked whole: see Row0Parts)
            self._sync_nodes(self.tables)
            return self._select(p, *part, carry)
        b = int(self.tables.row_base[q])
        key = -1 - q  # keys < 0: diffs (a lazily built table's below -S: see _lazy_diff)
        if b >= 0:
            removed, nodes, counts, toks = self._diff(q)
        elif self.tables.walker is not None and q != 0:
            b, removed, nodes, counts, toks = self._lazy_diff(q)
            key -= len(self.trans) * (b + 1)  # a lazy row's diff may change base: key by both
        if b >= 0:
            m = self._row_tokens(p, b, carry)
            m[removed] = False
            if nodes.size:
                m[toks] = np.repeat(self._eval(p, key, nodes, carry), counts)
            return m
        return self._select(p, q, *self._row(q), carry)

    def _select(self, p: PState, key: int, nodes: np.ndarray, counts: np.ndarray,
                toks: np.ndarray, carry: int) -> np.ndarray:
        """A fresh bool vector of grouped row ``key``'s tokens whose node ``p`` allows."""
        if not nodes.size:
            return np.zeros(self.vocab_size, dtype=bool)
        ok = self._eval(p, key, nodes, carry)
        skey = (key, ok.tobytes())
        sel = self._selected.get(skey)
        if sel is None:
            sel = select_tokens(self.vocab_size, toks, counts, ok,
                                lambda: self._full_row(key, toks))
            self._selected.put(skey, sel)
        return sel.copy()

    def _table_mask(self, p: PState, q: int, carry: int) -> np.ndarray:
        m = self._row_tokens(p, q, carry)
        if q != 0:
            p2 = self.lexeme_end(p, q, carry)
            if p2 is not None:
                m |= self.mask(p2, 0, 0) & kill_tokens(self, q, p)
        return m

