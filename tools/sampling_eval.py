"""How far each sampler's output is from the model's distribution under the grammar.

For small problems whose exact constrained distribution is known by enumeration
(:func:`gramask.sampling.exact_distribution`), draw ``--samples`` sequences with each sampler
and report the KL divergence of the empirical distribution from the exact one (the measure of
"AdapTrack: Constrained Decoding without Distorting LLM's Output Intent", Yongmin Li, Ge Li,
Jia Li, Zhi Jin), the LM calls per sample (their table 5), and backtracks per sample.

Even an exact sampler has a positive empirical KL: about ``(K - 1) / (2 n)`` for ``K``
outcomes and ``n`` samples (printed as the noise floor); the checked baseline (sample freely,
reject what the grammar refuses) is exact and shows it in practice.

Problems:

* ``binary``: a model uniform over 5 bits; the grammar allows 00000 and 1xxxx (17 strings).
* ``binary-eos``: the same grammar, with a model uniform over {0, 1, EOS} at every step (it
  may stop early: the mass the grammar refuses is also behind EOS). The exact answer is still
  1/17 per string; AdapTrack learns that only as its tree explores the EOS branches.
* ``list``: ``[`` up to three numbers in {0, 1, 10} ``]`` over a 9-token vocabulary with
  merged tokens (``[1``, ``1]``); the model's logits are normal(0, 1), seeded by the prefix.

    python tools/sampling_eval.py                # both problems, 1000 samples each
    python tools/sampling_eval.py --samples 300 --problem list --no-checked
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gramask
from gramask.sampling import (
    AdapTrackSampler,
    CheckedSampler,
    ConstrainedSampler,
    exact_distribution,
    kl_divergence,
)

BINARY = """
start: "0" "0" "0" "0" "0" | "1" bit bit bit bit
bit: "0" | "1"
"""
LIST = """
start: "[" (num ("," num)~0..2)? "]"
num: "0" | "1" | "10"
"""
LIST_TOKENS = [b"[", b"]", b",", b"0", b"1", b"10", b"[1", b"1]", b"</s>"]


def five_bits(ids: list[int]) -> np.ndarray:
    return np.array([0.0, 0.0, -np.inf] if len(ids) < 5 else [-np.inf, -np.inf, 0.0])


def three_way(ids: list[int]) -> np.ndarray:
    return np.zeros(3)


def hashed_lm(ids: list[int]) -> np.ndarray:
    rng = np.random.default_rng(zlib.crc32(np.asarray(ids, dtype=np.int64).tobytes()))
    return rng.normal(0.0, 1.0, len(LIST_TOKENS))


def problem(name: str) -> tuple[gramask.CompiledGrammar, Callable[[list[int]], Any], int]:
    if name in ("binary", "binary-eos"):
        vocab = gramask.Vocabulary.from_tokens([b"0", b"1", b"</s>"], eos_token_id=2)
        text, lm, limit = BINARY, (five_bits if name == "binary" else three_way), 8
    else:
        vocab = gramask.Vocabulary.from_tokens(LIST_TOKENS, eos_token_id=len(LIST_TOKENS) - 1)
        text, lm, limit = LIST, hashed_lm, 12
    cg = gramask.compile(gramask.Grammar.from_lark(text), vocab, progress=False)
    return cg, lm, limit


def run(name: str, n: int, checked: bool, seed: int) -> list[dict[str, Any]]:
    cg, lm, limit = problem(name)
    exact = exact_distribution(lm, cg.constraint(), max_new_tokens=limit)
    methods: list[tuple[str, Any, bool]] = [
        ("constrained", ConstrainedSampler(lm, cg.constraint(), seed=seed), False),
        ("adaptrack (tree kept)", AdapTrackSampler(lm, cg.constraint(), seed=seed), False),
        ("adaptrack (fresh tree)", AdapTrackSampler(lm, cg.constraint(), seed=seed), True),
        # tree kept, no voluntary backtracking: the estimates alone, learnt across samples as
        # ASAp does ("Grammar-Aligned Decoding", Kanghee Park, Jiayu Wang, Taylor
        # Berg-Kirkpatrick, Nadia Polikarpova, Loris D'Antoni)
        ("asap-like (tree, no backtr.)",
         AdapTrackSampler(lm, cg.constraint(), seed=seed, min_backtrack_prob=1 - 1e-12), False),
        ("adaptrack fresh, dist<=2",
         AdapTrackSampler(lm, cg.constraint(), seed=seed, max_backtrack=2), True),
    ]
    if checked:
        methods.append(("checked unconstrained", CheckedSampler(lm, cg.constraint(), seed=seed),
                        False))
    rows = []
    for label, sampler, fresh in methods:
        t0 = time.perf_counter()
        samples, calls = [], []
        for _ in range(n):
            if fresh:
                sampler.reset()
            before = sampler.lm_calls
            samples.append(sampler.sample(max_new_tokens=limit))
            calls.append(sampler.lm_calls - before)
        rows.append({
            "problem": name,
            "method": label,
            "kl": kl_divergence(samples, exact),
            "calls_mean": float(np.mean(calls)),
            "calls_max": int(np.max(calls)),
            "backtracks": getattr(sampler, "backtracks", 0) / n,
            "seconds": time.perf_counter() - t0,
            "outcomes": len(exact),
            "zeros": sum(tuple(x) == (0, 0, 0, 0, 0) for x in samples) / n,
        })
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--problem", choices=["binary", "binary-eos", "list", "all"],
                    default="all")
    ap.add_argument("--no-checked", action="store_true", help="skip the (slow) exact baseline")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    names = ["binary", "binary-eos", "list"] if args.problem == "all" else [args.problem]
    print(f"{args.samples} samples per method; KL in nats; calls = LM calls per sample")
    print(f"{'problem':8} {'method':28} {'KL':>8} {'floor':>7} {'calls':>8} {'max':>6} "
          f"{'backtr.':>8} {'s':>6}  (binary: frequency of 00000, exact 1/17 = 0.0588)")
    for name in names:
        for r in run(name, args.samples, not args.no_checked, args.seed):
            floor = (r["outcomes"] - 1) / (2 * args.samples)
            print(f"{r['problem']:8} {r['method']:28} {r['kl']:8.4f} {floor:7.4f} "
                  f"{r['calls_mean']:8.2f} {r['calls_max']:6d} {r['backtracks']:8.2f} "
                  f"{r['seconds']:6.1f}"
                  + (f"  {r['zeros']:.4f}" if name.startswith("binary") else ""))


if __name__ == "__main__":
    main()
