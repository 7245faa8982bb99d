"""Which first bytes of a token can go on from a lexer state under a parser state, and what
the contextual lexer makes of them: the kill sets of a row (tokens whose first byte ends the
lexeme in progress) and row 0 walked in parts (:class:`Row0Parts`): see
:class:`~gramask.runtime.core.contextual_lexer.ContextualLexer`."""

from __future__ import annotations

import itertools
from typing import Protocol

import numpy as np

from ...compiler.table_rows import group_row, row0_part
from ...compiler.token_walk import TokenWalker
from ..memo import BoundedMemo
from .parse_state import ParserContext, PState

__all__ = ["ROW0_PARTS", "Row0Parts", "StartsHost", "dead_bytes", "kill_tokens"]

# row 0 of a lazily built table is walked for the first bytes a parser state allows, for at
# most this many distinct sets of them, before it is walked whole (see ``Row0Parts``)
ROW0_PARTS = 4

_Grouped = tuple[np.ndarray, np.ndarray, np.ndarray]  # a row as ``group_row`` gives it


class StartsHost(Protocol):
    """What these read of the contextual lexer."""

    trans: np.ndarray
    state_class: np.ndarray
    ctx: ParserContext
    _kill_sig: dict[int, bytes]
    _kills: BoundedMemo[tuple[bytes, int], np.ndarray]
    _kills_by_bytes: BoundedMemo[bytes, np.ndarray]
    _fb_ok: np.ndarray
    _fb_idx: np.ndarray

    def _class_vectors(self, a: int, fl: bool, extra: int | bytes | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...
    def _follows(self, p: PState) -> bool: ...


def dead_bytes(cx: StartsHost, q: int, a: int, fl: bool) -> np.ndarray:
    """(256,) bool: the bytes that end the lexeme at lexer state ``q`` under allowed set
    ``a`` (``fl``: ``_follows``): no terminal continues with it, or none that ``a`` holds
    (from state 0: the bytes that begin no lexeme ``a`` can use)."""
    nxt = cx.trans[q]
    cont = cx._class_vectors(a, fl)[0]
    out: np.ndarray = (nxt < 0) | ~cont[cx.state_class[np.maximum(nxt, 0)]]
    return out


def kill_tokens(cx: StartsHost, q: int, p: PState) -> np.ndarray:
    """Tokens whose first byte ends the lexeme at ``q`` (:func:`dead_bytes`): the row's
    entries for those tokens are then false."""
    sig = cx._kill_sig.get(q)
    if sig is None:  # the classes q's bytes lead to: whole groups of states share them
        nxt = cx.trans[q]
        sig = np.where(nxt < 0, -1, cx.state_class[np.maximum(nxt, 0)]).tobytes()
        cx._kill_sig[q] = sig
    a = cx.ctx.expects(p)
    key = (sig, a)  # all that the dead bytes depend on
    out = cx._kills.get(key)
    if out is None:
        dead = dead_bytes(cx, q, a, cx._follows(p))
        dkey = dead.tobytes()  # a few dozen distinct byte sets make every kill set
        out = cx._kills_by_bytes.get(dkey)
        if out is None:
            out = cx._fb_ok & dead[cx._fb_idx]
            cx._kills_by_bytes.put(dkey, out)
        cx._kills.put(key, out)
    return out


class Row0Parts:
    """Row 0 of a lazily built table walked for the first bytes a parser state can begin a
    lexeme with, until it is walked whole. A request's first mask needs only those (after
    nothing, ``{`` and blanks: row 0's strings, numbers and words wait for a state that
    allows them, and their walks are most of a first mask); the other tokens' entries are
    false whatever their walks give (their first lexeme can be nothing the parser takes).
    Each set of first bytes is a row of its own, numbered past the lexer's states."""

    def __init__(self) -> None:
        self._keys: dict[bytes, int] = {}
        self._ids = itertools.count()

    def row(self, cx: StartsHost, w: TokenWalker, p: PState,
            rows: BoundedMemo[int, _Grouped]) -> tuple[int, *_Grouped] | None:
        """(the part's row number, its grouped row) for ``p``, walked on first use and kept
        in ``rows``; None once row 0 is whole, where every first byte can begin a lexeme
        under ``p``, or past ``ROW0_PARTS`` sets (then row 0 is walked whole, once)."""
        if w.row0 is not None:
            return None
        live = ~dead_bytes(cx, 0, cx.ctx.expects(p), cx._follows(p))
        lkey = live.tobytes()
        k = self._keys.get(lkey)
        if k is None:
            if bool((live == (cx.trans[0] >= 0)).all()) or len(self._keys) >= ROW0_PARTS:
                return None
            # (setdefault and the counter's next are atomic: two threads never give two
            # sets one number)
            k = self._keys.setdefault(lkey, len(cx.trans) + next(self._ids))
        r = rows.get(k)
        if r is None:
            got = row0_part(w, np.flatnonzero(live).tolist())
            if got is None:
                return None
            r = group_row(*got)
            rows.put(k, r)
        return (k, *r)
