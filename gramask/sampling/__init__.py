"""Samplers over a language model under a gramask constraint.

Three ways to draw token sequences that the grammar accepts, over the same LM interface:

* :class:`ConstrainedSampler` masks each step's logits (greedy, temperature, top-k, top-p).
  Fast, but it *distorts* the model's distribution: it commits to prefixes the model would
  have abandoned had it known where they lead (a prefix with little valid mass behind it keeps
  its full probability).
* :class:`AdapTrackSampler` samples from the model's distribution *conditioned on the
  constraint*: Algorithm 2 of "AdapTrack: Constrained Decoding without Distorting LLM's Output
  Intent" (Yongmin Li, Ge Li, Jia Li, Zhi Jin). It keeps a prefix tree with an estimate
  ``Q[x]`` of the probability that prefix ``x`` can still be completed, refines it with every
  LM call, and backtracks by rejection sampling when an estimate drops. The tree persists
  across :meth:`AdapTrackSampler.sample` calls, so later samples get closer to the exact
  conditional distribution.
* :class:`CheckedSampler` is the baseline: sample freely, reject what the grammar refuses
  (exact, but it may need very many LM calls).

The LM is a Hugging Face causal LM (``transformers.PreTrainedModel``; its KV cache is reused
across steps and cropped, not recomputed, on backtracking) or any callable mapping the token
ids so far (prompt included, a ``list[int]``) to 1-D logits over at least ``len(vocab)`` ids.
Logits past ``len(vocab)`` (padded embeddings) are never sampled.

Length: every sampler draws at most ``max_new_tokens`` tokens, EOS included. A sequence that
reaches the limit without EOS is returned as it is (``last_ended`` is False), as ``generate``
does; give the constraint a token budget (``max_tokens=``) to make every sample end complete.
AdapTrack and the checked baseline treat such a truncated sequence as an outcome like any
other: they sample from the model's distribution over at most ``max_new_tokens`` tokens,
conditioned on every token being allowed and on the text being complete where EOS is drawn.

Every sampler works from a *copy* of the constraint it is given: the constraint is the start
state (its prefix, suffix and budget are respected through the ``Constraint`` API only) and is
never changed, so one sampler can draw many samples.

:func:`sample_batch` decodes several prompts at once with the packed bitmasks of
:mod:`gramask.torch`.

This module imports torch; ``import gramask`` does not.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401  (the clear message below, before any submodule)
except ImportError as exc:
    raise ImportError(
        "gramask.sampling needs PyTorch, which is not installed: pip install 'gramask[torch]'"
    ) from exc

from ._common import NoValidSequenceError, SamplingLimitError
from .adaptrack import AdapTrackSampler
from .masked import ConstrainedSampler, sample_batch
from .reference import CheckedSampler, exact_distribution, kl_divergence

__all__ = [
    "AdapTrackSampler",
    "CheckedSampler",
    "ConstrainedSampler",
    "NoValidSequenceError",
    "SamplingLimitError",
    "exact_distribution",
    "kl_divergence",
    "sample_batch",
]
