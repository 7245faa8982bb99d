"""llguidance's ``%json { schema }`` in Lark grammars: a JSON Schema standing as a rule item.

llguidance (docs/syntax.md, "Inline JSON Schemas") reads ``%json {…}`` as a nonterminal whose
language is the JSON texts valid under the schema, lexed in a lexeme class of its own. What it
accepts, and what is read here alike (llguidance as the oracle: tests/test_lark_json.py,
tools/lark_json_check.py; docs/dialects.md has the one known difference, string escapes):

* inside the JSON text, JSON whitespace ``[ \\t\\n\\r]+`` between any two JSON tokens (none
  with ``"x-guidance": {"whitespace_flexible": false}``, its own with ``whitespace_pattern``),
  and never before the first token or after the last: ``"<t>" %json{…} "</t>"`` takes
  ``<t>{ "a" : 1 }</t>``, not ``<t> {"a":1}</t>``; ``item_separator`` / ``key_separator``
  stand for ``,`` / ``:``;
* the host grammar's ``%ignore`` applies neither inside the JSON part nor before it, but after
  it (and, in llguidance, never at the text's ends). gramask's ignored terminals apply at
  every lexeme boundary, so a grammar with both ``%json`` and ``%ignore`` is refused rather
  than read with another language;
* two JSON parts with no lexeme between share their whitespace (``%json{…} %json{…}`` reads
  ``1 2``); refused where either takes whitespace, read where neither does.

How: :func:`cut_json` replaces each ``%json {…}`` by a placeholder terminal before lark loads
the text; :func:`splice_json` compiles each schema with the JSON Schema frontend (compact, its
whitespace made explicit here), renames its rules and terminals with a fresh prefix and puts
its start nonterminal where the placeholder stood. The JSON terminals are never keywords
(``keywords_win`` would let ``true`` beat a host regex matching it; llguidance keeps both).
Only the contextual lexer is read: in the basic one the JSON terminals would compete with the
host's everywhere (a host ``/[^<]+/`` would swallow ``{"a"``), which is no language llguidance has.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from itertools import product
from typing import Any

from ..errors import GrammarError, text_position
from .lark_dialect import TOKEN

__all__ = ["JsonPart", "cut_json", "splice_json"]

# llguidance's JsonCompileOptions (parser/src/json/compiler.rs) at their defaults: read here
# are whitespace_flexible, lenient, the separators and whitespace_pattern; the others only so
_X_DEFAULTS: dict[str, Any] = {"item_separator": ",", "key_separator": ":",
                               "whitespace_pattern": None, "coerce_one_of": False,
                               "json_allowed_escapes": None,
                               "json_allow_general_unicode_escapes": False}
_WS = "[ \\t\\n\\r]+"  # llguidance's [\x20\x0A\x0D\x09]+
_MAX_NULLABLE = 10  # nullable items in one JSON rule (their subsets are spelled out)


@dataclass(frozen=True)
class JsonPart:
    """One ``%json {…}`` of the grammar text."""

    placeholder: str  # the terminal standing for it in the text lark loads
    marker: str  # that terminal's string
    schema: Any
    line: int
    column: int


def cut_json(text: str) -> tuple[str, list[JsonPart]]:
    """``text`` with each ``%json {…}`` replaced by a placeholder terminal (defined at the end),
    and the parts cut. The newlines of a cut schema move to the end of its last line, so every
    later line keeps its number."""
    if "%json" not in text:
        return text, []
    out: list[str] = []
    parts: list[JsonPart] = []
    pos, pending = 0, 0  # newlines owed to the end of the current line
    while pos < len(text):
        m = TOKEN.match(text, pos)
        assert m is not None  # (TOKEN's last branch matches any character)
        tok = m.group()
        if tok == "%" and text.startswith("json", m.end()) and not (
                text[m.end() + 4: m.end() + 5].isalnum() or text[m.end() + 4: m.end() + 5] == "_"):
            at = m.end() + 4
            while at < len(text) and text[at] in " \t\r\n":  # (JSON's whitespace, as
                at += 1  # llguidance reads the JSON value after %json)
            line, column, _ = text_position(text, pos)
            try:
                schema, end = json.JSONDecoder().raw_decode(text, at)
            except json.JSONDecodeError as e:
                raise GrammarError(f"%json: the schema is not valid JSON: {e.msg}",
                                   line=e.lineno, column=e.colno) from None
            if not isinstance(schema, (dict, bool)):
                raise GrammarError("%json must be followed by a JSON Schema: an object {…} "
                                   "or true / false", line=line, column=column)
            k = len(parts)
            name, marker = _fresh(text, f"GRAMASKJSON{k}"), _fresh(text, f"@gramask-json-{k}@")
            parts.append(JsonPart(name, marker, schema, line, column))
            out.append(f" {name} ")
            pending += text.count("\n", pos, end)
            pos = end
            continue
        if pending and "\n" in tok:
            cut = tok.index("\n")
            tok = tok[:cut] + "\n" * pending + tok[cut:]
            pending = 0
        out.append(tok)
        pos = m.end()
    out.append("\n" * pending)
    out.extend(f"\n{p.placeholder}: \"{p.marker}\"\n" for p in parts)
    return "".join(out), parts


def _fresh(text: str, name: str) -> str:
    while name in text:
        name += "_"
    return name


def splice_json(grammar: Any, parts: list[JsonPart]) -> Any:
    """``grammar`` (a ``Grammar`` loaded from :func:`cut_json`'s text) with each placeholder
    replaced by the JSON part's start nonterminal, its rules and terminals added under fresh
    names. (The spec classes are the host's, ``type(...)``: gramask.grammar imports this.)"""
    where = f"%json at line {parts[0].line}"
    if grammar.lexer != "contextual":
        raise GrammarError(
            f"{grammar.source}: {where} needs lexer='contextual' (llguidance lexes the JSON part "
            "in a lexeme class of its own; in the basic lexer its terminals would compete "
            "with the grammar's everywhere)", line=parts[0].line)
    ignored = [t.name for t in grammar.terminals if t.ignored]
    if ignored:
        raise GrammarError(
            f"{grammar.source}: {where} with %ignore {ignored[0]} is not supported: llguidance "
            "applies %ignore after the JSON part but not before or inside it, and gramask's "
            "ignored terminals apply everywhere", line=parts[0].line)
    terminals = list(grammar.terminals)
    rules = list(grammar.rules)
    opts = {p.placeholder: _options(p, grammar.source) for p in parts}  # (checks every part)
    _refuse_adjacent(rules, parts, {h for h, o in opts.items() if o[1]}, grammar.source)
    used = {t.name for t in terminals} | {r.lhs for r in rules}
    for part in parts:
        for t in terminals:
            if t.name != part.placeholder and part.marker in t.pattern.replace("\\", ""):
                raise GrammarError(
                    f"{grammar.source}: %json in terminal {t.name}: a JSON part is a rule "
                    "item, not part of a terminal", line=part.line, column=part.column,
                    name=t.name)
        jterms, jrules, jstart = _json_grammar(part, opts[part.placeholder], grammar.source,
                                               used)
        k = next((i for i, t in enumerate(terminals) if t.name == part.placeholder), -1)
        if k < 0:  # (in a rule nothing reaches)
            continue
        terminals[k:k + 1] = [type(terminals[k])(**t) for t in jterms]
        rules = [replace(r, rhs=tuple(jstart if s == part.placeholder else s for s in r.rhs))
                 for r in rules]
        rules += [type(rules[0])(lhs=lhs, rhs=rhs) for lhs, rhs in jrules]
    return replace(grammar, terminals=tuple(terminals), rules=tuple(rules))


def _refuse_adjacent(rules: list[Any], parts: list[JsonPart], flexible: set[str],
                     source: str) -> None:
    """Refuse a JSON part that can follow another with no lexeme between, either with
    whitespace: llguidance merges the two lexeme classes and takes whitespace between them
    (``%json{…} %json{…}`` reads ``1 2``), which no rule here spells out."""
    of = {p.placeholder: p for p in parts}
    flexible = {p.placeholder for p in parts if _options(p, source)[1]}
    nullable: set[str] = set()
    ends: dict[str, set[str]] = {p: {p} for p in of}  # the JSON parts a symbol can end with
    begins: dict[str, set[str]] = {p: {p} for p in of}
    grew = True
    while grew:
        grew = False
        for r in rules:
            if r.lhs not in nullable and all(x in nullable for x in r.rhs):
                nullable.add(r.lhs)
                grew = True
            for side, seq in ((ends, r.rhs[::-1]), (begins, r.rhs)):
                got = side.setdefault(r.lhs, set())
                for x in seq:
                    if not side.get(x, set()) <= got:
                        got |= side[x]
                        grew = True
                    if x not in nullable:
                        break
    for r in rules:
        for i, x in enumerate(r.rhs):
            for y in r.rhs[i + 1:]:
                pairs = [(a, b) for a in ends.get(x, ()) for b in begins.get(y, ())
                         if a in flexible or b in flexible]
                if pairs:
                    a, b = of[pairs[0][0]], of[pairs[0][1]]
                    raise GrammarError(
                        f"{source}: %json at line {b.line} can follow %json at line {a.line} "
                        "with nothing between: llguidance then takes whitespace between the "
                        "two JSON values, which gramask does not read (put a literal between "
                        "them, or use one %json with an array)", line=b.line, column=b.column)
                if y not in nullable:
                    break


def _json_grammar(part: JsonPart, options: tuple[Any, bool, bool, dict[str, str]], source: str,
                  used: set[str],
                  ) -> tuple[list[dict[str, Any]], list[tuple[str, tuple[str, ...]]], str]:
    """The JSON part's terminals (TerminalSpec fields), rules (renamed apart from ``used``,
    which grows) and start; ``options``: its :func:`_options`."""
    from .json_schema import JsonSchemaOptions, grammar_from_json_schema

    schema, flexible, lenient, separators = options
    try:
        g = grammar_from_json_schema(
            schema, JsonSchemaOptions(whitespace="compact", lenient=lenient))
    except GrammarError as e:
        raise GrammarError(f"{source}: %json at line {part.line}: {e}",
                           line=part.line, column=part.column) from None
    names: dict[str, str] = {}

    def fresh(name: str, upper: bool) -> str:
        if name not in names:
            base = f"JSON{part.placeholder[11:]}_{name.upper()}" if upper else \
                f"json{part.placeholder[11:]}__{name}"
            while base in used:
                base += "_"
            used.add(base)
            names[name] = base
        return names[name]

    terms = [{**t, "name": fresh(t["name"], True), "is_string": False} for t in g.terminals]
    for t in terms:  # the frontend's "," and ":" are the item and key separators
        sep = separators.get(t["pattern"]) if t["pattern"] in (",", ":") else None
        if sep is not None:
            t.update(pattern=sep, unicode_categories=True)  # (Rust's \s, \d are Unicode)
    rules = [(fresh(r.lhs, False), tuple(names.get(s) or fresh(s, False) for s in r.rhs))
             for r in g.rules]
    start = names[g.start]
    if flexible:
        ws, opt = fresh("WS", True), fresh("ws", False)
        pattern = separators.get("ws", _WS)
        terms.append({"name": ws, "pattern": pattern, "unicode_categories": pattern != _WS})
        rules = [(lhs, tuple(_between(rhs, opt))) for lhs, rhs in _without_empty(rules, source)]
        rules += [(opt, ()), (opt, (ws,))]
    return terms, rules, start


def _between(rhs: tuple[str, ...], opt: str) -> list[str]:
    out: list[str] = []
    for s in rhs:
        if out:
            out.append(opt)
        out.append(s)
    return out


def _without_empty(rules: list[tuple[str, tuple[str, ...]]], source: str
                   ) -> list[tuple[str, tuple[str, ...]]]:
    """The same language without its empty string and with no rule deriving it: optional
    whitespace then goes between two items, each some text, so between two tokens only."""
    nullable: set[str] = set()  # (compiler.parse_tables.nullable_symbols: an import cycle)
    grew = True
    while grew:
        grew = False
        for lhs, rhs in rules:
            if lhs not in nullable and all(s in nullable for s in rhs):
                nullable.add(lhs)
                grew = True
    out: dict[tuple[str, tuple[str, ...]], None] = {}
    for lhs, rhs in rules:
        slots = [i for i, s in enumerate(rhs) if s in nullable]
        if len(slots) > _MAX_NULLABLE:
            raise GrammarError(f"{source}: %json: rule {lhs} has {len(slots)} optional items, "
                               f"more than {_MAX_NULLABLE}", name=lhs)
        for keep in product((True, False), repeat=len(slots)):
            drop = {i for i, k in zip(slots, keep, strict=True) if not k}
            new = tuple(s for i, s in enumerate(rhs) if i not in drop)
            if new:
                out[(lhs, new)] = None
    # a nonterminal that derived the empty string only is gone: so are the rules using it
    heads = {lhs for lhs, _ in rules}
    kept = list(out)
    while True:
        defined = {lhs for lhs, _ in kept}
        left = [(lhs, rhs) for lhs, rhs in kept
                if all(s in defined or s not in heads for s in rhs)]
        if len(left) == len(kept):
            return kept
        kept = left


def _options(part: JsonPart, source: str) -> tuple[Any, bool, bool, dict[str, str]]:
    """The schema without ``x-guidance``; its whitespace_flexible and lenient; the regexes
    its item_separator, key_separator and whitespace_pattern put for ``,``, ``:`` and the
    whitespace (keys ``","``, ``":"``, ``"ws"``; where not the defaults)."""
    schema = part.schema
    if not isinstance(schema, dict) or "x-guidance" not in schema:
        return schema, True, False, {}
    schema = {k: v for k, v in schema.items() if k != "x-guidance"}
    opts = part.schema["x-guidance"]
    if not isinstance(opts, dict):
        opts = {"x-guidance": opts}
    separators: dict[str, str] = {}
    for key, value in opts.items():
        if key in ("whitespace_flexible", "lenient") and isinstance(value, bool):
            continue
        if key in ("item_separator", "key_separator", "whitespace_pattern") and isinstance(
                value, str):
            try:
                empty = re.fullmatch(value, "") is not None
            except re.error as e:
                raise GrammarError(f"{source}: %json at line {part.line}: x-guidance {key} "
                                   f"{value!r} is not a regex: {e}", line=part.line,
                                   column=part.column) from None
            if empty:
                raise GrammarError(f"{source}: %json at line {part.line}: x-guidance {key} "
                                   f"{value!r} matches the empty string", line=part.line,
                                   column=part.column)
            if value != _X_DEFAULTS[key]:
                separators[{"item_separator": ",", "key_separator": ":"}.get(key, "ws")] = value
            continue
        if key in _X_DEFAULTS and value == _X_DEFAULTS[key]:
            continue
        raise GrammarError(
            f"{source}: %json at line {part.line}: x-guidance option {key}={value!r} is not "
            "supported (read: whitespace_flexible, lenient, item_separator, key_separator, "
            "whitespace_pattern; "
            "the others at their defaults)",
            line=part.line, column=part.column)
    # (llguidance: a whitespace_pattern is the whitespace, flexible or not)
    flexible = "ws" in separators or bool(opts.get("whitespace_flexible", True))
    return schema, flexible, bool(opts.get("lenient", False)), separators
