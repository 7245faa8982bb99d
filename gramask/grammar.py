"""The grammar frontend: Lark text → a plain, serialisable description (terminals + rules).

Lark's own loader does the parsing (EBNF expansion, ``%import``, ``%ignore``, ``%declare``);
we keep only what the compiler and runtime need, as plain data, so that an artifact can carry
the grammar without pickling lark objects and the runtime never imports lark.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .errors import GrammarError, InvalidRegexError

__all__ = ["LEXER_MODES", "Grammar", "IndentationSpec", "RuleSpec", "TerminalSpec"]

LEXER_MODES = ("contextual", "basic")


@dataclass(frozen=True)
class TerminalSpec:
    """One lexer terminal. ``pattern`` is a Python regex (flags folded in as an inline group)."""

    name: str
    pattern: str
    is_string: bool = False
    priority: int = 0
    ignored: bool = False


@dataclass(frozen=True)
class RuleSpec:
    """One BNF production ``lhs → rhs`` (EBNF already expanded by lark)."""

    lhs: str
    rhs: tuple[str, ...]


@dataclass(frozen=True)
class IndentationSpec:
    """Python-style indentation, as ``lark.indenter.PythonIndenter`` does it.

    The runtime drops ``newline`` inside brackets and turns leading whitespace after it
    into ``indent``/``dedent`` terminals; at end of input it closes the last line and all blocks.
    """

    newline: str = "_NEWLINE"
    indent: str = "_INDENT"
    dedent: str = "_DEDENT"
    open_brackets: tuple[str, ...] = ("LPAR", "LSQB", "LBRACE")
    close_brackets: tuple[str, ...] = ("RPAR", "RSQB", "RBRACE")
    tab_len: int = 8
    # an ignored terminal that joins lines: input may not end inside or right after it
    continuation: str = "LINE_CONT"


@dataclass(frozen=True)
class Grammar:
    """A context-free grammar over lexer terminals, ready for :func:`gramask.compile`."""

    terminals: tuple[TerminalSpec, ...]
    rules: tuple[RuleSpec, ...]
    start: str
    declared: tuple[str, ...] = ()
    indentation: IndentationSpec | None = None
    source: str = field(default="", compare=False)
    # "contextual": only terminals the parser can take compete at a lexeme start (lark's and
    # llguidance's reading); "basic": all terminals compete, keywords reserved (C, Python).
    # from_lark defaults to "contextual"; a Grammar built field by field keeps the old "basic"
    lexer: str = "basic"

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_lark(
        cls,
        text: str,
        start: str = "start",
        *,
        import_paths: Sequence[str] = (),
        indentation: IndentationSpec | bool | None = None,
        source: str = "<string>",
        lexer: str = "contextual",
    ) -> Grammar:
        """Load Lark grammar text.

        ``lexer``: ``"contextual"`` (default; what grammars written for lark or llguidance
        mean) or ``"basic"`` (one longest-match lexer over all terminals, keywords reserved);
        see docs/semantics.md.

        ``indentation``: ``None`` detects Python-style indentation (``%declare _INDENT _DEDENT``
        with a ``_NEWLINE`` terminal); ``False`` disables it; an :class:`IndentationSpec` sets it.

        Raises
        ------
        GrammarError
            The text is not a valid Lark grammar; the message names the rule or terminal and the
            line when lark reports them.
        """
        if not isinstance(text, str):
            hint = " (decode it first: text.decode('utf-8'))" if isinstance(
                text, (bytes, bytearray)) else ""
            raise TypeError(f"grammar text must be a str, not {type(text).__name__}{hint}")
        if not isinstance(start, str):
            raise TypeError(f"start must be a rule name (str), not {type(start).__name__}")
        if isinstance(import_paths, (str, bytes)) or not all(
            isinstance(p, (str, os.PathLike)) or callable(p) for p in import_paths
        ):
            raise TypeError(
                "import_paths must be a sequence of directories (str or path) or lark loaders"
            )
        import_paths = [os.fspath(p) if isinstance(p, os.PathLike) else p for p in import_paths]
        if lexer not in LEXER_MODES:
            raise GrammarError(
                f"{source}: lexer must be one of {', '.join(LEXER_MODES)}, not {lexer!r}"
            )
        try:
            import lark
            from lark.exceptions import GrammarError as LarkGrammarError
            from lark.exceptions import LexError, UnexpectedInput
        except ImportError as e:  # pragma: no cover - lark is a core dependency
            raise ImportError("gramask needs lark to load grammars: pip install lark") from e
        try:
            parser = lark.Lark(
                text,
                start=start,
                parser="earley",
                lexer="basic",
                import_paths=list(import_paths),
                keep_all_tokens=True,
            )
        except UnexpectedInput as e:
            raise GrammarError(
                f"{source}: invalid Lark grammar syntax",
                line=getattr(e, "line", None),
                column=getattr(e, "column", None),
                context=e.get_context(text) if hasattr(e, "get_context") else None,
            ) from None
        except (LarkGrammarError, KeyError) as e:
            msg = str(e).strip("'\"")
            undefined = re.fullmatch(r"Using an undefined rule: NonTerminal\('(\w+)'\)", msg)
            if undefined and undefined.group(1) == start:  # lark names its internal class
                rules = sorted(set(re.findall(r"^[ \t]*[?!]?([a-z_][a-z_0-9]*)[ \t]*(?:\.-?\d+)?"
                                              r"[ \t]*:", text, re.M)))
                raise GrammarError(
                    f"{source}: the start rule {start!r} is not defined (start= / --start); "
                    f"the grammar's rules: {', '.join(rules[:20]) or 'none'}"
                    + (", ..." if len(rules) > 20 else ""), name=start) from None
            if undefined:
                msg = f"rule {undefined.group(1)!r} is used but not defined"
            line = _guess_line(text, msg)
            raise GrammarError(f"{source}: {msg}", line=line) from None
        except LexError as e:
            raise _lex_error(text, source, str(e)) from None
        except re.error as e:
            raise GrammarError(f"{source}: a terminal's regex does not compile: {e}") from None
        except OSError as e:  # lark opens imported grammars itself
            raise _import_error(text, source, import_paths, e) from None
        except RecursionError:  # lark's loader recurses once per nesting level
            raise GrammarError(
                f"{source}: the grammar is nested too deeply for lark's loader (more than a "
                "few hundred levels of parentheses, brackets or repeats in one rule or "
                "terminal); split it into named rules"
            ) from None

        ignore = set(parser.ignore_tokens)
        terminals = []
        for t in parser.terminals:
            pat = t.pattern
            is_string = pat.type == "str"
            regex = re.escape(pat.value) if is_string else pat.value
            regex = _REGULAR_EQUIVALENTS.get(regex, regex)
            flags = "".join(sorted(f for f in pat.flags if f in "ismx"))
            if flags:
                regex = f"(?{flags}:{regex})"
            terminals.append(
                TerminalSpec(
                    name=t.name,
                    pattern=regex,
                    is_string=is_string,
                    priority=int(t.priority),
                    ignored=t.name in ignore,
                )
            )
        _check_terminals(terminals, text, source)
        known = {t.name for t in terminals}
        rules = []
        declared: set[str] = set()
        for r in parser.rules:
            rhs = []
            for s in r.expansion:
                rhs.append(s.name)
                if s.is_term and s.name not in known:
                    declared.add(s.name)
            rules.append(RuleSpec(lhs=r.origin.name, rhs=tuple(rhs)))
        if not any(r.lhs == start for r in rules):
            raise GrammarError(f"{source}: start rule {start!r} is not defined", name=start)
        from .compiler.analysis import prune

        rules = list(prune(rules, known | declared, start, source=source))

        spec: IndentationSpec | None
        if indentation is None:
            auto = IndentationSpec()
            spec = (
                auto
                if {auto.indent, auto.dedent} <= declared and auto.newline in known
                else None
            )
        elif indentation is True:
            spec = IndentationSpec()
        elif indentation is False:
            spec = None
        else:
            spec = indentation
        if spec is not None:
            missing = [n for n in (spec.newline,) if n not in known]
            if missing:
                raise GrammarError(
                    f"{source}: indentation needs terminal {missing[0]!r}", name=missing[0]
                )
        return cls(
            terminals=tuple(terminals),
            rules=tuple(rules),
            start=start,
            declared=tuple(sorted(declared)),
            indentation=spec,
            source=source,
            lexer=lexer,
        )

    # ------------------------------------------------------------------ identity
    def to_json(self) -> dict[str, Any]:
        return {
            "terminals": [asdict(t) for t in self.terminals],
            "rules": [[r.lhs, list(r.rhs)] for r in self.rules],
            "start": self.start,
            "declared": list(self.declared),
            "indentation": None if self.indentation is None else asdict(self.indentation),
            "source": self.source,
            "lexer": self.lexer,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Grammar:
        ind = obj.get("indentation")
        return cls(
            terminals=tuple(TerminalSpec(**t) for t in obj["terminals"]),
            rules=tuple(RuleSpec(lhs=a, rhs=tuple(b)) for a, b in obj["rules"]),
            start=obj["start"],
            declared=tuple(obj.get("declared", ())),
            indentation=None if ind is None else _indentation_from_json(ind),
            source=obj.get("source", ""),
            lexer=obj.get("lexer", "basic"),
        )

    def fingerprint(self) -> str:
        """Content hash of everything that changes the compiled result (imports resolved)."""
        body = self.to_json()
        body.pop("source", None)
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    @property
    def terminal_names(self) -> list[str]:
        return [t.name for t in self.terminals]

    def terminal_index(self, name: str) -> int:
        """Index of terminal ``name`` in ``terminals``, or -1 if there is none."""
        for i, t in enumerate(self.terminals):
            if t.name == name:
                return i
        return -1

    @property
    def newline_terminal(self) -> int:
        """Index of the indentation newline terminal, or -1 without indentation."""
        return -1 if self.indentation is None else self.terminal_index(self.indentation.newline)


def _indentation_from_json(obj: dict[str, Any]) -> IndentationSpec:
    kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in obj.items()}
    return IndentationSpec(**kwargs)


# lark's common.lark writes these with lookbehinds; the same languages as plain regexes.
_REGULAR_EQUIVALENTS = {
    # common.ESCAPED_STRING: a double-quoted one-line string with backslash escapes
    '".*?(?<!\\\\)(\\\\\\\\)*?"': r'"(?:[^"\\\n]|\\[^\n])*"',
}


_IMPORT = re.compile(r"^[ \t]*%import[ \t]+([\w.]+)[ \t]*(\()?", re.MULTILINE)
_LARK_MODULES = {"common", "lark", "python", "unicode"}


def _import_error(
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


def _lex_error(text: str, source: str, message: str) -> GrammarError:
    """Lark's ``LexError`` about one terminal, as a GrammarError naming it and its line."""
    m = re.search(r"zero-width terminals\. \((\w+): (.*)\)$", message)
    if m:
        name = m.group(1)
        return GrammarError(
            f"{source}: terminal {name} matches the empty string ({m.group(2)}); a terminal "
            f"must consume at least one character",
            line=_guess_line(text, name), name=name,
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
            line=_guess_line(text, name), name=name,
        )
    return GrammarError(f"{source}: {message}", line=_guess_line(text, message))


def _check_terminals(terminals: Sequence[TerminalSpec], text: str, source: str) -> None:
    """Bad terminals fail at load, naming the terminal and its line: an invalid regex, one
    with no finite automaton (lookaround, backreference), or one that matches the empty
    string (a lexer would loop on it)."""
    from .compiler.regex_bytes import _check_features

    for t in terminals:
        line = _guess_line(text, t.name)
        try:
            _check_features(t.name, t.pattern)
        except GrammarError as e:
            raise type(e)(f"{source}: {e}", line=line, name=t.name) from None
        if re.fullmatch(t.pattern, ""):
            raise GrammarError(
                f"{source}: terminal {t.name} matches the empty string (/{t.pattern}/); "
                "make it match at least one character and repeat it in a rule instead",
                line=line, name=t.name,
            )


def _guess_line(text: str, message: str) -> int | None:
    """Lark's grammar errors often name a rule/terminal but not the line: find its definition."""
    for cand in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", message):
        pat = re.compile(rf"^[ \t]*[?!]?{re.escape(cand)}\b", re.M)
        hit = pat.search(text)
        if hit and cand.lower() not in {"rule", "terminal", "using", "an", "the"}:
            return text.count("\n", 0, hit.start()) + 1
    return None
