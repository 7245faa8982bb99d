"""All terminals → one byte-level lexer DFA that knows, per state, which terminals are live.

Lexing semantics (documented in docs/semantics.md and shared by compiler and runtime):
*greedy longest match over all terminals at once*. A lexeme extends while the next byte keeps
some terminal alive; when the next byte kills every terminal the lexeme ends, and it must then
be in an accepting state. The winner among the accepting terminals is the one with the highest
priority, then string literals before regexes, then grammar order. This is lark's ``basic``
lexer (keywords are reserved) made deterministic on bytes, which is what lets a token's effect
from a lexer state be precomputed once, independent of the parser. A Lark grammar in the basic
mode follows lark's terminal order instead (the first terminal of the order that matches wins:
``order``, :mod:`gramask.compiler.lark_order`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..encoding import rows_of_bits
from ..errors import LexerTooLargeError
from .kept import drop_oldest
from .product_search import explore_dense
from .reach_back import BITS, ReverseEdges, reach_back
from .regex_bytes import MAX_TERMINAL_STATES, ByteDFA, explore, regex_to_byte_dfa

__all__ = ["MAX_LAZY_LEXER_STATES", "MAX_LEXER_STATES", "LexerDFA", "LexerRows", "Terminal",
           "build_lexer_dfa", "terminal_dfa"]


class Terminal(Protocol):
    """A lexer terminal (``gramask.grammar.TerminalSpec`` is one; this module needs only its
    shape, so grammar front ends can build lexers without an import cycle)."""

    @property
    def name(self) -> str: ...
    @property
    def pattern(self) -> str: ...
    @property
    def is_string(self) -> bool: ...
    @property
    def priority(self) -> int: ...
    @property
    def ignored(self) -> bool: ...

# Token tables cost one vectorised walk of the vocabulary per lexer state: the bundled
# grammars need 43-673 states; 16,384 states against a 150k vocabulary takes minutes.
MAX_LEXER_STATES = 16_384
# Tables walked lazily (a compile without the cache: a request's JSON Schema) pay for the
# states a request reaches only, so the automaton itself may be larger (a long counted string
# beside a format's strings: their product; a JSON Schema maxLength of 10,000: 220,004)
MAX_LAZY_LEXER_STATES = 262_144


class LexerRows(dict[int, list[int]]):
    """A lexer's rows as Python lists, indexed like a list of them (``rows[q][byte]``, at
    the cost of a dict lookup): each row is converted when first read, not all at once — a
    request's lexer may have tens of thousands of states (a counted string beside a format),
    of which its masks visit a few dozen, and converting all of them took seconds. ``len``
    and iteration see every row, in order (converting them)."""

    __slots__ = ("_trans",)

    def __init__(self, trans: np.ndarray) -> None:
        super().__init__()
        self._trans = trans

    def __missing__(self, q: int) -> list[int]:
        if not 0 <= q < self._trans.shape[0]:
            raise IndexError(f"lexer state {q} out of range")
        row: list[int] = self._trans[q].tolist()
        self[q] = row
        return row

    def __len__(self) -> int:
        return int(self._trans.shape[0])

    def __iter__(self) -> Iterator[list[int]]:  # type: ignore[override]
        return (self[q] for q in range(len(self)))


@dataclass
class LexerDFA:
    """The combined lexer automaton; state 0 is "no byte of the lexeme read yet".

    trans     (S, 256) int32   next state, -1 when every terminal dies
    accept    (S,)     int32   winning terminal if the lexeme ended here, else -1
    live      (S, T)   bool    terminal still matchable from here
    winnable  (S, T)   bool    some longer-or-equal lexeme from here ends with this winner
    accepting (S, T)   bool    every terminal that matches the lexeme read so far (the
                               contextual lexer picks among them; row 0 is all False)
    """

    trans: np.ndarray
    accept: np.ndarray
    live: np.ndarray
    winnable: np.ndarray
    terminal_names: tuple[str, ...]
    ignored: np.ndarray  # (T,) bool
    accepting: np.ndarray

    _rows: LexerRows | None = field(default=None, init=False, repr=False, compare=False)
    # :func:`gramask.compiler.ignored_follows.ignored_follows`, computed once for the compiler's
    # walks and the runtime built on the same automaton
    _follows: tuple[np.ndarray, list[frozenset[tuple[int, int]]]] | None = field(
        default=None, init=False, repr=False, compare=False)
    # :func:`gramask.compiler.separable.next_of` and :func:`~gramask.compiler.separable.adjacency`'s
    # answers, computed once for the compiler's dead-end check and the runtime's search (the
    # adjacency is an ``object`` here: its class lives in separable, which imports this module)
    _next: dict[int, int] | None = field(default=None, init=False, repr=False, compare=False)
    _next_alive: dict[int, int] | None = field(default=None, init=False, repr=False,
                                               compare=False)
    _adjacency: object | None = field(default=None, init=False, repr=False, compare=False)
    # the reversed edges, kept from the build for ignored_follows (None: built from trans)
    _reverse: ReverseEdges | None = field(default=None, init=False, repr=False,
                                          compare=False)
    # per byte, its class in the build (bytes every state treats alike; None: not kept)
    _byte_class: np.ndarray | None = field(default=None, init=False, repr=False,
                                           compare=False)

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    def rows(self) -> LexerRows:
        """``trans`` as Python lists (what the runtime's byte walks index), each row converted
        on first use and kept for every runtime built on this automaton. Read only."""
        if self._rows is None:
            self._rows = LexerRows(self.trans)
        return self._rows

    @property
    def num_terminals(self) -> int:
        return len(self.terminal_names)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "lex_trans": self.trans,
            "lex_accept": self.accept,
            "lex_live": np.packbits(self.live, axis=1),
            "lex_winnable": np.packbits(self.winnable, axis=1),
            "lex_ignored": self.ignored,
            "lex_accepting": np.packbits(self.accepting, axis=1),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], names: Sequence[str]) -> LexerDFA:
        t = len(names)
        return cls(
            trans=np.ascontiguousarray(arrays["lex_trans"], dtype=np.int32),
            accept=np.asarray(arrays["lex_accept"], dtype=np.int32),
            live=np.unpackbits(arrays["lex_live"], axis=1, count=t).astype(bool),
            winnable=np.unpackbits(arrays["lex_winnable"], axis=1, count=t).astype(bool),
            terminal_names=tuple(names),
            ignored=np.asarray(arrays["lex_ignored"], dtype=bool),
            accepting=np.unpackbits(arrays["lex_accepting"], axis=1, count=t).astype(bool),
        )


def terminal_dfa(t: Terminal) -> ByteDFA:
    """The byte DFA of one terminal: a JSON string automaton (``automaton``, from the JSON
    Schema front end); a plain string literal (no flags) as a chain of states, built directly
    (the same automaton the regex construction gives, without its cost: a grammar of thousands
    of keywords spent most of its compile time there); else its regex, compiled (memoised per
    pattern: generated grammars repeat the same terminals across requests)."""
    automaton = getattr(t, "automaton", "")
    if automaton:
        from ..frontends.json_strings import spec_dfa

        return spec_dfa(automaton)
    first = bool(getattr(t, "first_match", False))
    uni = bool(getattr(t, "unicode_categories", False))
    key = (("literal:" if t.is_string else "first:" if first else "regex:")
           + ("unicode:" if uni else "") + t.pattern)
    got = _TERMINAL_DFAS.get(key)
    if got is None:  # an error names this terminal; a refused regex is not retried
        got = _literal_dfa(t.pattern) if t.is_string else None
        if got is None:
            from ..frontends.json_prebuilt import prebuilt  # JSON text's terminals ship built

            got = (None if first or uni else prebuilt("regex:" + t.pattern)) or (
                regex_to_byte_dfa(t.name, t.pattern, first, uni))
        drop_oldest(_TERMINAL_DFAS, _TERMINAL_DFAS_KEPT)
        _TERMINAL_DFAS[key] = got
    return got


def _literal_dfa(pattern: str) -> ByteDFA | None:
    """A plain string literal's chain of states, or None (flags, or too long)."""
    literal = re.sub(r"\\(.)", r"\1", pattern, flags=re.DOTALL)
    data = literal.encode("utf-8")
    if not data or re.escape(literal) != pattern or len(literal) >= MAX_TERMINAL_STATES:
        return None
    return ByteDFA.chain(data)


# terminals' automata by kind and pattern, oldest first out (ByteDFAs are never modified;
# generated grammars repeat the same terminals across requests)
_TERMINAL_DFAS: dict[str, ByteDFA] = {}
_TERMINAL_DFAS_KEPT = 1024


def winner_order(terminals: Sequence[Terminal]) -> list[int]:
    """Terminal indices from strongest to weakest claim on a tie."""
    return sorted(
        range(len(terminals)),
        key=lambda i: (-terminals[i].priority, not terminals[i].is_string, i),
    )


def build_lexer_dfa(
    terminals: Sequence[Terminal],
    dfas: Sequence[ByteDFA] | None = None,
    *,
    progress: bool | None = None,
    max_states: int = MAX_LEXER_STATES,
    order: Sequence[tuple[int, ...]] | None = None,
    cuts: Sequence[int] | None = None,
) -> LexerDFA:
    """Product of the per-terminal byte DFAs, restricted to reachable states.

    ``progress``: a progress bar over the terminals (None: only on a terminal, and only once
    compiling them has taken a second). ``max_states``: the product's limit. ``order``:
    lark's terminal order (:func:`gramask.compiler.lark_order.order_indices`): the first
    terminal in it that matches wins, not the longest lexeme (None: the longest). ``cuts``:
    the contextual mode's part of that order (:func:`gramask.compiler.lark_order.
    contextual_cuts`): per terminal, those its accepting drops; the winners stay the
    runtime's to choose.

    Raises
    ------
    GrammarError
        A terminal's automaton, or the product of all of them, exceeds its state limit
        (``MAX_TERMINAL_STATES``, ``max_states``); the message names the terminals.
    """
    if dfas is None and progress is False:  # no bar: tqdm (and its asyncio) not imported
        dfas = [terminal_dfa(t) for t in terminals]
    if dfas is None:
        from tqdm.auto import tqdm

        disable = None if progress is None else not progress
        with tqdm(terminals, desc="gramask: terminals", unit="terminal", disable=disable,
                  leave=False, delay=1.0) as bar:
            dfas = [terminal_dfa(t) for t in bar]
    n_terms = len(terminals)
    order_by_rank = np.array(winner_order(terminals), dtype=np.int64)
    rank = np.empty(n_terms, dtype=np.int64)
    rank[order_by_rank] = np.arange(n_terms)

    # bytes that no terminal distinguishes share a class
    byte_class = _byte_classes(dfas)
    n_cls = int(byte_class.max()) + 1
    reps = [int(np.flatnonzero(byte_class == c)[0]) for c in range(n_cls)]

    # A product state is the set of live (terminal, state) pairs, kept as the sorted tuple of
    # their global numbers (terminal offset + state: terminal order, as the pairs were); one
    # row of ``table`` per byte class, one column per global state. State 0, the start, is
    # never re-entered: a lexeme that leads back to the start's set (`` `` in ``/ *x/``) is
    # begun, and the runtime reads state 0 as "no lexeme pending".
    sizes = np.array([d.num_states for d in dfas], dtype=np.int64)
    offset = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)])
    owner = np.repeat(np.arange(n_terms, dtype=np.int64), sizes)
    final = np.concatenate([d.finals for d in dfas]) if dfas else np.zeros(0, dtype=bool)
    cols = [d.classes() for d in dfas]  # (a regex's automaton is kept per byte class)
    table = np.concatenate(
        [np.where(c[:, m[reps]] >= 0, c[:, m[reps]].astype(np.int64) + offset[i], -1)
         for i, (c, m) in enumerate(cols)]) if dfas else np.zeros((0, n_cls), dtype=np.int64)
    table = table.astype(np.int64)

    def too_many(order: list[tuple[int, ...]]) -> None:
        _too_many_lexer_states(terminals, [
            tuple((int(owner[g]), g - int(offset[owner[g]])) for g in key) for key in order],
            max_states)

    start = np.array([offset[i] if _nonempty(dfas[i]) else -1 for i in range(n_terms)],
                     dtype=np.int64)
    cut = None
    if order is not None:
        from .lark_order import LarkCut

        cut = LarkCut(n_terms, order, owner, final)
        table = cut.add_shadows(table, offset)
        owner, final = np.array(cut.owner, dtype=np.int64), np.array(cut.final, dtype=bool)
    cut_fn: Callable[[tuple[int, ...]], tuple[int, ...]] | None = (
        None if cut is None else cut.cut)
    if cuts is not None and any(cuts):
        from .lark_order import cut_by

        cut_fn = cut_by(cuts, owner, final)
    if cut_fn is None and 0 < n_terms <= _DENSE_TERMINALS:  # (none at all: the sparse path)
        class_ranks = np.stack([rank[reps] for rank, _ in (d.column_rank() for d in dfas)])
        live_ids, cls_trans = explore_dense(table, start, max_states, too_many, class_ranks)
        q_of, col = np.nonzero(live_ids >= 0)  # by state, then terminal: each key's order
        all_ids = live_ids[q_of, col]
        n = live_ids.shape[0]
    else:
        keys, rows = _explore_sparse(table, start, max_states, too_many, cut_fn)
        cls_trans = np.array(rows, dtype=np.int32).reshape(len(keys), n_cls)
        n = len(keys)
        q_of = np.repeat(np.arange(n), [len(key) for key in keys])
        all_ids = np.fromiter((g for key in keys for g in key), dtype=np.int64,
                              count=len(q_of))
    trans = np.take(cls_trans, byte_class, axis=1)  # (2.5x faster than cls_trans[:, byte_class])

    live = np.zeros((n, n_terms), dtype=bool)
    live[q_of, owner[all_ids]] = True
    fin = final[all_ids] & (q_of != 0)  # empty lexemes never count
    accepting = np.zeros((n, n_terms), dtype=bool)
    accepting[q_of[fin], owner[all_ids[fin]]] = True
    if cut is not None:  # (state 0's lexeme is empty: no winner)
        accept = np.array([-1] + [cut.winner(k) for k in keys[1:]], dtype=np.int32)
    else:
        best = np.full(n, n_terms, dtype=np.int64)
        np.minimum.at(best, q_of[fin], rank[owner[all_ids[fin]]])
        accept = np.where(best < n_terms, order_by_rank[np.minimum(best, n_terms - 1)],
                          -1).astype(np.int32) if n_terms else np.full(n, -1, dtype=np.int32)

    reverse = ReverseEdges(cls_trans)  # (kept: ignored_follows reads the same edges)
    winnable = _winnable(accept, n_terms, reverse)
    ignored = np.array([t.ignored for t in terminals], dtype=bool)
    out = LexerDFA(
        trans=trans,
        accept=accept,
        live=live,
        winnable=winnable,
        terminal_names=tuple(t.name for t in terminals),
        ignored=ignored,
        accepting=accepting,
    )
    out._reverse = reverse
    out._byte_class = byte_class
    return out


