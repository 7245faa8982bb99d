"""The build pipeline: Grammar + Vocabulary → lexer DFA → token tables + parse automaton.

A :class:`Compiler` is bound to one vocabulary and owns the on-disk cache (as XGrammar's
``GrammarCompiler`` is bound to one tokenizer): compiling many grammars against one vocabulary
hashes the vocabulary once. :func:`gramask.compile` is the one-call form.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

from ..artifact import FORMAT_VERSION
from ..cache.store import CacheWarning, cache_key, cached_path, default_cache_dir, report_bad_entry
from ..compiled import CompiledGrammar, package_version
from ..errors import ArtifactError, LexerTooLargeError
from ..grammar import Grammar
from ..vocab import Vocabulary

__all__ = ["Compiler", "build", "compile"]


def build(grammar: Grammar, vocab: Vocabulary, *, progress: bool | None = None,
          lazy: bool = False) -> CompiledGrammar:
    """Compile without the cache. ``progress``: None shows a bar on a terminal only.

    ``lazy``: walk no table row now, each when the runtime first reads it (see
    :func:`gramask.compiler.tables.lazy_token_tables`): what a grammar compiled for one
    request (a JSON Schema) wants, whose masks visit a few of its lexer states. Saving the
    result walks the rest."""
    from .lexer import MAX_LAZY_LEXER_STATES, MAX_LEXER_STATES, build_lexer_dfa
    from .parse_tables import build_parse_tables
    from .tables import build_token_tables, lazy_token_tables

    t0 = time.perf_counter()
    from ..frontends.json_schema_base import SOURCE as JSON_SCHEMA_SOURCE
    from .contextual_wins import contextual_order
    from .diagnostics import check_lexer
    from .lark_order import order_indices
    from .separable_check import check_separable

    order = (order_indices(grammar.lark_order, grammar.terminal_names)
             if grammar.lexer == "basic" and grammar.lark_order else None)
    max_states = MAX_LAZY_LEXER_STATES if lazy else MAX_LEXER_STATES
    dfa = build_lexer_dfa(grammar.terminals, progress=progress, order=order,
                          max_states=max_states)
    pt = build_parse_tables(grammar)
    cuts = contextual_order(grammar, pt, dfa)  # (lark's order, where it changes the lexer)
    if cuts is not None:
        dfa = build_lexer_dfa(grammar.terminals, progress=False, cuts=cuts,
                              max_states=max_states)
    # A request's schema: its diagnostics cannot fail (contextual lexer) and are logged at
    # DEBUG only, so they wait until stats() or save() reads them, not before the first mask.
    defer = lazy and grammar.lexer == "contextual" and grammar.source == JSON_SCHEMA_SOURCE
    # raises for a terminal that can never win
    diagnostics = [] if defer else check_lexer(grammar, dfa, pt)
    # held by the vocabulary, so every grammar compiled against it (a new JSON Schema per
    # request) reuses them and the token byte matrix built from them
    tokens, special = vocab.token_tuple, vocab.special_mask
    contextual = grammar.lexer == "contextual"
    tab_len = grammar.indentation.tab_len if grammar.indentation else 8
    end_ids = check_separable(grammar, dfa, pt)  # raises where the language is empty
    if lazy:
        tables = lazy_token_tables(dfa, tokens, special, nl_terminal=grammar.newline_terminal,
                                   tab_len=tab_len, contextual=contextual, end_ids=end_ids)
        cg = CompiledGrammar(grammar, vocab, dfa, tables, pt, _info(t0, diagnostics))
        if defer:
            del cg.info["lexer_diagnostics"]
            cg._pending_info = lambda: {"lexer_diagnostics": check_lexer(grammar, dfa, pt)}
        return cg
    from tqdm.auto import tqdm

    disable = None if progress is None else not progress
    with tqdm(total=dfa.num_states, desc="gramask: token tables", unit="state",
              disable=disable, leave=False) as bar:
        tables = build_token_tables(
            dfa,
            tokens,
            special,
            nl_terminal=grammar.newline_terminal,
            tab_len=tab_len,
            progress=bar.update,
            contextual=contextual,
            end_ids=end_ids,
        )
    return CompiledGrammar(grammar, vocab, dfa, tables, pt, _info(t0, diagnostics))


def _info(t0: float, diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "build_seconds": round(time.perf_counter() - t0, 3),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "lexer_diagnostics": diagnostics,
    }


class Compiler:
    """Compiles grammars against one vocabulary, through an on-disk cache.

    The cache key hashes the grammar (terminals and rules, imports resolved), the vocabulary's
    bytes, the artifact format and the gramask version. An unusable entry is warned about
    (:class:`gramask.cache.store.CacheWarning`) and rebuilt. ``cache=False`` neither reads nor
    writes it, and walks no token-table row at compile time, each when a mask first needs it
    (a grammar per request: its first mask in milliseconds); ``cache_dir`` defaults to
    ``$GRAMASK_CACHE_DIR``, else the user cache directory.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        *,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        progress: bool | None = None,
    ) -> None:
        self.vocab = vocab
        self.cache = cache
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.progress = progress

    def cache_path(self, grammar: Grammar) -> Path:
        """Where the artifact of ``grammar`` × this vocabulary lives in the cache."""
        key = cache_key(
            grammar_hash=grammar.fingerprint(),
            vocab_hash=self.vocab.fingerprint(),
            format_version=FORMAT_VERSION,
            version=package_version(),
        )
        return cached_path(self.cache_dir or default_cache_dir(), key)

    def compile(self, grammar: Grammar) -> CompiledGrammar:
        """The compiled grammar, from the cache if a valid entry is there, else built."""
        vocab = self.vocab
        if not self.cache:  # nothing written: rows walked as the runtime reads them
            return build(grammar, vocab, progress=self.progress, lazy=True)
        path = self.cache_path(grammar)
        if path.exists():
            try:
                cg = CompiledGrammar.load(path)
                if cg.grammar.fingerprint() != grammar.fingerprint() or (
                    cg.vocab.fingerprint() != vocab.fingerprint()
                ):
                    raise ArtifactError("stale: its grammar or vocabulary hash does not match")
                cg.info["cache_path"] = str(path)
                cg.info["from_cache"] = True
                return cg
            except ArtifactError as e:
                report_bad_entry(path, e)
        try:
            cg = build(grammar, vocab, progress=self.progress)
        except LexerTooLargeError as e:
            if not e.lazy_fits:
                raise
            # (a long counted string: too many rows to walk ahead, few a request reaches)
            warnings.warn(f"gramask: not cached: {e}; compiled without the cache instead",
                          CacheWarning, stacklevel=2)
            cg = build(grammar, vocab, progress=self.progress, lazy=True)
            cg.info["from_cache"] = False
            return cg
        try:
            cg.save(path)
            cg.info["cache_path"] = str(path)
        except (OSError, ArtifactError) as e:  # a read-only cache, or a FIFO at the entry's path
            warnings.warn(
                f"gramask: cannot write cache entry {path}: {e}", CacheWarning, stacklevel=2
            )
        cg.info["from_cache"] = False
        return cg


def compile(
    grammar: Grammar,
    vocab: Vocabulary,
    *,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> CompiledGrammar:
    """Compile ``grammar`` against ``vocab``, or load the result from the on-disk cache.

    The one-call form of :class:`Compiler` (see there for the cache).
    """
    return Compiler(vocab, cache=cache, cache_dir=cache_dir, progress=progress).compile(grammar)
