"""One terminal's regex → a byte-level DFA.

LLM tokens are byte strings that may split a UTF-8 character, so the lexer must run on bytes.
interegular gives a character-level FSM; here every character class becomes the exact set of
UTF-8 byte sequences that encode it (surrogates excluded), and the result is determinised and
trimmed, so that a state exists only if some completion of it matches.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Hashable, Sized
from typing import NoReturn, TypeVar

import numpy as np

from ..encoding import distinct_columns, unique_rows
from ..errors import GrammarError, InvalidRegexError, UnsupportedRegexError
from .charclass import utf8_sequences
from .hopcroft import hopcroft as _hopcroft
from .regex_features import check_features
from .regex_nfa import ByteNFA, NFATooLarge, RegexNotRegular, build_byte_nfa
from .regex_ordered import OrderedSubsets
from .regex_size import dfa_states_from_width
from .regex_utf8 import utf8_expand, wide_moves

__all__ = ["ByteDFA", "explore", "regex_to_byte_dfa", "utf8_sequences"]

K = TypeVar("K", bound=Hashable)

# Compile-time limits. The grammars we ship need at most 45 states per terminal and 673 for
# the whole lexer; token tables cost (lexer states × vocabulary) walks. A terminal such as
# /(a|b)*a(a|b){14}/ has 2^15 states (the DFA must remember the last 15 letters): refused.
MAX_TERMINAL_STATES = 4096  # character-level DFA states of one terminal
BYTE_FACTOR = 4  # byte-level subsets per character-level state allowed (multi-byte characters
# add some, and a subset automaton runs up to ~3x the minimal one)
MAX_BYTE_STATES = BYTE_FACTOR * MAX_TERMINAL_STATES  # byte-level states
MAX_EXPANDED_FACTOR = 16  # byte states per MAX_TERMINAL_STATES a character automaton may
# expand to (UTF-8: a copy of Unicode \w is ~300 byte states; /\w{1,64}/ needs 19,777)
MAX_NFA_NODES = 200_000  # byte NFA nodes of one terminal (counted repeats are expanded)


def _too_many_states(name: str, pattern: str, n: int, kind: str = "") -> NoReturn:
    shown = pattern if len(pattern) <= 80 else f"{pattern[:60]}… ({len(pattern):,} characters)"
    limit = MAX_EXPANDED_FACTOR * MAX_TERMINAL_STATES if kind else MAX_TERMINAL_STATES
    raise GrammarError(
        f"terminal {name}: regex /{shown}/ needs {'more than' if kind else 'at least'} {n:,} "
        f"{kind}automaton states (limit {limit:,}); it is not practical to compile. Usually a bounded "
        "repeat after an unbounded one (like (a|b)*a(a|b){14}) or a large counted repeat of "
        "a character class; simplify it or move the check out of the grammar",
        name=name,
    )


class ByteDFA:
    """A trimmed DFA over bytes: ``trans[s, b]`` is the next state or -1 (dead); start is 0.

    A compiled regex keeps its table per byte class (:meth:`of_classes`: bytes the
    automaton treats alike share a column) and makes the 256-wide ``trans`` on first use
    only: the lexer reads the classes, and a grammar of thousands of long regexes (2 M
    states) would otherwise hold 1 KB per state."""

    __slots__ = ("_classes", "_column_rank", "_trans", "finals")

    def __init__(self, trans: np.ndarray, finals: np.ndarray) -> None:
        self._trans: np.ndarray | None = trans
        self._classes: tuple[np.ndarray, np.ndarray] | None = None
        self.finals = finals
        self._column_rank: tuple[np.ndarray, int] | None = None

    def column_rank(self) -> tuple[np.ndarray, int]:
        """(per byte, the rank of its column of ``trans`` among the distinct columns in
        lexicographic order; how many distinct columns): what the lexer's byte classes
        refine by (:func:`gramask.compiler.lexer.build_lexer_dfa`). Kept: a terminal's
        automaton is shared by every grammar that uses it (never modified)."""
        if self._column_rank is None:
            distinct, cls = self.classes()  # (no 256-wide table made for it)
            uniq = distinct.T.tolist()
            rank = np.empty(len(uniq), dtype=np.int64)
            rank[sorted(range(len(uniq)), key=uniq.__getitem__)] = np.arange(len(uniq))
            out = rank[cls]
            out.flags.writeable = False
            self._column_rank = (out, len(uniq))
        return self._column_rank

    @classmethod
    def chain(cls, data: bytes) -> ByteDFA:
        """The automaton of exactly ``data`` (non-empty): a chain of ``len(data) + 1``
        states, minimal as it is (a literal terminal, a single JSON key). Built per byte
        class (one per distinct byte of ``data``, one for the rest; numbered by first byte,
        as :meth:`classes` would), not as a 256-wide table whose distinct columns the lexer
        product would then scan for: a schema's twenty keys cost ~3 ms that way."""
        n = len(data)
        b = np.frombuffer(data, dtype=np.uint8)
        key = np.full(256, 256, dtype=np.int64)  # 256: the column of the bytes not in data
        key[b] = b
        _, first, inv = np.unique(key, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        byte_class = rank[inv.reshape(-1)]
        cls_trans = np.full((n + 1, len(first)), -1, dtype=np.int32)
        cls_trans[np.arange(n), byte_class[b]] = np.arange(1, n + 1)
        finals = np.zeros(n + 1, dtype=bool)
        finals[n] = True
        return cls.of_classes(cls_trans, byte_class, finals)

    @classmethod
    def of_classes(cls, cls_trans: np.ndarray, byte_class: np.ndarray,
                   finals: np.ndarray) -> ByteDFA:
        """The automaton whose ``trans[s, b]`` is ``cls_trans[s, byte_class[b]]``; the
        columns of ``cls_trans`` must be distinct and numbered by their first byte."""
        d = cls.__new__(cls)
        d._trans = None
        d._classes = (cls_trans, byte_class)
        d._column_rank = None
        d.finals = finals
        return d

    @property
    def trans(self) -> np.ndarray:
        if self._trans is None:
            assert self._classes is not None
            cls_trans, byte_class = self._classes
            self._trans = np.ascontiguousarray(cls_trans[:, byte_class], dtype=np.int32)
        return self._trans

    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """(table per class (states, C), class of each byte (256,)): the distinct columns of
        ``trans``, numbered in the order of their first byte."""
        if self._classes is None:
            assert self._trans is not None
            cols = np.ascontiguousarray(self._trans.T)
            index: dict[bytes, int] = {}
            byte_class = np.fromiter((index.setdefault(c, len(index)) for c in map(bytes, cols)),
                                     dtype=np.int64, count=256)
            first = np.zeros(len(index), dtype=np.int64)
            first[byte_class[::-1]] = np.arange(255, -1, -1)
            self._classes = (np.ascontiguousarray(self._trans[:, first]), byte_class)
        return self._classes

    @property
    def num_states(self) -> int:
        if self._trans is None:
            assert self._classes is not None
            return int(self._classes[0].shape[0])
        return int(self._trans.shape[0])

    def matches(self, data: bytes) -> bool:
        s = 0
        for b in data:
            s = int(self.trans[s, b])
            if s < 0:
                return False
        return bool(self.finals[s])


def regex_to_byte_dfa(name: str, pattern: str, first_match: bool = False,
                      unicode_categories: bool = False) -> ByteDFA:
    """Compile one terminal's regex to a trimmed byte DFA (``first_match``: the texts
    ``re.match`` matches whole, so that a longest match ends where ``re.match`` ends (a Lark
    terminal with a lazy repeat); ``unicode_categories``: ``\\d``, ``\\w``,
    ``\\s`` as ``re`` reads them; see :func:`build_byte_nfa`).

    Raises
    ------
    InvalidRegexError
        The regex does not parse.
    UnsupportedRegexError
        The regex is valid but not regular (lookaround, backreference, anchors, atomic groups,
        possessive repeats); the message names the terminal and the pattern.
    GrammarError
        Its automaton would exceed ``MAX_TERMINAL_STATES``.
    """
    try:
        check_features(name, pattern)
    except RecursionError:
        raise UnsupportedRegexError(
            f"terminal {name}: regex is nested too deeply to compile", name=name
        ) from None
    # refuse a certain explosion before building anything (a lower bound from the match
    # lengths); the determinisation refuses the others when it reaches its limit
    by_width = dfa_states_from_width(pattern)
    if by_width > MAX_TERMINAL_STATES:
        _too_many_states(name, pattern, by_width)
    try:
        nfa = build_byte_nfa(pattern, MAX_NFA_NODES, first_match, unicode_categories,
                             chars=True)
        if 0 < wide_moves(nfa) < _CHAR_PATH_RANGES:  # a few ranges past ASCII: bytes are cheaper
            nfa = build_byte_nfa(pattern, MAX_NFA_NODES, first_match, unicode_categories)
    except RecursionError:
        raise UnsupportedRegexError(
            f"terminal {name}: regex is nested too deeply to compile", name=name
        ) from None
    except re.error as e:
        raise InvalidRegexError(
            f"terminal {name}: invalid regex /{pattern}/: {e}", name=name
        ) from None
    except RegexNotRegular as e:
        raise UnsupportedRegexError(
            f"terminal {name}: regex /{pattern}/ uses {e.args[0]}, which has no finite "
            "automaton; rewrite it as a plain regular expression",
            name=name,
        ) from None
    except NFATooLarge:
        raise GrammarError(
            f"terminal {name}: regex /{pattern}/ expands to more than {MAX_NFA_NODES:,} "
            "automaton nodes (a large counted repeat); it is not practical to compile. "
            "Simplify it or move the check out of the grammar",
            name=name,
        ) from None
    return _determinise(name, pattern, nfa)


# Moves past ASCII from which a pattern is determinised over code points (its expansion
# costs ~20 ms; a keyword's case variants, /k/i, are faster byte by byte; \w{1,64} is not)
_CHAR_PATH_RANGES = 64


def _determinise(name: str, pattern: str, nfa: ByteNFA) -> ByteDFA:
    """Subset construction over byte classes: the bytes between consecutive range ends of the
    NFA's moves behave alike in every subset, so each subset's row has one entry per class,
    not per byte (a few dozen instead of 256). A :class:`CharNFA` past ASCII: over
    code-point classes, minimised, then expanded to bytes (:func:`utf8_expand`)."""
    closure_of: dict[int, frozenset[int]] = {}

    def closure(node: int) -> frozenset[int]:
        got = closure_of.get(node)
        if got is None:
            seen = {node}
            stack = [node]
            while stack:
                for nxt in nfa.eps[stack.pop()]:
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            got = closure_of[node] = frozenset(seen)
        return got

    end = 0x110000 if nfa.chars and wide_moves(nfa) else 256
    cuts = sorted({0, end} | {b for ms in nfa.moves for lo, hi, _ in ms for b in (lo, hi + 1)})
    cut_index = {c: i for i, c in enumerate(cuts)}
    n_cls = len(cuts) - 1

    def moves(subset: frozenset[int]) -> list[frozenset[int] | None]:
        row: list[frozenset[int] | None] = [None] * n_cls
        movers = [ms for ms in map(nfa.moves.__getitem__, subset) if ms]
        if len(movers) == 1 and len({t for _, _, t in movers[0]}) == 1:  # x{9}, \w{64}
            key = closure(movers[0][0][2])  # (one target: its ranges' classes get it)
            for lo, hi, _ in movers[0]:
                a, b = cut_index[lo], cut_index[hi + 1]
                row[a:b] = [key] * (b - a)
            return row
        events: dict[int, list[tuple[int, int]]] = {}  # class → (+1 / -1, target)
        for ms in movers:
            for lo, hi, t in ms:
                events.setdefault(cut_index[lo], []).append((1, t))
                events.setdefault(cut_index[hi + 1], []).append((-1, t))
        active: dict[int, int] = {}
        marks = sorted(events)
        for a, b in itertools.pairwise(marks):
            for delta, t in events[a]:
                n = active.get(t, 0) + delta
                if n:
                    active[t] = n
                else:
                    del active[t]
            if active:
                key = frozenset().union(*(closure(t) for t in active))
                row[a:b] = [key] * (b - a)
        return row

    def too_many(order: Sized) -> None:
        _too_many_states(name, pattern, len(order))

    # (the limit read now: tests lower MAX_TERMINAL_STATES)
    limit = BYTE_FACTOR * MAX_TERMINAL_STATES
    if nfa.ordered:  # read as re matches: threads in order (regex_ordered.py)
        ordered = OrderedSubsets(nfa, cut_index, n_cls)
        states, rows = explore(ordered.start(), ordered.successors, limit, too_many)
        finals = np.array([ordered.is_final(q) for q in states], dtype=bool)
    else:
        order, rows = explore(closure(0), moves, limit, too_many)
        finals = np.array([nfa.final in sub for sub in order], dtype=bool)
    trans = np.array(rows, dtype=np.int64).reshape(len(rows), n_cls)
    if end == 256:  # (classes numbered by first byte)
        return _trim_classes(trans, np.repeat(np.arange(n_cls), np.diff(cuts)), finals,
                             reachable=True)
    chars = _trim_classes(trans, np.arange(n_cls), finals, reachable=True)  # (minimal)
    if not chars.finals.any():
        return chars  # (the empty language, already as bytes)
    limit = MAX_EXPANDED_FACTOR * MAX_TERMINAL_STATES
    got = utf8_expand(*chars.classes(), cuts, chars.finals, limit)
    if got is None:
        _too_many_states(name, pattern, limit, "byte ")
    b_cls, b_class = _distinct_classes(got[0], np.arange(256))  # (kept per class: smaller)
    return ByteDFA.of_classes(b_cls.astype(np.int32), b_class, got[1])


def explore(
    start: K,
    successors: Callable[[K], list[K | None]],
    limit: int,
    on_limit: Callable[[list[K]], None],
    *,
    fresh_start: bool = False,
) -> tuple[list[K], list[list[int]]]:
    """Worklist construction of a DFA whose states are hashable keys (subsets, tuples).

    States are numbered in discovery order, ``start`` = 0; ``rows[i][c]`` is the number of
    ``successors(order[i])[c]``, or -1 where that is None (dead). When the ``limit``-th state
    is discovered, ``on_limit(states so far)`` is called: it must raise. ``fresh_start``: no
    move leads back to state 0; a move to the start's key gets a state of its own (a
    lexer's state 0 means "no lexeme begun", which ``x`` in ``/ *x/`` has).
    """
    index = {} if fresh_start else {start: 0}
    order = [start]
    rows: list[list[int]] = []
    i = 0
    while i < len(order):
        row, prev, j = [], None, -1  # (a run of one key object: looked up once)
        for key in successors(order[i]):
            if key is None:
                row.append(-1)
                continue
            if key is not prev:
                got = index.get(key)
                if got is None:
                    got = index[key] = len(order)
                    order.append(key)
                    if got >= limit:
                        on_limit(order)
                prev, j = key, got
            row.append(j)
        rows.append(row)
        i += 1
    return order, rows


def _trim(trans: np.ndarray, finals: np.ndarray) -> ByteDFA:
    """Drop states that cannot reach a final state, and unreachable ones; renumber, start = 0;
    minimise. ``trans``: (states, 256). The work runs on byte classes (bytes no state tells
    apart) and on edge lists, so it is linear in the automaton, not in its depth."""
    return _trim_classes(np.asarray(trans, dtype=np.int64), np.arange(256), finals)


def _distinct_classes(t: np.ndarray, byte_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct columns of ``t``, each byte's among them) for the table whose byte ``b``
    column is ``t[:, byte_class[b]]`` (``byte_class`` numbered by first byte): the columns
    numbered by their first byte, as a 256-wide table's would be."""
    first, number = distinct_columns(t)
    return np.ascontiguousarray(t[:, first]), number[byte_class]


def _trim_classes(trans: np.ndarray, byte_class: np.ndarray, finals: np.ndarray, *,
                  reachable: bool = False) -> ByteDFA:
    """:func:`_trim` of the table whose byte ``b`` column is ``trans[:, byte_class[b]]``
    (``byte_class`` numbered by first byte). ``reachable``: every state is reachable from
    the start (a subset construction's): then so is every live one, through live states,
    and only the dead are dropped. The states' distances from acceptance say which are
    live and seed the minimisation (a path to acceptance runs through live states only, so
    dropping states does not change them)."""
    n = trans.shape[0]
    t, byte_class = _distinct_classes(np.asarray(trans, dtype=np.int64), byte_class)
    dist = _distances(t, finals)
    alive = dist >= 0
    if not alive[0]:
        return ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.array([False]))
    t = np.where((t >= 0) & alive[np.maximum(t, 0)], t, -1)
    if reachable:
        keep = np.flatnonzero(alive)
    else:
        start = np.zeros(n, dtype=bool)
        start[0] = True
        keep = np.flatnonzero(_closure_over(t, start, backward=False))
    remap = np.full(n, -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    t2 = t[keep]
    t2 = np.where(t2 >= 0, remap[np.maximum(t2, 0)], -1)
    f2 = finals[keep].copy()
    quick = _minimize_by_distance(t2, f2, dist=dist[keep])
    m_trans, m_finals = quick if quick is not None else minimize(t2, f2)
    m_cls, m_class = _distinct_classes(m_trans, byte_class)  # merged states: columns may meet
    return ByteDFA.of_classes(m_cls.astype(np.int32), m_class, m_finals)


def _minimize_by_distance(trans: np.ndarray, finals: np.ndarray, rounds: int = 16, *,
                          dist: np.ndarray | None = None
                          ) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`minimize`'s result for a trimmed DFA, by Moore's refinement started from the
    states' distances from acceptance (equivalent states accept the same words, so the same
    shortest one; ``dist``: those distances if known): a counted chain such as
    ``/x{1000}[a-z]*/`` is then split from the start, where Hopcroft's refinement splits
    one state per round; and, where no state is on a cycle, from their longest words too
    (``/[^"]{1,128}/`` as a JSON string: its counts share their shortest distance). None
    when ``rounds`` rounds do not settle it (then :func:`minimize`)."""
    n = trans.shape[0]
    if dist is None:
        dist = _distances(trans, finals)
    longest = _longest(trans)  # (a finite language: the longest words' lengths split too)
    block = unique_rows(np.column_stack([dist, finals, dist if longest is None else longest]))[1]
    for _ in range(rounds):
        count = int(block.max()) + 1
        if count == n:
            break
        succ = np.where(trans >= 0, block[np.maximum(trans, 0)], -1)
        block = unique_rows(np.column_stack([block, succ]))[1]
        if int(block.max()) + 1 == count:
            break
    else:
        return None
    labels: list[int] = block.tolist()
    return _quotient(trans, finals, [*labels, len(labels)])  # the dead sink: a block alone


def _longest(trans: np.ndarray) -> np.ndarray | None:
    """Each state's longest word to acceptance in a trimmed DFA without cycles (Kahn's
    order over the reversed edges), None where there is a cycle (an infinite language)."""
    n = trans.shape[0]
    src, col = np.nonzero(trans >= 0)
    pairs = np.unique(trans[src, col] * n + src)  # distinct reversed edges
    out_deg = np.bincount(pairs % n, minlength=n).tolist()
    tails = (pairs % n).tolist()
    bounds = np.searchsorted(pairs // n, np.arange(n + 1)).tolist()
    longest = [0] * n
    ready = [q for q in range(n) if not out_deg[q]]
    done = 0
    while ready:
        q = ready.pop()
        done += 1
        for r in tails[bounds[q]:bounds[q + 1]]:
            longest[r] = max(longest[r], longest[q] + 1)
            out_deg[r] -= 1
            if not out_deg[r]:
                ready.append(r)
    return np.array(longest, dtype=np.int64) if done == n else None


def _distances(trans: np.ndarray, finals: np.ndarray) -> np.ndarray:
    """Each state's distance in bytes from acceptance (-1: none, a dead state)."""
    n = trans.shape[0]
    src, col = np.nonzero(trans >= 0)
    dst = trans[src, col]
    pairs = np.unique(dst * n + src)  # reversed edges
    heads, tails = (pairs // n), (pairs % n).tolist()
    bounds = np.searchsorted(heads, np.arange(n + 1)).tolist()
    dist = [-1] * n
    level = np.flatnonzero(finals).tolist()
    for q in level:
        dist[q] = 0
    d = 0
    while level:
        d += 1
        nxt = []
        for q in level:
            for r in tails[bounds[q]:bounds[q + 1]]:
                if dist[r] < 0:
                    dist[r] = d
                    nxt.append(r)
        level = nxt
    return np.array(dist, dtype=np.int64)


def _closure_over(trans: np.ndarray, seeds: np.ndarray, *, backward: bool) -> np.ndarray:
    """States reachable from ``seeds`` along the edges of ``trans`` (or against them)."""
    n = trans.shape[0]
    src, col = np.nonzero(trans >= 0)
    dst = trans[src, col]
    a, b = (dst, src) if backward else (src, dst)
    pairs = np.unique(a * n + b)
    heads, tails = (pairs // n), (pairs % n).tolist()
    bounds = np.searchsorted(heads, np.arange(n + 1)).tolist()
    seen = seeds.tolist()
    stack = np.flatnonzero(seeds).tolist()
    while stack:
        q = stack.pop()
        for r in tails[bounds[q]:bounds[q + 1]]:
            if not seen[r]:
                seen[r] = True
                stack.append(r)
    return np.array(seen, dtype=bool)


def minimize(trans: np.ndarray, finals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The minimal automaton of a trimmed DFA ``trans`` (states × symbols, -1 dead): Moore's
    refinement by rounds, vectorised, when it settles within ``_MOORE_ROUNDS`` rounds, else
    Hopcroft's partition refinement (Hopcroft, "An n log n algorithm for minimizing states
    in a finite automaton", 1971): O(symbols · n log n), where rounds take one per state of
    a long chain such as ``/[a-z]{1000}/``. Both find the coarsest partition, so the result
    is the same. The class of state 0 becomes the new start 0, the others are numbered in
    the order of their first state."""
    n, k = trans.shape
    sink = n  # the dead state, made explicit
    full = np.vstack([np.where(trans >= 0, trans, sink), np.full((1, k), sink)])
    block_of = _moore(full, finals)
    if block_of is None:
        block_of = _hopcroft(full, finals)
    return _quotient(trans, finals, block_of)


_MOORE_ROUNDS = 48


def _moore(full: np.ndarray, finals: np.ndarray) -> list[int] | None:
    """Moore's refinement by rounds, vectorised: each round splits blocks by the blocks their
    successors fall in. The automata of JSON strings, keys and formats settle in a few
    rounds (milliseconds, where Hopcroft's Python loop takes tens); a long chain needs a
    round per state: None after ``_MOORE_ROUNDS`` rounds (the caller runs Hopcroft)."""
    block = np.concatenate([finals.astype(np.int64), [0]])
    count = int(np.unique(block).size)
    new = np.empty_like(block)
    for _ in range(_MOORE_ROUNDS):
        sig = np.concatenate([block[:, None], block[full]], axis=1)
        order = np.lexsort(sig.T[::-1])  # rows sorted (lexsort: last key first)
        srt = sig[order]
        step = np.concatenate([[0], np.any(srt[1:] != srt[:-1], axis=1)])
        new[order] = np.cumsum(step)
        c = int(new.max()) + 1
        if c == count:
            out: list[int] = new.tolist()
            return out
        block, count = new.copy(), c
    return None


def _quotient(trans: np.ndarray, finals: np.ndarray, block_of: list[int]
              ) -> tuple[np.ndarray, np.ndarray]:
    """The automaton of the blocks: start 0, others numbered by their first state."""
    n = trans.shape[0]
    sink = n
    cls = block_of[:n]
    dead = block_of[sink]
    order_of: dict[int, int] = {}
    for c in [cls[0], *cls]:
        order_of.setdefault(c, len(order_of))
    new_id = np.array([order_of[c] for c in cls], dtype=np.int64)
    rep = np.zeros(len(order_of), dtype=np.int64)
    rep[new_id[::-1]] = np.arange(n)[::-1]
    t = trans[rep]
    dead_target = np.array([block_of[q] == dead for q in range(n)] + [True], dtype=bool)
    t = np.where((t >= 0) & ~dead_target[np.where(t >= 0, t, n)],
                 new_id[np.maximum(t, 0)], -1)
    return t.astype(np.int32), finals[rep].copy()
