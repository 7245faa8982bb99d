"""HF ``tokenizer.json``: token strings decoded per token by simulating the decoder chain.

The chain (ByteLevel, Metaspace, Replace, ByteFallback, WordPiece, BPEDecoder) is completed by
what the pre-tokenizer, normalizer and ``model.byte_fallback`` imply when the decoder omits it.
Sequence-level steps (Strip, Fuse, CTC, Metaspace's removal of the first leading space) are
decode-time artefacts and are not applied: ``▁foo`` is ``b" foo"``. WordPiece and WordLevel
are best effort: their tokens carry no whitespace, so ``##ing`` is ``b"ing"``. A decoder type
not listed here is an error: guessing would give wrong bytes, hence wrong masks.

The ``tokenizers`` library is not needed: its own JSON is the complete description, and its
decoders work on whole sequences (they would strip the leading space of ``▁foo``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...errors import VocabularyError
from ..builder import Builder, add_added, apply_config
from ..decoders import (
    ByteFallback,
    ByteLevel,
    DecoderStep,
    RegexReplace,
    Replace,
    StripPrefix,
    WordSuffix,
    bytelevel_decode,
    decode_token,
)

__all__ = ["build_hf", "decoder_steps"]

# decoders that act on the sequence, not on one token's bytes
_SEQUENCE_LEVEL = {"Fuse", "Strip", "CTC"}


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




def _decoder_step(d: dict[str, Any]) -> DecoderStep | None:
    """One decoder of the JSON as a step (None for sequence-level ones)."""
    t = d.get("type")
    if t == "ByteLevel":
        return ByteLevel()
    if t == "ByteFallback":
        return ByteFallback()
    if t == "Metaspace":
        return Replace(d.get("replacement") or "▁", " ")
    if t == "Replace":
        pat = _pattern_text(d.get("pattern"))
        content = d.get("content", "")
        if pat is None or not isinstance(content, str):
            raise VocabularyError(f"a Replace decoder without a usable pattern: {d!r}")
        kind, text = pat
        return Replace(text, content) if kind == "string" else RegexReplace(re.compile(text), content)
    if t == "WordPiece":
        return StripPrefix(d.get("prefix", "##"))
    if t == "BPEDecoder":
        return WordSuffix(d.get("suffix", "</w>"))
    if t in _SEQUENCE_LEVEL:
        return None
    raise VocabularyError(
        f"unknown decoder type {t!r}; gramask reads ByteLevel, ByteFallback, Metaspace, "
        f"Replace, WordPiece, BPEDecoder, Fuse, Strip, CTC and Sequence"
    )


def _before_bytelevel(steps: list[DecoderStep]) -> int:
    for k, step in enumerate(steps):
        if isinstance(step, ByteLevel):
            return k
    return len(steps)


def decoder_steps(data: dict[str, Any]) -> list[DecoderStep]:
    """Per-token decoding steps implied by the JSON (decoder chain, completed by evidence)."""
    model = data["model"]
    steps = [s for d in _flatten(data.get("decoder"), "decoders") if (s := _decoder_step(d)) is not None]
    kinds = {type(s) for s in steps}
    pre = _flatten(data.get("pre_tokenizer"), "pretokenizers")
    norm = _flatten(data.get("normalizer"), "normalizers")
    if model.get("byte_fallback") and ByteFallback not in kinds:
        steps.insert(0, ByteFallback())
    if ByteLevel not in kinds and any(c.get("type") == "ByteLevel" for c in pre):
        steps.append(ByteLevel())
    # characters that already decode to a space
    spaces = {s.old for s in steps if isinstance(s, Replace) and s.new == " "}
    for c in pre:
        if c.get("type") == "Metaspace":
            r = c.get("replacement") or "▁"
            if r not in spaces:
                steps.insert(_before_bytelevel(steps), Replace(r, " "))
                spaces.add(r)
    for c in norm:
        if c.get("type") == "Replace":
            pat = _pattern_text(c.get("pattern"))
            content = c.get("content")
            if pat == ("string", " ") and isinstance(content, str) and content and (
                content not in spaces
            ):
                steps.insert(_before_bytelevel(steps), Replace(content, " "))
                spaces.add(content)
    if model.get("type") == "WordPiece" and StripPrefix not in kinds:
        steps.append(StripPrefix(model.get("continuing_subword_prefix") or "##"))
    if model.get("type") == "BPE" and model.get("end_of_word_suffix") and WordSuffix not in kinds:
        steps.append(WordSuffix(model["end_of_word_suffix"]))
    return steps


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


def build_hf(p: Path, data: dict[str, Any], *, config: dict[str, Any] | None) -> Builder:
    model = data["model"]
    items = _hf_model_vocab(model, p)
    try:
        steps = decoder_steps(data)
    except re.error as e:
        raise VocabularyError(f"{p}: decoder Replace pattern is not a usable regex: {e}") from None
    b = Builder()
    tokens = b.tokens
    if steps == [ByteLevel()]:  # the common case, fast path
        tokens.update((i, bytelevel_decode(t)) for t, i in items)
    else:
        tokens.update((i, decode_token(t, steps)) for t, i in items)
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
        add_added(b, entry["id"], text, bool(entry.get("special", True)))
    apply_config(b, config, p)
    return b


