"""Exact references: the checked baseline sampler and the distribution by enumeration."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ..runtime.core.constraint import Constraint
from ._common import (
    _LM,
    NoValidSequenceError,
    SamplingLimitError,
    _check_common,
    _check_constraint,
    _log_probs,
    _Sampler,
)


# ----------------------------------------------------------------------------- baseline
class CheckedSampler(_Sampler):
    """The exact but costly baseline: sample freely, keep only what the grammar accepts.

    Draws from the unmasked model (with ``temperature``) until EOS or ``max_new_tokens``
    tokens. The attempt is kept if the constraint allows every token drawn and, when EOS was
    drawn, the text is complete; otherwise it is thrown away and another is drawn. A token the
    constraint rejects ends an attempt at once: the same distribution as checking at the end
    (no continuation of a rejected prefix can be kept), with fewer LM calls.
    """

    def __init__(
        self,
        lm: Any,
        constraint: Constraint,
        *,
        seed: int = 0,
        prompt: Sequence[int] = (),
        temperature: float = 1.0,
        max_attempts: int = 10_000,
    ) -> None:
        super().__init__(lm, constraint, prompt, temperature)
        self.max_attempts = int(max_attempts)
        self._rng = np.random.default_rng(int(seed))
        self.attempts = 0

    def sample(self, max_new_tokens: int = 64) -> list[int]:
        """One accepted sequence, EOS excluded.

        Raises
        ------
        SamplingLimitError
            ``max_attempts`` attempts in a row were refused.
        """
        _check_common(self.temperature, max_new_tokens)
        eos = self.constraint.vocab.eos_token_id
        for _ in range(self.max_attempts):
            self.attempts += 1
            c = self.constraint.clone()
            out: list[int] = []
            ok = True
            while len(out) < max_new_tokens:
                logits = self._lm.logits(self.prompt + out)
                probs = torch.exp(_log_probs(logits, self.temperature, logits.shape[0]))
                p = probs.to(torch.float64).cpu().numpy()
                tok = int(self._rng.choice(len(p), p=p / p.sum()))
                if not c.is_allowed(tok):  # also: EOS while incomplete, ids past the vocab
                    ok = False
                    break
                c.advance(tok)
                if tok == eos:
                    break
                out.append(tok)
            if ok:
                self.last_ended = c.is_finished
                return out
        raise SamplingLimitError(
            f"no accepted sample in max_attempts={self.max_attempts} attempts"
        )


# ----------------------------------------------------------------------- exact reference
def exact_distribution(
    lm: Any,
    constraint: Constraint,
    *,
    max_new_tokens: int,
    prompt: Sequence[int] = (),
    temperature: float = 1.0,
    max_sequences: int = 100_000,
) -> dict[tuple[int, ...], float]:
    """The model's distribution conditioned on the constraint, by enumeration (small cases).

    The outcomes are the token sequences (EOS excluded from the key) that end with EOS where
    the constraint is complete within ``max_new_tokens`` draws, and the allowed sequences of
    exactly ``max_new_tokens`` tokens (truncated); each with probability
    ``P(s) / sum(P(s') for outcomes s')``: what :class:`AdapTrackSampler` and
    :class:`CheckedSampler` sample from. For tests and evaluations of samplers.

    Raises
    ------
    ValueError
        More than ``max_sequences`` prefixes to visit, or bad arguments.
    NoValidSequenceError
        Every outcome has probability 0.
    """
    c = _check_constraint(constraint).clone()
    _check_common(temperature, max_new_tokens)
    v = len(c.vocab)
    runner = _LM(lm, v)
    start = [int(t) for t in prompt] or ([runner.bos()] if runner.hf else [])
    eos = int(c.vocab.eos_token_id)  # type: ignore[arg-type]
    out: dict[tuple[int, ...], float] = {}
    visited = 0

    def walk(path: list[int], logp: float) -> None:
        nonlocal visited
        visited += 1
        if visited > max_sequences:
            raise ValueError(f"max_sequences: more than {max_sequences} prefixes to enumerate")
        if len(path) >= max_new_tokens:
            out[tuple(path)] = logp
            return
        lp = _log_probs(runner.logits(start + path), temperature, v).double().cpu().numpy()
        allowed = c.allowed() & (lp > -np.inf)
        for t_ in np.flatnonzero(allowed):
            t = int(t_)
            if t == eos:
                out[tuple(path)] = logp + float(lp[t])
                continue
            c.advance(t)
            path.append(t)
            walk(path, logp + float(lp[t]))
            path.pop()
            c.rollback(1)

    walk([], 0.0)
    out = {k: x for k, x in out.items() if x > -math.inf}
    if not out:
        raise NoValidSequenceError(
            "the model gives probability 0 to every sequence the constraint accepts"
        )
    top = max(out.values())
    total = sum(math.exp(x - top) for x in out.values())
    return {s: math.exp(x - top) / total for s, x in out.items()}


def kl_divergence(samples: Sequence[Sequence[int]], exact: dict[tuple[int, ...], float]) -> float:
    """KL(empirical distribution of ``samples`` || ``exact``), in nats.

    The paper's measure (KL of the sampled distribution from the target). Finite-sample noise
    makes it positive even for an exact sampler: compare samplers at equal sample counts.
    ``inf`` if a sample has zero probability under ``exact``.
    """
    counts: dict[tuple[int, ...], int] = {}
    for s in samples:
        key = tuple(int(t) for t in s)
        counts[key] = counts.get(key, 0) + 1
    n = sum(counts.values())
    if n == 0:
        raise ValueError("samples: expected at least one")
    kl = 0.0
    for key, k in counts.items():
        p = exact.get(key, 0.0)
        if p <= 0.0:
            return math.inf
        q = k / n
        kl += q * math.log(q / p)
    return kl
