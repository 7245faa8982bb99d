"""A character-level DFA → the byte-level DFA of its UTF-8 encodings, minimal when it is.

Why: a counted repeat of a Unicode class such as ``\\w{1,64}`` (usernames, ids, JSON Schema
``pattern``s) is a chain of 65 character states, but each copy of Unicode ``\\w`` costs ~300
byte states (the partial characters it must tell apart). Determinising the byte NFA of all
copies took minutes (its subsets are built byte by byte, copy by copy); the character DFA
takes milliseconds, and its byte automaton is then assembled level by level here.

A state of the byte automaton is either a character state (between characters) or a partial
character: the function from the continuation bytes still to come to the character state
reached. Those functions are built once for the pattern's classes (leaves: a class number),
then substituted per character state (leaves: the state its row gives for the class) and
interned by content, level by level — so equal partial characters are one state, across
character states too. Surrogates, overlong forms and code points past U+10FFFF have no path.
"""

from __future__ import annotations

import numpy as np

from .regex_nfa import ByteNFA

__all__ = ["utf8_expand", "wide_moves"]

_SPAN = 0x200000  # the code points four UTF-8 bytes could spell (past U+10FFFF: dead)
_CONT = 64  # continuation bytes 0x80..0xBF
_CHUNK = 1 << 22  # substituted leaves per batch of character states (bounded memory)


def utf8_expand(cls_trans: np.ndarray, atom_class: np.ndarray, cuts: list[int],
                finals: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The byte automaton ``(trans (S, 256) int32, finals (S,))`` of a trimmed character
    automaton, start 0: ``cls_trans[q, c]`` the state after a character of class ``c`` from
    ``q`` (-1 dead), code points ``cuts[i] .. cuts[i+1]-1`` of class ``atom_class[i]``.
    Minimal when the character automaton is (equal partial characters are merged; a partial
    character never equals a state between characters or one of another length, since
    their live words start differently). None past ``limit`` states."""
    cp = np.full(_SPAN, -1, dtype=np.int32)
    cp[:cuts[-1]] = np.repeat(np.asarray(atom_class, dtype=np.int32), np.diff(cuts))
    cp[0xD800:0xE000] = -1  # surrogates: no UTF-8 text holds them
    two = cp[:0x800].reshape(32, _CONT).copy()
    two[:2] = -1  # C0, C1: overlong
    three = cp[:0x10000].reshape(16, _CONT, _CONT).copy()
    three[0, :32] = -1  # E0 80..9F: overlong
    four = cp.reshape(8, _CONT, _CONT, _CONT).copy()
    four[0, :16] = -1  # F0 80..8F: overlong
    # the partial characters of the classes: one continuation byte left (leaves: classes),
    # then two (leaves: the former), then three
    level1, ids = _distinct(np.concatenate([two, three.reshape(-1, _CONT),
                                            four.reshape(-1, _CONT)]))
    lead2, ids = ids[:32], ids[32:]
    level2, ids2 = _distinct(np.concatenate([ids[:16 * _CONT].reshape(16, _CONT),
                                             ids[16 * _CONT:].reshape(-1, _CONT)]))
    lead3 = ids2[:16]
    level3, lead4 = _distinct(ids2[16:].reshape(8, _CONT))

    n = cls_trans.shape[0]
    ext = np.concatenate([cls_trans.astype(np.int32), np.full((n, 1), -1, np.int32)], axis=1)
    tables: list[dict[bytes, int]] = [{}, {}, {}]
    rows: list[list[np.ndarray]] = [[], [], []]
    per_state: list[np.ndarray] = []  # per level: each character state's partial characters
    prev = ext
    for lv, nodes in enumerate((level1, level2, level3)):
        got = np.full((n, nodes.shape[0] + 1), -1, dtype=np.int32)  # (last: dead)
        step = max(1, _CHUNK // max(1, nodes.size))
        for a in range(0, n, step):
            sub = prev[a:a + step][:, nodes]  # (states, nodes, 64): leaves substituted
            got[a:a + step, :-1] = _intern(sub.reshape(-1, _CONT), tables[lv], rows[lv]
                                           ).reshape(sub.shape[0], -1)
            if n + sum(map(len, rows)) > limit:
                return None
        per_state.append(got)
        prev = got
    off1 = n
    off2 = off1 + len(rows[0])
    off3 = off2 + len(rows[1])
    total = off3 + len(rows[2])
    trans = np.full((total, 256), -1, dtype=np.int32)
    trans[:n, :0x80] = ext[:, cp[:0x80]]
    for lead, (lo, hi), got, off in ((lead2, (0xC0, 0xE0), per_state[0], off1),
                                      (lead3, (0xE0, 0xF0), per_state[1], off2),
                                      (lead4, (0xF0, 0xF8), per_state[2], off3)):
        trans[:n, lo:hi] = _shifted(got[:, lead], off)
    for rows_lv, off, child_off in ((rows[0], off1, 0), (rows[1], off2, off1),
                                    (rows[2], off3, off2)):
        if rows_lv:
            trans[off:off + len(rows_lv), 0x80:0xC0] = _shifted(_stacked(rows_lv, _CONT),
                                                               child_off)
    out_finals = np.zeros(total, dtype=bool)
    out_finals[:n] = finals
    return trans, out_finals


def wide_moves(nfa: ByteNFA) -> int:
    """How many moves of a :class:`~gramask.compiler.regex_nfa.CharNFA` range past ASCII
    (what decides between the two determinisations)."""
    return sum(hi > 0x7F for ms in nfa.moves for _, hi, _ in ms)


def _shifted(ids: np.ndarray, off: int) -> np.ndarray:
    return np.where(ids >= 0, ids + off, -1)


def _distinct(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows that are not all dead, each row's number among them or -1)."""
    kept: list[np.ndarray] = []
    ids = _intern(rows, {}, kept)
    return _stacked(kept, rows.shape[1]), ids


def _stacked(rows: list[np.ndarray], width: int) -> np.ndarray:
    return np.stack(rows) if rows else np.zeros((0, width), dtype=np.int32)


def _intern(sub: np.ndarray, table: dict[bytes, int], rows: list[np.ndarray]) -> np.ndarray:
    """Each row's number by content (-1 for an all-dead row), new rows numbered in turn (a
    dict of their bytes: exact, and much faster than sorting 64-wide rows)."""
    sub = np.ascontiguousarray(sub, dtype=np.int32)
    dead = sub.max(axis=1) < 0
    ids = np.full(sub.shape[0], -1, dtype=np.int32)
    width = sub.shape[1] * 4
    data = sub.tobytes()
    for i in np.flatnonzero(~dead).tolist():
        key = data[i * width:(i + 1) * width]
        got = table.get(key)
        if got is None:
            got = table[key] = len(rows)
            rows.append(sub[i])
        ids[i] = got
    return ids
