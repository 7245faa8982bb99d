"""gramask.torch: packed bitmasks checked against the numpy reference kernels."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask.torch as gt
from gramask.torch import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    apply_token_bitmask_numpy,
    fill_next_token_bitmask,
    get_bitmask_shape,
    pack_bitmask_numpy,
    unpack_bitmask_numpy,
)

from ._support import compiled

NEG_INF = float("-inf")


class Fixed:
    """A stand-in constraint whose mask is given."""

    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask

    def allowed(self) -> np.ndarray:
        return self.mask


def random_masks(rng: np.random.Generator, batch: int, vocab: int) -> np.ndarray:
    density = rng.choice([0.0, 0.05, 0.5, 0.95, 1.0])
    return rng.random((batch, vocab)) < density


def random_bitmask(rng: np.random.Generator, batch: int, words: int) -> torch.Tensor:
    return torch.from_numpy(rng.integers(-(2**31), 2**31, size=(batch, words), dtype=np.int32))


# ------------------------------------------------------------------------------ reference


def test_reference_pack_is_bit_j_of_word_w():
    mask = np.zeros((1, 70), dtype=bool)
    mask[0, [0, 31, 32, 69]] = True
    words = pack_bitmask_numpy(mask)
    assert words.dtype == np.int32 and words.shape == (1, 3)
    assert words[0, 0] == np.int32(np.uint32(1 | 1 << 31).view(np.int32))
    assert words[0, 1] == 1 and words[0, 2] == 1 << 5


@given(st.integers(1, 200), st.integers(1, 3), st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_reference_round_trip(vocab, batch, seed):
    mask = random_masks(np.random.default_rng(seed), batch, vocab)
    packed = pack_bitmask_numpy(mask)
    assert packed.shape == (batch, (vocab + 31) // 32)
    assert np.array_equal(unpack_bitmask_numpy(packed, vocab), mask)
    # ids past the packed words come out disallowed
    assert not unpack_bitmask_numpy(packed, 32 * packed.shape[1] + 7)[:, vocab:].any()


# ------------------------------------------------------------------------------ allocate


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 50257, 151936])
def test_allocate_all_allowed(vocab):
    bm = allocate_token_bitmask(3, vocab)
    assert bm.dtype == torch.int32 and bm.device.type == "cpu"
    assert tuple(bm.shape) == get_bitmask_shape(3, vocab) == (3, (vocab + 31) // 32)
    assert bool((bm == -1).all())
    assert unpack_bitmask_numpy(bm, vocab).all()


@pytest.mark.parametrize(
    ("batch", "vocab", "message"),
    [(-1, 10, "batch_size: expected an int >= 0, got -1"),
     (2, 0, "vocab_size: expected an int >= 1, got 0"),
     (2, 10.0, "vocab_size: expected an int, got float"),
     (True, 10, "batch_size: expected an int, got bool")],
)
def test_allocate_rejects_bad_sizes(batch, vocab, message):
    with pytest.raises(ValueError, match=message):
        allocate_token_bitmask(batch, vocab)


# ---------------------------------------------------------------------------------- fill


@given(
    vocab=st.integers(1, 300),
    batch=st.integers(1, 5),
    extra_words=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
@settings(max_examples=60, deadline=None)
def test_fill_matches_reference(vocab, batch, extra_words, seed):
    rng = np.random.default_rng(seed)
    masks = random_masks(rng, batch, vocab)
    none_rows = set(np.flatnonzero(rng.random(batch) < 0.3).tolist())
    sources = [None if i in none_rows else Fixed(masks[i]) for i in range(batch)]
    words = (vocab + 31) // 32 + extra_words  # wider rows: e.g. a model's padded vocabulary
    bm = random_bitmask(rng, batch + 1, words)  # one spare row, left alone
    spare = bm[batch].clone()

    fill_next_token_bitmask(sources, bm)

    want = pack_bitmask_numpy(masks, words)
    want[sorted(none_rows)] = -1
    assert np.array_equal(bm[:batch].numpy(), want)
    assert torch.equal(bm[batch], spare)


def test_fill_with_indices_writes_only_those_rows():
    rng = np.random.default_rng(1)
    masks = random_masks(rng, 2, 100)
    bm = random_bitmask(rng, 4, 4)
    before = bm.clone()
    fill_next_token_bitmask([Fixed(masks[0]), Fixed(masks[1])], bm, indices=[3, 1])
    assert np.array_equal(unpack_bitmask_numpy(bm[[3, 1]], 128)[:, :100], masks)
    assert not unpack_bitmask_numpy(bm[[3, 1]], 128)[:, 100:].any()
    assert torch.equal(bm[[0, 2]], before[[0, 2]])


def test_fill_non_contiguous_bitmask_goes_through_a_copy():
    rng = np.random.default_rng(2)
    masks = random_masks(rng, 3, 64)
    wide = torch.zeros(3, 4, dtype=torch.int32)
    view = wide[:, ::2]  # stride 2: no numpy write-through
    fill_next_token_bitmask([Fixed(m) for m in masks], view)
    assert np.array_equal(unpack_bitmask_numpy(view.contiguous(), 64), masks)
    assert not bool(wide[:, 1::2].any())


def test_fill_real_constraints_equals_allowed():
    cg = compiled("json", "gpt2")
    cs = [cg.constraint(), cg.constraint('{"a": [1, tr'), cg.constraint("[1]"), None]
    bm = allocate_token_bitmask(4, len(cg.vocab))
    fill_next_token_bitmask(cs, bm)
    got = unpack_bitmask_numpy(bm, len(cg.vocab))
    for row, c in zip(got, cs, strict=True):
        assert np.array_equal(row, c.allowed() if c is not None else np.ones_like(row))
    assert got[2, cg.vocab.eos_token_id] and not got[0, cg.vocab.eos_token_id]


def _walk_fill_bitmask(c: object, ids: list[int]) -> int:
    """fill_bitmask == packbits(allowed()) at every step (twice: the second from the cache),
    into a longer, dirty row (its tail cleared); returns the steps checked."""
    v = len(c.vocab)  # type: ignore[attr-defined]
    nb = (v + 7) // 8
    buf = np.empty(nb + 9, dtype=np.uint8)
    steps = 0
    for t in [*ids, None]:
        for _ in range(2):
            buf[:] = 0xFF
            c.fill_bitmask(buf)  # type: ignore[attr-defined]
            want = np.packbits(c.allowed(), bitorder="little")  # type: ignore[attr-defined]
            assert np.array_equal(buf[:nb], want) and not buf[nb:].any()
        steps += 1
        if t is not None:
            c.advance(t)  # type: ignore[attr-defined]
    return steps


def _greedy_ids(vocab: object, text: str) -> list[int]:
    """``text`` as the longest vocabulary tokens from the left (enough for a walk)."""
    data, ids = text.encode(), []
    while data:
        k = next(k for k in range(len(data), 0, -1)
                 if vocab.token_id(data[:k]) is not None)  # type: ignore[attr-defined]
        ids.append(vocab.token_id(data[:k]))  # type: ignore[attr-defined]
        data = data[k:]
    return ids


def test_constraint_fill_bitmask_is_allowed_packed_on_every_path():
    import gramask

    vocab = gramask.Vocabulary.bundled("gpt2")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    cgs = gramask.compile(gramask.Grammar.from_json_schema(schema), vocab, cache=False,
                          progress=False)  # contextual lexer
    cgj = compiled("json", "gpt2")  # basic lexer
    text = '{"a": 12}'
    cases = [(cgs.constraint(), text), (cgj.constraint(), text),
             (cgj.constraint(max_tokens=20), text),  # budget: packs allowed()
             (cgj.constraint('{"a": ', suffix="}"), "1234")]  # fill-in-the-middle
    for c, middle in cases:
        assert _walk_fill_bitmask(c, _greedy_ids(vocab, middle)) == len(_greedy_ids(vocab, middle)) + 1
    c = cgs.constraint(text)
    c.advance(vocab.eos_token_id)  # finished: every bit clear
    buf = np.full((len(vocab) + 7) // 8, 0xFF, dtype=np.uint8)
    c.fill_bitmask(buf)
    assert not buf.any()
    with pytest.raises(ValueError, match="at least"):
        cgs.constraint().fill_bitmask(np.zeros(10, dtype=np.uint8))


# --------------------------------------------------------------------------------- apply


@given(
    vocab=st.integers(1, 300),
    batch=st.integers(1, 4),
    pad=st.integers(-40, 40),  # logits narrower or wider than the bitmask's vocabulary
    dtype=st.sampled_from([torch.float32, torch.float16, torch.bfloat16, torch.float64]),
    chunk=st.sampled_from([1, 64, 1 << 19]),  # CPU row chunking: one row, a few, all
    seed=st.integers(0, 2**32 - 1),
    byte_masks=st.booleans(),  # the byte-mask path GPUs take, checked here on the CPU
)
@settings(max_examples=120, deadline=None)
def test_apply_matches_reference(vocab, batch, pad, dtype, chunk, seed, byte_masks):
    rng = np.random.default_rng(seed)
    width = max(1, vocab + pad)
    bm = random_bitmask(rng, batch, (vocab + 31) // 32)
    logits = torch.from_numpy(rng.standard_normal((batch, width))).to(dtype)
    want = apply_token_bitmask_numpy(logits.double().numpy(), bm)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gt, "_CPU_CHUNK_TOKENS", chunk)
        mp.setattr(gt, "_byte_masks", lambda device: byte_masks)
        apply_token_bitmask_inplace(logits, bm)
    assert np.array_equal(logits.double().numpy(), want)
    if width > 32 * bm.shape[1]:
        assert bool((logits[:, 32 * bm.shape[1] :] == NEG_INF).all())


@pytest.mark.parametrize("byte_masks", [False, True])
def test_apply_never_changes_an_allowed_logit_nan_included(byte_masks, monkeypatch):
    """Allowed logits are left alone, a NaN too; a disallowed NaN stays NaN on the CPU's
    branch-free path and becomes -inf on the byte-mask path (other devices), as in XGrammar."""
    monkeypatch.setattr(gt, "_byte_masks", lambda device: byte_masks)
    mask = np.array([[True, False, True, False] + [False] * 36])
    bm = torch.from_numpy(pack_bitmask_numpy(mask))
    logits = torch.tensor([[float("nan"), float("nan"), 1.5, 2.0] + [0.0] * 36])
    apply_token_bitmask_inplace(logits, bm)
    assert torch.isnan(logits[0, 0]) and logits[0, 2] == 1.5
    assert logits[0, 3] == NEG_INF and bool((logits[0, 4:] == NEG_INF).all())
    assert (logits[0, 1] == NEG_INF) if byte_masks else torch.isnan(logits[0, 1])


@pytest.mark.parametrize("chunk", [1, 1 << 19])
def test_apply_with_indices_touches_only_those_rows(chunk, monkeypatch):
    monkeypatch.setattr(gt, "_CPU_CHUNK_TOKENS", chunk)
    rng = np.random.default_rng(3)
    bm = random_bitmask(rng, 5, 4)
    logits = torch.randn(5, 120)
    want = apply_token_bitmask_numpy(logits.numpy(), bm, indices=[4, 1])
    apply_token_bitmask_inplace(logits, bm, indices=[4, 1])
    assert np.array_equal(logits.numpy(), want)
    logits2 = torch.randn(5, 120)
    want2 = apply_token_bitmask_numpy(logits2.numpy(), bm, indices=[0, 2])
    apply_token_bitmask_inplace(logits2, bm, indices=torch.tensor([0, 2]))
    assert np.array_equal(logits2.numpy(), want2)


def test_apply_on_a_strided_view_of_the_last_position():
    rng = np.random.default_rng(4)
    bm = random_bitmask(rng, 3, 2)
    hidden = torch.randn(3, 5, 60)
    last = hidden[:, -1, :]  # what a model's forward gives: not contiguous
    want = apply_token_bitmask_numpy(last.numpy(), bm)
    before = hidden[:, :-1].clone()
    apply_token_bitmask_inplace(last, bm)
    assert np.array_equal(hidden[:, -1].numpy(), want)
    assert torch.equal(hidden[:, :-1], before)


def test_apply_1d_logits():
    mask = np.zeros((1, 40), dtype=bool)
    mask[0, [3, 39]] = True
    bm = torch.from_numpy(pack_bitmask_numpy(mask))
    for b in (bm, bm[0]):
        logits = torch.zeros(45)
        apply_token_bitmask_inplace(logits, b)
        assert torch.isfinite(logits).nonzero().flatten().tolist() == [3, 39]


def test_apply_allows_exactly_the_filled_masks_with_none_rows():
    rng = np.random.default_rng(5)
    vocab = 1000
    masks = random_masks(rng, 3, vocab)
    bm = allocate_token_bitmask(3, vocab)
    fill_next_token_bitmask([Fixed(masks[0]), None, Fixed(masks[2])], bm)
    logits = torch.zeros(3, vocab + 24)  # padded like a model's embedding
    apply_token_bitmask_inplace(logits, bm)
    allowed = torch.isfinite(logits).numpy()
    assert np.array_equal(allowed[[0, 2], :vocab], masks[[0, 2]])
    assert allowed[1, :1024].all()  # a None row allows every id the bitmask covers
    assert not allowed[:, 1024:].any()


# -------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fill_next_token_bitmask([None], torch.full((1, 2), -1, dtype=torch.int64)),
         r"bitmask: expected dtype torch.int32, got torch.int64"),
        (lambda: fill_next_token_bitmask([None], torch.zeros(2, dtype=torch.int32)),
         r"bitmask: expected shape \(batch, ceil\(vocab_size / 32\)\), got \(2,\)"),
        (lambda: fill_next_token_bitmask([None, None], torch.zeros(1, 2, dtype=torch.int32)),
         r"bitmask: expected at least 2 rows .* got 1"),
        (lambda: fill_next_token_bitmask([Fixed(np.ones(65, bool))],
                                         torch.zeros(1, 2, dtype=torch.int32)),
         r"expected at least 3 int32 words for a mask of 65 tokens, got 2"),
        (lambda: fill_next_token_bitmask([Fixed(np.ones(8, np.int8))],
                                         torch.zeros(1, 1, dtype=torch.int32)),
         r"allowed\(\) must return a 1-D numpy bool array; got ndarray of dtype int8"),
        (lambda: fill_next_token_bitmask([None], torch.zeros(2, 1, dtype=torch.int32), [5]),
         r"indices: expected values in \[0, 2\), got 5"),
        (lambda: fill_next_token_bitmask([None], torch.zeros(2, 1, dtype=torch.int32), [0, 1]),
         r"indices: expected 1 entries .* got 2"),
        (lambda: apply_token_bitmask_inplace(torch.zeros(2, 8), torch.zeros(2, 1)),
         r"bitmask: expected dtype torch.int32, got torch.float32"),
        (lambda: apply_token_bitmask_inplace(torch.zeros(2, 8, dtype=torch.int64),
                                             torch.zeros(2, 1, dtype=torch.int32)),
         r"logits: expected a floating point dtype, got torch.int64"),
        (lambda: apply_token_bitmask_inplace(torch.zeros(3, 8),
                                             torch.zeros(2, 1, dtype=torch.int32)),
         r"bitmask: expected 3 rows \(logits batch size\), got shape \(2, 1\)"),
        (lambda: apply_token_bitmask_inplace(torch.zeros(2, 2, 8),
                                             torch.zeros(2, 1, dtype=torch.int32)),
         r"logits: expected shape \(batch, vocab\), got \(2, 2, 8\)"),
        (lambda: apply_token_bitmask_inplace(
            torch.zeros(2, 8), torch.zeros(2, 1, dtype=torch.int32, device="meta")),
         r"bitmask: expected device cpu \(the logits' device\), got meta"),
        (lambda: apply_token_bitmask_inplace(torch.zeros(2, 8),
                                             torch.zeros(2, 1, dtype=torch.int32), [2]),
         r"indices: expected values in \[0, 2\), got 2"),
        (lambda: apply_token_bitmask_inplace(np.zeros((2, 8)),
                                             torch.zeros(2, 1, dtype=torch.int32)),
         r"logits: expected a torch.Tensor, got ndarray"),
    ],
)
def test_errors_say_expected_and_got(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_missing_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` fail
    monkeypatch.delitem(sys.modules, "gramask.torch")
    with pytest.raises(ImportError, match=r"pip install 'gramask\[torch\]'"):
        importlib.import_module("gramask.torch")
