"""One terminal's regex → a byte-level DFA.

LLM tokens are byte strings that may split a UTF-8 character, so the lexer must run on bytes.
interegular gives a character-level FSM; here every character class becomes the exact set of
UTF-8 byte sequences that encode it (surrogates excluded), and the result is determinised and
trimmed, so that a state exists only if some completion of it matches.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Hashable, Iterator
from typing import TypeVar

import numpy as np

from ..errors import GrammarError, InvalidRegexError, UnsupportedRegexError
from .charclass import utf8_sequences
from .regex_nfa import ByteNFA, NFATooLarge, RegexNotRegular, build_byte_nfa
from .regex_size import dfa_states_at_least, dfa_states_from_width

try:  # Python ≥ 3.11
    from re import _parser as _sre_parse
except ImportError:  # pragma: no cover
    import sre_parse as _sre_parse

__all__ = ["ByteDFA", "explore", "regex_to_byte_dfa", "utf8_sequences"]

K = TypeVar("K", bound=Hashable)

_UNSUPPORTED = {
    "ASSERT": "a lookahead/lookbehind",
    "ASSERT_NOT": "a negative lookahead/lookbehind",
    "GROUPREF": "a backreference",
    "GROUPREF_EXISTS": "a conditional group",
    "AT": "an anchor (^, $, \\b, \\A, \\Z)",
}


# Compile-time limits. The grammars we ship need at most 45 states per terminal and 673 for
# the whole lexer; token tables cost (lexer states × vocabulary) walks. A terminal such as
# /(a|b)*a(a|b){14}/ has 2^15 states (the DFA must remember the last 15 letters): refused.
MAX_TERMINAL_STATES = 4096  # character-level DFA states of one terminal
MAX_BYTE_STATES = 4 * MAX_TERMINAL_STATES  # byte-level states (multi-byte characters add some)
PRECHECK_FACTOR = 4  # see regex_size: its subset count runs up to ~3x the minimal DFA's
MAX_NFA_NODES = 200_000  # byte NFA nodes of one terminal (counted repeats are expanded)


def _too_many_states(name: str, pattern: str, n: int) -> None:
    shown = pattern if len(pattern) <= 80 else f"{pattern[:60]}… ({len(pattern):,} characters)"
    raise GrammarError(
        f"terminal {name}: regex /{shown}/ needs at least {n:,} automaton states "
        f"(limit {MAX_TERMINAL_STATES:,}); it is not practical to compile. Usually a bounded "
        "repeat after an unbounded one (like (a|b)*a(a|b){14}) or a large counted repeat of "
        "a character class; simplify it or move the check out of the grammar",
        name=name,
    )


class ByteDFA:
    """A trimmed DFA over bytes: ``trans[s, b]`` is the next state or -1 (dead); start is 0."""

    __slots__ = ("finals", "trans")

    def __init__(self, trans: np.ndarray, finals: np.ndarray) -> None:
        self.trans = trans
        self.finals = finals

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    def matches(self, data: bytes) -> bool:
        s = 0
        for b in data:
            s = int(self.trans[s, b])
            if s < 0:
                return False
        return bool(self.finals[s])


def _check_features(name: str, pattern: str) -> None:
    try:
        parsed = _sre_parse.parse(pattern)
    except re.error as e:
        raise InvalidRegexError(
            f"terminal {name}: invalid regex /{pattern}/: {e}", name=name
        ) from None

    def walk(items: object) -> Iterator[str]:
        for op, av in items:  # type: ignore[attr-defined]
            opname = str(op)
            if opname in _UNSUPPORTED:
                yield _UNSUPPORTED[opname]
            if isinstance(av, (list, tuple)):
                for a in av:
                    if isinstance(a, _sre_parse.SubPattern):
                        yield from walk(a)
                    elif isinstance(a, (list, tuple)):
                        for x in a:
                            if isinstance(x, _sre_parse.SubPattern):
                                yield from walk(x)
            elif isinstance(av, _sre_parse.SubPattern):
                yield from walk(av)

    for feature in walk(parsed):
        raise UnsupportedRegexError(
            f"terminal {name}: regex /{pattern}/ uses {feature}, which has no finite "
            "automaton; rewrite it as a plain regular expression",
            name=name,
        )


def regex_to_byte_dfa(name: str, pattern: str) -> ByteDFA:
    """Compile one terminal's regex to a trimmed byte DFA.

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
        _check_features(name, pattern)
    except RecursionError:
        raise UnsupportedRegexError(
            f"terminal {name}: regex is nested too deeply to compile", name=name
        ) from None
    # refuse the certain explosions before determinising (lower bounds: from the match lengths,
    # then a cheap determinisation with a margin for how differently the two constructions count)
    by_width = dfa_states_from_width(pattern)
    if by_width > MAX_TERMINAL_STATES:
        _too_many_states(name, pattern, by_width)
    at_least = dfa_states_at_least(pattern, PRECHECK_FACTOR * MAX_TERMINAL_STATES)
    if at_least is not None and at_least > PRECHECK_FACTOR * MAX_TERMINAL_STATES:
        _too_many_states(name, pattern, at_least)
    try:
        nfa = build_byte_nfa(pattern, MAX_NFA_NODES)
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


