"""Lazily built token tables (rows walked when the runtime first reads them) against the full
build: every mask along forced instances must be the same, and saving a lazy table writes
the full one."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import numpy as np
import pytest

import gramask
from gramask import Grammar
from gramask.compiler.pipeline import build
from gramask.compiler.table_rows import expand_row, lazy_diff
from gramask.compiler.tables import walk_token
from gramask.compiler.token_walk import TokenWalker
from gramask.runtime.core import contextual_lexer, contextual_starts

from ._support import BYTES, byte_ids, walk_in_lockstep


@functools.cache
def _vocab() -> gramask.Vocabulary:
    """Every byte plus a sample of DeepSeek's multi-byte tokens (which cross lexemes: ``":"``,
    ``"},{"``, ``" true"``), so that the rows hold real BRANCH and CONS chains."""
    ds = gramask.Vocabulary.bundled("deepseek-v4")
    rng = random.Random(7)
    multi = [t for i, t in enumerate(ds.tokens) if len(t) > 1 and not ds.is_special(i)]
    picked = sorted(set(rng.sample(multi, 6000)) | {t for t in multi if len(t) <= 3
                                                    and any(c in t for c in b'{}[]:,"')})
    toks = [bytes([b]) for b in range(256)] + picked + [b"</s>"]
    return gramask.Vocabulary.from_tokens(toks, eos_token_id=len(toks) - 1, name="mixed")


def _greedy(vocab: gramask.Vocabulary, data: bytes) -> list[int]:
    """Longest-match tokenization (any tokenization is a valid forcing)."""
    index = {t: i for i, t in enumerate(vocab.tokens) if i != vocab.eos_token_id}
    ids, i = [], 0
    while i < len(data):
        for n in range(min(16, len(data) - i), 0, -1):
            j = index.get(data[i: i + n])
            if j is not None:
                ids.append(j)
                i += n
                break
    return ids


def _same_masks(grammar: Grammar, texts: list[str]) -> None:
    vocab = _vocab()
    eager = build(grammar, vocab, progress=False)
    lazy = build(grammar, vocab, progress=False, lazy=True)
    assert lazy.tables.walker is not None and eager.tables.walker is None
    for text in texts:
        ca, cb = eager.constraint(), lazy.constraint()
        for t in [*_greedy(vocab, text.encode()), None]:
            ma, mb = ca.allowed(), cb.allowed()
            assert np.array_equal(ma, mb), (text, t, np.flatnonzero(ma != mb)[:10])
            if t is None:
                assert ca.is_complete() and cb.is_complete()
                break
            assert ma[t]
            ca.advance(t)
            cb.advance(t)
    assert lazy.tables.walker is not None  # forcing walked some rows, not all


SCHEMAS = [
    ({"type": "object", "properties": {
        "city": {"type": "string", "minLength": 1},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14}},
      "required": ["city"]},
     [{"city": "Paris", "unit": "celsius", "days": 3}, {"city": "a \"quoted\" \\ name"}]),
    ({"type": "object", "properties": {
        "start": {"type": "string", "format": "date-time"},
        "who": {"type": "array", "items": {"type": "string", "format": "email"}}},
      "required": ["start"]},
     [{"start": "2024-05-01T10:00:00Z", "who": ["a@b.org", "x.y@z.com"]}]),
    ({"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "number"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
      "$ref": "#/$defs/node"},
     [{"v": -1.5e3, "kids": [{"v": 2, "kids": []}, {"v": 0.25}]}]),
    ({"anyOf": [{"type": "object", "properties": {"kind": {"const": "circle"},
                                                  "r": {"type": "number"}}},
                {"type": "array", "items": {"type": ["boolean", "null"]}, "maxItems": 3}]},
     [{"kind": "circle", "r": 2}, [True, None, False]]),
]


@pytest.mark.parametrize("k", range(len(SCHEMAS)))
def test_json_schema_masks_match_the_full_build(k: int) -> None:
    schema, instances = SCHEMAS[k]
    g = Grammar.from_json_schema(schema)
    _same_masks(g, [json.dumps(i) for i in instances]
                + [json.dumps(i, separators=(",", ":")) for i in instances])


def test_regex_and_choices_masks_match_the_full_build() -> None:
    _same_masks(Grammar.from_regex(r"[a-z]+(-[0-9]{2,4})?@(x|yy)\.com"),
                ["abc-123@yy.com", "q@x.com"])
    _same_masks(Grammar.from_choices(["yes", "no", "maybe not"]), ["maybe not", "no"])


def test_indented_grammar_masks_match_the_full_build() -> None:
    g = gramask.grammars.load("python")
    _same_masks(g, ["def f(x):\n    if x:\n        return [x, 'a']  # c\n    return None\n"])


def test_rows_match_the_reference_walk() -> None:
    """Each lazily walked row holds exactly the tokens whose first byte continues the
    lexeme and that survive the walk (``walk_token`` as the oracle)."""
    g = Grammar.from_json_schema(SCHEMAS[1][0])
    vocab = _vocab()
    lazy = build(g, vocab, progress=False, lazy=True)
    dfa, tb = lazy.dfa, lazy.tables
    for q in random.Random(1).sample(range(1, dfa.num_states), min(25, dfa.num_states - 1)):
        ids = set(expand_row(tb, q)[0].tolist())
        want = {i for i, t in enumerate(vocab.tokens)
                if t and i != vocab.eos_token_id and dfa.trans[q, t[0]] >= 0}
        assert ids <= want
        for i in want - ids:  # left out: the token dies from q
            assert walk_token(dfa, q, vocab.tokens[i]) is None


def test_saving_a_lazy_table_writes_the_full_one(tmp_path: Path) -> None:
    g = Grammar.from_json_schema(SCHEMAS[0][0])
    vocab = _vocab()
    lazy = build(g, vocab, progress=False, lazy=True)
    lazy.constraint().allowed()  # a few rows walked first
    path = tmp_path / "s.gramask"
    lazy.save(path)
    assert lazy.tables.walker is None  # built in full by saving
    eager = build(g, vocab, progress=False)
    assert lazy.tables.nnz == eager.tables.nnz
    loaded = gramask.CompiledGrammar.load(path)
    text = json.dumps(SCHEMAS[0][1][0])
    ca, cb = eager.constraint(), loaded.constraint()
    for t in _greedy(vocab, text.encode()):
        assert np.array_equal(ca.allowed(), cb.allowed())
        ca.advance(t)
        cb.advance(t)


def test_contextual_lark_grammars_match_the_full_build() -> None:
    """Keyword-as-name forks (LEX sets the runtime learns as rows are walked), with and
    without a token budget."""
    from .test_contextual import CASES

    texts: dict[str, list[str]] = {}
    for grammar, text, ok, _ in CASES:
        if ok:
            texts.setdefault(grammar, []).append(text)
    vocab = _vocab()
    for grammar, ts in texts.items():
        g = Grammar.from_lark(grammar, lexer="contextual")
        _same_masks(g, ts)
        eager = build(g, vocab, progress=False)
        lazy = build(g, vocab, progress=False, lazy=True)
        for text in ts:
            for n in (1, 2, 4):
                cut = text[: len(text) // 2]
                try:
                    want = eager.constraint(cut, max_tokens=n).allowed()
                except gramask.BudgetError:
                    with pytest.raises(gramask.BudgetError):
                        lazy.constraint(cut, max_tokens=n)
                    continue
                assert np.array_equal(want, lazy.constraint(cut, max_tokens=n).allowed())


def test_lazy_diffs_rebuild_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row served as a diff against a row assembled before (``lazy_diff``) is that row with
    the differing first bytes' tokens replaced: the same (token, node) pairs as the row
    assembled in full, and the masks of a forced instance use such diffs."""
    g = Grammar.from_json_schema(SCHEMAS[1][0])
    lazy = build(g, _vocab(), progress=False, lazy=True)
    w = lazy.tables.walker
    assert w is not None
    states = random.Random(2).sample(range(1, lazy.dfa.num_states),
                                     min(30, lazy.dfa.num_states - 1))
    w.row(states[0])
    served = 0
    for q in states[1:]:
        d = lazy_diff(w, q, w.v)
        if d is None:
            assert q in w.assembled
            continue
        base, removed, idx, node = d
        bi, bn = w.row(base)
        got = dict(zip(bi.tolist(), bn.tolist(), strict=True))
        for t in removed.tolist():
            got.pop(t, None)
        got.update(zip(idx.tolist(), node.tolist(), strict=True))
        qi, qn = w.row(q)  # (now assembled in full: no diff for it from here on)
        assert got == dict(zip(qi.tolist(), qn.tolist(), strict=True)), q
        assert lazy_diff(w, q, w.v) is None
        served += 1
    assert served >= 10
    # the runtime serves rows as diffs along a forced instance (masks: the tests above)
    bases = []

    def spy(w: TokenWalker, q: int, most: int) -> object:
        d = lazy_diff(w, q, most)
        bases.append(-1 if d is None else d[0])
        return d

    monkeypatch.setattr(contextual_lexer, "lazy_diff", spy)
    cx = build(g, _vocab(), progress=False, lazy=True).constraint()
    for t in _greedy(_vocab(), json.dumps(SCHEMAS[1][1][0]).encode()):
        cx.allowed()
        cx.advance(t)
    assert max(bases) >= 0


