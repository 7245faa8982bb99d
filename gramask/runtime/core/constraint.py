"""One generation under a grammar: allowed(), advance(), is_complete(), clone(), rollback().

Runtime contract
----------------
* ``allowed()`` returns a fresh numpy bool array of shape ``(len(vocab),)``. A grammar token is
  True iff some continuation after it completes a program (see docs/semantics.md for the lexing
  rules this is exact under); special tokens are False except EOS, which is True iff
  ``is_complete()``. Cost: a cache hit is a copy; a miss decides each distinct table outcome
  of one or two rows once for this parser configuration.
* ``advance(token_id)`` walks the token's bytes (cost ∝ token length) and raises
  :class:`~gramask.TokenRejected` — leaving the constraint unchanged — for a token the mask does
  not allow. After EOS only ``rollback`` is accepted.
* Before EOS the mask is never all False: a constraint that reached a state with no
  continuation would have rejected the token that led there. After EOS it is all False.
* Threads: constraints of one compiled grammar may be used from any number of threads, each
  constraint by one thread at a time (``clone()`` gives another constraint). They share the
  runtime's memo tables, which are safe under concurrent readers and writers: ids come from
  atomic counters, new Earley sets and parser states are interned under a lock, and a memo
  entry is a pure function of its key, so masks are those of a single-threaded run
  (``tests/test_threads.py``). Pure Python holds the GIL: for more cores, use worker processes
  (:class:`gramask.serving.ConstraintPool`).
* ``clone()`` is O(steps) list copy of immutable states; ``rollback(n)`` is O(n). Neither
  re-parses: every step's state is an immutable, shared object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, NamedTuple, NotRequired, Protocol, TypedDict, cast

import numpy as np

from ...errors import (
    BudgetError,
    InvalidPrefixError,
    LimitExceededError,
    NoCompletionError,
    TokenRejected,
)
from .arguments import bitmask_row_bytes, check_budget, token_int
from .earley import EXPECTED
from .lexing import walk
from .masks import MaskBuilder
from .parse_state import DEPTH, ES, INDENT
from .step_state import LexState, StepState
from .text_input import text_bytes

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    from ...vocab import Vocabulary

    # the step state; ``Constraint`` unparametrised (as the samplers, serving and users name
    # it) is a constraint of any step state
    S = TypeVar("S", bound=StepState, default=Any)
else:
    from typing import TypeVar

    S = TypeVar("S", bound=StepState)

__all__ = ["Completion", "Constraint", "Explanation", "LexState", "TokenBudget", "Verified"]

# a plan that could not be made (none found, or a parse outgrew its limits while planning):
# the token or group it was for is not allowed by the budget
_PLAN_FAILED = (NoCompletionError, LimitExceededError)


class TokenBudget(Protocol[S]):
    """What a constraint asks its token budget (``max_tokens``, shortest completions); the
    budget side implements it (:class:`gramask.runtime.budget.bounded.BoundedBudget`), so
    the core does not import it."""

    def planner(self) -> object:
        """The grammar's budget planner (built on first use)."""
        ...

    def plan(self, c: Constraint[S], st: S, /) -> tuple[int, ...]:
        """A verified shortest completion from ``st``."""
        ...

    def cut(self, c: Constraint[S], st: S, m: np.ndarray, /) -> None:
        """Clear from ``m`` the tokens after which the program cannot finish in time."""
        ...


class Verified(Protocol):
    """What one budget step verified (:class:`gramask.runtime.budget.verify.VerifiedTokens`)."""

    def after(self, token_id: int, /) -> tuple[int, ...] | None:
        """The completion that verified ``token_id``, if one did."""
        ...


class Explanation(TypedDict):
    """What :meth:`Constraint.explain` returns."""

    lexeme_in_progress: bool
    lexer_state: int
    lexeme_could_be: list[str]
    parser_expects: list[str]
    bracket_depth: int
    indentation: list[int]
    suffix_bytes: NotRequired[int]  # fill-in-the-middle