# Up to this many terminals a product state is a dense row (a global state per terminal, -1
# dead) and a whole level of the search steps at once, over the terminals live in it (a
# schema of 68-150 keys: 1.5-8x faster than the tuples below; one of 307, 1.6x slower); past
# it (thousands of keywords, few live per state) sorted tuples of the live global states,
# one state at a time.
_DENSE_TERMINALS = 200


def _explore_sparse(
    table: np.ndarray, start: np.ndarray, max_states: int,
    on_limit: Callable[[list[tuple[int, ...]]], None],
    cut: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None,
) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """:func:`explore` over sorted tuples of live global states (many terminals; or
    ``cut``, lark's order, dropping threads from each successor)."""
    n_cls = table.shape[1]
    by_state: dict[int, list[int]] = {}  # per global state read, its successor per class
    by_cls = np.ascontiguousarray(table.T)

    def state_row(g: int) -> list[int]:  # (as lists when read: 2,000 regexes have 2 M states)
        got = by_state.get(g)
        if got is None:
            got = by_state[g] = table[g].tolist()
        return got

    def successors(key: tuple[int, ...]) -> list[tuple[int, ...] | None]:
        if len(key) > 48:  # thousands of live terminals at a lexeme's start: vectorised
            return [tuple(row[row >= 0].tolist()) or None for row in by_cls[:, list(key)]]
        if not key:
            return [None] * n_cls
        return [tuple(x for x in col if x >= 0) or None
                for col in zip(*map(state_row, key), strict=True)]

    if cut is not None:
        plain = successors

        def successors(key: tuple[int, ...]) -> list[tuple[int, ...] | None]:
            return [None if k is None else cut(k) or None for k in plain(key)]

    return explore(tuple(start[start >= 0].tolist()), successors, max_states, on_limit,
                   fresh_start=True)