def test_a_lazy_row_walked_again_against_another_base_gets_its_own_plan() -> None:
    """A lazy row's diff memo holds few rows (``row_cache``); a row evicted and walked again
    may be served against another base row, with other nodes. Its plan was keyed by the row
    alone, so the old plan met the new nodes: a broadcast ``ValueError`` (or, at equal sizes,
    another row's verdicts). Found forcing a schema with several non-ASCII patterns
    (``tools/json_schemas/user_tools.json``'s ``unicode_patterns``) byte by byte."""
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-zÀ-ÖØ-öø-ÿ' -]+$", "maxLength": 30},
        "greek": {"type": "string", "pattern": "^[Α-Ωα-ω]{2,4}$"},
        "mood": {"type": "string", "pattern": "^[\U0001F600-\U0001F64F]+$"},
        "handle": {"type": "string", "pattern": "^@[a-z0-9_]{3,15}$"},
        "phone": {"type": "string", "pattern": "^\\+?\\d{1,3}[ -]?\\d{3,12}$"},
        "bio": {"type": "string", "pattern": "ü"}}, "required": ["name"]}
    texts = [json.dumps(i, indent="\t", separators=(" ,", " : ")) for i in (
        {"name": "A", "greek": "Ωμε", "mood": "😀🙏", "handle": "@a_b1", "phone": "+47 12345678"},
        {"name": "x y", "phone": "0123", "bio": "Müller"}, {"name": "Zoë2"}, {"name": "a" * 31})]
    texts.append('{"name":"Ann","greek":"Ω"}')
    g = Grammar.from_json_schema(schema)
    eager = build(g, BYTES, progress=False)
    lazy = build(g, BYTES, progress=False, lazy=True)
    for text in texts:
        ca, cb = eager.constraint(), lazy.constraint()
        for t in [*byte_ids(text), None]:
            ma, mb = ca.allowed(), cb.allowed()
            assert np.array_equal(ma, mb), (text, np.flatnonzero(ma != mb)[:10])
            if t is None or not ma[t]:
                break
            ca.advance(t)
            cb.advance(t)


