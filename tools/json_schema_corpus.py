#!/usr/bin/env python
"""Build the real-world JSON Schema benchmark set from a SchemaStore checkout.

SchemaStore (github.com/SchemaStore/schemastore, Apache-2.0) keeps the schemas editors use for
configuration files (``src/schemas/json/NAME.json``) together with instances that must pass
(``src/test/NAME/*.json``) and instances that must fail (``src/negative_test/NAME/*.json``):
real schemas with real labelled instances, written by people who never heard of gramask.

A schema is taken when it is a JSON file of at most ``--max-schema-kb``, uses only local
``$ref``s, and has at least one JSON instance of at most ``--max-instance-kb``; every label is
checked with ``jsonschema`` (format assertions on) and an instance whose label ``jsonschema``
does not confirm is dropped (SchemaStore's negative tests are sometimes negative only under a
keyword ``jsonschema`` ignores). The sample is seeded and written in the format of
``json_schemas/sample.json``, with the SchemaStore commit in each entry's ``source``:

    python tools/json_schema_corpus.py SCHEMASTORE_DIR [--limit 150 --seed 0] \\
        [-o tools/json_schemas/schemastore.json]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "json_schemas"


def _refs(node: Any) -> list[str]:
    out = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                out.append(v)
            else:
                out += _refs(v)
    elif isinstance(node, list):
        for v in node:
            out += _refs(v)
    return out


def _instances(folder: Path, max_bytes: int) -> list[Any]:
    out = []
    if not folder.is_dir():
        return out
    for f in sorted(folder.glob("*.json")):
        if f.stat().st_size > max_bytes:
            continue
        try:
            out.append(json.loads(f.read_text(encoding="utf-8")))
        except (ValueError, UnicodeDecodeError):
            continue
    return out


def build(root: Path, limit: int, seed: int, max_schema: int, max_instance: int,
          ) -> list[dict[str, Any]]:
    import jsonschema

    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    src = root / "src"
    names = sorted(p.stem for p in (src / "schemas" / "json").glob("*.json"))
    random.Random(seed).shuffle(names)
    cases: list[dict[str, Any]] = []
    for name in names:
        path = src / "schemas" / "json" / f"{name}.json"
        if path.stat().st_size > max_schema:
            continue
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(schema, dict) or any(not r.startswith("#") for r in _refs(schema)):
            continue
        valid = _instances(src / "test" / name, max_instance)
        invalid = _instances(src / "negative_test" / name, max_instance)
        if not valid and not invalid:
            continue
        try:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            v = cls(schema, format_checker=cls.FORMAT_CHECKER)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                valid = [x for x in valid if v.is_valid(x)]
                invalid = [x for x in invalid if not v.is_valid(x)]
        except Exception:  # a schema jsonschema cannot use is no benchmark
            continue
        if not valid and not invalid:
            continue
        cases.append({"name": name, "source": f"SchemaStore {commit}: src/schemas/json/{name}.json",
                      "schema": schema, "valid": valid, "invalid": invalid})
        if len(cases) >= limit:
            break
    return sorted(cases, key=lambda c: c["name"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("schemastore", type=Path)
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-schema-kb", type=int, default=24)
    ap.add_argument("--max-instance-kb", type=int, default=4)
    ap.add_argument("-o", "--out", type=Path, default=HERE / "schemastore.json")
    a = ap.parse_args(argv)
    cases = build(a.schemastore, a.limit, a.seed, a.max_schema_kb * 1024,
                  a.max_instance_kb * 1024)
    a.out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    nv = sum(len(c["valid"]) for c in cases)
    ni = sum(len(c["invalid"]) for c in cases)
    print(f"{len(cases)} schemas, {nv} valid and {ni} invalid instances -> {a.out}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
