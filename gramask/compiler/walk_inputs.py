"""What every walk of the vocabulary through a lexer starts from: the vocabulary as a byte
matrix (the same for every grammar compiled against it) and the lexer's end classes."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress

import numpy as np

from ..encoding import bits_of_rows, rows_of_bits
from .lexer import LexerDFA

__all__ = ["end_classes", "run_stops", "token_matrix", "token_starts"]


_MATRICES: dict[int, tuple[Sequence[bytes], bytes, tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
_FLAT: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


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
    if len(_MATRICES) >= 4:
        _MATRICES.pop(next(iter(_MATRICES)))
    _MATRICES[key] = (tokens, special.tobytes(), (lens, buf, first_byte))
    if len(_FLAT) >= 4:
        _FLAT.pop(next(iter(_FLAT)))
    _FLAT[id(lens)] = (lens, flat, starts)  # what token_starts gives, known here already
    return lens, buf, first_byte


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


def token_starts(lens: np.ndarray, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the tokens' bytes concatenated, each token's start in them), kept per vocabulary."""
    hit = _FLAT.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1], hit[2]
    flat = buf[np.arange(buf.shape[1])[None, :] < lens[:, None]]
    starts = np.cumsum(lens) - lens
    for a in (flat, starts):
        a.flags.writeable = False
    if len(_FLAT) >= 4:
        _FLAT.pop(next(iter(_FLAT)))
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
    if len(_RUNS) >= 32:
        _RUNS.pop(next(iter(_RUNS)))
    _RUNS[key] = (lens, stops)
    return stops
