"""``CompiledGrammar``: the compiled arrays as loaded data, and the factory of constraints.

It holds the lexer DFA, token tables and parse automaton of one (grammar, vocabulary) pair,
builds the shared runtime (parser context, mask builder) lazily on the first ``constraint()``,
and saves and loads ``.gmask`` files. Building them is ``gramask.compiler.pipeline``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .artifact import read_artifact, write_artifact
from .compiler.lexer import LexerDFA
from .compiler.parse_tables import ParseTables
from .compiler.tables import TokenTables
from .errors import ArtifactError, InvalidSuffixError
from .grammar import Grammar
from .runtime.budget.bounded import BoundedBudget
from .runtime.core.arguments import check_budget
from .runtime.core.constraint import Constraint
from .runtime.core.step_state import LexState
from .runtime.core.text_input import text_bytes
from .runtime.limits import RuntimeLimits, check_suffix_size
from .vocab import Vocabulary

if TYPE_CHECKING:
    from .runtime.budget.planner import BudgetPlanner
    from .runtime.core.masks import MaskBuilder

__all__ = ["CompiledGrammar", "package_version"]


def package_version() -> str:
    """The installed gramask version (written into artifacts and cache keys)."""
    from . import __version__

    return __version__


@dataclass(eq=False)
class CompiledGrammar:
    """Token-mask tables for one (grammar, vocabulary) pair, plus the parser automaton."""

    grammar: Grammar
    vocab: Vocabulary
    dfa: LexerDFA
    tables: TokenTables
    parse_tables: ParseTables
    info: dict[str, Any] = field(default_factory=dict)
    _builder: Any = field(default=None, init=False, repr=False)
    # what the build left for later (a request's lexer diagnostics): see ``_settled_info``
    _pending_info: Callable[[], dict[str, Any]] | None = field(default=None, init=False,
                                                               repr=False)

    _limits: RuntimeLimits = field(default_factory=RuntimeLimits, init=False, repr=False)
    # guards building the shared runtime and planner (constraints may be made from threads)
    _lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.info = dict(self.info)  # the caller's dict is not shared

    def _settled_info(self) -> dict[str, Any]:
        """``info``, with what the build left for later filled in (stats, save)."""
        pending = self._pending_info
        if pending is not None:
            self.info.update(pending())
            self._pending_info = None
        return self.info

    # ------------------------------------------------------------------ runtime
    @property
    def limits(self) -> RuntimeLimits:
        """The bounds of this compiled grammar's runtime (set with ``constraint(limits=)``)."""
        return self._limits

    def _runtime(self, limits: RuntimeLimits | None = None) -> Any:
        b = self._builder
        # (the builder's own limits, not ``_limits``: another thread may have set those for
        # the runtime it is about to build, while ``b`` is still the old one)
        if b is not None and (limits is None or limits == b.limits):
            return b  # the common case takes no lock
        with self._lock:  # one thread builds; the others wait for it and share the result
            return self._build_runtime(limits)

    def _build_runtime(self, limits: RuntimeLimits | None) -> Any:
        if limits is not None and limits != self._limits:
            # constraints share one runtime (memo tables) per limits; existing ones keep theirs
            self._limits = limits
            self._builder = None
        if self._builder is None:
            from .runtime.core.earley import Automaton
            from .runtime.core.masks import MaskBuilder
            from .runtime.core.parse_state import ParserContext

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
                    tab_len=ind.tab_len,
                    cpython_ends=ind.cpython_ends,
                )
            aut = Automaton(pt, self._limits)
            reserved: list[tuple[int, int]] = []
            prio: list[int] = []  # (contextual: the lexing priorities)
            lost = None
            fragile = 0  # terminals that may lose every lexeme under some allowed set
            if self.grammar.lexer == "contextual":
                from .compiler.contextual_wins import wins
                from .runtime.core.viability import Viability

                # (the compile-time check's, where this process compiled the grammar)
                w = wins(self.grammar, self.dfa, pt)
                prio, reserved, lost = w.priorities, w.reserved, w.lost
                fragile = sum(1 << t for t in w.threats)
                if lost is not None:  # (no bundled grammar: their sets are all kept)
                    aut.viable = Viability(aut, lost)
            else:  # a terminal the basic lexer never produces: the same, in every state
                from .runtime.core.viability import Viability, never_lexed

                never = never_lexed(self.dfa, pt, ignored_bits)
                if never:  # (none in the bundled grammars)
                    lost = [never] * len(pt.accepting)
                    aut.viable = Viability(aut, lost)
            ctx = ParserContext(aut, self.dfa.num_terminals, ignored_bits, **kw)
            ctx.shifts_tried = self.grammar.lexer != "contextual" and aut.viable is not None
            if ind is not None:  # (openers nothing closes: see closing_filter)
                from .runtime.core.viability import closed_in_place, closing_filter

                if not closed_in_place(self.grammar.rules, ind.open_brackets, ind.close_brackets,
                                       (ind.newline, ind.indent, ind.dedent)):
                    barred = sum(1 << t for t in (ctx.nl_t, ctx.indent_t, ctx.dedent_t)
                                 if t >= 0)
                    ctx.closable = closing_filter(aut, ctx.open_brackets, ctx.close_brackets,
                                                  barred, lost)
                    if ctx.closable is not None:  # sets that lead only into such brackets
                        from .runtime.core.viability import Viability, unclosable_shifts

                        dead = unclosable_shifts(aut, ctx.closable, ctx.open_brackets)
                        if any(dead):
                            aut.viable = Viability(aut, [
                                d | (lost[s] if lost is not None else 0)
                                for s, d in enumerate(dead)])
            cont = self.grammar.terminal_index(ind.continuation) if ind is not None else -1
            builder = MaskBuilder(self.tables, self.dfa, ctx, len(self.vocab), cont)
            if self.grammar.lexer != "contextual":
                builder.end_conditions = _end_conditions(self.grammar, self.dfa, self.tables,
                                                         self.parse_tables)
            if self.grammar.lexer == "contextual":
                from .runtime.core.contextual_lexer import ContextualLexer

                tokens, special = self.vocab.token_tuple, self.vocab.special_mask  # shared
                builder.contextual = ContextualLexer(
                    self.dfa, ctx, prio,
                    tokens, special,
                    nl_terminal=self.tables.nl_terminal, continuation_terminal=cont,
                    tab_len=ind.tab_len if ind is not None else 8,
                    tables=self.tables if self.tables.contextual else None,
                    reserved=reserved,
                    close=self.grammar.reserved_keywords,
                    fragile=fragile,
                )
                builder.contextual.dead_ends = _contextual_ends(
                    self.grammar, self.dfa, self.parse_tables, self.vocab)
            self._builder = builder
        return self._builder

    def constraint(
        self,
        prefix: str | bytes = "",
        suffix: str | bytes | None = None,
        max_tokens: int | None = None,
        *,
        limits: RuntimeLimits | None = None,
    ) -> Constraint:
        """A fresh :class:`Constraint` for one generation after ``prefix``.

        ``limits`` (:class:`~gramask.RuntimeLimits`) bound the runtime that this compiled
        grammar's constraints share; None keeps the current ones (:attr:`limits`), different
        ones start a new shared runtime (constraints made before keep the old one).

        ``prefix`` and ``suffix`` are ``str`` (encoded as UTF-8) or bytes; ``max_tokens`` an
        ``int >= 0`` or None. A suffix works in both lexer modes, with or without
        Python-style indentation (docs/semantics.md, "Fill-in-the-middle").

        Raises
        ------
        TypeError
            ``prefix`` or ``suffix`` not ``str``/bytes (an int or a list of ints is not read
            as bytes), ``max_tokens`` not an int (``True`` and ``"5"`` included), ``limits``
            not a :class:`~gramask.RuntimeLimits`.
        ValueError
            ``max_tokens`` below 0 (the builtin error; :class:`BudgetError` is for a budget
            too small for the text).
        InvalidPrefixError
            No program starts with ``prefix``; the error names the byte offset (also text
            with no UTF-8 encoding, such as a lone surrogate, at its offset).
        LimitExceededError
            Parsing the prefix outgrew ``limits`` (also from the constraint's methods).
        InvalidSuffixError
            No middle connects ``prefix`` to ``suffix``; the error names the offset in the suffix
            (also a lone surrogate in it).
        LimitExceededError
            A suffix longer than ``limits.max_suffix_bytes`` (checked first, before any
            work), or a quotient larger than ``limits.max_quotient_rules``.
        BudgetError
            ``max_tokens`` is below the tokens of the shortest completion gramask finds
            (an upper bound on the true minimum: ``BudgetError.minimum``).
        NoCompletionError
            ``max_tokens`` given, but gramask found no completion to plan the budget with
            (a ``RuntimeError``; the same constraint without ``max_tokens`` works).
        """
        # the same checks on every path, before any work (a suffix=10**8 would otherwise
        # be read as 10**8 NUL bytes)
        prefix = text_bytes(prefix, "prefix")
        if suffix is not None:
            suffix = text_bytes(suffix, "suffix")
        check_budget(max_tokens)
        if limits is not None and not isinstance(limits, RuntimeLimits):
            raise TypeError(f"limits must be a gramask.RuntimeLimits, not {type(limits).__name__}")
        if suffix is not None:
            check_suffix_size(suffix, limits or self.limits)
            suffix = _lark_lines_suffix(self.grammar, suffix)
        if suffix is not None:
            if self.grammar.lexer == "contextual":
                from .runtime.fim.contextual import contextual_fim_constraint

                cbuilder = self._runtime(limits)
                return contextual_fim_constraint(
                    cbuilder, self.vocab, prefix, suffix, self.grammar, max_tokens,
                    lambda: self._planner(cbuilder))
            from .runtime.fim.constraint import fim_constraint

            builder = self._runtime(limits)
            return fim_constraint(builder, self.vocab, prefix, suffix, self.grammar, max_tokens,
                                  lambda: self._planner(builder))
        ind = self.grammar.indentation
        builder = self._runtime(limits)
        cls: type[Constraint[LexState]] = Constraint
        if self.grammar.lexer == "contextual":
            from .runtime.budget.contextual import ContextualBudgetConstraint

            cls = ContextualBudgetConstraint
        return cls(
            builder, self.vocab, prefix, tab_len=ind.tab_len if ind else 8,
            max_tokens=max_tokens, budget=BoundedBudget(lambda: self._planner(builder)),
        )

    def _planner(self, builder: MaskBuilder) -> BudgetPlanner:
        """The budget planner of ``builder`` (built on first use: about a second for a
        programming language against a 100k+ vocabulary; by one thread, the others wait)."""
        p = builder.planner
        if p is not None:
            return cast("BudgetPlanner", p)
        with self._lock:
            return self._build_planner(builder)

    def _build_planner(self, builder: MaskBuilder) -> BudgetPlanner:
        if builder.planner is None:
            from .runtime.budget.contextual import ContextualBudgetPlanner
            from .runtime.budget.planner import BudgetPlanner

            ind = self.grammar.indentation
            sid = {s: i for i, s in enumerate(self.parse_tables.symbols)}
            rules = [(sid[r.lhs], tuple(sid[x] for x in r.rhs)) for r in self.grammar.rules
                     if r.lhs in sid and all(x in sid for x in r.rhs)]
            cls = ContextualBudgetPlanner if builder.contextual is not None else BudgetPlanner
            builder.planner = cls(builder, self.vocab, rules, ind.tab_len if ind else 8)
        return cast("BudgetPlanner", builder.planner)

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
            "gramask_version": package_version(),
            "grammar": self.grammar.to_json(),
            "grammar_hash": self.grammar.fingerprint(),
            "vocab": self.vocab.metadata(),
            "vocab_hash": self.vocab.fingerprint(),
            "parse_tables": self.parse_tables.metadata(),
            "info": self._settled_info(),
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
            tables = TokenTables.from_arrays(
                arrays, dfa.num_states, len(vocab), len(names),
                nl_terminal=grammar.newline_terminal,
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
            "gramask_version": self.info.get("gramask_version", package_version()),
            "grammar_hash": self.grammar.fingerprint(),
            "vocab_hash": self.vocab.fingerprint(),
            "per_terminal": per_term,
            "lexer": self.grammar.lexer,
            "lexer_diagnostics": self._settled_info().get("lexer_diagnostics", []),
        }


