"""The request options shared by the engine integrations (gramask.integrations.options): what
is accepted, what is refused with which message, and how specs resolve to compiled grammars.
The engines themselves are exercised in tests_engines/ (their own venvs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gramask
from gramask.integrations.options import (
    GrammarResolver,
    RequestOptionsError,
    grammar_from_spec,
    parse_options,
    register_grammar_kind,
)

LARK = 'start: "[" NUM ("," NUM)* "]"\nNUM: /[0-9]+/\n'
TOKENS = [b"[", b"]", b",", b"1", b"23", b"[1", b"</s>"]


@pytest.fixture(scope="module")
def vocab() -> gramask.Vocabulary:
    return gramask.Vocabulary.from_tokens(TOKENS, eos_token_id=len(TOKENS) - 1)


@pytest.mark.parametrize(
    "raw",
    [
        {"grammar": "json"},
        {"grammar": "json", "prefix": "[1, ", "suffix": "]", "max_tokens": 8},
        {"grammar": LARK, "prefix": b"[1"},
        {"grammar": {"lark": LARK, "start": "start", "lexer": "basic"}},
        {"grammar": {"bundled": "json"}},
        json.dumps({"grammar": "json", "max_tokens": 3}),
    ],
)
def test_accepted(raw: object) -> None:
    opts = parse_options(raw)
    assert opts.key
    assert grammar_from_spec(opts.grammar) is not None


@pytest.mark.parametrize(
    "raw, message",
    [
        ("json", "expected a dict"),
        ({"prefix": "x"}, "'grammar' is required"),
        ({"grammar": "json", "sufix": ""}, "unknown key"),
        ({"grammar": "jsno"}, "not a bundled grammar"),
        ({"grammar": "missing.gmask"}, "no such file"),
        ({"grammar": ""}, "expected a bundled name"),
        ({"grammar": "json", "max_tokens": True}, "max_tokens"),
        ({"grammar": "json", "max_tokens": -2}, "max_tokens"),
        ({"grammar": "json", "prefix": 3}, "'prefix': expected a string"),
        ({"grammar": "json", "suffix": b"\xff"}, "UTF-8"),
        ({"grammar": {"lark": LARK, "json_schema": {}}}, "one of the keys"),
        ({"grammar": {"yaml": "x"}}, "one of the keys"),
        ({"grammar": {"lark": LARK, "start": 1}}, "'start' expects a string"),
        ('{"grammar": ', "not valid JSON"),
    ],
)
def test_refused_with_a_message_naming_the_option(raw: object, message: str) -> None:
    with pytest.raises(RequestOptionsError, match=message):
        parse_options(raw)


def test_equal_specs_equal_keys() -> None:
    a = parse_options({"grammar": {"lark": LARK}, "prefix": "[", "max_tokens": 4})
    b = parse_options({"grammar": {"lark": LARK}, "prefix": "[", "max_tokens": 4})
    c = parse_options({"grammar": {"lark": LARK}, "prefix": "[", "max_tokens": 5})
    assert a.constraint_key() == b.constraint_key() != c.constraint_key()
    assert parse_options({"grammar": "json"}).key != parse_options({"grammar": LARK}).key


def test_grammar_errors_surface_when_parsed() -> None:
    with pytest.raises(gramask.GrammarError, match="Unclosed parenthesis"):
        grammar_from_spec("start: (")


def test_resolver_compiles_once_and_builds_constraints(
        vocab: gramask.Vocabulary, tmp_path: Path) -> None:
    resolver = GrammarResolver(vocab, cache_dir=tmp_path)
    opts = parse_options({"grammar": LARK, "prefix": "[1", "max_tokens": 3})
    assert resolver.compiled(opts) is resolver.compiled(parse_options({"grammar": LARK}))
    c = resolver.constraint(opts)
    allowed = {TOKENS[i] for i in c.allowed().nonzero()[0]}
    assert b"]" in allowed and b"[" not in allowed
    with pytest.raises(gramask.InvalidPrefixError):
        resolver.constraint(parse_options({"grammar": LARK, "prefix": "]"}))


def test_resolver_per_request_grammars_lazy_and_bounded(
        vocab: gramask.Vocabulary, tmp_path: Path) -> None:
    """JSON Schema / regex / choices specs: compiled without the disk cache (rows walked as
    masks need them), and only the most recently used compiled grammars are kept."""
    resolver = GrammarResolver(vocab, cache_dir=tmp_path, max_grammars=2)
    specs = [{"regex": "[0-9]+"}, {"choices": ["1", "12"]}, {"json_schema": {"type": "integer"}}]
    first = resolver.compiled(parse_options({"grammar": specs[0]}))
    assert not any(tmp_path.iterdir())  # nothing written for a per-request grammar
    c = first.constraint(prefix="1")
    allowed = {TOKENS[i] for i in c.allowed().nonzero()[0]}
    assert {b"1", b"23", b"</s>"} <= allowed and b"[" not in allowed
    for spec in specs[1:]:
        resolver.compiled(parse_options({"grammar": spec}))
    assert len(resolver._compiled) == 2  # the oldest was dropped
    assert resolver.compiled(parse_options({"grammar": specs[0]})) is not first


def test_artifact_path_and_vocabulary_check(vocab: gramask.Vocabulary, tmp_path: Path) -> None:
    compiled = gramask.compile(gramask.Grammar.from_lark(LARK), vocab, cache_dir=tmp_path)
    path = tmp_path / "nums.gmask"
    compiled.save(path)
    opts = parse_options({"grammar": str(path)})
    assert grammar_from_spec(opts.grammar) is None  # an artifact is loaded, not parsed
    c = GrammarResolver(vocab).constraint(opts)
    assert c.allowed()[TOKENS.index(b"[")]
    other = gramask.Vocabulary.from_tokens([*TOKENS[:-1], b"4", b"</s>"], eos_token_id=len(TOKENS))
    with pytest.raises(RequestOptionsError, match="another vocabulary"):
        GrammarResolver(other).compiled(opts)


def test_new_kinds_plug_in() -> None:
    register_grammar_kind("numbers_list", lambda value, extra: gramask.Grammar.from_lark(LARK))
    try:
        opts = parse_options({"grammar": {"numbers_list": None}})
        assert grammar_from_spec(opts.grammar) is not None
    finally:
        from gramask.integrations import options

        del options.GRAMMAR_KINDS["numbers_list"]
    with pytest.raises(ValueError, match="reserved"):
        register_grammar_kind("artifact", lambda value, extra: gramask.Grammar.from_lark(LARK))


def test_engine_modules_need_their_engine() -> None:
    """Without vLLM/SGLang installed the modules say what to install (the main venv has
    neither; the engine venvs run tests_engines/)."""
    pytest.importorskip("torch")
    for name, hint in (("vllm", "pip install vllm"), ("sglang", "pip install sglang")):
        try:
            __import__(name)
        except ImportError:
            with pytest.raises(ImportError, match=hint):
                __import__(f"gramask.integrations.{name}")
