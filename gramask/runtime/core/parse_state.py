"""Parser state = Earley set + the indentation layer (Python's NEWLINE/INDENT/DEDENT).

The indentation layer is lark's ``PythonIndenter`` made incremental: newlines inside brackets
are dropped; outside, a newline of width ``w`` is the newline terminal followed by INDENT or
DEDENTs against the indentation stack. States are hash-consed like Earley sets, so what is
memoised for them (next state per terminal, class verdicts, cached masks) is shared by every
step that reaches the same configuration.
"""

from __future__ import annotations

import itertools
import threading
from typing import Final, TypeAlias

import numpy as np

from ...encoding import bit_indices
from ...errors import LimitExceededError
from ..limits import memo_size
from ..memo import MISSING, BoundedMemo, InternTable
from .earley import ACCEPTS, EXPECTED, UID, Automaton, EarleySet, SetFilter
from .indentation import columns

__all__ = ["BOL", "DEPTH", "ES", "INDENT", "PUID", "PState", "ParserContext"]

# A parser state: an exact tuple, for the reason Earley sets are (see
# :mod:`gramask.runtime.core.earley`): the GC untracks it after its first pass. Unhashable
# (its set is): key states by ``p[PUID]``. Fields (read them by these indices):
#   PUID    unique id within its ParserContext
#   ES      the Earley set
#   INDENT  indentation stack, innermost last
#   DEPTH   bracket depth
#   BOL     the last significant terminal was a newline (or none yet)
PState: TypeAlias = tuple[int, EarleySet, tuple[int, ...], int, bool]
PUID: Final = 0
ES: Final = 1
INDENT: Final = 2
DEPTH: Final = 3
BOL: Final = 4