class Completion(NamedTuple):
    """A way to finish the program: its text (UTF-8, lossy at a split character), its bytes
    and the vocabulary tokens that spell it."""

    text: str
    data: bytes
    token_ids: list[int]


class Constraint(Generic[S]):
    """The state of one constrained generation. Create with ``CompiledGrammar.constraint()``.

    Generic in its step state ``S``: a :data:`LexState` here, wider in fill-in-the-middle
    (whose subclasses override ``_initial_state``, ``_walk``, ``_complete``)."""

    _inputs = "prefix"  # what the constraint was given, for messages

    def __init__(
        self,
        builder: MaskBuilder,
        vocab: Vocabulary,
        prefix: str | bytes = "",
        *,
        tab_len: int = 8,
        max_tokens: int | None = None,
        budget: TokenBudget[S] | None = None,
        _history: list[S] | None = None,
        _chunks: list[bytes] | None = None,
        _finished: bool = False,
        _plans: list[tuple[int, ...] | None] | None = None,
    ) -> None:
        # one state per step: a LexState here; subclasses (fill-in-the-middle) keep wider ones
        self._history: list[S]
        self._b = builder
        self._vocab = vocab
        self._tab = tab_len
        self._max_tokens = check_budget(max_tokens)
        self._budget = budget
        # per step, a verified shortest completion from its state (None: not computed yet)
        self._plans: list[tuple[int, ...] | None]
        if _history is not None:
            self._history = _history
            self._chunks = _chunks if _chunks is not None else []
            self._finished = _finished
            self._plans = _plans if _plans is not None else [None] * len(_history)
            return
        start = self._initial_state()
        data = text_bytes(prefix, "prefix")
        st = self._walk(start, data)
        if isinstance(st, int):
            raise InvalidPrefixError("the prefix is not a prefix of any program", position=st)
        self._prefix = data
        self._history = [st]
        self._chunks = []
        self._finished = False
        self._plans = [None]
        if self._max_tokens is not None:
            try:
                need = len(self._plan())
            except NoCompletionError:
                raise NoCompletionError(
                    f"max_tokens={self._max_tokens} cannot be guaranteed: gramask found no "
                    f"completion of this {self._inputs} that the vocabulary can spell, so it cannot plan how a generation "
                    "would end in time (the search for one may have stopped short). The same "
                    "constraint without max_tokens still works; or change where the "
                    "prefix/suffix are cut", budget=self._max_tokens) from None
            if need > self._max_tokens:  # (the plan's length bounds the minimum from above)
                raise BudgetError(
                    f"max_tokens={self._max_tokens} cannot be guaranteed: the shortest "
                    f"completion gramask finds takes {need} tokens of this vocabulary "
                    f"({self.shortest_completion().text!r}): the fewest are at most {need} "
                    f"(fewer, longer tokens may exist); max_tokens={need} is admitted",
                    budget=self._max_tokens, minimum=need,
                )

    def _initial_state(self) -> S:
        """Start of input. With CPython's indentation, the input starts as if after a
        newline, so that leading whitespace on the first line is an indentation error (as in
        Python), while blank or comment lines before the first statement are fine."""
        b = self._b
        st: S = cast(S, (0, 0, b.ctx.root))  # this class's states are LexStates
        if starts_a_line(b):
            r = self._walk(st, b"\n")
            assert not isinstance(r, int)
            st = r
        return st

    # ------------------------------------------------------------------ lexing
    def _walk(self, st: S, data: bytes) -> S | int:
        """Feed bytes; the new state, or the offset where the offending lexeme starts."""
        lex = cast(LexState, st)  # this class's states are LexStates
        cx = self._b.contextual
        r = cx.walk(lex, data) if cx is not None else walk(self._b, lex, data, self._tab)
        return cast("S | int", r)

    # ------------------------------------------------------------------ API
    def allowed(self) -> np.ndarray:
        """Bool mask over the vocabulary: True where the token keeps a program reachable
        (within the budget, with ``max_tokens``); EOS iff :meth:`is_complete`."""
        v = len(self._vocab)
        if self._finished:
            return np.zeros(v, dtype=bool)
        st = self._history[-1]
        m = self._grammar_mask(st) if self._max_tokens is None else self._budget_mask().copy()
        eos = self._vocab.eos_token_id
        if eos is not None and 0 <= eos < v:
            m[eos] = self._complete(st)
        return m

    def fill_bitmask(self, dest: np.ndarray) -> None:
        """:meth:`allowed` as a bitmask row's bytes into uint8 ``dest`` (bit ``i % 8`` of byte
        ``i // 8``, the rest cleared). What servers' fills call: without a budget the packed
        mask is kept with the shared one, so a mask met before is one 16 KB copy."""
        v = len(self._vocab)
        nb = bitmask_row_bytes(dest, v)
        if self._finished or self._max_tokens is not None or not _plain(type(self)):
            dest[:nb] = np.packbits(self.allowed(), bitorder="little")
        else:  # allowed() is the builder's shared mask and EOS: packed once, kept with it
            q, carry, p = cast(LexState, self._history[-1])  # (a plain class's state)
            eos = self._vocab.eos_token_id
            dest[:nb] = self._b.packed_mask(p, q, carry, -1 if eos is None or eos >= v else eos)
        if dest.shape[0] > nb:
            dest[nb:] = 0

    def _grammar_mask(self, st: S) -> np.ndarray:
        """The grammar's mask at ``st`` (a fresh copy; EOS is set by ``allowed``)."""
        q, carry, p = self._view(st)
        return self._b.mask(p, q, carry).copy()

    def _view(self, st: S) -> LexState:
        """(lexer state, carry, parser state) of a step's state (subclasses keep more)."""
        return st[0], st[1], st[2]

    def _apply_budget(self, st: S, m: np.ndarray) -> None:
        """Clear from ``m`` the tokens after which the program cannot finish in time (the
        budget's cut; subclasses that verify by walking override it)."""
        self._need_budget().cut(self, st, m)

    def is_allowed(self, token_id: int) -> bool:
        """One token's verdict without building the whole mask.

        Raises
        ------
        TypeError
            ``token_id`` is not an int or numpy integer.
        """
        return self._try(token_int(token_id)) is not None

    def _try(self, token_id: int) -> S | bool | None:
        if self._finished:
            return None
        vocab = self._vocab
        if token_id == vocab.eos_token_id:
            return True if self._complete(self._history[-1]) else None
        if not 0 <= token_id < len(vocab) or vocab.is_special(token_id):
            return None
        data = vocab.token_bytes(token_id)
        if not data:
            return None
        st = self._walk(self._history[-1], data)
        if isinstance(st, int):
            return None
        if self._max_tokens is not None and not self._fits(token_id, st):
            return None
        return st

    def _fits(self, token_id: int, st: S) -> bool:
        """Can the program still be finished within the budget after ``token_id``? Exactly
        what ``allowed()`` says (its budget mask is kept for the step)."""
        return bool(self._budget_mask()[token_id])

    def _budget_mask(self) -> np.ndarray:
        """The grammar mask with the budget applied, for the current step (cached: the
        usual pattern is ``allowed()`` then ``advance()``). Shared: do not write to it."""
        st = self._history[-1]
        cached = self._budget_cache
        if cached is not None and cached[0] is st and cached[1] == len(self._history):
            return cached[2]
        m = self._grammar_mask(st)
        self._apply_budget(st, m)
        self._budget_cache = (st, len(self._history), m)  # holds st: its identity is the key
        return m

    _budget_cache: tuple[S, int, np.ndarray] | None = None

    def _plan_fits(self, token_id: int, left: int, st: S | None = None) -> bool:
        """Does the shortest completion gramask finds after ``token_id`` take ≤ ``left``?"""
        if st is None:
            r = self._walk(self._history[-1], self._vocab.token_bytes(token_id))
            if isinstance(r, int):
                return False
            st = r
        try:
            plan = self._need_budget().plan(self, st)
        except _PLAN_FAILED:
            return False
        return len(plan) <= left

    def advance(self, token_id: int) -> None:
        """Consume one token.

        Raises
        ------
        TokenRejected
            The token is not allowed here; the constraint is unchanged.
        TypeError
            ``token_id`` is not an int or numpy integer (``16.9`` and ``"16"`` are refused,
            not rounded or parsed).
        """
        token_id = token_int(token_id)
        st = self._try(token_id)
        if st is None:
            raise self._rejection(token_id)
        if isinstance(st, bool):  # EOS
            self._finished = True
            self._history.append(self._history[-1])
            self._chunks.append(b"")
            self._plans.append(())
            return
        plan = self._plans[-1]
        verified = self._verified_after(token_id)
        self._history.append(st)
        self._chunks.append(self._vocab.token_bytes(token_id))
        # following the plan keeps the rest of it; a token whose budget check walked a
        # completion after it keeps that one (so the next mask allows its first token);
        # any other token plans afresh when asked
        self._plans.append(plan[1:] if plan and plan[0] == token_id else verified)

    # Budgets that admit a token only with a completion walked after it (fill-in-the-middle,
    # the contextual lexer mode) keep what the current step verified: (the step's state, its
    # history length, what was verified)
    _verified_next: tuple[S, int, Verified] | None = None

    def _verified_after(self, token_id: int) -> tuple[int, ...] | None:
        """The completion the current step's budget check walked after ``token_id``, if any."""
        cache = self._verified_next
        if (self._max_tokens is None or cache is None or cache[0] is not self._history[-1]
                or cache[1] != len(self._history)):
            return None
        return cache[2].after(token_id)

    def is_complete(self) -> bool:
        """Is prefix + generated text (+ the suffix, for fill-in-the-middle) a member of the
        language?"""
        return self._complete(self._history[-1])

    def _complete(self, st: S) -> bool:
        """Would the input end well in state ``st``? (Subclasses with wider states override.)"""
        return self._b.complete(st[2], st[0], st[1])

    @property
    def vocab(self) -> Vocabulary:
        """The vocabulary the masks index."""
        return self._vocab

    @property
    def is_finished(self) -> bool:
        """EOS was advanced."""
        return self._finished

    def clone(self) -> Constraint[S]:
        c = Constraint(
            self._b,
            self._vocab,
            tab_len=self._tab,
            max_tokens=self._max_tokens,
            budget=self._budget,
            _history=list(self._history),
            _chunks=list(self._chunks),
            _finished=self._finished,
            _plans=list(self._plans),
        )
        c._prefix = self._prefix
        return c

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` advanced tokens (EOS included)."""
        if n < 0 or n > len(self._chunks):
            raise ValueError(f"cannot roll back {n} tokens: {len(self._chunks)} were advanced")
        if n:
            del self._history[-n:]
            del self._chunks[-n:]
            del self._plans[-n:]
            self._finished = False

    # ------------------------------------------------------------------ budgets
    @property
    def max_tokens(self) -> int | None:
        """The token budget of this generation (None: unbounded)."""
        return self._max_tokens

    @property
    def remaining_tokens(self) -> int | None:
        """Tokens the budget still allows (EOS not counted); None without a budget."""
        if self._max_tokens is None:
            return None
        return self._max_tokens - len(self._chunks) + (1 if self._finished else 0)

    def min_tokens_to_complete(self) -> int:
        """How many vocabulary tokens the shortest completion gramask finds needs (0 when
        the program is complete). An upper bound on the true minimum: lexemes are spelled
        one after another (docs/semantics.md, "Token budgets")."""
        if self._finished:
            return 0
        return len(self._plan())

    def shortest_completion(self) -> Completion:
        """A completion of ``min_tokens_to_complete()`` tokens: following it (then EOS)
        ends a program.

        Raises
        ------
        NoCompletionError
            gramask found no completion that the vocabulary can spell (a ``RuntimeError``).
        """
        ids = [] if self._finished else list(self._plan())
        data = b"".join(self._vocab.token_bytes(i) for i in ids)
        return Completion(data.decode("utf-8", errors="replace"), data, ids)

    def _budget_planner(self) -> object:
        """The budget's planner (the budget side knows its type)."""
        return self._need_budget().planner()

    def _need_budget(self) -> TokenBudget[S]:
        if self._budget is None:
            raise NotImplementedError(
                "this constraint was built without a budget planner, so it has no token "
                "budgets or shortest completions (CompiledGrammar.constraint builds one)"
            )
        return self._budget

    def _plan(self) -> tuple[int, ...]:
        """The current step's verified shortest completion (computed once per step)."""
        plan = self._plans[-1]
        if plan is None:
            plan = self._plans[-1] = self._need_budget().plan(self, self._history[-1])
        return plan

    def explain(self) -> Explanation:
        """Why the mask is what it is: the lexeme in progress and what the parser expects
        (fill-in-the-middle: the quotient parser's, plus the suffix's length)."""
        q, _carry, p = self._view(self._history[-1])
        b = self._b
        names = b.dfa.terminal_names
        sym = b.ctx.automaton.symbols
        exp = p[ES][EXPECTED]
        could = [names[t] for t in range(len(names)) if b.dfa.winnable[q, t]] if q else []
        return {
            "lexeme_in_progress": bool(q),
            "lexer_state": q,
            "lexeme_could_be": could,
            "parser_expects": [sym[t] for t in range(b.ctx.automaton.num_terminals)
                               if (exp >> t) & 1],
            "bracket_depth": p[DEPTH],
            "indentation": list(p[INDENT]),
        }

    @property
    def num_tokens(self) -> int:
        return len(self._chunks)

    @property
    def data(self) -> bytes:
        """Bytes generated so far (prefix excluded)."""
        return b"".join(self._chunks)

    @property
    def text(self) -> str:
        """Text generated so far; a UTF-8 character split by the last token shows as U+FFFD."""
        return self.data.decode("utf-8", errors="replace")

    def _rejection(self, token_id: int) -> TokenRejected:
        """Why ``token_id`` cannot come here, as the error ``advance`` raises."""
        what = f"token {token_id} ({self._describe(token_id)})"
        position = len(self._prefix) + len(self.data)
        if self._finished:
            return TokenRejected(
                f"{what} is not allowed: the program is finished (EOS was advanced); "
                f"rollback(1) to continue it",
                token_id=token_id, position=position, finished=True,
            )
        expected = tuple(self.explain()["parser_expects"])
        shown = ", ".join(expected[:12]) + (", ..." if len(expected) > 12 else "")
        left = self.remaining_tokens
        if left is not None and 0 <= token_id < len(self._vocab) and not isinstance(
                self._walk(self._history[-1], self._vocab.token_bytes(token_id) or b"\xff"),
                int):
            return TokenRejected(
                f"{what} is not allowed at byte {position}: the program could not be finished "
                f"within the budget after it ({left} token{'s' if left != 1 else ''} left)",
                token_id=token_id, position=position, expected=expected,
            )
        return TokenRejected(
            f"{what} is not allowed at byte {position} (prefix + generated text); "
            f"the parser expects {shown or 'nothing more'}",
            token_id=token_id, position=position, expected=expected,
        )

    def _describe(self, token_id: int) -> str:
        v = self._vocab
        if not 0 <= token_id < len(v):
            return "out of range"
        if token_id == v.eos_token_id:
            return "EOS"
        if v.is_special(token_id):
            return "special"
        return repr(v.token_bytes(token_id))


_PLAIN: dict[type, bool] = {}


def _plain(cls: type[Constraint[S]]) -> bool:
    """Does ``cls`` keep this class's step states, masks and ends (its ``allowed()`` is the
    builder's shared mask and EOS)? Asked per fill, answered once per class."""
    r = _PLAIN.get(cls)
    if r is None:
        base = Constraint
        r = _PLAIN[cls] = (cls._view, cls._grammar_mask, cls._complete) == (
            base._view, base._grammar_mask, base._complete)
    return r


def starts_a_line(b: MaskBuilder) -> bool:
    """Does the input start as if after a newline? (CPython's indentation, where the root
    expects one: ``Constraint._initial_state``)"""
    return (b.nl_t >= 0 and b.ctx.cpython_ends
            and b.ctx.automaton.advance(b.ctx.root[ES], b.nl_t) is not None)