def _too_many_lexer_states(
    terminals: Sequence[Terminal], order: list[tuple[tuple[int, int], ...]], max_states: int,
) -> None:
    """Name the terminals with the most distinct states in the product: they interact."""
    per: dict[int, set[int]] = {}
    for st in order:
        for term, s in st:
            per.setdefault(term, set()).add(s)
    worst = sorted(per, key=lambda t: -len(per[t]))[:3]
    names = ", ".join(f"{terminals[t].name} ({len(per[t])} states)" for t in worst)
    lazy = (f"; a compile without the cache (cache=False: each table row walked when a mask "
            f"first needs it) allows {MAX_LAZY_LEXER_STATES:,}"
            if max_states < MAX_LAZY_LEXER_STATES else "")
    raise LexerTooLargeError(
        f"the lexer needs more than {max_states:,} states (their combinations while "
        f"lexing); the terminals taking part most: {names}. Simplify or merge them{lazy}",
        name=terminals[worst[0]].name if worst else None, lazy_fits=bool(lazy),
    )


def _byte_classes(dfas: Sequence[ByteDFA]) -> np.ndarray:
    """Per byte, its class: bytes every terminal's automaton treats alike share one. Classes
    are numbered in the lexicographic order of their columns in all the tables stacked (what
    ``np.unique(stacked.T, axis=0)`` gives). Comparing two stacked columns compares their
    parts terminal by terminal, so each terminal only contributes the rank of its column
    among its own distinct columns (a handful, kept on its automaton: ``column_rank``), and
    the classes are the distinct tuples of those ranks in lexicographic order — one lexsort
    of 256 short tuples, not a stacked copy of every table (2,000 terminals of ~1,000
    states: 2 GB) nor a sort over all of their rows."""
    ranks = [rank for rank, n_uniq in (d.column_rank() for d in dfas) if n_uniq > 1]
    if not ranks:  # every byte alike for every terminal
        return np.zeros(256, dtype=np.int64)
    table = np.stack(ranks)  # (terminals, 256): a column per byte, compared top down
    order = np.lexsort(table[::-1])
    ordered = table[:, order]
    new = np.ones(256, dtype=bool)
    new[1:] = (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)
    key = np.empty(256, dtype=np.int64)
    key[order] = np.cumsum(new) - 1
    return key


