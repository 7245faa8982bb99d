"""A removed fill-in-the-middle request is freed by reference counting alone.

A serving worker adds and removes requests all day; a quotient automaton left in a reference
cycle waits for the cyclic garbage collector, thousands of objects per request and a pause
(in front of a step) to find them. The lazy tables hold their automaton's fill method weakly.
"""

from __future__ import annotations

import gc
import json.decoder
from pathlib import Path

import pytest

from ._support import compiled


@pytest.mark.parametrize("grammar", ["python", "json"])
def test_a_dropped_fim_constraint_leaves_no_cyclic_garbage(grammar):
    cg = compiled(grammar, "gpt2")
    if grammar == "python":
        src = Path(json.decoder.__file__).read_text(encoding="utf-8")
        cut = len(src) // 2
        prefix, suffix = src[:cut], src[cut + 40 : cut + 400]
    else:
        prefix, suffix = '{"a": [1, 2, {"b": ', '}], "c": null}'
    cg.constraint(prefix=prefix, suffix=suffix).allowed()  # warm the grammar's shared memos
    gc.collect()
    gc.disable()
    try:
        c = cg.constraint(prefix=prefix, suffix=suffix)
        c.allowed()
        c.advance(int(c.allowed().nonzero()[0][0]))
        c.allowed()
        del c
        assert gc.collect() == 0
    finally:
        gc.enable()
