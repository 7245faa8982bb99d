"""Byte automata of JSON strings that are one of a few plain words, or none of them: what
property names are. A word of printable ASCII that JSON writes raw (not ``"``, ``\\``, ``/``)
has one spelling, its bytes, so a trie of them is the automaton, and "any other key" is that
trie grafted on the automaton of every JSON string — milliseconds less per key than the
code-point construction of :mod:`gramask.frontends.json_strings`, which builds the rest."""

from __future__ import annotations

import numpy as np

from ..compiler.regex_bytes import ByteDFA, _trim

__all__ = ["plain", "words_dfa"]


def plain(words: list[str]) -> bool:
    """Whether every character is printable ASCII that JSON writes only raw (not ``"``,
    ``\\``, ``/``): each word then has one spelling, its own bytes (keys almost always)."""
    return all(0x20 <= ord(c) < 0x7F and c not in '"\\/' for w in words for c in w)


def words_dfa(words: list[str], anything: ByteDFA | None) -> ByteDFA:
    """The byte DFA of one of ``words`` (all :func:`plain`), quotes included, built as a
    trie; or, given ``anything`` (the automaton of every JSON string), of any string but
    them: a byte off the trie goes where ``anything``'s string body goes on it."""
    if anything is None and len(words) == 1:  # a chain, minimal as it is (most keys)
        return ByteDFA.chain(b'"' + words[0].encode("ascii") + b'"')
    kids: list[dict[int, int]] = [{}]
    ends = [False]
    for w in words:
        q = 0
        for b in w.encode("ascii"):
            nxt = kids[q].get(b)
            if nxt is None:
                nxt = kids[q][b] = len(kids)
                kids.append({})
                ends.append(False)
            q = nxt
        ends[q] = True
    m = len(kids)
    extra = anything.num_states if anything is not None else 1
    trans = np.full((1 + m + extra, 256), -1, dtype=np.int64)
    finals = np.zeros(1 + m + extra, dtype=bool)
    trans[0, 0x22] = 1  # the opening quote; trie node i is state 1 + i
    off = 1 + m
    if anything is None:
        final = off
        finals[final] = True
        body_row = np.full(256, -1, dtype=np.int64)
    else:
        a = anything.trans.astype(np.int64)
        trans[off:] = np.where(a >= 0, a + off, -1)
        finals[off:] = anything.finals
        body = int(a[0, 0x22])
        final = int(a[body, 0x22]) + off
        body_row = trans[off + body]
    for i, k in enumerate(kids):
        row = trans[1 + i]
        row[:] = body_row
        for b, j in k.items():
            row[b] = 1 + j
        row[0x22] = final if ends[i] != (anything is not None) else -1
    return _trim(trans, finals)
