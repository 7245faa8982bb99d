"""Long counted repeats of Unicode classes (``\\w{1,64}``, ``\\d{1,300}``): compile time, time
to the first mask, per-mask p50 / p99 along a random walk, lexer states and peak memory,
per pattern in a process of its own (``ru_maxrss`` over the vocabulary's, so the memory is
the pattern's). Each walk's text is checked with ``re.fullmatch`` when it completes.

    python tools/bench_regex_repeats.py [--vocab deepseek-v4] [--eager] [--steps 200] [PATTERN ...]

``--eager``: compile through a fresh on-disk cache instead (every table row walked, what
``gramask.compile(..., cache=True)`` does on a miss), not the lazy ``cache=False`` compile.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

PATTERNS = [r"\w{1,64}", r"\d{1,300}", r'[^"]{1,256}', r".{0,100}"]


def one(pattern: str, vocab_name: str, eager: bool, steps: int) -> dict[str, object]:
    import gramask as gm

    vocab = gm.Vocabulary.bundled(vocab_name)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    try:
        g = gm.Grammar.from_regex(pattern)
        with tempfile.TemporaryDirectory() as tmp:
            cg = gm.compile(g, vocab, cache=eager, cache_dir=tmp, progress=False)
    except gm.GrammarError as e:
        return {"pattern": pattern, "refused": str(e)[:160],
                "seconds": round(time.perf_counter() - t0, 2)}
    t1 = time.perf_counter()
    c = cg.constraint()
    m = c.allowed()
    t2 = time.perf_counter()
    rnd = random.Random(0)
    eos = vocab.eos_token_id
    times: list[float] = []
    walks = checked = 0
    while len(times) < steps and walks < 100:  # walks from the start until enough masks
        if walks:
            c = cg.constraint()
            m = c.allowed()
        walks += 1
        while len(times) < steps:
            ids = np.flatnonzero(m)
            ids = ids[ids != eos] if eos is not None else ids
            if not len(ids):
                break
            c.advance(int(rnd.choice(ids.tolist())))
            t = time.perf_counter()
            m = c.allowed()
            times.append(time.perf_counter() - t)
        if c.is_complete():
            if not re.fullmatch(pattern, c.data.decode("utf-8")):
                raise AssertionError(f"{pattern!r}: a complete walk spelled {c.data!r}")
            checked += 1
    return {
        "pattern": pattern,
        "lexer_states": cg.dfa.num_states,
        "compile_s": round(t1 - t0, 3),
        "first_mask_s": round(t2 - t1, 3),
        "mask_p50_ms": round(float(np.percentile(times, 50)) * 1e3, 2) if times else None,
        "mask_p99_ms": round(float(np.percentile(times, 99)) * 1e3, 2) if times else None,
        "masks": len(times),
        "walks": walks,
        "complete_walks_checked_by_re": checked,
        "peak_mb_over_vocab": round(
            (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("patterns", nargs="*", default=PATTERNS)
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the child
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.patterns[0], args.vocab, args.eager, args.steps)))
        return 0
    for p in args.patterns:
        cmd = [sys.executable, __file__, "--one", "--vocab", args.vocab, "--steps",
               str(args.steps), *(["--eager"] if args.eager else []), "--", p]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        print(out.stdout.strip() or out.stderr.strip()[-400:], flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