class ParserContext:
    """Everything the runtime needs about the parser side, shared by all constraints."""

    # refuses the shift of an opening bracket into a set from which no closing one can be
    # shifted (:func:`gramask.runtime.core.viability.closing_filter`; None: keeps them all)
    closable: SetFilter | None = None
    # basic mode: terminals the lexer never produces are lost shifts (``never_lexed``): every
    # expected terminal's shift is tried, as where ``closable`` has the automaton refuse sets
    shifts_tried: bool = False

    def __init__(
        self,
        automaton: Automaton,
        num_lexer_terminals: int,
        ignored_bits: int,
        newline: int = -1,
        indent: int = -1,
        dedent: int = -1,
        open_brackets: tuple[int, ...] = (),
        close_brackets: tuple[int, ...] = (),
        tab_len: int = 8,
        cpython_ends: bool = True,
    ) -> None:
        self.automaton = automaton
        self.num_lexer_terminals = num_lexer_terminals
        self.ignored_bits = ignored_bits
        self.nl_t = newline
        self.indent_t = indent
        self.dedent_t = dedent
        self.open_brackets = frozenset(open_brackets)
        self.close_brackets = frozenset(close_brackets)
        self.tab_len = tab_len
        # the input starts as after a newline and its end closes the last line (CPython), or
        # neither (lark's Indenter): see ``IndentationSpec.cpython_ends``
        self.cpython_ends = cpython_ends
        n = automaton.limits.parser_states
        # canonical while alive (see InternTable): states are compared and memoised by uid
        self._interned: InternTable[tuple[int, tuple[int, ...], int, bool], PState] = (
            InternTable(memo_size(n))
        )
        self._next: BoundedMemo[tuple[int, int], PState | None] = BoundedMemo(
            memo_size(2 * n)
        )  # bounded, see Automaton._next
        self._uids = itertools.count(1)  # atomic under the GIL: threads never share a uid
        # held while a missing state is made: threads that meet it get one object
        self._intern_lock = threading.Lock()
        # MaskBuilder.class_vector per state uid (here, not on the builders: their copies for
        # fill-in-the-middle share a parser context exactly when they may share this)
        self.class_vectors: BoundedMemo[int, np.ndarray] = BoundedMemo(memo_size(n))
        self.root = self.make(automaton.root, (0,), 0, True)

    def make(self, es: EarleySet, indent: tuple[int, ...], depth: int, bol: bool) -> PState:
        key = (es[UID], indent, depth, bol)
        p = self._interned.young.get(key)
        if p is None:
            p = self._interned.get(key)
        if p is None:
            with self._intern_lock:
                p = self._interned.get(key)
                if p is None:
                    p = (next(self._uids), es, indent, depth, bol)
                    self._interned.put(key, p)
        return p

    def cut(self, p: PState, depth: int) -> PState:
        """``p`` with its Earley set cut ``depth`` sets down (see :meth:`Automaton.cut`)."""
        es = self.automaton.cut(p[ES], depth)
        return p if es is p[ES] else self.make(es, p[INDENT], p[DEPTH], p[BOL])

    def _remember(self, key: tuple[int, int], value: PState | None) -> None:
        self._next.put(key, value)

    # ------------------------------------------------------------------ stepping
    def shift(self, p: PState, terminal: int) -> PState | None:
        """Feed one (non-newline, non-ignored) lexer terminal."""
        if not (p[ES][EXPECTED] >> terminal) & 1:
            return None  # no item can shift it (not worth a memo entry)
        key = (p[PUID], terminal)
        memo = self._next
        r = memo.young.get(key, MISSING)
        if r is MISSING:
            r = memo.get(key, MISSING)
        if r is not MISSING:
            return r
        es = self.automaton.advance(p[ES], terminal)
        res = None if es is None else self._after(p, es, terminal)
        memo.put(key, res)
        return res

    def _after(self, p: PState, es: EarleySet, terminal: int) -> PState | None:
        """The state after shifting ``terminal`` (Earley set ``es``): bracket depth updated;
        None for an opening bracket that nothing can close (``closable``)."""
        depth = p[DEPTH]
        if terminal in self.open_brackets:
            if self.closable is not None and not self.closable.ok(es):
                return None
            depth += 1
        elif terminal in self.close_brackets:
            depth = max(0, depth - 1)
        return self.make(es, p[INDENT], depth, False)

    def shift_any(self, p: PState, terminals: int) -> PState | None:
        """Feed one lexeme that is every (non-newline, non-ignored) terminal in the bitset
        ``terminals`` at once (a contextual-lexer tie); bracket depth follows the first."""
        if not terminals & (terminals - 1):
            return self.shift(p, terminals.bit_length() - 1)
        key = (p[PUID], -(1 << 40) - terminals)  # newline keys are -1 - width
        r = self._next.get(key, MISSING)
        if r is not MISSING:
            return r
        es = self.automaton.advance_any(p[ES], terminals)
        first = (terminals & -terminals).bit_length() - 1
        res = None if es is None else self._after(p, es, first)
        self._remember(key, res)
        return res

    def end_lexeme(self, p: PState, terminal: int, width: int) -> PState | None:
        """Feed one finished lexeme: the indentation newline (its last line ``width`` wide), an
        ignored lexeme (nothing changes) or a terminal."""
        if terminal == self.nl_t:
            return self.newline(p, width)
        if (self.ignored_bits >> terminal) & 1:
            return p
        return self.shift(p, terminal)

    def newline(self, p: PState, width: int) -> PState | None:
        """Feed a newline lexeme whose last line is indented by ``width``."""
        if p[DEPTH] > 0:
            return p
        key = (p[PUID], -1 - width)
        r = self._next.get(key, MISSING)
        if r is not MISSING:
            return r
        res = self._newline(p, width)
        self._remember(key, res)
        return res

    def _newline(self, p: PState, width: int) -> PState | None:
        adv = self.automaton.advance
        es = adv(p[ES], self.nl_t)
        if es is None:
            return None
        # CPython's two measures (tabs to the next multiple of tab_len, tabs as 1) must order
        # the line against the stack alike, else TabError (see .indentation)
        tab = self.tab_len
        here = columns(width, tab)
        if here is None:
            return None  # a tab after a space
        col, alt = here
        indent = p[INDENT]
        top, top_alt = columns(indent[-1], tab) or (0, 0)
        if col > top:
            if alt <= top_alt:
                return None
            es = adv(es, self.indent_t)
            if es is None:
                return None
            indent = (*indent, width)
        else:
            while col < top:
                es = adv(es, self.dedent_t) if es is not None else None
                indent = indent[:-1]
                top, top_alt = columns(indent[-1], tab) or (0, 0)
            if es is None or col != top or alt != top_alt:
                return None  # dedent to a level that was never opened, or TabError
        return self.make(es, indent, 0, True)

    def keep_openers(self, p: PState, bits: int) -> int:
        """``bits`` (terminals ``p`` expects) without the opening brackets whose shift
        ``closable`` refuses: a lexeme that can only end as one is a dead end, so a token
        may not stop inside it. Where the automaton refuses sets because of such brackets
        (``unclosable_shifts``: a set that leads only into one), so are the terminals whose
        shift it refuses (``T0`` of ``simple: T0 "("+``)."""
        if self.closable is None and not self.shifts_tried:
            return bits
        if self.automaton.viable is not None:  # every expected terminal but the newline
            rest = bits & ~(1 << self.nl_t if self.nl_t >= 0 else 0)
            nt = self.automaton.num_terminals
            tried = [t for t in bit_indices(rest) if t < nt]
        else:
            tried = [o for o in self.open_brackets if (bits >> o) & 1]
        for t in tried:
            try:
                if self.shift(p, t) is None:
                    bits &= ~(1 << t)
            except LimitExceededError:
                pass  # (kept: the walk that takes it answers then)
        return bits

    def expects(self, p: PState) -> int:
        """Lexer terminals that may come next (bitset), ignored ones included."""
        bits = p[ES][EXPECTED] | self.ignored_bits
        if self.nl_t >= 0 and p[DEPTH] > 0:
            bits |= 1 << self.nl_t
        return bits & ((1 << self.num_lexer_terminals) - 1)

    def finish(self, p: PState) -> bool:
        """Would the input end here? (closes the last line, unless the text must end it
        itself, and every open block)"""
        if self.nl_t < 0:
            return p[ES][ACCEPTS]
        if p[DEPTH] > 0:
            return False
        if not p[BOL] and self.cpython_ends:
            q = self.newline(p, 0)
            if q is None:
                return False
            p = q
        es: EarleySet | None = p[ES]
        for _ in p[INDENT][1:]:
            es = self.automaton.advance(es, self.dedent_t) if es is not None else None
        return es is not None and es[ACCEPTS]

    def finish_after(self, p: PState, next_bytes: int) -> bool:
        """:meth:`finish` after a lexeme end that ``next_bytes`` (a bit set of bytes) may
        follow: what comes after the end must not continue the lexeme. Only a
        fill-in-the-middle quotient, whose "end" is the suffix, reads it (the input's end
        kills every lexeme)."""
        return self.finish(p)

    def continues_into_suffix(self, p: PState, a: int) -> bool:
        """May a lexeme of terminal ``a`` ending here, at ``p``, be the one a suffix continues?
        Only a fill-in-the-middle quotient's boundary markers say so (they stand for such a
        lexeme, so ``p`` does not shift ``a`` itself): the dead-end searches count it as a
        way on."""
        return False
