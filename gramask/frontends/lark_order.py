"""lark's terminal order: which terminal a lark lexer tries first at a lexeme's start.

Why: lark's ``BasicLexer`` does not take the longest lexeme across terminals. It sorts its
terminals by (-priority, -max width, -length of the pattern's text, name), joins them into
one ``re`` alternation and takes the first alternative that matches (``_T.2: "+"`` beside
``/[^\\s()]+/`` reads ``+0`` as ``+`` ``0``). Before that, ``_create_unless`` takes out of the
alternation each string that a regex of its priority matches whole (``re.match``) and whose
flags the regex has too: the regex's lexeme becomes that string's token where the string's
pattern matches all of it (a keyword beside its name regex). The order is taken here from
lark's own terminal definitions (their widths as lark computes them), so the compiler need
not re-read lark's patterns (:mod:`gramask.compiler.lark_order` builds the lexer by it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any

__all__ = ["lark_terminal_order"]


def lark_terminal_order(
    lark_terminals: Sequence[Any], known: Collection[str],
) -> tuple[tuple[str, ...], ...]:
    """One entry per terminal of lark's alternation, in its order: the terminal's name, then
    the strings its lexemes become where they match them whole (a regex's ``unless`` list, in
    lark's order). A string folded into a regex has no entry of its own. Only ``known``
    terminals are listed (gramask drops strings that an ``%ignore`` swallows)."""
    ts = sorted(lark_terminals, key=lambda x: (
        -x.priority, -x.pattern.max_width, -len(x.pattern.value), x.name))
    ts = _guards_first(ts)
    strings = [t for t in ts if t.pattern.type == "str"]
    unless: dict[str, list[str]] = {}
    embedded: set[str] = set()
    for r in ts:
        if r.pattern.type == "str":
            continue
        rx = r.pattern.to_regexp()
        for s in strings:
            if s.priority != r.priority:
                continue
            value = s.pattern.value
            m = re.match(rx, value)
            if m is not None and m.group(0) == value:
                unless.setdefault(r.name, []).append(s.name)
                if set(s.pattern.flags) <= set(r.pattern.flags):
                    embedded.add(s.name)
    return tuple(
        (t.name, *(s for s in unless.get(t.name, ()) if s in known))
        for t in ts if t.name in known and t.name not in embedded)


# (terminal, the terminal its lookahead leaves a text to): python.lark's STRING refuses a
# triple quote with ``(?!"")`` so that LONG_STRING, after it in lark's order, takes it. gramask
# reads STRING without the lookahead (a lookahead is no regular language: grammar.py's
# ``lark_equivalents``), so LONG_STRING comes first instead: then STRING's ``""`` cuts
# it no more, and the lexemes are lark's (an unterminated ``"""x"`` is refused, as in lark)
_GUARDS = (("STRING", "LONG_STRING"),)


def _guards_first(ts: list[Any]) -> list[Any]:
    """``ts`` with each guard of :data:`_GUARDS` moved before the terminal whose dropped
    lookahead left it its texts."""
    for guarded, guard in _GUARDS:
        names = [t.name for t in ts]
        if guarded not in names or guard not in names:
            continue
        i, j = names.index(guarded), names.index(guard)
        if j > i and "(?!" in ts[i].pattern.value:
            ts = [*ts[:i], ts[j], *ts[i:j], *ts[j + 1:]]
    return ts
