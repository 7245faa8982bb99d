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
past the chain: the few that reach the bound) are walked. A walk that reaches a chain
within its first few bytes (a ``format``'s or a key's automaton beside the counted string
dies on a character it does not allow) ends there the same way.
"""

from __future__ import annotations

import numpy as np

from .kept import drop_oldest
from .walk_inputs import token_starts

__all__ = ["Finisher", "PlainChains", "chain_length", "lead_needs", "plain_needs",
           "plain_rest", "uniform_steps"]

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
_CONTS = np.arange(0x80, 0xC0)
# the second bytes a lead allows (no overlong form, no surrogate, nothing past U+10FFFF)
_SECOND_LO = np.full(256, 0x80, dtype=np.int16)
_SECOND_HI = np.full(256, 0xBF, dtype=np.int16)
_SECOND_LO[0xE0], _SECOND_HI[0xED], _SECOND_LO[0xF0], _SECOND_HI[0xF4] = 0xA0, 0x9F, 0x90, 0x8F
_SECONDS = {n: (np.arange(0x80, 0xC0)[None, :] >= _SECOND_LO[lo:hi, None])
            & (np.arange(0x80, 0xC0)[None, :] <= _SECOND_HI[lo:hi, None])
            for n, lo, hi in ((3, 0xE0, 0xF0), (4, 0xF0, 0xF5))}

# the steps of a walk after which the tokens still walking are no longer looked at
_STEPS = 4

_RESTS: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def plain_rest(lens: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Per byte of :func:`~gramask.compiler.walk_inputs.token_starts`' concatenation, after
    its token's first: how many uniform states a walk of the token from that byte on crosses
    — its whole characters, plus one for a cut last character —, or -1 where the byte begins
    no character or the rest is not plain characters (a quote, a backslash, a control byte,
    invalid UTF-8). Kept per vocabulary."""
    hit = _RESTS.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1]
    flat, starts = token_starts(lens, buf)
    n = len(flat)
    first = np.repeat(starts.astype(np.int32), lens)
    pos = np.arange(n, dtype=np.int32) - first  # in its token

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
    bad = kind == _BAD
    wrong = body & (bad | (cont & ~(at1 | at2 | at3))
                    | (head & (pos >= 2) & ~back(whole, 1, False)))
    cw = np.zeros(n + 1, dtype=np.int32)
    ch = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(wrong, dtype=np.int32, out=cw[1:])
    np.cumsum(head, dtype=np.int32, out=ch[1:])
    end = first + np.repeat(lens.astype(np.int32), lens)
    at = np.arange(n, dtype=np.int32)
    # (a wrong byte before this one, or this one's "the character before is cut", is not
    # this rest's)
    ok = head & ~bad & (cw[end] == cw[np.minimum(at + 1, n)])
    out = np.where(ok, ch[end] - ch[at], -1).astype(np.int16)
    out.flags.writeable = False
    drop_oldest(_RESTS, 4)
    _RESTS[id(lens)] = (lens, out)
    return out


