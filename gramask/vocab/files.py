"""Reading tokenizer files: the format is recognised from the content, never the file name.

* HF ``tokenizer.json`` (``formats/hf.py``), GPT-2 ``encoder.json`` / slow ``vocab.json``
  (``formats/gpt2.py``; its merges file leads to the encoder beside it), tiktoken rank files
  (``formats/tiktoken.py``), or a directory holding one of these.
* ``tokenizer_config.json`` beside the file adds control tokens and names EOS.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import VocabularyError
from .builder import Builder

__all__ = ["beside", "default_name", "parse_json", "read_builder", "read_bytes", "read_config"]

_GENERIC_STEMS = {"tokenizer", "encoder", "vocab", "merges", "tokenizer_config"}


def read_builder(path: str | os.PathLike[str]) -> tuple[Builder, Path]:
    """The file's tokens, specials and EOS candidates (what ``Vocabulary.from_file`` builds
    from), and the path they were read from (a merges file leads to its encoder)."""
    p = Path(path)
    if p.is_dir():
        p = _pick_in_dir(p)
    raw = read_bytes(p)
    fmt, parsed = _sniff(p, raw)
    if fmt == "merges":
        enc = beside(p, ("encoder.json", "vocab.json"))
        if enc is None:
            raise VocabularyError(
                f"{p}: a BPE merges file holds no token ids; the encoder.json or vocab.json "
                f"that goes with it is not beside it"
            )
        p = enc
        fmt, parsed = _sniff(p, read_bytes(p))
        if fmt != "encoder":
            raise VocabularyError(f"{p}: expected a GPT-2 encoder.json (token -> id)")
    from .formats.gpt2 import build_encoder
    from .formats.hf import build_hf
    from .formats.tiktoken import build_tiktoken

    try:
        if fmt == "hf":
            return build_hf(p, parsed, config=read_config(p)), p
        if fmt == "encoder":
            return build_encoder(p, parsed, config=read_config(p)), p
        return build_tiktoken(p, raw), p  # _sniff raises for anything else
    except VocabularyError as e:
        if str(p) in str(e):
            raise
        raise VocabularyError(f"{p}: {e}") from None


def default_name(p: Path) -> str:
    """``deepseek`` for ``deepseek/tokenizer.json``, ``qwen`` for ``qwen.tiktoken``."""
    return p.parent.name if p.stem in _GENERIC_STEMS and p.parent.name else p.stem


def read_bytes(p: Path) -> bytes:
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


def beside(p: Path, names: Iterable[str]) -> Path | None:
    for n in names:
        q = p.parent / n
        if q.is_file():
            return q
    return None


def parse_json(text: str | bytes, where: str) -> Any:
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
        data = parse_json(raw, str(p))
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
        _MERGES_HEAD.match(first) and beside(p, ("encoder.json", "vocab.json"))
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


def read_config(p: Path) -> dict[str, Any] | None:
    q = p.parent / "tokenizer_config.json"
    if not q.is_file() or q == p:
        return None
    data = parse_json(read_bytes(q), str(q))
    if not isinstance(data, dict):
        raise VocabularyError(f"{q}: expected a JSON object")
    return data


