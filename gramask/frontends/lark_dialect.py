"""The Lark dialect of llguidance and XGrammar → standard Lark, for the extensions that do not
change how text is lexed.

Accepted (rewritten before lark loads the grammar; newlines kept, so lark's line numbers
stay right):

* ``x{m}``, ``x{m,n}``, ``x{m,}``, ``x{,n}`` after any rule or terminal item — a name, a string,
  a regex, ``(...)`` or ``[...]`` — become lark's ``x ~ m``, ``x ~ m..n``, ``(x ~ m x*)``,
  ``(x ~ 1..n)?``;
* ``""`` (an empty string) becomes ``()``, the empty sequence, so ``a: "" | "x"`` works. In a
  terminal it still makes the terminal match the empty string, which lark refuses.

Not accepted (lark reports them as syntax errors): llguidance's ``%llguidance``, ``%json``,
``%regex`` and lexeme options (``[max_tokens=…]``, ``stop=``, ``lazy``), ``&`` / ``~`` on
terminals, and the token syntax ``<[id]>`` — they change what a lexeme is or match vocabulary
tokens rather than text (docs/dialects.md).
"""

from __future__ import annotations

import re

__all__ = ["TOKEN", "rewrite_dialect"]

TOKEN = re.compile(  # one item of Lark text (also read by .lark_literals)
    r"""
    (?P<comment>//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*"i?)
  | (?P<regex>/(?!/)(?:\\.|[^/\\\n])+/[imslux]*)
  | (?P<repeat>\{\s*\d*\s*(?:,\s*\d*\s*)?\})
  | (?P<name>[?!_]*[A-Za-z_][A-Za-z_0-9.]*)
  | (?P<open>[(\[])
  | (?P<close>[)\]])
  | (?P<space>\s+)
  | (?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_PAIR = {")": "(", "]": "["}


def rewrite_dialect(text: str) -> str:
    """``text`` with the dialect's repetitions and empty strings in standard Lark syntax."""
    if "{" not in text and '""' not in text:
        return text
    out: list[str] = []  # emitted pieces
    starts: list[int] = []  # index in ``out`` where each emitted item begins (for operands)
    kinds: list[str] = []
    opens: list[int] = []  # positions in ``starts`` of unclosed brackets
    spans: dict[int, int] = {}  # closing item index -> its opening item index
    for m in TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        tok = m.group()
        if kind == "repeat" and re.fullmatch(r"\{\s*\d*\s*(,\s*\d*\s*)?\}", tok) and tok != "{}":
            j = _operand_start(kinds, spans)
            if j is not None and re.search(r"\d", tok):
                first = starts[j]
                operand = "".join(out[first:])
                del out[first:]
                del starts[j:], kinds[j:]
                rewritten = _repeat(operand.strip(), tok)
                starts.append(len(out))
                kinds.append("group")
                out.append(" " + rewritten + " ")
                continue
        if kind == "string" and tok == '""':
            tok, kind = "()", "group"
        if kind == "open":
            opens.append(len(kinds))
        elif kind == "close" and opens:
            spans[len(kinds)] = opens.pop()
        starts.append(len(out))
        kinds.append(kind)
        out.append(tok)
    return "".join(out)


def _operand_start(kinds: list[str], spans: dict[int, int]) -> int | None:
    """Index of the item where the operand ending at the last non-blank item begins."""
    k = len(kinds) - 1
    while k >= 0 and kinds[k] in ("space", "comment"):
        k -= 1
    if k < 0:
        return None
    if kinds[k] in ("name", "string", "regex", "group"):
        return k
    if kinds[k] == "close":
        return spans.get(k)
    return None


def _repeat(operand: str, braces: str) -> str:
    body = braces[1:-1].replace(" ", "")
    if "," not in body:
        n = int(body)
        return f"({operand} ~ {n})" if n else "()"
    lo_s, hi_s = body.split(",", 1)
    lo = int(lo_s) if lo_s else 0
    if not hi_s:
        return f"({operand} ~ {lo} {operand}*)" if lo else f"({operand})*"
    hi = int(hi_s)
    if hi < lo:
        raise _bad(braces)
    if hi == 0:
        return "()"
    if lo == 0:
        return f"({operand} ~ 1..{hi})?"
    return f"({operand} ~ {lo}..{hi})"


def _bad(braces: str) -> ValueError:
    from ..errors import GrammarError

    return GrammarError(f"repetition {braces}: the maximum is below the minimum")
