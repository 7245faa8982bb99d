"""Lark's lookaround-written terminals as plain regexes (same lexemes, a finite automaton).

lark's common.lark and python.lark write their strings with a lookbehind: a lexeme ends at the
first closing quote that is not escaped. A terminal that is exactly one of those is replaced
whole. ``common.ESCAPED_STRING`` is also replaced where it ends a longer terminal
(``B: "b" ESCAPED_STRING``, ``S: ESCAPED_STRING+``): nothing after it must match there, so
lark's lazy body still stops at the first unescaped quote; where text must follow it (``K:
ESCAPED_STRING ":"``) the lazy body can run past quotes, no plain regex says so, and the
terminal stays refused as a lookaround.
"""

from __future__ import annotations

import re

__all__ = ["regular_equivalent"]

_STRING_PREFIX = "(?:|[ubf]|r|[ubf]r|r[ubf])"  # python.lark's ([ubf]?r?|r[ubf]), no greedy ?
# common.ESCAPED_STRING: a double-quoted one-line string with backslash escapes
_ESCAPED_STRING = '".*?(?<!\\\\)(\\\\\\\\)*?"'
_ESCAPED_STRING_PLAIN = r'"(?:[^"\\\n]|\\[^\n])*"'
_WHOLE = {
    _ESCAPED_STRING: _ESCAPED_STRING_PLAIN,
    # python.lark's STRING, read without its (?!"") (which only leaves a triple quote to
    # LONG_STRING, the longer lexeme there anyway; an unterminated """x" lexes as "" "x")
    r"""([ubf]?r?|r[ubf])("(?!"").*?(?<!\\)(\\\\)*?"|'(?!'').*?(?<!\\)(\\\\)*?')""":
        _STRING_PREFIX + r"""(?:"(?:[^\\\n]|\\[^\n])*?"|'(?:[^\\\n]|\\[^\n])*?')""",
    # python.lark's LONG_STRING (flags i, s)
    r'([ubf]?r?|r[ubf])(""".*?(?<!\\)(\\\\)*?"""|' + r"'''.*?(?<!\\)(\\\\)*?''')":
        _STRING_PREFIX + r'(?:"""(?:[^\\]|\\[\s\S])*?"""|' + r"'''(?:[^\\]|\\[\s\S])*?''')",
    # python.lark's DEC_NUMBER without its (?![1-9]) after zeros ("01" lexes as "0" "1",
    # two numbers no Python rule puts side by side: refused by the parser instead)
    r"(?:0(?:(?:_)?0)*(?![1-9])|[1-9](?:(?:_)?[0-9])*)": r"(?:0(?:(?:_)?0)*|[1-9](?:(?:_)?[0-9])*)",
}
# what may follow an ESCAPED_STRING that ends a terminal: group ends, optionally repeated
_ONLY_GROUP_ENDS = re.compile(r"(?:\)[*+?]?)*")


def regular_equivalent(regex: str, flags: str) -> str:
    """``regex`` (a lark terminal's pattern before its flags) without the lookbehinds lark's
    own string terminals use, where a plain regex has the same lexemes; else ``regex``."""
    if regex in _WHOLE:
        return _WHOLE[regex]
    if "s" in flags:  # a dot that takes line breaks: not the one-line string above
        return regex
    at = regex.rfind(_ESCAPED_STRING)
    if at <= 0 or _ESCAPED_STRING in regex[:at]:
        return regex
    rest = regex[at + len(_ESCAPED_STRING):]
    if not _ONLY_GROUP_ENDS.fullmatch(rest) or regex[at - 1] == "\\":
        return regex
    return regex[:at] + _ESCAPED_STRING_PLAIN + rest
