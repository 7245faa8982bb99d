r"""Which Lark terminals ``re`` reads differently from their language's longest match.

Why: lark's lexers match a terminal with Python's ``re``, whose match is the first path in
its order of trying (alternatives in their order, a greedy repeat one more copy first), not
the longest text of the terminal's language: ``/(?:a|ab)c?/`` ends ``abc`` after ``a``, and
``/a?(?:ab)?/`` ends ``ab`` after ``a``. Such a terminal is compiled leftmost-first
(:mod:`gramask.compiler.regex_ordered`), as the lazy ones are. Most terminals read alike
both ways (``/[a-z_]\w*/``, ``/\d+(\.\d+)?/``): they keep the plain subset construction, so
their automata, and the artifacts of the grammars that use them, do not change.

The leftmost-first automaton accepts the texts that ``re.match`` matches whole, a subset of
the language; the two readings agree on every input exactly when that subset is the whole
language (a text of the language outside it is, as input, a longest match that ``re`` cuts
short). That is decided on the two automata by a walk of their product (no need where the
language is prefix-free: one prefix of an input at most matches), after a look at
the pattern that settles the common shapes without building anything (a loaded grammar is
fingerprinted on every cache hit): no choice at all, or a single greedy repeat of one
character at the end (``/[a-z_]\w*/``, ``/#[^\n]*/``), which ``re`` runs as far as it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import GramaskError
from .lexer import terminal_dfa
from .regex_bytes import ByteDFA
from .regex_features import has_choice, has_lazy_repeat, parse_regex

__all__ = ["covers", "reads_first_match"]


def covers(ordered: ByteDFA, plain: ByteDFA) -> bool:
    """Does ``ordered`` accept every text ``plain`` accepts? ``plain`` must be trimmed (each
    live state reaches a final one), as :func:`regex_to_byte_dfa` builds it."""
    pr, _ = plain.column_rank()
    qr, nq = ordered.column_rank()
    _, reps = np.unique(pr * (nq + 1) + qr, return_index=True)  # a byte per joint class
    pt = plain.trans[:, reps].tolist()
    qt = ordered.trans[:, reps].tolist()
    pf, qf = plain.finals.tolist(), ordered.finals.tolist()
    if pf[0] and not qf[0]:
        return False
    seen = {(0, 0)}
    stack = [(0, 0)]
    while stack:
        p, q = stack.pop()
        for p2, q2 in zip(pt[p], qt[q], strict=True):
            if p2 < 0:
                continue
            if q2 < 0 or (pf[p2] and not qf[q2]):
                return False
            if (p2, q2) not in seen:
                seen.add((p2, q2))
                stack.append((p2, q2))
    return True


def _longest_by_shape(items: list[Any]) -> bool:
    """Is ``re``'s match of this sequence its longest, by its shape alone: every item but
    the last without a choice (one text each), the last one too, or a greedy repeat of one
    character (taken as often as the text allows: no other way to match), or a group of
    such a sequence."""
    if not items or has_choice(items[:-1]):
        return not items
    op, av = items[-1]
    if not has_choice([items[-1]]):
        return True
    if str(op) == "SUBPATTERN":
        return _longest_by_shape(list(av[3]))
    return (str(op) == "MAX_REPEAT" and not has_choice(av[2])
            and av[2].getwidth() == (1, 1))


@dataclass(frozen=True)
class _Regex:
    """A regex terminal as :func:`terminal_dfa` reads it (its memo key: kind and pattern)."""

    name: str
    pattern: str
    first_match: bool
    unicode_categories: bool
    is_string: bool = False
    priority: int = 0
    ignored: bool = False


_UNSET: Any = object()  # (None is a pattern re cannot parse)


def reads_first_match(name: str, pattern: str, unicode_categories: bool = False, *,
                      parsed: Any = _UNSET) -> bool:
    """Should regex terminal ``name`` (``pattern``) be read leftmost-first, as ``re``
    matches it (``TerminalSpec.first_match``)? Yes with a lazy repeat; else only where
    ``re``'s first match can end before the longest one (see module doc). The automata built
    to tell are kept (``terminal_dfa``'s memo), so the compile that follows reuses them. A
    terminal whose automaton cannot be built either way keeps the plain reading (its compile
    then names what is wrong with it). ``parsed``: ``parse_regex(pattern)`` where the caller
    has it."""
    if parsed is _UNSET:
        parsed = parse_regex(pattern)
    if has_lazy_repeat(parsed):
        return True
    if parsed is None or _longest_by_shape(list(parsed)):
        return False
    try:
        plain = terminal_dfa(_Regex(name, pattern, False, unicode_categories))
        if _prefix_free(plain):
            return False
        ordered = terminal_dfa(_Regex(name, pattern, True, unicode_categories))
    except GramaskError:
        return False
    return not covers(ordered, plain)


def _prefix_free(dfa: ByteDFA) -> bool:
    """No text of the (trimmed) automaton's language extends another (``/"[^"]*"/``): at
    most one prefix of an input matches, which ``re`` finds as the longest match does."""
    cls_trans, _ = dfa.classes()
    return not bool((cls_trans[dfa.finals] >= 0).any())
