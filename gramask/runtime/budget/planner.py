"""Token budgets: how many vocabulary tokens a runtime state still needs to become a program.

Constraining a generation to at most N tokens is intersecting the grammar with
(vocabulary)^{≤N} (Niels Mündler, "Proper Well-Formedness Guarantees for Finite LLM
Sampling"). Done exactly per step that is a search over token sequences; here it is an *upper
bound* ``U(state)`` assembled from tables, cheap per step, and realised by a concrete completion
(:meth:`BudgetPlanner.plan`), so a generation that only takes tokens with
``U(after) ≤ remaining − 1`` (or the plan's own next token) can always still finish in time:

* **the lexeme in progress**: the shortest byte string that ends it as terminal ``T`` (a
  breadth-first search on the lexer DFA per terminal), counted in vocabulary tokens (fewest
  tokens that spell that string);
* **the terminals after it**: each spelled by its shortest lexeme, counted in tokens; where the
  greedy lexer would merge it with the lexeme before (a name after a name), a separating
  ignored lexeme (a space) is spelled with it (often for free: ``" pass"`` is one token);
* **the grammar**: fewest such costs over terminal strings that complete the Earley set — per
  LR(0) state the cheapest way to finish each rule it is inside (``K``), continued through the
  origin sets' waiting items (``W``), memoised on the hash-consed sets; a trailing newline and
  dedents cost nothing (the end of input supplies them, as ``ParserContext.finish`` does).

Where a bound is used instead of an exact count (lexemes spelled one by one, a token's final
lexer state known only up to its class, newline widths bounded over the levels in use), it is
an over-estimate: it can forbid a token the exact answer allows (measured in the README), never
the other way. Tokens that span two lexemes (``")\\n"``) make real completions shorter than the
bound; :meth:`completion` tokenises the whole text at once and may come out below it.
"""

from __future__ import annotations

import contextlib
import heapq
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...errors import NoCompletionError
from ..core.indentation import indent_widths
from ..core.masks import walk_row_trie
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo

if TYPE_CHECKING:
    from ...vocab import Vocabulary
    from ..core.earley import EarleySet
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState

__all__ = ["INF", "BudgetPlanner", "StepUnits", "TokenGroups"]

INF = 1 << 30  # "cannot complete" (kept far from int32 overflow when added to)
_MAX_PLAN_LEXEMES = 256  # a longer shortest completion is not looked for
SEARCH_NODES = 4000  # states a plan's fallback search expands (see BudgetPlanner.search_text)
_SEARCH_H_CAP = 64  # an INF estimate still orders its state (last), it does not drop it
_NO_PLAN = "gramask found no completion of this state that the vocabulary can spell"
_PADS = (*(b" " * i for i in range(1, 17)), b"\t")
_ACCEPT = -1  # pseudo-symbol: the augmented start rule completed
# bytes tried first when a witness string is built: readable ones
_BYTE_ORDER = (
    list(b"abcdefghijklmnopqrstuvwxyz0123456789_ ") + list(range(33, 127)) + list(range(256))
)


