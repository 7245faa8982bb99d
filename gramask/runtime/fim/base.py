"""What both fill-in-the-middle constraints share (basic lexer mode:
:mod:`gramask.runtime.fim.constraint`; contextual: :mod:`gramask.runtime.fim.contextual`):
the suffix, the original parser beside the quotient one, the memos of exact end checks, and
the collector paused around the work that builds long-lived parser states.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Self, TypeVar

from ...errors import InvalidPrefixError, InvalidSuffixError
from ..budget.verify import CompletionPool
from ..core.constraint import Constraint, Explanation, TokenBudget, starts_a_line
from ..core.indentation import advance
from ..core.parse_state import PUID
from ..core.step_state import LexState, StepState
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo

if TYPE_CHECKING:
    from ...compiler.lexer import LexerRows
    from ...vocab import Vocabulary
    from ..core.masks import MaskBuilder
    from ..core.parse_state import PState
    from .suffix_lexing import Branch

__all__ = ["FimBase", "QuotientEnds", "gc_paused", "prefix_meets_suffix"]

# (lexer state, indentation carry, quotient parser state uid) → the quotient's end verdict
QuotientEnds = BoundedMemo[tuple[int, int, int], int]

F = TypeVar("F", bound=StepState)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic collector, restored as it was. FIM setup and the exact end walks
    allocate many small, long-lived objects (Earley sets of the prefix and of the backward
    parse of the suffix); the collector's passes over them cost more than the parsing itself
    (5-20x on a 100 KB file), and none of them is garbage."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def prefix_meets_suffix() -> Iterator[None]:
    """Around the quotient parser reading the prefix: if it stops, the prefix alone is fine
    (validated before), so no program starts with it and ends with the suffix; its offset
    inside the loop-erased prefix means nothing to a user, so the suffix is at fault from its
    first byte."""
    try:
        yield
    except InvalidSuffixError:
        raise
    except InvalidPrefixError:
        raise InvalidSuffixError(
            "no middle connects this prefix to the suffix: the prefix is valid alone, but no "
            "program starts with it and ends with the suffix", position=0) from None


class FimBase(Constraint[F]):
    """A :class:`Constraint` for ``prefix + middle + suffix`` with step state ``F``: the
    quotient parser's builder is ``_b`` (masks and budgets work on its view, the first three
    fields of a step), the original's ``_ob``."""

    MAX_ENDS = 4096  # memo of exact end checks, per constraint family
    # budgets: groups past the subclass's MAX_PLANS get at most this many plans that follow
    # the bounds' choices with no search, walked all the same (budget/verify.py; SynCode Go's
    # " _," after "for" was forbidden with tokens to spare where the searched plans ran out)
    GREEDY_PLANS = 384
    _inputs = "prefix and suffix"
    _completion_pool: CompletionPool | None = None  # (per constraint; clones start afresh)

    def __init__(
        self,
        qb: MaskBuilder,
        ob: MaskBuilder,
        vocab: Vocabulary,
        prefix: str | bytes = "",
        suffix: str | bytes = "",
        *,
        tab_len: int = 8,
        max_tokens: int | None = None,
        budget: TokenBudget[F] | None = None,
        _history: list[F] | None = None,
        _chunks: list[bytes] | None = None,
        _finished: bool = False,
        _shared: dict[tuple[int, int, int], bool] | None = None,
        _branches: list[tuple[Branch, int, int]] | None = None,
        _glue: dict[tuple[int, int], tuple[int, int, int] | None] | None = None,
        _ends_at: dict[tuple[int, int], tuple[bool]] | None = None,
        _alive: list[PState] | None = None,
        _plans: list[tuple[int, ...] | None] | None = None,
        _qends: QuotientEnds | None = None,
    ) -> None:
        self._ob = ob
        # the quotient's end verdicts, shared by the clones: a verdict depends on the step's
        # quotient view and on what a constraint family never changes (quotient builder,
        # suffix, branches), and the same views are asked again and again (every budget
        # step's cost estimates and completion walks)
        self._qends: QuotientEnds = (
            _qends if _qends is not None
            else BoundedMemo(memo_size(qb.limits.step_memo)))
        self._branches = _branches if _branches is not None else []
        self._glue: dict[tuple[int, int], tuple[int, int, int] | None] = (
            _glue if _glue is not None else {})
        self._suffix = suffix.encode("utf-8") if isinstance(suffix, str) else bytes(suffix)
        # the suffix lexing compares indentation widths as numbers, which CPython's two
        # measures do not when tabs or form feeds indent: then only the walk decides
        self._tabbed = ob.nl_t >= 0 and (b"\t" in self._suffix or b"\f" in self._suffix)
        # (see FimConstraint._walk; a terminal the basic lexer never produces: the same)
        self._closing = ob.ctx.closable is not None or ob.ctx.shifts_tried
        self._ends: dict[tuple[int, int, int], bool] = _shared if _shared is not None else {}
        # (suffix offset, parser state uid) at a lexeme boundary → verdict; states kept alive
        self._ends_at: dict[tuple[int, int], tuple[bool]] = (
            _ends_at if _ends_at is not None else {})
        self._alive: list[PState] = _alive if _alive is not None else []
        super().__init__(qb, vocab, prefix, tab_len=tab_len, max_tokens=max_tokens,
                         budget=budget, _history=_history, _chunks=_chunks,
                         _finished=_finished, _plans=_plans)

    def _after_line_start(self, st: F) -> F:
        """The initial step ``st`` after the newline the input starts as where the original
        grammar wants one (as :class:`Constraint`'s)."""
        if starts_a_line(self._ob):
            r = self._walk(st, b"\n")
            if isinstance(r, int):
                raise InvalidPrefixError("no program fits this suffix", position=0)
            st = r
        return st

    def _exact_end(self, q: int, carry: int, p: PState) -> bool:
        """:meth:`_suffix_completes` from the original grammar's ``(q, carry, p)``, memoised
        per constraint family (``_ends``)."""
        key = (q, carry, p[PUID])
        r = self._ends.get(key)
        if r is None:
            with gc_paused():  # as in FIM setup: the walk builds long-lived parser states
                r = self._suffix_completes(q, carry, p)
            if len(self._ends) >= self.MAX_ENDS:
                self._ends.clear()
            self._ends[key] = r
        return r

    def _suffix_completes(self, q: int, carry: int, p: PState) -> bool:
        """Exact: does the suffix, read from this original-grammar state, end a program?"""
        raise NotImplementedError

    # The suffix walks of _suffix_completes converge (hash-consed parser states at the same
    # suffix offset): each stops at the first lexeme boundary an earlier walk passed through.
    def _met_before(self, i: int, p: PState, seen: list[tuple[int, int]]) -> bool | None:
        """At the lexeme boundary before ``suffix[i]`` in parser state ``p``: the verdict of
        an earlier walk through it, or None (the boundary is noted in ``seen``)."""
        key = (i, p[PUID])
        known = self._ends_at.get(key)
        if known is not None:
            return known[0]
        seen.append(key)
        self._alive.append(p)
        return None

    def _remember(self, seen: list[tuple[int, int]], result: bool) -> bool:
        """``result`` recorded for every boundary the walk passed through (``seen``)."""
        memo = self._ends_at
        if len(memo) > 8 * len(self._suffix) + 4096:
            memo.clear()
            self._alive.clear()
        for k in seen:
            memo[k] = (result,)
        return result

    def _view(self, st: F) -> LexState:
        """The quotient parser's view of a step: what masks and budgets work on."""
        return st[0], st[1], st[2]

    def _quotient_end(self, st: F) -> int:
        """The quotient's verdict on ending the middle here (:meth:`_quotient_verdict`),
        memoised per quotient view: exact, the view is all it reads."""
        q, carry, pq = st[0], st[1], st[2]
        key = (q, carry, pq[PUID])
        memo = self._qends
        v = memo.young.get(key, MISSING)  # one lookup on a hit: the hot path
        if v is MISSING:
            v = memo.get(key, MISSING)
            if v is MISSING:
                v = self._quotient_verdict(q, carry, pq)
                memo.put(key, v)
        return v

    def _quotient_verdict(self, q: int, carry: int, pq: PState) -> int:
        """Can the middle end at this quotient view (0: no; more: see the subclass)?"""
        raise NotImplementedError

    def _glue_walk(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The middle's last lexeme (lexer state ``q``) continued by ``suffix[:k]``: (final
        lexer state, whether a newline reset the carry, width added), or None (each mode
        says when: :meth:`_glue_fresh`); memoised per (q, k) in ``_glue``."""
        key = (q, k)
        glue = self._glue
        if key in glue:
            return glue[key]
        r = glue[key] = self._glue_fresh(q, k)
        return r

    def _glue_fresh(self, q: int, k: int) -> tuple[int, int, int] | None:
        """:meth:`_glue_walk` unmemoised."""
        raise NotImplementedError

    def _run_suffix(self, rows: LexerRows, q: int, k: int
                    ) -> tuple[int, int, int] | None:
        """The lexer DFA ``rows`` from state ``q`` over ``suffix[:k]``: (final state, whether
        a line break reset the indentation carry, width added), or None where it dies."""
        reset, width = 0, 0
        for byte in self._suffix[:k]:
            q = rows[q][byte]
            if q < 0:
                return None
            if byte in (10, 12):
                reset = 1
            if byte <= 32:
                width = advance(width, byte)
        return q, reset, width

    def clone(self) -> Self:
        """An independent copy; the suffix's memos and verdicts stay shared by the family."""
        c = type(self)(
            self._b, self._ob, self._vocab, suffix=self._suffix, tab_len=self._tab,
            max_tokens=self._max_tokens, budget=self._budget, _plans=list(self._plans),
            _history=list(self._history), _chunks=list(self._chunks),
            _finished=self._finished, _shared=self._ends, _branches=self._branches,
            _glue=self._glue, _ends_at=self._ends_at, _alive=self._alive, _qends=self._qends,
        )
        c._prefix = self._prefix
        return c

    def _pool(self) -> CompletionPool:
        """This generation's recently verified completions (:class:`CompletionPool`)."""
        if self._completion_pool is None:
            self._completion_pool = CompletionPool()
        return self._completion_pool

    @property
    def suffix(self) -> bytes:
        """The code after the cursor."""
        return self._suffix

    def explain(self) -> Explanation:
        """Why the mask is what it is (quotient parser's view), plus the suffix length."""
        out = super().explain()
        out["suffix_bytes"] = len(self._suffix)
        return out
