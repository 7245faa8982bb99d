"""JSON Schema strings counted past 512 characters (``maxLength``/``minLength`` up to
10,000): they compile without the cache, and the masks count exactly — on a byte vocabulary
(every character forced) and on DeepSeek's, whose tokens of up to 128 bytes meet the end of
the count anywhere inside them. ``jsonschema`` and the length itself are the oracles."""

from __future__ import annotations

import functools
import json
import random
from typing import Any

import numpy as np
import pytest

import gramask
from gramask import Grammar
from gramask.cache.store import CacheWarning
from gramask.errors import GrammarError

from ._support import BYTES, accepts, byte_ids, hf_tokenizer

jsonschema = pytest.importorskip("jsonschema")

# characters of every spelling: ASCII, 2- to 4-byte UTF-8, short escapes, \uXXXX, a pair
_PIECES = ["a", "Z", " ", "7", "é", "你", "😀", "\n", '"', "\\", "\u00e9", "\U0001f600"]


@functools.cache
def _compiled(schema_text: str, vocab: str = "bytes") -> gramask.CompiledGrammar:
    v = BYTES if vocab == "bytes" else gramask.Vocabulary.bundled(vocab)
    return gramask.compile(Grammar.from_json_schema(schema_text), v, cache=False,
                           progress=False)


def _text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(n))


def _spelled(rng: random.Random, s: str) -> str:
    """``s`` as a JSON string, some characters escaped as \\uXXXX (pairs for astral ones)."""
    out = ['"']
    for ch in s:
        raw = json.dumps(ch, ensure_ascii=False)[1:-1]
        if ord(ch) >= 0x80 and rng.random() < 0.3:
            raw = json.dumps(ch)[1:-1]
        out.append(raw)
    out.append('"')
    return "".join(out)


def test_max_length_1000_then_only_the_quote() -> None:
    """1,000 characters of every spelling are allowed, then only the closing quote; 1,001
    are refused (a maxLength above 512 was refused before)."""
    cg = _compiled(json.dumps({"type": "string", "maxLength": 1000}))
    rng = random.Random(5)
    s = _text(rng, 1000)
    body = byte_ids(_spelled(rng, s))[:-1]
    c = cg.constraint()
    for i, t in enumerate(body):
        m = c.allowed()
        assert m[t], i
        c.advance(t)
    assert np.flatnonzero(c.allowed()).tolist() == [ord('"')]
    assert accepts(cg, byte_ids(json.dumps(s)))
    assert not accepts(cg, byte_ids(json.dumps(s + "a")))
    assert not accepts(cg, byte_ids(json.dumps(s + "é")))


@pytest.mark.parametrize("schema", [
    {"type": "string", "minLength": 1000, "maxLength": 1200},
    {"type": "object", "properties": {"body": {"type": "string", "maxLength": 2000},
                                      "title": {"type": "string"}},
     "required": ["body"]},
    {"type": "array", "items": {"type": "string", "minLength": 600, "maxLength": 4096},
     "maxItems": 2},
])
def test_long_lengths_against_jsonschema(schema: dict[str, Any]) -> None:
    """Random strings at and around both bounds, in every spelling: accepted exactly when
    ``jsonschema`` says valid."""
    cg = _compiled(json.dumps(schema))
    rng = random.Random(json.dumps(schema))
    lo, hi = {"string": (1000, 1200), "object": (0, 2000), "array": (600, 4096)}[
        schema["type"]]
    for n in sorted({0, 1, lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, rng.randint(lo, hi)}):
        if n < 0:
            continue
        s = _text(rng, n)
        inst: Any = {"string": s, "object": {"body": s, "title": "t"}, "array": [s]}[
            schema["type"]]
        ok = bool(jsonschema.validators.validator_for(schema)(schema).is_valid(inst))
        spelled = json.dumps(inst, ensure_ascii=False).replace(
            json.dumps(s, ensure_ascii=False), _spelled(rng, s))
        assert accepts(cg, byte_ids(spelled)) == ok, (n, ok)


def test_deepseek_tokens_meet_the_end_of_the_count() -> None:
    """DeepSeek's vocabulary (tokens up to 128 bytes): with ``k`` characters of room left,
    a token of plain ASCII letters (no quote) is allowed exactly when it has at most ``k``
    characters; the text of exactly 1,000 characters is accepted and 1,001 refused."""
    schema = json.dumps({"type": "string", "maxLength": 1000})
    cg = _compiled(schema, "deepseek-v4")
    enc = hf_tokenizer("deepseek-v4")
    vocab = cg.vocab
    letters = [(i, len(t)) for i, t in enumerate(vocab.tokens)
               if t and t.isascii() and t.isalpha() and not vocab.is_special(i)]
    ids = np.array([i for i, _ in letters])
    lens = np.array([n for _, n in letters])
    rng = random.Random(2)
    words = "".join(rng.choice("abcdefghij klmnop") for _ in range(1001))
    for room in (0, 1, 7, 50, 127, 128, 129, 400):
        c = cg.constraint()
        for t in enc('"' + words[: 1000 - room]):
            c.advance(t)
        m = c.allowed()
        assert np.array_equal(m[ids], lens <= room), room
    assert accepts(cg, enc(json.dumps(words[:1000])))
    assert not accepts(cg, enc(json.dumps(words[:1001])))


def test_above_the_limit_is_refused() -> None:
    with pytest.raises(GrammarError, match="'maxLength' at #: string lengths above 10000"):
        Grammar.from_json_schema({"type": "string", "maxLength": 10_001})
    with pytest.raises(GrammarError, match="'minLength' at #"):
        Grammar.from_json_schema({"type": "string", "minLength": 10_001})


def test_a_cached_compile_too_large_to_walk_ahead_falls_back_to_lazy_rows(tmp_path: Any) -> None:
    """A compile through the cache walks every row ahead and stops at 16,384 lexer states:
    there a grammar the lazy rows allow is compiled without the cache, with a warning, rather
    than refused (``maxLength`` 1,000 needs 22,004 states)."""
    g = Grammar.from_json_schema({"type": "string", "maxLength": 1000})
    with pytest.warns(CacheWarning, match="compiled without the cache"):
        cg = gramask.compile(g, BYTES, cache_dir=tmp_path, progress=False)
    assert not cg.info["from_cache"] and not list(tmp_path.iterdir())
    rng = random.Random(3)
    assert accepts(cg, byte_ids(_spelled(rng, _text(rng, 1000))))
    assert not accepts(cg, byte_ids(_spelled(rng, _text(rng, 1001))))
