"""Per-token decoder steps: how one token string of a tokenizer becomes its exact bytes.

Tokenizers store tokens in their own alphabets -- GPT-2's byte<->unicode map (``Ġ`` is a space),
SentencePiece's ``▁`` and ``<0x0A>`` byte-fallback pieces, WordPiece's ``##`` -- and an HF
``tokenizer.json`` names the chain of decoders that undoes them. Each step here is one small
typed object that does what the tokenizers library's decoder of the same name does to a single
token; a step that yields ``bytes`` ends the chain (ByteLevel, a matched byte-fallback piece).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "ByteFallback",
    "ByteLevel",
    "DecoderStep",
    "RegexReplace",
    "Replace",
    "StripPrefix",
    "WordSuffix",
    "byte_fallback",
    "bytelevel_decode",
    "bytes_to_unicode",
    "decode_token",
]


def bytes_to_unicode() -> dict[int, str]:
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


_BYTE_TO_CHAR = bytes_to_unicode()
_CHAR_TO_BYTE = {c: b for b, c in _BYTE_TO_CHAR.items()}
# str.translate table: an alphabet character -> the latin-1 character of its byte; any other
# character below U+0100 -> U+FFFF, so that ``.encode("latin-1")`` fails for every token that
# holds a character outside the alphabet.
_BYTELEVEL_TABLE: dict[int, str] = {ord(c): chr(b) for c, b in _CHAR_TO_BYTE.items()}
for _cp in range(256):
    _BYTELEVEL_TABLE.setdefault(_cp, "\uffff")


def bytelevel_decode(s: str) -> bytes:
    """Bytes of one byte-level token, exactly as tokenizers' ByteLevel decoder yields them.

    The decoder maps every character through the alphabet; if any character is outside it,
    the whole token falls back to its UTF-8 bytes (tokenizers ``decoders/byte_level.rs``).
    """
    try:
        return s.translate(_BYTELEVEL_TABLE).encode("latin-1")
    except UnicodeEncodeError:
        return s.encode("utf-8")


_BYTE_FALLBACK_RE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def byte_fallback(s: str) -> bytes | None:
    """The byte of a ``<0xNN>`` piece, or None if ``s`` is not one."""
    m = _BYTE_FALLBACK_RE.fullmatch(s)
    return bytes((int(m.group(1), 16),)) if m else None


class DecoderStep(Protocol):
    """One decoder of the chain: a token string in, a string (go on) or bytes (done) out."""

    def __call__(self, value: str) -> str | bytes: ...


@dataclass(frozen=True)
class ByteLevel:
    """GPT-2's byte alphabet back to bytes; always the last step."""

    def __call__(self, value: str) -> bytes:
        return bytelevel_decode(value)


@dataclass(frozen=True)
class ByteFallback:
    """``<0x0A>`` pieces are the byte they name; other tokens go on unchanged."""

    def __call__(self, value: str) -> str | bytes:
        b = byte_fallback(value)
        return value if b is None else b


@dataclass(frozen=True)
class Replace:
    """Literal replacement (Metaspace's ``▁`` → space, a Replace decoder with a string)."""

    old: str
    new: str

    def __call__(self, value: str) -> str:
        return value.replace(self.old, self.new)


@dataclass(frozen=True)
class RegexReplace:
    """A Replace decoder whose pattern is a regex."""

    pattern: re.Pattern[str]
    new: str

    def __call__(self, value: str) -> str:
        return self.pattern.sub(self.new, value)


@dataclass(frozen=True)
class StripPrefix:
    """WordPiece's continuation prefix (``##ing`` → ``ing``)."""

    prefix: str

    def __call__(self, value: str) -> str:
        return value[len(self.prefix) :] if value.startswith(self.prefix) else value


@dataclass(frozen=True)
class WordSuffix:
    """BPEDecoder's end-of-word suffix (``</w>``) stands for a space."""

    suffix: str

    def __call__(self, value: str) -> str:
        return value.replace(self.suffix, " ")


def decode_token(token: str, steps: list[DecoderStep]) -> bytes:
    """Run ``token`` through the chain; a step that yields bytes ends it, else UTF-8."""
    value = token
    for step in steps:
        out = step(value)
        if isinstance(out, bytes):
            return out
        value = out
    return value.encode("utf-8")
