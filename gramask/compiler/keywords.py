"""Reserved keywords for the contextual lexer mode: which string terminals beat which regexes.

In the contextual mode only the terminals the parser can take compete for a lexeme, so where
the parser expects a name but not ``if``, the text ``if`` lexes as a name (``if = 3``), and
where it expects ``in`` but not a name, ``intersect`` lexes as ``in tersect``. Languages whose
own tokenizers reserve their keywords (CPython's, a C compiler's) read both as errors: the
identifier regex is lexed by longest match and a keyword's text is the keyword wherever it
stands. A grammar that opts in (``Grammar.reserved_keywords``) keeps that reading in the
contextual mode: for each pair (string ``s``, regex ``r``) of this module, whenever ``s`` or
``r`` competes at a lexeme start both do, and where both accept the lexeme ``s`` wins (as the
basic mode decides); the parser then rejects what it cannot take.

A pair is: ``s`` a string terminal, ``r`` a regex terminal, every text of ``s`` in ``r``'s
language (read off the lexer DFA; for a case-insensitive ``s``, its value as written, as lark
pairs them: ``"x"i`` beside ``/x+/`` wins ``x``, and ``X`` is ``s`` alone), ``s`` ahead of ``r`` in the basic mode's winner order
(priority, then strings before regexes), neither ignored, and ``s`` not a *soft* keyword of
``r``: one that some rule turns back into what ``r`` is (a rule with both ``N → r`` and
``N → s``, as python.lark's ``name: NAME | "match" | "case" | "type" | "_"``). The soft
exception is the reserved mode's: lark's own rule (``Grammar.keywords_win``) pairs every
string with its regexes, as lark's ``unless`` does, whatever the rules derive.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np

from .lexer import winner_order

if TYPE_CHECKING:
    from ..grammar import Grammar
    from .lexer import LexerDFA

__all__ = ["reserved_pairs", "soft_pairs"]


def soft_pairs(grammar: Grammar) -> set[tuple[str, str]]:
    """(string terminal, regex terminal) names that some rule derives alike: a rule with the
    single-symbol alternatives ``N → r`` and ``N → s``."""
    strings = {t.name for t in grammar.terminals if t.is_string}
    regexes = {t.name for t in grammar.terminals if not t.is_string}
    singles: dict[str, set[str]] = {}
    for r in grammar.rules:
        if len(r.rhs) == 1:
            singles.setdefault(r.lhs, set()).add(r.rhs[0])
    out: set[tuple[str, str]] = set()
    for alts in singles.values():
        for s in alts & strings:
            for x in alts & regexes:
                out.add((s, x))
    return out


def _flagged_value(pattern: str) -> bytes | None:
    """The text of a string terminal with flags (``"if"i`` is ``(?i:if)``), as written; None
    for one without (its one text is its value). lark pairs a string with a regex of its
    priority when the regex matches the string's value whole (``re.match``), and then types
    every lexeme of the regex that the string's pattern matches whole (its case variants the
    regex takes too) as the string: a pair is decided on the value, not on every variant."""
    m = re.fullmatch(r"\(\?[a-zA-Z]+:(.*)\)", pattern, flags=re.DOTALL)
    if m is None:
        return None
    value = re.sub(r"\\(.)", r"\1", m.group(1), flags=re.DOTALL)
    return value.encode() if re.escape(value) == m.group(1) else None


def _state_after(dfa: LexerDFA, data: bytes) -> int:
    """The lexer state after ``data`` from the start (-1: dead)."""
    q = 0
    for b in data:
        q = int(dfa.trans[q, b])
        if q < 0:
            break
    return q


def _accepting_ends(dfa: LexerDFA, t: int) -> np.ndarray:
    """The lexer states where terminal ``t`` accepts, reached from the start state through
    states where ``t`` stays live (every text of ``t`` ends in one of them)."""
    trans, live = dfa.trans, dfa.live[:, t]
    seen = np.zeros(dfa.num_states, dtype=bool)
    seen[0] = True
    frontier = np.array([0], dtype=np.int64)
    while frontier.size:
        nxt = trans[frontier].ravel()
        nxt = np.unique(nxt[nxt >= 0])
        nxt = nxt[live[nxt] & ~seen[nxt]]
        seen[nxt] = True
        frontier = nxt
    return np.flatnonzero(seen & dfa.accepting[:, t])


def reserved_pairs(grammar: Grammar, dfa: LexerDFA) -> list[tuple[int, int]]:
    """The (string, regex) terminal index pairs the grammar reserves (see the module
    docstring); empty unless ``grammar.reserved_keywords`` or ``grammar.keywords_win`` (the
    pairs then decide ties only where the parser takes both, as lark's contextual lexer, and
    soft keywords are paired too: lark's ``unless`` has no such exception)."""
    if not (grammar.reserved_keywords or grammar.keywords_win):
        return []
    ts = grammar.terminals
    # Soft keywords are the reserved mode's own exception; lark's ``unless`` (keywords_win
    # alone) knows no rules: ``x: NAME | "nil"`` still makes ``nil`` the keyword wherever
    # the parser takes both, so ``nil := 1`` is no assignment to a name there.
    soft = soft_pairs(grammar) if grammar.reserved_keywords else set()
    regexes = [i for i, t in enumerate(ts) if not t.is_string and not t.ignored]
    rank = {t: r for r, t in enumerate(winner_order(ts))}  # the basic mode's tie order
    out: list[tuple[int, int]] = []
    for s, t in enumerate(ts):
        if not t.is_string or t.ignored:
            continue
        value = _flagged_value(t.pattern)
        if value is not None:  # ("if"i: lark pairs it by its value, as written)
            q = _state_after(dfa, value)
            if q < 0:
                continue
            every = dfa.accepting[q]
        else:
            ends = _accepting_ends(dfa, s)
            if not ends.size:
                continue
            every = dfa.accepting[ends].all(axis=0)
        for r in regexes:
            if every[r] and rank[s] < rank[r] and (t.name, ts[r].name) not in soft:
                out.append((s, r))
    return out
