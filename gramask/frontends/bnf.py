"""A small builder of plain BNF grammars (terminals + rules) for the generated front ends.

The front ends (JSON Schema, regular expressions, choices) produce grammars with hundreds of
rules per request; building them directly skips lark's loader, which costs more than the rest
of the front end. Terminals are interned by pattern, so a key or a literal used in many places
is one terminal (one set of lexer states). The result is plain data (:class:`GrammarParts`)
that :class:`gramask.Grammar` builds itself from, so the front ends never import it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import GrammarError

__all__ = ["GrammarBuilder", "GrammarParts", "Rule"]


class Rule(NamedTuple):
    """One BNF production ``lhs → rhs``."""

    lhs: str
    rhs: tuple[str, ...]


@dataclass(frozen=True)
class GrammarParts:
    """A generated grammar as plain data: terminals as ``TerminalSpec`` field dicts."""

    terminals: tuple[dict[str, Any], ...]
    rules: tuple[Rule, ...]
    start: str
    source: str
    lexer: str


class GrammarBuilder:
    """Collects terminals and BNF rules; :meth:`grammar` checks and freezes them."""

    def __init__(self) -> None:
        self.terminals: list[dict[str, Any]] = []
        self._terminal_of: dict[tuple[str, bool], str] = {}
        self.rules: list[Rule] = []
        self._rule_names: set[str] = set()
        self._counter = 0
        self._last: set[str] = set()  # terminals that lose every tie (see terminal)

    def terminal(self, pattern: str, *, hint: str = "T", literal: bool = False,
                 ignored: bool = False, automaton: str = "", last: bool = False,
                 unicode_categories: bool = False) -> str:
        """The name of the terminal matching ``pattern`` (a Python regex; or, with
        ``automaton``, the JSON string spec it names), created once. ``last``: ranked after
        the others, so it loses the ties a greedy reading breaks — for terminals never
        expected beside the ones they overlap (a JSON object's keys and its string values:
        the contextual lexer never compares them, but the planner's costs follow the
        greedy winner where it can, and would route a value around every key).
        ``unicode_categories``: see ``gramask.grammar.TerminalSpec``."""
        key = (automaton or pattern, ignored)
        name = self._terminal_of.get(key)
        if name is None:
            base = re.sub(r"[^A-Z0-9_]", "_", hint.upper())[:24].strip("_") or "T"
            if base[0].isdigit():
                base = "T_" + base
            # the index after the last "_" keeps names apart that share a base: literals
            # "1" and "-1" (or "1e-20" and "1e+20") differ only in characters dropped above
            name = f"{base}_{len(self.terminals)}"
            self._terminal_of[key] = name
            self.terminals.append({"name": name, "pattern": pattern, "is_string": literal,
                                   "ignored": ignored, "automaton": automaton,
                                   **({"unicode_categories": True} if unicode_categories
                                      else {})})
            if last:
                self._last.add(name)
        return name

    def literal(self, text: str, hint: str = "LIT") -> str:
        """The terminal matching exactly ``text``."""
        return self.terminal(re.escape(text), hint=hint, literal=True)

    def fresh(self, hint: str = "r") -> str:
        """A new, unused rule name."""
        self._counter += 1
        base = re.sub(r"[^a-z0-9_]", "_", hint.lower())[:24] or "r"
        name = f"{base}_{self._counter}"
        self._rule_names.add(name)
        return name

    def rule(self, lhs: str, *alternatives: tuple[str, ...]) -> str:
        """Add ``lhs → alt`` for each alternative (a tuple of symbols; () is empty)."""
        self._rule_names.add(lhs)
        for alt in alternatives:
            self.rules.append(Rule(lhs, tuple(alt)))
        return lhs

    def parts(self, start: str, *, source: str, lexer: str = "contextual") -> GrammarParts:
        """The grammar from ``start``, unproductive and unreachable rules pruned.

        Raises
        ------
        GrammarError
            ``start`` derives no string (the input describes an empty language).
        """
        from ..compiler.analysis import prune

        known = {t["name"] for t in self.terminals}
        if not any(r.lhs == start for r in self.rules):
            raise GrammarError(f"{source}: no value can satisfy it (empty language)", name=start)
        rules = list(prune(self.rules, known, start, warn=False, source=source))
        used = {s for r in rules for s in r.rhs} & known
        terminals = tuple(sorted((t for t in self.terminals if t["name"] in used or t["ignored"]),
                                 key=lambda t: t["name"] in self._last))
        return GrammarParts(terminals=terminals, rules=tuple(rules), start=start,
                            source=source, lexer=lexer)
