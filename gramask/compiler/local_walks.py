"""Walks of the vocabulary inside one lexeme, shared by every grammar compiled against the
same vocabulary.

A shared walk (:meth:`gramask.compiler.token_walk.TokenWalker.row`) follows the tokens with
first byte ``b`` from the state ``s`` that byte leads to, until each token ends or a byte
ends the lexeme; only then does the grammar matter (the state's end class, its accepting
terminals, the rest of the token from the start state). The path inside the lexeme depends
on the lexer states reachable from ``s`` alone — the *local automaton* — and the JSON
lexers of different schemas share most of theirs: a string's body, a number, whitespace.
So the path is walked once per (local automaton, ``b``) and vocabulary, numbered in the
local automaton's canonical order, and each grammar maps it to its own nodes
(:func:`local_outcomes`): every request with a free-text string field no longer walks the
whole vocabulary through a string's body.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np

from .walk_inputs import run_ends, token_starts

__all__ = ["MAX_LOCAL_STATES", "Successors", "first_appearance", "group_outcomes",
           "local_automaton", "local_outcomes", "small_local"]

# local automata larger than this are not canonicalised (the states right after a quote in a
# schema with many keys: schema-specific anyway)
MAX_LOCAL_STATES = 256
# outcomes kept, in tokens (three int16 per token): about 50 MB
_KEPT_TOKENS = 8_000_000

# a group of at least this many tokens jumps over its first run of looped-on bytes with a
# search of the vocabulary, kept per byte set (smaller ones read their own bytes); walks left
# after every _JUMP_EVERY steps, if no more than this many, jump again
_VOCAB_JUMP = 16384
_JUMP_EVERY = 8

_Outcome = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
_CACHE: OrderedDict[tuple[int, bytes, int], tuple[np.ndarray, _Outcome]] = OrderedDict()
_SIZE = [0]
_LOCK = threading.Lock()


class Successors:
    """Per lexer state, its distinct successors in byte order, read off its row on first use,
    and the states known to reach more than :data:`MAX_LOCAL_STATES`: what the breadth-first
    searches of :func:`local_automaton` from the states of one lexer share (a row of a
    lazily built table searches from dozens of states, mostly reaching the same ones)."""

    __slots__ = ("_succ", "big", "trans")

    def __init__(self, trans: np.ndarray) -> None:
        self.trans = trans
        self._succ: dict[int, list[int]] = {}
        self.big: set[int] = set()

    def of(self, q: int) -> list[int]:
        got = self._succ.get(q)
        if got is None:
            d = dict.fromkeys(self.trans[q].tolist())  # (ordered: bytes ascending)
            d.pop(-1, None)
            got = self._succ[q] = list(d)
        return got


def local_automaton(trans: np.ndarray, s: int, succ: Successors | None = None
                    ) -> tuple[np.ndarray, np.ndarray, bytes] | None:
    """(the lexer states reachable from ``s`` in canonical order — breadth first, bytes
    ascending, ``s`` first —, their transitions renumbered (-1 dead), a digest of those), or
    None when more than :data:`MAX_LOCAL_STATES` are reachable. ``succ``: the lexer's
    successor lists, kept by the caller across searches."""
    if succ is None:
        succ = Successors(trans)
    big = succ.big
    order = [s]
    seen = {s}
    for q in order:  # (the list grows while it is read: a queue)
        for r in succ.of(q):
            if r not in seen:
                if r in big or len(order) == MAX_LOCAL_STATES:
                    big.add(s)
                    return None
                seen.add(r)
                order.append(r)
    states = np.array(order, dtype=np.int64)
    remap = np.full(trans.shape[0] + 1, -1, dtype=np.int16)
    remap[states] = np.arange(len(states), dtype=np.int16)
    local = remap[trans[states]]  # -1 stays -1 (the extra last entry)
    return states, local, hashlib.blake2b(local.tobytes(), digest_size=16).digest()


def small_local(trans: np.ndarray, limit: int = MAX_LOCAL_STATES) -> np.ndarray:
    """(S,) bool: the states from which at most ``limit`` states are reachable (themselves
    included), i.e. whose :func:`local_automaton` is not None. One pass over the strongly
    connected components, sinks first, each the union of its successors' reachable sets as
    a bit set, instead of a search of up to ``limit`` states per state: a lexer of thousands
    of overlapping terminals (``/x{i}[a-z]*/``) has thousands of states that each reach
    thousands."""
    n = trans.shape[0]
    src, col = np.nonzero(trans >= 0)
    pairs = np.unique(src.astype(np.int64) * n + trans[src, col])
    heads = pairs // n
    succ: list[int] = (pairs % n).tolist()
    bounds: list[int] = np.searchsorted(heads, np.arange(n + 1)).tolist()
    comp = _components(n, succ, bounds)  # numbered sinks first
    members: list[list[int]] = [[] for _ in range(max(comp, default=-1) + 1)]
    for q, c in enumerate(comp):
        members[c].append(q)
    reach: list[int] = [0] * len(members)
    small = [False] * n
    for c, qs in enumerate(members):
        bits = 0
        for q in qs:
            bits |= 1 << q
            for r in succ[bounds[q]:bounds[q + 1]]:
                if comp[r] != c:
                    bits |= reach[comp[r]]
        reach[c] = bits
        if bits.bit_count() <= limit:
            for q in qs:
                small[q] = True
    return np.array(small, dtype=bool)


def _components(n: int, succ: list[int], bounds: list[int]) -> list[int]:
    """Tarjan's strongly connected components, iteratively: the component of each state,
    numbered in the order they complete (an edge between two goes to a lower number)."""
    index = [-1] * n
    low = [0] * n
    comp = [-1] * n
    on_stack = [False] * n
    stack: list[int] = []
    count = done = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work = [(root, bounds[root])]
        index[root] = low[root] = count
        count += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            q, i = work[-1]
            if i < bounds[q + 1]:
                work[-1] = (q, i + 1)
                r = succ[i]
                if index[r] < 0:
                    index[r] = low[r] = count
                    count += 1
                    stack.append(r)
                    on_stack[r] = True
                    work.append((r, bounds[r]))
                elif on_stack[r]:
                    low[q] = min(low[q], index[r])
                continue
            work.pop()
            if work:
                p = work[-1][0]
                low[p] = min(low[p], low[q])
            if low[q] == index[q]:
                while True:
                    r = stack.pop()
                    on_stack[r] = False
                    comp[r] = done
                    if r == q:
                        break
                done += 1
    return comp


def local_outcomes(
    local: np.ndarray, pattern: np.ndarray, digest: bytes, b: int, toks: np.ndarray,
    lens: np.ndarray, buf: np.ndarray,
) -> _Outcome:
    """Per token of ``toks`` (all beginning with byte ``b``, walked from local state 0 from
    their second byte): (local state where the token ends inside the lexeme, else -1; the
    offset of the byte that ends the lexeme; the local state before it, else -1), and the
    steps between local states of different ``pattern`` values (a contextual lexer's end
    classes, numbered by first appearance): (4, F) rows token index, offset of the byte,
    local state before and after it, in the order walked; last, the byte that ends the
    lexeme (0 where none does: a grammar drops at once the tokens whose next lexeme cannot
    start with it). Cached per vocabulary (``lens`` is its token-length array, kept alive by
    the cache entry), local automaton and pattern."""
    return _outcomes(local, pattern, digest, [b], [toks], lens, buf)[0]


def _outcomes(
    local: np.ndarray, pattern: np.ndarray, digest: bytes, bytes_in: list[int],
    groups: list[np.ndarray], lens: np.ndarray, buf: np.ndarray,
) -> list[_Outcome]:
    """:func:`local_outcomes` of each byte's token group; the groups not cached are walked
    together, in one walk (a walk's cost is mostly per step, whatever its width: a string's
    body continues with ~150 first bytes) and then cut per byte."""
    key0 = (id(lens), digest + pattern.astype(np.int16).tobytes())
    got: dict[int, _Outcome] = {}
    with _LOCK:
        for i, b in enumerate(bytes_in):
            hit = _CACHE.get((*key0, b))
            if hit is not None and hit[0] is lens:
                _CACHE.move_to_end((*key0, b))
                got[i] = hit[1]
    miss = [i for i in range(len(bytes_in)) if i not in got]
    if not miss:
        return [got[i] for i in range(len(bytes_in))]
    walked = _split(_walk_local(local, pattern, np.concatenate([groups[i] for i in miss]),
                                lens, buf), [len(groups[i]) for i in miss])
    with _LOCK:
        for i, o in zip(miss, walked, strict=True):
            got[i] = o
            _CACHE[(*key0, bytes_in[i])] = (lens, o)
            _SIZE[0] += len(o[0]) + o[3].shape[1]
        while _SIZE[0] > _KEPT_TOKENS and len(_CACHE) > 1:
            _, (_, old) = _CACHE.popitem(last=False)
            _SIZE[0] -= len(old[0]) + old[3].shape[1]
    return [got[i] for i in range(len(bytes_in))]


def _split(o: _Outcome, sizes: list[int]) -> list[_Outcome]:
    """A walk of several groups joined, cut back into the walks of each group: per-token
    arrays by position; forks by token index, renumbered from the group's first token (a
    fork list stays in walk order: offset, then token index)."""
    bounds = np.cumsum([0, *sizes])
    end, kill_at, kill_in, fork, kill_byte = o
    which = np.searchsorted(bounds, fork[0], side="right") - 1
    parts = []
    for g in range(len(sizes)):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        f = fork[:, which == g].copy()
        f[0] -= lo
        part = (end[lo:hi], kill_at[lo:hi], kill_in[lo:hi], f, kill_byte[lo:hi])
        for a in part:
            a.flags.writeable = False
        parts.append(part)
    return parts


def group_outcomes(
    local: np.ndarray, pattern: np.ndarray, digest: bytes, bytes_in: list[int],
    by_byte: np.ndarray, byte_start: np.ndarray, lens: np.ndarray, buf: np.ndarray,
) -> _Outcome:
    """:func:`local_outcomes` of the tokens beginning with each of ``bytes_in`` (grouped by
    first byte: ``by_byte[byte_start[b]:byte_start[b + 1]]``), joined in that order (the
    forks' token index counting across the groups)."""
    parts = _outcomes(local, pattern, digest, bytes_in,
                      [by_byte[byte_start[b]: byte_start[b + 1]] for b in bytes_in], lens, buf)
    if len(parts) == 1:  # (most groups: one first byte; the cached arrays, read-only)
        end, kill_at, kill_in, fork1, kill_byte = parts[0]
        return end, kill_at, kill_in, fork1.astype(np.int64), kill_byte
    offsets = np.cumsum([0, *(len(p[0]) for p in parts)])
    fork = np.concatenate([p[3] for p in parts], axis=1).astype(np.int64)
    fork[0] += np.repeat(offsets[:-1], [p[3].shape[1] for p in parts])
    return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
            np.concatenate([p[2] for p in parts]), fork,
            np.concatenate([p[4] for p in parts]))


