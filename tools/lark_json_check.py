"""llguidance's ``%json {schema}`` (gramask/frontends/lark_json.py) on random host grammars and
schemas, the installed llguidance as the oracle.

Usage: python tools/lark_json_check.py [--grammars N] [--seed S]

Each grammar puts one or two JSON Schemas (from a fixed pool, sometimes with
``"x-guidance": {"whitespace_flexible": false}``) into a host Lark grammar. Texts: gramask's
masked walks and random edits of them. Each text's verdict (accepted, a prefix only, rejected)
must be llguidance's, but for the documented escape difference (docs/dialects.md): texts with
``\\/`` or a ``\\u`` escape of a non-control character are counted apart.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz_common import random_steps

import gramask

# gramask's JSON frontend takes every JSON escape; llguidance by default no \/ and \u only for
# control characters
ESCAPE_DIFFERENCE = re.compile(r"\\/|\\u(?!00[01]|007[fF])")

SCHEMAS: list[dict[str, Any]] = [
    {"type": "integer", "minimum": -5, "maximum": 120},
    {"type": "number"},
    {"type": "boolean"},
    {"enum": ["a", "b", 1, None, True]},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": 1, "maxItems": 3},
    {"type": "object", "properties": {"x": {"type": "integer"}, "y": {
        "type": "array", "items": {"type": "boolean"}}}, "required": ["x"]},
    {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": False},
    {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "integer"}]},
    {"type": "object", "properties": {"n": {"type": "string"}, "kids": {
        "type": "array", "items": {"$ref": "#"}}}, "required": ["n"],
     "additionalProperties": False},
    {"type": "string", "format": "date"},
    {},
    {"type": ["null", "number"], "exclusiveMinimum": 0},
    {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
    {"oneOf": [{"type": "object", "properties": {"t": {"const": 1}}, "required": ["t"]},
               {"type": "array", "maxItems": 0}]},
]
HOSTS = [
    'start: "<t>" J "</t>"\n',
    "start: TEXT | J\nTEXT: /[^{\\[]+/\n",
    'start: (J ";")+\n',
    'start: "a" J? "b" K\n',
    'start: x\nx: J | "n" y\ny: "(" K ")"\n',
    'start: /[a-z]+/ "=" J\n',
]


def walk(cg: gramask.CompiledGrammar, rnd: random.Random, steps: int) -> str:
    """A random masked walk, then gramask's shortest completion."""
    c = cg.constraint()
    random_steps(c, cg.vocab.eos_token_id, rnd, steps)
    for t in c.shortest_completion().token_ids:
        c.advance(t)
    return c.data.decode()


def mutate(s: str, rnd: random.Random) -> str:
    i = rnd.randint(0, len(s))
    pool = s + ' \n{}[]",:0a'
    k = rnd.random()
    if k < 0.4:
        return s[:i] + rnd.choice(pool) + s[i:]
    if k < 0.8 and s:
        return s[:i] + s[i + 1:]
    return s[:i] + " " + s[i:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--grammars", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from lark_dialect_check import LLG, compile_quietly, gramask_verdict
    from lark_fuzz import small_vocab

    llg, vocab, rnd = LLG(), small_vocab(), random.Random(a.seed)
    stats: Counter[str] = Counter()
    for _ in range(a.grammars):
        parts = []
        for _k in range(2):
            schema = rnd.choice(SCHEMAS)
            if rnd.random() < 0.25:
                schema = {**schema, "x-guidance": {"whitespace_flexible": False}}
            parts.append("%json " + json.dumps(schema))
        g = rnd.choice(HOSTS).replace("J", parts[0]).replace("K", parts[1])
        stats["grammars"] += 1
        lerr = llg.build(g)
        cg, gerr = compile_quietly(g, vocab, 200)
        if lerr or gerr:
            stats[f"llguidance {'refuses' if lerr else 'builds'}, gramask "
                  f"{'refuses' if gerr else 'builds'}"] += 1
            print("build:", repr(g[:120]), "| llguidance:", (lerr or "ok")[:120],
                  "| gramask:", gerr or "ok")
            continue
        texts = [walk(cg, rnd, 50) for _ in range(8)]
        texts += [mutate(rnd.choice(texts), rnd) for _ in range(30)]
        for s in dict.fromkeys(texts):
            want, got = llg.verdict(g, s), gramask_verdict(cg, s)
            stats["texts"] += 1
            if want == got:
                continue
            if ESCAPE_DIFFERENCE.search(s):
                stats["texts differing by the escape difference"] += 1
                continue
            stats["texts disagreeing"] += 1
            print("disagree:", repr(g[:160]), repr(s[:100]), "llguidance", want, "gramask", got)
    for key, v in sorted(stats.items()):
        print(f"{key}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
