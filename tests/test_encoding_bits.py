"""bits_of_rows: each bool row as an int bitset, whatever the width and the number of rows
(one word per row up to 64 columns; many rows converted once per distinct row)."""

from __future__ import annotations

import numpy as np
import pytest

import gramask.encoding as enc
from gramask.encoding import bit_indices, bits_of_rows, rows_of_bits


@pytest.mark.parametrize("width", [0, 1, 7, 8, 9, 63, 64, 65, 130])
@pytest.mark.parametrize("n", [0, 1, 40, 3000])
def test_bits_of_rows_sets_bit_j_for_column_j(n: int, width: int) -> None:
    rng = np.random.default_rng(n * 1000 + width)
    rows = (rng.random((25, width)) < 0.3)[rng.integers(0, 25, n)]  # rows repeat
    got = bits_of_rows(rows)
    assert len(got) == n and all(type(b) is int for b in got)
    for b, r in zip(got, rows.tolist(), strict=True):
        assert b == sum(1 << j for j, x in enumerate(r) if x)
    if width:
        assert np.array_equal(rows_of_bits(got, width), rows)


def test_bits_of_rows_converts_many_rows_as_few(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(enc, "_FEW_ROWS", 0)  # the distinct-row path, on a small case
    rows = np.array([[1] * 70, [0] * 69 + [1], [1] * 70], dtype=bool)
    assert bits_of_rows(rows) == [(1 << 70) - 1, 1 << 69, (1 << 70) - 1]


@pytest.mark.parametrize("members", [[], [0], [3, 64], [1, 5, 63, 64, 200]])
def test_bit_indices_lists_a_bitset_ascending(members: list[int]) -> None:
    assert bit_indices(sum(1 << m for m in members)) == members
