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

import math
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

try:
    import torch
except ImportError as exc:
    raise ImportError(
        "gramask.sampling needs PyTorch, which is not installed: pip install 'gramask[torch]'"
    ) from exc

from .errors import GramaskError
from .runtime.constraint import Constraint
from .torch import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask

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

class NoValidSequenceError(GramaskError, RuntimeError):
    """The model gives probability 0 to every sequence the constraint accepts."""


class SamplingLimitError(GramaskError, RuntimeError):
    """A sampler used up its ``max_lm_calls`` (or ``max_attempts``) without a sample."""


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
            out = self.lm(list(ids))
            try:
                t = torch.as_tensor(out).detach().to(torch.float32).flatten().cpu()
            except (TypeError, RuntimeError, ValueError) as exc:
                raise ValueError(
                    f"lm: expected 1-D logits (a tensor or array of numbers), got "
                    f"{type(out).__name__}"
                ) from exc
            return self._width(t)
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
            out = self.lm(
                input_ids=new,
                past_key_values=self._cache,
                use_cache=True,
                position_ids=torch.arange(common, len(ids), device=self.lm.device).unsqueeze(0),
            )
        self._cache = out.past_key_values
        self._cached = list(ids)
        self._last = self._width(out.logits[0, -1].detach().to(torch.float32).cpu())
        return self._last

    def _width(self, t: torch.Tensor) -> torch.Tensor:
        if t.shape[0] < self.vocab_size:
            raise ValueError(
                f"lm: expected logits over at least {self.vocab_size} ids (the vocabulary), "
                f"got {t.shape[0]}"
            )
        return t


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


class ConstrainedSampler:
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
        self.constraint = _check_constraint(constraint)
        _check_warpers(temperature, top_k, top_p)
        self.vocab_size = len(constraint.vocab)
        self._lm = _LM(lm, self.vocab_size)
        self.prompt = [int(t) for t in prompt] or ([self._lm.bos()] if self._lm.hf else [])
        self.temperature, self.top_k, self.top_p, self.greedy = temperature, top_k, top_p, greedy
        self._gen = torch.Generator().manual_seed(int(seed))
        self._bitmask: torch.Tensor | None = None
        self.last_ended = False

    @property
    def lm_calls(self) -> int:
        """LM forward passes made so far (all samples)."""
        return self._lm.calls

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
            logits = step_logits([out[i][-1] if out[i] else None for i in range(n)])[:, :v]
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
            out = model(input_ids=inp, attention_mask=attn_now, position_ids=pos,
                        past_key_values=state["cache"], use_cache=True)
        state["cache"] = out.past_key_values
        last: torch.Tensor = out.logits[:, -1].detach().to(torch.float32)
        return last

    return step


# ----------------------------------------------------------------------------- AdapTrack
class _Node:
    """A prefix in the AdapTrack tree.

    ``q`` is Q[x], the estimate of P(constraint can be met | x); 1 until ``x`` is expanded.
    Once expanded: ``rest`` is the probability mass of the valid next tokens that have no
    child node yet (their Q is 1), ``children`` the explored ones, ``p`` each node's
    probability under its parent, and Q[x] = rest + sum(p_u * Q[x u]) over children (formula 2
    of the paper, split into the explored and the unexplored part). ``nxt`` is N[x], valid for
    the sample numbered ``epoch``.
    """

    __slots__ = ("children", "epoch", "expanded", "nxt", "p", "parent", "q", "rest",
                 "terminal", "token")

    def __init__(self, parent: _Node | None, token: int, p: float, terminal: bool) -> None:
        self.parent = parent
        self.token = token
        self.p = p
        self.terminal = terminal
        self.q = 1.0
        self.rest = 0.0
        self.children: dict[int, _Node] = {}
        self.expanded = False
        self.nxt = -1
        self.epoch = -1

    def recompute(self) -> None:
        s = self.rest
        for ch in self.children.values():
            s += ch.p * ch.q
        self.q = max(s, 0.0)