def _nonempty(d: ByteDFA) -> bool:
    return bool(d.finals.any())


def _winnable(accept: np.ndarray, n_terms: int, reverse: ReverseEdges) -> np.ndarray:
    """Backward closure of "this state's lexeme can end with terminal T" over the lexer's
    reversed edges ``reverse``: up to :data:`~gramask.compiler.reach_back.BITS` terminals
    as one uint64 per state, pushed back a frontier at a time
    (:func:`~gramask.compiler.reach_back.reach_back`); more as Python int bitsets, by a
    worklist (the fixpoint does not depend on the order predecessors are visited in)."""
    n = reverse.n
    if n_terms <= BITS:
        seeds = np.zeros(n, dtype=np.uint64)
        has = accept >= 0
        seeds[has] = np.left_shift(np.uint64(1), accept[has].astype(np.uint64))
        got = reach_back(reverse, seeds)
        shifts = np.arange(n_terms, dtype=np.uint64)
        return np.asarray((got[:, None] >> shifts[None, :]) & np.uint64(1), dtype=bool)
    tails = reverse.pred.tolist()
    bounds = reverse.ptr.tolist()
    bits = [(1 << int(a)) if a >= 0 else 0 for a in accept.tolist()]
    work = [q for q in range(n) if bits[q]]
    while work:
        t = work.pop()
        for p in tails[bounds[t]:bounds[t + 1]]:
            merged = bits[p] | bits[t]
            if merged != bits[p]:
                bits[p] = merged
                work.append(p)
    return rows_of_bits(bits, n_terms)
