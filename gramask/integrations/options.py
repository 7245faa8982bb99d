"""What a serving request asks gramask for, the same in every engine integration.

A request names a grammar and, optionally, the text around the cursor and a token budget::

    {"grammar": "python", "prefix": "def f(x):\\n    return ", "suffix": "\\n", "max_tokens": 64}

``grammar`` is one of

- a bundled grammar name (``"python"``, ``"json"``, ...);
- a path to a compiled artifact (``*.gmask``, e.g. from ``gramask compile``: no compile at
  request time), a ``.lark`` file, a ``.gbnf`` file or a JSON Schema ``.json`` file;
- Lark text (anything with a ``:`` that is not a path or a name);
- a one-kind dict: ``{"lark": text, "start": ..., "lexer": ...}``, ``{"bundled": name}``,
  ``{"artifact": path}``, ``{"json_schema": schema}``, ``{"gbnf": text}``, ``{"regex": text}``,
  ``{"choices": [...]}``.

Kinds are looked up in :data:`GRAMMAR_KINDS`; a new front end plugs in with
:func:`register_grammar_kind`. JSON Schema, GBNF, regex and choices use ``Grammar.from_...``
when this gramask has them, and say so when it does not.

:class:`GrammarResolver` turns specs into :class:`~gramask.CompiledGrammar` objects against one
vocabulary (the model's), compiling each distinct grammar once (and through the on-disk cache).
This module imports neither torch nor an engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import GramaskError

if TYPE_CHECKING:
    from ..compiled import CompiledGrammar
    from ..grammar import Grammar
    from ..runtime.constraint import Constraint
    from ..vocab import Vocabulary

__all__ = [
    "GRAMMAR_KINDS",
    "OPTION_KEYS",
    "GrammarResolver",
    "RequestOptions",
    "RequestOptionsError",
    "grammar_from_spec",
    "is_per_request",
    "parse_options",
    "register_grammar_kind",
]


class RequestOptionsError(GramaskError, ValueError):
    """A request's gramask options are malformed: names the option and what was expected."""


OPTION_KEYS = ("grammar", "prefix", "suffix", "max_tokens")


@dataclass(frozen=True)
class RequestOptions:
    """One request's options, checked. ``grammar`` is a spec as described in the module doc;
    ``key`` identifies the grammar (equal specs, equal keys) for caches."""

    grammar: str | Mapping[str, Any]
    prefix: str = ""
    suffix: str | None = None
    max_tokens: int | None = None
    key: str = field(default="", compare=False)

    def constraint_key(self) -> tuple[str, str, str | None, int | None]:
        """Requests with equal keys get equal constraints (a server clones instead of
        repeating the setup)."""
        return (self.key, self.prefix, self.suffix, self.max_tokens)


def _text(raw: Mapping[str, Any], name: str, *, optional: bool) -> str | None:
    v = raw.get(name)
    if v is None and optional:
        return None
    if isinstance(v, bytes):
        try:
            return v.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RequestOptionsError(
                f"gramask option {name!r}: expected UTF-8 text, got bytes invalid at byte {e.start}"
            ) from None
    if not isinstance(v, str):
        raise RequestOptionsError(
            f"gramask option {name!r}: expected a string, got {type(v).__name__}"
        )
    return v


def parse_options(raw: Any) -> RequestOptions:
    """Check a request's raw gramask options: a mapping with the keys in :data:`OPTION_KEYS`,
    or its JSON text (HTTP APIs such as vLLM's ``vllm_xargs`` take only flat values).

    Raises
    ------
    RequestOptionsError
        Not a mapping, an unknown key, a missing or mistyped value (the message names it).
    """
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            raw = json.loads(raw)
        except ValueError as e:
            raise RequestOptionsError(f"gramask options: not valid JSON ({e})") from None
    if not isinstance(raw, Mapping):
        raise RequestOptionsError(
            f"gramask options: expected a dict with keys {', '.join(OPTION_KEYS)}, got "
            f"{type(raw).__name__}"
        )
    unknown = sorted(str(k) for k in raw if k not in OPTION_KEYS)
    if unknown:
        raise RequestOptionsError(
            f"gramask options: unknown key(s) {', '.join(map(repr, unknown))}; known: "
            f"{', '.join(OPTION_KEYS)}"
        )
    if "grammar" not in raw:
        raise RequestOptionsError("gramask options: 'grammar' is required")
    spec = raw["grammar"]
    if not isinstance(spec, (str, Mapping)) or (isinstance(spec, str) and not spec.strip()):
        raise RequestOptionsError(
            "gramask option 'grammar': expected a bundled name, a path, Lark text or a "
            f"one-kind dict, got {spec!r:.60}"
        )
    budget = raw.get("max_tokens")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 0):
        raise RequestOptionsError(
            f"gramask option 'max_tokens': expected an int >= 0 or None, got {budget!r}"
        )
    prefix = _text(raw, "prefix", optional=True) or ""
    suffix = _text(raw, "suffix", optional=True)
    kind, value, extra = _classify(spec)
    return RequestOptions(spec, prefix, suffix, budget, key=_key(kind, value, extra))


