"""Tokens that stay inside a string's body, decided by counting their characters.

A counted string (JSON Schema ``minLength``/``maxLength``) is a chain of lexer states, one
per count: every row inside it reaches thousands of states, so no row shares a local walk
(:mod:`gramask.compiler.local_walks`) and each one walked the whole vocabulary, byte by
byte (40-100 ms against a 129k-token vocabulary). Yet from such a state every plain
character — printable ASCII but ``"`` and ``\\``, or a whole UTF-8 character — leads to the
same next state (the next count), through states of the same end class. Along a chain of
such *uniform* states a token made of plain characters (its last one possibly cut, a
byte-level vocabulary splits UTF-8) cannot die nor fork: its node is the chain's end class,
read off its character count, and only the other tokens (a quote, an escape, a character
past the chain: the few that reach the bound) are walked.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from .kept import drop_oldest
from .walk_inputs import token_starts

__all__ = ["chain_length", "plain_needs", "plain_tokens", "uniform_step"]

# byte kinds: a plain ASCII character, a continuation byte, the lead of a 2-, 3-, 4-byte
# character, anything else (a control byte, ``"``, ``\\``, a byte no UTF-8 text holds)
_ASCII, _CONT, _BAD = 0, 1, 5
_KIND = np.full(256, _BAD, dtype=np.int8)
_KIND[0x20:0x80] = _ASCII
_KIND[[0x22, 0x5C]] = _BAD
_KIND[0x80:0xC0] = _CONT
_KIND[0xC2:0xE0] = 2
_KIND[0xE0:0xF0] = 3
_KIND[0xF0:0xF5] = 4
_PLAIN_ASCII = np.flatnonzero(_KIND == _ASCII)
# the second bytes a lead allows (no overlong form, no surrogate, nothing past U+10FFFF)
_SECOND_LO = np.full(256, 0x80, dtype=np.int16)
_SECOND_HI = np.full(256, 0xBF, dtype=np.int16)
_SECOND_LO[0xE0], _SECOND_HI[0xED], _SECOND_LO[0xF0], _SECOND_HI[0xF4] = 0xA0, 0x9F, 0x90, 0x8F
_SECONDS = {n: (np.arange(0x80, 0xC0)[None, :] >= _SECOND_LO[lo:hi, None])
            & (np.arange(0x80, 0xC0)[None, :] <= _SECOND_HI[lo:hi, None])
            for n, lo, hi in ((3, 0xE0, 0xF0), (4, 0xF0, 0xF5))}


class Walker(Protocol):
    """What :func:`plain_tokens` reads of a :class:`~gramask.compiler.token_walk.TokenWalker`
    (named by its shape: that module imports this one)."""

    lens: np.ndarray
    buf: np.ndarray
    trans: np.ndarray
    state_class: np.ndarray
    uniform: dict[int, int]
    nl_terminal: int


_NEEDS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def plain_needs(lens: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Per token: how many uniform states a walk of its bytes after the first crosses — its
    whole characters, plus one for a cut last character —, or -1 where those bytes are not
    plain characters (a quote, a backslash, a control byte, invalid UTF-8, a continuation
    byte with no lead after the first byte). Kept per vocabulary."""
    hit = _NEEDS.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1]
    flat, starts = token_starts(lens, buf)
    n = len(flat)
    pos = np.arange(n, dtype=np.int32) - np.repeat(starts.astype(np.int32), lens)  # in its token

    def back(a: np.ndarray, d: int, fill: int | bool) -> np.ndarray:
        """``a`` shifted ``d`` places on: element i is a[i - d]."""
        out = np.empty_like(a)
        out[:d] = fill
        out[d:] = a[:-d] if d else a
        return out

    kind = _KIND[flat]
    k1, k2, k3 = (back(kind, d, _BAD) for d in (1, 2, 3))
    body, cont, ascii_ = pos >= 1, kind == _CONT, kind == _ASCII
    # a continuation byte is valid one, two or three places after its lead (the lead in the
    # body: after the first byte), the second byte within its lead's range
    b1 = back(flat, 1, 0)
    second = (flat >= _SECOND_LO[b1]) & (flat <= _SECOND_HI[b1])
    at1 = cont & (pos >= 2) & (k1 >= 2) & (k1 <= 4) & second
    at2 = cont & (pos >= 3) & ((k2 == 3) | (k2 == 4)) & back(at1, 1, False)
    at3 = cont & (pos >= 4) & (k3 == 4) & back(at2, 1, False)
    # ... and a character begins only where the one before it is whole (its last byte is
    # ASCII, or the last continuation its lead asks for); the token's last may be cut
    whole = ascii_ | (cont & (((k1 == 2) & at1) | ((k2 == 3) & at2) | ((k3 == 4) & at3)))
    head = body & ~cont
    wrong = body & ((kind == _BAD) | (cont & ~(at1 | at2 | at3))
                    | (head & (pos >= 2) & ~back(whole, 1, False)))

    def per_token(a: np.ndarray) -> np.ndarray:
        c = np.zeros(n + 1, dtype=np.int32)
        np.cumsum(a, dtype=np.int32, out=c[1:])
        sums: np.ndarray = c[starts + lens] - c[starts]
        return sums

    out = np.where(per_token(wrong) > 0, -1, per_token(head)).astype(np.int64)
    out[lens == 0] = -1
    out.flags.writeable = False
    drop_oldest(_NEEDS, 4)
    _NEEDS[id(lens)] = (lens, out)
    return out


