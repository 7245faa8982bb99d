"""AdapTrack: sampling from the model conditioned on the constraint, by backtracking."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from ..runtime.core.constraint import Constraint
from ._common import (
    NoValidSequenceError,
    SamplingLimitError,
    _check_common,
    _log_probs,
    _Sampler,
    log,
)

DEFAULT_MAX_LM_CALLS = 1024
"""LM calls one :meth:`AdapTrackSampler.sample` may make by default (see its docstring)."""

PROGRESS_EVERY = 256
"""LM calls between two progress reports of one sample (callback; a log line every 4th)."""


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


class AdapTrackSampler(_Sampler):
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
        LM calls one sample may make; :class:`SamplingLimitError` when exceeded. ``None``:
        no limit. The default, 1,024, is 20 times what the measured problems need (the
        binary problem at most 10 calls per sample, the list problem 50, a random GPT-2 on
        the JSON grammar with a 16-token limit about 40 on average; ``docs/sampling.md``)
        and stops a hopeless search (a random model under a tight token budget, where a call
        with its backtrack costs 0.1-0.35 s at GPT-2's vocabulary) after minutes instead of
        hours. A sample of ``n`` tokens needs at least ``n`` calls with a fresh tree: raise
        it for long samples.
    progress
        Called as ``progress(lm_calls, backtracks)`` every 256 LM calls of one sample
        (``lm_calls`` counted for this sample, ``backtracks`` over the sampler's life); a
        long search also logs a line on the ``gramask.sampling`` logger (INFO) every 1,024.
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
        max_lm_calls: int | None = DEFAULT_MAX_LM_CALLS,
        max_cached_bytes: int = 1 << 28,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        super().__init__(lm, constraint, prompt, temperature)
        if max_backtrack is not None and (
            isinstance(max_backtrack, bool) or not isinstance(max_backtrack, int)
            or max_backtrack < 0
        ):
            raise ValueError(f"max_backtrack: expected None or an int >= 0, got {max_backtrack!r}")
        if not 0 <= min_backtrack_prob < 1:
            raise ValueError(
                f"min_backtrack_prob: expected a number in [0, 1), got {min_backtrack_prob!r}"
            )
        if max_lm_calls is not None and (
            isinstance(max_lm_calls, bool) or not isinstance(max_lm_calls, int)
            or max_lm_calls < 1
        ):
            raise ValueError(f"max_lm_calls: expected None or an int >= 1, got {max_lm_calls!r}")
        if progress is not None and not callable(progress):
            raise ValueError(f"progress: expected None or a callable, got {progress!r}")
        self.progress = progress
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
        reported = 0
        root = self._root
        while True:
            if root.expanded and root.q <= 0.0:
                raise NoValidSequenceError(
                    "the model gives probability 0 to every sequence the constraint accepts"
                )
            used = self._lm.calls - start_calls
            if self.max_lm_calls is not None and used > self.max_lm_calls:
                raise SamplingLimitError(
                    f"AdapTrack used more than max_lm_calls={self.max_lm_calls} LM calls "
                    f"for one sample ({self.backtracks} backtracks so far, estimated "
                    f"probability of completing {root.q:.3g}); the model rarely completes "
                    "this constraint: raise max_lm_calls (None: no limit), loosen the token "
                    "budget, or bound backtracking (max_backtrack=)"
                )
            if used >= reported + PROGRESS_EVERY:
                reported = used - used % PROGRESS_EVERY
                if self.progress is not None:
                    self.progress(used, self.backtracks)
                if reported % (4 * PROGRESS_EVERY) == 0:
                    log.info("AdapTrack: %d LM calls for this sample, %d backtracks, "
                             "Q(root)=%.3g", used, self.backtracks, root.q)
            # COLLECTSEQUENCE: follow N from the root to a new (unexpanded) prefix or the end
            node: _Node = root
            path: list[int] = []
            while node.expanded:
                if node.epoch != self._epoch:
                    self._draw_next(node, path, exclude=-1)
                if node.nxt < 0:
                    # every continuation here has weight 0 in floating point (the model's
                    # probabilities underflow) though Q is not 0: nothing can be drawn, and
                    # walking down again would meet the same node (no LM call in between)
                    raise NoValidSequenceError(
                        "the model gives probability 0 (after floating-point underflow) to "
                        f"every continuation the constraint allows after {len(path)} tokens"
                    )
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
        if tok < 0:  # rounding drift: no unexplored token has weight left
            node.rest = 0.0
            if explored > 0.0:
                self._draw_next(node, path, exclude)
            return
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
    """The index where the running sum of the weights ``w`` (>= 0) passes ``u * sum(w)``;
    -1 when no weight is positive (never an index of weight 0: it would be a forbidden token).

    Two levels, since a cumulative sum over 151k floats costs milliseconds: the block sums
    (one vectorised pass), then the running sum inside one block. The index returned always
    has a positive weight (rounding at a block's end moves to the nearest positive one).
    """
    sums = np.add.reduceat(w, np.arange(0, w.shape[0], _BLOCK)).astype(np.float64)
    cb = np.cumsum(sums)
    if not cb[-1] > 0.0:
        return -1
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
    if not blk[i] > 0:  # the block sum was rounding noise: search the whole vector
        nz = np.flatnonzero(w > 0)
        return int(nz[-1]) if len(nz) else -1
    return b * _BLOCK + i
