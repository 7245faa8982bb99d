"""PoolRows (the rows an engine integration hands to a ConstraintPool, e.g. vLLM's processor
with workers): rows follow the same masks as a constraint walked in this process, a request
that fails its setup or a token ends with an EOS-only row, and EOS ends a row."""

from __future__ import annotations

import numpy as np
import pytest

import gramask
from gramask.integrations.options import GrammarResolver, parse_options
from gramask.integrations.pool_rows import PoolRow, PoolRows

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
