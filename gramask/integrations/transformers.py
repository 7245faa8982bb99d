"""Constrained ``model.generate`` for Hugging Face transformers: :class:`GramaskLogitsProcessor`.

    from transformers import LogitsProcessorList
    from gramask.integrations.transformers import GramaskLogitsProcessor

    proc = GramaskLogitsProcessor.from_compiled(compiled, batch_size=len(prompts))
    out = model.generate(**enc, logits_processor=LogitsProcessorList([proc]), ...)

What the processor does on each call ``proc(input_ids, scores)``:

1. The first call records the prompt length. **Prompt tokens are never fed to the
   constraints**: the grammar constrains only the generated tokens. To constrain a completion of
   text that is already in the prompt, give that text as the constraint's ``prefix``.
2. Each constraint is advanced by the tokens appended to its row since the previous call. Rows
   are compared with what was consumed before, so rows that change history (beam search
   reordering its beams) are rolled back to the common part and re-advanced.
3. ``scores`` is masked in place (:func:`gramask.torch.apply_token_bitmask_inplace`) and
   returned. Columns past the vocabulary (models pad their embeddings) are disallowed.

A row ends when its constraint accepts EOS, or when it receives EOS or the pad token otherwise
(``generate`` pads rows that finished). An ended row is masked to allow only EOS and the pad
token, so it never produces an all ``-inf`` row (which would make sampling fail); later tokens
in that row are ignored. Any other token the constraint rejects raises
:class:`~gramask.TokenRejected` naming the row: it means the scores were changed after this
processor, or the processor is being reused for another ``generate`` call (use :meth:`reset`,
or a fresh processor).

``generate`` calls processors before sampling, so when it returns the constraints have not yet
seen the last token of each row: ``proc.consume(output_ids)`` brings them up to date.

This module imports torch and transformers; ``import gramask`` imports neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

try:
    import torch
    from transformers import LogitsProcessor
except ImportError as exc:
    raise ImportError(
        "gramask.integrations.transformers needs torch and transformers: "
        "pip install 'gramask[transformers,torch]'"
    ) from exc

from ..errors import TokenRejected
from ..torch import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask

if TYPE_CHECKING:
    from ..compiled import CompiledGrammar
    from ..runtime.core.constraint import Constraint
    from ..vocab import Vocabulary

__all__ = ["GramaskLogitsProcessor", "generate"]


class _Fixed:
    """A mask source for ended rows: always the same mask (EOS and pad only)."""

    __slots__ = ("mask",)

    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask

    def allowed(self) -> np.ndarray:
        return self.mask


def _vocab_of(c: Constraint) -> Vocabulary:
    vocab: Vocabulary | None = getattr(c, "vocab", None)
    if vocab is None:
        raise ValueError(
            f"constraints: expected gramask Constraint objects, got {type(c).__name__}"
        )
    return vocab


def _ids(x: int | Iterable[int] | None) -> set[int]:
    if x is None:
        return set()
    if isinstance(x, (int, np.integer)):
        return {int(x)}
    return {int(i) for i in x}


class GramaskLogitsProcessor(LogitsProcessor):
    """Masks ``generate``'s scores so every row's generated text follows its constraint.

    Parameters
    ----------
    constraints
        One :class:`~gramask.Constraint` per row of ``input_ids`` (batch size times
        ``num_return_sequences`` or ``num_beams``), all over the same vocabulary. They are
        advanced in place; the processor keeps them, so after ``proc.consume(output_ids)``
        ``proc.constraints[i].text`` is row ``i``'s generated text. With beam search they
        follow the live beams, not the returned hypotheses.
    eos_token_id
        Token id(s) that end a row; default the vocabulary's EOS. The grammar's own EOS (the
        vocabulary's) is the one ``allowed()`` opens when the text is complete.
    pad_token_id
        The id ``generate`` writes into rows that have finished; it also ends a row, and is
        allowed (with EOS) in ended rows.

    Notes
    -----
    Prompt tokens are excluded: the first call only records the prompt length. Cost per call:
    one device-to-host copy of the generated ids, a vectorised comparison with the previous
    call, one ``advance`` per new token, one packed bitmask upload and one masking kernel.
    Not for continuous batching (rows are tied to constraints by position).
    """

    supports_continuous_batching = False

    def __init__(
        self,
        constraints: Sequence[Constraint],
        *,
        eos_token_id: int | Iterable[int] | None = None,
        pad_token_id: int | None = None,
    ) -> None:
        self.constraints: list[Constraint] = list(constraints)
        if not self.constraints:
            raise ValueError("constraints: expected at least one Constraint, got none")
        vocab = _vocab_of(self.constraints[0])
        for c in self.constraints[1:]:
            if len(_vocab_of(c)) != len(vocab):
                raise ValueError(
                    f"constraints: expected one vocabulary of {len(vocab)} tokens, got one of "
                    f"{len(_vocab_of(c))}"
                )
        self.vocab_size = len(vocab)
        self.eos_token_ids = _ids(eos_token_id) or _ids(vocab.eos_token_id)
        self.pad_token_id = None if pad_token_id is None else int(pad_token_id)
        self._stop = self.eos_token_ids | _ids(self.pad_token_id)
        end = np.zeros(self.vocab_size, dtype=bool)
        for i in self._stop | _ids(vocab.eos_token_id):
            if 0 <= i < self.vocab_size:
                end[i] = True
        if not end.any():
            raise ValueError(
                "eos_token_id: expected an id inside the vocabulary (ended rows must allow "
                f"something), got {sorted(self._stop)} for a vocabulary of {self.vocab_size}"
            )
        self._ended = _Fixed(end)
        self._bitmask: torch.Tensor | None = None
        self._start_state()

    def _start_state(self) -> None:
        n = len(self.constraints)
        self._prompt_len: int | None = None
        self._seen = np.zeros((n, 0), dtype=np.int64)  # generated ids seen at the last call
        self._advanced = [0] * n  # how many of them each constraint has consumed
        self._ended_at: list[int | None] = [None] * n  # position of the row's end token

    @classmethod
    def from_compiled(
        cls,
        compiled: CompiledGrammar,
        batch_size: int,
        prefix: str | bytes | Sequence[str | bytes] = "",
        suffix: str | bytes | Sequence[str | bytes | None] | None = None,
        max_tokens: int | None = None,
        **kwargs: Any,
    ) -> GramaskLogitsProcessor:
        """``batch_size`` fresh constraints from ``compiled.constraint(prefix=..., suffix=...,
        max_tokens=...)``.

        ``batch_size`` is the number of rows ``generate`` decodes: prompts times
        ``num_return_sequences`` (or ``num_beams``). ``prefix`` and ``suffix`` (the code after
        the cursor, for fill-in-the-middle) are one text for every row or a sequence with one
        per row; rows with the same pair share one setup (the others are clones).
        ``max_tokens``: give ``generate``'s ``max_new_tokens`` (processors are not told it) and
        every row is a complete program when ``generate`` returns, ended by EOS or not.
        ``kwargs`` go to the constructor.

        Raises
        ------
        BudgetError
            The shortest completion gramask finds for a row's prefix needs more than
            ``max_tokens`` tokens (see :class:`~gramask.BudgetError`).
        """
        if batch_size < 1:
            raise ValueError(f"batch_size: expected at least 1, got {batch_size}")

        def per_row(x: Any, what: str) -> list[Any]:
            if x is None or isinstance(x, (str, bytes)):
                return [x] * batch_size
            rows = list(x)
            if len(rows) != batch_size:
                raise ValueError(f"{what}: expected {batch_size} rows, got {len(rows)}")
            return rows

        made: dict[tuple[Any, Any], Constraint] = {}
        cs = []
        for p, sfx in zip(per_row(prefix, "prefix"), per_row(suffix, "suffix"), strict=True):
            c = made.get((p, sfx))
            if c is None:
                c = made[(p, sfx)] = compiled.constraint(
                    prefix=p, suffix=sfx, max_tokens=max_tokens
                )
                cs.append(c)
            else:
                cs.append(c.clone())
        return cls(cs, **kwargs)

    def reset(self) -> None:
        """Roll every constraint back to where this processor found it; forget the prompt."""
        for c, k in zip(self.constraints, self._advanced, strict=True):
            if k:
                c.rollback(k)
        self._start_state()

    @property
    def finished(self) -> list[bool]:
        """Per row: has it ended (EOS accepted, or an EOS/pad token seen)?"""
        return [e is not None for e in self._ended_at]

    # ------------------------------------------------------------------------------ call
    def consume(self, input_ids: torch.Tensor) -> None:
        """Advance the constraints to the generated part of ``input_ids``, without masking.

        ``__call__`` does this first. ``generate`` does not call processors after the last
        token it samples, so pass its output here to bring ``constraints`` (and
        :attr:`finished`) up to date with the returned sequences. The first call ever (of this
        or ``__call__``) records the prompt length.

        Raises
        ------
        ValueError
            ``input_ids`` is not ``(len(constraints), length)`` or is shorter than the prompt.
        TokenRejected
            A row holds a token its constraint rejects that is neither EOS nor pad.
        """
        n = len(self.constraints)
        if input_ids.dim() != 2 or input_ids.shape[0] != n:
            raise ValueError(
                f"input_ids: expected shape ({n}, length) (one row per constraint), got "
                f"{tuple(input_ids.shape)}"
            )
        if self._prompt_len is None:
            self._prompt_len = int(input_ids.shape[1])
        elif input_ids.shape[1] < self._prompt_len:
            raise ValueError(
                f"input_ids: expected at least the {self._prompt_len} prompt tokens of the first "
                f"call, got {input_ids.shape[1]}; call reset() before reusing the processor"
            )
        self._sync(input_ids[:, self._prompt_len :].detach().cpu().numpy())

    def __call__(self, input_ids: torch.LongTensor, scores: torch.Tensor) -> torch.Tensor:
        self.consume(input_ids)
        n = len(self.constraints)
        if scores.dim() != 2 or scores.shape[0] != n:
            raise ValueError(f"scores: expected shape ({n}, vocab), got {tuple(scores.shape)}")
        sources = [
            self._ended if e is not None else c
            for c, e in zip(self.constraints, self._ended_at, strict=True)
        ]
        bm = self._bitmask
        if bm is None or bm.device != scores.device:
            bm = self._bitmask = allocate_token_bitmask(n, self.vocab_size, scores.device)
        fill_next_token_bitmask(sources, bm)
        apply_token_bitmask_inplace(scores, bm)
        return scores

    def _sync(self, gen: np.ndarray) -> None:
        """Bring every constraint to its row's generated ids ``gen`` (rows, length)."""
        prev = self._seen
        m = min(prev.shape[1], gen.shape[1])
        common = np.zeros(len(self.constraints), dtype=np.int64)  # common prefix with prev
        if m:
            same = gen[:, :m] == prev[:, :m]
            common = np.where(same.all(axis=1), m, np.argmin(same, axis=1))
        for i, c in enumerate(self.constraints):
            k = int(common[i])
            ended = self._ended_at[i]
            if ended is not None and ended >= k:
                ended = None
            if self._advanced[i] > k:
                c.rollback(self._advanced[i] - k)
                self._advanced[i] = k
            pos = self._advanced[i]
            row = gen[i]
            while ended is None and pos < row.shape[0]:
                tok = int(row[pos])
                try:
                    c.advance(tok)
                except TokenRejected as exc:
                    if tok not in self._stop:
                        raise TokenRejected(
                            f"row {i}, generated token {pos}: {exc} (were the scores changed "
                            "after this processor, or is it reused without reset()?)"
                        ) from exc
                    ended = pos
                else:
                    self._advanced[i] += 1
                    if c.is_finished:
                        ended = pos
                pos += 1
            self._ended_at[i] = ended
        self._seen = gen.copy()


def generate(
    model: Any,
    compiled: CompiledGrammar,
    input_ids: torch.Tensor,
    *,
    max_new_tokens: int,
    prefix: str | bytes | Sequence[str | bytes] = "",
    suffix: str | bytes | Sequence[str | bytes | None] | None = None,
    budget: bool = True,
    **generate_kwargs: Any,
) -> tuple[torch.Tensor, GramaskLogitsProcessor]:
    """``model.generate`` under the grammar, with ``max_new_tokens`` as the token budget: every
    returned row is a complete program, whether EOS or the length limit ended it.

    ``budget=False`` constrains without a budget (rows cut by the limit may be unfinished).
    With a ``suffix``, a row is complete when prefix + row + suffix is a program. Rows are ``input_ids`` rows times ``num_return_sequences`` (or
    ``num_beams``); ``prefix``/``suffix`` as in :meth:`GramaskLogitsProcessor.from_compiled`.
    Returns ``generate``'s output and the processor (its constraints brought up to date).

    Raises
    ------
    BudgetError
        The shortest completion gramask finds for a row's prefix (and suffix) needs more
        than ``max_new_tokens`` tokens (see :class:`~gramask.BudgetError`).
    """
    from transformers import LogitsProcessorList

    cfg = generate_kwargs.get("generation_config")

    def knob(name: str) -> int:
        v = generate_kwargs.get(name, getattr(cfg, name, None) if cfg is not None else None)
        return int(v or 1)

    beams = knob("num_beams")  # generate decodes batch × beams rows, else batch × samples
    rows = int(input_ids.shape[0]) * (beams if beams > 1 else knob("num_return_sequences"))
    proc = GramaskLogitsProcessor.from_compiled(
        compiled, rows, prefix=prefix, suffix=suffix,
        max_tokens=max_new_tokens if budget else None,
    )
    procs = list(generate_kwargs.pop("logits_processor", None) or [])
    out = model.generate(input_ids, max_new_tokens=max_new_tokens,
                         logits_processor=LogitsProcessorList([*procs, proc]),
                         **generate_kwargs)
    proc.consume(out)
    return out, proc
