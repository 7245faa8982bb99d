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
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .compiler.regex_features import has_category, parse_regex
from .errors import GrammarError
from .frontends.lark_equivalents import regular_equivalent
from .lark_errors import (
    guess_line,
    import_error,
    lex_error,
    load_error,
    undefined_start,
    visit_error,
)

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
    # a JSON string terminal built from the decoded language this spec names (see
    # gramask.frontends.json_strings; or the numbers that are multiples of a divisor,
    # json_numbers); ``pattern`` is then a regex for reading only (a superset)
    automaton: str = ""
    # read leftmost-first, as Python's ``re`` (lark's lexers) matches it, a lexeme ends where
    # ``re.match`` ends: a Lark terminal with a lazy repeat (``/\\/\\*(.|\\n)*?\\*\\//`` at the
    # first ``*/``) or one whose ``re`` match can end before its longest (``/(?:a|ab)c?/``
    # ends ``abc`` after ``a``; compiler/regex_ordered.py, regex_reading.py)
    first_match: bool = False
    # \d, \w, \s read as Python's ``re`` reads them (Unicode; ASCII under the a flag), not
    # as gramask's ASCII subset (set by ``from_regex``, and by ``from_lark`` on request)
    unicode_categories: bool = False


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
    # both ends of the input as CPython's tokenizer reads them: the input starts as after a
    # newline (an indented first line is an error) and its end closes the last line with a
    # newline of width 0. False: as lark's ``Indenter``, which reads a first line's blanks as
    # any other blanks and adds no newline at the end (a text must end its last line; a
    # newline lexeme still open at the end keeps the width of its last line)
    cpython_ends: bool = True


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
    reserved_keywords: bool = False  # in the contextual mode too (gramask.compiler.keywords)
    # contextual mode: where the parser takes both a string terminal and a regex that matches
    # its text, the string wins (lark's contextual lexer); reserved_keywords goes further
    keywords_win: bool = False
    # lark's terminal order (gramask.frontends.lark_order; (): longest match), both modes
    lark_order: tuple[tuple[str, ...], ...] = ()

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
        reserved_keywords: bool = False,
        keywords_win: bool = True,
        unicode_categories: bool = False,
    ) -> Grammar:
        """Load Lark grammar text.

        ``lexer``: ``"contextual"`` (default: the terminals the parser can take compete) or
        ``"basic"`` (all terminals, keywords reserved); both in lark's terminal order, the
        first that matches winning (``lark_order``; docs/semantics.md).

        ``reserved_keywords``: the contextual mode reserves keywords as the basic mode does
        (CPython, C; lark does not, so off by default): :mod:`gramask.compiler.keywords`.

        ``keywords_win``: in the contextual mode, where the parser takes both a keyword (a
        string terminal) and a regex that matches its text, the keyword wins, as in lark's
        contextual lexer (``if (a) = c;`` is no call of ``if``); ``False`` keeps every match
        (llguidance's reading: the parser continues with whichever fits).

        ``unicode_categories``: read ``\\d``, ``\\w``, ``\\s`` in terminals as lark (Python's
        ``re``) does, as Unicode classes; off, they add ASCII characters only (fewer lexer
        states: Unicode ``\\w`` alone is ~300), see docs/semantics.md.

        ``indentation``: ``None`` detects Python-style indentation (``%declare _INDENT _DEDENT``
        with a ``_NEWLINE`` or ``_NL`` terminal) read as lark's ``Indenter`` reads it (the text
        must end its last line: ``IndentationSpec(cpython_ends=False)``); ``True`` is CPython's
        reading (the end of input closes the last line); ``False`` disables it; an
        :class:`IndentationSpec` sets it.

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
            from lark.exceptions import GrammarError as LarkGrammarError
            from lark.exceptions import LexError, UnexpectedInput, VisitError
        except ImportError as e:  # pragma: no cover - lark is a core dependency
            raise ImportError("gramask needs lark to load grammars: pip install lark") from e
        from .frontends.lark_dialect import rewrite_dialect
        from .frontends.lark_json import cut_json, splice_json
        from .frontends.lark_literals import refuse_long_literals

        lark_text, json_parts = cut_json(text)  # %json {schema}: spliced in at the end
        lark_text = rewrite_dialect(lark_text)
        refuse_long_literals(lark_text, start, list(import_paths), source, _load_lark)
        try:
            lark_terminals, lark_rules, ignore_tokens = _load_lark(
                lark_text, start, list(import_paths)
            )
        except VisitError as e:
            raise visit_error(text, source, e) from None
        except UnexpectedInput as e:
            raise GrammarError(
                f"{source}: invalid Lark grammar syntax",
                line=getattr(e, "line", None),
                column=getattr(e, "column", None),
                context=e.get_context(lark_text) if hasattr(e, "get_context") else None,
            ) from None
        except (LarkGrammarError, KeyError) as e:
            raise load_error(text, source, start, str(e).strip("'\"")) from None
        except LexError as e:
            raise lex_error(text, source, str(e)) from None
        except re.error as e:
            raise GrammarError(f"{source}: a terminal's regex does not compile: {e}") from None
        except OSError as e:  # lark opens imported grammars itself
            raise import_error(text, source, import_paths, e) from None
        except RecursionError:  # lark's loader recurses once per nesting level
            raise GrammarError(
                f"{source}: the grammar is nested too deeply for lark's loader (more than a "
                "few hundred levels of parentheses, brackets or repeats in one rule or "
                "terminal); split it into named rules"
            ) from None

        ignore = set(ignore_tokens)
        terminals = []
        parsed_of: list[Any] = []  # per terminal, its parsed regex (None: a string)
        for t in lark_terminals:
            pat = t.pattern
            is_string = pat.type == "str"
            regex = re.escape(pat.value) if is_string else pat.value
            flags = "".join(sorted(f for f in pat.flags if f in "ismx"))
            regex = regex if is_string else regular_equivalent(regex, flags)
            if flags:
                regex = f"(?{flags}:{regex})"
            parsed = None if is_string else parse_regex(regex)  # (a string has neither)
            terminals.append(
                TerminalSpec(
                    name=t.name,
                    pattern=regex,
                    is_string=is_string,
                    priority=int(t.priority),
                    ignored=t.name in ignore,
                    unicode_categories=unicode_categories and has_category(parsed),
                )
            )
            parsed_of.append(parsed)
        _check_terminals(terminals, text, source)
        # read as re matches (lark's lexers), where that can end before the longest match
        from .compiler.regex_reading import reads_first_match

        terminals = [replace(t, first_match=reads_first_match(
            t.name, t.pattern, t.unicode_categories, parsed=parsed))
            if not t.is_string else t for t, parsed in zip(terminals, parsed_of, strict=True)]
        from .frontends.lark_ignored import swallowed_strings
        from .frontends.lark_order import lark_terminal_order

        swallowed = swallowed_strings(lark_terminals, ignore, source)
        terminals = [t for t in terminals if t.name not in swallowed]
        known = {t.name for t in terminals}
        rules = []
        declared: set[str] = set()
        for r in lark_rules:
            rhs = []
            for s in r.expansion:
                rhs.append(s.name)
                if s.is_term and s.name not in known and s.name not in swallowed:
                    declared.add(s.name)
            rules.append(RuleSpec(lhs=r.origin.name, rhs=tuple(rhs)))
        if not any(r.lhs == start for r in rules):
            raise undefined_start(text, source, start)

        spec: IndentationSpec | None
        if indentation is None:
            spec = _detect_indentation(declared, known, cpython_ends=False)
        elif indentation is True:
            spec = _detect_indentation(declared, known, cpython_ends=True) or IndentationSpec()
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
        # a %declare'd terminal exists only if the runtime produces it (the indenter's): any
        # other one never occurs, so rules needing it are non-productive like any other
        produced = {spec.indent, spec.dedent} & declared if spec is not None else set()
        from .compiler.analysis import prune

        rules = list(prune(rules, known | produced, start, source=source,
                           unproduced=sorted(declared - produced)))
        declared = produced

        grammar = cls(
            terminals=tuple(terminals),
            rules=tuple(rules),
            start=start,
            declared=tuple(sorted(declared)),
            indentation=spec,
            source=source,
            lexer=lexer,
            reserved_keywords=bool(reserved_keywords),
            keywords_win=bool(keywords_win),
            lark_order=lark_terminal_order(lark_terminals, known),
        )
        return splice_json(grammar, json_parts) if json_parts else grammar

    @classmethod
    def from_gbnf(cls, text: str, *, start: str = "root", source: str = "<gbnf>",
                  progress: bool | None = None) -> Grammar:
        """Load llama.cpp GBNF / XGrammar EBNF text: the same character-level language,
        with lexer terminals chosen so that the contextual lexer is exact
        (:mod:`gramask.frontends.gbnf`; docs/dialects.md). ``progress``: a bar while the
        terminals are checked, when that takes more than a second (None: on a terminal only).

        Raises
        ------
        GrammarError
            A syntax error, token syntax (``<[id]>``, ``<token>``), an undefined or duplicate
            rule, no ``start`` rule; the message names the rule and the line.
        """
        from .frontends.gbnf import from_gbnf

        return cls._from_parts(from_gbnf(text, start=start, source=source, progress=progress))

    @classmethod
    def from_json_schema(
        cls,
        schema: Any,
        *,
        whitespace: str = "flexible",
        additional_properties: bool = True,
        lenient: bool = False,
    ) -> Grammar:
        """The JSON texts valid under a JSON Schema (a dict, a bool, or JSON text).

        ``whitespace``: ``"flexible"`` (any JSON whitespace between tokens) or ``"compact"``
        (none). ``additional_properties``: what objects without ``additionalProperties``
        allow (``True``, the standard). ``lenient``: ignore keywords gramask cannot enforce,
        with a warning, instead of refusing. Properties are taken in schema order. See
        :mod:`gramask.frontends.json_schema` for what is enforced.

        Raises
        ------
        GrammarError
            An unsupported keyword (named, with its JSON pointer), an invalid schema, or a
            schema no value satisfies.
        """
        from .frontends.json_schema import JsonSchemaOptions, grammar_from_json_schema

        return cls._from_parts(grammar_from_json_schema(schema, JsonSchemaOptions(
            whitespace=whitespace, additional_properties=additional_properties, lenient=lenient
        )))

    @classmethod
    def from_regex(cls, pattern: str) -> Grammar:
        """The strings ``pattern`` (Python ``re`` syntax) matches as a whole."""
        from .frontends.regex import grammar_from_regex

        return cls._from_parts(grammar_from_regex(pattern))

    @classmethod
    def from_choices(cls, choices: Sequence[str]) -> Grammar:
        """Exactly one of the strings ``choices``."""
        from .frontends.regex import grammar_from_choices

        return cls._from_parts(grammar_from_choices(choices))

    @classmethod
    def json_value(cls, *, object_only: bool = False, whitespace: str = "flexible") -> Grammar:
        """Any JSON value, or any JSON object (vLLM's ``json_object`` requests)."""
        from .frontends.json_schema import json_value_grammar

        return cls._from_parts(json_value_grammar(object_only=object_only, whitespace=whitespace))

    @classmethod
    def _from_parts(cls, parts: Any) -> Grammar:
        """A generated grammar (``gramask.frontends.bnf.GrammarParts``) as a Grammar."""
        return cls(
            terminals=tuple(TerminalSpec(**t) for t in parts.terminals),
            rules=tuple(RuleSpec(lhs=r.lhs, rhs=tuple(r.rhs)) for r in parts.rules),
            start=parts.start, source=parts.source, lexer=parts.lexer,
        )

    # ------------------------------------------------------------------ identity
    def to_json(self) -> dict[str, Any]:
        return {
            "terminals": [_terminal_json(t) for t in self.terminals],
            "rules": [[r.lhs, list(r.rhs)] for r in self.rules],
            "start": self.start,
            "declared": list(self.declared),
            "indentation": None if self.indentation is None else _indentation_json(
                self.indentation),
            "source": self.source,
            "lexer": self.lexer,
            **({"reserved_keywords": True} if self.reserved_keywords else {}),  # unset: fingerprint kept
            **({"keywords_win": True} if self.keywords_win else {}),
            **({"lark_order": [list(e) for e in self.lark_order]} if self.lark_order else {}),
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
            reserved_keywords=bool(obj.get("reserved_keywords", False)),
            keywords_win=bool(obj.get("keywords_win", False)),
            lark_order=tuple(tuple(e) for e in obj.get("lark_order", ())),
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


def _load_lark(text: str, start: str, import_paths: list[str]) -> tuple[Any, Any, Any]:
    """Lark's own loader (EBNF → BNF, imports, terminal validation) without building a
    parser: constructing lark's Earley parser costs time quadratic-ish in the grammar's size
    (94% of loading a 2,000-rule chain) and gramask builds its own. What ``lark.Lark`` does
    up to its parser, with the same options (keep_all_tokens, no unused terminals)."""
    from lark import lexer as lark_lexer
    from lark import load_grammar as lark_load
    from lark.exceptions import GrammarError as LarkGrammarError
    from lark.exceptions import LexError

    if not hasattr(lark_load._get_parser, "cache"):
        # lark's parser of grammar text, built once per process, first checks its own fixed
        # terminals for collisions with interegular: 0.2 s of every first load, for nothing
        checks, lark_lexer.has_interegular = lark_lexer.has_interegular, False
        try:
            lark_load._get_parser()  # type: ignore[no-untyped-call]
        finally:
            lark_lexer.has_interegular = checks
    try:
        grammar, _ = lark_load.load_grammar(text, "<string>", import_paths, True)  # type: ignore[no-untyped-call]
        terminals, rules, ignore = grammar.compile([start], set())
    except LarkGrammarError as e:
        if not str(e).startswith("Rules defined twice"):
            raise
        # keep_all_tokens makes ``[x]`` and ``x?`` over a filtered token (``r: T ["ab"] |
        # T "c"?``) two rules ``r: T``, which lark refuses as trees it could not tell apart;
        # lark's default options (which ``lark.Lark`` builds such a grammar with) keep one
        grammar, _ = lark_load.load_grammar(text, "<string>", import_paths, False)  # type: ignore[no-untyped-call]
        terminals, rules, ignore = grammar.compile([start], set())
    # the checks lark's BasicLexer makes, less its terminal-collision search (interegular lists
    # every character of a class: minutes for a Unicode identifier class)
    for t in terminals:
        regexp = t.pattern.to_regexp()
        try:
            re.compile(regexp)
        except re.error:
            raise LexError(f"Cannot compile token {t.name}: {t.pattern}") from None
        if t.pattern.min_width == 0:
            raise LexError(
                f"Lexer does not allow zero-width terminals. ({t.name}: {t.pattern})")
    return terminals, rules, ignore


def _terminal_json(t: TerminalSpec) -> dict[str, Any]:
    out = asdict(t)
    if not t.automaton:  # plain regex terminals keep the fingerprint they always had
        del out["automaton"]
    if not t.first_match:
        del out["first_match"]
    if not t.unicode_categories:
        del out["unicode_categories"]
    return out


# the newline terminal lark's indenters are written with: PythonIndenter's, then the
# TreeIndenter of lark's indented-tree example (``_NL``)
_NEWLINE_NAMES = ("_NEWLINE", "_NL")


def _detect_indentation(declared: set[str], known: set[str], cpython_ends: bool
                        ) -> IndentationSpec | None:
    """Indentation when the grammar declares ``_INDENT``/``_DEDENT`` and has a newline terminal
    (``cpython_ends`` off: lark's indenter, where the text ends its last line itself)."""
    auto = IndentationSpec(cpython_ends=cpython_ends)
    if not {auto.indent, auto.dedent} <= declared:
        return None
    for name in _NEWLINE_NAMES:
        if name in known:
            return auto if name == auto.newline else replace(auto, newline=name)
    return None


def _indentation_json(spec: IndentationSpec) -> dict[str, Any]:
    out = asdict(spec)
    if out["cpython_ends"]:
        del out["cpython_ends"]  # the default: fingerprints of earlier grammars are kept
    return out


def _indentation_from_json(obj: dict[str, Any]) -> IndentationSpec:
    kwargs: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in obj.items()}
    return IndentationSpec(**kwargs)


def _check_terminals(terminals: Sequence[TerminalSpec], text: str, source: str) -> None:
    """Bad terminals fail at load, naming the terminal and its line: an invalid regex, one
    with no finite automaton (lookaround, backreference), or one that matches the empty
    string (a lexer would loop on it)."""
    from .compiler.regex_features import check_features

    for t in terminals:  # the line is looked up on error only: a search of the whole text
        try:
            check_features(t.name, t.pattern)
        except GrammarError as e:
            raise type(e)(f"{source}: {e}", line=guess_line(text, t.name),
                          name=t.name) from None
        if re.fullmatch(t.pattern, ""):
            raise GrammarError(
                f"{source}: terminal {t.name} matches the empty string (/{t.pattern}/); "
                "make it match at least one character and repeat it in a rule instead",
                line=guess_line(text, t.name), name=t.name,
            )
