"""Compile-time answer to terminals the greedy lexer can never split from what follows them.

A terminal none of whose lexemes can be followed by a lexeme of any terminal the grammar puts
after it (nor end the text) is as good as a terminal nothing produces: the rules needing it
never finish. Where that empties the language the grammar is a :class:`GrammarError` naming
the terminals and a text that shows it; otherwise a :class:`GrammarWarning` (the runtime
refuses those lexemes, :mod:`gramask.compiler.separable`).
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import GrammarError
from ..grammar import Grammar
from .analysis import GrammarWarning, productive_symbols
from .contextual_wins import check_wins
from .lexer import LexerDFA
from .parse_tables import ParseTables
from .separable import (
    Adjacency,
    adjacency,
    all_separable,
    dead_terminals,
    follows_separable,
    next_of,
    terminal_follows,
)

__all__ = ["check_separable", "shortest_lexeme", "shortest_text"]


def check_separable(grammar: Grammar, dfa: LexerDFA, pt: ParseTables) -> np.ndarray | None:
    """Refuse or warn about dead terminals (see the module docstring); return the per-state
    ids the basic lexer mode's end classes are split by (None where the runtime does not
    search: :func:`~gramask.compiler.separable.needs_end_search`)."""
    if grammar.lexer == "contextual":
        check_wins(grammar, dfa, pt)  # (terminals that lose every lexeme where expected)
    nl = grammar.newline_terminal
    nxt = next_of(dfa)
    if all_separable(dfa, nxt, nl):
        return None
    follows, last = terminal_follows(grammar)
    basic = grammar.lexer != "contextual"
    # the contextual lexer kills more lexemes (fewer terminals compete), so only what is
    # dead with the terminal alone in the allowed set is dead there (see dead_terminals)
    dead = dead_terminals(dfa, follows, last, nl, alone=not basic, nxt=nxt)
    if dead:
        _answer(grammar, dfa, dead)
    if not basic:
        return None
    adj = adjacency(dfa)
    if not lexable(grammar, adj):
        pairs = never_adjacent(grammar, dfa, nxt, follows)
        raise GrammarError(
            f"{grammar.source or '<grammar>'}: the language is empty as the lexer splits text: "
            "no text of it can be read back as its own lexemes (the greedy lexer cannot end "
            "a lexeme where the next one starts with a byte that continues it): "
            + "; ".join(pairs[:3]), name=grammar.start)
    # (needs_end_search's answer here: all_separable failed above, the mode is basic)
    return None if follows_separable(dfa, nxt, follows, nl, pt) else adj.ids


def lexable(grammar: Grammar, adj: Adjacency) -> bool:
    """Does ``start`` derive a sequence of lexemes that is a path of the adjacency from the
    start of the text? (The emptiness of the grammar intersected with the adjacency
    automaton: per symbol, the pairs of end groups its texts lead between, to a fixpoint.)"""
    names = {t.name: i for i, t in enumerate(grammar.terminals)}
    groups = sorted({0, *(g for g, _ in adj.delta), *(g for v in adj.delta.values() for g in v)})
    rel: dict[str, dict[int, int]] = {}  # symbol -> group -> bit set of groups after it
    for n, i in names.items():
        if not grammar.terminals[i].ignored:
            rel[n] = {g: sum(1 << h for h in adj.delta.get((g, i), ())) for g in groups}
    lhs = {r.lhs for r in grammar.rules}
    for r in grammar.rules:  # an ignored terminal, an indenter's _INDENT: no lexeme between
        for x in r.rhs:
            if x not in rel and x not in lhs:
                rel[x] = {g: 1 << g for g in groups}
    changed = True
    while changed:
        changed = False
        for r in grammar.rules:
            cur = {g: 1 << g for g in groups}
            for x in r.rhs:
                step = rel.get(x)
                if step is None:
                    cur = {}
                    break
                cur = {g: _image(v, step) for g, v in cur.items()}
            got = rel.setdefault(r.lhs, {g: 0 for g in groups})
            for g, v in cur.items():
                if v & ~got[g]:
                    got[g] |= v
                    changed = True
    return bool(rel.get(grammar.start, {}).get(0, 0))


def _image(bits: int, step: dict[int, int]) -> int:
    out = 0
    while bits:
        low = bits & -bits
        out |= step.get(low.bit_length() - 1, 0)
        bits ^= low
    return out


def never_adjacent(grammar: Grammar, dfa: LexerDFA, nxt: dict[int, int],
                   follows: list[int | None]) -> list[str]:
    """Pairs the grammar puts side by side whose second can never start after the first,
    each with a text that shows it."""
    names = [t.name for t in grammar.terminals]
    after: dict[int, int] = {}
    for q, v in nxt.items():
        a = int(dfa.accept[q])
        after[a] = after.get(a, 0) | v
    out = []
    for a, f in enumerate(follows):
        never = (f or 0) & ~after.get(a, 0)
        while never:
            low = never & -never
            never ^= low
            b = low.bit_length() - 1
            wa, wb = shortest_lexeme(dfa, a), shortest_lexeme(dfa, b)
            eg = (f" ({wa.decode('utf-8', 'replace')!r} then {wb.decode('utf-8', 'replace')!r}"
                  f": {(wa + wb).decode('utf-8', 'replace')!r} is not read as those two)"
                  if wa is not None and wb is not None else "")
            out.append(f"{names[a]} can never be followed by {names[b]}{eg}")
    return out


def _answer(grammar: Grammar, dfa: LexerDFA, dead: dict[int, int]) -> None:
    names = [t.name for t in grammar.terminals]
    produced = {int(t) for t in np.unique(dfa.accept) if t >= 0}
    glued, lost = [], []
    for a, f in sorted(dead.items()):
        fol = [b for b in range(len(names)) if (f >> b) & 1]
        live = [b for b in fol if b in produced]
        if not live:  # its followers lose every text to another terminal: no gluing problem
            lost.append(f"{names[a]} by {', '.join(names[b] for b in fol)}")
            continue
        wa, wb = shortest_lexeme(dfa, a), shortest_lexeme(dfa, live[0])
        eg = (f" (e.g. {wa.decode('utf-8', 'replace')!r} then "
              f"{wb.decode('utf-8', 'replace')!r}: {(wa + wb).decode('utf-8', 'replace')!r} "
              "is not read as those two)"
              if wa is not None and wb is not None else "")
        glued.append(f"{names[a]} can never be followed by "
                     f"{', '.join(names[b] for b in fol)}{eg}")
    why = "; ".join(
        ([("the greedy lexer cannot end a lexeme where the next one starts with a byte that "
           "continues it: " + "; ".join(glued))] if glued else [])
        + ([("followed only by terminals the lexer never produces (another terminal always "
             "wins their texts): " + "; ".join(lost))] if lost else []))
    terms = {t.name for t in grammar.terminals} | set(grammar.declared)
    good = productive_symbols(grammar.rules, terms - {names[a] for a in dead})
    src = grammar.source or "<grammar>"
    if grammar.start not in good:
        raise GrammarError(f"{src}: the language is empty as the lexer splits text: {why}",
                           name=names[min(dead)])
    warnings.warn(f"{src}: rules needing these terminals can never finish; masks refuse "
                  f"them: {why}", GrammarWarning, stacklevel=4)


def shortest_lexeme(dfa: LexerDFA, t: int) -> bytes | None:
    """The shortest text the lexer reads as one lexeme of ``t`` (breadth first, smallest
    bytes first), or None."""
    if dfa.num_states == 0:
        return None
    return shortest_text(dfa.trans, dfa.accept == t)


def shortest_text(trans: np.ndarray, finals: np.ndarray) -> bytes | None:
    """A shortest non-empty text from state 0 of a byte DFA (``trans[q, b]``, -1 dead) to a
    state where ``finals`` holds (breadth first, smallest bytes first), or None."""
    prev: dict[int, tuple[int, int]] = {0: (-1, -1)}
    front = [0]
    while front:
        nxt = []
        for q in front:
            for b in range(256):
                r = int(trans[q, b])
                if r >= 0 and r not in prev:
                    prev[r] = (q, b)
                    if finals[r]:
                        out = bytearray()
                        while r != 0:
                            r, c = prev[r]
                            out.append(c)
                        return bytes(reversed(out))
                    nxt.append(r)
        front = nxt
    return None
