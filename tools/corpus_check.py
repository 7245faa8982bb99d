"""Force real files through a constraint, token by token, with a real tokenizer.

Every file that the oracle accepts (``ast.parse`` for Python, ``json.loads`` for JSON) is
tokenised by the vocabulary's own tokenizer; each token must be allowed and the text complete
at the end. Failures are grouped by cause. ``--mask-every K`` also checks the full mask
(``allowed()[token]``) at every K-th step (slower); otherwise each step is checked with the
exact single-token test that ``advance`` performs.

    python tools/corpus_check.py python --vocab deepseek-v4                 # whole stdlib
    python tools/corpus_check.py python --vocab qwen2 --sample 200 --seed 1
    python tools/corpus_check.py python --vocab deepseek-v4 --dirs /path/to/site-packages/numpy
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import os
import random
import sys
import sysconfig
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gramask
from tests.conftest import hf_tokenizer


def python_files(dirs: list[str], skip_site_packages: bool = True) -> list[Path]:
    out = []
    for d in dirs:
        for root, subdirs, files in os.walk(d):
            if skip_site_packages and "site-packages" in subdirs:
                subdirs.remove("site-packages")  # the stdlib proper, not third-party code
            out.extend(Path(root) / f for f in files if f.endswith(".py"))
    return sorted(out)


def json_files(dirs: list[str]) -> list[Path]:
    out = []
    for d in dirs:
        for root, _, files in os.walk(d):
            out.extend(Path(root) / f for f in files if f.endswith(".json"))
    return sorted(out)


def check_file(cg, encode, text: str, mask_every: int) -> tuple[bool, str]:
    c = cg.constraint()
    ids = encode(text)
    for k, t in enumerate(ids):
        if mask_every and k % mask_every == 0 and not c.allowed()[t]:
            return False, f"masked token {cg.vocab.token_bytes(t)!r} at {len(c.data)}"
        try:
            c.advance(t)
        except gramask.TokenRejected:
            line = text.encode()[: len(c.data)].count(b"\n") + 1
            tail = c.data[-40:].decode("utf-8", "replace")
            return False, f"rejected {cg.vocab.token_bytes(t)!r} on line {line} after {tail!r}"
    if not c.is_complete():
        return False, "incomplete at end"
    return True, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("grammar", choices=["python", "json"])
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--dirs", nargs="*", help="default: the running interpreter's stdlib")
    ap.add_argument("--site-packages", action="store_true",
                    help="also walk site-packages directories found under --dirs")
    ap.add_argument("--sample", type=int, default=0, help="check a seeded sample of N files")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mask-every", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=1_000_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    dirs = args.dirs or [sysconfig.get_paths()["stdlib"]]
    files = (
        python_files(dirs, not args.site_packages)
        if args.grammar == "python"
        else json_files(dirs)
    )
    if args.sample:
        random.Random(args.seed).shuffle(files)
        files = files[: args.sample]
    cg = gramask.compile(gramask.grammars.load(args.grammar), gramask.Vocabulary.bundled(args.vocab))
    encode = hf_tokenizer(args.vocab)
    passed = skipped = tokens = 0
    failures: dict[str, list[str]] = collections.defaultdict(list)
    t0 = time.perf_counter()
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            skipped += 1
            continue
        if len(text.encode()) > args.max_bytes:
            skipped += 1
            continue
        try:
            ast.parse(text) if args.grammar == "python" else json.loads(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            skipped += 1  # the oracle rejects it: not a member, nothing to check
            continue
        ok, why = check_file(cg, encode, text, args.mask_every)
        tokens += len(text)
        if ok:
            passed += 1
        else:
            cause = why.split(" on line ")[0].split(" at ")[0]
            failures[cause].append(f"{f}: {why}")
    total = passed + sum(len(v) for v in failures.values())
    secs = time.perf_counter() - t0
    result = {
        "grammar": args.grammar, "vocab": args.vocab, "files": total, "passed": passed,
        "pass_rate": passed / max(1, total), "skipped_by_oracle_or_encoding": skipped,
        "seconds": round(secs, 1), "failures": {k: v for k, v in failures.items()},
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{args.grammar} × {args.vocab}: {passed}/{total} files pass "
              f"({100 * passed / max(1, total):.2f}%), {skipped} skipped, {secs:.0f} s")
        for cause, items in sorted(failures.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(items):4d}  {cause}")
            for it in items[:3]:
                print(f"          {it}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
