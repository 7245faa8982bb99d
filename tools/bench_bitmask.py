"""Time gramask.torch's bitmask fill and apply on the CPU or a CUDA device.

    PYTHONPATH=. python tools/bench_bitmask.py                  # 64 x 151936 (Qwen2-sized)
    PYTHONPATH=. python tools/bench_bitmask.py --batch 8 --vocab 50257 --threads 1
    PYTHONPATH=. python tools/bench_bitmask.py --real qwen2     # real Constraints (JSON grammar)
    PYTHONPATH=. python tools/bench_bitmask.py --device cuda    # bitmask and logits on the GPU

Beside gramask's apply, in the same run: ``masked_fill_`` with a boolean mask already unpacked
on the device (the floor a plain torch user pays, the unpacking not counted) and XGrammar's
``apply_token_bitmask_inplace`` (its CUDA or Triton kernel on a GPU, its CPU kernel otherwise)
where the ``xgrammar`` package is installed.

``fill`` excludes the cost of computing masks: the stand-in constraints return precomputed
arrays (``--real`` times real ``Constraint.allowed()`` calls separately). Reports, in
milliseconds, the minimum and median wall time of ``--repeat`` runs and the minimum CPU time
of the process (``time.process_time``), which is the fairer number on a shared, loaded machine.
On a CUDA device each timed call ends with ``torch.cuda.synchronize()``, so the wall times
include the kernels and the host-to-device copy of the packed rows.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch

import gramask.torch as gt
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


def _time(fn: Callable[[], object], repeat: int, device: str = "cpu") -> tuple[float, float, float]:
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    fn()  # warm up
    sync()
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        sync()
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
    ap.add_argument("--device", default="cpu", help="where the bitmask and the logits live")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    rng = np.random.default_rng(0)
    b, v = args.batch, args.vocab
    fakes = [_Fixed(rng.random(v) < args.density) for _ in range(b)]
    dev = args.device
    bitmask = allocate_token_bitmask(b, v, device=dev)
    work = torch.randn(b, v).to(dev)

    print(f"batch={b} vocab={v} device={dev} torch threads={torch.get_num_threads()}")
    print(f"  {'(milliseconds)':44s} {'wall min':>8s} {'wall med':>8s} {'cpu min':>8s}")
    _row(f"fill (pack + write, {dev} bitmask)",
         _time(lambda: fill_next_token_bitmask(fakes, bitmask), args.repeat, dev))
    half = list(range(0, b, 2))
    _row("fill (every other row, indices)",
         _time(lambda: fill_next_token_bitmask(fakes[: len(half)], bitmask, indices=half),
               args.repeat, dev))
    # Masking is idempotent and branch-free, so re-applying to the same logits costs the same.
    _row("apply (in place)", _time(lambda: apply_token_bitmask_inplace(work, bitmask),
                                   args.repeat, dev))
    _row("apply (every other row, indices)",
         _time(lambda: apply_token_bitmask_inplace(work, bitmask, indices=half), args.repeat, dev))
    for dtype in (torch.bfloat16, torch.float16):
        low = work.to(dtype)
        _row(f"apply (in place, {str(dtype)[6:]})",
             _time(lambda low=low: apply_token_bitmask_inplace(low, bitmask), args.repeat, dev))
    chosen = gt._byte_masks
    byte_masks = chosen(work.device)  # time the other path too
    gt._byte_masks = lambda device: not byte_masks  # type: ignore[assignment]
    try:
        _row(f"apply (in place, the {'shift' if byte_masks else 'byte-mask'} path)",
             _time(lambda: apply_token_bitmask_inplace(work, bitmask), args.repeat, dev))
    finally:
        gt._byte_masks = chosen  # type: ignore[assignment]
    refused = torch.from_numpy(~np.stack([f.mask for f in fakes])).to(dev)
    _row("baseline: masked_fill_ (bool mask on device)",
         _time(lambda: work.masked_fill_(refused, float("-inf")), args.repeat, dev))
    try:
        import xgrammar as xgr
    except ImportError:
        print("  (xgrammar not installed: its apply not timed)")
    else:
        try:
            _row("baseline: xgrammar apply_token_bitmask_inplace",
                 _time(lambda: xgr.apply_token_bitmask_inplace(work, bitmask), args.repeat, dev))
            _row("baseline: xgrammar apply (every other row)",
                 _time(lambda: xgr.apply_token_bitmask_inplace(work, bitmask, indices=half),
                       args.repeat, dev))
        except Exception as e:  # its kernels need a matching build; report, do not stop
            print(f"  (xgrammar apply failed: {type(e).__name__}: {e})")

    if args.real:
        import gramask

        vocab = gramask.Vocabulary.bundled(args.real)
        compiled = gramask.compile(gramask.grammars.load("json"), vocab)
        prefixes = ["", '{"a": [1, "x', "[tr", '{"key": 12.5e']
        cs = [compiled.constraint(prefix=prefixes[i % len(prefixes)]) for i in range(b)]
        real_bm = allocate_token_bitmask(b, len(vocab), device=dev)
        _row(f"allowed() x {b} ({args.real}, JSON grammar)",
             _time(lambda: [c.allowed() for c in cs], args.repeat))
        _row("fill with those constraints (incl. allowed())",
             _time(lambda: fill_next_token_bitmask(cs, real_bm), args.repeat, dev))


if __name__ == "__main__":
    main()