def first_appearance(values: np.ndarray) -> np.ndarray:
    """``values`` renumbered 0, 1, ... in order of first appearance. (A dict over a local
    automaton's few hundred states at most: a tenth of ``np.unique``'s cost on a few dozen,
    and this runs once per shared walk of a row.)"""
    seen: dict[int, int] = {}
    rank = seen.setdefault
    return np.fromiter([rank(v, len(seen)) for v in values.tolist()], dtype=np.int64,
                       count=len(values))


def _walk_local(local: np.ndarray, pattern: np.ndarray, toks: np.ndarray, lens: np.ndarray,
                buf: np.ndarray) -> _Outcome:
    n = len(toks)
    end = np.full(n, -1, dtype=np.int16)
    kill_at = np.zeros(n, dtype=np.int16)
    kill_in = np.full(n, -1, dtype=np.int16)
    kill_byte = np.zeros(n, dtype=np.uint8)
    forks: list[np.ndarray] = []
    cur = np.zeros(n, dtype=np.int64)
    tl = lens[toks]
    looping = local == np.arange(len(local), dtype=local.dtype)[:, None]
    loops = looping.any(axis=1)
    # A walk in a state that loops on some bytes (a string's body: most) jumps over its run
    # of them (no fork, no kill inside). From local state 0 at the second byte, read off
    # run_ends (one search per byte set and vocabulary) for a large group, off the tokens'
    # own bytes for a small one; later, every few steps, the few long tokens left jump the
    # same way.
    k = np.ones(n, dtype=np.int64)
    if loops[0] and n >= _VOCAB_JUMP:
        k = run_ends(lens, buf, looping[0])[toks].astype(np.int64)
    elif loops[0]:
        _jump(looping, loops, cur, np.arange(n), k, toks, tl, buf)
    done = tl <= k  # (most tokens in a string's body: all their bytes loop)
    end[done] = 0
    act = np.flatnonzero(~done)
    flat, starts = token_starts(lens, buf)
    at = np.zeros(n, dtype=np.int64)
    at[act] = starts[toks[act]]  # each token's bytes in ``flat``
    step = 0
    while act.size:
        step += 1
        if step % _JUMP_EVERY == 0 and len(act) <= _VOCAB_JUMP:
            _jump(looping, loops, cur, act, k, toks, tl, buf)
        ka = k[act]
        done = tl[act] <= ka
        if done.any():
            d = act[done]
            end[d] = cur[d]
            act, ka = act[~done], ka[~done]
            if not act.size:
                break
        byte = flat[at[act] + ka]
        nb = local[cur[act], byte].astype(np.int64)
        stop = nb < 0
        if stop.any():
            s = act[stop]
            kill_at[s] = ka[stop]
            kill_in[s] = cur[s]
            kill_byte[s] = byte[stop]
            act, ka, nb = act[~stop], ka[~stop], nb[~stop]
        shift = pattern[cur[act]] != pattern[nb]
        if shift.any():
            w = act[shift]
            forks.append(np.stack([w, ka[shift], cur[w], nb[shift]]))
        cur[act] = nb
        k[act] = ka + 1
    fork = (np.concatenate(forks, axis=1) if forks else np.zeros((4, 0), np.int64)).astype(
        np.int32)
    fork = fork[:, np.lexsort((fork[0], fork[1]))]  # in walk order: offset, then token
    for a in (end, kill_at, kill_in, fork, kill_byte):
        a.flags.writeable = False
    return end, kill_at, kill_in, fork, kill_byte



def _jump(looping: np.ndarray, loops: np.ndarray, cur: np.ndarray, act: np.ndarray,
          k: np.ndarray, toks: np.ndarray, tl: np.ndarray, buf: np.ndarray) -> None:
    """Advance the walks ``act`` in looping local states to their token's next byte that
    their state does not loop on (or its end), in place, reading the tokens' bytes (a few
    walks: no search of the vocabulary)."""
    c = cur[act]
    inside = loops[c] & (tl[act] - k[act] > _JUMP_EVERY)  # (a short rest: stepped through)
    if not inside.any():
        return
    a, c = act[inside], c[inside]
    rows = buf[toks[a], : int(tl[a].max())]
    pos = np.arange(rows.shape[1])[None, :]
    stop = ~looping[c[:, None], rows] & (pos >= k[a][:, None]) | (pos >= tl[a][:, None])
    k[a] = np.where(stop.any(axis=1), stop.argmax(axis=1), tl[a])
