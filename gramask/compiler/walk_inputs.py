"""What every walk of the vocabulary through a lexer starts from: the vocabulary as a byte
matrix (the same for every grammar compiled against it) and the lexer's end classes."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

import numpy as np

from ..encoding import bits_of_rows, nl_code, rows_of_bits, unique_rows
from .kept import drop_oldest
from .lexer import LexerDFA

__all__ = ["TAIL", "LoopRuns", "byte_groups", "end_classes", "jump_tail", "nl_heads", "run_ends",
           "run_stops", "token_matrix", "token_starts", "wide_first_bytes"]

# a walk with at most this many tokens left steps them in Python (:func:`jump_tail`)
TAIL = 48


_MATRICES: dict[int, tuple[Sequence[bytes], bytes, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
_FLAT: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
_WIDE: dict[int, tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}


def token_matrix(tokens: Sequence[bytes], special: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lengths, zero-padded byte matrix, first bytes) of a vocabulary, special tokens empty.

    The same for every grammar compiled against one vocabulary (a new JSON Schema per
    request): kept for the last few token lists (read-only arrays)."""
    key = id(tokens)
    hit = _MATRICES.get(key)
    if hit is not None and hit[0] is tokens and hit[1] == special.tobytes():
        return hit[2]
    v = len(tokens)
    special = np.asarray(special, dtype=bool)
    whole = np.fromiter(map(len, tokens), dtype=np.int64, count=v)
    lens = np.where(special, 0, whole) if v else whole
    lmax = max(1, int(lens.max()) if v else 1)
    # the bytes of the non-special tokens joined, scattered into the zero-padded matrix (a
    # fixed-width string array of the whole vocabulary, cut and zeroed, cost 3x more)
    flat = np.frombuffer(b"".join(compress(tokens, (~special).tolist())), dtype=np.uint8)
    starts = np.cumsum(lens) - lens
    buf = np.zeros((v, lmax), dtype=np.uint8)
    buf.reshape(-1)[np.repeat(np.arange(v, dtype=np.int64) * lmax - starts, lens)
                    + np.arange(len(flat), dtype=np.int64)] = flat
    first_byte = np.where(lens > 0, buf[:, 0].astype(np.int16), np.int16(-1)).astype(np.int16)
    for a in (lens, buf, first_byte, flat, starts):
        a.flags.writeable = False
    drop_oldest(_MATRICES, 4)
    _MATRICES[key] = (tokens, special.tobytes(), (lens, buf, first_byte))
    drop_oldest(_FLAT, 4)
    _FLAT[id(lens)] = (lens, flat, starts)  # what token_starts gives, known here already
    return lens, buf, first_byte


def wide_first_bytes(first_byte: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(``first_byte`` as int64, where it is a byte, it clipped at 0): what the runtime's
    kill sets index with, per vocabulary, read-only. Kept for the last few first-byte
    arrays: each new grammar's runtime (a JSON Schema per request) would otherwise make
    three vocabulary-sized arrays (~3 MB, mostly page faults) before its first mask."""
    hit = _WIDE.get(id(first_byte))
    if hit is not None and hit[0] is first_byte:
        return hit[1]
    wide = first_byte.astype(np.int64)
    out = (wide, wide >= 0, np.maximum(wide, 0))
    for a in out:
        a.flags.writeable = False
    drop_oldest(_WIDE, 4)
    _WIDE[id(first_byte)] = (first_byte, out)  # (holds the array: its id stays its own)
    return out


def end_classes(dfa: LexerDFA) -> np.ndarray:
    """(S, T + 1) bool: per lexer state, the non-ignored terminals that can come next from it
    — as the winner of the lexeme in progress, or, if that lexeme can end as an ignored
    terminal, as a lexeme after it (which must start with a byte that ends the ignored one:
    after a Python comment, only a newline) — and, in the last column, whether the lexeme can
    end as an ignored terminal at all (so that the input may end there).

    This is what makes "a comment right after ``x.``" a dead end the mask excludes: the
    comment itself is ignored, but only a newline can follow it.
    """
    n, nt = dfa.num_states, dfa.num_terminals
    trans, accept, ignored = dfa.trans, dfa.accept.tolist(), dfa.ignored.tolist()
    ign_bits = sum(1 << t for t in range(nt) if ignored[t])
    win = [b & ~ign_bits for b in bits_of_rows(dfa.winnable)]
    ign_acc = [s for s in range(n) if accept[s] >= 0 and ignored[accept[s]]]
    preds: list[set[int]] = [set() for _ in range(n)]
    for q in range(n):
        for t in set(trans[q][trans[q] >= 0].tolist()):
            preds[t].add(q)
    reach: list[list[int]] = [[] for _ in range(n)]  # ignored-accepting states reachable
    for s in ign_acc:
        seen, stack = {s}, [s]
        while stack:
            x = stack.pop()
            reach[x].append(s)
            for y in preds[x]:
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
    start_row = trans[0]
    next_start = {
        s: sorted({int(start_row[b]) for b in range(256)
                   if trans[s, b] < 0 and start_row[b] >= 0})
        for s in ign_acc
    }
    eff = list(win)
    changed = True
    while changed:
        changed = False
        follow = {}
        for s in ign_acc:
            bits = 0
            for r in next_start[s]:
                bits |= eff[r]
            follow[s] = bits
        for q in range(n):
            bits = win[q]
            for s in reach[q]:
                bits |= follow[s]
            if bits != eff[q]:
                eff[q] = bits
                changed = True
    out = rows_of_bits(eff, nt + 1)
    out[:, nt] = [bool(r) for r in reach]
    return out


_RUNS: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray]] = {}
_ENDS: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray]] = {}


def token_starts(lens: np.ndarray, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the tokens' bytes concatenated, each token's start in them), kept per vocabulary."""
    hit = _FLAT.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1], hit[2]
    flat = buf[np.arange(buf.shape[1])[None, :] < lens[:, None]]
    starts = np.cumsum(lens) - lens
    for a in (flat, starts):
        a.flags.writeable = False
    drop_oldest(_FLAT, 4)
    _FLAT[id(lens)] = (lens, flat, starts)
    return flat, starts


