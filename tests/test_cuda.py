"""The torch paths on a CUDA device: bitmasks, the logits processor, the samplers, pool rows.

The code is the same torch code on every device; these tests check that it stays so (no tensor
left on the CPU, no device mismatch, the same masks as the CPU reference). They are skipped
where torch sees no CUDA device, which is CI's case; ``GRAMASK_TEST_DEVICE=cpu`` runs them on
the CPU to check the tests themselves.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

import gramask
from gramask.integrations.transformers import GramaskLogitsProcessor
from gramask.sampling import AdapTrackSampler, ConstrainedSampler, sample_batch
from gramask.torch import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    apply_token_bitmask_numpy,
    fill_next_token_bitmask,
)

from ._support import biased_json_gpt2, compiled, decode

DEVICE = os.environ.get("GRAMASK_TEST_DEVICE") or ("cuda" if torch.cuda.is_available() else "")
pytestmark = pytest.mark.skipif(
    not DEVICE, reason="no CUDA device (GRAMASK_TEST_DEVICE=cpu runs these on the CPU)"
)

PREFIXES = ["", '{"a": ', "[1, ", '{"k": [tr', '"str', "[[{}, "]


@pytest.fixture(scope="module")
def cg() -> gramask.CompiledGrammar:
    return compiled("json", "gpt2")


@pytest.fixture(scope="module")
def model(cg):
    """The biased random GPT-2 of tests/test_sampling.py, on the device."""
    return biased_json_gpt2(cg).to(DEVICE)


def check_sample(cg: gramask.CompiledGrammar, ids: list[int], prefix: str, ended: bool) -> None:
    c = cg.constraint(prefix=prefix)
    for t in ids:
        c.advance(t)  # raises if a sample broke the grammar
    if ended:
        assert c.is_complete()
        json.loads(decode(cg, ids, prefix))


# ------------------------------------------------------------------------- bitmask fill/apply
def test_fill_on_the_device_equals_the_cpu_fill(cg):
    cs = [cg.constraint(prefix=p) for p in PREFIXES]
    v = len(cg.vocab)
    on_cpu = allocate_token_bitmask(len(cs), v)
    fill_next_token_bitmask(cs, on_cpu)
    on_dev = allocate_token_bitmask(len(cs), v, device=DEVICE)
    assert on_dev.device.type == torch.device(DEVICE).type
    fill_next_token_bitmask(cs, on_dev)
    assert torch.equal(on_dev.cpu(), on_cpu)
    some = allocate_token_bitmask(len(cs), v, device=DEVICE)
    fill_next_token_bitmask([cs[4], cs[1]], some, indices=[4, 1])
    want = allocate_token_bitmask(len(cs), v)
    want[[4, 1]] = on_cpu[[4, 1]]
    assert torch.equal(some.cpu(), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("pad", [-5, 0, 64])  # logits narrower or wider than the vocabulary
def test_apply_on_the_device_equals_the_reference(cg, dtype, pad):
    cs = [cg.constraint(prefix=p) for p in PREFIXES]
    v = len(cg.vocab)
    bm = allocate_token_bitmask(len(cs), v, device=DEVICE)
    fill_next_token_bitmask(cs, bm)
    gen = torch.Generator().manual_seed(7)
    logits = torch.randn(len(cs), v + pad, generator=gen).to(dtype)
    want = apply_token_bitmask_numpy(logits.double().numpy(), bm.cpu())
    on_dev = logits.to(DEVICE)
    apply_token_bitmask_inplace(on_dev, bm)
    assert np.array_equal(on_dev.double().cpu().numpy(), want)
    finite = torch.isfinite(on_dev[:, : min(v, v + pad)]).cpu().numpy()
    for row, c in zip(finite, cs, strict=True):
        assert np.array_equal(row, c.allowed()[: row.shape[0]])


def test_apply_with_indices_and_on_a_strided_view(cg):
    cs = [cg.constraint(prefix=p) for p in PREFIXES[:3]]
    v = len(cg.vocab)
    bm = allocate_token_bitmask(3, v, device=DEVICE)
    fill_next_token_bitmask(cs, bm)
    hidden = torch.randn(3, 4, v, device=DEVICE)
    last = hidden[:, -1, :]  # a model's last position: not contiguous
    before = hidden[:, :-1].clone()
    want = apply_token_bitmask_numpy(last.cpu().numpy(), bm.cpu(), indices=[2, 0])
    apply_token_bitmask_inplace(last, bm, indices=torch.tensor([2, 0], device=DEVICE))
    assert np.array_equal(hidden[:, -1].cpu().numpy(), want)
    assert torch.equal(hidden[:, :-1], before)


def test_pool_rows_reach_the_device(cg):
    """A ConstraintPool's shared-memory rows, sent to the device and applied, allow exactly
    what each request's constraint allows."""
    from gramask.serving import ConstraintPool

    with ConstraintPool({"json": cg}, workers=1) as pool:
        for i, p in enumerate(PREFIXES):
            pool.add(str(i), "json", prefix=p)
        rows = pool.fill([str(i) for i in range(len(PREFIXES))])
    logits = torch.zeros(len(PREFIXES), len(cg.vocab), device=DEVICE)
    apply_token_bitmask_inplace(logits, torch.from_numpy(np.array(rows)).to(DEVICE))
    allowed = torch.isfinite(logits).cpu().numpy()
    for row, p in zip(allowed, PREFIXES, strict=True):
        assert np.array_equal(row, cg.constraint(prefix=p).allowed())


