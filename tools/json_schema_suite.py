"""Run the official JSON-Schema-Test-Suite through Grammar.from_json_schema.

Every test group's schema is compiled (or refused: a GrammarError naming the keyword), and every
test's instance, written as ``json.dumps(data)``, is forced byte by byte through the compiled
grammar (a byte-level vocabulary: the mask is exact per byte string, so this decides language
membership). Outcomes per test:

    pass        accepted and valid, or rejected and invalid
    refused     the schema was refused (unsupported keyword)
    reject      rejected but valid (gramask is stricter: property order, formats, ...)
    DISAGREE    accepted but invalid: a bug (or a keyword that should have been refused)

Usage (the suite is not vendored; fetch or clone github.com/json-schema-org/JSON-Schema-Test-Suite):

    python tools/json_schema_suite.py SUITE_DIR [--draft draft2020-12 --draft draft7] [-v]

SUITE_DIR is a checkout, or a bare git repository (read with ``git show HEAD:...``).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import gramask
from gramask import Grammar
from gramask.errors import GrammarError

DRAFT_URIS = {"draft7": "http://json-schema.org/draft-07/schema#",
              "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
              "draft2020-12": "https://json-schema.org/draft/2020-12/schema"}


def suite_files(root: Path, draft: str) -> list[tuple[str, str]]:
    """(name, JSON text) of the draft's required test files (not optional/)."""
    if (root / "tests").is_dir():
        return [(p.name, p.read_text()) for p in sorted((root / "tests" / draft).glob("*.json"))]
    names = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", "HEAD",
                            f"tests/{draft}/"], check=True, capture_output=True,
                           text=True).stdout.split()
    out = []
    for n in sorted(names):
        if n.endswith(".json"):
            text = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{n}"], check=True,
                                  capture_output=True, text=True).stdout
            out.append((Path(n).name, text))
    return out


def accepts(cg: gramask.CompiledGrammar, data: bytes) -> bool:
    c = cg.constraint()
    for b in data:
        if not c.allowed()[b]:
            return False
        c.advance(b)
    return bool(c.is_complete())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--draft", action="append", choices=sorted(DRAFT_URIS))
    ap.add_argument("-v", "--verbose", action="store_true", help="list refusals and rejects")
    args = ap.parse_args(argv)
    vocab = gramask.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"],
                                           eos_token_id=256, name="bytes")
    exit_code = 0
    for draft in args.draft or ["draft2020-12", "draft7"]:
        counts: collections.Counter[str] = collections.Counter()
        refused_by: collections.Counter[str] = collections.Counter()
        t0 = time.perf_counter()
        for fname, text in suite_files(args.suite, draft):
            for group in json.loads(text):
                schema: Any = group["schema"]
                if isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": DRAFT_URIS[draft], **schema}
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        cg = gramask.compile(Grammar.from_json_schema(schema), vocab,
                                             cache=False, progress=False)
                except GrammarError as e:
                    counts["refused"] += len(group["tests"])
                    refused_by[str(e.name or "schema")] += len(group["tests"])
                    if args.verbose:
                        print(f"refused  {fname}: {group['description']}: {e}")
                    continue
                for test in group["tests"]:
                    data = json.dumps(test["data"]).encode()
                    got = accepts(cg, data)
                    if got == test["valid"]:
                        counts["pass"] += 1
                    elif got:
                        counts["DISAGREE"] += 1
                        exit_code = 1
                        print(f"DISAGREE {fname}: {group['description']} / "
                              f"{test['description']}: {data.decode()}")
                    else:
                        counts["reject"] += 1
                        if args.verbose:
                            print(f"reject   {fname}: {group['description']} / "
                                  f"{test['description']}: {data.decode()}")
        total = sum(counts.values())
        print(f"{draft}: {total} tests: pass {counts['pass']}, refused {counts['refused']}, "
              f"reject (valid, refused by gramask) {counts['reject']}, "
              f"DISAGREE {counts['DISAGREE']} ({time.perf_counter() - t0:.0f} s)")
        print("  refused by keyword: " + ", ".join(f"{k} {n}" for k, n in
                                                   refused_by.most_common()))
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