# ------------------------------------------------------------------------------ grammar kinds
GrammarLoader = Callable[[Any, Mapping[str, Any]], "Grammar"]

#: kind name -> loader(value, extra keys of the spec dict) returning a Grammar. The kind
#: "artifact" is not here: it loads a CompiledGrammar, not a Grammar.
GRAMMAR_KINDS: dict[str, GrammarLoader] = {}

_EXTRA_KEYS = ("start", "lexer")


def register_grammar_kind(name: str, loader: GrammarLoader) -> None:
    """Make ``{"name": value, ...}`` a grammar spec: ``loader(value, extra)`` builds it.

    ``extra`` holds the spec dict's ``start`` and ``lexer`` keys, if given.
    """
    if not name or name == "artifact" or name in _EXTRA_KEYS:
        raise ValueError(f"register_grammar_kind: {name!r} is reserved")
    GRAMMAR_KINDS[name] = loader


def _grammar_method(method: str, what: str) -> Callable[..., Grammar]:
    from ..grammar import Grammar

    fn = getattr(Grammar, method, None)
    if fn is None:
        raise RequestOptionsError(
            f"gramask option 'grammar': {what} grammars need Grammar.{method}, which this "
            "gramask version does not have yet"
        )
    return fn  # type: ignore[no-any-return]


def _lark(value: Any, extra: Mapping[str, Any]) -> Grammar:
    from ..grammar import Grammar

    if not isinstance(value, str):
        raise RequestOptionsError(
            f"gramask option 'grammar': 'lark' expects Lark text, got {type(value).__name__}"
        )
    return Grammar.from_lark(value, start=extra.get("start") or "start",
                             lexer=extra.get("lexer") or "contextual")


def _bundled(value: Any, extra: Mapping[str, Any]) -> Grammar:
    from .. import grammars

    return grammars.load(str(value), extra.get("start"), extra.get("lexer"))


def _json_schema(value: Any, extra: Mapping[str, Any]) -> Grammar:
    return _grammar_method("from_json_schema", "JSON Schema")(value)


def _gbnf(value: Any, extra: Mapping[str, Any]) -> Grammar:
    return _grammar_method("from_gbnf", "GBNF")(value)


def _regex(value: Any, extra: Mapping[str, Any]) -> Grammar:
    return _grammar_method("from_regex", "regex")(value)


def _choices(value: Any, extra: Mapping[str, Any]) -> Grammar:
    return _grammar_method("from_choices", "choices")(value)


for _name, _loader in (("lark", _lark), ("bundled", _bundled), ("json_schema", _json_schema),
                       ("gbnf", _gbnf), ("regex", _regex), ("choices", _choices)):
    register_grammar_kind(_name, _loader)


