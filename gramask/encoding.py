"""Encodings shared by the compiler, the artifact and the runtime: one definition of each.

* Terminal sets as Python ints (bit ``t`` = terminal ``t``): the parser's expected set, the
  lexer's winnable sets. Converted to and from bool rows and 64-bit words here.
* The indentation newline as a table node head: a newline lexeme that ends a token with its
  last line's leading whitespace ``width`` (the runtime's carry, see
  :mod:`gramask.runtime.core.indentation`: ``spaces + TAB_UNIT * tabs``, or ``BROKEN`` for a
  tab after a space); ``relative`` when the line began before the token, so the runtime joins
  it to the whitespace it has already carried. In a head the counts take 10 bits each.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["BROKEN", "TAB_UNIT", "bit_indices", "bits_of_rows", "decode_nl", "distinct_columns",
           "nl_code", "rows_of_bits", "unique_rows", "words_of_bits"]

_WORD = 0xFFFFFFFFFFFFFFFF
TAB_UNIT = 1 << 20  # what a tab adds to the indentation carry (a space adds 1)
BROKEN = 1 << 60  # the carry of a line with a tab after a space (its newline is refused)
_HEAD_COUNT = 1 << 10  # tabs and spaces a head can count (more: the head is BROKEN)
_HEAD_BROKEN = _HEAD_COUNT * _HEAD_COUNT


def bits_of_rows(rows: np.ndarray) -> list[int]:
    """Each bool row of a (n, T) array as an int bitset (packed in C, one ``int.from_bytes``
    per row: a schema's lexer has hundreds of states, converted per request)."""
    rows = np.asarray(rows, dtype=bool)
    if rows.ndim != 2 or not rows.shape[1]:
        return [0] * len(rows)
    packed = np.packbits(rows, axis=1, bitorder="little")
    if packed.shape[1] <= 8:  # up to 64 columns: one uint64 per row, made ints in C
        word = np.zeros((len(packed), 8), dtype=np.uint8)
        word[:, : packed.shape[1]] = packed
        out: list[int] = word.view("<u8").reshape(-1).tolist()
        return out
    frm = int.from_bytes
    if len(packed) <= _FEW_ROWS:
        return [frm(r, "little") for r in map(bytes, packed)]
    # many rows (a counted string's lexer: 50,000 states), few distinct: each converted once
    keys = np.ascontiguousarray(packed).view(f"V{packed.shape[1]}").reshape(-1)
    uniq, inv = np.unique(keys, return_inverse=True)
    vals = [frm(u.tobytes(), "little") for u in uniq]
    return [vals[i] for i in inv.reshape(-1).tolist()]


_FEW_ROWS = 1024


def rows_of_bits(bits: Iterable[int], width: int) -> np.ndarray:
    """Int bitsets as a (n, width) bool array (inverse of :func:`bits_of_rows`).

    Raises
    ------
    ValueError
        A set holds a bit at ``width`` or above."""
    bits = list(bits)
    n_bytes = (width + 7) // 8
    if any(b >> width for b in bits):
        raise ValueError(f"a bit set wider than {width}")
    data = b"".join(b.to_bytes(n_bytes, "little") for b in bits)
    flat = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
    return flat.reshape(len(bits), n_bytes * 8)[:, :width].astype(bool)


def bit_indices(x: int) -> list[int]:
    """The members of the int bitset ``x`` (a non-negative int), ascending."""
    out = []
    while x:
        low = x & -x
        out.append(low.bit_length() - 1)
        x ^= low
    return out


def words_of_bits(bits: int, n_words: int) -> np.ndarray:
    """An int bitset as ``n_words`` little-endian uint64 words."""
    return np.array([(bits >> (64 * i)) & _WORD for i in range(n_words)], dtype=np.uint64)


def nl_code(num_terminals: int, spaces: np.ndarray, tabs: np.ndarray, broken: np.ndarray,
            relative: np.ndarray) -> np.ndarray:
    """Node heads for indentation newlines (vectorised); heads below ``num_terminals`` are
    terminals. ``broken``: a tab after a space (or counts a head cannot hold)."""
    broken = broken | (spaces >= _HEAD_COUNT) | (tabs >= _HEAD_COUNT)
    code = np.where(broken, _HEAD_BROKEN, spaces + _HEAD_COUNT * tabs).astype(np.int64)
    return num_terminals + 2 * code + relative.astype(np.int64)


def decode_nl(num_terminals: int, head: int) -> tuple[int, bool]:
    """(width as a carry, relative) of a newline node head made by :func:`nl_code`."""
    v = head - num_terminals
    code = v >> 1
    if code >= _HEAD_BROKEN:
        return BROKEN, bool(v & 1)
    tabs, spaces = divmod(code, _HEAD_COUNT)
    return spaces + TAB_UNIT * tabs, bool(v & 1)


def unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True)`` of a 2-D array (distinct rows in
    lexicographic order, and each row's index among them) by ``lexsort``: several times
    faster on small arrays, and it does not import ``numpy.ma`` (some 50 ms) on first use."""
    n = a.shape[0]
    if n == 0:
        return a.copy(), np.zeros(0, dtype=np.int64)
    if a.shape[1] == 0:
        return a[:1].copy(), np.zeros(n, dtype=np.int64)
    if a.dtype == bool and a.shape[1] > 64:  # thousands of terminals: a key per column is
        return _unique_bool_rows(a)  # thousands of sorts; packed rows sort as byte strings
    order = np.lexsort(a.T[::-1])  # first column the primary key
    srt = a[order]
    new = np.concatenate([[True], np.any(srt[1:] != srt[:-1], axis=1)])
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return srt[new], inv


def distinct_columns(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first index of each distinct column of the 2-D ``table``, ascending; each
    column's number among them), the distinct columns numbered by where they first occur.
    A dict of the columns' bytes: exact, one pass, and the order a transition table's
    columns already have (``unique_rows`` would renumber them lexicographically)."""
    seen: dict[bytes, int] = {}
    number = np.array([seen.setdefault(c.tobytes(), len(seen))
                       for c in np.ascontiguousarray(table.T)], dtype=np.int64)
    first = np.zeros(len(seen), dtype=np.int64)
    first[number[::-1]] = np.arange(len(number) - 1, -1, -1)
    return first, number


def _unique_bool_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`unique_rows` of a wide bool matrix: rows packed to bytes, deduplicated in a dict
    and sorted as byte strings, which orders them as the bool rows are ordered (the packing
    is big-endian and zero-padded)."""
    packed = np.packbits(rows, axis=1)
    index: dict[bytes, int] = {}
    first = np.empty(len(packed), dtype=np.int64)
    for i, r in enumerate(map(bytes, packed)):
        first[i] = index.setdefault(r, len(index))
    keys = list(index)
    order = sorted(range(len(keys)), key=keys.__getitem__)
    rank = np.empty(len(keys), dtype=np.int64)
    rank[order] = np.arange(len(keys))
    reps = np.empty(len(keys), dtype=np.int64)
    reps[first[::-1]] = np.arange(len(packed) - 1, -1, -1)  # first row of each key
    return rows[reps[order]], rank[first]
