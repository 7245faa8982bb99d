"""GPT-2 ``encoder.json`` / HF slow ``vocab.json``: token strings in the byte-level alphabet.

The merges file beside it is accepted, not needed; ``tokenizer_config.json``'s
``added_tokens_decoder`` beside it is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import VocabularyError
from ..builder import Builder, apply_config
from ..decoders import bytelevel_decode

__all__ = ["build_encoder"]


def build_encoder(p: Path, data: dict[str, Any], *, config: dict[str, Any] | None) -> Builder:
    b = Builder()
    tokens = b.tokens
    tokens.update((i, bytelevel_decode(t)) for t, i in data.items())
    if len(tokens) != len(data):
        raise VocabularyError(f"{p}: two tokens share one id")
    if any(i < 0 for i in tokens):
        raise VocabularyError(f"{p}: negative token id")
    b.text_to_id.update(data)
    apply_config(b, config, p)
    # GPT-2's only control token is in the encoder itself.
    eot = data.get("<|endoftext|>")
    if eot is not None:
        b.special.add(eot)
    return b

