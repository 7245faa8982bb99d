"""Fill-in-the-middle cost on the running interpreter's standard library: setup per request
by suffix length, and per-token mask time while forcing the true middle.

    python tools/bench_fim_setup.py [--vocab gpt2] [--files 6] [--seed 0]

Each (file, suffix length) pair uses a different file, so no request reuses another's memo
of the same text (the compiled grammar is shared, as in a server). Cut points are random;
the middle is the 100 bytes before the suffix. Prints one table; no assertions.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import statistics
import time

import gramask

SIZES = (512, 2048, 10240, 51200)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--files", type=int, default=6, help="files per suffix length")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    vocab = gramask.Vocabulary.bundled(args.vocab)
    cg = gramask.compile(gramask.grammars.load("python"), vocab, progress=False)
    tok = _tokenizer(vocab)
    cg.constraint(prefix="x = ", suffix="1\n")  # builds the per-grammar reversed automaton
    libdir = os.path.dirname(os.__file__)
    big = []
    for name in sorted(os.listdir(libdir)):
        if name.endswith(".py"):
            with open(os.path.join(libdir, name), encoding="utf-8") as f:
                src = f.read()
            if len(src) > 60_000 and src.isascii():
                try:
                    ast.parse(src)
                    cg.constraint(prefix=src)  # the grammar accepts it
                except (SyntaxError, gramask.InvalidPrefixError):
                    continue
                big.append((name, src))
    rng = random.Random(args.seed)
    rng.shuffle(big)
    print(f"{len(big)} stdlib files over 60 KB; {args.files} per suffix length")
    print(f"{'suffix':>8} {'setup p50':>10} {'setup max':>10} {'ms/KB':>7} "
          f"{'tok p50':>8} {'tok p99':>8} {'tok max':>8}")
    k = 0
    for size in SIZES:
        setups, steps = [], []
        for _ in range(args.files):
            name, src = big[k % len(big)]
            k += 1
            cut = len(src) - size
            a = max(0, cut - 100)
            p, m, s = src[:a], src[a:cut], src[cut:]
            t0 = time.perf_counter()
            c = cg.constraint(prefix=p, suffix=s)
            setups.append(time.perf_counter() - t0)
            for t in tok(m):
                t1 = time.perf_counter()
                c.allowed()
                steps.append(time.perf_counter() - t1)
                c.advance(t)
            assert c.is_complete(), name
        steps.sort()
        p50 = statistics.median(setups)
        print(f"{size // 1024 if size >= 1024 else size / 1024:>6}KB {p50 * 1e3:>8.1f}ms "
              f"{max(setups) * 1e3:>8.1f}ms {p50 * 1e3 / (size / 1024):>7.1f} "
              f"{steps[len(steps) // 2] * 1e3:>6.2f}ms {steps[int(len(steps) * .99)] * 1e3:>6.2f}ms "
              f"{steps[-1] * 1e3:>6.1f}ms")


def _tokenizer(vocab: gramask.Vocabulary):
    """Greedy longest-match over the vocabulary's bytes (enough to force a known text)."""
    by = {vocab.token_bytes(i): i for i in range(len(vocab)) if not vocab.is_special(i)}
    longest = max(len(b) for b in by)

    def enc(text: str) -> list[int]:
        data, out, i = text.encode(), [], 0
        while i < len(data):
            for n in range(min(longest, len(data) - i), 0, -1):
                t = by.get(data[i : i + n])
                if t is not None:
                    out.append(t)
                    i += n
                    break
            else:
                raise ValueError(f"no token for byte {data[i]}")
        return out

    return enc


if __name__ == "__main__":
    main()
