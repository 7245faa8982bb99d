"""What a Lark grammar that fails to load says: the rule, terminal or ``%import`` at fault,
and its line (lark's own messages often name neither)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from .errors import GrammarError, InvalidRegexError

__all__ = ["guess_line", "import_error", "lex_error", "load_error", "undefined_start",
           "visit_error"]


def undefined_start(text: str, source: str, start: str) -> GrammarError:
    """The start rule is missing: say so, with the rules the text defines."""
    rules = sorted(set(re.findall(r"^[ \t]*[?!]?([a-z_][a-z_0-9]*)[ \t]*(?:\.-?\d+)?[ \t]*:",
                                  text, re.M)))
    return GrammarError(
        f"{source}: the start rule {start!r} is not defined (start= / --start); "
        f"the grammar's rules: {', '.join(rules[:20]) or 'none'}"
        + (", ..." if len(rules) > 20 else ""), name=start)


def load_error(text: str, source: str, start: str, msg: str) -> GrammarError:
    """lark's ``GrammarError`` while loading: an undefined start rule listed with the rules
    there are; an undefined terminal called a terminal (lark says "Rule" for both), and one a
    ``%import`` names traced to that ``%import``'s line (the module has no such name)."""
    undefined = re.fullmatch(r"Using an undefined rule: NonTerminal\('(\w+)'\)", msg)
    if undefined and undefined.group(1) == start:  # lark names its internal class
        return undefined_start(text, source, start)
    if undefined:
        msg = f"rule {undefined.group(1)!r} is used but not defined"
    used = re.fullmatch(r"Rule '(\w+)' used but not defined(.*)", msg, flags=re.DOTALL)
    if used:
        name = used.group(1)
        for m in _IMPORT.finditer(text):
            names = {m.group(1).rsplit(".", 1)[-1]}
            if m.group(2):  # %import module (A, b): the names in parentheses
                end = text.find(")", m.end())
                names = set(re.findall(r"\w+", text[m.end():end if end >= 0 else None]))
            arrow = re.match(r"[ \t]*->[ \t]*(\w+)", text[m.end():])
            if name in names or (arrow and arrow.group(1) == name):
                module = m.group(1) if m.group(2) else m.group(1).rsplit(".", 1)[0]
                wanted = name if name in names else m.group(1).rsplit(".", 1)[-1]
                return GrammarError(
                    f"{source}: %import {m.group(1)}: {module} defines no "
                    f"{'terminal' if wanted.lstrip('_')[:1].isupper() else 'rule'} {wanted}",
                    line=text.count("\n", 0, m.start()) + 1, name=name)
        kind = "terminal" if name.lstrip("_")[:1].isupper() else "rule"
        msg = f"{kind} {name!r} is used but not defined{used.group(2)}"
    return GrammarError(f"{source}: {msg}", line=guess_line(text, msg))


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
        if not module or not module[0]:  # a relative import (".x"): beside the grammar file
            rel = os.path.join(*[p for p in module if p]) + ".lark" if any(module) else ""
            if rel and str(getattr(error, "filename", "")).endswith(rel):
                return GrammarError(
                    f"{source}: %import {m.group(1)}: no grammar file {rel} beside this "
                    "grammar (a relative import reads the folder of the grammar file)",
                    line=text.count("\n", 0, m.start()) + 1, name=m.group(1))
            continue
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
        name, line = m.group(1), guess_line(text, m.group(1))
        what = f"terminal {name}"
        if name.startswith("__IGNORE_"):  # lark's name for the n-th %ignore, if inline
            n = int(name.rsplit("_", 1)[1])
            ignores = list(re.finditer(r"^[ \t]*%ignore[ \t]+(.*?)[ \t]*$", text, re.M))
            if n < len(ignores):
                what = f"%ignore {ignores[n].group(1)}"
                line = text.count("\n", 0, ignores[n].start()) + 1
        return GrammarError(
            f"{source}: {what} matches the empty string ({m.group(2)}); a terminal "
            f"must consume at least one character",
            line=line, name=name,
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
