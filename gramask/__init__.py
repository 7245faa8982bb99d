"""gramask: compile grammars ahead of time into token-mask tables for constrained decoding.

Pipeline: ``Vocabulary`` + ``Grammar`` → ``compile`` → ``CompiledGrammar`` → ``Constraint``.
Importing gramask loads numpy only; lark, interegular, scipy and torch are imported where used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import (
    ArtifactError,
    ArtifactVersionError,
    GramaskError,
    GrammarError,
    InvalidPrefixError,
    InvalidRegexError,
    InvalidSuffixError,
    TokenRejected,
    UnsupportedRegexError,
    VocabularyError,
)

__version__ = "0.1.0"

if TYPE_CHECKING:
    from . import grammars
    from .compiled import CompiledGrammar, compile
    from .grammar import Grammar
    from .runtime.constraint import Constraint
    from .vocab import Vocabulary

_LAZY = {
    "Vocabulary": ("gramask.vocab", "Vocabulary"),
    "Grammar": ("gramask.grammar", "Grammar"),
    "compile": ("gramask.compiled", "compile"),
    "CompiledGrammar": ("gramask.compiled", "CompiledGrammar"),
    "Constraint": ("gramask.runtime.constraint", "Constraint"),
    "grammars": ("gramask.grammars", None),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'gramask' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(target[0])
    value = mod if target[1] is None else getattr(mod, target[1])
    globals()[name] = value
    return value


__all__ = [
    "ArtifactError",
    "ArtifactVersionError",
    "CompiledGrammar",
    "Constraint",
    "GramaskError",
    "Grammar",
    "GrammarError",
    "InvalidPrefixError",
    "InvalidRegexError",
    "InvalidSuffixError",
    "TokenRejected",
    "UnsupportedRegexError",
    "Vocabulary",
    "VocabularyError",
    "compile",
    "grammars",
]
