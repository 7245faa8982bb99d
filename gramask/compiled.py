"""``compile()`` and ``CompiledGrammar``: the pipeline's middle, between building and running.

compile: Grammar + Vocabulary → lexer DFA → token tables + parse automaton → artifact (cached).
CompiledGrammar: holds the arrays; builds the shared runtime (parser context, mask builder)
lazily on the first ``constraint()``; saves and loads ``.gmask`` files.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .cache.artifact import FORMAT_VERSION, read_artifact, write_artifact
from .cache.store import cache_key, cached_path, default_cache_dir, report_bad_entry
from .compiler.lexer import LexerDFA
from .compiler.parse_tables import ParseTables
from .compiler.tables import TokenTables
from .errors import ArtifactError
from .grammar import Grammar
from .runtime.constraint import Constraint
from .vocab import Vocabulary

__all__ = ["CompiledGrammar", "compile"]


def _version() -> str:
    from . import __version__

    return __version__


class CompiledGrammar:
    """Token-mask tables for one (grammar, vocabulary) pair, plus the parser automaton."""

    def __init__(
        self,
        grammar: Grammar,
        vocab: Vocabulary,
        dfa: LexerDFA,
        tables: TokenTables,
        parse_tables: ParseTables,
        info: dict[str, Any] | None = None,
    ) -> None:
        self.grammar = grammar
        self.vocab = vocab
        self.dfa = dfa
        self.tables = tables
        self.parse_tables = parse_tables
        self.info: dict[str, Any] = dict(info or {})
        self._builder: Any = None

    # ------------------------------------------------------------------ runtime
    def _runtime(self) -> Any:
        if self._builder is None:
            from .runtime.earley import Automaton
            from .runtime.masks import MaskBuilder
            from .runtime.parse_state import ParserContext

            pt = self.parse_tables
            sym = {s: i for i, s in enumerate(pt.symbols)}
            ind = self.grammar.indentation
            ignored_bits = sum(1 << i for i, t in enumerate(self.grammar.terminals) if t.ignored)
            kw: dict[str, Any] = {}
            if ind is not None:
                kw = dict(
                    newline=sym[ind.newline],
                    indent=sym.get(ind.indent, -1),
                    dedent=sym.get(ind.dedent, -1),
                    open_brackets=tuple(sym[n] for n in ind.open_brackets if n in sym),
                    close_brackets=tuple(sym[n] for n in ind.close_brackets if n in sym),
                )
            ctx = ParserContext(Automaton(pt), self.dfa.num_terminals, ignored_bits, **kw)
            names = list(self.dfa.terminal_names)
            cont = (
                names.index(ind.continuation)
                if ind is not None and ind.continuation in names
                else -1
            )
            self._builder = MaskBuilder(self.tables, self.dfa, ctx, len(self.vocab), cont)
        return self._builder

    def constraint(
        self,
        prefix: str | bytes = "",
        suffix: str | bytes | None = None,
        max_tokens: int | None = None,
    ) -> Constraint:
        """A fresh :class:`Constraint` for one generation after ``prefix``.

        Raises
        ------
        InvalidPrefixError
            No program starts with ``prefix``; the error names the byte offset.
        InvalidSuffixError
            No middle connects ``prefix`` to ``suffix``; the error names the offset in the suffix.
        NotImplementedError
            ``max_tokens`` (budgets) is not built yet.
        """
        if suffix is not None:
            from .runtime.fim import fim_constraint

            return fim_constraint(self._runtime(), self.vocab, prefix, suffix, self.grammar)
        if max_tokens is not None:
            raise NotImplementedError(
                "token budgets (max_tokens=...) are not implemented yet in this version"
            )
        ind = self.grammar.indentation
        return Constraint(
            self._runtime(), self.vocab, prefix, tab_len=ind.tab_len if ind else 8
        )

    # ------------------------------------------------------------------ persistence
    def _arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        out.update(self.vocab.to_arrays())
        out.update(self.dfa.arrays())
        out.update(self.tables.arrays())
        out.update(self.parse_tables.arrays())
        return out

    def save(self, path: str | os.PathLike[str]) -> int:
        """Write the artifact atomically; returns its size in bytes."""
        header = {
            "gramask_version": _version(),
            "grammar": self.grammar.to_json(),
            "grammar_hash": self.grammar.fingerprint(),
            "vocab": self.vocab.metadata(),
            "vocab_hash": self.vocab.fingerprint(),
            "parse_tables": self.parse_tables.metadata(),
            "info": self.info,
        }
        return write_artifact(path, self._arrays(), header)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CompiledGrammar:
        """Load and verify a ``.gmask`` artifact (no pickle).

        Raises
        ------
        ArtifactError, ArtifactVersionError
            Corrupt, truncated, foreign, or written by another format version.
        """
        arrays, header = read_artifact(path)
        try:
            grammar = Grammar.from_json(header["grammar"])
            vocab = Vocabulary.from_arrays(arrays, header["vocab"])
            names = [t.name for t in grammar.terminals]
            dfa = LexerDFA.from_arrays(arrays, names)
            nl = names.index(grammar.indentation.newline) if grammar.indentation else -1
            tables = TokenTables.from_arrays(
                arrays, dfa.num_states, len(vocab), len(names), nl_terminal=nl
            )
            pt = ParseTables.from_arrays(arrays, header["parse_tables"])
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise ArtifactError(f"{path}: inconsistent artifact ({type(e).__name__}: {e})") from None
        info = dict(header.get("info", {}))
        info["grammar_hash"] = header.get("grammar_hash")
        info["vocab_hash"] = header.get("vocab_hash")
        info["gramask_version"] = header.get("gramask_version")
        return cls(grammar, vocab, dfa, tables, pt, info)

    # ------------------------------------------------------------------ inspection
    def stats(self) -> dict[str, Any]:
        """What the artifact holds: sizes, states, densities, per-terminal breakdown."""
        t = self.tables
        v = len(self.vocab)
        s = self.dfa.num_states
        nnz = t.nnz
        row_nnz = np.diff(t.rows_indptr)
        full_rows = t.row_base < 0
        # per terminal: lexer states where it is live, and table entries in those rows
        per_term = []
        for i, name in enumerate(self.dfa.terminal_names):
            live = self.dfa.live[:, i]
            per_term.append(
                {
                    "name": name,
                    "pattern": self.grammar.terminals[i].pattern,
                    "ignored": bool(self.dfa.ignored[i]),
                    "live_states": int(live.sum()),
                    "accepting_states": int((self.dfa.accept == i).sum()),
                    "table_entries": int(row_nnz[live].sum()),
                }
            )
        arrays = self._arrays()
        return {
            "grammar": self.grammar.source or self.grammar.start,
            "start": self.grammar.start,
            "vocabulary": self.vocab.metadata(),
            "vocab_size": v,
            "terminals": self.dfa.num_terminals,
            "rules": len(self.grammar.rules),
            "lexer_states": s,
            "parser_states": self.parse_tables.num_states,
            "table_rows": s,
            "rows_stored_whole": int(full_rows.sum()),
            "rows_stored_as_diff": int((~full_rows).sum()),
            "unique_rows": len({
                (int(t.row_base[q]), bytes(t.rows_indices[a:b]), bytes(t.rows_data[a:b]))
                for q, (a, b) in enumerate(zip(t.rows_indptr[:-1], t.rows_indptr[1:], strict=False))}),
            "nonzeros": nnz,
            "density": nnz / max(1, s * v),
            "outcome_nodes": len(t.node_head),
            "winnable_classes": t.num_classes,
            "array_bytes": int(sum(a.nbytes for a in arrays.values())),
            "build_seconds": self.info.get("build_seconds"),
            "built_at": self.info.get("built_at"),
            "gramask_version": self.info.get("gramask_version", _version()),
            "grammar_hash": self.grammar.fingerprint(),
            "vocab_hash": self.vocab.fingerprint(),
            "per_terminal": per_term,
        }


def build(grammar: Grammar, vocab: Vocabulary, *, progress: bool | None = None) -> CompiledGrammar:
    """Compile without the cache."""
    from tqdm.auto import tqdm

    from .compiler.lexer import build_lexer_dfa
    from .compiler.parse_tables import build_parse_tables
    from .compiler.tables import build_token_tables

    t0 = time.perf_counter()
    dfa = build_lexer_dfa(grammar.terminals)
    pt = build_parse_tables(grammar)
    nl = (
        [t.name for t in grammar.terminals].index(grammar.indentation.newline)
        if grammar.indentation
        else -1
    )
    special = np.array([vocab.is_special(i) for i in range(len(vocab))], dtype=bool)
    disable = None if progress is None else not progress
    with tqdm(total=dfa.num_states, desc="gramask: token tables", unit="state",
              disable=disable, leave=False) as bar:
        tables = build_token_tables(
            dfa,
            vocab.tokens,
            special,
            nl_terminal=nl,
            tab_len=grammar.indentation.tab_len if grammar.indentation else 8,
            progress=bar.update,
        )
    info = {
        "build_seconds": round(time.perf_counter() - t0, 3),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return CompiledGrammar(grammar, vocab, dfa, tables, pt, info)


def compile(
    grammar: Grammar,
    vocab: Vocabulary,
    *,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
) -> CompiledGrammar:
    """Compile ``grammar`` against ``vocab``, or load the result from the on-disk cache.

    The cache key hashes the grammar (terminals and rules, imports resolved), the vocabulary's
    bytes, the artifact format and the gramask version. An unusable entry is warned about
    (:class:`gramask.cache.store.CacheWarning`) and rebuilt.
    """
    if not cache:
        return build(grammar, vocab, progress=progress)
    d = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    key = cache_key(
        grammar_hash=grammar.fingerprint(),
        vocab_hash=vocab.fingerprint(),
        format_version=FORMAT_VERSION,
        version=_version(),
    )
    path = cached_path(d, key)
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
    cg = build(grammar, vocab, progress=progress)
    try:
        cg.save(path)
        cg.info["cache_path"] = str(path)
    except OSError as e:  # a read-only cache must not break compilation
        import warnings

        from .cache.store import CacheWarning

        warnings.warn(f"gramask: cannot write cache entry {path}: {e}", CacheWarning, stacklevel=2)
    cg.info["from_cache"] = False
    return cg