# ------------------------------------------------------------------ a model on the device
def test_generate_with_the_logits_processor(cg, model):
    """``model.generate`` on the device, with prefixes, a suffix and budgets: every row that
    ended, and every row the budget closed, is a JSON document."""
    from transformers import GenerationConfig, LogitsProcessorList

    eos = cg.vocab.eos_token_id
    prefixes = ["", '{"a": ', "[1, ", '{"k": [']
    suffixes = [None, ', "b": 2}', "]", None]
    for max_tokens in (None, 8):
        proc = GramaskLogitsProcessor.from_compiled(cg, 4, prefix=prefixes, suffix=suffixes,
                                                    max_tokens=max_tokens)
        prompt = torch.tensor([[eos, 5, 6]] * 4, device=DEVICE)
        torch.manual_seed(3)
        out = model.generate(
            prompt, attention_mask=torch.ones_like(prompt),
            logits_processor=LogitsProcessorList([proc]),
            generation_config=GenerationConfig(max_new_tokens=max_tokens or 24, do_sample=True,
                                               top_k=0, eos_token_id=eos, pad_token_id=eos,
                                               bos_token_id=eos),
        )
        assert out.device.type == torch.device(DEVICE).type
        ended = 0
        for row, p, s in zip(out.tolist(), prefixes, suffixes, strict=True):
            gen = row[3:]
            stop = gen.index(eos) if eos in gen else None
            if stop is None and max_tokens is None:
                continue
            ended += 1
            body = b"".join(cg.vocab.token_bytes(t) for t in gen[:stop])
            json.loads(p.encode() + body + (s or "").encode())
        assert ended, "no row ended: the check above was vacuous"


def test_samplers(cg, model):
    """Masked and AdapTrack sampling and the batched sampler with the model on the device;
    batched greedy decoding equals decoding each prompt alone."""
    prefix = '{"a": '
    ended = 0
    for sampler in (ConstrainedSampler(model, cg.constraint(prefix=prefix), seed=2),
                    AdapTrackSampler(model, cg.constraint(prefix=prefix), seed=2,
                                     max_lm_calls=400)):
        for _ in range(3):
            ids = sampler.sample(max_new_tokens=16)
            check_sample(cg, ids, prefix, sampler.last_ended)
            ended += sampler.last_ended
    assert ended
    prompts = [[5, 6, 7], [9], [cg.vocab.eos_token_id, 3, 4]]
    prefixes = ["", "[1, ", '{"k": ']
    cs = [cg.constraint(prefix=p) for p in prefixes]
    got = sample_batch(model, cs, prompts, max_new_tokens=12, greedy=True)
    for ids, c, p in zip(got, cs, prompts, strict=True):
        assert ids == ConstrainedSampler(model, c, prompt=p, greedy=True).sample(12)
    out = sample_batch(model, cs, prompts, max_new_tokens=12, seed=4, top_p=0.9)
    for ids, p in zip(out, prefixes, strict=True):
        check_sample(cg, ids, p, len(ids) < 12)
