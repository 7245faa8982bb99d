"""Byte automata of JSON strings that are one of a few plain words, or none of them: what
property names are. A word of printable ASCII that JSON writes raw (not ``"``, ``\\``, ``/``)
has one spelling, its bytes, so a trie of them is the automaton, and "any other key" is that
trie grafted on the automaton of every JSON string — milliseconds less per key than the
code-point construction of :mod:`gramask.frontends.json_strings`, which builds the rest.
Also the regions of keys ``patternProperties`` split the other keys into (:func:`key_region`),
as code-point automata."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..compiler.regex_bytes import ByteDFA, _trim
from .json_chardfa import CharDFA, with_gaps

__all__ = ["finite_words", "key_region", "plain", "region_empty", "words_dfa"]


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


@lru_cache(maxsize=256)
def _key_region(exclude: tuple[str, ...], match: tuple[str, ...], nomatch: tuple[str, ...]
                ) -> CharDFA:
    cdfa = CharDFA.words(list(exclude), complement=True)
    for rx in match:
        cdfa = cdfa.product(CharDFA.regex(rx))
    for rx in nomatch:
        cdfa = cdfa.product(_complemented(CharDFA.regex(rx)))
    return cdfa


def key_region(exclude: list[str], match: list[str], nomatch: list[str]) -> CharDFA:
    """Object keys other than ``exclude`` that match every regex of ``match`` (decoded
    strings, matched as a whole) and none of ``nomatch``: one region of the keys that
    ``patternProperties`` and ``additionalProperties`` split between them."""
    return _key_region(tuple(exclude), tuple(match), tuple(nomatch))


def _complemented(cdfa: CharDFA) -> CharDFA:
    """The strings ``cdfa`` does not accept: every code point a state has no range for goes to
    a new sink, and the finals flip."""
    sink = len(cdfa.edges)
    edges = [with_gaps(row, sink) for row in [*cdfa.edges, []]]
    return CharDFA(edges, [not f for f in cdfa.finals] + [True])


def region_empty(cdfa: CharDFA) -> bool:
    """No string is accepted (no final state is reachable from the start)."""
    seen, todo = {0}, [0]
    while todo:
        q = todo.pop()
        if cdfa.finals[q]:
            return False
        for _, _, t in cdfa.edges[q]:
            if t >= 0 and t not in seen:
                seen.add(t)
                todo.append(t)
    return True


def finite_words(cdfa: CharDFA, limit: int) -> list[str] | None:
    """Every string ``cdfa`` accepts, in code-point order, where they are at most ``limit``;
    None where there are more (a loop on the way to a final state: infinitely many)."""
    live = cdfa.trimmed()
    out: list[str] = []
    on_path: set[int] = set()

    def walk(q: int, prefix: str) -> bool:
        if q in on_path:
            return False
        if live.finals[q]:
            out.append(prefix)
        on_path.add(q)
        for lo, hi, t in live.edges[q]:
            if t < 0:
                continue
            if len(out) + hi - lo + 1 > limit:
                return False
            if not all(walk(t, prefix + chr(c)) for c in range(lo, hi + 1)):
                return False
        on_path.discard(q)
        return len(out) <= limit

    return out if walk(0, "") else None
