"""Hostile model outputs for the samplers (issue 20): every sampler checks a step's logits once,
at the boundary, by the same rules, and AdapTrack never returns a token the mask forbids.

Rules pinned here (``gramask.sampling._common.as_logits`` / ``check_finite``): shape ``(V',)``
with ``V' >= V``, ``(1, V')`` or ``(1, seq, V')`` (the last position), anything else a
``ValueError``; real floating dtype (half upcast), complex or integer a ``TypeError``; NaN or
``+inf`` anywhere, or ``-inf`` everywhere, a :class:`NoValidSequenceError` before any token is
drawn.
"""

from __future__ import annotations

import logging
import zlib

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.sampling import (
    AdapTrackSampler,
    CheckedSampler,
    ConstrainedSampler,
    NoValidSequenceError,
    SamplingLimitError,
    exact_distribution,
    sample_batch,
)
from gramask.sampling.adaptrack import DEFAULT_MAX_LM_CALLS, _pick

pytestmark = pytest.mark.usefixtures("one_torch_thread")

JSON_TOKENS = ["{", "}", "[", "]", ",", ":", '"', "a", "b", '"a"', "1", "12", "0", " ",
               "true", "null", "fa", "lse", "ists", "[1", "1]", ', "', '": ']


@pytest.fixture(scope="module")
def json_small() -> gramask.CompiledGrammar:
    """The bundled JSON grammar over a small vocabulary: a model call costs microseconds."""
    vocab = gramask.Vocabulary.from_tokens([*JSON_TOKENS, "</s>"], eos_token_id=len(JSON_TOKENS))
    return gramask.compile(gramask.grammars.load("json"), vocab, progress=False, cache=False)


@pytest.fixture(scope="module")
def json_gpt2() -> gramask.CompiledGrammar:
    from ._support import compiled

    return compiled("json", "gpt2")


def width(cg: gramask.CompiledGrammar) -> int:
    return len(cg.vocab)


def samplers(lm, c):
    return [AdapTrackSampler(lm, c, seed=0), ConstrainedSampler(lm, c, seed=0),
            CheckedSampler(lm, c, seed=0, max_attempts=3)]


