"""What the samplers share: the LM wrapper (KV cache kept and cropped), checks, errors."""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Sequence
from typing import Any

try:
    import torch
except ImportError as exc:
    raise ImportError(
        "gramask.sampling needs PyTorch, which is not installed: pip install 'gramask[torch]'"
    ) from exc

from ..errors import GramaskError
from ..runtime.core.constraint import Constraint


class NoValidSequenceError(GramaskError, RuntimeError):
    """The model gives probability 0 to every sequence the constraint accepts."""


class SamplingLimitError(GramaskError, RuntimeError):
    """A sampler used up its ``max_lm_calls`` (or ``max_attempts``) without a sample."""


log = logging.getLogger("gramask.sampling")


# ------------------------------------------------------------------ the logits boundary
def as_logits(out: Any, vocab_size: int) -> torch.Tensor:
    """What a model returned for one step, checked once: float32 ``(n,)`` with ``n >= V``.

    Shapes: ``(n,)``; ``(1, n)`` and ``(1, seq, n)`` (a model's raw output) give their last
    position; anything else (a batch of several rows) is refused, since guessing which row is
    meant would sample from the wrong distribution. Dtypes: real floating point (float16 and
    bfloat16 are upcast); complex, integer and bool logits are a ``TypeError``. Values: see
    :func:`check_finite`.

    Raises
    ------
    TypeError
        Not real floating-point logits.
    ValueError
        Not numbers, a shape other than those above, or fewer than ``V`` logits.
    NoValidSequenceError
        NaN or ``+inf`` logits, or every logit ``-inf`` (:func:`check_finite`).
    """
    if isinstance(out, torch.Tensor):
        t = out.detach()
    else:
        try:
            t = torch.as_tensor(out)
        except (TypeError, RuntimeError, ValueError) as exc:
            raise ValueError(
                f"lm: expected 1-D logits (a tensor or array of numbers), got "
                f"{type(out).__name__}"
            ) from exc
    if t.is_complex():
        raise TypeError(f"lm: expected real floating-point logits, got {t.dtype}")
    if not t.is_floating_point():
        raise TypeError(
            f"lm: expected floating-point logits (float16/bfloat16/float32/float64), got "
            f"{t.dtype}"
        )
    shape = tuple(t.shape)
    if t.dim() == 2 and shape[0] == 1:
        t = t[0]
    elif t.dim() == 3 and shape[0] == 1 and shape[1] >= 1:
        t = t[0, -1]
    elif t.dim() != 1:
        raise ValueError(
            f"lm: expected logits of shape (V,), (1, V) or (1, seq, V) (the last position is "
            f"used), got shape {shape}"
        )
    if t.shape[0] < vocab_size:
        raise ValueError(
            f"lm: expected logits over at least {vocab_size} ids (the vocabulary), "
            f"got {t.shape[0]}"
        )
    t = t.to(torch.float32).cpu()
    check_finite(t)
    return t


def check_finite(logits: torch.Tensor) -> None:
    """The one rule for non-finite logits, shared by every sampler (rows of a ``(B, n)``
    tensor checked alike): ``-inf`` means probability 0; NaN or ``+inf`` anywhere, or
    ``-inf`` everywhere, is no distribution at all, so no token can be drawn from it.

    ``+inf`` is refused rather than read as "most likely": it is what a float16 overflow
    gives, and under softmax it makes every other probability NaN.

    Raises
    ------
    NoValidSequenceError
        Naming the kind of value, how many ids hold it and the first of them.
    """
    if bool(torch.isfinite(logits).all()):
        return
    rows = logits.reshape(-1, logits.shape[-1])
    for kind, bad in (("NaN", torch.isnan(rows)), ("+inf", torch.isposinf(rows))):
        hit = bad.any(dim=-1)
        if bool(hit.any()):
            r = int(hit.nonzero()[0, 0])
            n = int(bad[r].sum())
            first = int(bad[r].nonzero()[0, 0])
            hint = " (a float16 overflow?)" if kind == "+inf" else ""
            raise NoValidSequenceError(
                f"lm: the model returned {kind} logits{hint} for {n} of {rows.shape[-1]} ids "
                f"(the first: id {first}): they define no distribution to sample from"
            )
    dead = torch.isneginf(rows).all(dim=-1)
    if bool(dead.any()):
        raise NoValidSequenceError(
            f"lm: the model gives probability 0 (logit -inf) to all {rows.shape[-1]} ids"
        )