class TokenGroups(NamedTuple):
    """What :meth:`BudgetPlanner.token_groups` knows per token: ``group``: tokens of one
    group lead to the same runtime state (:meth:`state`; -1 where the indentation carry is
    not known)."""

    group: np.ndarray
    vertices: list[Any]  # parser states after the tokens' completed lexemes
    num_states: int  # lexer states: group = vertex index × num_states + lexer state
    # the group of every token, also where ``group`` is -1 (the carry is not known)
    raw: np.ndarray
    # the vertex index of tokens that complete no lexeme (``stay``), and of those that end
    # the lexeme in progress at their first byte and complete no other (``killed``); -1: none
    stay: int = -1
    killed: int = -1

    def state(self, g: int) -> tuple[int, int, Any]:
        """The runtime state (lexer state, carry 0, parser state) of group ``g``."""
        return g % self.num_states, 0, self.vertices[g // self.num_states]


class StepUnits(NamedTuple):
    """One step's grammar-allowed tokens in groups that lead to the same runtime state
    (:meth:`BudgetPlanner.step_units`): per group its id (as :class:`TokenGroups` numbers
    them), bound, lexer state and parser state (``vertices[vertex[i]]``)."""

    gids: np.ndarray
    costs: np.ndarray
    finals: np.ndarray
    vertices: list[Any]
    vertex: np.ndarray
    parts: list[tuple[_RowFinals, np.ndarray]]  # per group: its row and its sorted runs
    sizes: np.ndarray  # per group: how many tokens it holds
    nl_live: np.ndarray  # per lexer state: a newline lexeme whose width is still open

    def tokens(self, groups: list[int]) -> np.ndarray:
        """The token ids of ``groups`` (one gather per row)."""
        by_row: dict[int, tuple[_RowFinals, list[np.ndarray]]] = {}
        for i in groups:
            rf, runs = self.parts[i]
            by_row.setdefault(id(rf), (rf, []))[1].append(runs)
        out = [rf.tokens_of(np.concatenate(rs)) for rf, rs in by_row.values()]
        return np.concatenate(out) if out else np.zeros(0, np.int64)

    def state(self, i: int) -> tuple[int, int, Any]:
        """The runtime state (lexer state, carry 0, parser state) group ``i`` leads to."""
        return int(self.finals[i]), 0, self.vertices[int(self.vertex[i])]


class _RowFinals:
    """A row's tokens sorted by (node, lexer state they leave the lexer in), so that the
    tokens of a trie vertex's nodes can be grouped by final state without touching each
    token: ``vertex(pos)`` gives the distinct final states and, per state, the sorted runs
    that hold its tokens."""

    __slots__ = ("_memo", "hi", "keys", "lo", "num_states", "restrict", "row", "runs",
                 "sorted_tokens")

    def __init__(self, row: Any, restrict: np.ndarray | None, finals: np.ndarray,
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


class _Tokenizer:
    """Fewest vocabulary tokens that spell a given byte string (dynamic programming)."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.ids: dict[bytes, int] = {}
        for i, t in enumerate(vocab.tokens):
            if t and not vocab.is_special(i) and t not in self.ids:
                self.ids[t] = i
        self.max_len = max((len(t) for t in self.ids), default=1)
        self._memo: dict[bytes, tuple[int, ...] | None] = {}

    def tokenize(self, data: bytes) -> tuple[int, ...] | None:
        """The fewest token ids whose bytes concatenate to ``data`` (None if impossible)."""
        r = self._memo.get(data, MISSING)
        if r is not MISSING:
            return r
        n = len(data)
        best = [INF] * (n + 1)
        back = [0] * (n + 1)
        best[0] = 0
        ids, ml = self.ids, self.max_len
        for i in range(n):
            if best[i] >= INF:
                continue
            c = best[i] + 1
            for j in range(i + 1, min(n, i + ml) + 1):
                if c < best[j] and data[i:j] in ids:
                    best[j] = c
                    back[j] = i
        out: tuple[int, ...] | None = None
        if best[n] < INF:
            seq = []
            j = n
            while j:
                i = back[j]
                seq.append(ids[data[i:j]])
                j = i
            out = tuple(reversed(seq))
        if len(self._memo) < 1 << 16:
            self._memo[data] = out
        return out

    def count(self, data: bytes) -> int:
        r = self.tokenize(data)
        return INF if r is None else len(r)


class _LexemeCosts:
    """Lexer-side costs: finishing the lexeme in progress as each terminal, spelling a whole
    lexeme of each terminal, and what must separate two lexemes (greedy longest match).

    A lexeme can only end where the next lexeme's first byte kills it: inside a comment that
    is part of Python's newline lexeme nothing but a newline does. So each terminal's
    lexemes are finished at its *clean* end states — those after which every other terminal
    can be spelled, directly or after a separator — and costs are distances to them."""

    def __init__(self, mb: MaskBuilder, tok: _Tokenizer,
                 preds: list[set[int]] | None = None) -> None:
        dfa = mb.dfa
        self.tok = tok
        self.trans = np.asarray(dfa.trans, dtype=np.int64)
        self.accept = np.asarray(dfa.accept)
        self.num_states = S = dfa.num_states
        self.num_terminals = T = dfa.num_terminals
        self.ignored = np.asarray(dfa.ignored, dtype=bool)
        self.nl_t = mb.nl_t
        self.continuation_t = mb.continuation_t
        self._dist: dict[int, np.ndarray] = {}
        self._fin_str: dict[tuple[int, int], bytes] = {}
        # first pass: ends = every accepting state; then the clean ones (see class docstring)
        self.ends = [self.accepting_states(t) for t in range(T)]
        self.spell = self._spellings()
        self.separator = self._separator()
        for _ in range(2):
            self.ends = [self._clean_ends(a) for a in range(T)]
            self._dist.clear()
            self._fin_str.clear()
            self.spell = self._spellings()
        # a newline lexeme can take another line (Python's blank lines belong to it)
        nl_ends = self.ends[self.nl_t] if self.nl_t >= 0 else np.zeros(0, np.int64)
        nxt = self.trans[nl_ends, 10] if nl_ends.size else np.zeros(0, np.int64)
        self.nl_renews = bool(nl_ends.size) and bool(
            (nxt >= 0).all() and (self.accept[np.maximum(nxt, 0)] == self.nl_t).all()
        )
        # fin[q, t]: tokens that end the lexeme in progress at q as t (0: it can end now)
        self.fin = np.full((S, T), INF, dtype=np.int64)
        for t in range(T):
            d = self._distances(t)
            for q in np.flatnonzero(d < INF).tolist():
                if q:  # state 0: no lexeme in progress
                    self.fin[q, t] = tok.count(self.witness(q, t))
        # per state, the finite entries of fin, cheapest first
        self.fin_list: list[list[tuple[int, int]]] = [
            sorted(((t, int(self.fin[q, t])) for t in np.flatnonzero(self.fin[q] < INF).tolist()),
                   key=lambda e: e[1])
            for q in range(S)
        ]
        # cost[b]: tokens that spell a lexeme of b after the clean end of any lexeme that can
        # come before it (separated if needed)
        self.cost = np.full(T, INF, dtype=np.int64)
        for b in range(T):
            w = self.spell[b]
            if w is None or self.ignored[b]:
                continue
            worst = tok.count(w)
            for a in (range(T) if preds is None else preds[b]):
                for q in self.ends[a].tolist():
                    g = self.glue(q, b)
                    if g is not None:
                        worst = max(worst, tok.count(g))
            self.cost[b] = worst

    def accepting_states(self, t: int) -> np.ndarray:
        """The lexer states where a lexeme of ``t`` may end: where the greedy lexer reads it
        as ``t`` (the contextual mode's planner widens this)."""
        return np.flatnonzero(self.accept == t)

    def _spellings(self) -> list[bytes | None]:
        return [
            self.witness(0, t) if self._distances(t)[0] < INF else None
            for t in range(self.num_terminals)
        ]

    def _clean_ends(self, a: int) -> np.ndarray:
        """The accepting states of ``a`` after which every other spelled terminal can
        start (none for a comment: only a newline or the end of input ends it)."""
        states = self.accepting_states(a)
        keep = []
        for q in states.tolist():
            if all(self._glue_ok(q, b) for b in range(self.num_terminals)
                   if b != a and not self.ignored[b] and self.spell[b]):
                keep.append(q)
        return np.array(keep, dtype=np.int64)

    def _glue_ok(self, q: int, b: int) -> bool:
        return self.glue(q, b) is not None

    def glue(self, q: int, b: int) -> bytes | None:
        """The bytes of a lexeme of ``b`` right after a lexeme that ended in state ``q``
        (``q`` = 0: none before): its spelling, or the separator and its spelling."""
        w = self.spell[b]
        if not w:
            return None
        if q == 0 or self.trans[q, w[0]] < 0:
            return w
        sep = self.separator
        if sep is not None and self.trans[q, sep[0]] < 0:
            s = 0
            for x in sep:
                s = int(self.trans[s, x])
            if self.trans[s, w[0]] < 0:
                return sep + w
        return None

    def _distances(self, t: int) -> np.ndarray:
        """Bytes from each lexer state to a clean end of ``t`` (BFS backwards)."""
        d = self._dist.get(t)
        if d is not None:
            return d
        frontier = np.zeros(self.num_states, dtype=bool)
        frontier[self.ends[t]] = True
        d = self.distances_to(frontier)
        self._dist[t] = d
        return d

    def distances_to(self, targets: np.ndarray) -> np.ndarray:
        """Bytes from each lexer state to one of ``targets`` (bool per state), staying in
        one lexeme (BFS backwards over the DFA)."""
        S = self.num_states
        d = np.full(S, INF, dtype=np.int64)
        frontier = targets.copy()
        d[frontier] = 0
        trans = self.trans
        valid = trans >= 0
        idx = np.where(valid, trans, 0)
        level = 0
        while frontier.any():
            level += 1
            reach = (frontier[idx] & valid).any(axis=1) & (d == INF)
            d[reach] = level
            frontier = reach
        return d

    def boundary_targets(self, head: bytes, a: int | Iterable[int], after: int | None,
                         ) -> np.ndarray:
        """Lexer states from which ``head`` (the suffix's first bytes) ends the lexeme as
        ``a`` (or as one of several terminals), killed by the byte ``after`` (None: the input
        ends)."""
        st = np.arange(self.num_states, dtype=np.int64)
        for x in head:
            st = np.where(st >= 0, self.trans[np.maximum(st, 0), x], -1)
        ok = st >= 0
        ok &= np.isin(self.accept[np.maximum(st, 0)], [a] if isinstance(a, int) else list(a))
        if after is not None:
            ok &= self.trans[np.maximum(st, 0), after] < 0
        return ok

    def path(self, q: int, d: np.ndarray) -> bytes:
        """The shortest bytes from ``q`` down distances ``d`` to 0 (readable bytes first)."""
        out = bytearray()
        trans = self.trans
        while d[q] > 0:
            row = trans[q]
            for b in _BYTE_ORDER:
                nq = row[b]
                if nq >= 0 and d[nq] == d[q] - 1:
                    out.append(b)
                    q = int(nq)
                    break
        return bytes(out)

    def witness(self, q: int, t: int) -> bytes:
        """The shortest bytes from ``q`` to a clean end of ``t`` (readable bytes first)."""
        key = (q, t)
        w = self._fin_str.get(key)
        if w is not None:
            return w
        w = self.path(q, self._distances(t))
        self._fin_str[key] = w
        return w

    def end_state(self, q: int, data: bytes) -> int:
        """The lexer state after ``data`` from ``q`` within one lexeme."""
        for x in data:
            q = int(self.trans[q, x])
        return q

    def _separator(self) -> bytes | None:
        """The cheapest lexeme of an ignored terminal that is not a newline (a space)."""
        for cand in (b" ", b"\t"):
            q = int(self.trans[0, cand[0]])
            if q >= 0 and self.accept[q] >= 0 and self.ignored[self.accept[q]] and (
                self.accept[q] not in (self.nl_t, self.continuation_t)
            ):
                return cand
        for t in range(self.num_terminals):
            w = self.spell[t]
            if self.ignored[t] and t not in (self.nl_t, self.continuation_t) and w and (
                b"\n" not in w
            ):
                return w
        return None


class BudgetPlanner:
    """Per compiled grammar (basic lexer mode): upper bounds on the tokens to complete, the
    per-token cost vectors masks are filtered with, and concrete shortest completions."""

    def __init__(
        self, mb: MaskBuilder, vocab: Vocabulary, rules: list[tuple[int, tuple[int, ...]]],
        tab_len: int, *, parent: BudgetPlanner | None = None,
        markers: dict[int, int] | None = None,
    ) -> None:
        """``rules``: the grammar's rules as symbol ids of ``mb``'s automaton. A planner for
        a quotient grammar (fill-in-the-middle) shares its ``parent``'s lexer-side tables
        (same lexer, same vocabulary); ``markers`` gives its marker terminals' costs, and the
        end of the middle is not the end of input (no free trailing newline)."""
        self.mb = mb
        self.ctx = mb.ctx
        self.vocab = vocab
        self.tab = tab_len
        a = self.ctx.automaton
        self.automaton = a
        self.nt = a.num_terminals  # parser terminals
        self.nl_t = mb.nl_t
        self.indent_t = self.ctx.indent_t
        self.dedent_t = self.ctx.dedent_t
        self.has_indent = self.ctx.nl_t >= 0
        self.rules = rules
        self.markers = dict(markers or {})
        # fill-in-the-middle: markers that stand for the middle's last lexeme continued by the
        # suffix → distances (bytes, per lexer state) to where the suffix's head ends it
        self.boundary: dict[int, np.ndarray] = {}
        # fill-in-the-middle: the boundary markers (above) whose lexeme does not stand in the
        # parse (a comment, blanks, a newline lexeme the suffix continues): the marker comes
        # after it, not instead of it; with the width a newline lexeme ends at (the last
        # line of the suffix's part of it; None: not known here)
        self.glued: dict[int, tuple[frozenset[int], int | None]] = {}
        # fill-in-the-middle: what builds the planner :meth:`plan` falls back on (on first
        # use), whose glued markers are in ``glued`` (here they are free ends after any
        # lexeme; see ``budget.quotient_planner``)
        self.strict: Callable[[], BudgetPlanner] | None = None
        self._strict: BudgetPlanner | None = None
        # fill-in-the-middle: "the input may end here" exactly as far as the view knows
        # (the quotient's own finish ignores how the suffix glues on)
        self.end_check: Callable[[int, int, PState], bool] | None = None
        # fill-in-the-middle, for the fallback search: lexeme starts that the suffix's first
        # line continues (a comment opener when the suffix starts inside a comment), and the
        # width of the suffix's leading blanks (a newline ending the middle is continued)
        self.openers: list[bytes] = []
        self.lead = 0
        self.nsym = max([len(a.symbols), *(1 + max((lhs, *rhs)) for lhs, rhs in rules)])
        if parent is None:
            self.tok = _Tokenizer(vocab)
            self.lex = self._lexeme_costs(mb, self.tok, self._predecessors(mb))
        else:
            self.tok, self.lex = parent.tok, parent.lex
        free = set()
        if self.has_indent and parent is None:
            free = {self.ctx.nl_t} | ({self.dedent_t} if self.dedent_t >= 0 else set())
        self.free = self._fixpoint_free(free, self.nsym)
        self._sym_costs: dict[int, list[int]] = {}
        self._K: dict[int, dict[int, tuple[dict[int, int], dict[int, int], frozenset[int]]]] = {}
        lim = mb.limits
        self._W: BoundedMemo[tuple[int, int], dict[int, int]] = BoundedMemo(
            memo_size(lim.step_memo))
        self._Wz: BoundedMemo[int, frozenset[int]] = BoundedMemo(memo_size(lim.step_memo))
        self._H: BoundedMemo[tuple[int, int], int] = BoundedMemo(memo_size(lim.step_memo))
        self._shifted: BoundedMemo[tuple[int, int, int], int] = BoundedMemo(
            memo_size(lim.step_memo)
        )
        self._nlb: BoundedMemo[int, int] = BoundedMemo(memo_size(lim.parser_states))
        # per parser state, a vector over lexer states (8 bytes each): fewer of them
        self._cls: BoundedMemo[int, np.ndarray] = BoundedMemo(
            memo_size(max(64, lim.parser_states // 16)))
        self._vec: BoundedMemo[tuple[int, int, int], TokenGroups] = BoundedMemo(
            memo_size(lim.mask_cache)
        )
        self._nl_cost: dict[int, int] = {}
        self._units: BoundedMemo[tuple[int, int, int], StepUnits] = BoundedMemo(
            memo_size(lim.mask_cache))
        self._rfinals: BoundedMemo[tuple[int, int | None], _RowFinals] = BoundedMemo(
            memo_size(lim.row_cache))
        self._failed: BoundedMemo[tuple[int, ...], int] = BoundedMemo(memo_size(lim.mask_cache))
        self._plans: BoundedMemo[tuple[int, int, int], tuple[int, ...]] = BoundedMemo(
            memo_size(lim.mask_cache)
        )
        self._k_by_top: dict[int, int] = {}
        self.vocab_size = mb.vocab_size
        self._tok_bytes: np.ndarray | None = None  # (V, longest) token bytes, zero-padded
        self._tok_lens: np.ndarray | None = None
        self._widths: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._parent = parent
        self._finals: BoundedMemo[int, np.ndarray] = (
            BoundedMemo(memo_size(lim.row_cache)) if parent is None else parent._finals)
        if parent is not None:
            parent._token_matrix()
            self._tok_bytes, self._tok_lens = parent._tok_bytes, parent._tok_lens
        nl = mb.nl_live
        self._nl_live = np.array(nl if nl is not None else [False] * mb.dfa.num_states, bool)

    _lexeme_costs = _LexemeCosts  # the contextual mode's planner uses a subclass

    # ------------------------------------------------------------------ symbol costs
    def _predecessors(self, mb: MaskBuilder) -> list[set[int]]:
        """Per lexer terminal b, the lexer terminals whose lexeme can come right before one
        of b: the grammar's FOLLOW relation, seen through the indentation terminals (they
        ride on the newline lexeme), plus every ignored terminal."""
        n = self.nsym
        nt = self.nt
        T = mb.dfa.num_terminals
        nullable: set[int] = set()
        first: list[set[int]] = [{x} if x < nt else set() for x in range(n)]
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                if lhs not in nullable and all(x in nullable for x in rhs):
                    nullable.add(lhs)
                    changed = True
                for x in rhs:
                    if not first[x] <= first[lhs]:
                        first[lhs] |= first[x]
                        changed = True
                    if x not in nullable:
                        break
        follow: list[set[int]] = [set() for _ in range(n)]
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                trail = set(follow[lhs])
                for x in reversed(rhs):
                    if not trail <= follow[x]:
                        follow[x] |= trail
                        changed = True
                    trail = (first[x] | trail) if x in nullable else set(first[x])
        layout = {x for x in (self.indent_t, self.dedent_t) if x >= 0}
        preds: list[set[int]] = [set() for _ in range(T)]
        ignored = [t for t in range(T) if mb.dfa.ignored[t]]
        for a in range(nt):
            src = self.ctx.nl_t if a in layout else a
            if not 0 <= src < T:
                continue
            for b in follow[a]:
                if b < T:
                    preds[b].add(src)
        for b in range(T):
            preds[b].update(ignored)
        return preds

    def _fixpoint_free(self, free: set[int], nsym: int) -> frozenset[int]:
        out = set(free)
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                if lhs not in out and all(x in out for x in rhs):
                    out.add(lhs)
                    changed = True
        return frozenset(out)

    def nl_cost(self, width: int) -> int:
        """Tokens that spell a newline followed by ``width`` spaces."""
        c = self._nl_cost.get(width)
        if c is None:
            c = self._nl_cost[width] = self.tok.count(b"\n" + b" " * width)
        return c

    def k_newline(self, p: PState) -> int:
        """The cost charged per newline lexeme from ``p``: the dearest of the widths a
        completion from here can use (the open levels and up to eight more)."""
        top = p.indent[-1] if self.has_indent else 0
        cap = max(top + 8, 64)
        k = self._k_by_top.get(cap)
        if k is None:
            k = self._k_by_top[cap] = max(self.nl_cost(w) for w in range(cap + 1))
        return k

    def symbol_costs(self, k: int) -> list[int]:
        """Per automaton symbol, the fewest tokens of a complete derivation (newline lexeme
        cost ``k``; indentation tokens ride on it)."""
        c = self._sym_costs.get(k)
        if c is not None:
            return c
        n = self.nsym
        cost = [INF] * n
        lexc = self.lex.cost
        for t in range(min(self.nt, len(lexc))):
            cost[t] = int(lexc[t])
        for m, mc in self.markers.items():
            cost[m] = mc
        if self.has_indent:
            cost[self.ctx.nl_t] = k
            if self.indent_t >= 0:
                cost[self.indent_t] = 0
            if self.dedent_t >= 0:
                cost[self.dedent_t] = 0
        changed = True
        while changed:
            changed = False
            for lhs, rhs in self.rules:
                s = 0
                for x in rhs:
                    s += cost[x]
                    if s >= INF:
                        break
                if s < cost[lhs]:
                    cost[lhs] = s
                    changed = True
        self._sym_costs[k] = cost
        return cost

    def tail_costs(self, k: int) -> list[int]:
        """Like :meth:`symbol_costs`, for a derivation at the very end of the input: its
        trailing free symbols (newline, dedents) cost nothing."""
        key = -1 - k
        c = self._sym_costs.get(key)
        if c is not None:
            return c
        full = self.symbol_costs(k)
        free = self.free
        n = len(full)
        cost = [0 if x in free else full[x] for x in range(n)]
        for x in range(self.nt, n):
            cost[x] = 0 if x in free else INF
        # per rule, the positions after which only free symbols follow: (full cost of the
        # symbols before, symbol); a worklist re-evaluates the rules that use a symbol whose
        # cost dropped (a pass over every rule per change took ~0.1 s on a quotient grammar)
        cands: list[tuple[int, list[tuple[int, int]]]] = []
        users: dict[int, list[int]] = {}
        for lhs, rhs in self.rules:
            if not rhs:
                cost[lhs] = 0
                continue
            j = len(rhs)
            while j > 0 and rhs[j - 1] in free:
                j -= 1
            i0 = max(j - 1, 0)
            pre = 0
            for x in rhs[:i0]:
                pre = min(INF, pre + full[x])
            opts = []
            for x in rhs[i0:]:
                if pre >= INF:
                    break
                opts.append((pre, x))
                pre += full[x]
            if opts:
                for _, x in opts:
                    users.setdefault(x, []).append(len(cands))
                cands.append((lhs, opts))
        queued = [True] * len(cands)
        work = deque(range(len(cands)))
        while work:
            r = work.popleft()
            queued[r] = False
            lhs, opts = cands[r]
            best = min(pre + cost[x] for pre, x in opts)
            if best < cost[lhs]:
                cost[lhs] = best
                for r2 in users.get(lhs, ()):
                    if not queued[r2]:
                        queued[r2] = True
                        work.append(r2)
        self._sym_costs[key] = cost
        return cost

    def _kernel(self, s: int, k: int) -> tuple[dict[int, int], dict[int, int], frozenset[int]]:
        """For automaton state ``s``: (Kn, Kt, Kz) — per completed left-hand side (or
        _ACCEPT), the fewest tokens to finish it from ``s`` without / with a free tail, and
        the ones finished by free symbols alone."""
        memo = self._K.setdefault(k, {})
        r = memo.get(s)
        if r is not None:
            return r
        a = self.automaton
        cost = self.symbol_costs(k)
        tail = self.tail_costs(k)
        # iterative post-order over the (acyclic) goto graph
        stack = [(s, False)]
        while stack:
            st, ready = stack.pop()
            if st in memo:
                continue
            succ = [*a.goto_t[st].items(), *a.goto_n[st]]
            if not ready:
                stack.append((st, True))
                for _, t in succ:
                    if t not in memo:
                        stack.append((t, False))
                continue
            kn: dict[int, int] = {x: 0 for x in a.completed[st]}
            if a.accepting[st]:
                kn[_ACCEPT] = 0
            kz = set(kn)
            kt = dict(kn)
            for x, t in succ:
                tn, tt, tz = memo[t]
                c = cost[x]
                if c < INF:
                    for b, v in tn.items():
                        if c + v < kn.get(b, INF):
                            kn[b] = c + v
                    for b, v in tt.items():
                        if c + v < kt.get(b, INF):
                            kt[b] = c + v
                if x in self.free:
                    for b in tz:
                        kz.add(b)
                        kt[b] = 0
                ct = tail[x]
                if ct < INF:  # the free tail starts inside x's derivation
                    for b in tz:
                        if ct < kt.get(b, INF):
                            kt[b] = ct
            memo[st] = (kn, kt, frozenset(kz))
        return memo[s]

    # ------------------------------------------------------------------ Earley sets
    def _finish_after(self, o: EarleySet, a: int, k: int, tail: bool) -> int:
        """Fewest tokens to finish the input once ``a`` is completed with origin ``o``
        (``tail``: only free symbols may follow — the answer is then 0 or INF)."""
        if a == _ACCEPT:
            return 0
        if tail:
            return 0 if a in self._set_free(o, k) else INF
        return self._set_costs(o, k).get(a, INF)

    def _set_costs(self, o: EarleySet, k: int) -> dict[int, int]:
        """Per nonterminal that items of ``o`` wait for: the fewest tokens to finish the
        input once it is completed with origin ``o``. One shortest-path problem per set: the
        kernel items (origins earlier, solved first) give start values, the set's own
        predictions are edges between its nonterminals (Dijkstra; costs are ≥ 0)."""
        key = (o.uid, k)
        r = self._W.get(key)
        if r is not None:
            return r
        free = self._set_free(o, k)
        base: dict[int, int] = {}
        edges: dict[int, list[tuple[int, int]]] = {}
        goto_n = self.automaton.goto_n
        for s, origin in o.items:
            for a, t in goto_n[s]:
                kn, kt, _ = self._kernel(t, k)
                best = base.get(a, INF)
                if origin is None:  # a prediction of this set (or the start item)
                    for b, w in kn.items():
                        if b == _ACCEPT:
                            best = min(best, w)
                        else:
                            edges.setdefault(b, []).append((a, w))
                    for b, w in kt.items():
                        if w < best and (b == _ACCEPT or b in free):
                            best = w
                else:
                    after = self._set_costs(origin, k)
                    free_o = self._set_free(origin, k)
                    for b, w in kn.items():
                        if w < best:
                            best = min(best, w + (0 if b == _ACCEPT else after.get(b, INF)))
                    for b, w in kt.items():
                        if w < best and (b == _ACCEPT or b in free_o):
                            best = w
                if best < INF:
                    base[a] = best
        dist = dict(base)
        heap = [(d, a) for a, d in dist.items()]
        heapq.heapify(heap)
        while heap:
            d, b = heapq.heappop(heap)
            if d > dist.get(b, INF):
                continue
            for a, w in edges.get(b, ()):
                nd = d + w
                if nd < dist.get(a, INF):
                    dist[a] = nd
                    heapq.heappush(heap, (nd, a))
        self._W.put(key, dist)
        return dist

    def _set_free(self, o: EarleySet, k: int) -> frozenset[int]:
        """The nonterminals whose completion with origin ``o`` lets the input end with only
        free symbols (the end of input's newline and dedents) after it."""
        r = self._Wz.get(o.uid)
        if r is not None:
            return r
        free: set[int] = set()
        same: dict[int, list[int]] = {}  # b → a: a is free once b is
        goto_n = self.automaton.goto_n
        for s, origin in o.items:
            for a, t in goto_n[s]:
                _, _, kz = self._kernel(t, k)  # the free sets do not depend on k
                if origin is None:
                    for b in kz:
                        if b == _ACCEPT:
                            free.add(a)
                        else:
                            same.setdefault(b, []).append(a)
                elif any(b == _ACCEPT or b in self._set_free(origin, k) for b in kz):
                    free.add(a)
        work = list(free)
        while work:
            b = work.pop()
            for a in same.get(b, ()):
                if a not in free:
                    free.add(a)
                    work.append(a)
        out = frozenset(free)
        self._Wz.put(o.uid, out)
        return out

    def _items_cost(self, es: EarleySet, items: Any, k: int) -> int:
        best = INF
        for s, o in items:
            org = es if o is None else o
            kn, kt, _ = self._kernel(s, k)
            for b, v in kn.items():
                if v < best:
                    best = min(best, v + self._finish_after(org, b, k, False))
            for b, v in kt.items():
                if v < best and self._finish_after(org, b, k, True) == 0:
                    best = v
        return best

    def earley_cost(self, es: EarleySet, k: int) -> int:
        """Fewest tokens of terminals that complete the input from set ``es``."""
        key = (es.uid, k)
        r = self._H.get(key)
        if r is not None:
            return r
        # kernel items only: predictions (origin None, some item's partner state) finish
        # through the items that predicted them
        nk = self.automaton.nonkernel
        partners = {nk[s] for s, _ in es.items}
        items = [(s, o) for s, o in es.items if not (o is None and s in partners)]
        r = self._items_cost(es, items, k)
        self._H.put(key, r)
        return r

    def shifted_cost(self, es: EarleySet, terminal: int, k: int) -> int:
        """``earley_cost`` of the set after shifting ``terminal``, without building it."""
        key = (es.uid, terminal, k)
        r = self._shifted.get(key)
        if r is not None:
            return r
        goto_t = self.automaton.goto_t
        items = []
        for s, o in es.items:
            t = goto_t[s].get(terminal)
            if t is not None:
                items.append((t, es if o is None else o))
        r = self._items_cost(es, items, k) if items else INF
        self._shifted.put(key, r)
        return r

    # ------------------------------------------------------------------ parser states
    def parser_cost(self, p: PState) -> int:
        """Fewest tokens that complete the input from ``p`` at a lexeme boundary."""
        if self.ctx.finish(p):
            return 0
        k = self.k_newline(p)
        if not (self.has_indent and p.bol and p.depth == 0):
            return self.earley_cost(p.es, k)
        # Right after a newline lexeme the indentation it made is final: an INDENT or DEDENT
        # the parser still expects cannot come before another statement, and another newline
        # would have been part of that lexeme. So the next lexeme is a plain terminal.
        r = self._H.get((p.uid, -1 - k))
        if r is None:
            r = INF
            exp, lexc = p.es.expected, self.lex.cost
            for t in range(self.lex.num_terminals):
                if (exp >> t) & 1 and t != self.nl_t and lexc[t] < INF:
                    r = min(r, int(lexc[t]) + self.shifted_cost(p.es, t, k))
            self._H.put((p.uid, -1 - k), r)
        return r

    def after_terminal(self, p: PState, t: int) -> int:
        """Tokens needed once a lexeme of lexer terminal ``t`` ends at ``p`` (INF where the
        parser cannot take it); the newline terminal bounded over every indentation width."""
        if t == self.nl_t:
            r = self._nlb.get(p.uid)
            if r is None:
                r = self._newline_bound(p)
                self._nlb.put(p.uid, r)
            return r
        if self.lex.ignored[t]:
            here = self.parser_cost(p)
            return here if (t != self.lex.continuation_t or here > 0) else self.nl_cost(0)
        if (p.es.expected >> t) & 1:
            return self.shifted_cost(p.es, t, self.k_newline(p))
        return INF

    def newline_cost(self, p: PState, carry: int) -> int:
        """Tokens to complete once a newline lexeme whose last line is ``carry`` wide so far
        ends: spaces may still be added to reach an open level (or one deeper), or a fresh
        line started."""
        if p.depth > 0:
            return self.parser_cost(p)
        return min(self._newline_options(p, carry), default=(INF, b""))[0]

    def _newline_options(self, p: PState, carry: int) -> list[tuple[int, bytes]]:
        """(tokens to complete, bytes that extend the newline lexeme) per way to end it."""
        ctx = self.ctx
        out = []
        levels = sorted({*p.indent, p.indent[-1] + 1})
        for w in sorted({*levels, carry}):
            if w < carry:
                continue
            q = ctx.newline(p, w)
            if q is None:
                continue
            pad = b" " * (w - carry)
            extra = self.tok.count(pad) if pad else 0
            out.append((extra + self.parser_cost(q), pad))
        if self.lex.nl_renews:
            for w in levels:
                q = ctx.newline(p, w)
                if q is not None:
                    data = b"\n" + b" " * w
                    out.append((self.tok.count(data) + self.parser_cost(q), data))
        return out

    def _newline_bound(self, p: PState) -> int:
        """``newline_cost`` for the worst width a token can leave the lexeme at."""
        if p.depth > 0 or not self.has_indent:
            return self.parser_cost(p)
        return max(self.newline_cost(p, w) for w in range(p.indent[-1] + 3))

    # ------------------------------------------------------------------ lexer states
    def final_states(self, q: int, tokens: np.ndarray) -> np.ndarray:
        """The lexer state each of ``tokens`` leaves the lexer in from ``q`` (greedy: a byte
        that kills the lexeme starts the next one), vectorised over the tokens. Memoised per
        row (the tables keep only a token's lexeme class; budgets need the state)."""
        r = self._finals.get(q)
        if r is not None:
            return r
        self._token_matrix()
        mat, lens_ = self._tok_bytes, self._tok_lens
        assert mat is not None and lens_ is not None
        lens = lens_
        order = tokens[np.argsort(-lens[tokens], kind="stable")]  # longest first
        return self._walk_tokens(q, order, mat, lens)

    def _token_matrix(self) -> None:
        """The vocabulary as a zero-padded (V, longest) byte matrix (built once)."""
        if self._tok_bytes is None:
            toks = self.vocab.tokens
            lens = np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))
            width = int(lens.max(initial=1))
            mat = np.zeros((len(toks), width), dtype=np.uint8)
            flat = np.frombuffer(b"".join(toks), dtype=np.uint8)
            rows = np.repeat(np.arange(len(toks)), lens)
            cols = np.arange(flat.size) - np.repeat(np.cumsum(lens) - lens, lens)
            mat[rows, cols] = flat
            self._tok_bytes, self._tok_lens = mat, lens

    def token_widths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per token: (holds a newline, width of the bytes after its last newline, width of
        all its bytes) — the indentation carry it leaves (see :mod:`.lexing`). Built once."""
        if self._parent is not None:
            return self._parent.token_widths()
        r = self._widths
        if r is None:
            toks = self.vocab.tokens
            tab = self.tab
            has = np.fromiter((b"\n" in t for t in toks), dtype=bool, count=len(toks))
            tails = [t[t.rfind(b"\n") + 1:] for t in toks]
            after = np.fromiter((t.count(b" ") + tab * t.count(b"\t") for t in tails),
                                dtype=np.int64, count=len(toks))
            total = np.fromiter((t.count(b" ") + tab * t.count(b"\t") for t in toks),
                                dtype=np.int64, count=len(toks))
            r = self._widths = (has, after, total)
        return r

    def _walk_tokens(self, q: int, order: np.ndarray, mat: np.ndarray, lens: np.ndarray,
                     ) -> np.ndarray:
        olens = lens[order]
        state = np.full(order.size, q, dtype=np.int64)
        trans = self.lex.trans
        for j in range(int(olens[0]) if order.size else 0):
            n = int(np.searchsorted(-olens, -j, side="left"))  # tokens longer than j
            n = int((olens > j).sum()) if n == 0 else n
            live = state[:n]
            byte = mat[order[:n], j]
            nxt = trans[np.maximum(live, 0), byte]
            dead = nxt < 0
            if dead.any():
                nxt[dead] = trans[0, byte[dead]]
            state[:n] = np.where(live < 0, -1, nxt)
        out = np.full(self.vocab_size, -1, dtype=np.int32)  # per row, kept: half the bytes
        out[order] = state
        self._finals.put(q, out)
        return out

    def state_costs(self, p: PState, states: np.ndarray) -> np.ndarray:
        """Per lexer state in ``states``: tokens to complete from it with the parser at
        ``p`` (a newline lexeme's width taken at its worst). Memoised per parser state as a
        vector over lexer states (-1: not computed yet), filled where asked."""
        known = self._cls.get(p.uid)
        if known is None:
            known = np.full(self.lex.num_states, -1, dtype=np.int64)
            self._cls.put(p.uid, known)
        vals: np.ndarray = known[states]
        missing = vals < 0
        if missing.any():
            for f in np.unique(states[missing]).tolist():
                known[f] = self._state_bound(p, f)
            vals = known[states]
        return vals

    def _state_bound(self, p: PState, f: int) -> int:
        """``state_costs`` of one lexer state ``f`` (with no known indentation carry)."""
        if f == 0:
            return self.parser_cost(p)
        if self.mb.complete(p, f, 0):  # the text may end right here
            return 0
        v = self._boundary_cost(f, p)[0] if self.boundary else INF
        for t, c in self.lex.fin_list[f]:
            if c < v:
                v = min(v, c + self._after_finishing(f, t, p))
        return v

    def state_cost(self, q: int, carry: int, p: PState) -> int:
        """Upper bound on the tokens that complete the input from runtime state (q, carry, p)."""
        mb = self.mb
        if self.end_check(q, carry, p) if self.end_check is not None else mb.complete(p, q, carry):
            return 0
        if q == 0:
            return self.parser_cost(p)
        best = self._boundary_cost(q, p)[0]
        for t, f in self.lex.fin_list[q]:
            if f >= best:
                continue
            if t == self.nl_t and f == 0:
                extra = self.newline_cost(p, carry)
            else:
                extra = self._after_finishing(q, t, p)
            best = min(best, f + extra)
        return best

    def _after_finishing(self, q: int, t: int, p: PState) -> int:
        """``after_terminal``, once the lexeme at ``q`` is finished as ``t`` by its witness:
        a newline lexeme whose witness holds a newline has a known width (no worst case)."""
        if t == self.nl_t:
            w = self.lex.witness(q, t)
            if b"\n" in w:
                return self.newline_cost(p, _width(w, self.tab))
        return self.after_terminal(p, t)

    def _boundary_cost(self, q: int, p: PState) -> tuple[int, bytes]:
        """Fill-in-the-middle: the cheapest way to make the lexeme in progress at ``q`` the
        one the suffix continues (tokens to complete, bytes to add); (INF, b"") if none."""
        best, text = INF, b""
        for m, d in self.boundary.items():
            if d[q] >= INF:
                continue
            rest = self._marker_rest(p, m)
            if rest >= best:
                continue
            w = self.lex.path(q, d)
            c = self.tok.count(w) + rest if w else rest
            if c < best:
                best, text = c, w
        return best, text

    def _marker_rest(self, p: PState, m: int) -> int:
        """Tokens to complete once the lexeme in progress is the one boundary marker ``m``
        stands for (INF: the parser at ``p`` cannot take it): the marker shifted instead of
        the lexeme, or, for a glued one, after the lexeme (a newline lexeme at its width)."""
        k = self.k_newline(p)
        g = self.glued.get(m)
        if g is None:
            return self.shifted_cost(p.es, m, k) if (p.es.expected >> m) & 1 else INF
        ends, width = g
        best = INF
        for t in ends:
            p2: PState | None = p
            if t == self.nl_t and p.depth == 0:
                top = p.indent[-1] if p.indent else 0
                p2 = self.ctx.newline(p, top if width is None else width)
            elif not self.lex.ignored[t]:
                continue
            if p2 is not None and (p2.es.expected >> m) & 1:
                best = min(best, self.shifted_cost(p2.es, m, k))
        return best

    def token_groups(self, p: PState, q: int, carry: int) -> TokenGroups:
        """Per token, the runtime state it leads to, as vocabulary-sized group vectors (for
        fill-in-the-middle budgets, which tell tokens apart by their indentation carry too;
        :meth:`step_units` is the same grouping without per-token vectors). Only meaningful
        where the grammar mask allows the token. Memoised."""
        mb = self.mb
        ckey = (p.uid, q, carry if mb.nl_live is not None and mb.nl_live[q] else 0)
        r = self._vec.get(ckey)
        if r is not None:
            return r
        gid = np.full(mb.vocab_size, -1, dtype=np.int64)
        raw = np.full(mb.vocab_size, -1, dtype=np.int64)
        killed = -1
        vertices: list[PState] = []
        row = mb.row(q)
        finals = self.final_states(q, row.tokens)
        starts = np.concatenate(([0], np.cumsum(row.counts)[:-1]))
        nl_live = self._nl_live

        S = self.lex.num_states

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
        to, each group with its bound (per token: the bound of the state it leads to),
        without vocabulary-sized vectors. A step where every group fits the budget (most steps, see
        the README) then costs the trie walk and the groups' bounds, and no token's entry;
        the tokens of a group are gathered only where the budget cuts it. Memoised."""
        mb = self.mb
        key = (p.uid, q, carry if mb.nl_live is not None and mb.nl_live[q] else 0)
        r = self._units.get(key)
        if r is not None:
            return r
        gids: list[np.ndarray] = []
        costs: list[np.ndarray] = []
        finals: list[np.ndarray] = []
        parts: list[tuple[_RowFinals, np.ndarray]] = []
        sizes: list[np.ndarray] = []
        verts: list[PState] = []
        unit_vertex: list[int] = []
        S = self.lex.num_states
        nv = 0  # vertex index as token_groups counts them (its groups' ids)

        def visit(rf: _RowFinals, pp: PState, v: int) -> None:
            nonlocal nv
            lo, hi = rf.row.spans[v]
            if lo == hi:
                return
            fu, ks, sz = rf.vertex(v, self.mb.class_vector(pp)[rf.row.cls[lo:hi]])
            if fu.size:
                gids.append(nv * S + fu)
                costs.append(self.state_costs(pp, fu))
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
        r = StepUnits(_cat(gids), _cat(costs), _cat(finals), verts,
                      np.array(unit_vertex, dtype=np.int64), parts, _cat(sizes), self._nl_live)
        self._units.put(key, r)
        return r

    def _row_finals(self, q: int, row: Any, restrict: np.ndarray | None) -> _RowFinals:
        """Row ``q``'s tokens sorted by (node, final lexer state), restricted to the tokens
        where ``restrict`` is True (a kill set). Memoised per row object and restriction."""
        key = (q, None if restrict is None else id(restrict))
        r = self._rfinals.get(key)
        if r is not None and r.row is row and r.restrict is restrict:
            return r
        f = self.final_states(q, row.tokens)
        r = _RowFinals(row, restrict, f, self.lex.num_states)
        self._rfinals.put(key, r)
        return r

    # ------------------------------------------------------------------ witnesses
    def plan(self, st: Any, walk: Any, complete: Any, view: Any = None,
             search: int = SEARCH_NODES) -> tuple[int, ...]:
        """Token ids of a shortest completion from runtime state ``st``, checked by walking
        them (``walk``/``complete`` are the constraint's own; ``view(st)`` gives its lexer
        state, carry and parser state, for constraints with wider states). Memoised. Where
        following the bounds' choices fails (fill-in-the-middle: the quotient's costs can be
        optimistic), a best-first search of up to ``search`` states looks further; then, for
        a full search (``search`` ≥ ``SEARCH_NODES``), the ``strict`` planner, if any — which
        from then on is tried first (these costs led nowhere with this suffix).

        Raises
        ------
        NoCompletionError
            No completion was found (the vocabulary cannot spell one, or the search did not
            reach one).
        """
        view = view or _plain_view
        q, carry, _ = view(st)
        key = (q, carry, *(x.uid for x in st[2:]))
        r = self._plans.get(key)
        if r is not None:
            return r
        failed = self._failed.get(key)
        if failed is not None and failed >= search:
            raise NoCompletionError(_NO_PLAN)
        ids = None
        full = search >= SEARCH_NODES  # a step's own plan, not a token's check
        sp = self._strict
        if sp is not None:
            # these costs once led nowhere with this suffix: the strict planner leads
            with contextlib.suppress(NoCompletionError):
                ids = sp.plan(st, walk, complete, view, search)
        if ids is None and (sp is None or full):
            ids = self._checked(st, self.completion_text(st, walk, complete, view), walk,
                                complete)
            if ids is None and search > 0:
                text = self.search_text(st, walk, complete, view, search)
                ids = self._checked(st, text, walk, complete)
        if ids is None and sp is None and self.strict is not None and full:
            # the strict planner's costs, where these were too optimistic to lead anywhere
            self._strict = sp = self.strict()
            with contextlib.suppress(NoCompletionError):
                ids = sp.plan(st, walk, complete, view, search)
        if ids is None:
            self._failed.put(key, search)
            raise NoCompletionError(_NO_PLAN)
        self._plans.put(key, ids)
        return ids

    def _checked(self, st: Any, text: bytes | None, walk: Any, complete: Any,
                 ) -> tuple[int, ...] | None:
        """``text`` as the fewest tokens, if walking them from ``st`` ends complete."""
        ids = self.tok.tokenize(text) if text is not None else None
        if ids is None:
            return None
        cur = st
        for i in ids:
            cur = walk(cur, self.vocab.token_bytes(i))
            if isinstance(cur, int):
                return None
        return ids if complete(cur) else None

    def search_text(self, st: Any, walk: Any, complete: Any, view: Any, limit: int,
                    ) -> bytes | None:
        """Best-first search for bytes that complete the input from ``st``: a state's
        children are the chunks the greedy planner chooses among (the lexeme in progress
        finished as each terminal, each expected next lexeme glued on, newlines at the open
        levels, the suffix's boundary lexemes, indentation pads), walked exactly; the order
        is tokens so far + the bound from the child (an estimate here, not a promise). At
        most ``limit`` states are expanded; None if no completion is found."""
        view = view or _plain_view
        tick = 0
        heap: list[tuple[int, int, int, bytes, Any]] = [(0, 0, 0, b"", st)]
        seen: set[tuple[int, ...]] = set()
        for _ in range(limit):
            if not heap:
                return None
            _, g, _, text, cur = heapq.heappop(heap)
            q, carry, p = view(cur)
            key = (q, carry, *(x.uid for x in cur[2:]))
            if key in seen:
                continue
            seen.add(key)
            if complete(cur):
                return text
            for chunk in self._chunks(q, carry, p):
                nst = walk(cur, chunk)
                if isinstance(nst, int):
                    continue
                c = self.tok.count(chunk)
                if c >= INF:
                    continue
                nq, ncarry, np_ = view(nst)
                h = self.state_cost(nq, ncarry, np_)
                tick += 1
                heapq.heappush(heap, (g + c + min(h, _SEARCH_H_CAP), g + c, tick, text + chunk,
                                      nst))
        return None

    def _chunks(self, q: int, carry: int, p: PState) -> list[bytes]:
        """The byte strings :meth:`search_text` tries from (q, carry, p), deterministic."""
        lex = self.lex
        out: list[bytes] = []
        if q != 0:
            for t, _f in lex.fin_list[q]:
                w = lex.witness(q, t)
                if w:
                    out.append(w)
            if self._nl_live[q] and p.depth == 0:
                top = p.indent[-1] if p.indent else 0
                for level in sorted({*p.indent, top + 1, top + 4}):
                    if level > carry:
                        out.append(b" " * (level - carry))
            if self.boundary:
                bt = self._boundary_cost(q, p)[1]
                if bt:
                    out.append(bt)
            if lex.separator is not None and self.markers:
                out.append(lex.separator)
            if self.mb.accept[q] < 0:
                return out
            p2 = self.mb.lexeme_end(p, q, carry)
            if p2 is None:
                return out
        else:
            p2 = p
        exp = p2.es.expected
        for t in range(lex.num_terminals):
            if t == self.nl_t:
                if p2.depth > 0 or (q and lex.trans[q, 10] >= 0):
                    continue
                if not self.has_indent:
                    if (exp >> t) & 1:
                        out.append(b"\n")
                    continue
                top = p2.indent[-1] if p2.indent else 0
                for width in sorted({*p2.indent, top + 1, top + 4}):
                    out.append(b"\n" + b" " * width)
                    if 0 <= width - self.lead < width:
                        out.append(b"\n" + b" " * (width - self.lead))
                continue
            if lex.ignored[t] or not (exp >> t) & 1:
                continue
            glued = lex.glue(q, t)
            if glued is not None:
                out.append(glued)
        starts = [lex.path(0, d) for m, d in self.boundary.items()
                  if d[0] < INF and (m in self.glued or (exp >> m) & 1)]
        for w in [*starts, *self.openers]:
            if w:
                glued = w if not q or lex.trans[q, w[0]] < 0 else (
                    None if lex.separator is None else lex.separator + w)
                if glued is not None:
                    out.append(glued)
        return list(dict.fromkeys(out))

    def set_suffix(self, suffix: bytes) -> None:
        """Fill-in-the-middle: what the fallback search tries for this suffix (see
        ``openers`` and ``lead``): lexeme starts of one or two printable bytes after which
        the suffix's first line (up to 48 bytes) is read without ending the lexeme."""
        head = suffix.split(b"\n", 1)[0][:48]
        lead = 0
        for b in suffix:
            if b not in (32, 9):
                break
            lead += self.tab if b == 9 else 1
        self.lead = lead
        if not head:
            return
        trans = self.lex.trans
        one = np.arange(33, 127, dtype=np.int64)
        s1 = trans[0, one]
        s2 = np.where(s1[:, None] >= 0, trans[np.maximum(s1, 0)[:, None], one[None, :]], -1)
        cands = [bytes([int(x)]) for x in one] + [bytes([int(x), int(y)]) for x in one
                                                   for y in one]
        st = np.concatenate([s1, s2.ravel()])
        for x in head:
            st = np.where(st >= 0, trans[np.maximum(st, 0), x], -1)
        alive = [c for c, q in zip(cands, st.tolist(), strict=True) if q >= 0]
        # the shortest ones only (a one-byte opener makes its two-byte extensions moot)
        ones = {c for c in alive if len(c) == 1}
        self.openers = sorted((c for c in alive if len(c) == 1 or c[:1] not in ones),
                              key=lambda c: (len(c), c))[:8]

    def completion_text(self, st: Any, walk: Any, complete: Any, view: Any = None,
                        ) -> bytes | None:
        """Bytes that complete the input from runtime state ``st``, following the bounds'
        choices (see :meth:`plan` for the arguments); None if that fails."""
        view = view or _plain_view
        mb = self.mb
        lex = self.lex
        out = bytearray()
        last = INF + 1
        for _ in range(_MAX_PLAN_LEXEMES):
            q, carry, p = view(st)
            if complete(st):
                return bytes(out)
            if q != 0 and self.markers and self._nl_live[q]:
                # fill-in-the-middle: the suffix may continue this newline lexeme (its
                # indentation): a few spaces more may be all the middle needs
                for pad in _PADS:
                    nst = walk(st, pad)
                    if not isinstance(nst, int) and complete(nst):
                        return bytes(out + pad)
            if q != 0:
                # finish the lexeme in progress as the cheapest terminal
                best, choice = INF, -1
                for t, f in lex.fin_list[q]:
                    extra = (self.newline_cost(p, carry) if t == self.nl_t and f == 0
                             else self._after_finishing(q, t, p))
                    if f + extra < best:
                        best, choice = f + extra, t
                bcost, btext = self._boundary_cost(q, p) if self.boundary else (INF, b"")
                if bcost < best:
                    nst = walk(st, btext) if btext else st
                    if not isinstance(nst, int) and complete(nst):
                        return bytes(out + btext)
                if choice < 0:
                    return None
                w = lex.witness(q, choice)
                if choice == self.nl_t:
                    now = _width(w, self.tab) + (0 if b"\n" in w else carry)
                    w += self._nl_pad(p, now)
                if w:
                    nst = walk(st, w)
                    if isinstance(nst, int):
                        return None
                    out += w
                    st = nst
                q, carry, p = view(st)
                if complete(st):
                    return bytes(out)
                glued = self._glue_to_suffix(st, q, carry, p, walk, complete)
                if glued is not None:
                    return bytes(out + glued)
                p2 = mb.lexeme_end(p, q, carry)  # ended by the next lexeme's first byte
                if p2 is None:
                    return None
                p = p2
            elif mb.complete(p, q, carry):
                glued = self._glue_to_suffix(st, q, carry, p, walk, complete)
                return None if glued is None else bytes(out + glued)
            nxt, cost = self._next_lexeme(p, q)
            if nxt is None or cost >= last:
                return None  # no way on, or the costs stopped decreasing (inconsistent)
            last = cost
            nst = walk(st, nxt)
            if isinstance(nst, int):
                return None
            out += nxt
            st = nst
        return None

    def _glue_to_suffix(self, st: Any, q: int, carry: int, p: PState, walk: Any,
                        complete: Any) -> bytes | None:
        """Where the quotient says the middle may end but the suffix's first byte would
        continue the middle's last lexeme: the separator that keeps them apart, if that
        completes the program (a marker's cost counts it, see ``quotient_planner``)."""
        sep = self.lex.separator
        if not self.markers or sep is None or not self.mb.complete(p, q, carry):
            return None
        st2 = walk(st, sep)
        if isinstance(st2, int) or not complete(st2):
            return None
        return sep

    def _nl_pad(self, p: PState, carry: int) -> bytes:
        """The bytes that end a newline lexeme at ``carry`` the cheapest way."""
        if p.depth > 0:
            return b""
        return min(self._newline_options(p, carry), default=(INF, b""))[1]

    def _next_lexeme(self, p: PState, prev: int) -> tuple[bytes | None, int]:
        """The cheapest next lexeme at a boundary after a lexeme that ended in lexer state
        ``prev``: its bytes, separator included (None if there is none), and the tokens to
        complete that it leads to, its own included."""
        lex = self.lex
        best, text = INF, None
        k = self.k_newline(p)
        exp = p.es.expected
        for t in range(lex.num_terminals):
            if not (exp >> t) & 1 and not (t == self.nl_t and p.depth > 0):
                continue
            if t == self.nl_t:
                if p.depth > 0 or (prev and lex.trans[prev, 10] >= 0):
                    continue
                for width in sorted({*p.indent, p.indent[-1] + 1}):
                    q = self.ctx.newline(p, width)
                    if q is None:
                        continue
                    c = self.nl_cost(width) + self.parser_cost(q)
                    if c < best:
                        best, text = c, b"\n" + b" " * width
                continue
            if lex.ignored[t]:
                continue
            glued = lex.glue(prev, t)
            if glued is None:
                continue
            c = self.tok.count(glued) + self.shifted_cost(p.es, t, k)
            if c < best:
                best, text = c, glued
        for m, d in self.boundary.items():
            if d[0] >= INF:
                continue
            w = lex.path(0, d)
            if not w:
                continue  # the suffix's head alone: a plain boundary, not this marker
            glued = w if not prev or lex.trans[prev, w[0]] < 0 else (
                None if lex.separator is None else lex.separator + w)
            if glued is None:
                continue
            c = self.tok.count(glued) + self._marker_rest(p, m)
            if c < best:
                best, text = c, glued
        return text, best


def _plain_view(st: Any) -> tuple[int, int, Any]:
    return st  # type: ignore[no-any-return]


def _width(data: bytes, tab: int) -> int:
    """Indentation width of the last line of ``data`` (after its last newline)."""
    widths = indent_widths(tab)
    w = 0
    for b in data:
        w = 0 if b == 10 else w + widths[b]
    return w


def _cat(xs: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(xs) if xs else np.zeros(0, np.int64)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The concatenation of ``arange(s, s + c)`` for each pair (vectorised)."""
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    return offs + np.arange(total)