def _classify(spec: str | Mapping[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """(kind, value, extra) of a spec; strings are resolved to a kind here."""
    if isinstance(spec, Mapping):
        extra = {k: spec[k] for k in _EXTRA_KEYS if k in spec}
        for k, v in extra.items():
            if not isinstance(v, str):
                raise RequestOptionsError(
                    f"gramask option 'grammar': {k!r} expects a string, got {type(v).__name__}"
                )
        kinds = [k for k in spec if k not in _EXTRA_KEYS]
        known = ["artifact", *GRAMMAR_KINDS]
        if len(kinds) != 1 or kinds[0] not in known:
            raise RequestOptionsError(
                f"gramask option 'grammar': expected a dict with one of the keys "
                f"{', '.join(known)} (plus optional start, lexer), got keys {sorted(spec)}"
            )
        return kinds[0], spec[kinds[0]], extra
    from .. import grammars

    if spec in grammars.names() and not os.path.exists(spec):
        return "bundled", spec, {}
    ext = os.path.splitext(spec)[1].lower() if "\n" not in spec else ""
    if ext in (".gmask", ".lark", ".gbnf", ".json"):
        if not os.path.isfile(spec):
            raise RequestOptionsError(f"gramask option 'grammar': no such file {spec!r}")
        if ext == ".gmask":
            return "artifact", os.path.abspath(spec), {}
        return "file" + ext, os.path.abspath(spec), {}
    if ":" not in spec:
        raise RequestOptionsError(
            f"gramask option 'grammar': {spec!r:.60} is not a bundled grammar "
            f"({', '.join(grammars.names())}), a .gmask/.lark/.gbnf/.json path, or Lark text"
        )
    return "lark", spec, {}


def _key(kind: str, value: Any, extra: Mapping[str, Any]) -> str:
    try:
        body = json.dumps([kind, value, dict(extra)], sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise RequestOptionsError(
            f"gramask option 'grammar': the {kind!r} value is not JSON data ({e})"
        ) from None
    if kind == "artifact" or kind.startswith("file."):
        try:  # an edited file is a new grammar
            st = os.stat(value)
            body += f"@{st.st_mtime_ns}:{st.st_size}"
        except OSError:
            pass
    return body


def grammar_from_spec(spec: str | Mapping[str, Any]) -> Grammar | None:
    """The :class:`~gramask.Grammar` a spec names (None for a compiled artifact).

    Cheap enough to validate a request before any compile: it parses, it does not compile.

    Raises
    ------
    RequestOptionsError, GrammarError
        A malformed spec, or a grammar that does not load (the error says where).
    """
    kind, value, extra = _classify(spec)
    if kind == "artifact":
        return None
    if kind.startswith("file."):
        return _from_file(kind[len("file"):], value, extra)
    return GRAMMAR_KINDS[kind](value, extra)


def _from_file(ext: str, path: str, extra: Mapping[str, Any]) -> Grammar:
    from ..grammars import load_spec

    if ext == ".lark":
        return load_spec(path, extra.get("start"), extra.get("lexer"))
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise RequestOptionsError(f"gramask option 'grammar': cannot read {path}: {e}") from None
    if ext == ".gbnf":
        return _gbnf(text, extra)
    return _json_schema(text, extra)


# -------------------------------------------------------------------------------- resolution
# Grammars a request carries (vLLM's json / regex / choice): compiled without the disk cache,
# their token-table rows walked as masks first need them, so a new one costs milliseconds
# to its first mask instead of a full build and an artifact write per request
PER_REQUEST_KINDS = frozenset({"json_schema", "regex", "choices"})


def is_per_request(spec: str | Mapping[str, Any]) -> bool:
    """Whether ``spec`` is a grammar a request carries (:data:`PER_REQUEST_KINDS`): compiled
    lazily and never written to the disk cache."""
    return _classify(spec)[0] in PER_REQUEST_KINDS


class GrammarResolver:
    """Grammar specs → compiled grammars over one vocabulary, each distinct spec built once.

    Safe to call from several threads: one lock per spec, so two requests for the same new
    grammar compile it once, and a compile does not block requests for other grammars.
    Per-request kinds (JSON Schema, regex, choices) are compiled lazily and not written to
    disk; the resolver keeps the ``max_grammars`` most recently used compiled grammars.

    Parameters
    ----------
    vocab
        The model's vocabulary; masks index its token ids.
    cache_dir
        The on-disk compile cache (default: ``GRAMASK_CACHE_DIR`` or the user cache).
    max_grammars
        Compiled grammars kept in memory (a server sees a new schema per request).
    """

    def __init__(self, vocab: Vocabulary, *, cache_dir: str | os.PathLike[str] | None = None,
                 max_grammars: int = 256):
        self.vocab = vocab
        self.cache_dir = cache_dir
        self.max_grammars = max(1, max_grammars)
        self._compiled: OrderedDict[str, CompiledGrammar] = OrderedDict()
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def compiled(self, options: RequestOptions) -> CompiledGrammar:
        """The compiled grammar of ``options.grammar`` (compiled or loaded on first use).

        Raises
        ------
        RequestOptionsError
            An artifact compiled for another vocabulary than the model's.
        GrammarError, ArtifactError
            The grammar does not load or compile.
        """
        key = options.key or _key(*_classify(options.grammar))
        cg = self._compiled.get(key)
        if cg is not None:
            with self._lock, contextlib.suppress(KeyError):
                self._compiled.move_to_end(key)
            return cg
        with self._lock:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            cg = self._compiled.get(key)
            if cg is None:
                cg = self._build(options.grammar)
                with self._lock:
                    self._compiled[key] = cg
                    while len(self._compiled) > self.max_grammars:
                        old, _ = self._compiled.popitem(last=False)
                        self._locks.pop(old, None)
        return cg

    def constraint(self, options: RequestOptions) -> Constraint:
        """A fresh constraint for ``options`` (errors as in ``CompiledGrammar.constraint``)."""
        return self.compiled(options).constraint(
            prefix=options.prefix, suffix=options.suffix, max_tokens=options.max_tokens
        )

    def _build(self, spec: str | Mapping[str, Any]) -> CompiledGrammar:
        kind, value, _ = _classify(spec)
        if kind == "artifact":
            from ..compiled import CompiledGrammar

            cg = CompiledGrammar.load(value)
            if cg.vocab.fingerprint() != self.vocab.fingerprint():
                raise RequestOptionsError(
                    f"gramask option 'grammar': {value} was compiled for another vocabulary "
                    f"({cg.vocab.name!r}, {len(cg.vocab)} tokens) than the model's "
                    f"({self.vocab.name!r}, {len(self.vocab)} tokens); compile it against the "
                    "model's tokenizer: gramask compile GRAMMAR --vocab MODEL_DIR"
                )
            return cg
        from ..compiler.pipeline import compile as compile_grammar

        grammar = grammar_from_spec(spec)
        assert grammar is not None  # only artifacts give None
        return compile_grammar(grammar, self.vocab, cache=kind not in PER_REQUEST_KINDS,
                               cache_dir=self.cache_dir, progress=False)