# ---------------------------------------------------------------- non-finite logits (rows 1-2)
def _hostile(kind: str, v: int):
    if kind == "nan":
        return lambda ids: torch.full((v,), float("nan"))
    if kind == "+inf":
        return lambda ids: torch.full((v,), float("inf"))
    if kind == "-inf":
        return lambda ids: torch.full((v,), float("-inf"))
    if kind == "one nan":
        return lambda ids: torch.zeros(v).index_fill_(0, torch.tensor([v // 2]), float("nan"))
    # a float16 model whose logits overflowed: finite ones, +inf and -inf mixed
    gen = torch.Generator().manual_seed(0)
    return lambda ids: (torch.randn(v, generator=gen) * 1e5).to(torch.float16)


KINDS = ["nan", "+inf", "-inf", "one nan", "fp16 overflow"]


@pytest.mark.parametrize("kind", KINDS)
def test_non_finite_logits_stop_every_sampler_at_the_first_call(json_gpt2, kind):
    """Issue 20 rows 1-2, on the real GPT-2 vocabulary: before, AdapTrack drew the forbidden
    token 1023 after seconds and torch.multinomial raised its own RuntimeError."""
    lm = _hostile(kind, width(json_gpt2))
    c = json_gpt2.constraint(prefix='{"a": ')
    for sampler in samplers(lm, c):
        with pytest.raises(NoValidSequenceError, match=r"lm: the model (returned|gives)"):
            sampler.sample(max_new_tokens=8)
        assert sampler.lm_calls == 1, type(sampler).__name__
    with pytest.raises(NoValidSequenceError):
        sample_batch(lm, [c, c.clone()], max_new_tokens=4)
    with pytest.raises(NoValidSequenceError):
        exact_distribution(lm, c, max_new_tokens=2)


def test_the_message_names_the_value_and_the_first_id(json_small):
    v = width(json_small)
    c = json_small.constraint()
    with pytest.raises(NoValidSequenceError, match=rf"NaN logits for 1 of {v} ids \(the first: "
                                                   rf"id {v // 2}\)"):
        ConstrainedSampler(_hostile("one nan", v), c).sample(3)
    with pytest.raises(NoValidSequenceError, match=r"\+inf logits \(a float16 overflow\?\)"):
        AdapTrackSampler(_hostile("fp16 overflow", v), c).sample(3)
    with pytest.raises(NoValidSequenceError, match=r"probability 0 .* to all"):
        AdapTrackSampler(_hostile("-inf", v), c).sample(3)


def test_a_non_finite_padding_column_counts_too(json_small):
    """Columns past the vocabulary (padded embeddings) are never drawn but enter the softmax."""
    v = width(json_small)
    lm = lambda ids: torch.cat([torch.zeros(v), torch.tensor([float("nan")])])  # noqa: E731
    with pytest.raises(NoValidSequenceError, match=f"the first: id {v}"):
        AdapTrackSampler(lm, json_small.constraint()).sample(3)


def test_minus_inf_is_probability_zero(json_small):
    """-inf on some ids is the ordinary way to say "never": those are never drawn."""
    v = width(json_small)
    banned = [json_small.vocab.token_id("1"), json_small.vocab.token_id("[1")]

    def lm(ids):
        z = torch.zeros(v)
        z[banned] = float("-inf")
        return z

    for sampler in samplers(lm, json_small.constraint(prefix="[")):
        for _ in range(5):
            try:
                ids = sampler.sample(max_new_tokens=6)
            except SamplingLimitError:
                continue
            assert not set(ids) & set(banned)


# ----------------------------------------------------------------------- shapes (row 3)
def test_model_output_shape_one_seq_v_uses_the_last_position(json_small):
    """A raw ``(1, seq, V)`` model output: the last position decides, not position 0."""
    v = width(json_small)
    first, last = json_small.vocab.token_id("{"), json_small.vocab.token_id("[")

    def lm(ids):
        z = torch.full((1, 3, v), -5.0)
        z[0, 0, first] = 10.0
        z[0, -1, last] = 10.0
        return z

    for shape in ("1sv", "1v"):
        f = lm if shape == "1sv" else (lambda ids: lm(ids)[:, -1])
        for sampler in (ConstrainedSampler(f, json_small.constraint(), greedy=True),
                        AdapTrackSampler(f, json_small.constraint(), seed=0)):
            ids = sampler.sample(max_new_tokens=1)
            assert ids == [last], shape


@pytest.mark.parametrize("shape", [(2, 24), (1, 0, 24), (3, 1, 24), (1, 1, 1, 24), ()])
def test_other_shapes_are_refused(json_small, shape):
    out = torch.zeros(shape) if shape != () else torch.tensor(0.0)
    for sampler in samplers(lambda ids: out, json_small.constraint()):
        with pytest.raises(ValueError, match=r"lm: expected logits of shape \(V,\), \(1, V\) or "
                                             r"\(1, seq, V\)"):
            sampler.sample(2)


# ----------------------------------------------------------------------- dtypes (row 4)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_logits_are_a_type_error(json_small, dtype):
    v = width(json_small)
    for sampler in samplers(lambda ids: torch.zeros(v, dtype=dtype), json_small.constraint()):
        with pytest.raises(TypeError, match=r"lm: expected real floating-point logits, got "
                                            "torch.complex"):
            sampler.sample(2)


@pytest.mark.parametrize("make", [lambda v: np.zeros(v, dtype=np.int64),
                                  lambda v: [0] * v, lambda v: torch.zeros(v, dtype=torch.bool)])
def test_integer_logits_are_a_type_error(json_small, make):
    out = make(width(json_small))
    with pytest.raises(TypeError, match="lm: expected floating-point logits"):
        ConstrainedSampler(lambda ids: out, json_small.constraint()).sample(2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_half_and_double_logits_are_read_as_float32(json_small, dtype):
    """Same samples as float32 logits with the same values (half is upcast, not refused)."""
    v = width(json_small)

    def lm32(ids):
        g = torch.Generator().manual_seed(zlib.crc32(bytes(ids)))
        return torch.randn(v, generator=g).to(dtype).to(torch.float32)

    def lm(ids):
        return lm32(ids).to(dtype)

    for cls in (AdapTrackSampler, ConstrainedSampler):
        a = cls(lm, json_small.constraint(), seed=3)
        b = cls(lm32, json_small.constraint(), seed=3)
        assert [a.sample(6) for _ in range(3)] == [b.sample(6) for _ in range(3)]


# ------------------------------------------------------- AdapTrack never returns a forbidden token
def test_pick_never_returns_a_zero_weight_index():
    assert _pick(np.zeros(3000, np.float32), 0.5) == -1
    w = np.zeros(3000, np.float32)
    w[5] = 1e-45  # a denormal: the block sums see it, nothing else does
    assert _pick(w, 0.999) == 5


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([1.0, 30.0, 1e3, 1e30]),
       neg=st.floats(0.0, 0.95), budget=st.sampled_from([None, 3, 6]))
def test_adaptrack_samples_follow_the_grammar(json_small, seed, scale, neg, budget):
    """Any finite / -inf logits, extreme scales included: every sample is accepted token by
    token, and a sample that ended is complete."""
    v = width(json_small)

    def lm(ids):
        rng = np.random.default_rng([seed, zlib.crc32(np.asarray(ids, np.int64).tobytes())])
        z = rng.normal(0.0, scale, v)
        z[rng.random(v) < neg] = -np.inf
        return z

    c = json_small.constraint(prefix="[", max_tokens=budget)
    sampler = AdapTrackSampler(lm, c, seed=seed % 1000, max_lm_calls=300)
    for _ in range(3):
        try:
            ids = sampler.sample(max_new_tokens=8)
        except (NoValidSequenceError, SamplingLimitError):
            continue
        check = c.clone()
        for t in ids:
            check.advance(t)  # TokenRejected if a sample broke the grammar
        if sampler.last_ended:
            assert check.is_complete()


# ---------------------------------------------------------------- bounded searches (row 5)
def eos_averse(v: int, eos: int):
    """A random model that almost never ends: under a token budget, only EOS is allowed at
    the end, so nearly every path is a dead end and AdapTrack searches."""

    def lm(ids):
        rng = np.random.default_rng(zlib.crc32(np.asarray(ids, np.int64).tobytes()))
        z = rng.normal(0.0, 1.0, v)
        z[eos] = -40.0
        return z

    return lm


def test_adaptrack_default_bound_ends_a_hopeless_search(json_small, caplog):
    """Issue 20 row 5, scaled down (a 24-token vocabulary instead of 50k, budget 8): before,
    ``max_lm_calls`` was unlimited and the search ran for over 10 minutes without a sign."""
    eos = json_small.vocab.eos_token_id
    c = json_small.constraint(prefix="[", max_tokens=8)
    seen: list[tuple[int, int]] = []
    sampler = AdapTrackSampler(eos_averse(width(json_small), eos), c, seed=0,
                               progress=lambda calls, back: seen.append((calls, back)))
    assert sampler.max_lm_calls == DEFAULT_MAX_LM_CALLS
    with caplog.at_level(logging.INFO, logger="gramask.sampling"), \
            pytest.raises(SamplingLimitError, match=f"max_lm_calls={DEFAULT_MAX_LM_CALLS}"):
        sampler.sample(max_new_tokens=10)
    assert sampler.lm_calls == DEFAULT_MAX_LM_CALLS + 1
    assert [calls for calls, _ in seen] == list(range(256, DEFAULT_MAX_LM_CALLS + 1, 256))
    logged = [r for r in caplog.records if "LM calls for this sample" in r.message]
    assert len(logged) == DEFAULT_MAX_LM_CALLS // 1024 >= 1


def test_max_lm_calls_is_checked(json_small):
    c = json_small.constraint()
    for bad in (0, -1, True, 2.5, "10"):
        with pytest.raises(ValueError, match="max_lm_calls"):
            AdapTrackSampler(eos_averse(width(json_small), 0), c, max_lm_calls=bad)
    with pytest.raises(ValueError, match="progress"):
        AdapTrackSampler(eos_averse(width(json_small), 0), c, progress=5)  # type: ignore[arg-type]
