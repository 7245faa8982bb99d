"""Time gramask.torch's bitmask fill and apply on the CPU.

    PYTHONPATH=. python tools/bench_bitmask.py                  # 64 x 151936 (Qwen2-sized)
    PYTHONPATH=. python tools/bench_bitmask.py --batch 8 --vocab 50257 --threads 1
    PYTHONPATH=. python tools/bench_bitmask.py --real qwen2     # real Constraints (JSON grammar)

``fill`` excludes the cost of computing masks: the stand-in constraints return precomputed
arrays (``--real`` times real ``Constraint.allowed()`` calls separately). Reports, in
milliseconds, the minimum and median wall time of ``--repeat`` runs and the minimum CPU time
of the process (``time.process_time``), which is the fairer number on a shared, loaded machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

from gramask.torch import (
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    fill_next_token_bitmask,
)


class _Fixed:
    """Stands in for a Constraint whose mask is already computed."""

    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask

    def allowed(self) -> np.ndarray:
        return self.mask


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    fn()  # warm up
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    return min(wall), statistics.median(wall), min(cpu)


def _row(label: str, t: tuple[float, float, float]) -> None:
    print(f"  {label:44s} {t[0]:8.3f} {t[1]:8.3f} {t[2]:8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--density", type=float, default=0.3, help="fraction of allowed tokens")
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--real", metavar="VOCAB", help="also time real JSON constraints on VOCAB")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rng = np.random.default_rng(0)
    b, v = args.batch, args.vocab
    fakes = [_Fixed(rng.random(v) < args.density) for _ in range(b)]
    bitmask = allocate_token_bitmask(b, v)
    logits = torch.randn(b, v)
    work = logits.clone()

    print(f"batch={b} vocab={v} torch threads={torch.get_num_threads()}")
    print(f"  {'(milliseconds)':44s} {'wall min':>8s} {'wall med':>8s} {'cpu min':>8s}")
    _row("fill (pack + write, CPU bitmask)", _time(lambda: fill_next_token_bitmask(fakes, bitmask),
                                                    args.repeat))
    half = list(range(0, b, 2))
    _row("fill (every other row, indices)",
         _time(lambda: fill_next_token_bitmask(fakes[: len(half)], bitmask, indices=half),
               args.repeat))
    # Masking is idempotent and branch-free, so re-applying to the same logits costs the same.
    _row("apply (in place)", _time(lambda: apply_token_bitmask_inplace(work, bitmask),
                                   args.repeat))
    _row("apply (every other row, indices)",
         _time(lambda: apply_token_bitmask_inplace(work, bitmask, indices=half), args.repeat))

    if args.real:
        import gramask

        vocab = gramask.Vocabulary.bundled(args.real)
        compiled = gramask.compile(gramask.grammars.load("json"), vocab)
        prefixes = ["", '{"a": [1, "x', "[tr", '{"key": 12.5e']
        cs = [compiled.constraint(prefix=prefixes[i % len(prefixes)]) for i in range(b)]
        real_bm = allocate_token_bitmask(b, len(vocab))
        _row(f"allowed() x {b} ({args.real}, JSON grammar)",
             _time(lambda: [c.allowed() for c in cs], args.repeat))
        _row("fill with those constraints (incl. allowed())",
             _time(lambda: fill_next_token_bitmask(cs, real_bm), args.repeat))


if __name__ == "__main__":
    main()
