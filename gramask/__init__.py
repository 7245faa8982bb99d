"""gramask: compile grammars ahead of time into token-mask tables for constrained decoding.

Pipeline: ``Vocabulary`` + ``Grammar`` → ``compile`` → ``CompiledGrammar`` → ``Constraint``.
Importing gramask loads numpy only; lark, interegular, scipy and torch are imported where used.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from typing import TYPE_CHECKING, Any

from .errors import (
    ArtifactError,
    ArtifactVersionError,
    BudgetError,
    GramaskError,
    GrammarError,
    InvalidPrefixError,
    InvalidRegexError,
    InvalidSuffixError,
    LexerTooLargeError,
    LimitExceededError,
    NoCompletionError,
    TokenRejected,
    UnsupportedRegexError,
    VocabularyError,
)

try:
    __version__: str = _dist_version("gramask")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0+unknown"

if TYPE_CHECKING:
    from . import grammars
    from .compiled import CompiledGrammar
    from .compiler.analysis import GrammarWarning
    from .compiler.pipeline import Compiler, compile
    from .frontends.json_schema import SchemaWarning
    from .grammar import Grammar
    from .runtime.core.constraint import Constraint
    from .runtime.limits import RuntimeLimits
    from .vocab import Vocabulary

_LAZY = {
    "Vocabulary": ("gramask.vocab", "Vocabulary"),
    "Grammar": ("gramask.grammar", "Grammar"),
    "compile": ("gramask.compiler.pipeline", "compile"),
    "Compiler": ("gramask.compiler.pipeline", "Compiler"),
    "CompiledGrammar": ("gramask.compiled", "CompiledGrammar"),
    "Constraint": ("gramask.runtime.core.constraint", "Constraint"),
    "RuntimeLimits": ("gramask.runtime.limits", "RuntimeLimits"),
    "GrammarWarning": ("gramask.compiler.analysis", "GrammarWarning"),
    "SchemaWarning": ("gramask.frontends.json_schema", "SchemaWarning"),
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
    "BudgetError",
    "CompiledGrammar",
    "Compiler",
    "Constraint",
    "GramaskError",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "InvalidPrefixError",
    "InvalidRegexError",
    "InvalidSuffixError",
    "LexerTooLargeError",
    "LimitExceededError",
    "NoCompletionError",
    "RuntimeLimits",
    "SchemaWarning",
    "TokenRejected",
    "UnsupportedRegexError",
    "Vocabulary",
    "VocabularyError",
    "compile",
    "grammars",
]
