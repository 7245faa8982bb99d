"""The few walks left at the end of a vocabulary walk, stepped in Python
(``walk_inputs.jump_tail``): the same tables, node ids included, as stepping them all in
numpy, byte by byte, in both lexer modes and for JSON Schema requests built lazily."""

from __future__ import annotations

import functools
import random

import numpy as np
import pytest

import gramask
import gramask.compiler.token_walk as token_walk
from gramask import Grammar
from gramask.compiler.pipeline import build

_LARK = r"""
start: item*
item: NAME "=" value ";" | "fn" NAME "(" NAME ("," NAME)* ")" "{" item* "}"
value: NAME | NUMBER | STRING | value "+" value | "(" value ")"
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+(\.[0-9]+)?/
STRING: /"([^"\\\n]|\\.)*"/
COMMENT: /\/\/[^\n]*/
%ignore COMMENT
%ignore /[ \t\n]+/
"""

_SCHEMA = {"type": "object",
           "properties": {"name": {"type": "string", "maxLength": 30},
                          "host": {"type": "string", "format": "hostname"},
                          "note": {"type": "string"}, "n": {"type": "integer"}}}


@functools.cache
def _vocab() -> gramask.Vocabulary:
    """Every byte, and random pieces (up to 60 bytes: long tokens walk alone at the end) of
    a program and a JSON document with UTF-8 text."""
    rng = random.Random(7)
    text = ('fn main(a, b) { x_1 = "héllo €" + 12.5; // a comment ☃\n  y = (a + b); }\n'
            '{"name": "Zürich", "host": "www.example.org", "note": "a\\"b", "n": 42}\n') * 4
    data = text.encode()
    toks = {bytes([b]) for b in range(256)}
    for _ in range(900):
        i = rng.randrange(len(data))
        toks.add(data[i: i + rng.randint(2, 60)])
    ordered = sorted(toks)
    return gramask.Vocabulary.from_tokens([*ordered, b"</s>"], eos_token_id=len(ordered),
                                          name="walk-tail")


def _arrays(grammar: Grammar, tail: int, monkeypatch: pytest.MonkeyPatch
            ) -> dict[str, np.ndarray]:
    monkeypatch.setattr(token_walk, "TAIL", tail)
    return build(grammar, _vocab(), progress=False)._arrays()


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_full_tables_the_same(lexer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    g = Grammar.from_lark(_LARK, lexer=lexer)
    numpy_only = _arrays(g, 0, monkeypatch)
    python_only = _arrays(g, 10**9, monkeypatch)  # every step of every walk in Python
    assert numpy_only.keys() == python_only.keys()
    for key, a in numpy_only.items():
        assert np.array_equal(a, python_only[key]), key


def test_json_schema_tables_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    g = Grammar.from_json_schema(_SCHEMA)
    numpy_only = _arrays(g, 0, monkeypatch)
    python_only = _arrays(g, 10**9, monkeypatch)
    for key, a in numpy_only.items():
        assert np.array_equal(a, python_only[key]), key


def test_lazy_rows_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows a request walks on first use, in the order a runtime reads them."""
    g = Grammar.from_json_schema(_SCHEMA)
    rows = {}
    for tail in (0, 10**9):
        monkeypatch.setattr(token_walk, "TAIL", tail)
        w = build(g, _vocab(), progress=False, lazy=True).tables.walker
        assert w is not None
        rows[tail] = [w.row(q) for q in range(w.dfa.num_states)]
    for (a_idx, a_node), (b_idx, b_node) in zip(rows[0], rows[10**9], strict=True):
        assert np.array_equal(a_idx, b_idx) and np.array_equal(a_node, b_node)
