"""What a Lark grammar that fails to load says: the rule, terminal or ``%import`` at fault,
and its line (lark's own messages often name neither)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from .errors import GrammarError, InvalidRegexError

__all__ = ["guess_line", "import_error", "lex_error", "undefined_start", "visit_error"]


def undefined_start(text: str, source: str, start: str) -> GrammarError:
    """The start rule is missing: say so, with the rules the text defines."""
    rules = sorted(set(re.findall(r"^[ \t]*[?!]?([a-z_][a-z_0-9]*)[ \t]*(?:\.-?\d+)?[ \t]*:",
                                  text, re.M)))
    return GrammarError(
        f"{source}: the start rule {start!r} is not defined (start= / --start); "
        f"the grammar's rules: {', '.join(rules[:20]) or 'none'}"
        + (", ..." if len(rules) > 20 else ""), name=start)


def visit_error(text: str, source: str, e: Any) -> GrammarError:
    """lark's loader failing inside a grammar construct (a ``"a".."bc"`` range), named."""
    obj = getattr(e, "obj", None)
    tokens = [t for t in getattr(obj, "children", ()) if hasattr(t, "line")]
    line = tokens[0].line if tokens else None
    column = tokens[0].column if tokens else None
    name = enclosing_definition(text, line) if line else None
    where = f" in {name}" if name else ""
    if getattr(e, "rule", None) == "range" and len(tokens) == 2:
        return GrammarError(
            f"{source}: character range {tokens[0]}..{tokens[1]}{where}: both ends must be "
            "single characters, without flags (write an alternation or a regex instead)",
            line=line, column=column, name=name,
        )
    return GrammarError(
        f"{source}: lark cannot load the rule {getattr(e, 'rule', '?')!r}{where}: "
        f"{getattr(e, 'orig_exc', e)!r}",
        line=line, column=column, name=name,
    )


def enclosing_definition(text: str, line: int) -> str | None:
    """The rule or terminal whose definition contains ``line`` (1-based)."""
    lines = text.splitlines()
    for i in range(min(line, len(lines)) - 1, -1, -1):
        m = re.match(r"[ \t]*[?!]?([A-Za-z_][A-Za-z_0-9]*)(?:\.-?\d+)?(?:\{[^}]*\})?[ \t]*:", lines[i])
        if m:
            return m.group(1)
    return None


_IMPORT = re.compile(r"^[ \t]*%import[ \t]+([\w.]+)[ \t]*(\()?", re.MULTILINE)
_LARK_MODULES = {"common", "lark", "python", "unicode"}


def import_error(
    text: str, source: str, import_paths: Sequence[str], error: OSError
) -> GrammarError:
    """The ``%import`` whose grammar file lark could not open, by name and line."""
    for m in _IMPORT.finditer(text):
        parts = m.group(1).split(".")
        module = parts if m.group(2) else parts[:-1]
        if not module or not module[0]:
            continue  # a relative import (".x"): resolved against the grammar's own file
        if module[0] in _LARK_MODULES and len(module) == 1:
            continue
        rel = os.path.join(*module) + ".lark"
        if any(isinstance(p, str) and os.path.isfile(os.path.join(p, rel)) for p in import_paths):
            continue
        line = text.count("\n", 0, m.start()) + 1
        searched = ", ".join(p if isinstance(p, str) else repr(p) for p in import_paths)
        return GrammarError(
            f"{source}: %import {m.group(1)}: no grammar file {rel} (import_paths: "
            f"{searched or 'none given'}; lark's own: common, python, unicode, lark)",
            line=line,
            name=m.group(1),
        )
    return GrammarError(f"{source}: an %import could not be read: {error}")


def lex_error(text: str, source: str, message: str) -> GrammarError:
    """Lark's ``LexError`` about one terminal, as a GrammarError naming it and its line."""
    m = re.search(r"zero-width terminals\. \((\w+): (.*)\)$", message)
    if m:
        name = m.group(1)
        return GrammarError(
            f"{source}: terminal {name} matches the empty string ({m.group(2)}); a terminal "
            f"must consume at least one character",
            line=guess_line(text, name), name=name,
        )
    m = re.search(r"Cannot compile token (\w+): (.*)$", message)
    if m:
        name, pattern = m.group(1), m.group(2)
        detail = ""
        try:
            re.compile(pattern.strip("'\""))
        except re.error as e:
            detail = f": {e}"
        return InvalidRegexError(
            f"{source}: terminal {name} has an invalid regex {pattern}{detail}",
            line=guess_line(text, name), name=name,
        )
    return GrammarError(f"{source}: {message}", line=guess_line(text, message))


def guess_line(text: str, message: str) -> int | None:
    """Lark's grammar errors often name a rule/terminal but not the line: find its definition."""
    for cand in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", message):
        pat = re.compile(rf"^[ \t]*[?!]?{re.escape(cand)}\b", re.M)
        hit = pat.search(text)
        if hit and cand.lower() not in {"rule", "terminal", "using", "an", "the"}:
            return text.count("\n", 0, hit.start()) + 1
    return None
