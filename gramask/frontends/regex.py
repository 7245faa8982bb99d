"""Regular expressions and fixed choices as grammars (vLLM's ``regex`` and ``choice``).

The whole output must match: a regex becomes one terminal and a one-symbol start rule, so
the lexer DFA *is* the regex's automaton and the token tables are its rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..errors import GrammarError, InvalidRegexError
from .bnf import GrammarBuilder, GrammarParts
from .regex_anchors import without_edge_anchors

__all__ = ["grammar_from_choices", "grammar_from_regex"]


def grammar_from_regex(pattern: str) -> GrammarParts:
    """The language of ``pattern`` (Python ``re`` syntax), matched as a whole, as
    ``re.fullmatch`` reads it: ``\\d``, ``\\w``, ``\\s`` are Unicode classes (ASCII under
    the ``a`` flag). A pattern that matches the empty string allows the empty output (end of
    sequence at once) beside the rest.

    Raises
    ------
    InvalidRegexError
        The pattern does not parse.
    UnsupportedRegexError
        It has no finite automaton (lookaround, backreference, anchors inside).
    GrammarError
        It matches only the empty string.
    """
    if not isinstance(pattern, str):
        raise GrammarError(f"a regex must be a string, not {type(pattern).__name__}")
    # a lone surrogate written as a character (not as \\ud800) becomes its escape: the
    # pattern must be UTF-8 text (what it matches of it is decided below)
    pattern = _SURROGATE.sub(lambda m: f"{m.group(1)}\\u{ord(m.group(2)):04x}", pattern)
    try:
        re.compile(pattern)
    except re.error as e:
        raise InvalidRegexError(f"invalid regex {pattern!r}: {e}", name="REGEX") from None
    # global flags (``(?i)`` first) hold for the whole pattern: they become a scoped group
    # around it (as written, they cannot stand inside the group the terminal wraps it in)
    m = re.match(r"(?:\(\?[aiLmsux]+\))*", pattern)
    flags = "".join(dict.fromkeys(re.findall("[aiLmsux]", m.group()))) if m else ""
    body = pattern[m.end():] if m else pattern
    # a leading ^ / trailing $ (or \A, \Z) is what whole-match means anyway
    body = re.sub(r"^(?:\^|\\A)", "", body)
    if re.search(r"(?<!\\)(?:\\\\)*(?:\$|\\Z)$", body):
        body = body[:-2] if body.endswith("\\Z") else body[:-1]
    if flags:  # (a verbose pattern's last line may be a comment: the group closes below it)
        body = f"(?{flags}:{body}\n)" if "x" in flags else f"(?{flags}:{body})"
    from ..compiler.regex_features import check_features, has_category

    body = without_edge_anchors(body)
    parsed = check_features("REGEX", body)  # here, naming REGEX, not REGEX_0 at compile time
    b = GrammarBuilder()
    uni = has_category(parsed)  # \d, \w, \s as re reads them (Unicode), the promise here
    if not re.fullmatch(body, ""):
        if _spells_nothing(f"(?:{body})", uni):
            raise GrammarError(
                f"regex {pattern!r} matches no text that UTF-8 output can spell (only lone "
                "surrogates, or an empty class): no output would be allowed", name="REGEX")
        b.rule("start", (b.terminal(f"(?:{body})", hint="REGEX", unicode_categories=uni),))
    else:  # a lexer terminal never matches the empty string: start is REGEX' | ε
        from .regex_nonempty import nonempty_regex

        nonempty = nonempty_regex(body)
        if nonempty is None or _spells_nothing(nonempty, uni):
            raise GrammarError(
                f"regex {pattern!r} matches only the empty string (no output to constrain)",
                name="REGEX")
        b.rule("start", (b.terminal(nonempty, hint="REGEX", unicode_categories=uni),), ())
    return b.parts("start", source=f"<regex {pattern[:40]!r}>", lexer="basic")


_SURROGATE = re.compile(r"(?<!\\)((?:\\\\)*)\\?([\ud800-\udfff])")


def _spells_nothing(pattern: str, uni: bool) -> bool:
    """Does ``pattern`` match no UTF-8 text (``\\ud800``, ``[^\\s\\S]``)? A terminal of it
    would leave the mask empty at the start: no output, not even EOS. Only a character item
    that matches no character UTF-8 can spell makes it so (every regular construct over
    items that match something matches something): where there is one, its byte NFA, which
    leaves surrogates out, is searched for a path to its end; one too large to build is left
    for the compiler to refuse."""
    from ..compiler.regex_bytes import MAX_NFA_NODES, MAX_TERMINAL_STATES
    from ..compiler.regex_features import parse_regex
    from ..compiler.regex_nfa import NFATooLarge, RegexNotRegular, build_byte_nfa
    from ..compiler.regex_size import dfa_states_from_width

    parsed = parse_regex(pattern)
    try:
        if parsed is not None and _items_spell(parsed, int(parsed.state.flags), uni):
            return False
    except (RegexNotRegular, RecursionError):
        pass
    if dfa_states_from_width(pattern) > MAX_TERMINAL_STATES:
        return False  # (no NFA built for what the compiler refuses by its length alone)
    try:
        nfa = build_byte_nfa(pattern, MAX_NFA_NODES, False, uni)
    except (NFATooLarge, RegexNotRegular, RecursionError):
        return False
    seen, todo = {0}, [0]
    while todo:
        n = todo.pop()
        if n == nfa.final:
            return False
        for m in [*nfa.eps[n], *(t for _, _, t in nfa.moves[n])]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return True


def _items_spell(items: Any, flags: int, uni: bool) -> bool:
    """Does every character item of the parsed ``items`` match a character that is no
    surrogate (read under its group's flags, as ``build_byte_nfa`` reads it)? False for an
    item it does not know."""
    from ..compiler.regex_nfa import char_set

    for op, av in items:
        kind = str(op)
        if kind in ("LITERAL", "NOT_LITERAL", "ANY", "IN"):
            if all(lo >= 0xD800 and hi <= 0xDFFF for lo, hi in char_set(op, av, flags, uni)):
                return False
        elif kind == "SUBPATTERN":
            if not _items_spell(av[3], (flags | av[1]) & ~av[2], uni):
                return False
        elif kind == "BRANCH":
            if not all(_items_spell(alt, flags, uni) for alt in av[1]):
                return False
        elif kind in ("MAX_REPEAT", "MIN_REPEAT"):
            if not _items_spell(av[2], flags, uni):
                return False
        else:
            return False
    return True


def grammar_from_choices(choices: Sequence[str]) -> GrammarParts:
    """Exactly one of ``choices`` (strings, matched literally).

    Raises
    ------
    GrammarError
        No choices, a choice that is not a string, or only the empty string.
    """
    if isinstance(choices, str) or not isinstance(choices, Sequence):
        raise GrammarError("choices must be a list of strings")
    if not choices:
        raise GrammarError("choices: the list is empty (no output would be allowed)")
    for i, c in enumerate(choices):
        if not isinstance(c, str):
            raise GrammarError(f"choices[{i}] must be a string, not {type(c).__name__}")
        if (bad := _SURROGATE.search(c)) is not None:
            raise GrammarError(
                f"choices[{i}] holds a lone surrogate (U+{ord(bad.group(2)):04X}), which no "
                "UTF-8 output can spell")
    nonempty = sorted({c for c in choices if c})
    if not nonempty:
        raise GrammarError("choices: only the empty string (no output to constrain)")
    b = GrammarBuilder()
    body = "|".join(re.escape(c) for c in sorted(nonempty, key=lambda c: (-len(c), c)))
    term = b.terminal(f"(?:{body})", hint="CHOICE")
    b.rule("start", (term,), *([()] if "" in choices else []))
    return b.parts("start", source="<choices>", lexer="basic")