def _determinise(name: str, pattern: str, nfa: ByteNFA) -> ByteDFA:
    """Subset construction over bytes (each subset's moves swept by range boundaries)."""
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

    def successors(subset: frozenset[int]) -> list[frozenset[int] | None]:
        row: list[frozenset[int] | None] = [None] * 256
        events: dict[int, list[tuple[int, int]]] = {}  # byte → (+1 / -1, target)
        for node in subset:
            for lo, hi, t in nfa.moves[node]:
                events.setdefault(lo, []).append((1, t))
                events.setdefault(hi + 1, []).append((-1, t))
        active: dict[int, int] = {}
        cuts = sorted(events)
        for a, b in itertools.pairwise(cuts):
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

    def too_many(order: list[frozenset[int]]) -> None:
        _too_many_states(name, pattern, len(order))

    order, rows = explore(closure(0), successors, MAX_BYTE_STATES, too_many)
    trans = np.array(rows, dtype=np.int64)
    finals = np.array([nfa.final in sub for sub in order], dtype=bool)
    return _trim(trans, finals)


def explore(
    start: K,
    successors: Callable[[K], list[K | None]],
    limit: int,
    on_limit: Callable[[list[K]], None],
) -> tuple[list[K], list[list[int]]]:
    """Worklist construction of a DFA whose states are hashable keys (subsets, tuples).

    States are numbered in discovery order, ``start`` = 0; ``rows[i][c]`` is the number of
    ``successors(order[i])[c]``, or -1 where that is None (dead). When the ``limit``-th state
    is discovered, ``on_limit(states so far)`` is called: it must raise.
    """
    index = {start: 0}
    order = [start]
    rows: list[list[int]] = []
    i = 0
    while i < len(order):
        row = []
        for key in successors(order[i]):
            if key is None:
                row.append(-1)
                continue
            j = index.get(key)
            if j is None:
                j = index[key] = len(order)
                order.append(key)
                if j >= limit:
                    on_limit(order)
            row.append(j)
        rows.append(row)
        i += 1
    return order, rows


def _trim(trans: np.ndarray, finals: np.ndarray) -> ByteDFA:
    """Drop states that cannot reach a final state, and unreachable ones; renumber, start = 0."""
    n = trans.shape[0]
    # backward search from the final states over the distinct (source, target) edges
    src, col = np.nonzero(trans >= 0)
    edges = np.unique(trans[src, col].astype(np.int64) * n + src)
    dst, src = edges // n, edges % n
    starts = np.searchsorted(dst, np.arange(n + 1))
    alive = finals.copy()
    frontier = np.flatnonzero(finals)
    while frontier.size:
        preds = np.concatenate([src[starts[f]: starts[f + 1]] for f in frontier.tolist()])
        frontier = np.unique(preds[~alive[preds]])
        alive[frontier] = True
    if not alive[0]:
        return ByteDFA(np.full((1, 256), -1, dtype=np.int32), np.array([False]))
    t = np.where((trans >= 0) & alive[np.maximum(trans, 0)], trans, -1)
    # reachable from 0
    seen = {0}
    stack = [0]
    while stack:
        s = stack.pop()
        for x in set(t[s][t[s] >= 0].tolist()):
            if x not in seen:
                seen.add(x)
                stack.append(x)
    keep = sorted(seen)
    remap = np.full(n, -1, dtype=np.int64)
    remap[keep] = np.arange(len(keep))
    t2 = t[keep]
    t2 = np.where(t2 >= 0, remap[np.maximum(t2, 0)], -1).astype(np.int32)
    return minimize(t2, finals[keep].copy())


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first index of each distinct row, row → its distinct row's number), as
    ``np.unique(a, axis=0, return_index=True, return_inverse=True)`` numbers them (rows in
    sorted order). Rows are hashed to one integer each and only the hashes sorted (the
    structured sort of ``np.unique(axis=0)`` dominated small DFAs' minimisation); a hash
    collision is caught by comparing every row with its representative, and falls back."""
    n, w = a.shape
    if n == 0:
        _, first, inv = np.unique(a, axis=0, return_index=True, return_inverse=True)
        return first, inv.reshape(-1)
    mix = np.random.default_rng(w).integers(1, 2**62, size=w, dtype=np.int64) | 1
    with np.errstate(over="ignore"):
        h = (a.astype(np.int64) + 2) @ mix
    _, first, inv = np.unique(h, return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if not np.array_equal(a, a[first[inv]]):  # pragma: no cover (a 64-bit collision)
        _, first, inv = np.unique(a, axis=0, return_index=True, return_inverse=True)
        return first, inv.reshape(-1)
    # number the classes in the sorted order of their rows, as np.unique does
    order = np.lexsort(a[first].T[::-1])
    rank = np.empty(len(first), dtype=np.int64)
    rank[order] = np.arange(len(first))
    return first[order], rank[inv]


def minimize(trans: np.ndarray, finals: np.ndarray) -> ByteDFA:
    """Moore partition refinement; the class of state 0 becomes the new start 0."""
    cls = finals.astype(np.int64)
    n_cls = len(np.unique(cls))
    # bytes no state tells apart refine alike: one column each
    cols = unique_rows(trans.T)[0] if trans.size else np.zeros(0, dtype=np.int64)
    narrow = trans[:, np.sort(cols)]
    while True:
        succ = np.where(narrow >= 0, cls[np.maximum(narrow, 0)], -1)
        sig = np.concatenate([cls[:, None], succ], axis=1)
        inv = unique_rows(sig)[1]
        k = int(inv.max()) + 1
        cls = inv
        if k == n_cls:
            break
        n_cls = k
    # renumber so that the start state's class is 0, others in first-seen order
    order: dict[int, int] = {}
    for c in [int(cls[0]), *cls.tolist()]:
        order.setdefault(c, len(order))
    new = np.array([order[c] for c in cls.tolist()], dtype=np.int64)
    rep = np.zeros(len(order), dtype=np.int64)
    rep[new[::-1]] = np.arange(len(new))[::-1]
    t = trans[rep]
    t = np.where(t >= 0, new[np.maximum(t, 0)], -1).astype(np.int32)
    return ByteDFA(t, finals[rep].copy())
