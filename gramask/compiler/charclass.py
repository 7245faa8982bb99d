"""Sets of Unicode code points as sorted ranges, and their UTF-8 encodings as byte ranges.

Why ranges: a class such as ``[\\U00010000-\\U0010ffff]`` or Python's identifier characters
(PEP 3131: ~130,000 code points in ~770 ranges) must become a byte automaton without listing
its code points one by one. Every operation here is linear in the number of ranges; only case
folding looks at single characters: once over every code point to learn ``re``'s lower cases
(cached), then per class only at the ~1,400 that lowering changes.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

__all__ = [
    "MAX_CODEPOINT",
    "CharSet",
    "case_variants",
    "complement",
    "fold_class",
    "normalize",
    "utf8_sequences",
]

MAX_CODEPOINT = 0x10FFFF

CharSet = tuple[tuple[int, int], ...]
"""Sorted, disjoint, non-adjacent inclusive ranges ``(lo, hi)`` of code points."""


def normalize(ranges: Iterable[tuple[int, int]]) -> CharSet:
    """Sort and merge overlapping or adjacent ranges."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] <= r[1]):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return tuple(out)


def complement(ranges: CharSet) -> CharSet:
    """Every code point (0..U+10FFFF) not in ``ranges``."""
    out, nxt = [], 0
    for lo, hi in ranges:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= MAX_CODEPOINT:
        out.append((nxt, MAX_CODEPOINT))
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _lower_classes() -> dict[int, tuple[int, ...]]:
    """``v`` → every code point whose ``re`` lower case is ``v`` (only where that is not itself)."""
    import _sre

    inv: dict[int, list[int]] = {}
    for cp in range(MAX_CODEPOINT + 1):
        lo = _sre.unicode_tolower(cp)
        if lo != cp:
            inv.setdefault(lo, [lo]).append(cp)
    return {k: tuple(v) for k, v in inv.items()}


def _re_variants(ch: str) -> frozenset[str]:
    """What ``re.fullmatch("(?i)" + re.escape(ch), x)`` accepts: ``re``'s simple case folding
    (sre_compile: same ``unicode_tolower``, plus the ``re._casefix`` extra cases)."""
    import _sre
    from re import _casefix  # type: ignore[attr-defined]

    lo = _sre.unicode_tolower(ord(ch))
    classes = _lower_classes()
    out = {ord(ch)}
    for v in (lo, *_casefix._EXTRA_CASES.get(lo, ())):
        out.add(v)
        out.update(classes.get(v, ()))
    return frozenset(chr(c) for c in out)


def case_variants(ch: str, ascii_only: bool = False) -> frozenset[str]:
    """The characters a case-insensitive pattern character ``ch`` matches, as Python ``re``
    reads it (so lark, whose terminals are ``re`` patterns, too): every character with the
    same simple lower case, plus ``re._casefix``'s extra cases: ``/k/i`` matches the KELVIN
    SIGN, ``/s/i`` ``ſ``, ``/σ/i`` ``ς``, ``/i/i`` ``ı`` and ``İ``, ``/ß/i`` ``ẞ`` (never a
    mapping that changes the length, ``ß`` → ``SS``). ``ascii_only`` (the ``a`` flag): only
    ASCII letters have a case (``/é/ai`` is ``é`` alone, ``/k/ai`` not the Kelvin sign).
    """
    if ascii_only:
        if ch.isascii() and ch.isalpha():
            return frozenset((ch, ch.swapcase()))
        return frozenset((ch,))
    return _re_variants(ch)


def _intersect(a: CharSet, b: CharSet) -> CharSet:
    return complement(normalize((*complement(a), *complement(b))))


def _member(s: CharSet, los: list[int], cp: int) -> bool:
    import bisect

    i = bisect.bisect_right(los, cp) - 1
    return i >= 0 and s[i][1] >= cp


