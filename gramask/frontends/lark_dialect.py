"""The Lark dialect of llguidance and XGrammar → standard Lark, for the extensions that do not
change how text is lexed.

Accepted (rewritten before lark loads the grammar; newlines kept, so lark's line numbers
stay right):

* ``x{m}``, ``x{m,n}``, ``x{m,}``, ``x{,n}`` after any rule or terminal item — a name, a string,
  a regex, ``(...)`` or ``[...]`` — become lark's ``x ~ m``, ``x ~ m..n``, ``(x ~ m x*)``,
  ``(x ~ 1..n)?``;
* ``""`` (an empty string) becomes ``()``, the empty sequence, so ``a: "" | "x"`` works. In a
  terminal it still makes the terminal match the empty string, which lark refuses.
* hyphenated names ``foo-bar`` / ``FOO-BAR`` (llguidance and XGrammar read them) become
  ``foo__bar`` / ``FOO__BAR``.

``%json {schema}`` is cut out before this runs and spliced in after lark (``.lark_json``).

Refused with a ``GrammarError`` that names the construct and its line (lark would only
report a syntax error): ``%llguidance``, ``%regex``, ``%lark``, ``%if``,
``%grammar_options`` and other directives lark lacks, grammar references ``@name``, lexeme
options (``x[max_tokens=…]``, ``[stop=…]``, ``[lazy]``, ``[capture]``), ``&`` and ``~``
(intersection, negation) on terminals, parametric rules (``name::arg``) and the token syntax
``<[id]>`` / ``<|special|>`` — they change what a lexeme is or match vocabulary tokens rather
than text (docs/dialects.md).
"""

from __future__ import annotations

import re

__all__ = ["TOKEN", "refuse_extensions", "rewrite_dialect"]

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


# lark's own directives; any other ``%name`` is llguidance's (or a typo: lark refuses it too)
_LARK_DIRECTIVES = {"import", "ignore", "declare", "override", "extend"}
_OPTIONS = re.compile(r"^[ \t]*([?!]?[A-Za-z_][A-Za-z_0-9.]*)[ \t]*\[([^\]\n]*)\][ \t]*:",
                      re.MULTILINE)


def refuse_extensions(text: str) -> None:
    """Raise a ``GrammarError`` naming the first llguidance construct of ``text`` that gramask
    does not read (strings, regexes and comments are skipped)."""
    m = _OPTIONS.search(text)
    found: list[tuple[int, str]] = []
    if m:
        found.append((m.start(2) - 1, f"lexeme options [{m.group(2).strip()}] on "
                      f"{m.group(1)!r} (llguidance's stop=, max_tokens=, lazy, capture)"))
    items = [(t.lastgroup or "other", t.group(), t.start()) for t in TOKEN.finditer(text)]
    nexts: list[tuple[str, str]] = []  # the next item that is no blank or comment (backwards)
    after = ("", "")
    for kd, tk, _ in reversed(items):
        nexts.append(after)
        if kd not in ("space", "comment"):
            after = (kd, tk)
    nexts.reverse()
    for k, (kind, tok, at) in enumerate(items):
        if kind != "other":
            continue
        nxt = nexts[k]
        if tok == "%" and nxt[0] == "name" and nxt[1] not in _LARK_DIRECTIVES:
            found.append((at, f"the dialect's %{nxt[1]} (llguidance, XGrammar)"))
        elif tok == "<":
            found.append((at, "token syntax <…> (vocabulary tokens: <[id]>, <|special|>)"))
        elif tok == "&":
            found.append((at, "the intersection & of terminals"))
        elif tok == "~" and not nxt[1][:1].isdigit():
            found.append((at, "the negation ~ of a terminal"))
        elif tok == "@" and nxt[0] == "name" and at + 1 < len(text) and text[at + 1] != " ":
            found.append((at, f"the grammar reference @{nxt[1]}"))
        elif tok == ":" and k + 1 < len(items) and items[k + 1][1] == ":":
            found.append((at, "a parametric rule (name::argument)"))
        else:
            continue
        break
    if found:
        at, what = min(found)
        from ..errors import GrammarError, text_position

        line, column, context = text_position(text, at)
        raise GrammarError(f"{what} is not supported: gramask reads Lark with the "
                           "dialect's {m,n}, \"\", hyphenated names and %json only "
                           "(docs/dialects.md)", line=line, column=column, context=context)


def rewrite_dialect(text: str) -> str:
    """``text`` with the dialect's repetitions and empty strings in standard Lark syntax;
    the llguidance constructs gramask does not read are refused (:func:`refuse_extensions`)."""
    refuse_extensions(text)
    text = _hyphenated_names(text)
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


_HYPHEN_TAIL = re.compile(r"(?:-[A-Za-z0-9_]+)+")


def _hyphenated_names(text: str) -> str:
    """Rule and terminal names with hyphens (``foo-bar``, ``FOO-BAR``: llguidance and XGrammar
    read them, lark does not) spelt with ``__`` instead; refused where that spelling is
    already a name of the grammar."""
    if "-" not in text:
        return text
    out: list[str] = []
    names: set[str] = set()
    renamed: dict[str, str] = {}
    pos = 0
    for m in TOKEN.finditer(text):
        if m.start() < pos:
            continue  # inside a hyphenated name already taken
        tok = m.group()
        if m.lastgroup == "name":
            names.add(tok)
            tail = _HYPHEN_TAIL.match(text, m.end())
            if tail and not tok.endswith("."):
                full = tok + tail.group()
                renamed[full] = full.replace("-", "__")
                out.append(renamed[full])
                pos = tail.end()
                continue
        out.append(tok)
        pos = m.end()
    clash = sorted(full for full, new in renamed.items() if new in names)
    if clash:
        from ..errors import GrammarError

        raise GrammarError(f"the hyphenated name {clash[0]!r} is spelt "
                           f"{renamed[clash[0]]!r} for lark, which the grammar already uses")
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