class AdapTrackSampler:
    """Samples from the LM's distribution conditioned on the constraint (AdapTrack).

    Algorithm 2 of "AdapTrack: Constrained Decoding without Distorting LLM's Output Intent"
    (Yongmin Li, Ge Li, Jia Li, Zhi Jin). A prefix tree holds Q (estimated probability that a
    prefix can be completed) and, per sample, N (the sampled next token of each visited
    prefix). Each iteration follows N from the root; at a new prefix it calls the LM, masks
    with the constraint, draws N there, and updates Q up the path; at each ancestor whose
    estimate dropped, the old N is kept with probability P_Q'(n|x) / P_Q(n|x) (rejection
    sampling), otherwise another token is drawn there, excluding the old one: a backtrack. The
    KV cache is cropped to the common prefix and the constraint rolled back, not rebuilt.

    Q persists across :meth:`sample` calls (N is drawn afresh for each), so repeated samples
    approach the exact conditional distribution: the first sample is typically as distorted as
    masked sampling where the grammar is a surprise to the model, later ones less so.

    Parameters
    ----------
    lm, constraint, seed, prompt
        As for :class:`ConstrainedSampler`.
    temperature
        The model distribution P is ``softmax(logits / temperature)``.
    max_backtrack
        The limited-distance variant (the paper's section 7.2): an ancestor more than this many
        tokens above the new prefix never backtracks voluntarily. ``None``: unlimited (exact).
        A prefix all of whose continuations are dead still backtracks (it must).
    min_backtrack_prob
        The other variant of section 7.2: a backtrack less likely than this is skipped.
    max_lm_calls
        Per sample; :class:`SamplingLimitError` when exceeded. ``None``: no limit.
    max_cached_bytes
        Memory for the per-prefix probability vectors (float32, one per expanded prefix, least
        recently used evicted); an evicted one costs an LM call if needed again.

    Notes
    -----
    A prefix of ``max_new_tokens`` tokens is an outcome (returned truncated, see the module
    docstring); give the constraint a token budget for complete programs only. Keep
    ``max_new_tokens`` the same across calls: the tree depends on it (a change resets it).
    Each LM call adds a node; the tree is never pruned (:meth:`reset` frees it).
    """

    def __init__(
        self,
        lm: Any,
        constraint: Constraint,
        *,
        seed: int = 0,
        prompt: Sequence[int] = (),
        temperature: float = 1.0,
        max_backtrack: int | None = None,
        min_backtrack_prob: float = 0.0,
        max_lm_calls: int | None = None,
        max_cached_bytes: int = 1 << 28,
    ) -> None:
        self.constraint = _check_constraint(constraint)
        _check_common(temperature)
        if max_backtrack is not None and (
            isinstance(max_backtrack, bool) or not isinstance(max_backtrack, int)
            or max_backtrack < 0
        ):
            raise ValueError(f"max_backtrack: expected None or an int >= 0, got {max_backtrack!r}")
        if not 0 <= min_backtrack_prob < 1:
            raise ValueError(
                f"min_backtrack_prob: expected a number in [0, 1), got {min_backtrack_prob!r}"
            )
        self.vocab_size = len(constraint.vocab)
        self._lm = _LM(lm, self.vocab_size)
        self.prompt = [int(t) for t in prompt] or ([self._lm.bos()] if self._lm.hf else [])
        self.temperature = float(temperature)
        self.max_backtrack = max_backtrack
        self.min_backtrack_prob = float(min_backtrack_prob)
        self.max_lm_calls = max_lm_calls
        self._rng = np.random.default_rng(int(seed))
        self._eos = int(constraint.vocab.eos_token_id)  # type: ignore[arg-type]
        self._cap = max(2, int(max_cached_bytes) // (4 * self.vocab_size))
        self._vectors: OrderedDict[_Node, np.ndarray] = OrderedDict()
        self._work = constraint.clone()
        self._work_path: list[int] = []
        self._limit: int | None = None
        self._root = _Node(None, -1, 1.0, False)
        self._epoch = 0
        self.backtracks = 0
        self.last_ended = False

    @property
    def lm_calls(self) -> int:
        """LM forward passes made so far (all samples)."""
        return self._lm.calls

    def reset(self) -> None:
        """Forget the tree (Q): the next sample starts from scratch."""
        self._root = _Node(None, -1, 1.0, False)
        self._vectors.clear()

    # ---------------------------------------------------------------------- sampling
    def sample(self, max_new_tokens: int = 64) -> list[int]:
        """One sequence the constraint accepts as complete: its token ids, EOS excluded.

        Raises
        ------
        NoValidSequenceError
            The model gives probability 0 to every sequence the constraint accepts.
        SamplingLimitError
            More than ``max_lm_calls`` LM calls were needed for this sample.
        """
        _check_common(self.temperature, max_new_tokens)
        if max_new_tokens != self._limit:
            self.reset()
            self._limit = max_new_tokens
        self._epoch += 1
        start_calls = self._lm.calls
        root = self._root
        while True:
            if root.expanded and root.q <= 0.0:
                raise NoValidSequenceError(
                    "the model gives probability 0 to every sequence the constraint accepts"
                )
            if self.max_lm_calls is not None and self._lm.calls - start_calls > self.max_lm_calls:
                raise SamplingLimitError(
                    f"AdapTrack used more than max_lm_calls={self.max_lm_calls} LM calls "
                    "for one sample"
                )
            # COLLECTSEQUENCE: follow N from the root to a new (unexpanded) prefix or the end
            node: _Node = root
            path: list[int] = []
            while node.expanded:
                if node.epoch != self._epoch:
                    self._draw_next(node, path, exclude=-1)
                if node.nxt < 0:  # dead end: only the root can be found so (checked above)
                    break
                path.append(node.nxt)
                node = node.children[node.nxt]
            if node.terminal:
                self.last_ended = True
                return path[:-1]
            if node.expanded:
                continue
            if len(path) >= max_new_tokens:  # the limit: an outcome, truncated
                self.last_ended = False
                return path
            # expand the new prefix: one LM call, the constraint's mask, then N[s] (step 9)
            old_q = node.q
            self._expand(node, path)
            self._draw_next(node, path, exclude=-1)
            self._propagate(node, old_q)

    def _propagate(self, leaf: _Node, old_q: float) -> None:
        """Steps 10-19: update Q from the leaf up, rejection-sampling each ancestor's N."""
        child, child_old_q = leaf, old_q
        dist = 0
        while child.parent is not None:
            x = child.parent
            dist += 1
            x_old_q = x.q
            x.recompute()
            if x.nxt == child.token and x.epoch == self._epoch and child_old_q != child.q:
                p_old = child.p * child_old_q / x_old_q if x_old_q > 0 else 0.0
                p_new = child.p * child.q / x.q if x.q > 0 else 0.0
                keep = p_new / p_old if p_old > 0 else 0.0
                forced = p_new <= 0.0
                limited = self.max_backtrack is not None and dist > self.max_backtrack
                if not forced and (limited or 1.0 - keep < self.min_backtrack_prob):
                    keep = 1.0
                if keep < 1.0 and self._rng.random() >= keep:
                    self.backtracks += 1
                    self._draw_next(x, self._path_to(x), exclude=child.token)
            child, child_old_q = x, x_old_q

    @staticmethod
    def _path_to(node: _Node) -> list[int]:
        toks = []
        while node.parent is not None:
            toks.append(node.token)
            node = node.parent
        return toks[::-1]

    def _expand(self, node: _Node, path: list[int]) -> None:
        w = self._weights(path)
        node.rest = float(w.sum(dtype=np.float64))
        node.expanded = True
        node.q = node.rest
        self._remember(node, w)

    def _weights(self, path: list[int]) -> np.ndarray:
        """P(u | prompt + path) for the tokens the constraint allows (0 elsewhere): float32."""
        logits = self._lm.logits(self.prompt + path)
        probs = torch.exp(_log_probs(logits, self.temperature, self.vocab_size)).cpu().numpy()
        self._sync(path)
        allowed = self._work.allowed()
        return np.where(allowed, probs, np.float32(0.0)).astype(np.float32)

    def _sync(self, path: list[int]) -> None:
        """Bring the working constraint to ``path``: roll back to the common part, advance."""
        cur = self._work_path
        k = 0
        for a, b in zip(cur, path, strict=False):
            if a != b:
                break
            k += 1
        if len(cur) > k:
            self._work.rollback(len(cur) - k)
        for t in path[k:]:
            self._work.advance(t)
        self._work_path = list(path)

    def _remember(self, node: _Node, w: np.ndarray) -> None:
        self._vectors[node] = w
        self._vectors.move_to_end(node)
        while len(self._vectors) > self._cap:
            self._vectors.popitem(last=False)

    def _vector(self, node: _Node, path: list[int]) -> np.ndarray:
        w = self._vectors.get(node)
        if w is None:  # evicted: recompute (one LM call), explored children zeroed
            w = self._weights(path)
            for t in node.children:
                w[t] = 0.0
            self._remember(node, w)
        else:
            self._vectors.move_to_end(node)
        return w

    def _draw_next(self, node: _Node, path: list[int], exclude: int) -> None:
        """N[x] ~ P_Q(. | x), excluding ``exclude`` (formula 4); -1 if x is dead."""
        node.epoch = self._epoch
        node.nxt = -1
        kids = [(t, ch.p * ch.q) for t, ch in node.children.items() if t != exclude]
        explored = sum(w for _, w in kids)
        total = explored + node.rest
        if total <= 0.0:
            return
        r = self._rng.random() * total
        if r < explored or node.rest <= 0.0:
            acc = 0.0
            for t, w in kids:
                acc += w
                if r < acc and w > 0:
                    node.nxt = t
                    return
            for t, w in reversed(kids):  # rounding: the last child with weight
                if w > 0:
                    node.nxt = t
                    return
            return
        vec = self._vector(node, path)
        tok = _pick(vec, (r - explored) / node.rest)
        p = float(vec[tok])
        child = _Node(node, tok, p, terminal=(tok == self._eos))
        node.children[tok] = child
        vec[tok] = 0.0
        node.rest = max(node.rest - p, 0.0)
        if len(node.children) % 64 == 0:  # re-anchor against rounding drift now and then
            node.rest = float(vec.sum(dtype=np.float64))
        node.nxt = tok


_BLOCK = 1024


def _pick(w: np.ndarray, u: float) -> int:
    """The index where the running sum of the weights ``w`` (>= 0) passes ``u * sum(w)``.

    Two levels, since a cumulative sum over 151k floats costs milliseconds: the block sums
    (one vectorised pass), then the running sum inside one block. The index returned always
    has a positive weight (rounding at a block's end moves to the nearest positive one).
    """
    sums = np.add.reduceat(w, np.arange(0, w.shape[0], _BLOCK)).astype(np.float64)
    cb = np.cumsum(sums)
    target = min(max(u, 0.0), 1.0) * cb[-1]
    b = min(int(np.searchsorted(cb, target, side="right")), len(cb) - 1)
    while sums[b] <= 0 and b > 0:
        b -= 1
    base = cb[b - 1] if b else 0.0
    blk = w[b * _BLOCK : (b + 1) * _BLOCK]
    cum = np.cumsum(blk, dtype=np.float64)
    i = min(int(np.searchsorted(cum, target - base, side="right")), len(blk) - 1)
    while blk[i] <= 0 and i > 0:
        i -= 1
    while blk[i] <= 0 and i < len(blk) - 1:
        i += 1
    return b * _BLOCK + i


# ----------------------------------------------------------------------------- baseline
class CheckedSampler:
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
        self.constraint = _check_constraint(constraint)
        _check_common(temperature)
        self.vocab_size = len(constraint.vocab)
        self._lm = _LM(lm, self.vocab_size)
        self.prompt = [int(t) for t in prompt] or ([self._lm.bos()] if self._lm.hf else [])
        self.temperature = float(temperature)
        self.max_attempts = int(max_attempts)
        self._rng = np.random.default_rng(int(seed))
        self.attempts = 0
        self.last_ended = False

    @property
    def lm_calls(self) -> int:
        """LM forward passes made so far (all samples)."""
        return self._lm.calls

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
