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
* Not thread-safe: constraints of one compiled grammar share memo tables; use one thread per
  compiled grammar (or a lock) when filling a batch.
* ``clone()`` is O(steps) list copy of immutable states; ``rollback(n)`` is O(n). Neither
  re-parses: every step's state is an immutable, shared object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidPrefixError, TokenRejected
from .lexing import walk
from .masks import MaskBuilder
from .parse_state import PState

if TYPE_CHECKING:
    from ..vocab import Vocabulary

__all__ = ["Constraint", "LexState"]

LexState = tuple[int, int, PState]  # lexer DFA state, indentation carry, parser state


def _prefix_bytes(prefix: object) -> bytes:
    """``prefix`` as UTF-8 bytes; text that cannot be encoded is an invalid prefix."""
    if isinstance(prefix, str):
        try:
            return prefix.encode("utf-8")
        except UnicodeEncodeError as e:
            at = len(prefix[: e.start].encode("utf-8"))
            raise InvalidPrefixError(
                f"the prefix is not valid Unicode text ({e.reason}: {prefix[e.start]!r})",
                position=at,
            ) from None
    if isinstance(prefix, (bytes, bytearray, memoryview)):
        return bytes(prefix)
    raise TypeError(f"a prefix must be str or bytes, not {type(prefix).__name__}")


class Constraint:
    """The state of one constrained generation. Create with ``CompiledGrammar.constraint()``."""

    def __init__(
        self,
        builder: MaskBuilder,
        vocab: Vocabulary,
        prefix: str | bytes = "",
        *,
        tab_len: int = 8,
        _history: list[Any] | None = None,
        _chunks: list[bytes] | None = None,
        _finished: bool = False,
    ) -> None:
        # one state per step: a LexState here; subclasses (fill-in-the-middle) keep wider ones
        self._history: list[Any]
        self._b = builder
        self._vocab = vocab
        self._tab = tab_len
        if _history is not None:
            self._history = _history
            self._chunks = _chunks if _chunks is not None else []
            self._finished = _finished
            return
        start = self._initial_state()
        data = _prefix_bytes(prefix)
        st = self._walk(start, data)
        if isinstance(st, int):
            raise InvalidPrefixError("the prefix is not a prefix of any program", position=st)
        self._prefix = data
        self._history = [st]
        self._chunks = []
        self._finished = False

    def _initial_state(self) -> LexState:
        """Start of input. With indentation, the input starts as if after a newline, so
        that leading whitespace on the first line is an indentation error (as in Python),
        while blank or comment lines before the first statement are fine."""
        b = self._b
        st: LexState | int = (0, 0, b.ctx.root)
        if b.nl_t >= 0 and b.ctx.automaton.advance(b.ctx.root.es, b.nl_t) is not None:
            st = self._walk(st, b"\n")  # type: ignore[arg-type]
        assert not isinstance(st, int)
        return st

    # ------------------------------------------------------------------ lexing
    def _walk(self, st: LexState, data: bytes) -> LexState | int:
        """Feed bytes; the new state, or the offset where the offending lexeme starts."""
        cx = self._b.contextual
        if cx is not None:
            return cx.walk(st, data)
        return walk(self._b, st, data, self._tab)

    # ------------------------------------------------------------------ API
    def allowed(self) -> np.ndarray:
        """Bool mask over the vocabulary: True where the token keeps a program reachable."""
        v = len(self._vocab)
        if self._finished:
            return np.zeros(v, dtype=bool)
        q, carry, p = self._history[-1]
        m = self._b.mask(p, q, carry).copy()
        eos = self._vocab.eos_token_id
        if eos is not None and 0 <= eos < v:
            m[eos] = self._b.complete(p, q, carry)
        return m

    def is_allowed(self, token_id: int) -> bool:
        """One token's verdict without building the whole mask.

        Raises
        ------
        TypeError
            ``token_id`` is not an int or numpy integer.
        """
        return self._try(_token_int(token_id)) is not None

    def _try(self, token_id: int) -> LexState | bool | None:
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
        return None if isinstance(st, int) else st

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
        token_id = _token_int(token_id)
        st = self._try(token_id)
        if st is None:
            raise self._rejection(token_id)
        if isinstance(st, bool):  # EOS
            self._finished = True
            self._history.append(self._history[-1])
            self._chunks.append(b"")
            return
        self._history.append(st)
        self._chunks.append(self._vocab.token_bytes(token_id))

    def is_complete(self) -> bool:
        """Is prefix + generated text (+ the suffix, for fill-in-the-middle) a member of the
        language?"""
        return self._complete(self._history[-1])

    def _complete(self, st: LexState) -> bool:
        """Would the input end well in state ``st``? (Subclasses with wider states override.)"""
        q, carry, p = st
        return self._b.complete(p, q, carry)

    @property
    def vocab(self) -> Vocabulary:
        """The vocabulary the masks index."""
        return self._vocab

    @property
    def is_finished(self) -> bool:
        """EOS was advanced."""
        return self._finished

    def clone(self) -> Constraint:
        c = Constraint(
            self._b,
            self._vocab,
            tab_len=self._tab,
            _history=list(self._history),
            _chunks=list(self._chunks),
            _finished=self._finished,
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
            self._finished = False

    def explain(self) -> dict[str, Any]:
        """Why the mask is what it is: the lexeme in progress and what the parser expects."""
        q, _carry, p = self._history[-1]
        b = self._b
        names = b.dfa.terminal_names
        sym = b.ctx.automaton.symbols
        exp = p.es.expected
        could = [names[t] for t in range(len(names)) if b.dfa.winnable[q, t]] if q else []
        return {
            "lexeme_in_progress": bool(q),
            "lexer_state": q,
            "lexeme_could_be": could,
            "parser_expects": [sym[t] for t in range(b.ctx.automaton.num_terminals)
                               if (exp >> t) & 1],
            "bracket_depth": p.depth,
            "indentation": list(p.indent),
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


def _token_int(token_id: object) -> int:
    """A token id as an int; anything else (None from ``vocab.token_id``, a float, a string)
    is a TypeError that says what was passed, never silently converted."""
    if isinstance(token_id, (int, np.integer)) and not isinstance(token_id, bool):
        return int(token_id)
    hint = (
        " (vocab.token_id() returns None for text that is not exactly one token)"
        if token_id is None else ""
    )
    raise TypeError(f"a token id must be an int, got {token_id!r}{hint}")
