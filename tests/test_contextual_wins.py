"""Contextual lexer mode: a terminal the parser expects beside a higher-priority one that
matches every text of it never becomes a lexeme there, and tokens that lead only into such
dead ends are refused (gramask.compiler.contextual_wins, gramask.runtime.core.viability),
decided by lark's contextual LALR parser on the texts at stake."""

from __future__ import annotations

import itertools
import random
import warnings
from dataclasses import replace

import lark
import pytest

import gramask
from gramask.compiler.analysis import GrammarWarning
from gramask.compiler.contextual_wins import lost_shifts, terminal_threats
from gramask.compiler.keywords import reserved_pairs
from gramask.compiler.lexer import build_lexer_dfa
from gramask.compiler.parse_tables import build_parse_tables
from tests._support import lark_accepts, tiny
from tests.test_separable import _no_dead_ends, _walk_without_dead_ends

# (grammar, tokens, prefixes whose every next token is checked against lark)
SHADOWED = [
    # tools/lark_fuzz_gen.py grammar 553's shape: after a first r0 the parser expects T0
    # (another r0) beside "abc", which is then always a T0: only ": x" is a program
    (r"""
start: r0* "abc" | ":" T0
r0: T0 "."
T0.2: /\w+/
%ignore " "
""", [*"abc:. x", "abc"], ["", ":", ": ", "a"]),
    # ... only after a first T0: "x" leads nowhere, "y" to "abc" alone
    (r"""
start: "x" T0+ "abc" | "y" "abc"
T0.2: /\w+/
%ignore " "
""", [*"abcxy ", "abc"], ["", "x", "x ", "x a", "y", "y "]),
    # grammar 973's shape: "a" is a T1 wherever T1 is expected too, so the "a" the second
    # alternative needs never comes; a token inside "a" or "if" is a dead end
    (r"""
start: "-" | T1* "a" T1
T1.3: "if" | "a"
%ignore " "
""", [*"-afi ", "if"], ["", "-", "if", "if "]),
]


@pytest.mark.parametrize(("grammar", "tokens", "prefixes"), SHADOWED)
def test_tokens_into_shifts_that_never_happen_are_refused(
        grammar: str, tokens: list[str], prefixes: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(grammar, tokens, lexer="contextual")
    oracle = lark.Lark(grammar, parser="lalr", lexer="contextual")
    tails = ["".join(w) for k in range(4) for w in itertools.product(tokens, repeat=k)]
    for prefix in prefixes:
        if not any(lark_accepts(oracle, prefix + w) for w in tails):
            with pytest.raises(gramask.InvalidPrefixError):  # (a dead end at once)
                cg.constraint(prefix)
            continue
        c = cg.constraint(prefix)
        m = c.allowed()
        for i, t in enumerate(vocab.token_tuple[:-1]):
            text = prefix + t.decode()
            live = any(lark_accepts(oracle, text + w) for w in tails)
            assert bool(m[i]) == live, (prefix, t)
    _walk_without_dead_ends(cg, vocab, random.Random(6), 10, 6)


def _longest(text: str, tokens: list[str]) -> None:
    """``text`` compiled in the contextual mode by the longest lexeme (no lark order)."""
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    g = replace(gramask.Grammar.from_lark(text, lexer="contextual"), lark_order=())
    gramask.compile(g, vocab, cache=False)


def test_a_language_emptied_by_priorities_is_a_grammar_error() -> None:
    text = 'start: T0* "abc"\nT0.2: /\\w+/\n'
    with pytest.raises(gramask.GrammarError, match=r"ABC loses every lexeme to T0 \(priority 2\)"):
        _longest(text, [*"abc"])
    # in lark's order T0 drops "abc" before it can match (T0 is expected wherever it is)
    with pytest.raises(gramask.GrammarError, match=r"ABC can never be produced: T0"):
        tiny(text, [*"abc"], lexer="contextual")


def test_a_terminal_that_never_wins_where_expected_is_warned_about() -> None:
    with pytest.warns(GrammarWarning, match=r"never win.*ABC loses every lexeme to T0"):
        _longest(*SHADOWED[0][:2])
    with pytest.warns(GrammarWarning, match=r"never win.*ABC is never lexed"):
        tiny(SHADOWED[0][0], SHADOWED[0][1], lexer="contextual")


@pytest.mark.parametrize("seed", [553, 567, 973])
def test_random_grammars_with_shifts_that_never_happen(seed: int) -> None:
    """tools/lark_fuzz_gen.py grammars whose contextual masks led into such dead ends (the
    dead-end search, had it run, gave up on them: their parser states keep growing)."""
    _no_dead_ends(seed, "contextual")


@pytest.mark.parametrize("name", ["json", "sql", "c", "python"])
def test_bundled_grammars_have_no_shift_that_never_happens(name: str) -> None:
    """Nothing changes for them: no terminal can lose every lexeme (their runtimes refuse
    no Earley set and their masks are what they were)."""
    g = gramask.grammars.load(name, lexer="contextual")
    dfa = build_lexer_dfa(g.terminals)
    prio = [t.priority for t in g.terminals]
    res = reserved_pairs(g, dfa)
    assert not terminal_threats(dfa, prio, res, g.newline_terminal)
    assert lost_shifts(dfa, build_parse_tables(g), prio, res, g.reserved_keywords,
                       g.newline_terminal) is None
