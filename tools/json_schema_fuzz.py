"""Random JSON Schemas, gramask's masked walks, ``jsonschema`` as the oracle.

Each schema combines keywords at random (objects with properties, required keys, several
``patternProperties`` beside ``additionalProperties``, property counts, ``propertyNames``,
``dependentRequired``, ``not`` and ``if``/``then``/``else`` over simple conditions; arrays
with ``prefixItems``, counts and ``contains``; strings with lengths, patterns and formats;
integers and numbers with decimal bounds and ``multipleOf``; ``enum``, ``const``, type lists,
``anyOf``/``oneOf``/``allOf``). gramask compiles it or refuses it with a ``GrammarError``;
each compiled schema gets random masked walks (mostly short tokens, EOS taken at random),
finished by ``shortest_completion()``. Every text must be valid for ``jsonschema``; a walk
whose state has no completion is a dead end; any other exception is a crash. Prints the
counts and each failure with its schema::

    PYTHONPATH=. python tools/json_schema_fuzz.py [--seed 1] [--schemas 60] [--walks 8]
        [--classic] [--real] [--from tools/json_schemas/user_tools.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import warnings
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

import gramask

KEYS = ["a", "b", "ab", "x-1", "x-y", "n", "é"]
PATTERNS = ["^x-", "b$", "^[a-c]+$", "[0-9]", "^n"]
NUMBERS = [0, 1, -1, 2.5, 0.25, -0.5, 3, 10, 1.75, 100]
FORMATS = ["date", "uuid", "ipv4", "email"]
VALUES = [1, "a", None, True, 2.5, [1], {"a": 1}, "b"]
CONSTS = [1, "a", None, {"a": [1]}, 0.5]
# --wide (the default since seed 21): literals that differ only in a sign, an exponent's sign or
# punctuation (terminal names drop those characters), zero, the empty string, non-ASCII
WIDE_VALUES = [-1, -2.5, 1e-20, 1e20, 0, -0.5, "", "a-b", "a_b", "é", [-1, 1], {"b": -1}]
WIDE_FORMATS = ["ipv6"]


# --real (since seed 31): what real schemas carry beside those: $defs reached through chains
# of $ref, anyOf of objects, nullable types, formats with lengths, large enums, float bounds
# and divisors, URI formats, not of a multipleOf or a bound
REAL_FORMATS = ["uri", "uri-reference", "date-time", "hostname"]
REAL_NUMBERS = [0.1, 0.3, 1e-7, 99.99, 5e15, -273.15]
REAL_DIVISORS = [0.01, 0.1, 0.25, 0.07, 1.5, 3, 0.5]


class SchemaGen:
    """Random schemas, depth-bounded."""

    def __init__(self, rng: random.Random, wide: bool = True, real: bool = False) -> None:
        self.r = rng
        self.values = VALUES + WIDE_VALUES if wide else VALUES
        self.consts = CONSTS + WIDE_VALUES if wide else CONSTS
        self.formats = FORMATS + WIDE_FORMATS if wide else FORMATS
        self.real = real
        self.defs: dict[str, Any] = {}
        if real:
            self.formats = self.formats + REAL_FORMATS

    def document(self) -> Any:
        """A schema, with the ``$defs`` its ``$ref``s (``--real``) name."""
        self.defs = {}
        s = self.schema()
        if self.defs:
            s = {"allOf": [s]} if not isinstance(s, dict) or "$defs" in s else s
            s["$defs"] = self.defs
        return s

    def schema(self, depth: int = 0) -> Any:
        r = self.r
        kinds = ["string", "integer", "number", "enum", "const"]
        if depth < 3:
            kinds += ["object", "array", "anyOf", "allOf", "oneOf", "types", "not", "if"]
        if self.real:
            kinds += ["nullable", "bigenum", "mixenum"]
            if depth < 3:
                kinds += ["ref", "objects", "ref", "notnumber"]
        kind = r.choice(kinds)
        if kind == "ref":  # a $ref to a $defs entry, maybe through a chain of $refs
            name = f"d{len(self.defs)}"
            self.defs[name] = {}  # (reserved while its own schema is drawn)
            others = [d for d in self.defs if d != name]
            self.defs[name] = (self.schema(depth + 1) if r.random() < .7 or not others
                               else {"$ref": f"#/$defs/{r.choice(others)}"})
            return {"$ref": f"#/$defs/{name}"}
        if kind == "objects":  # anyOf of objects told apart by a const (or not)
            tag = r.choice(KEYS)
            return {"anyOf": [{**self.object(depth + 1), "properties": {
                tag: {"const": v}, **{k: self.schema(depth + 2) for k in r.sample(KEYS, 1)}},
                **({"required": [tag]} if r.random() < .8 else {})}
                for v in r.sample(["a", "b", 1, None], r.randint(2, 3))]}
        if kind == "nullable":
            inner = self.schema(depth + 1)
            if isinstance(inner, dict) and isinstance(inner.get("type"), str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        if kind == "bigenum":
            return {"enum": [f"v{i}" for i in range(r.randint(20, 120))] + r.sample(
                self.values, 2)}
        if kind == "mixenum":
            return {"enum": r.sample(self.values, 3), "const": r.choice(self.values)} \
                if r.random() < .3 else {"type": r.choice(["string", "number"]),
                                         "enum": r.sample(self.values + REAL_NUMBERS, 4)}
        if kind == "notnumber":
            return {"type": "number", "not": r.choice([
                {"multipleOf": r.choice(REAL_DIVISORS)},
                {"minimum": r.choice(NUMBERS + REAL_NUMBERS)},
                {"exclusiveMaximum": r.choice(NUMBERS + REAL_NUMBERS)}])}
        if kind == "not":  # a schema beside the complement of a simple one
            return {**self.schema(depth + 1), "not": self.simple()}
        if kind == "if":
            return {"if": self.simple(), "then": self.schema(depth + 1),
                    **({"else": self.schema(depth + 1)} if r.random() < .7 else {})}
        if kind in ("anyOf", "allOf", "oneOf"):
            return {kind: [self.schema(depth + 1) for _ in range(r.randint(1, 3))]}
        if kind == "enum":
            return {"enum": r.sample(self.values, r.randint(1, 4))}
        if kind == "const":
            return {"const": r.choice(self.consts)}
        if kind == "types":
            return {"type": r.sample(["string", "integer", "null", "boolean", "number"], 2)}
        return getattr(self, kind)(depth)

    def simple(self) -> Any:
        """A condition gramask can take the complement of (json_schema_negation)."""
        r = self.r
        return r.choice([
            {"type": r.choice(["string", "null", ["number", "boolean"], "object"])},
            {"const": r.choice([1, "a", None, True])},
            {"enum": r.sample(self.values, 2)},
            {"required": r.sample(KEYS, 1)},
            {"properties": {r.choice(KEYS): {"const": r.choice(["a", 1, None])}},
             "required": r.sample(KEYS, r.randint(0, 1))},
            {"minimum": r.randint(-2, 2)},
            {"maxLength": r.randint(0, 2)},
        ])

    def object(self, depth: int) -> dict[str, Any]:
        r = self.r
        s: dict[str, Any] = {"type": "object"}
        if r.random() < .8:
            s["properties"] = {k: self.schema(depth + 1) for k in r.sample(KEYS, r.randint(0, 3))}
            if r.random() < .5:
                s["required"] = r.sample(list(s["properties"]),
                                         r.randint(0, len(s["properties"])))
        if r.random() < .5:
            s["patternProperties"] = {p: self.schema(depth + 1) if r.random() < .85 else False
                                      for p in r.sample(PATTERNS, r.randint(1, 3))}
        roll = r.random()
        if roll < .3:
            s["additionalProperties"] = False
        elif roll < .6:
            s["additionalProperties"] = self.schema(depth + 1)
        if r.random() < .3:
            s["minProperties"] = r.randint(0, 2)
        if r.random() < .3:
            s["maxProperties"] = r.randint(1, 3)
        if r.random() < .2:
            s["propertyNames"] = r.choice([{"pattern": r.choice(PATTERNS)},
                                           {"maxLength": r.randint(1, 3)},
                                           {"enum": r.sample(KEYS, 2)}, False])
        if r.random() < .25:
            names = list(s.get("properties", {})) + r.sample(KEYS, 1)
            s["dependentRequired"] = {k: r.sample(KEYS, r.randint(0, 2))
                                      for k in r.sample(names, r.randint(1, len(names)))}
        return s

    def array(self, depth: int) -> dict[str, Any]:
        r = self.r
        s: dict[str, Any] = {"type": "array", "items": self.schema(depth + 1)}
        if r.random() < .3:
            s["prefixItems"] = [self.schema(depth + 1) for _ in range(r.randint(1, 2))]
        if r.random() < .4:
            s["minItems"] = r.randint(0, 2)
        if r.random() < .4:
            s["maxItems"] = r.randint(1, 3)
        if r.random() < .3:
            s["contains"] = self.simple() if r.random() < .6 else self.schema(depth + 1)
            if r.random() < .4:
                s["minContains"] = r.randint(0, 2)
            if r.random() < .4:
                s["maxContains"] = r.randint(0, 2)
        return s

    def string(self, depth: int) -> dict[str, Any]:
        r = self.r
        s: dict[str, Any] = {"type": "string"}
        if r.random() < .3:
            s["minLength"] = r.randint(0, 3)
        if r.random() < .3:
            s["maxLength"] = r.randint(1, 5)
        if r.random() < .3:
            s["pattern"] = r.choice(PATTERNS)
        if r.random() < .2:
            s["format"] = r.choice(self.formats)
            if self.real and r.random() < .5:
                s[r.choice(["minLength", "maxLength"])] = r.randint(1, 30)
        return s

    def integer(self, depth: int) -> dict[str, Any]:
        return self._number("integer")

    def number(self, depth: int) -> dict[str, Any]:
        return self._number("number")

    def _number(self, kind: str) -> dict[str, Any]:
        r = self.r
        s: dict[str, Any] = {"type": kind}
        for kw in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            if r.random() < .35:
                v = r.choice(NUMBERS)
                s[kw] = v if kind == "number" else int(v)
        if kind == "integer" and r.random() < .2:
            s["multipleOf"] = r.choice([2, 3, 5])
        if self.real and r.random() < .3:
            s["multipleOf"] = r.choice(REAL_DIVISORS)
        if self.real and r.random() < .3:
            s[r.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])] = (
                r.choice(REAL_NUMBERS))
        return s


def walk(cg: gramask.CompiledGrammar, short: np.ndarray, eos: int, rng: random.Random) -> str:
    """A random masked walk, finished by the shortest completion (NoCompletionError: none)."""
    c = cg.constraint("")
    for _ in range(50):
        m = c.allowed()
        if m[eos] and rng.random() < 0.3:
            break
        m[eos] = False
        ids = np.flatnonzero(m & short) if rng.random() < 0.8 else np.flatnonzero(m)
        if not ids.size:
            ids = np.flatnonzero(m)
        if not ids.size:
            break
        c.advance(int(rng.choice(ids)))
    text = c.data.decode("utf-8", "replace")
    return text if c.is_complete() else text + c.shortest_completion().text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--schemas", type=int, default=60)
    ap.add_argument("--walks", type=int, default=8)
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--classic", dest="wide", action="store_false",
                    help="the value pools of seeds 1-20 (no signed, exponent or punctuated "
                         "literals, no ipv6), to rerun those seeds as recorded")
    ap.add_argument("--real", action="store_true",
                    help="also the shapes of real schemas (since seed 31): $defs behind $ref "
                         "chains, anyOf of objects, nullable types, formats with lengths, "
                         "large enums, float bounds and divisors, not of numbers")
    ap.add_argument("--from", dest="sets", type=Path, action="append", default=[],
                    help="walk the schemas of a tools/json_schemas/*.json set file instead of "
                         "random ones (repeatable; --schemas is then ignored)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    rng = random.Random(args.seed)
    gen = SchemaGen(rng, wide=args.wide, real=args.real)
    given = [c["schema"] for f in args.sets for c in json.loads(f.read_text())]
    vocab = gramask.Vocabulary.bundled(args.vocab)
    eos = vocab.eos_token_id
    short = np.array([len(vocab.token_bytes(i)) <= 3 for i in range(len(vocab))])
    n = dict(schemas=0, refused=0, walks=0, dead=0, invalid=0, crash=0)
    for i in range(len(given) if given else args.schemas):
        schema = given[i] if given else gen.document() if args.real else gen.schema()
        n["schemas"] += 1
        try:
            cg = gramask.compile(gramask.Grammar.from_json_schema(schema), vocab, cache=False,
                                 progress=False)
        except gramask.GrammarError as e:
            n["refused"] += 1
            print("REFUSED", str(e).splitlines()[0][:160], json.dumps(schema))
            continue
        except Exception as e:  # a crash is a finding
            n["crash"] += 1
            print("CRASH (compile)", type(e).__name__, e, json.dumps(schema))
            continue
        cls = jsonschema.validators.validator_for(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        for _ in range(args.walks):
            try:
                text = walk(cg, short, eos, rng)
            except gramask.NoCompletionError:
                n["dead"] += 1
                print("DEAD END", json.dumps(schema))
                continue
            except Exception as e:
                n["crash"] += 1
                print("CRASH (walk)", type(e).__name__, e, json.dumps(schema))
                break
            n["walks"] += 1
            try:
                ok = validator.is_valid(json.loads(text))
            except ValueError:
                ok = False
            if not ok:
                n["invalid"] += 1
                print("INVALID", json.dumps(schema), repr(text))
    print(", ".join(f"{k} {v}" for k, v in n.items()))
    return 1 if n["dead"] or n["invalid"] or n["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
