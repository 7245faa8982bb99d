"""Hostile fill-in-the-middle and budget inputs (issue 20): the same argument checks on every
path, and setup bounded by named :class:`~gramask.RuntimeLimits` checked before the work."""

from __future__ import annotations

import dataclasses
import json

import pytest

import gramask
from gramask.grammar import Grammar

from ._support import PARENS, PARENS_TOKENS, compiled, tiny

JSON_TOKENS = ["[", "]", "{", "}", ",", ":", " ", "1", "12", '"k"', '"', "k", "true", "null"]


@pytest.fixture(scope="module")
def parens() -> gramask.CompiledGrammar:
    return tiny(PARENS, PARENS_TOKENS)[0]  # basic lexer mode


@pytest.fixture(scope="module")
def json_contextual() -> gramask.CompiledGrammar:
    vocab = gramask.Vocabulary.from_tokens([*JSON_TOKENS, "</s>"], eos_token_id=len(JSON_TOKENS))
    g = gramask.grammars.load("json", lexer="contextual")
    return gramask.compile(g, vocab, cache=False, progress=False)


# every path that takes a prefix / suffix / budget: (name, kwargs that make it that path)
PATHS = {
    "prefix-only": {},
    "budget": {"max_tokens": 30},
    "fim": {"suffix": ")"},
    "fim+budget": {"suffix": ")", "max_tokens": 30},
}


def _paths(parens, json_contextual):
    for name, kw in PATHS.items():
        yield name, parens, "(", kw
    yield "contextual", json_contextual, "[", {}
    yield "contextual budget", json_contextual, "[", {"max_tokens": 30}
    yield "contextual fim", json_contextual, "[", {"suffix": "]"}


# ------------------------------------------------------------------------ argument types
@pytest.mark.parametrize("bad", [10**8, [49, 93], 1.5, object()])
def test_a_suffix_that_is_not_text_is_a_type_error(parens, json_contextual, bad):
    """Before, ``suffix=10**8`` was read as 10**8 NUL bytes and ``[49, 93]`` as ``b"1]"``."""
    for name, cg, prefix, kw in _paths(parens, json_contextual):
        kw = {**kw, "suffix": bad}
        with pytest.raises(TypeError, match="a suffix must be str or bytes, not"):
            cg.constraint(prefix, **kw)
            pytest.fail(name)


@pytest.mark.parametrize("bad", [5, None, [40]])
def test_a_prefix_that_is_not_text_is_a_type_error_with_or_without_a_suffix(
        parens, json_contextual, bad):
    """Before, ``prefix=5`` with a suffix was five NUL bytes (an InvalidPrefixError)."""
    for _name, cg, _prefix, kw in _paths(parens, json_contextual):
        with pytest.raises(TypeError, match="a prefix must be str or bytes, not"):
            cg.constraint(bad, **kw)


def test_lone_surrogates_are_invalid_text_at_their_offset(parens, json_contextual):
    for name, cg, prefix, kw in _paths(parens, json_contextual):
        with pytest.raises(gramask.InvalidPrefixError, match="surrogates") as e:
            cg.constraint(prefix + "a\ud800", **kw)
        assert e.value.position == len(prefix) + 1, name
        assert not isinstance(e.value, gramask.InvalidSuffixError)
        if "suffix" in kw:
            with pytest.raises(gramask.InvalidSuffixError, match="surrogates") as e2:
                cg.constraint(prefix, **{**kw, "suffix": "é\udc80" + kw["suffix"]})
            assert e2.value.position == 2, name  # "é" is two bytes


@pytest.mark.parametrize(("bad", "error"), [(-1, ValueError), (True, TypeError),
                                            ("5", TypeError), (2.0, TypeError)])
def test_max_tokens_types_are_the_documented_builtins(parens, json_contextual, bad, error):
    for name, cg, prefix, kw in _paths(parens, json_contextual):
        if name == "contextual fim":
            continue  # budgets with a suffix are not built for the contextual mode yet
        with pytest.raises(error, match="max_tokens must be"):
            cg.constraint(prefix, **{**kw, "max_tokens": bad})


def test_limits_must_be_runtime_limits(parens):
    with pytest.raises(TypeError, match=r"limits must be a gramask\.RuntimeLimits"):
        parens.constraint("(", limits={"max_suffix_bytes": 5})  # type: ignore[arg-type]