def run_stops(lens: np.ndarray, buf: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Positions in :func:`token_starts`' concatenation of the bytes not in ``member``
    ((256,) bool), ascending: where a run of ``member`` bytes stops. A walk in a state that
    loops on ``member`` (a string body, an identifier, indentation) jumps to the next one
    (or the token's end) instead of stepping byte by byte. Kept for the last few byte sets
    of a vocabulary (a JSON Schema per request has the same string bodies)."""
    key = (id(lens), member.tobytes())
    hit = _RUNS.get(key)
    if hit is not None and hit[0] is lens:
        return hit[1]
    flat, _ = token_starts(lens, buf)
    stops = np.flatnonzero(~member[flat])
    stops.flags.writeable = False
    drop_oldest(_RUNS, 32)
    _RUNS[key] = (lens, stops)
    return stops


def run_ends(lens: np.ndarray, buf: np.ndarray, member: np.ndarray) -> np.ndarray:
    """Per token, the offset of its first byte after the first one that is not in ``member``
    ((256,) bool), or its length: where a walk that enters a state looping on ``member``
    with the token's first byte (every shared walk of a row) stops jumping. One search over
    the vocabulary per byte set instead of one per walk; kept like :func:`run_stops`."""
    key = (id(lens), member.tobytes())
    hit = _ENDS.get(key)
    if hit is not None and hit[0] is lens:
        return hit[1]
    stops = run_stops(lens, buf, member)
    _, starts = token_starts(lens, buf)
    p = starts + np.minimum(lens, 1)
    end = starts + lens
    if len(stops):
        nxt = stops[np.minimum(np.searchsorted(stops, p), len(stops) - 1)]
        p = np.where(nxt >= p, nxt, end)
    else:
        p = end
    ends: np.ndarray = (np.minimum(p, end) - starts).astype(np.int64)
    ends.flags.writeable = False
    drop_oldest(_ENDS, 32)
    _ENDS[key] = (lens, ends)
    return ends


class LoopRuns:
    """A lexer's states that loop on many bytes (string bodies, identifiers, indentation):
    a walk in one jumps over the run of those bytes instead of stepping through it byte by
    byte (:meth:`skip`)."""

    def __init__(self, trans: np.ndarray, lens: np.ndarray, buf: np.ndarray) -> None:
        self.trans, self.lens, self.buf = trans, lens, buf
        looping = trans == np.arange(trans.shape[0])[:, None]
        big = np.flatnonzero(looping.any(axis=1))
        self.loop_of = np.full(trans.shape[0], -1, dtype=np.int64)  # state -> its loop set
        self.sets = np.zeros((0, 256), dtype=bool)
        if big.size:
            self.sets, self.loop_of[big] = unique_rows(looping[big])
        self.any = bool(big.size)
        self._stops: dict[int, np.ndarray] = {}
        self._starts = token_starts(lens, buf)[1] if big.size else lens

    def skip(self, act: np.ndarray, cur: np.ndarray, idx: np.ndarray, k: np.ndarray,
             second: bool = False) -> None:
        """Advance the walks ``act`` (of tokens ``idx[act]`` in states ``cur[act]`` at
        offsets ``k[act]``) in looping states over the bytes they loop on, in place.
        ``second``: every walk is at its token's second byte (a shared walk), where the
        run's end per token is read off :func:`run_ends` (one search per byte set and
        vocabulary, not per walk)."""
        lid = self.loop_of[cur[act]]
        inside = lid >= 0
        if not inside.any():
            return
        a, lid = act[inside], lid[inside]
        t = idx[a]
        if second:
            for li in np.unique(lid).tolist():
                sel = lid == li
                k[a[sel]] = run_ends(self.lens, self.buf, self.sets[li])[t[sel]]
            return
        q = cur[a]
        lmax = self.buf.shape[1]
        more = self.trans[q, self.buf[t, np.minimum(k[a], lmax - 1)]] == q  # next byte loops
        if not more.any():
            return
        a, lid, t = a[more], lid[more], t[more]
        flat_start = self._starts[t]
        pos = flat_start + k[a]
        end = flat_start + self.lens[t]
        for li in np.unique(lid).tolist():
            sel = lid == li
            stops = self._stops.get(li)
            if stops is None:
                stops = self._stops[li] = run_stops(self.lens, self.buf, self.sets[li])
            p, e = pos[sel], end[sel]
            if len(stops):  # the next byte not looped on, if the token has one
                nxt = stops[np.minimum(np.searchsorted(stops, p), len(stops) - 1)]
                pos[sel] = np.where(nxt >= p, nxt, e)
            else:
                pos[sel] = e
        k[a] = np.minimum(pos, end) - flat_start


def split_classes(classes: np.ndarray, state_class: np.ndarray, ids: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """End classes (distinct rows, each state's row) split by a per-state id (0 for most):
    the basic mode's states whose lexeme ends where not every terminal can start
    (:class:`gramask.compiler.separable.Adjacency`) keep apart what they can still reach, the
    contextual mode's what may follow their ignored lexemes (``ignored_follows``); with no
    ids the classes are unchanged."""
    if ids is None or not ids.any():
        return classes, state_class
    pairs, split = unique_rows(np.stack([state_class.reshape(-1), ids], axis=1))
    return classes[pairs[:, 0]], split


def jump_tail(trans_flat: np.ndarray, width: int, state_class: np.ndarray, contextual: bool,
              flat: np.ndarray, act: np.ndarray, cur: np.ndarray, k: np.ndarray,
              at: np.ndarray, tl: np.ndarray) -> None:
    """Advance the few walks left of a vocabulary walk (``act``; ``cur``, ``k``, ``at``,
    ``tl``: per walk, state, offset of the next byte, where its token's bytes begin in
    ``flat``, its length; ``trans_flat``: the lexer's transitions, rows of ``width``) byte
    by byte in Python, in place, up to the byte where something happens: the token ends,
    the byte ends the lexeme or (contextual) leads to another end class. The tail of a walk
    is a few long tokens (an identifier, a string's body) for dozens of steps, each a batch
    of numpy calls that cost more than the bytes they step. The walks then wait for their
    iteration (as after :meth:`LoopRuns.skip`), so that nodes are interned in the same
    batches."""
    for i in act.tolist():
        c, kk, end, base = cur.item(i), k.item(i), tl.item(i), at.item(i)
        cls = state_class.item(c)
        while kk < end:
            nb = trans_flat.item(c * width + flat.item(base + kk))
            if nb < 0 or (contextual and state_class.item(nb) != cls):
                break
            c, kk = nb, kk + 1
        cur[i] = c
        k[i] = kk


_GROUPS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}


def byte_groups(lens: np.ndarray, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(non-empty token ids, those ids grouped by first byte, each byte's group start): the
    same for every grammar over one vocabulary (the token matrix is kept per vocabulary)."""
    hit = _GROUPS.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1], hit[2], hit[3]
    valid = np.flatnonzero(lens > 0)
    fb = buf[valid, 0]  # uint8: numpy's stable sort of it is a radix sort
    by_byte = valid[np.argsort(fb, kind="stable")]
    byte_start = np.zeros(257, dtype=np.int64)
    byte_start[1:] = np.cumsum(np.bincount(fb, minlength=256))
    for a in (valid, by_byte, byte_start):
        a.flags.writeable = False
    drop_oldest(_GROUPS, 4)
    _GROUPS[id(lens)] = (lens, valid, by_byte, byte_start)
    return valid, by_byte, byte_start


def nl_heads(buf: np.ndarray, n_terms: int, t: np.ndarray, k: np.ndarray,
             lex_start: np.ndarray, from_start: bool) -> np.ndarray:
    """Heads of indentation newlines ending at byte ``k`` of tokens ``t`` (their lexemes
    began at ``lex_start``): the carry of runtime.core.indentation, counted over the
    bytes after the last newline or form feed, read off the tokens' bytes (the bytes
    before ``k`` only: most tokens are short, and a table per token and offset would be
    five vocabulary × longest-token arrays)."""
    w = int(k.max())
    rows = buf[t, :w]
    pos = np.arange(w, dtype=np.int64)[None, :]
    before = pos < k[:, None]
    last_nl = np.where(((rows == 10) | (rows == 12)) & before, pos, -1).max(axis=1,
                                                                           initial=-1)
    seg = np.maximum(last_nl + 1, lex_start)
    inside = before & (pos >= seg[:, None])  # the bytes counted: after the last reset
    sp, tab = (rows == 32) & inside, (rows == 9) & inside
    last_tab = np.where(tab, pos, -1).max(axis=1, initial=-1)
    first_sp = np.where(sp, pos, w).min(axis=1, initial=w)
    rel = (last_nl < lex_start) & (not from_start) & (lex_start == 0)
    heads: np.ndarray = nl_code(n_terms, sp.sum(axis=1), tab.sum(axis=1),
                                (last_tab >= 0) & (first_sp < last_tab), rel)
    return heads