def uniform_step(trans: np.ndarray, state_class: np.ndarray, s: int) -> int:
    """The state every plain character leads to from ``s``, through states of ``s``'s end
    class only; -1 where the characters do not all lead to one state, or one dies or
    changes class on the way."""
    row = trans[s]
    a = row[_PLAIN_ASCII]
    t = int(a[0])
    if t < 0 or (a != t).any():
        return -1
    cls = state_class[s]
    inner = [np.array([t])]
    r2 = row[0xC2:0xE0]  # the leads' states, then the states inside the characters
    if (r2 < 0).any() or (trans[r2, 0x80:0xC0] != t).any():
        return -1
    inner.append(r2)
    for width in (3, 4):
        lo = 0xE0 if width == 3 else 0xF0
        r = row[lo: lo + (16 if width == 3 else 5)]
        if (r < 0).any():
            return -1
        inner.append(r)
        nxt = trans[r, 0x80:0xC0][_SECONDS[width]]
        for _ in range(width - 2):
            if (nxt < 0).any():
                return -1
            r = np.unique(nxt)
            inner.append(r)
            nxt = trans[r, 0x80:0xC0].reshape(-1)
        if (nxt != t).any():
            return -1
    if (state_class[np.concatenate(inner)] != cls).any():
        return -1
    return t


def chain_length(trans: np.ndarray, state_class: np.ndarray, memo: dict[int, int], s: int,
                 most: int) -> int:
    """How many uniform states (:func:`uniform_step`) follow one another from ``s``, up to
    ``most``. ``memo``: each state's step, kept by the caller (the rows of a counted string
    walk the same chain, each from one count further)."""
    j, cur = 0, s
    while j < most:
        nxt = memo.get(cur)
        if nxt is None:
            nxt = memo[cur] = uniform_step(trans, state_class, cur)
        if nxt < 0:
            break
        cur, j = nxt, j + 1
    return j


def plain_tokens(w: Walker, s_after: int, toks: np.ndarray) -> np.ndarray:
    """(len(toks),) bool: the tokens whose bytes after the first are plain characters along a
    chain of uniform states from ``s_after`` (:func:`chain_length`): each one's node is
    ``s_after``'s end class, without a walk."""
    need = plain_needs(w.lens, w.buf)[toks]
    most = int(need.max(initial=-1))
    if w.nl_terminal >= 0 or most < 1:  # (a width counted across lexemes; nothing to gain)
        return np.zeros(len(toks), dtype=bool)
    j = chain_length(w.trans, w.state_class, w.uniform, s_after, most)
    fast: np.ndarray = (need >= 0) & (need <= j)
    return fast
