"""JSON Schema strings with a long ``maxLength``: compile, first mask and per-token masks.

For each length N, ``{"type": "string", "maxLength": N}`` (``--object``: as a property beside
a plain string) is compiled without the cache (what a request gets) and its first mask
computed; then min(N, ``--force``) characters of words, digits and non-ASCII letters are
forced token by token with the vocabulary's own tokenizer, each mask timed (p50, p90, max:
the max is the mask that computes the row classes, ``gramask.compiler.row_classes``). Where
the whole string was forced, every token the last mask allows must begin with the closing
quote (exact: a check, not a timing). Wall and CPU seconds; run on a quiet machine and give
``uptime`` with the numbers.

``--lift`` raises the length limits of the checkout being measured first (to time an older
checkout past its limit: point ``PYTHONPATH`` at it).

    PYTHONPATH=.:tools python tools/bench_long_strings.py [--lengths 64,512,1000,4096,10000]
        [--force 2000] [--vocab deepseek-v4] [--object] [--lift]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench.real_tokenizer import RealTokenizer


def lift() -> None:
    import gramask.compiler.lexer as lx
    import gramask.frontends.json_schema_types as jt
    import gramask.frontends.json_strings as js

    jt.MAX_PLAIN_LENGTH = 10**6  # type: ignore[misc]
    js.MAX_STRING_STATES = 10**7  # type: ignore[misc]
    lx.MAX_LAZY_LEXER_STATES = 10**7  # type: ignore[misc]


def one(gm: Any, vocab: Any, tok: RealTokenizer, n: int, force: int, obj: bool
        ) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "maxLength": n}
    if obj:
        schema = {"type": "object", "properties": {"text": schema, "title": {"type": "string"}},
                  "required": ["text"]}
    w0, c0 = time.perf_counter(), time.process_time()
    cg = gm.compile(gm.Grammar.from_json_schema(schema), vocab, cache=False, progress=False)
    w1, c1 = time.perf_counter(), time.process_time()
    c = cg.constraint()
    c.allowed()
    w2, c2 = time.perf_counter(), time.process_time()
    rng = random.Random(n)
    k = min(n, force)
    s = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz ABC0123456789.,;-é你") for _ in range(k))
    text = json.dumps(s, ensure_ascii=False)[:-1]
    if obj:
        text = '{"text":' + text
    times = []
    c3 = time.process_time()
    for t in tok.encode(text):
        a = time.perf_counter()
        m = c.allowed()
        times.append(time.perf_counter() - a)
        assert m[t], (n, len(times))
        c.advance(t)
    a = time.perf_counter()
    m = c.allowed()
    times.append(time.perf_counter() - a)
    c4 = time.process_time()
    if k == n:  # nothing but the closing quote
        assert all(vocab.tokens[i].startswith(b'"') for i in np.flatnonzero(m)), n
    ms = sorted(1000 * x for x in times)
    out = {"N": n, "states": cg.dfa.num_states, "compile_s": round(w1 - w0, 2),
           "compile_cpu_s": round(c1 - c0, 2), "first_ms": round(1000 * (w2 - w1), 1),
           "first_cpu_ms": round(1000 * (c2 - c1), 1), "chars": k, "masks": len(ms),
           "p50_ms": round(statistics.median(ms), 2), "p90_ms": round(ms[int(0.9 * len(ms))], 2),
           "max_ms": round(ms[-1], 1), "masks_cpu_s": round(c4 - c3, 2)}
    del cg, c
    gc.collect()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lengths", default="64,512,1000,4096,10000")
    ap.add_argument("--force", type=int, default=2000)
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--object", action="store_true")
    ap.add_argument("--lift", action="store_true")
    args = ap.parse_args()
    if args.lift:
        lift()
    import gramask

    vocab = gramask.Vocabulary.bundled(args.vocab)
    tok = RealTokenizer(args.vocab)
    one(gramask, vocab, tok, 8, 8, args.object)  # (imports and the vocabulary's memos)
    for n in (int(x) for x in args.lengths.split(",")):
        print(json.dumps(one(gramask, vocab, tok, n, args.force, args.object)), flush=True)


if __name__ == "__main__":
    main()
