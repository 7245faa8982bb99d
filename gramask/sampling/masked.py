"""Masked sampling: one sequence (:class:`ConstrainedSampler`) or a batch (:func:`sample_batch`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..runtime.core.constraint import Constraint
from ..torch import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask
from ._common import (
    _LM,
    NoValidSequenceError,
    _check_common,
    _check_constraint,
    _Sampler,
    check_finite,
    forward_with_cache,
)


# ------------------------------------------------------------------------ constrained
def _warp(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float
) -> torch.Tensor:
    """(B, V) masked logits -> (B, V) probabilities after temperature, top-k, top-p."""
    z = logits / temperature if temperature != 1.0 else logits.clone()
    if top_k and top_k < z.shape[-1]:
        kth = torch.topk(z, top_k, dim=-1).values[..., -1:]
        z.masked_fill_(z < kth, float("-inf"))
    probs = torch.softmax(z, dim=-1)
    if top_p < 1.0:
        sorted_p, order = torch.sort(probs, dim=-1, descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass strictly above each token
        drop = before >= top_p  # keeps the smallest set whose mass reaches top_p
        sorted_p.masked_fill_(drop, 0.0)
        probs = torch.zeros_like(probs).scatter_(-1, order, sorted_p)
    return probs


def _check_warpers(temperature: float, top_k: int, top_p: float) -> None:
    _check_common(temperature)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0 (0 = off), got {top_k!r}")
    if not (isinstance(top_p, (int, float)) and 0 < top_p <= 1):
        raise ValueError(f"top_p: expected a number in (0, 1], got {top_p!r}")


class ConstrainedSampler(_Sampler):
    """Token-by-token masked sampling (the usual constrained decoding).

    Parameters
    ----------
    lm
        A transformers causal LM or a callable ``list[int] -> 1-D logits``.
    constraint
        The start state; each :meth:`sample` works on a clone of it.
    seed
        Seeds this sampler's own ``torch.Generator``: equal seeds give equal samples.
    prompt
        Token ids the model sees before the generated ones (not fed to the constraint: give
        the text the grammar must continue as the constraint's ``prefix``).
    temperature, top_k, top_p, greedy
        Applied after masking, in this order (as ``generate`` does with a logits processor).
        ``greedy`` takes the most likely allowed token.

    Raises
    ------
    ValueError
        A bad argument (the message says which).
    """

    def __init__(
        self,
        lm: Any,
        constraint: Constraint,
        *,
        seed: int = 0,
        prompt: Sequence[int] = (),
        temperature: float = 1.0,
        top_k: int = 0,
        top_p: float = 1.0,
        greedy: bool = False,
    ) -> None:
        super().__init__(lm, constraint, prompt, temperature)
        _check_warpers(temperature, top_k, top_p)
        self.top_k, self.top_p, self.greedy = top_k, top_p, greedy
        self._gen = torch.Generator().manual_seed(int(seed))
        self._bitmask: torch.Tensor | None = None

    def sample(self, max_new_tokens: int = 64) -> list[int]:
        """One sequence: its token ids, EOS excluded.

        It ends when EOS is drawn (``last_ended`` is then True), or after ``max_new_tokens``
        tokens (then it may be an incomplete program, as with ``generate``). Never returns a
        token the constraint rejects.

        Raises
        ------
        NoValidSequenceError
            The model gives probability 0 (a ``-inf`` logit) to every allowed token.
        """
        _check_common(self.temperature, max_new_tokens)
        self.last_ended = False
        c = self.constraint.clone()
        eos = c.vocab.eos_token_id
        out: list[int] = []
        for _ in range(max_new_tokens):
            logits = self._lm.logits(self.prompt + out)[: self.vocab_size].clone().unsqueeze(0)
            bm = self._bitmask
            if bm is None or bm.device != logits.device:
                bm = self._bitmask = allocate_token_bitmask(1, self.vocab_size, logits.device)
            fill_next_token_bitmask([c], bm)
            apply_token_bitmask_inplace(logits, bm)
            tok = _draw(logits, self.temperature, self.top_k, self.top_p, self.greedy,
                        self._gen)[0]
            c.advance(tok)
            if tok == eos:
                self.last_ended = True
                break
            out.append(tok)
        return out


def _draw(
    logits: torch.Tensor, temperature: float, top_k: int, top_p: float, greedy: bool,
    gen: torch.Generator,
) -> list[int]:
    if not bool((logits.amax(dim=-1) > float("-inf")).all()):
        raise NoValidSequenceError(
            "the model gives probability 0 (logit -inf) to every token the constraint allows"
        )
    if greedy:
        return [int(i) for i in torch.argmax(logits, dim=-1)]
    return _categorical(_warp(logits, temperature, top_k, top_p), gen)


def _categorical(probs: torch.Tensor, gen: torch.Generator) -> list[int]:
    """One draw per row of (B, V) probabilities, by inverting the cumulative sum.

    ``torch.multinomial`` costs ~5 ms per row at 151k tokens on this CPU; a float64 cumsum
    and a binary search cost a tenth of that. The token found always has probability > 0
    (the cumulative sum rises there); rounding at the very end falls back to multinomial.
    """
    cum = torch.cumsum(probs, dim=-1, dtype=torch.float64)
    u = torch.rand(probs.shape[0], 1, generator=gen, dtype=torch.float64).to(probs.device)
    idx = torch.searchsorted(cum, u * cum[:, -1:], right=True).clamp_(max=probs.shape[-1] - 1)
    out = [int(i) for i in idx.flatten()]
    for r, i in enumerate(out):
        if not probs[r, i] > 0:
            out[r] = int(torch.multinomial(probs[r], 1, generator=gen))
    return out


def sample_batch(
    lm: Any,
    constraints: Sequence[Constraint],
    prompts: Sequence[Sequence[int]] | None = None,
    *,
    max_new_tokens: int = 64,
    seed: int = 0,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    greedy: bool = False,
) -> list[list[int]]:
    """Masked sampling for several sequences at once: one LM call per step for the batch.

    Masks go through :func:`gramask.torch.fill_next_token_bitmask` and
    :func:`~gramask.torch.apply_token_bitmask_inplace` on the logits' device. A transformers
    model gets the prompts left-padded in one forward pass per step (KV cache reused); a
    callable is called once per live row. Returns one list of ids per constraint, EOS
    excluded: a row shorter than ``max_new_tokens`` ended with EOS, a row of exactly
    ``max_new_tokens`` was cut off. The constraints themselves are not changed (clones are
    advanced).

    Raises
    ------
    ValueError
        Bad arguments, or ``prompts`` of a different length than ``constraints``.
    """
    cs = [_check_constraint(c).clone() for c in constraints]
    if not cs:
        return []
    _check_warpers(temperature, top_k, top_p)
    _check_common(temperature, max_new_tokens)
    v = len(cs[0].vocab)
    if any(len(c.vocab) != v for c in cs):
        raise ValueError("constraints: expected one vocabulary for the whole batch")
    runner = _LM(lm, v)
    n = len(cs)
    if prompts is None:
        prompts = [[] for _ in range(n)]
    if len(prompts) != n:
        raise ValueError(f"prompts: expected {n} (one per constraint), got {len(prompts)}")
    rows = [[int(t) for t in p] for p in prompts]
    if runner.hf:
        bos = runner.bos()
        rows = [r or [bos] for r in rows]
    eos = cs[0].vocab.eos_token_id
    gen = torch.Generator().manual_seed(int(seed))
    bitmask: torch.Tensor | None = None
    out: list[list[int]] = [[] for _ in range(n)]
    live = list(range(n))
    step_logits = _batch_stepper(runner, rows) if runner.hf else None
    for _ in range(max_new_tokens):
        if not live:
            break
        if step_logits is not None:
            logits = step_logits([out[i][-1] if out[i] else None for i in range(n)])
            check_finite(logits[live])  # the callable path is checked by runner.logits
            logits = logits[:, :v]
        else:
            logits = torch.zeros(n, v)  # ended rows stay 0: masked as "anything", never drawn
            for i in live:
                logits[i] = runner.logits(rows[i] + out[i])[:v]
        logits = logits.clone()
        if bitmask is None:  # on the logits' device: the model's, for a transformers model
            bitmask = allocate_token_bitmask(n, v, device=logits.device)
        live_set = set(live)
        fill_next_token_bitmask([cs[i] if i in live_set else None for i in range(n)], bitmask)
        apply_token_bitmask_inplace(logits, bitmask)
        toks = _draw(logits[live], temperature, top_k, top_p, greedy, gen)
        still = []
        for i, tok in zip(live, toks, strict=True):
            cs[i].advance(tok)
            if tok != eos:
                out[i].append(tok)
                still.append(i)
        # a finished row keeps being fed (its last token again); its logits are ignored
        live = still
    return out


def _batch_stepper(
    runner: _LM, prompts: list[list[int]]
) -> Callable[[list[int | None]], torch.Tensor]:
    """Batched forward passes over left-padded prompts with one KV cache for the batch."""
    from transformers import DynamicCache

    model = runner.lm
    dev = model.device
    width = max(len(p) for p in prompts)
    pad = runner.bos()
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=dev)
    attn = torch.tensor(
        [[0] * (width - len(p)) + [1] * len(p) for p in prompts], dtype=torch.long, device=dev
    )
    state: dict[str, Any] = {"cache": DynamicCache(), "attn": attn, "first": True}
    last_tok = [p[-1] for p in prompts]

    def step(new: list[int | None]) -> torch.Tensor:
        if state["first"]:
            inp, attn_now = ids, state["attn"]
            state["first"] = False
        else:
            toks = [t if t is not None else last_tok[i] for i, t in enumerate(new)]
            for i, t in enumerate(toks):
                last_tok[i] = t
            inp = torch.tensor(toks, device=dev).unsqueeze(1)
            attn_now = torch.cat(
                [state["attn"], torch.ones(len(toks), 1, dtype=torch.long, device=dev)], dim=1
            )
            state["attn"] = attn_now
        pos = (attn_now.cumsum(-1) - 1).clamp(min=0)[:, -inp.shape[1] :]
        runner.calls += 1
        with torch.no_grad():
            out, state["cache"] = forward_with_cache(
                model, state["cache"], input_ids=inp, attention_mask=attn_now, position_ids=pos
            )
        last: torch.Tensor = out.logits[:, -1].detach().to(torch.float32)
        return last

    return step