def plain_needs(lens: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """Per token: :func:`plain_rest` from its second byte (0 for a one-byte token, -1 for an
    empty one)."""
    _, starts = token_starts(lens, buf)
    rest = plain_rest(lens, buf)
    two = lens >= 2
    out = np.where(lens == 1, 0, -1).astype(np.int64)
    out[two] = rest[starts[two] + 1]
    return out


_LEADS: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def lead_needs(lens: np.ndarray, buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per token: (the width of the UTF-8 character its first byte leads, 0 where that is
    not a lead; :func:`plain_rest` after that character — 0 where the token ends inside it
    or with it —, or -1 where the character's bytes are not continuation bytes or the rest
    is not plain). Kept per vocabulary."""
    hit = _LEADS.get(id(lens))
    if hit is not None and hit[0] is lens:
        return hit[1], hit[2]
    kind = _KIND[buf[:, 0]]
    lead = np.flatnonzero((kind >= 2) & (kind <= 4) & (lens >= 1))
    w = kind[lead].astype(np.int64)
    n = lens[lead].astype(np.int64)
    cols = np.zeros((len(lead), 3), dtype=np.uint8)
    cols[:, : min(3, buf.shape[1] - 1)] = buf[lead, 1:4]
    pos = np.arange(1, 4)[None, :]
    # each byte of the first character the token holds is a continuation byte
    cont = ((cols >= 0x80) & (cols < 0xC0)) | (pos >= w[:, None]) | (pos >= n[:, None])
    ok = cont.all(axis=1)
    need = np.full(len(lens), -1, dtype=np.int16)
    need[lead[ok]] = 0
    more = ok & (n > w)
    _, starts = token_starts(lens, buf)
    need[lead[more]] = plain_rest(lens, buf)[starts[lead[more]] + w[more]]
    widths = np.zeros(len(lens), dtype=np.int8)
    widths[lead] = w
    for a in (widths, need):
        a.flags.writeable = False
    drop_oldest(_LEADS, 4)
    _LEADS[id(lens)] = (lens, widths, need)
    return widths, need


def _settle(trans: np.ndarray, state_class: np.ndarray, x: np.ndarray, d: int) -> np.ndarray:
    """Per state of ``x`` (-1: none), the one state that every ``d`` continuation bytes lead
    to from it through states of its end class, else -1."""
    if d == 0:
        return x
    seen = np.zeros(len(trans) + 1, dtype=bool)  # the distinct states (a bitmap, not a sort)
    seen[x] = True  # (-1: the extra last entry)
    u = np.flatnonzero(seen[:-1])
    where = np.full(len(trans) + 1, len(u), dtype=np.int64)  # -1 → the extra last value
    where[u] = np.arange(len(u))
    ch = trans[u, 0x80:0xC0].astype(np.int64)
    good = (ch >= 0) & (state_class[np.maximum(ch, 0)] == state_class[u][:, None])
    after = _settle(trans, state_class, np.where(good, ch, -1), d - 1)
    val = np.append(np.where(good.all(axis=1) & (after == after[:, :1]).all(axis=1),
                             after[:, 0], -1), -1)
    out: np.ndarray = val[where[x]]
    return out


def uniform_steps(trans: np.ndarray, state_class: np.ndarray, states: np.ndarray
                  ) -> np.ndarray:
    """Per state of ``states``, the state every plain character leads to from it, through
    states of its end class only; -1 where the characters do not all lead to one state, or
    one dies or changes class on the way. (Several states at once: a chain's candidates.)"""
    states = np.asarray(states, dtype=np.int64)
    row = trans[states]
    a = row[:, _PLAIN_ASCII].astype(np.int64)
    t = a[:, 0]
    ok = (t >= 0) & (a == t[:, None]).all(axis=1) & (
        state_class[np.maximum(t, 0)] == state_class[states])
    out = np.full(len(states), -1, dtype=np.int64)
    # (most states of a grammar's lexer fail here: the rest only for the others)
    pick = np.flatnonzero(ok)
    if pick.size:
        out[pick] = _non_ascii(trans, state_class, row[pick].astype(np.int64),
                               state_class[states[pick]], t[pick])
    return out


def _non_ascii(trans: np.ndarray, state_class: np.ndarray, row: np.ndarray, cls: np.ndarray,
               t: np.ndarray) -> np.ndarray:
    """:func:`uniform_steps` of the states of rows ``row`` (classes ``cls``), whose plain
    ASCII characters all lead to ``t`` through their class: ``t`` where every UTF-8
    character does the same, else -1."""
    ok = np.ones(len(row), dtype=bool)

    def alive(x: np.ndarray) -> np.ndarray:
        """States of ``x`` (a lead's, or one byte further) alive in their state's class."""
        c = cls.reshape((-1,) + (1,) * (x.ndim - 1))
        live: np.ndarray = (x >= 0) & (state_class[np.maximum(x, 0)] == c)
        return live

    x2 = row[:, 0xC2:0xE0]  # the 2-byte leads' states: one continuation byte to go
    ok &= alive(x2).all(axis=1)
    ok &= (_settle(trans, state_class, np.where(alive(x2), x2, -1), 1) == t[:, None]).all(
        axis=1)
    for lo, hi, width in ((0xE0, 0xF0, 3), (0xF0, 0xF5, 4)):
        x = row[:, lo:hi]
        ok &= alive(x).all(axis=1)
        valid = _SECONDS[width][None]  # the second bytes each lead allows
        y = trans[np.maximum(x, 0)[:, :, None], _CONTS].astype(np.int64)
        ly = alive(y) | ~valid
        ok &= ly.all(axis=(1, 2))
        rest = _settle(trans, state_class, np.where(ly & valid, y, -1), width - 2)
        ok &= ((rest == t[:, None, None]) | ~valid).all(axis=(1, 2))
    out: np.ndarray = np.where(ok, t, -1)
    return out


def chain_length(trans: np.ndarray, state_class: np.ndarray, memo: dict[int, int], s: int,
                 most: int) -> int:
    """How many uniform states (:func:`uniform_steps`) follow one another from ``s``, up to
    ``most``. ``memo``: each state's step, kept by the caller (the rows of a counted string
    walk the same chain, each from one count further). The states not looked at yet are
    looked at together: those that ``a`` leads to from ``s`` on (along a chain, every plain
    character leads there)."""
    j, cur = 0, s
    while j < most:
        nxt = memo.get(cur)
        if nxt is None:
            cand, c = [cur], cur
            seen = {cur}
            while len(cand) < most - j:
                c = int(trans[c, 0x61])
                if c < 0 or c in seen or c in memo:
                    break
                cand.append(c)
                seen.add(c)
            for q, v in zip(cand, uniform_steps(trans, state_class, np.array(cand)).tolist(),
                            strict=True):
                memo[q] = v
            nxt = memo[cur]
        if nxt < 0:
            break
        cur, j = nxt, j + 1
    return j


class PlainChains:
    """A lexer's uniform chains (per state, how many uniform states follow one another from
    it, up to the longest token's length) and the vocabulary's plain characters: what the
    walks read to finish the tokens that stay on a chain (:meth:`tokens`, :class:`Finisher`)."""

    def __init__(self, trans: np.ndarray, state_class: np.ndarray, lens: np.ndarray,
                 buf: np.ndarray) -> None:
        self.trans, self.state_class, self.lens, self.buf = trans, state_class, lens, buf
        self.cap = buf.shape[1]
        self.length = np.full(trans.shape[0], -1, dtype=np.int16)  # -1: not known yet
        self.step: dict[int, int] = {}  # state -> uniform_step, as looked up
        self._needs: np.ndarray | None = None  # plain_needs, on first use

    def lengths(self, states: np.ndarray) -> np.ndarray:
        """:func:`chain_length` of each of ``states`` (up to :attr:`cap`), memoised."""
        got: np.ndarray = self.length[states]
        unknown = states[got < 0]
        if unknown.size:
            seen = np.zeros(len(self.length), dtype=bool)  # (a bitmap: no sort of a walk)
            seen[unknown] = True
            fresh = [q for q in np.flatnonzero(seen).tolist() if q not in self.step]
            for i in range(0, len(fresh), 256):  # their first steps together (a grammar's
                part = fresh[i: i + 256]  # lexer: hundreds of states, most not uniform)
                steps = uniform_steps(self.trans, self.state_class, np.array(part))
                self.step.update(zip(part, steps.tolist(), strict=True))
            for q in np.flatnonzero(seen).tolist():
                self.length[q] = chain_length(self.trans, self.state_class, self.step, q,
                                              self.cap)
            got = self.length[states]
        return got

    def rest(self) -> np.ndarray:
        """:func:`plain_rest` of the vocabulary (kept there per vocabulary, evicted like the
        :func:`~gramask.compiler.walk_inputs.token_starts` that every walk reads)."""
        return plain_rest(self.lens, self.buf)

    def needs(self) -> np.ndarray:
        """:func:`plain_needs` of the vocabulary."""
        if self._needs is None:
            self._needs = plain_needs(self.lens, self.buf)
        return self._needs

    def tokens(self, groups: list[tuple[int, np.ndarray]]) -> list[np.ndarray]:
        """Per group (``s_after``, tokens), (len(tokens),) bool: the tokens whose bytes after
        the first are plain characters along the chain from ``s_after``, the state after
        their first byte: each one's node is ``s_after``'s end class, without a walk."""
        length = self.lengths(np.array([s for s, _ in groups], dtype=np.int64)).tolist()
        out = []
        for (s, toks), n in zip(groups, length, strict=True):
            if not len(toks):
                out.append(np.zeros(0, dtype=bool))
            elif n:
                need = self.needs()[toks]
                out.append((need >= 0) & (need <= n))
            else:  # (no chain from the state after the first byte: from after its character?)
                out.append(self._after_lead(s, toks))
        return out

    def _after_lead(self, s: int, toks: np.ndarray) -> np.ndarray:
        """:meth:`tokens` of a group whose first bytes are the leads of ``w``-byte UTF-8
        characters (a string body's CJK tokens: most of a byte-level vocabulary's), ``s`` the
        state after them: where every ``w - 1`` continuation bytes lead from ``s`` to one
        state through ``s``'s end class, the tokens whose first character is whole or cut
        and whose rest is plain characters along the chain from that state
        (:func:`lead_needs`) end in that class, as the walk would find them a few steps
        later."""
        none = np.zeros(len(toks), dtype=bool)
        w0 = int(_KIND[self.buf[toks[0], 0]])
        if not 2 <= w0 <= 4:
            return none
        widths, needs = lead_needs(self.lens, self.buf)
        if (widths[toks] != w0).any():
            return none
        t = int(_settle(self.trans, self.state_class, np.array([s], dtype=np.int64), w0 - 1)[0])
        if t < 0:
            return none
        n = int(self.lengths(np.array([t], dtype=np.int64))[0])
        need = needs[toks]
        out: np.ndarray = (need >= 0) & (need <= n)
        return out

    def begin(self, second: bool) -> Finisher:
        """A walk's :class:`Finisher`; ``second``: every walk is at its token's second byte,
        the tokens that :meth:`tokens` decides taken out already."""
        return Finisher(self, second)


class Finisher:
    """The tokens of one walk that reach a uniform chain in their first few bytes (after a
    format's or a key's automaton dies beside a counted string) end there (:meth:`finish`)."""

    __slots__ = ("calls", "chains")

    def __init__(self, chains: PlainChains, second: bool) -> None:
        self.chains = chains
        self.calls = -int(second)  # (the first step's check done by PlainChains.tokens)

    def finish(self, act: np.ndarray, ka: np.ndarray, cur: np.ndarray, at: np.ndarray,
               out: np.ndarray) -> tuple[np.ndarray, np.ndarray, Finisher | None]:
        """The walks ``act`` (next byte at offset ``ka`` of their token, whose bytes begin at
        ``at[act]`` in the concatenation; state ``cur[act]``) whose rest is plain characters
        along a uniform chain from their state end there: their state's end class is
        written to ``out``. Returns the other walks, and this object, or None once looking
        on is not worth it: after :data:`_STEPS` steps, or a step where none ended (a
        grammar without counted strings)."""
        self.calls += 1
        if self.calls <= 0:
            return act, ka, self
        ch = self.chains
        go = self if self.calls < _STEPS else None
        length = ch.lengths(cur[act])  # (the rests are read where a chain begins only)
        on = np.flatnonzero(length > 0)
        if not on.size:
            return act, ka, None
        need = ch.rest()[at[act[on]] + ka[on]]
        hit = on[(need >= 0) & (need <= length[on])]
        if not hit.size:
            return act, ka, None
        done = act[hit]
        out[done] = ch.state_class[cur[done]]
        keep = np.ones(len(act), dtype=bool)
        keep[hit] = False
        return act[keep], ka[keep], go