def test_bytes_and_str_are_the_same_request(parens, json_contextual):
    for _name, cg, prefix, kw in _paths(parens, json_contextual):
        a = cg.constraint(prefix, **kw).allowed()
        kwb = {**kw, **({"suffix": kw["suffix"].encode()} if "suffix" in kw else {})}
        b = cg.constraint(bytearray(prefix.encode()), **kwb).allowed()
        assert (a == b).all()


# --------------------------------------------------------------------------- suffix size
def test_an_oversized_suffix_fails_before_any_work(parens, json_contextual):
    """Issue 20: a valid 10 MB suffix used to cost 52 s and 4.9 GB (Python) or end in a
    MemoryError at 5.6 GB (contextual JSON) before any message."""
    small = gramask.RuntimeLimits(max_suffix_bytes=1000)
    for cg, prefix, suffix in ((parens, "(", " a" * 600 + ")"),
                               (json_contextual, "[", ", 1" * 400 + "]")):
        with pytest.raises(gramask.LimitExceededError,
                           match=r"the suffix is 1,20\d bytes, over RuntimeLimits\."
                                 r"max_suffix_bytes=1,000: pass limits=gramask\.RuntimeLimits\("
                                 r"max_suffix_bytes=120\d\)") as e:
            cg.constraint(prefix, suffix, limits=small)
        assert e.value.limit == "max_suffix_bytes" and e.value.value == len(suffix)
        # the message's advice works
        ok = gramask.RuntimeLimits(max_suffix_bytes=e.value.value)
        assert cg.constraint(prefix, suffix, limits=ok).allowed().any()


def test_default_suffix_limit_refuses_a_ten_megabyte_json_suffix(json_contextual):
    suffix = ', {"k": 12}' * 1_000_000 + "]"  # 11 MB, valid after the prefix "["
    with pytest.raises(gramask.LimitExceededError, match="max_suffix_bytes=262,144"):
        json_contextual.constraint("[", suffix, limits=gramask.RuntimeLimits())


def test_a_suffix_under_the_limit_is_served(json_contextual):
    """A valid 100 KB suffix: the middle may close the array's first element and go on."""
    suffix = ", 12" * 25_000 + "]"
    c = json_contextual.constraint("[1", suffix, limits=gramask.RuntimeLimits())
    twelve = json_contextual.vocab.token_id("12")
    assert twelve is not None and c.allowed()[twelve]
    c.advance(twelve)
    assert c.is_complete()
    json.loads("[112" + suffix)


# ----------------------------------------------------------------- quotient size: `)` runs
@pytest.fixture(scope="module")
def python() -> gramask.CompiledGrammar:
    return compiled("python", "gpt2")


def test_a_run_of_closing_brackets_hits_the_quotient_limit(python):
    """Issue 20: 1,000 / 3,000 / 10,000 ``)`` after the cursor cost 9 s 425 MB / 23 s 982 MB
    / 97 s 3.3 GB on the Python grammar. Each ``)`` the middle must open adds the chain of
    nonterminals that can end there (~600 quotient rules on Python); the limit stops the
    construction (scaled down here: 20,000 rules, about 33 brackets)."""
    limits = gramask.RuntimeLimits(max_quotient_rules=20_000)
    with pytest.raises(gramask.LimitExceededError,
                       match=r"RuntimeLimits\.max_quotient_rules=20,000 .* Pass limits=gramask\."
                             r"RuntimeLimits\(max_quotient_rules=80000\)") as e:
        python.constraint("x = ", ")" * 60 + "\n", limits=limits)
    assert e.value.limit == "max_quotient_rules" and e.value.value > 20_000
    c = python.constraint("x = ", ")" * 10 + "\n", limits=limits)  # under the limit: served
    v = python.vocab
    assert c.allowed()[v.token_id("(")] and not c.allowed()[v.token_id(")")]


def test_default_quotient_limit_stops_a_thousand_brackets(python):
    with pytest.raises(gramask.LimitExceededError, match="max_quotient_rules=50,000"):
        python.constraint("", ")" * 1000, limits=gramask.RuntimeLimits())


def test_new_limits_are_validated_like_the_others():
    for name in ("max_suffix_bytes", "max_quotient_rules"):
        with pytest.raises(ValueError, match=f"RuntimeLimits.{name} must be a positive int"):
            dataclasses.replace(gramask.RuntimeLimits(), **{name: 0})


def test_from_lark_path_is_unchanged_for_text():
    """The type checks let every ordinary grammar through."""
    g = Grammar.from_lark(PARENS)
    assert "NAME" in g.terminal_names
