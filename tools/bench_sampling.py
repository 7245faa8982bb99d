"""Batched masking and sampling step times on the CPU (not a test; keep runs short).

Part 1, masks for a batch (default 64 x 151936, Qwen2-sized), in milliseconds:

* fill: ``fill_next_token_bitmask`` packing precomputed bool masks on the host (the cost of
  computing them, ``Constraint.allowed()``, is the runtime's and is timed in bench_runtime);
* apply: ``gramask.torch.apply_token_bitmask_inplace`` against, in the same run, XGrammar's
  ``apply_token_bitmask_inplace`` on the same int32 bitmask, a plain ``logits.masked_fill_``
  with a ready bool mask, and the same with the int32 -> bool expansion included.

Part 2, sampling with a 1-layer random GPT-2 at a real vocabulary size on the JSON grammar:
milliseconds per generated token and per LM call for ``ConstrainedSampler`` and
``AdapTrackSampler`` (one sequence; AdapTrack with a fresh tree for each sample, so nothing is
amortised across samples), and per sequence-step for ``sample_batch`` (a batch of ``--seqs``).
The constraint's memo tables are warmed first by a few untimed samples.

    PYTHONPATH=. python tools/bench_sampling.py
    PYTHONPATH=. python tools/bench_sampling.py --threads 2 --vocab-name qwen2 --samples 5
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
    unpack_bitmask_numpy,
)


class _Fixed:
    def __init__(self, mask: np.ndarray) -> None:
        self.mask = mask

    def allowed(self) -> np.ndarray:
        return self.mask


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    fn()
    wall = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
    return min(wall), statistics.median(wall)


def _row(label: str, t: tuple[float, float]) -> None:
    print(f"  {label:52s} {t[0]:9.3f} {t[1]:9.3f}")


def masks(batch: int, vocab: int, repeat: int) -> None:
    rng = np.random.default_rng(0)
    allowed = rng.random((batch, vocab)) < 0.3
    fakes = [_Fixed(allowed[i]) for i in range(batch)]
    bitmask = allocate_token_bitmask(batch, vocab)
    fill_next_token_bitmask(fakes, bitmask)
    logits = torch.randn(batch, vocab)
    disallowed = torch.from_numpy(~allowed)
    assert np.array_equal(unpack_bitmask_numpy(bitmask, vocab), allowed)

    print(f"masks: batch={batch} vocab={vocab} torch threads={torch.get_num_threads()}")
    print(f"  {'(milliseconds)':52s} {'min':>9s} {'median':>9s}")
    _row("fill (host: pack + write)", _time(lambda: fill_next_token_bitmask(fakes, bitmask),
                                            repeat))
    # Masking is idempotent, so re-applying to the same logits costs the same each time.
    w = logits.clone()
    _row("apply gramask (int32 bitmask, in place)",
         _time(lambda: apply_token_bitmask_inplace(w, bitmask), repeat))
    try:
        import xgrammar

        w2 = logits.clone()
        _row("apply xgrammar (int32 bitmask, in place)",
             _time(lambda: xgrammar.apply_token_bitmask_inplace(w2, bitmask), repeat))
        assert torch.equal(w, w2)
    except ImportError:
        print("  (xgrammar not installed)")
    w3 = logits.clone()
    _row("masked_fill_ (bool mask given)",
         _time(lambda: w3.masked_fill_(disallowed, float("-inf")), repeat))
    assert torch.equal(w, w3)
    shifts = torch.arange(32, dtype=torch.int32)
    w4 = logits.clone()

    def expand_then_fill() -> None:
        bits = (bitmask.unsqueeze(-1) >> shifts) & 1
        w4.masked_fill_((bits == 0).view(batch, -1)[:, :vocab], float("-inf"))

    _row("masked_fill_ (int32 -> bool expansion included)", _time(expand_then_fill, repeat))
    assert torch.equal(w, w4)


def sampling(vocab_name: str, samples: int, seqs: int, new_tokens: int) -> None:
    import os

    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import GPT2Config, GPT2LMHeadModel

    import gramask
    from gramask.sampling import AdapTrackSampler, ConstrainedSampler, sample_batch

    vocab = gramask.Vocabulary.bundled(vocab_name)
    cg = gramask.compile(gramask.grammars.load("json"), vocab, progress=False)
    eos = vocab.eos_token_id
    v = len(vocab)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(
        n_layer=1, n_head=2, n_embd=32, n_positions=512, vocab_size=v, bos_token_id=eos,
        eos_token_id=eos)).eval()
    # bias the output towards JSON punctuation and EOS so short documents end
    head = torch.nn.Linear(32, v, bias=True)
    with torch.no_grad():
        head.weight.copy_(model.transformer.wte.weight)
        head.bias.zero_()
        for t in ["{", "}", "[", "]", ",", ":", "1", "0", " true", " null", "true"]:
            i = vocab.token_id(t)
            if i is not None:
                head.bias[i] = 8.0
        head.bias[eos] = 9.0
    model.lm_head = head

    print(f"\nsampling: random 1-layer GPT-2, vocab {vocab_name} ({v}), JSON grammar, "
          f"torch threads={torch.get_num_threads()}")
    prefix = '{"items": ['
    # warm the constraint memo tables (shared by every constraint of the grammar) untimed
    warm = ConstrainedSampler(model, cg.constraint(prefix=prefix), seed=99)
    for _ in range(3):
        warm.sample(max_new_tokens=new_tokens)
    for label, sampler in (
        ("constrained", ConstrainedSampler(model, cg.constraint(prefix=prefix), seed=0)),
        ("adaptrack", AdapTrackSampler(model, cg.constraint(prefix=prefix), seed=0,
                                       max_lm_calls=5000)),
    ):
        tokens, t0, calls0 = 0, time.perf_counter(), sampler.lm_calls
        for _ in range(samples):
            if isinstance(sampler, AdapTrackSampler):
                sampler.reset()  # a fresh tree per sample: the cost of one sample alone
            tokens += len(sampler.sample(max_new_tokens=new_tokens)) + sampler.last_ended
        dt = (time.perf_counter() - t0) * 1e3
        calls = sampler.lm_calls - calls0
        extra = f", backtracks {sampler.backtracks}" if hasattr(sampler, "backtracks") else ""
        print(f"  {label:12s} {dt / tokens:7.2f} ms/token, {dt / max(calls, 1):7.2f} ms/LM call,"
              f" {calls / samples:6.1f} LM calls/sample, {tokens / samples:5.1f} tokens/sample (EOS"
              f" counted)"
              f"{extra}")
    cs = [cg.constraint(prefix=prefix) for _ in range(seqs)]
    t0 = time.perf_counter()
    out = sample_batch(model, cs, None, max_new_tokens=new_tokens, seed=0)
    dt = (time.perf_counter() - t0) * 1e3
    steps = max(len(o) for o in out) + 1
    print(f"  sample_batch x{seqs}: {dt / steps:7.2f} ms/step, {dt / steps / seqs:7.2f} "
          f"ms/step/sequence ({steps} steps)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--vocab-name", default="gpt2", help="bundled vocabulary for part 2")
    ap.add_argument("--samples", type=int, default=10, help="part 2: samples per sampler")
    ap.add_argument("--seqs", type=int, default=16, help="part 2: sample_batch batch size")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--skip-sampling", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    masks(args.batch, args.vocab, args.repeat)
    if not args.skip_sampling:
        sampling(args.vocab_name, args.samples, args.seqs, args.new_tokens)


if __name__ == "__main__":
    main()
