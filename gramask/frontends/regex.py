"""Regular expressions and fixed choices as grammars (vLLM's ``regex`` and ``choice``).

The whole output must match: a regex becomes one terminal and a one-symbol start rule, so
the lexer DFA *is* the regex's automaton and the token tables are its rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import GrammarError, InvalidRegexError
from ..grammar import Grammar
from .bnf import GrammarBuilder

__all__ = ["grammar_from_choices", "grammar_from_regex"]


def grammar_from_regex(pattern: str) -> Grammar:
    """The language of ``pattern`` (Python ``re`` syntax), matched as a whole.

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
    try:
        re.compile(pattern)
    except re.error as e:
        raise InvalidRegexError(f"invalid regex {pattern!r}: {e}", name="REGEX") from None
    body = pattern
    # a leading ^ / trailing $ (or \A, \Z) is what whole-match means anyway
    body = re.sub(r"^(?:\^|\\A)", "", body)
    if re.search(r"(?<!\\)(?:\\\\)*(?:\$|\\Z)$", body):
        body = body[:-2] if body.endswith("\\Z") else body[:-1]
    from ..compiler.regex_bytes import _check_features

    _check_features("REGEX", body)
    b = GrammarBuilder()
    term = b.terminal(f"(?:{body})", hint="REGEX")
    if re.fullmatch(body, ""):  # the empty output is allowed too: start → ε | REGEX
        if not _nonempty(body):
            raise GrammarError(f"regex {pattern!r} matches only the empty string", name="REGEX")
        b.rule("start", (term,), ())
    else:
        b.rule("start", (term,))
    return b.grammar("start", source=f"<regex {pattern[:40]!r}>", lexer="basic")


def _nonempty(body: str) -> bool:
    """Whether ``body`` matches some non-empty string (interegular's automaton decides)."""
    from ..compiler.regex_bytes import regex_to_byte_dfa

    dfa = regex_to_byte_dfa("REGEX", f"(?:{body})")
    return bool(dfa.finals[1:].any()) if dfa.num_states > 1 else False


def grammar_from_choices(choices: Sequence[str]) -> Grammar:
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
    nonempty = sorted({c for c in choices if c})
    if not nonempty:
        raise GrammarError("choices: only the empty string (no output to constrain)")
    b = GrammarBuilder()
    body = "|".join(re.escape(c) for c in sorted(nonempty, key=lambda c: (-len(c), c)))
    term = b.terminal(f"(?:{body})", hint="CHOICE")
    b.rule("start", (term,), *([()] if "" in choices else []))
    return b.grammar("start", source="<choices>", lexer="basic")
