"""What both fill-in-the-middle constraints share (basic lexer mode:
:mod:`gramask.runtime.fim.constraint`; contextual: :mod:`gramask.runtime.fim.contextual`):
the suffix, the original parser beside the quotient one, the memos of exact end checks, and
the collector paused around the work that builds long-lived parser states.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, TypeVar

from ...errors import InvalidPrefixError, InvalidSuffixError
from ..core.constraint import Constraint, Explanation, TokenBudget
from ..core.parse_state import PUID
from ..core.step_state import LexState, StepState
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo

if TYPE_CHECKING:
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
        self._closing = ob.ctx.closable is not None  # (see FimConstraint._walk)
        self._ends: dict[tuple[int, int, int], bool] = _shared if _shared is not None else {}
        # (suffix offset, parser state uid) at a lexeme boundary → verdict; states kept alive
        self._ends_at: dict[tuple[int, int], tuple[bool]] = (
            _ends_at if _ends_at is not None else {})
        self._alive: list[PState] = _alive if _alive is not None else []
        super().__init__(qb, vocab, prefix, tab_len=tab_len, max_tokens=max_tokens,
                         budget=budget, _history=_history, _chunks=_chunks,
                         _finished=_finished, _plans=_plans)

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
        says when; memoised per (q, k) in ``_glue``)."""
        raise NotImplementedError

    @property
    def suffix(self) -> bytes:
        """The code after the cursor."""
        return self._suffix

    def explain(self) -> Explanation:
        """Why the mask is what it is (quotient parser's view), plus the suffix length."""
        out = super().explain()
        out["suffix_bytes"] = len(self._suffix)
        return out
