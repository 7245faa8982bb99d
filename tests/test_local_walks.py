"""Walks inside a lexeme shared across grammars (gramask.compiler.local_walks): every row of a
table built with them holds the same outcomes as the plain walk, for grammars whose local
automata were walked by other grammars first (cache hits) and for their own."""

from __future__ import annotations

import random
from collections import OrderedDict

import numpy as np
import pytest

from gramask import Grammar
from gramask.compiler import local_walks, token_walk
from gramask.compiler.pipeline import build
from gramask.compiler.tables import TokenTables

from .test_lazy_tables import SCHEMAS, _vocab

Outcome = tuple[object, ...]


def _decode(tb: TokenTables, node: int) -> Outcome:
    """A node as what it means (node numbers depend on the order rows were walked)."""
    head, tail, alt, sets = tb.nodes()
    h = int(head[node])
    if h == -1:
        return ("end", int(tail[node]))
    if h <= -2:
        return ("branch", -2 - h, _decode(tb, int(tail[node])), _decode(tb, int(alt[node])))
    lab: object = tuple(np.flatnonzero(sets[h]).tolist()) if tb.contextual else h
    return ("cons", lab, _decode(tb, int(tail[node])))


def _rows(g: Grammar) -> dict[int, dict[int, Outcome]]:
    cg = build(g, _vocab(), progress=False, lazy=True)
    w = cg.tables.walker
    assert w is not None
    out = {}
    n = cg.dfa.num_states
    for q in sorted({0, *random.Random(0).sample(range(n), min(n, 40))}):  # cheap enough
        idx, node = w.row(q)
        out[q] = {int(i): _decode(cg.tables, int(n)) for i, n in zip(idx, node, strict=True)}
    return out


GRAMMARS = [
    lambda: Grammar.from_json_schema(SCHEMAS[0][0]),
    lambda: Grammar.from_json_schema(SCHEMAS[2][0]),
    lambda: Grammar.from_json_schema({"type": "object", "additionalProperties": {
        "type": "string", "maxLength": 3}, "properties": {"city": {"type": "string"}}}),
    lambda: Grammar.from_regex(r"[a-z]+(-[0-9]{2,4})?@(x|yy)\.com"),
    lambda: Grammar.from_lark('start: "a" NAME+\n%import common.CNAME -> NAME\n'
                              '%ignore " "\n', lexer="basic"),
]


@pytest.mark.parametrize("k", range(len(GRAMMARS)))
def test_rows_with_shared_local_walks_match_the_plain_walk(
    k: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another grammar walked first: the cache holds its local walks
    build(Grammar.from_json_schema({"type": "object", "properties": {
        "x": {"type": "string"}, "n": {"type": "number"}}}), _vocab(), progress=False,
        lazy=True).constraint().allowed()
    g = GRAMMARS[k]()
    shared = _rows(g)
    monkeypatch.setattr(token_walk, "local_automaton", lambda trans, s, succ=None: None)
    assert shared == _rows(g)


def test_local_automata_are_canonical() -> None:
    """Two lexers whose string bodies are alike give the body's local automaton one digest."""
    vocab = _vocab()
    digests = []
    for key in ("a", "b"):
        g = Grammar.from_json_schema({"type": "object", "properties": {key: {"type": "string"}}})
        dfa = build(g, vocab, progress=False, lazy=True).dfa
        inside = int(dfa.trans[int(dfa.trans[0, ord('"')]), ord("z")])  # past every key
        got = local_walks.local_automaton(dfa.trans, inside)
        assert got is not None
        digests.append(got[2])
    assert digests[0] == digests[1]


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_walks, "_KEPT_TOKENS", 1000)
    monkeypatch.setattr(local_walks, "_CACHE", OrderedDict())
    monkeypatch.setattr(local_walks, "_SIZE", [0])
    build(Grammar.from_json_schema({"type": "string"}), _vocab(), progress=False,
          lazy=True).constraint().allowed()
    assert local_walks._CACHE
    assert local_walks._SIZE[0] <= 1000 or len(local_walks._CACHE) == 1
