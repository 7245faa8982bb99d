"""Collecting a vocabulary from any source: id -> bytes, specials, EOS; holes and checks.

Every reader (file formats, live tokenizer objects) fills a :class:`Builder`; ``build`` turns it
into the parts of a :class:`~gramask.Vocabulary` and is where the checks that all sources share live: ids are
non-negative and not far beyond the number of tokens (a stray huge id would allocate a list of
that length), and some token carries text.
"""

from __future__ import annotations

from itertools import repeat
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ..errors import VocabularyError

__all__ = [
    "MAX_HOLES",
    "WELL_KNOWN_EOS",
    "Builder",
    "VocabularyParts",
    "add_added",
    "apply_config",
    "as_id",
    "token_text",
]

def as_id(x: Any, what: str) -> int:
    """``x`` as a token id; a bool, float or string is an error, not silently converted."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise VocabularyError(f"{what} must be an int, got {x!r}")
    return int(x)


class VocabularyParts(NamedTuple):
    """What a reader found, checked: ``Vocabulary(*parts)`` is the vocabulary (the readers
    build this, not the object, so they need not import the class that calls them)."""

    tokens: list[bytes]
    special: set[int]
    eos_token_id: int | None
    name: str


# Tokens that mean end-of-sequence, in order of preference, when no config names one.
WELL_KNOWN_EOS = (
    "<|endoftext|>",
    "</s>",
    "<｜end▁of▁sentence｜>",
    "<|end_of_text|>",
    "<eos>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<|EOT|>",
    "[SEP]",
)

# Ids above the number of tokens are holes; real tokenizers have a few hundred (reserved
# specials, padding). More holes than this and than tokens is a corrupt file, not a vocabulary.
MAX_HOLES = 1 << 16



class Builder:
    """Collects id -> bytes, specials and candidate EOS names; resolves holes and EOS."""

    def __init__(self) -> None:
        self.tokens: dict[int, bytes] = {}
        self.special: set[int] = set()
        self.text_to_id: dict[str, int] = {}  # raw token strings / special texts -> id
        self.eos_text: str | None = None  # from a config file

    def add_special(self, i: int, text: str) -> None:
        if i < 0:
            raise VocabularyError(f"special token {text!r} has negative id {i}")
        self.tokens[i] = text.encode("utf-8")
        self.special.add(i)
        self.text_to_id[text] = i

    def check_ids(self, where: str) -> int:
        """The vocabulary size (max id + 1), after rejecting negative and runaway ids."""
        if not self.tokens:
            raise VocabularyError(f"{where}: the vocabulary is empty")
        lo, hi = min(self.tokens), max(self.tokens)
        if lo < 0:
            raise VocabularyError(f"{where}: negative token id {lo}")
        n = len(self.tokens)
        if hi + 1 - n > max(MAX_HOLES, n):
            raise VocabularyError(
                f"{where}: token id {hi} is far beyond the {n} tokens the vocabulary holds "
                f"(a corrupt file?)"
            )
        if all(i in self.special for i in self.tokens):
            raise VocabularyError(
                f"{where}: the vocabulary has no ordinary tokens, only {n} special ones"
            )
        return hi + 1

    def build(
        self,
        *,
        name: str,
        where: str,
        eos_token_id: int | None = None,
        eos_token: str | None = None,
    ) -> VocabularyParts:
        size = self.check_ids(where)
        get = self.tokens.get
        toks = list(map(get, range(size), repeat(b"")))
        eos = eos_token_id
        if eos is None and eos_token is not None:
            eos = self._lookup(eos_token)
            if eos is None:
                raise VocabularyError(f"{where}: EOS token {eos_token!r} is not in the vocabulary")
        if eos is None and self.eos_text is not None:
            eos = self._lookup(self.eos_text)
        if eos is None:
            for cand in WELL_KNOWN_EOS:
                eos = self._lookup(cand)
                if eos is not None:
                    break
        if eos is not None and not 0 <= eos < size:
            raise VocabularyError(f"{where}: EOS id {eos} is outside the vocabulary (size {size})")
        return VocabularyParts(toks, self.special, eos, name)

    def _lookup(self, text: str) -> int | None:
        i = self.text_to_id.get(text)
        if i is not None:
            return i
        b = text.encode("utf-8")
        for i in sorted(self.special):  # a special token spelled this way
            if self.tokens.get(i) == b:
                return i
        return None


def token_text(x: Any) -> str | None:
    """A config entry naming a token: a string or an AddedToken dict ({"content": ...})."""
    if isinstance(x, str):
        return x
    if isinstance(x, dict) and isinstance(x.get("content"), str):
        return str(x["content"])
    return None


def apply_config(b: Builder, config: dict[str, Any] | None, where: Path) -> None:
    if not config:
        return
    added = config.get("added_tokens_decoder")
    if isinstance(added, dict):
        for k, entry in added.items():
            text = token_text(entry)
            try:
                i = int(k)
            except ValueError:
                raise VocabularyError(
                    f"{where.parent / 'tokenizer_config.json'}: added_tokens_decoder key {k!r} "
                    f"is not an id"
                ) from None
            if text is None:
                continue
            special = bool(entry.get("special", True)) if isinstance(entry, dict) else True
            add_added(b, i, text, special)
    eos = token_text(config.get("eos_token"))
    if eos:
        b.eos_text = eos


def add_added(b: Builder, i: int, text: str, special: bool) -> None:
    """An added token: a control token, unless it is non-special and only whitespace."""
    if i < 0:
        raise VocabularyError(f"added token {text!r} has negative id {i}")
    if not special and text and not text.strip():
        b.tokens[i] = text.encode("utf-8")
        b.special.discard(i)
        b.text_to_id[text] = i
    else:
        b.add_special(i, text)

