"""Over-limit string literals in Lark text, refused before lark's loader reads them.

A string literal becomes a chain of one automaton state per character, so one of more than
``MAX_TERMINAL_STATES`` characters can never compile; but lark's own loader takes about 0.2 s
per 100 KB literal (a grammar of 100 such literals: 28 s) before gramask could say so. Here
each literal that is over the limit however it is escaped is replaced by a short placeholder,
the shortened text is loaded (cheap), and a terminal that is exactly such a literal is refused,
named, with its line. Anything else (the literal unused, or inside a larger terminal whose
automaton may still be small) is left to the ordinary load of the full text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..compiler.regex_bytes import MAX_TERMINAL_STATES
from ..errors import GrammarError
from .lark_dialect import TOKEN

__all__ = ["refuse_long_literals"]

# characters of literal text (quotes excluded) that hold more than MAX_TERMINAL_STATES
# characters however they are escaped: an escape (\U0001F600) spells one in at most 10
MIN_RAW_CHARACTERS = 10 * MAX_TERMINAL_STATES + 1


def refuse_long_literals(
    text: str, start: str, import_paths: list[Any], source: str,
    load: Callable[[str, str, list[Any]], tuple[Any, Any, Any]],
) -> None:
    """Raise for a terminal that is one over-limit string literal; return otherwise.

    Raises
    ------
    GrammarError
        Names the terminal, the literal's length and line.
    """
    if len(text) < MIN_RAW_CHARACTERS:
        return
    pieces: list[str] = []
    marks: dict[str, tuple[int, int]] = {}  # placeholder → (line, characters in the text)
    pos = 0
    for m in TOKEN.finditer(text):
        if m.lastgroup != "string":
            continue
        raw = m.group()
        body = raw[1:-2] if raw.endswith("i") else raw[1:-1]
        if len(body) < MIN_RAW_CHARACTERS:
            continue
        mark = f"gramask_long_literal_{len(marks)}"
        while mark in text:
            mark += "_"
        marks[mark] = (text.count("\n", 0, m.start()) + 1, len(body))
        pieces += [text[pos:m.start()], f'"{mark}"', "i" if raw.endswith("i") else ""]
        pos = m.end()
    if not marks:
        return
    pieces.append(text[pos:])
    try:
        terminals, _, _ = load("".join(pieces), start, import_paths)
    except Exception:  # the full load reports the grammar's errors itself
        return
    for t in terminals:
        hit = marks.get(t.pattern.value) if t.pattern.type == "str" else None
        if hit is not None:
            line, n = hit
            anonymous = t.name.lower().startswith("gramask_long_literal_") or (
                t.name.startswith("__"))
            what = f"the literal on line {line}" if anonymous else f"terminal {t.name}"
            raise GrammarError(
                f"{source}: {what}: a string literal of about {n:,} characters "
                f"needs as many automaton states (limit {MAX_TERMINAL_STATES:,}); it is not "
                "practical to compile. Shorten it or move the check out of the grammar",
                line=line, name=None if anonymous else t.name,
            )