@functools.lru_cache(maxsize=2)
def _lowering(ascii_only: bool) -> tuple[dict[int, int], CharSet, tuple[int, ...]]:
    """(code point → its ``re`` lower case, for those it changes; those code points as a set;
    the code points ``re`` counts as cased), under the ``a`` flag or not."""
    import _sre

    if ascii_only:
        low = {cp: cp + 32 for cp in range(0x41, 0x5B)}
        return low, normalize((c, c) for c in low), (*range(0x41, 0x5B), *range(0x61, 0x7B))
    low = {cp: lo for lo, members in _lower_classes().items() for cp in members if cp != lo}
    cased = tuple(cp for cp in range(MAX_CODEPOINT + 1)
                  if not 0xD800 <= cp <= 0xDFFF and _sre.unicode_iscased(cp))
    return low, normalize((c, c) for c in low), cased


def fold_class(parts: CharSet, cats: CharSet, ascii_only: bool = False) -> CharSet:
    """What a case-insensitive class with characters and ranges ``parts`` and categories
    ``cats`` (``\\w``, ``\\s``… as sets) matches, as ``re`` compiles it: where no part has a
    case the class is matched as written (``(?i)\\W`` is ``\\W``: it does not take the
    capital Ι because the combining ypogegrammeni ``\\u0345``, a non-word character, folds
    with it); else a character matches where its lower case is among the parts' lower cases
    (with ``re._casefix``'s extra cases) or in the categories. ``ascii_only``: the ``a`` flag,
    where only ASCII letters have a case."""
    import bisect

    low, changed, cased = _lowering(ascii_only)
    plos = [lo for lo, _ in parts]
    if not any((i := bisect.bisect_left(cased, lo)) < len(cased) and cased[i] <= hi
               for lo, hi in parts):
        return normalize((*parts, *cats))
    lowered = [(low[cp], low[cp]) for cp in low if _member(parts, plos, cp)]
    m = normalize((*parts, *lowered))
    if not ascii_only:
        from re import _casefix  # type: ignore[attr-defined]

        mlos = [lo for lo, _ in m]
        m = normalize((*m, *((k, k) for cp, extra in _casefix._EXTRA_CASES.items()
                              if _member(m, mlos, cp) for k in extra)))
    m = normalize((*m, *cats))
    mlos = [lo for lo, _ in m]
    keep = _intersect(m, complement(changed))  # unchanged by lowering: in iff in m
    folded = [(cp, cp) for cp, lo in low.items() if _member(m, mlos, lo)]
    return normalize((*keep, *folded))


def _utf8(cp: int) -> bytes:
    return chr(cp).encode("utf-8", "surrogatepass")


def utf8_sequences(lo: int, hi: int) -> Iterator[list[tuple[int, int]]]:
    """Byte-range sequences whose concatenations are exactly the UTF-8 of [lo, hi]
    (surrogates excluded: they are not characters). At most a few dozen per range."""
    if lo > hi:
        return
    if lo <= 0xDFFF and hi >= 0xD800:
        yield from utf8_sequences(lo, 0xD7FF)
        yield from utf8_sequences(0xE000, hi)
        return
    for bound in (0x7F, 0x7FF, 0xFFFF):
        if lo <= bound < hi:
            yield from utf8_sequences(lo, bound)
            yield from utf8_sequences(bound + 1, hi)
            return
    n = len(_utf8(lo))
    for i in range(1, n):
        m = (1 << (6 * i)) - 1
        if lo & ~m != hi & ~m:
            if lo & m != 0:
                yield from utf8_sequences(lo, lo | m)
                yield from utf8_sequences((lo | m) + 1, hi)
                return
            if hi & m != m:
                yield from utf8_sequences(lo, (hi & ~m) - 1)
                yield from utf8_sequences(hi & ~m, hi)
                return
    a, b = _utf8(lo), _utf8(hi)
    yield [(a[j], b[j]) for j in range(n)]
