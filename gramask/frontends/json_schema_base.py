"""JSON Schema → grammar, the compiler's plumbing: the options, the keywords gramask knows
(enforced, annotations, refused), refusal (or, lenient, a warning), the grammar builder's
symbols, any JSON value, local references and literal values (:mod:`.json_schema` is the
entry point).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from typing import Any

from ..errors import GrammarError
from . import json_text as jt
from .bnf import GrammarBuilder
from .json_schema_negation import EXCEPT, FRACTIONS, NOT_MULTIPLE, NOT_PATTERN, negate
from .json_schema_refs import canonical_refs, lookup_pointer

__all__ = ["MAX_COUNTED_LENGTH", "MAX_PLAIN_LENGTH", "WHITESPACE_MODES", "JsonSchemaOptions",
           "SchemaCompilerBase", "SchemaWarning"]

WHITESPACE_MODES = ("flexible", "compact")


class SchemaWarning(UserWarning):
    """A keyword was ignored because the schema was compiled with ``lenient=True``."""


@dataclass(frozen=True)
class JsonSchemaOptions:
    """How a schema becomes a grammar.

    whitespace
        ``"flexible"``: any JSON whitespace between tokens (as llguidance); ``"compact"``:
        none, the form ``json.dumps(x, separators=(",", ":"))`` writes.
    additional_properties
        What an object without ``additionalProperties`` allows besides its ``properties``:
        ``True`` is the standard's reading; ``False`` keeps models from inventing keys.
    lenient
        Ignore keywords gramask cannot enforce (with a :class:`SchemaWarning`) instead of
        refusing the schema.
    max_rules
        Refuse schemas whose counted repeats (``maxItems: 10000``) would need more rules.
    """

    whitespace: str = "flexible"
    additional_properties: bool = True
    lenient: bool = False
    max_rules: int = 50_000


# the source name of every JSON Schema grammar (the compiler knows them by it)
SOURCE = "<json schema>"

# keywords that only annotate (or hold definitions referenced by pointer)
_ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "$anchor", "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
    "contentMediaType", "contentEncoding", "$vocabulary", "discriminator", "example",
    "nullable_annotation", "$dynamicAnchor",
})
_ENFORCED = frozenset({
    "type", "enum", "const", "properties", "required", "additionalProperties",
    "patternProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
    "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minProperties", "maxProperties", "uniqueItems", "propertyNames", "dependentRequired",
    "not", "if", "then", "else", "dependentSchemas", "dependencies", "contains", "minContains",
    "maxContains", "unevaluatedProperties", "unevaluatedItems", EXCEPT, NOT_MULTIPLE,
    NOT_PATTERN, FRACTIONS,
})
# known keywords gramask does not enforce: refused (unknown keywords are ignored, as the
# specification says)
_REFUSED = frozenset({
    "$dynamicRef",
    "$recursiveRef", "$recursiveAnchor",
    "contentSchema",
})
# every keyword with a meaning here; any other keyword only annotates (the specification
# ignores unknown keywords: SchemaStore's schemas carry x-taplo, markdownDescription, ...)
_KNOWN = _ANNOTATIONS | _ENFORCED | _REFUSED
# keywords of draft 2019-09 and later: unknown (so ignored) in drafts 4 to 7
_NEWER = frozenset({"unevaluatedProperties", "unevaluatedItems", "$dynamicRef",
                    "$recursiveRef", "$recursiveAnchor", "contentSchema"})
_COMPLEMENTS = (EXCEPT, NOT_MULTIPLE, NOT_PATTERN, FRACTIONS)  # the keywords a not writes
_TYPES = ("null", "boolean", "object", "array", "number", "integer", "string")
_STRING_KW = ("minLength", "maxLength", "pattern", "format", NOT_PATTERN)
_NUMBER_KW = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_OBJECT_KW = ("properties", "required", "additionalProperties", "patternProperties",
              "minProperties", "maxProperties", "propertyNames", "dependentRequired")
_ARRAY_KW = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems")
_MAX_BOUND = 10**30
# minLength/maxLength are counted by the string terminal's automaton: ~22 byte states (escapes,
# UTF-8 continuations) per counted character. A plain counted string is laid out directly
# (json_strings.length_string_dfa); combined with a pattern or format it is a product that is
# built and minimised state by state, which costs ~1 s at 64 characters
MAX_COUNTED_LENGTH = 64
# A plain one has ~22 states per count (220,004 at 10,000: within MAX_LAZY_LEXER_STATES; a
# cached compile stops at MAX_LEXER_STATES, ~740 characters). Its table rows are shared by
# the counts with room for any token (compiler/row_classes), so what grows with N is the
# lexer's build (~1 s per 1,000 characters) and its memory (~60 MB per 1,000)
MAX_PLAIN_LENGTH = 10_000

def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _locate(node: Any, ptr: str, where: dict[int, list[str]]) -> None:
    """Record the pointer of every object in the document ``node`` (iteratively: deep
    documents do not reach Python's recursion limit)."""
    todo = [(node, ptr)]
    while todo:
        node, ptr = todo.pop()
        if isinstance(node, dict):
            where.setdefault(id(node), []).append(ptr)
            todo += [(v, _ptr_join(ptr, k)) for k, v in node.items()]
        elif isinstance(node, list):
            todo += [(v, _ptr_join(ptr, i)) for i, v in enumerate(node)]


def _ptr_join(ptr: str, *parts: object) -> str:
    for p in parts:
        ptr += "/" + str(p).replace("~", "~0").replace("/", "~1")
    return ptr


class SchemaCompilerBase:
    """What every keyword's compiler uses: options, errors, symbols, references, literals.
    :meth:`value` (a schema's nonterminal) is the full compiler's."""

    def __init__(self, root: Any, options: JsonSchemaOptions) -> None:
        self.opt = options
        self.b = GrammarBuilder()
        self.memo: dict[str, str] = {}
        # schemas being compiled (canonical text -> the name a recursive use of it got, or "")
        self.active: dict[str, str] = {}
        self.ref_rules: dict[str, str] = {}
        self.any_rule: str | None = None
        self.n_rules = 0
        # the least common multiple of the residues multipleOf's terminals follow (they share
        # the lexer, whose states follow all of them at once: json_schema_types.multiples)
        self.residues = 1
        schema_uri = root.get("$schema", "") if isinstance(root, dict) else ""
        self.old_draft = any(d in str(schema_uri) for d in ("draft-03", "draft-04", "draft-06",
                                                             "draft-07", "draft/2019-09"))
        self.ref_siblings_ignored = any(d in str(schema_uri) for d in ("draft-03", "draft-04",
                                                                       "draft-06", "draft-07"))
        self.draft4 = any(d in str(schema_uri) for d in ("draft-03", "draft-04"))
        self.root = canonical_refs(root, modern=not self.ref_siblings_ignored,
                                   id_key="id" if self.draft4 else "$id")
        # where each of the user's schema objects sits: rewrites (if/then, allOf merges,
        # dependentSchemas) pass the user's objects on under pointers of their own making
        self.where: dict[int, list[str]] = {}
        self.kept: list[Any] = []  # rewritten schemas :meth:`note`d (their ids stay theirs)
        # merged allOf schemas being compiled: (pointer, the part's pointer of each keyword)
        self.origins: list[tuple[str, dict[str, str]]] = []
        _locate(self.root, "#", self.where)
        if options.whitespace not in WHITESPACE_MODES:
            raise GrammarError(f"whitespace must be one of {', '.join(WHITESPACE_MODES)}, "
                               f"not {options.whitespace!r}")
        if options.whitespace == "flexible":
            self.b.terminal(jt.JSON_WS, hint="WS", ignored=True)

    # ------------------------------------------------------------------ pointers
    def at(self, schema: Any, ptr: str) -> str:
        """The user's pointer to ``schema``: ``ptr`` where it names the object's place in the
        document, else where the object sits (a rewrite's ``#/anyOf/0`` for a ``then`` is
        ``#/then``); ``ptr`` for a schema not in the document."""
        places = self.where.get(id(schema))
        return ptr if not places or ptr in places else places[0]

    def user_ptr(self, keyword: str, ptr: str) -> str:
        """Where the user wrote ``keyword`` of the schema at ``ptr``: the ``allOf`` part it
        came from where that schema is a merge, else ``ptr``."""
        keys = [keyword, *_COMPLEMENTS] if keyword == "not" else [keyword]  # (a complement's)
        for at, origin in reversed(self.origins):
            if at == ptr:
                return next((origin[k] for k in keys if k in origin), ptr)
        return ptr

    def note(self, schema: Any, ptr: str) -> Any:
        """``schema``, a rewrite's own object, recorded as standing for the user's ``ptr``,
        with the branches of its own ``anyOf``/``allOf`` (a complement's ``anyOf`` is no
        place the user wrote)."""
        todo = [schema]
        while todo:
            node = todo.pop()
            if isinstance(node, dict) and id(node) not in self.where:
                self.kept.append(node)
                self.where[id(node)] = [ptr]
                todo += [x for k in ("anyOf", "allOf") if isinstance(node.get(k), list)
                         for x in node[k]]
        return schema

    # ------------------------------------------------------------------ errors
    def refuse(self, keyword: str, ptr: str, why: str) -> None:
        """Refuse (or, lenient, warn about) a keyword gramask cannot enforce."""
        msg = f"JSON Schema keyword {keyword!r} at {self.user_ptr(keyword, ptr) or '#'}: {why}"
        if self.opt.lenient:
            warnings.warn(f"gramask: ignored {msg}", SchemaWarning, stacklevel=5)
            return
        raise GrammarError(f"{msg} (lenient=True ignores it, with a warning)", name=keyword)

    def counts(self, schema: dict[str, Any], ptr: str, kind: str
               ) -> tuple[int, int | None] | None:
        """(``min<kind>``, ``max<kind>``): checked count keywords (``Length``, ``Items``,
        ``Properties``), the upper one None where absent; None where no count fits both."""
        lo, hi = schema.get("min" + kind, 0), schema.get("max" + kind)
        for kw, val in (("min" + kind, lo), ("max" + kind, hi)):
            if val is not None and (not isinstance(val, int) or isinstance(val, bool) or val < 0):
                raise self.bad(kw, ptr, "must be a non-negative integer")
        return None if hi is not None and lo > hi else (lo, hi)

    def bad(self, keyword: str, ptr: str, why: str) -> GrammarError:
        return GrammarError(f"JSON Schema keyword {keyword!r} at "
                            f"{self.user_ptr(keyword, ptr) or '#'}: {why}", name=keyword)

    # ------------------------------------------------------------------ symbols
    def lit(self, text: str) -> str:
        return self.b.literal(text, hint={"{": "LBRACE", "}": "RBRACE", "[": "LSQB",
                                          "]": "RSQB", ",": "COMMA", ":": "COLON"}.get(text, text))

    def rule(self, lhs: str, *alts: tuple[str, ...]) -> str:
        self.n_rules += len(alts)
        if self.n_rules > self.opt.max_rules:
            raise GrammarError(f"JSON Schema: the grammar needs more than {self.opt.max_rules:,} "
                               "rules (counted repeats such as a large maxItems); refused")
        return self.b.rule(lhs, *alts)

    def string_terminal(self, text_regex: str, hint: str = "STRING", *, key: bool = False,
                        **spec: Any) -> str:
        """A JSON string terminal: ``regex`` (over the encoded text), or, with ``spec``, the
        automaton of the decoded language it names (``regex`` then only for reading).
        ``key``: an object's key, ranked after the values (``GrammarBuilder.terminal``'s
        ``last``). A spec that combines a pattern or format with a length, or a pattern with
        a format (``^x-`` and a uuid), can describe no string at
        all: then a rule without alternatives, which the pruning removes."""
        if not spec:
            return self.b.terminal(text_regex, hint=hint, last=key)
        automaton = json.dumps(spec, sort_keys=True)
        if not key and ("regex" in spec or spec.get("match")):
            from .json_strings import spec_dfa

            if not spec_dfa(automaton).finals.any():
                return self.empty()
        return self.b.terminal(text_regex, hint=hint, automaton=automaton, last=key)

    # ------------------------------------------------------------------ any JSON value
    def any_value(self) -> str:
        if self.any_rule is not None:
            return self.any_rule
        v = self.any_rule = self.b.fresh("any")
        obj, arr = self.b.fresh("any_object"), self.b.fresh("any_array")
        members, elems = self.b.fresh("any_members"), self.b.fresh("any_elements")
        s = self.string_terminal(jt.JSON_STRING)
        n = self.b.terminal(jt.JSON_NUMBER, hint="NUMBER")
        self.rule(v, (obj,), (arr,), (s,), (n,), (self.lit("true"),), (self.lit("false"),),
                  (self.lit("null"),))
        self.rule(obj, (self.lit("{"), self.lit("}")), (self.lit("{"), members, self.lit("}")))
        self.rule(members, (s, self.lit(":"), v), (members, self.lit(","), s, self.lit(":"), v))
        self.rule(arr, (self.lit("["), self.lit("]")), (self.lit("["), elems, self.lit("]")))
        self.rule(elems, (v,), (elems, self.lit(","), v))
        return v

    def empty(self) -> str:
        """A rule with no alternatives: the empty language (pruned at the end)."""
        return self.b.fresh("nothing")

    # ------------------------------------------------------------------ references
    def resolve(self, ref: str, ptr: str) -> tuple[Any, str]:
        if not isinstance(ref, str):
            raise self.bad("$ref", ptr, "must be a string")
        if not ref.startswith("#"):
            self.refuse("$ref", ptr, f"only local references (#...) are supported, not {ref!r}")
            return True, ptr
        path = ref[1:]
        if path and not path.startswith("/"):
            self.refuse("$ref", ptr, f"anchor references ({ref!r}) are not supported")
            return True, ptr
        try:
            target = lookup_pointer(self.root, path)
        except KeyError:
            raise self.bad("$ref", ptr, f"{ref!r} points to nothing in the schema") from None
        return target, "#" + path

    def complement(self, schema: Any, ptr: str) -> Any:
        """The complement :func:`~.json_schema_negation.negate` writes for ``schema`` (its
        ``$ref`` resolved from ``ptr``), or None where it writes none."""
        return negate(schema, lambda ref: self.resolve(ref, ptr)[0], _ANNOTATIONS)

    def ref_rule(self, ref: str, ptr: str) -> str:
        target, tptr = self.resolve(ref, ptr)
        name = self.ref_rules.get(tptr)
        if name is None:
            name = self.ref_rules[tptr] = self.b.fresh("ref")
            self.rule(name, (self.value(target, tptr),))
        return name

    def value(self, schema: Any, ptr: str) -> str:
        """The nonterminal of the values ``schema`` accepts (:class:`.json_schema._Compiler`)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ literal values
    def const(self, v: Any) -> str:
        key = "const:" + _canon(v)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if isinstance(v, str):
            out = self.string_terminal(jt.literal_string_regex(v), hint="S_" + v, words=[v])
        elif v is None or isinstance(v, bool | int | float):
            if isinstance(v, float) and not math.isfinite(v):
                raise GrammarError(f"JSON Schema: {v} is not a JSON value")
            out = self.lit(json.dumps(v))
        elif isinstance(v, list):
            out = self.b.fresh("const_array")
            seq: list[str] = [self.lit("[")]
            for i, x in enumerate(v):
                if i:
                    seq.append(self.lit(","))
                seq.append(self.const(x))
            self.rule(out, (*seq, self.lit("]")))
        else:
            out = self.b.fresh("const_object")
            seq = [self.lit("{")]
            for i, (k, x) in enumerate(v.items()):
                if i:
                    seq.append(self.lit(","))
                seq += [self.key(k), self.lit(":"), self.const(x)]
            self.rule(out, (*seq, self.lit("}")))
        self.memo[key] = out
        return out

    def key(self, k: str) -> str:
        return self.string_terminal(jt.literal_string_regex(k), hint="K_" + k, key=True,
                                    words=[k])
