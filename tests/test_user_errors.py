"""Errors a user meets say what happened, in gramask's own exception types."""

from __future__ import annotations

import numpy as np
import pytest

import gramask

from ._support import PARENS, PARENS_TOKENS, tiny


@pytest.fixture(scope="module")
def parens():
    return tiny(PARENS, PARENS_TOKENS)


def test_token_rejected_says_token_position_and_expected(parens):
    cg, _vocab = parens
    c = cg.constraint("(a ")
    c.advance(PARENS_TOKENS.index("b"))
    bad = PARENS_TOKENS.index(")))")
    with pytest.raises(gramask.TokenRejected) as info:
        c.advance(bad)
    e = info.value
    assert e.token_id == bad and e.position == 4 and not e.finished
    assert set(e.expected) >= {"NAME", "NUMBER", "RPAR", "LPAR"}
    msg = str(e)
    assert f"token {bad}" in msg and "')))'" in msg and "at byte 4" in msg and "RPAR" in msg


def test_token_rejected_after_eos_says_finished(parens):
    cg, vocab = parens
    c = cg.constraint()
    c.advance(PARENS_TOKENS.index("a"))
    c.advance(vocab.eos_token_id)
    with pytest.raises(gramask.TokenRejected, match="the program is finished") as info:
        c.advance(PARENS_TOKENS.index("b"))
    assert info.value.finished and info.value.expected == ()


@pytest.mark.parametrize("bad", [None, 1.0, "1", True])
def test_advance_takes_ints_only(parens, bad):
    cg, _vocab = parens
    c = cg.constraint()
    with pytest.raises(TypeError, match="token id must be an int") as info:
        c.advance(bad)
    if bad is None:  # the README idiom with a text that is not one token
        assert "vocab.token_id() returns None" in str(info.value)
    assert c.num_tokens == 0
    c.advance(np.int64(PARENS_TOKENS.index("a")))  # numpy integers are ids
    assert c.text == "a"


def test_is_allowed_agrees_with_the_mask(parens):
    cg, vocab = parens
    for prefix, extra in [("", []), ("(", []), ("(a", [" "]), ("((1 2)", [")"]), ("a", [])]:
        c = cg.constraint(prefix)
        for t in extra:
            c.advance(PARENS_TOKENS.index(t))
        mask = c.allowed()
        verdicts = np.array([c.is_allowed(i) for i in range(len(vocab))])
        assert (verdicts == mask).all(), prefix
        assert mask.any() and not mask.all()
    assert not c.is_allowed(len(vocab) + 3)  # out of range: not allowed, no exception


def test_unknown_bundled_grammar_lists_the_names():
    with pytest.raises(gramask.GrammarError, match="unknown bundled grammar 'nope'") as info:
        gramask.grammars.load("nope")
    assert all(n in str(info.value) for n in ("json", "python"))
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "error", "name", "line", "words"),
    [
        ('start: A B\nA: "x"\nB: /[/\n', gramask.InvalidRegexError, "B", 3, "invalid regex"),
        ("start: A\nA: /(/\n", gramask.InvalidRegexError, "A", 2, "unterminated subpattern"),
        ("start: A\nA: /a*/\n", gramask.GrammarError, "A", 2, "matches the empty string"),
    ],
)
def test_bad_terminals_are_grammar_errors(text, error, name, line, words):
    with pytest.raises(error) as info:
        gramask.Grammar.from_lark(text, source="g.lark")
    e = info.value
    assert e.name == name and e.line == line
    assert f"terminal {name}" in str(e) and words in str(e) and "g.lark" in str(e)