# ------------------------------------------------------------------------------ the LM
class _LM:
    """One interface over a transformers model or a callable: ``logits(ids)`` -> float32 (V,).

    For a transformers model the KV cache holds the last sequence asked for; a new request is
    served by cropping the cache to the common prefix and running only the new tokens, so a
    backtrack of ``k`` tokens costs one forward pass over the tokens that differ.
    """

    def __init__(self, lm: Any, vocab_size: int) -> None:
        self.vocab_size = vocab_size
        self.calls = 0
        self.hf = _is_transformers_model(lm)
        if not self.hf and not callable(lm):
            raise ValueError(
                f"lm: expected a transformers causal LM or a callable ids -> logits, got "
                f"{type(lm).__name__}"
            )
        self.lm = lm
        self._cache: Any = None
        self._cached: list[int] = []
        self._last: torch.Tensor | None = None

    def bos(self) -> int:
        """The id to start from when the prompt is empty (a transformers model needs one)."""
        cfg = self.lm.config
        for name in ("bos_token_id", "eos_token_id"):
            tok = getattr(cfg, name, None)
            if isinstance(tok, list):
                tok = tok[0] if tok else None
            if tok is not None:
                return int(tok)
        raise ValueError("prompt: expected at least one token (the model has no bos_token_id)")

    def logits(self, ids: list[int]) -> torch.Tensor:
        if not self.hf:
            self.calls += 1
            return as_logits(self.lm(list(ids)), self.vocab_size)
        if ids == self._cached and self._last is not None:
            return self._last
        from transformers import DynamicCache

        common = 0
        for a, b in zip(ids, self._cached, strict=False):
            if a != b:
                break
            common += 1
        common = min(common, len(ids) - 1)  # the last token must run to give its logits
        if self._cache is None or common == 0:
            self._cache = DynamicCache()
            common = 0
        elif len(self._cached) > common:
            # transformers 5 crops by a negative count of tokens to remove
            self._cache.crop(common - len(self._cached))
        new = torch.tensor([ids[common:]], dtype=torch.long, device=self.lm.device)
        self.calls += 1
        with torch.no_grad():
            out, self._cache = forward_with_cache(
                self.lm,
                self._cache,
                input_ids=new,
                position_ids=torch.arange(common, len(ids), device=self.lm.device).unsqueeze(0),
            )
        self._cached = list(ids)
        self._last = as_logits(out.logits[0, -1], self.vocab_size)
        return self._last


def forward_with_cache(model: Any, cache: Any, **inputs: Any) -> tuple[Any, Any]:
    """One forward pass of a transformers model reusing ``cache``: (output, the updated cache).

    transformers renamed the KV-cache argument and output field ``past_key_values`` -> ``cache``
    (5.2x warns on the old name, later releases drop it); the name is read off the model's
    forward signature so both generations work.
    """
    key = _cache_keyword(model)
    out = model(**inputs, **{key: cache}, use_cache=True)
    new_cache = getattr(out, "cache", None)
    if new_cache is None:
        new_cache = out.past_key_values
    return out, new_cache


def _cache_keyword(model: Any) -> str:
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return "past_key_values"
    return "cache" if "cache" in params else "past_key_values"


def _is_transformers_model(lm: Any) -> bool:
    return isinstance(lm, torch.nn.Module) and hasattr(lm, "config") and hasattr(
        lm, "can_generate"
    )


def _log_probs(logits: torch.Tensor, temperature: float, vocab_size: int) -> torch.Tensor:
    """Log-probabilities of the model over the vocabulary (padding columns normalised over)."""
    z = logits / temperature if temperature != 1.0 else logits
    return torch.log_softmax(z, dim=-1)[..., :vocab_size]


def _check_common(temperature: float, max_new_tokens: int | None = None) -> None:
    if not (isinstance(temperature, (int, float)) and temperature > 0 and math.isfinite(
        temperature
    )):
        raise ValueError(f"temperature: expected a finite number > 0, got {temperature!r}")
    if max_new_tokens is not None and (
        isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
        or max_new_tokens < 0
    ):
        raise ValueError(f"max_new_tokens: expected an int >= 0, got {max_new_tokens!r}")


def _check_constraint(constraint: Any) -> Constraint:
    if not isinstance(constraint, Constraint):
        raise ValueError(
            f"constraint: expected a gramask Constraint, got {type(constraint).__name__}"
        )
    if constraint.is_finished:
        raise ValueError("constraint: expected one that has not consumed EOS yet")
    if constraint.vocab.eos_token_id is None:
        raise ValueError("constraint: its vocabulary has no eos_token_id, so no sample can end")
    return constraint


class _Sampler:
    """What every sampler holds: the start constraint, the LM wrapper, the prompt, the
    temperature; and what each one reports (:attr:`lm_calls`, ``last_ended``)."""

    def __init__(
        self, lm: Any, constraint: Constraint, prompt: Sequence[int], temperature: float
    ) -> None:
        self.constraint = _check_constraint(constraint)
        _check_common(temperature)
        self.vocab_size = len(constraint.vocab)
        self._lm = _LM(lm, self.vocab_size)
        self.prompt = [int(t) for t in prompt] or ([self._lm.bos()] if self._lm.hf else [])
        self.temperature = float(temperature)
        self.last_ended = False

    @property
    def lm_calls(self) -> int:
        """LM forward passes made so far (all samples)."""
        return self._lm.calls