@pytest.mark.parametrize("parts", [1, 4])
def test_row0_walked_in_parts_matches_the_full_build(monkeypatch: pytest.MonkeyPatch,
                                                      parts: int) -> None:
    """Before row 0 of a lazy table is walked whole, a mask at a lexeme start walks only the
    first bytes its parser state can begin a lexeme with (``{`` and blanks at the start of
    an object), for up to ``ROW0_PARTS`` sets of them: the masks of random walks equal the
    full build's, the first mask leaves row 0 unwalked, and past the limit it is whole."""
    monkeypatch.setattr(contextual_starts, "ROW0_PARTS", parts)
    vocab = _vocab()
    schemas = [SCHEMAS[0][0], SCHEMAS[3][0], {"type": "array", "items": {"type": "string"}},
               {"type": "string", "maxLength": 5}]
    for k, schema in enumerate(schemas):
        g = Grammar.from_json_schema(schema)
        eager = build(g, vocab, progress=False)
        lazy = build(g, vocab, progress=False, lazy=True)
        w = lazy.tables.walker
        assert w is not None
        lazy.constraint().allowed()
        # a string's lexer has blanks and '"' only, both of them allowed at the start: row 0
        # is walked whole at once; the others begin with a few of their first bytes only
        assert (w.row0 is None) == (k < 3)
        rng = random.Random(k)
        for _ in range(6):
            walk_in_lockstep(eager, lazy, rng, 30, schema)
        if parts == 1:  # a second set of first bytes walked row 0 whole
            assert w.row0 is not None
