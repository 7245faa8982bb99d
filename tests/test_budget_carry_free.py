"""Fill-in-the-middle budgets inside a newline lexeme (gramask/runtime/budget/carry_free.py):
the words of a comment lead to states that differ only in the indentation carry, and one
walked completion that resets the carry first (the comment's line break, or the suffix's)
admits them all. Every token admitted so must still have a completion, walked from its own
state, that ends complete within what is left; and where the budget is slack, the comment's
words are all admitted (a model writing a comment is never cut)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramask
from gramask.runtime.budget import carry_free
from gramask.runtime.budget.verify import VerifiedTokens
from gramask.runtime.fim.constraint import FimConstraint

from ._support import compiled, tiny


def _walk_ends(c: gramask.Constraint, t: int, done: tuple[int, ...]) -> bool:
    """Do ``t`` then ``done``, walked from ``c``'s state as a generation takes them (each
    token's end checked), end complete?"""
    tb = c._vocab.token_bytes  # type: ignore[attr-defined]
    s = c._history[-1]  # type: ignore[attr-defined]
    for x in (t, *done):
        s = c._walk(s, tb(x))  # type: ignore[attr-defined]
        if isinstance(s, int):
            return False
    return bool(c._complete(s))  # type: ignore[attr-defined]


def _learned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the classes a step shares a completion with (the tests must not pass with the
    sharing unused)."""
    seen: list[int] = []
    learn = carry_free.CarryClasses.learn

    def spy(self: carry_free.CarryClasses, raw: int, completion: tuple[int, ...] | None,
            ) -> None:
        n = len(self.known)
        learn(self, raw, completion)
        seen.append(len(self.known) - n)

    monkeypatch.setattr(carry_free.CarryClasses, "learn", spy)
    return seen


def _check_step(c: gramask.Constraint, rnd: random.Random, sample: int) -> int:
    """The admitted tokens' completions (``VerifiedTokens.after``) walked from each token's
    own state, on a sample; returns how many tokens are admitted."""
    m = c.allowed()
    rec = c._verified_next[2]  # type: ignore[attr-defined]
    assert isinstance(rec, VerifiedTokens)
    left = c.remaining_tokens
    assert left is not None
    toks = np.flatnonzero(m).tolist()
    eos = c._vocab.eos_token_id  # type: ignore[attr-defined]
    for t in rnd.sample(toks, min(sample, len(toks))):
        if t == eos:
            continue
        done = rec.after(t)
        assert done is not None and len(done) <= left - 1, t
        assert _walk_ends(c, t, done), (c._vocab.token_bytes(t), done)  # type: ignore[attr-defined]
    return len(toks)


def test_python_comment_words_share_one_check(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _learned(monkeypatch)
    # without the group bounds, which admit a comment's tokens with no walked check at all
    # (a line break then the plan after it: test_budget_nl_bounds.py)
    monkeypatch.setattr(FimConstraint, "BOUND_PLANS", 0)
    cg = compiled("python", "deepseek-v4")
    vocab = cg.vocab
    prefix = "def f(x):\n    y = x + 1  # add\tone"
    suffix = "\n    return y\n"
    c = cg.constraint(prefix, suffix=suffix, max_tokens=12)
    free = cg.constraint(prefix, suffix=suffix)
    rnd = random.Random(0)
    for word in [" to", "\t", " the", "  ", " value"]:
        n = _check_step(c, rnd, 400)
        # slack: every token the grammar allows is admitted
        assert n == int(free.allowed().sum())
        t = vocab.token_id(word)
        assert t is not None
        c.advance(t)
        free.advance(t)
    assert sum(seen) > 0


@pytest.mark.parametrize("seed", range(4))
def test_small_grammar_comment_admissions_walk_to_an_end(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small indented grammar whose newline lexeme holds comments; tokens of blanks, tabs,
    comment words and line breaks in every order; random walks under tight budgets."""
    seen = _learned(monkeypatch)
    grammar = r"""
start: stmt+
stmt: "x" _NEWLINE | "if" ":" _NEWLINE _INDENT stmt+ _DEDENT
_NEWLINE: (/\r?\n[\t ]*/ | /#[^\n]*/)+
%declare _INDENT _DEDENT
%ignore " "
"""
    pieces = ["#", " ", "  ", "\t", "\n", "\n  ", "a", "b c", "x", "if", ":"]
    rnd = random.Random(seed)
    tokens = sorted({"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 3)))
                     for _ in range(300)} | set(pieces))
    cg, vocab = tiny(grammar, tokens)
    for budget in (3, 5, 8):
        try:
            c = cg.constraint("if:\n  x  # a", suffix="\n  x\n", max_tokens=budget)
        except gramask.GramaskError:
            continue
        for _ in range(budget):
            if c.remaining_tokens == 0:
                break
            _check_step(c, rnd, 200)
            m = c.allowed()
            ids = np.flatnonzero(m).tolist()
            ids = [i for i in ids if i != vocab.eos_token_id]
            if not ids:
                break
            c.advance(rnd.choice(ids))
        if not c.is_complete():
            for x in c.shortest_completion().token_ids:
                c.advance(x)
        assert c.is_complete()
    assert sum(seen) > 0


def test_blank_widths_do_not_share_a_completion_the_width_decides() -> None:
    """After a line break the blanks' widths are states of one class, but the suffix's first
    byte ends the newline lexeme, whose width is then read: no completion may be shared
    (sharing the empty one of width 4, or width 1's ``"   "``, would admit wrong widths)."""
    cg = compiled("python", "deepseek-v4")
    vocab = cg.vocab
    c = cg.constraint("def f(x):\n    y = 1\n", suffix="return y\n", max_tokens=3)
    m = c.allowed()
    rec = c._verified_next[2]  # type: ignore[attr-defined]
    blanks = [t for t in range(len(vocab)) if vocab.token_bytes(t).strip(b" \t") == b""
              and vocab.token_bytes(t) and m[t]]
    assert vocab.token_id("    ") in blanks
    for t in blanks:
        done = rec.after(t)
        assert done is not None and _walk_ends(c, t, done), vocab.token_bytes(t)
