"""PoolRows (the rows an engine integration hands to a ConstraintPool, e.g. vLLM's processor
with workers): rows follow the same masks as a constraint walked in this process, a request
that fails its setup or a token ends with an EOS-only row, and EOS ends a row."""

from __future__ import annotations

import numpy as np
import pytest

import gramask
from gramask.integrations.options import GrammarResolver, parse_options
from gramask.integrations.pool_rows import PoolRow, PoolRows
from gramask.serving import ConstraintPool

from ._support import compiled, hf_tokenizer

torch_mod = pytest.importorskip("gramask.torch")


def _packed(mask: np.ndarray, words: int) -> np.ndarray:
    row: np.ndarray = torch_mod.pack_bitmask_numpy(mask[None, :], words)[0]
    return row


def test_pool_rows_follow_in_process_constraints() -> None:
    vocab = compiled("json", "gpt2").vocab
    resolver = GrammarResolver(vocab)
    eos = vocab.eos_token_id
    assert eos is not None
    rows = PoolRows(resolver.compiled, vocab_size=len(vocab), eos_token_id=eos, workers=2,
                    max_batch=8)
    try:
        good = PoolRow(parse_options({"grammar": "json", "prefix": '{"a": ', "max_tokens": 12}))
        bad = PoolRow(parse_options({"grammar": "json", "prefix": "}"}))
        lark = PoolRow(parse_options({"grammar": {"lark": 'start: "x" "y"'}}))
        for r in (good, bad, lark):
            rows.add(r)
        ref = resolver.compiled(good.options).constraint('{"a": ', max_tokens=12)
        words = rows.bitmask.shape[1]
        eos_row = _packed(np.arange(len(vocab)) == eos, words)
        rows.fill([(3, good), (5, bad), (0, lark)])
        assert np.array_equal(rows.bitmask[3], _packed(ref.allowed(), words))
        assert bad.error is not None and "InvalidPrefixError" in bad.error
        assert np.array_equal(rows.bitmask[5], eos_row)
        for tok in hf_tokenizer("gpt2")("[1]}"):
            rows.advance(good, [tok])
            ref.advance(tok)
            rows.fill([(3, good)])
            assert np.array_equal(rows.bitmask[3], _packed(ref.allowed(), words))
        x = vocab.token_id("x")
        rows.advance(lark, [x, vocab.token_id("y"), eos, x])  # ids after EOS are not sent
        assert lark.ended
        rows.fill([(0, lark), (3, good)])
        assert np.array_equal(rows.bitmask[0], eos_row)
        rejected = PoolRow(parse_options({"grammar": "json"}))
        rows.add(rejected)
        rows.advance(rejected, [x])  # not JSON: the worker rejects it
        rows.fill([(1, rejected)])
        assert rejected.error is not None and np.array_equal(rows.bitmask[1], eos_row)
        assert rejected.rid not in rows.pool and good.rid in rows.pool
    finally:
        rows.close()


def test_unknown_grammar_fails_at_add() -> None:
    vocab = gramask.Vocabulary.bundled("gpt2")
    rows = PoolRows(GrammarResolver(vocab).compiled, vocab_size=len(vocab),
                    eos_token_id=vocab.eos_token_id, workers=1, max_batch=2)
    try:
        with pytest.raises(gramask.GramaskError):
            rows.add(PoolRow(parse_options({"grammar": "no-such-bundled-grammar"})))
    finally:
        rows.close()


def test_request_grammars_compile_in_the_workers_and_are_forgotten() -> None:
    """A JSON Schema a request carries is compiled by the workers (never in this process:
    the resolver here refuses), its rows are the in-process constraint's, and once no
    request uses it the pool keeps only the newest ``max_idle_grammars`` such grammars."""
    vocab = gramask.Vocabulary.bundled("gpt2")
    eos = vocab.eos_token_id

    def no_build(_opts: object) -> gramask.CompiledGrammar:
        raise AssertionError("a per-request grammar was built in the engine's process")

    rows = PoolRows(no_build, vocab_size=len(vocab), eos_token_id=eos, workers=2,
                    max_batch=4, vocab=vocab)
    try:
        words = rows.bitmask.shape[1]
        for n in range(3):
            schema = {"type": "object", "properties": {f"k{n}": {"type": "integer"}},
                      "required": [f"k{n}"], "additionalProperties": False}
            row = PoolRow(parse_options({"grammar": {"json_schema": schema}}))
            rows.add(row)
            ref = gramask.compile(gramask.Grammar.from_json_schema(schema), vocab,
                                  cache=False, progress=False).constraint()
            for tok in [*hf_tokenizer("gpt2")(f'{{"k{n}": 7}}'), None]:
                rows.fill([(1, row)])
                assert row.error is None
                assert np.array_equal(rows.bitmask[1], _packed(ref.allowed(), words))
                if tok is not None:
                    rows.advance(row, [tok])
                    ref.advance(tok)
            assert ref.is_complete()
            rows.remove(row)
        bad = PoolRow(parse_options({"grammar": {"json_schema": {"type": "no-such-type"}}}))
        rows.add(bad)  # refused by the worker that compiles it: an EOS-only row, not a crash
        rows.fill([(0, bad)])
        assert bad.error is not None and "no-such-type" in bad.error
    finally:
        rows.close()

    pool = ConstraintPool({}, vocab_size=len(vocab), workers=1, max_batch=2,
                          max_idle_grammars=1)
    try:
        for key in ("a", "b", "c"):
            pool.add_grammar_spec(key, {"choices": [key, key * 2]}, vocab)
            pool.add(key, key)
            pool.fill([key])
            pool.remove(key)
        assert pool.grammar_keys == ["c"]  # a and b forgotten, c kept while idle
        with pytest.raises(KeyError, match="'a'"):
            pool.add("again", "a")
        pool.add_grammar_spec("a", {"choices": ["a"]}, vocab)  # registered again: usable
        pool.add("again", "a")
        mask = np.unpackbits(pool.fill(["again"])[0].view(np.uint8), bitorder="little")
        assert mask[vocab.token_id("a")] and not mask[vocab.token_id("b")]
    finally:
        pool.close()
