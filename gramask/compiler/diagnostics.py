"""Compile-time lexer diagnostics: terminals that compete for the same text.

In the spirit of lark's strict mode (which asks interegular for terminal collisions), but
read off the product lexer DFA, whose states already know every terminal that matches the
lexeme read so far (``LexerDFA.accepting``):

* basic mode — at a state where several terminals match, the lexer's tie rule picks one. A
  terminal that loses at every state where it matches can never be produced: a warning
  naming both terminals and a text they share (lark builds such a grammar, warning of the
  collision at most, and its lexer never produces the terminal either: the rules needing it
  never finish, and masks refuse them as the runtime refuses any shift that cannot happen).
  The contextual lexer of a Lark grammar can drop a terminal wherever it could match too
  (lark's order, :func:`gramask.compiler.lark_order.contextual_cuts`): the same warning.
  One that loses only sometimes (a keyword inside an identifier's language) is a *partial
  shadow*: listed by ``gramask inspect`` and logged as a warning.
* contextual mode — ties of equal priority are fine when the parser never expects both
  terminals at once; when some parser state expects both, the lexeme is both there and the
  parser continues with whichever fits. That is reported (a *collision*), naming the
  terminals and an example text. "Expects both" is read from the LR(0) automaton: both are
  shifted from one state (or its non-kernel partner) — a sound under-approximation of the
  Earley sets the runtime meets. A grammar's reserved keywords
  (:mod:`gramask.compiler.keywords`) never collide with their regexes: the keyword wins.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..errors import GrammarError
from ..frontends.json_schema_base import SOURCE as JSON_SCHEMA_SOURCE
from ..grammar import Grammar
from .analysis import productive_symbols
from .keywords import reserved_pairs
from .lexer import LexerDFA
from .parse_tables import ParseTables

__all__ = ["MAX_LISTED", "LexerDiagnostic", "check_lexer", "lexer_diagnostics"]

log = logging.getLogger("gramask")


@dataclass(frozen=True)
class LexerDiagnostic:
    """One pair of terminals that compete for a text."""

    kind: str  # "shadowed" | "partial_shadow" | "collision"
    terminal: str  # basic: the terminal that loses; contextual: the first of the pair
    other: str  # basic: the terminal that wins; contextual: the second
    example: str  # a text both match

    def message(self) -> str:
        if self.kind == "shadowed":
            return (f"terminal {self.terminal} can never be produced: {self.other} always "
                    f"wins on its texts, e.g. {self.example!r} (lark's terminal order; as in "
                    "lark's lexer, the rules needing it never finish)")
        if self.kind == "partial_shadow":
            return (f"terminal {self.terminal} loses to {self.other} on some texts, e.g. "
                    f"{self.example!r} (basic lexer: {self.other} is reserved there)")
        return (f"terminals {self.terminal} and {self.other} both match {self.example!r} and "
                "some parser state expects both: there the lexeme is both (contextual lexer)")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message()}


def _examples(dfa: LexerDFA) -> list[bytes]:
    """A shortest text reaching each lexer state (printable bytes preferred): a breadth-first
    search, one level at a time: a level's states in discovery order times the bytes in
    preference order, flattened, is the order a queue would meet their successors in, and
    each new state takes its first meeting (vectorised: a schema's lexer has hundreds of
    states, 256 bytes each)."""
    n = dfa.num_states
    out: list[bytes] = [b""] * n
    order = np.array([*range(32, 127), *range(0, 32), *range(127, 256)], dtype=np.int64)
    trans = dfa.trans[:, order]
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    level = np.zeros(1, dtype=np.int64)
    while level.size:
        cand = trans[level].reshape(-1)
        hit = np.flatnonzero(cand >= 0)
        hit = hit[~seen[cand[hit]]]
        if not hit.size:
            break
        _, first = np.unique(cand[hit], return_index=True)
        pos = hit[np.sort(first)]  # first meetings, in the order met
        new = cand[pos]
        seen[new] = True
        for t, q, b in zip(new.tolist(), level[pos // 256].tolist(),
                           order[pos % 256].tolist(), strict=True):
            out[t] = out[q] + bytes((b,))
        level = new.astype(np.int64)
    return out


def _text(b: bytes) -> str:
    return b.decode("utf-8", errors="backslashreplace")


# Diagnostics listed per grammar: thousands of overlapping terminals (``/x{i}[a-z]*/`` for
# i < 2,000) collide pairwise, millions of pairs nobody reads; past this many the listing
# stops (a shadowed terminal, an error, is still searched for in full).
MAX_LISTED = 1000


def lexer_diagnostics(
    grammar: Grammar, dfa: LexerDFA, pt: ParseTables | None = None, *,
    limit: int = MAX_LISTED,
) -> list[LexerDiagnostic]:
    """Competing pairs of terminals under the grammar's lexer mode (see module doc), the
    first ``limit`` of them by lexer state (and every shadowed terminal in basic mode)."""
    names = dfa.terminal_names
    acc = dfa.accepting
    multi = np.flatnonzero(acc.sum(axis=1) > 1)
    cut = _cut_off(grammar, dfa) if grammar.lark_order else []  # (contextual: where it cut)
    if not multi.size:
        return cut
    ex = _examples(dfa)
    out: list[LexerDiagnostic] = cut
    if grammar.lexer == "basic":
        wins = np.zeros(len(names), dtype=bool)
        wins[dfa.accept[dfa.accept >= 0]] = True
        seen: set[tuple[int, int]] = set()
        for q in multi.tolist():
            w = int(dfa.accept[q])
            for t in np.flatnonzero(acc[q]).tolist():
                if t == w or (t, w) in seen or (wins[t] and len(out) >= limit):
                    continue
                seen.add((t, w))
                kind = "partial_shadow" if wins[t] else "shadowed"
                out.append(LexerDiagnostic(kind, names[t], names[w], _text(ex[q])))
        return out
    from .contextual_wins import lexing_priorities

    prio = lexing_priorities(grammar)  # (lark's order: one terminal wins, no collision)
    shifted = _shifted_in(pt, len(names)) if pt is not None else None
    # reserved keywords beat their regexes wherever either competes: no collision
    seen2: set[tuple[int, int]] = set()
    for s_t, r_t in reserved_pairs(grammar, dfa):
        seen2 |= {(s_t, r_t), (r_t, s_t)}
    for q in multi.tolist():
        ts = [t for t in np.flatnonzero(acc[q]).tolist() if not dfa.ignored[t]]
        for i, a in enumerate(ts):
            for b in ts[i + 1:]:
                if prio[a] != prio[b] or (a, b) in seen2:
                    continue
                if shifted is not None and not shifted[a] & shifted[b]:
                    continue
                seen2.add((a, b))
                out.append(LexerDiagnostic("collision", names[a], names[b], _text(ex[q])))
                if len(out) >= limit:
                    return out
    return out


def _cut_off(grammar: Grammar, dfa: LexerDFA) -> list[LexerDiagnostic]:
    """Lark's terminal order (``Grammar.lark_order``): each terminal that accepts in no lexer
    state, one before it in the order always matching first, as a shadowed one (with the
    terminal that takes its shortest text, or its first part)."""
    from .lexer import terminal_dfa
    from .separable_check import shortest_text

    out: list[LexerDiagnostic] = []
    for t in np.flatnonzero(~dfa.accepting.any(axis=0)).tolist():
        own = terminal_dfa(grammar.terminals[t])
        text = shortest_text(own.trans, own.finals)
        if text is None:
            continue
        q, w = 0, -1
        for b in text:
            q = int(dfa.trans[q, b])
            if q < 0:
                break
            if dfa.accept[q] >= 0:
                w = int(dfa.accept[q])
        other = dfa.terminal_names[w] if w >= 0 else "(no terminal)"
        out.append(LexerDiagnostic("shadowed", dfa.terminal_names[t], other, _text(text)))
    return out


def _shifted_in(pt: ParseTables, n_lex: int) -> list[int]:
    """Per lexer terminal, the LR(0) states that shift it (with their non-kernel partner's
    shifts) as a bit set: two terminals are expected together where their sets meet (a
    bit set per terminal, not every pair: thousands of alternatives are millions of pairs)."""
    gi, gs = pt.goto_indptr.tolist(), pt.goto_symbol.tolist()
    per = [{x for x in gs[gi[s]:gi[s + 1]] if x < n_lex} for s in range(len(gi) - 1)]
    bits = [0] * n_lex
    nk = pt.nonkernel.tolist()
    for s, terms in enumerate(per):
        for x in terms | (per[nk[s]] if nk[s] >= 0 else set()):
            bits[x] |= 1 << s
    return bits


def check_lexer(
    grammar: Grammar, dfa: LexerDFA, pt: ParseTables | None = None
) -> list[dict[str, Any]]:
    """Run the diagnostics: log them as one warning (a literal that wins over a regex on its
    own text, a reserved keyword, at INFO), return them all as JSON-ready dicts (kept in the
    artifact's info for inspect). A terminal another always wins against (basic mode) is
    warned about, not refused: lark's basic lexer never produces it either (see module doc);
    where that leaves no program, the grammar is refused.

    Raises
    ------
    GrammarError
        Basic mode: every program needs a terminal that another always wins against (names
        both and a text).
    """
    diags = lexer_diagnostics(grammar, dfa, pt)
    ignored = {t.name for t in grammar.terminals if t.ignored}
    lost = {d.terminal: d for d in diags if d.kind == "shadowed" and d.terminal not in ignored}
    if lost:
        kept = [t.name for t in grammar.terminals if t.name not in lost] + list(grammar.declared)
        if grammar.start not in productive_symbols(grammar.rules, kept):
            raise GrammarError(
                f"{grammar.source or '<grammar>'}: the language is empty: every program needs "
                f"a terminal the lexer never produces; "
                + "; ".join(d.message() for d in lost.values()), name=next(iter(lost)))
    # A literal that wins over a regex on exactly its own text is a reserved keyword: what the
    # basic mode is chosen for (python, c). Logged at INFO; every other diagnostic warns.
    spec = {t.name: t for t in grammar.terminals}
    reserved = [d for d in diags if d.kind == "partial_shadow" and spec[d.other].is_string
                and re.fullmatch(spec[d.other].pattern, d.example) is not None]
    reserved_set = set(reserved)
    others = [d for d in diags if d not in reserved_set]
    # A JSON Schema's keys and enum strings overlap its string terminals by construction (the
    # contextual lexer lets the parser decide): nothing for a server to warn about per request.
    warn = logging.DEBUG if grammar.source == JSON_SCHEMA_SOURCE else logging.WARNING
    for level, group, what in ((logging.INFO, reserved, "reserved keyword(s)"),
                               (warn, others, "lexer diagnostic(s)")):
        if group:
            shown = "; ".join(d.message() for d in group[:5])
            more = (f" (and {len(group) - 5} more: gramask inspect lists them)"
                    if len(group) > 5 else "")
            if len(diags) >= MAX_LISTED:
                more += f" (listing stopped at {MAX_LISTED} pairs)"
            log.log(level, "gramask: %s: %d %s: %s%s", grammar.source or "<grammar>",
                    len(group), what, shown, more)
    return [d.to_json() for d in diags]
