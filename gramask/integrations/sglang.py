"""SGLang integration: a grammar backend named ``gramask`` in SGLang's own registry.

    sglang serve --model-path MODEL --grammar-backend gramask

Installing gramask registers :func:`register` under SGLang's plugin entry point group
``sglang.srt.plugins``, which every SGLang process runs before it parses its command line;
``import gramask.integrations.sglang`` does the same. It calls ``register_grammar_backend(
"gramask", ...)`` in ``sglang.srt.constrained.base_grammar_backend`` and adds ``gramask`` to
the ``--grammar-backend`` choices (``add_grammar_backend_choices``). Each request's grammar
arrives as SGLang's structured-output fields:

- ``ebnf``: the gramask request options as JSON, ``{"grammar": "python", "prefix": ...,
  "suffix": ..., "max_tokens": ...}`` (:mod:`gramask.integrations.options`), or a bare grammar
  spec (a bundled name such as ``"python"``, a ``.gmask``/``.lark`` path, or Lark text);
- ``json_schema`` and ``regex``: through ``Grammar.from_json_schema`` / ``Grammar.from_regex``.

:class:`GramaskGrammar` implements SGLang's ``BaseGrammarObject`` on a
:class:`~gramask.Constraint` and the bitmask functions of :mod:`gramask.torch` (int32, one bit
per token, XGrammar's layout, filled on the CPU and moved to the logits' device). A grammar
that does not load becomes SGLang's ``InvalidGrammarObject`` with gramask's message (the
request is refused, the server keeps running). SGLang's engine needs ``sgl-kernel``, which has
no CPU build: the conformance tests (``tests_engines/sglang``) drive these classes directly.

This module imports torch and SGLang; ``import gramask`` imports neither.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

try:
    import torch
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES, add_grammar_backend_choices
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend,
        BaseGrammarObject,
        GrammarRow,
        InvalidGrammarObject,
        register_grammar_backend,
        register_vocab_mask_buffer,
    )
except ImportError as exc:
    raise ImportError(
        "gramask.integrations.sglang needs SGLang and torch: pip install sglang"
    ) from exc

from ..errors import GramaskError
from ..torch import allocate_token_bitmask, apply_token_bitmask_inplace, fill_next_token_bitmask
from .options import GrammarResolver, parse_options

if TYPE_CHECKING:
    from ..runtime.constraint import Constraint
    from ..vocab import Vocabulary

__all__ = ["BACKEND_NAME", "GramaskGrammar", "GramaskGrammarBackend", "register"]

logger = logging.getLogger(__name__)

#: The ``--grammar-backend`` value.
BACKEND_NAME = "gramask"


class GramaskGrammar(BaseGrammarObject):  # type: ignore[misc]  # SGLang has no stubs
    """One request's grammar state: a :class:`~gramask.Constraint`.

    ``accept_token`` raises :class:`~gramask.TokenRejected` (a ``ValueError``, as SGLang's
    other backends raise) for a token the mask did not allow; ``rollback(k)`` undoes the last
    ``k`` accepted tokens, EOS included (speculative decoding); ``copy`` is an independent
    clone (SGLang copies the cached object for each request).
    """

    def __init__(self, constraint: Constraint) -> None:
        super().__init__()
        self.constraint = constraint

    def accept_token(self, token: int) -> None:
        self.constraint.advance(int(token))
        if self.constraint.is_finished:
            self.finished = True

    def rollback(self, k: int) -> None:
        if k <= 0:
            return
        self.constraint.rollback(k)
        self.finished = False

    def is_terminated(self) -> bool:
        """EOS was accepted."""
        return bool(self.constraint.is_finished)

    def allocate_vocab_mask(self, vocab_size: int, batch_size: int, device: Any) -> torch.Tensor:
        """A CPU bitmask (filled there, then ``move_vocab_mask`` sends it to ``device``)."""
        return allocate_token_bitmask(batch_size, vocab_size)

    def fill_vocab_mask(self, vocab_mask: torch.Tensor, idx: int) -> None:
        fill_next_token_bitmask([self.constraint], vocab_mask, [idx])

    @staticmethod
    def fill_vocab_mask_batched(entries: list[GrammarRow], vocab_mask: torch.Tensor) -> None:
        """One call for the batch's gramask rows (other backends' rows fill themselves)."""
        ours = [e for e in entries if isinstance(e.grammar, GramaskGrammar)]
        if ours:
            fill_next_token_bitmask([e.grammar.constraint for e in ours], vocab_mask,
                                    [e.row for e in ours])
        for e in entries:
            if not isinstance(e.grammar, GramaskGrammar):
                e.grammar.fill_vocab_mask(vocab_mask, e.row)

    @staticmethod
    def reset_vocab_mask(vocab_mask: torch.Tensor) -> None:
        """Every token allowed."""
        vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: torch.Tensor, device: Any) -> torch.Tensor:
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: torch.Tensor, vocab_mask: torch.Tensor) -> None:
        apply_token_bitmask_inplace(logits, vocab_mask)

    def copy(self) -> GramaskGrammar:
        return GramaskGrammar(self.constraint.clone())

    def try_jump_forward(self, tokenizer: Any) -> None:
        """No jump-forward: gramask masks token by token."""
        return None


class GramaskGrammarBackend(BaseGrammarBackend):  # type: ignore[misc]  # SGLang has no stubs
    """Builds :class:`GramaskGrammar` objects for SGLang's requests (see the module doc).

    ``tokenizer`` is the server's (read once into a :class:`~gramask.Vocabulary`);
    ``vocab_size`` is the model's logits width, which the masks cover (ids past the
    tokenizer's are disallowed).
    """

    def __init__(self, tokenizer: Any, vocab_size: int | None = None,
                 eos_token_ids: Any = None, *, vocab: Vocabulary | None = None) -> None:
        super().__init__()
        if vocab is None:
            from ..vocab import Vocabulary

            vocab = Vocabulary.from_tokenizer(tokenizer)
        self.vocab = vocab
        self.vocab_size = int(vocab_size) if vocab_size else len(vocab)
        if self.vocab_size < len(vocab):
            raise GramaskError(
                f"vocab_size: expected at least the tokenizer's {len(vocab)} tokens, got "
                f"{self.vocab_size}"
            )
        eos = set(eos_token_ids or ())
        if eos and vocab.eos_token_id not in eos:
            logger.warning(
                "gramask: the tokenizer's EOS id %s (the one gramask allows when a program is "
                "complete) is not among the model's EOS ids %s", vocab.eos_token_id, sorted(eos))
        self.resolver = GrammarResolver(vocab)

    def initialize_vocab_mask_buffer(self, name: str, vocab_size: int, max_rows: int,
                                     device: Any) -> torch.Tensor:
        buffer: torch.Tensor = register_vocab_mask_buffer(
            name, allocate_token_bitmask(max_rows, self.vocab_size), max_rows)
        return buffer

    def _grammar(self, raw: dict[str, Any]) -> BaseGrammarObject:
        try:
            options = parse_options(raw)
            return GramaskGrammar(self.resolver.constraint(options))
        except (GramaskError, NotImplementedError, OSError) as e:
            logger.error("gramask: invalid grammar request: %s", e)
            return InvalidGrammarObject(f"gramask: {e}")

    def dispatch_ebnf(self, key_string: str) -> BaseGrammarObject:
        """gramask request options as JSON, or a bare grammar spec."""
        raw: Any = None
        if key_string.lstrip().startswith("{"):
            try:
                raw = json.loads(key_string)
            except ValueError:
                raw = None
        if not isinstance(raw, dict) or "grammar" not in raw:
            raw = {"grammar": key_string}
        return self._grammar(raw)

    def dispatch_json(self, key_string: str) -> BaseGrammarObject:
        return self._grammar({"grammar": {"json_schema": key_string}})

    def dispatch_regex(self, key_string: str) -> BaseGrammarObject:
        return self._grammar({"grammar": {"regex": key_string}})


def _create_backend(server_args: Any, tokenizer: Any, vocab_size: int,
                    eos_token_ids: Any = None) -> GramaskGrammarBackend:
    """The factory SGLang's ``create_grammar_backend`` calls for ``--grammar-backend gramask``."""
    return GramaskGrammarBackend(tokenizer, vocab_size, eos_token_ids)


def register() -> None:
    """Register the backend with SGLang (idempotent). Importing this module does it; SGLang's
    plugin loader calls it in every SGLang process through the ``sglang.srt.plugins`` entry
    point, before the command line is parsed."""
    register_grammar_backend(BACKEND_NAME, _create_backend)
    if BACKEND_NAME not in GRAMMAR_BACKEND_CHOICES:
        add_grammar_backend_choices([BACKEND_NAME])


register()
