"""Batch rows whose constraints live in a :class:`~gramask.serving.ConstraintPool`.

An engine integration that fills one bitmask row per request and step (vLLM's logits
processor) does the work in its own process by default: pure Python holds the GIL, so a batch
costs the sum of its rows on one core. With ``workers > 0`` it hands the rows to this class
instead. The constraints then live in the pool's worker processes, and each step is one
``fill`` call that the workers answer in parallel, writing straight into a shared-memory
bitmask in the engine's layout. New requests are set up in the workers, beside the steps.

The engine-side bookkeeping (which output ids a row has seen, EOS, failures) stays with the
caller; this class only translates rows and tokens into pool calls. It imports no engine, so
it runs (and is tested) without one.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..compiled import CompiledGrammar
from ..serving import ConstraintPool, RequestError
from ..vocab import Vocabulary
from .options import RequestOptions, is_per_request

__all__ = ["PoolRow", "PoolRows"]

logger = logging.getLogger(__name__)

_ids = itertools.count()


@dataclass
class PoolRow:
    """One request's state on the engine side of the pool."""

    options: RequestOptions
    rid: int = field(default_factory=lambda: next(_ids))  # the pool's id: stable across moves
    added: bool = False  # handed to the pool (its setup may still be running there)
    ended: bool = False  # EOS was accepted: only EOS from now on
    error: str | None = None  # failed: only EOS from now on


class PoolRows:
    """Fills bitmask rows from a :class:`ConstraintPool` (see the module doc).

    Parameters
    ----------
    compiled
        Resolves a request's options to its compiled grammar (in this process: the workers
        load the grammar's artifact file, written once per grammar).
    vocab_size, eos_token_id
        The model's vocabulary: the bitmask width and the token a finished row allows.
    workers, max_batch
        The pool's worker processes and bitmask rows (the engine's most requests per step).
    vocab
        The model's vocabulary. Given, the grammars a request carries (JSON Schema, regex,
        choices) are compiled by the workers themselves, lazily, and forgotten when no request
        uses them (:meth:`ConstraintPool.add_grammar_spec`); without it they are built here
        in full and saved for the workers.
    """

    def __init__(self, compiled: Callable[[RequestOptions], CompiledGrammar], *,
                 vocab_size: int, eos_token_id: int | None, workers: int,
                 max_batch: int, vocab: Vocabulary | None = None) -> None:
        self._compiled = compiled
        self._vocab = vocab
        self.pool = ConstraintPool({}, vocab_size=vocab_size, workers=workers,
                                   max_batch=max_batch)
        eos = np.zeros(self.pool.words * 32, dtype=bool)
        if eos_token_id is not None:
            eos[eos_token_id] = True
        self._eos_row = np.packbits(eos, bitorder="little").view(np.int32)
        self.eos_token_id = eos_token_id

    @property
    def bitmask(self) -> np.ndarray:
        """The shared ``(max_batch, W)`` int32 bitmask the rows are written into."""
        return self.pool.bitmask

    def add(self, row: PoolRow) -> None:
        """Hand a request to the pool (its grammar is registered on first use)."""
        opts = row.options
        key = opts.key
        if key not in self.pool.grammar_keys:
            if self._vocab is not None and is_per_request(opts.grammar):
                self.pool.add_grammar_spec(key, opts.grammar, self._vocab)
            else:
                self.pool.add_grammar(key, self._compiled(opts))
        self.pool.add(row.rid, key, opts.prefix, opts.suffix, opts.max_tokens)
        row.added = True

    def advance(self, row: PoolRow, token_ids: Sequence[int]) -> None:
        """Queue a request's accepted tokens; EOS ends it (tokens after EOS are not sent)."""
        if row.ended or row.error is not None:
            return
        ids = list(token_ids)
        if self.eos_token_id is not None and self.eos_token_id in ids:
            ids = ids[: ids.index(self.eos_token_id)]
            row.ended = True
        self.pool.advance(row.rid, ids)

    def remove(self, row: PoolRow) -> None:
        if row.added and row.rid in self.pool:
            self.pool.remove(row.rid)

    def fill(self, rows: Sequence[tuple[int, PoolRow]]) -> None:
        """Write the masks of ``(bitmask row, request)`` pairs; failed requests get EOS only
        (their ``error`` says why, and the pool forgets them)."""
        named = [(i, r) for i, r in rows if r.error is None and not r.ended]
        for i, r in rows:
            if r.error is not None or r.ended:
                self.pool.bitmask[i] = self._eos_row
        if not named:
            return
        try:
            self.pool.fill([r.rid for _, r in named], rows=[i for i, _ in named])
        except RequestError as e:
            by_id = {r.rid: (i, r) for i, r in named}
            for rid, msg in e.failures.items():
                i, r = by_id[rid]
                r.error = msg
                logger.error("gramask: request failed in the pool, ending it (EOS only): %s",
                             msg)
                self.pool.bitmask[i] = self._eos_row
                self.remove(r)

    def close(self) -> None:
        self.pool.close()
