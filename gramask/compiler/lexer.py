"""All terminals → one byte-level lexer DFA that knows, per state, which terminals are live.

Lexing semantics (documented in docs/semantics.md and shared by compiler and runtime):
*greedy longest match over all terminals at once*. A lexeme extends while the next byte keeps
some terminal alive; when the next byte kills every terminal the lexeme ends, and it must then
be in an accepting state. The winner among the accepting terminals is the one with the highest
priority, then string literals before regexes, then grammar order. This is lark's ``basic``
lexer (keywords are reserved) made deterministic on bytes, which is what lets a token's effect
from a lexer state be precomputed once, independent of the parser.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from ..encoding import rows_of_bits
from ..errors import GrammarError
from .regex_bytes import MAX_TERMINAL_STATES, ByteDFA, explore, regex_to_byte_dfa, unique_rows

__all__ = ["MAX_LEXER_STATES", "LexerDFA", "Terminal", "build_lexer_dfa", "terminal_dfa"]


class Terminal(Protocol):
    """A lexer terminal (``gramask.grammar.TerminalSpec`` is one; this module needs only its
    shape, so grammar front ends can build lexers without an import cycle)."""

    @property
    def name(self) -> str: ...
    @property
    def pattern(self) -> str: ...
    @property
    def is_string(self) -> bool: ...
    @property
    def priority(self) -> int: ...
    @property
    def ignored(self) -> bool: ...

# Token tables cost one vectorised walk of the vocabulary per lexer state: the bundled
# grammars need 43-673 states; 16,384 states against a 150k vocabulary takes minutes.
MAX_LEXER_STATES = 16_384


@dataclass
class LexerDFA:
    """The combined lexer automaton; state 0 is "no byte of the lexeme read yet".

    trans     (S, 256) int32   next state, -1 when every terminal dies
    accept    (S,)     int32   winning terminal if the lexeme ended here, else -1
    live      (S, T)   bool    terminal still matchable from here
    winnable  (S, T)   bool    some longer-or-equal lexeme from here ends with this winner
    accepting (S, T)   bool    every terminal that matches the lexeme read so far (the
                               contextual lexer picks among them; row 0 is all False)
    """

    trans: np.ndarray
    accept: np.ndarray
    live: np.ndarray
    winnable: np.ndarray
    terminal_names: tuple[str, ...]
    ignored: np.ndarray  # (T,) bool
    accepting: np.ndarray

    @property
    def num_states(self) -> int:
        return int(self.trans.shape[0])

    @property
    def num_terminals(self) -> int:
        return len(self.terminal_names)

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "lex_trans": self.trans,
            "lex_accept": self.accept,
            "lex_live": np.packbits(self.live, axis=1),
            "lex_winnable": np.packbits(self.winnable, axis=1),
            "lex_ignored": self.ignored,
            "lex_accepting": np.packbits(self.accepting, axis=1),
        }

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], names: Sequence[str]) -> LexerDFA:
        t = len(names)
        return cls(
            trans=np.ascontiguousarray(arrays["lex_trans"], dtype=np.int32),
            accept=np.asarray(arrays["lex_accept"], dtype=np.int32),
            live=np.unpackbits(arrays["lex_live"], axis=1, count=t).astype(bool),
            winnable=np.unpackbits(arrays["lex_winnable"], axis=1, count=t).astype(bool),
            terminal_names=tuple(names),
            ignored=np.asarray(arrays["lex_ignored"], dtype=bool),
            accepting=np.unpackbits(arrays["lex_accepting"], axis=1, count=t).astype(bool),
        )


def terminal_dfa(t: Terminal) -> ByteDFA:
    """The byte DFA of one terminal: a JSON string automaton (``automaton``, from the JSON
    Schema front end); a plain string literal (no flags) as a chain of states, built directly
    (the same automaton the regex construction gives, without its cost: a grammar of thousands
    of keywords spent most of its compile time there); else its regex, compiled (memoised per
    pattern: generated grammars repeat the same terminals across requests)."""
    automaton = getattr(t, "automaton", "")
    if automaton:
        from ..frontends.json_strings import spec_dfa

        return spec_dfa(automaton)
    if t.is_string:
        literal = re.sub(r"\\(.)", r"\1", t.pattern, flags=re.DOTALL)
        data = literal.encode("utf-8")
        if (data and re.escape(literal) == t.pattern
                and len(literal) < MAX_TERMINAL_STATES):
            n = len(data)
            trans = np.full((n + 1, 256), -1, dtype=np.int32)
            trans[np.arange(n), np.frombuffer(data, dtype=np.uint8)] = np.arange(1, n + 1)
            finals = np.zeros(n + 1, dtype=bool)
            finals[n] = True
            return ByteDFA(trans, finals)
    try:
        return _regex_dfa(t.pattern)
    except GrammarError:  # again, for a message naming this terminal
        return regex_to_byte_dfa(t.name, t.pattern)


@lru_cache(maxsize=1024)
def _regex_dfa(pattern: str) -> ByteDFA:
    return regex_to_byte_dfa("terminal", pattern)


def _winner_order(terminals: Sequence[Terminal]) -> list[int]:
    """Terminal indices from strongest to weakest claim on a tie."""
    return sorted(
        range(len(terminals)),
        key=lambda i: (-terminals[i].priority, not terminals[i].is_string, i),
    )


def build_lexer_dfa(
    terminals: Sequence[Terminal],
    dfas: Sequence[ByteDFA] | None = None,
    *,
    progress: bool | None = None,
) -> LexerDFA:
    """Product of the per-terminal byte DFAs, restricted to reachable states.

    ``progress``: a progress bar over the terminals (None: only on a terminal, and only once
    compiling them has taken a second).

    Raises
    ------
    GrammarError
        A terminal's automaton, or the product of all of them, exceeds its state limit
        (``MAX_TERMINAL_STATES``, ``MAX_LEXER_STATES``); the message names the terminals.
    """
    if dfas is None and progress is False:  # no bar: tqdm (and its asyncio) not imported
        dfas = [terminal_dfa(t) for t in terminals]
    if dfas is None:
        from tqdm.auto import tqdm

        disable = None if progress is None else not progress
        with tqdm(terminals, desc="gramask: terminals", unit="terminal", disable=disable,
                  leave=False, delay=1.0) as bar:
            dfas = [terminal_dfa(t) for t in bar]
    n_terms = len(terminals)
    rank = {t: r for r, t in enumerate(_winner_order(terminals))}

    # bytes that no terminal distinguishes share a class
    stacked = np.concatenate([d.trans for d in dfas], axis=0) if dfas else np.zeros((1, 256))
    first, byte_class = unique_rows(stacked.T)
    reps = [int(np.flatnonzero(byte_class == c)[0]) for c in range(len(first))]

    tables = [d.trans[:, reps] for d in dfas]  # per terminal: (state, byte class)

    def successors(st: tuple[tuple[int, int], ...]) -> list[tuple[tuple[int, int], ...] | None]:
        if not st:
            return [None] * len(reps)
        terms = [term for term, _ in st]
        cols = np.stack([tables[term][s] for term, s in st]).T.tolist()
        out: list[tuple[tuple[int, int], ...] | None] = []
        for col in cols:
            nxt = tuple((term, t) for term, t in zip(terms, col, strict=True) if t >= 0)
            out.append(nxt or None)
        return out

    start = tuple((i, 0) for i in range(n_terms) if dfas[i].num_states and _nonempty(dfas[i]))
    order, rows = explore(
        start, successors, MAX_LEXER_STATES, lambda order: _too_many_lexer_states(terminals, order)
    )
    cls_trans = np.array(rows, dtype=np.int32).reshape(len(order), len(reps))
    trans = np.ascontiguousarray(cls_trans[:, byte_class])

    n = len(order)
    live = np.zeros((n, n_terms), dtype=bool)
    accept = np.full(n, -1, dtype=np.int32)
    accepting = np.zeros((n, n_terms), dtype=bool)
    for q, st in enumerate(order):
        best = None
        for term, s in st:
            live[q, term] = True
            if dfas[term].finals[s] and q != 0:
                accepting[q, term] = True
            if dfas[term].finals[s] and (best is None or rank[term] < rank[best]):
                best = term
        if best is not None and q != 0:  # empty lexemes never count
            accept[q] = best

    winnable = _winnable(cls_trans, accept, n_terms)
    ignored = np.array([t.ignored for t in terminals], dtype=bool)
    return LexerDFA(
        trans=trans,
        accept=accept,
        live=live,
        winnable=winnable,
        terminal_names=tuple(t.name for t in terminals),
        ignored=ignored,
        accepting=accepting,
    )


def _too_many_lexer_states(
    terminals: Sequence[Terminal], order: list[tuple[tuple[int, int], ...]]
) -> None:
    """Name the terminals with the most distinct states in the product: they interact."""
    per: dict[int, set[int]] = {}
    for st in order:
        for term, s in st:
            per.setdefault(term, set()).add(s)
    worst = sorted(per, key=lambda t: -len(per[t]))[:3]
    names = ", ".join(f"{terminals[t].name} ({len(per[t])} states)" for t in worst)
    raise GrammarError(
        f"the lexer needs more than {MAX_LEXER_STATES:,} states (their combinations while "
        f"lexing); the terminals taking part most: {names}. Simplify or merge them",
        name=terminals[worst[0]].name if worst else None,
    )


def _nonempty(d: ByteDFA) -> bool:
    return bool(d.finals.any())


def _winnable(cls_trans: np.ndarray, accept: np.ndarray, n_terms: int) -> np.ndarray:
    """Backward closure of "this state's lexeme can end with terminal T" as int bitsets."""
    n = cls_trans.shape[0]
    preds: list[set[int]] = [set() for _ in range(n)]
    for q in range(n):
        for t in set(cls_trans[q].tolist()):
            if t >= 0:
                preds[t].add(q)
    bits = [(1 << int(a)) if a >= 0 else 0 for a in accept.tolist()]
    work = [q for q in range(n) if bits[q]]
    while work:
        t = work.pop()
        for p in preds[t]:
            merged = bits[p] | bits[t]
            if merged != bits[p]:
                bits[p] = merged
                work.append(p)
    return rows_of_bits(bits, n_terms)