def _lark_lines_suffix(grammar: Grammar, suffix: bytes) -> bytes | None:
    """The suffix as fill-in-the-middle takes it. Where the text must end its own last line
    (lark's ``Indenter``: ``IndentationSpec.cpython_ends`` off), the suffix's end is the end of
    input: an empty suffix is no suffix, and one that does not end its last line cannot end a
    program (fill-in-the-middle then reads the end as CPython does, which agrees with lark's
    indenter exactly when the suffix ends with a newline)."""
    ind = grammar.indentation
    if ind is None or ind.cpython_ends:
        return suffix
    if not suffix:
        return None
    if not suffix.endswith(b"\n"):
        raise InvalidSuffixError(
            "the grammar's indentation is read as lark's Indenter reads it, which adds no "
            "newline at the end of input: end the suffix with a newline (or load the grammar "
            "with indentation=True for CPython's reading)", position=len(suffix))
    return suffix


def _end_conditions(grammar: Grammar, dfa: LexerDFA, tables: TokenTables,
                    pt: ParseTables) -> Any:
    """The runtime's lexeme-adjacency search (None where every terminal can start after
    every end, or every one the grammar puts side by side: every bundled grammar), see :mod:`gramask.runtime.core.end_conditions`."""
    from .compiler.separable import adjacency, needs_end_search
    from .runtime.core.end_conditions import EndConditions

    if not needs_end_search(grammar, dfa, pt):  # (the compile split the end classes alike)
        return None
    ec = EndConditions(adjacency(dfa), tables.state_class, tables.class_winnable,
                       grammar.newline_terminal)
    return ec if ec.classes else None


def _contextual_ends(grammar: Grammar, dfa: LexerDFA, pt: ParseTables, vocab: Vocabulary
                     ) -> Any:
    """The contextual mode's search for tokens that lead into lexemes nothing can follow
    (None where the cheap tests spare the grammar: every bundled grammar, and grammars whose
    only unsplittable pairs the allowed sets or the parser keep apart), see
    :mod:`gramask.runtime.core.contextual_ends` and
    :func:`gramask.compiler.separable.needs_end_search`."""
    from .compiler.separable import needs_end_search
    from .runtime.core.contextual_ends import ContextualEnds

    return ContextualEnds(vocab) if needs_end_search(grammar, dfa, pt) else None
