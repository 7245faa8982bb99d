"""Compile paths that scale: literal terminals built directly, over-limit terminals refused
before any automaton is built (from their match lengths), both giving exactly what the general
construction gives. Speed itself is measured in tools/bench_compile.py --scaling."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.lexer import terminal_dfa
from gramask.compiler.regex_bytes import regex_to_byte_dfa
from gramask.compiler.regex_size import dfa_states_from_width
from gramask.grammar import TerminalSpec

VOCAB = gramask.Vocabulary.from_tokens([b"a", b"b", b"x", b"ab", b"</s>"], eos_token_id=4)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab.*+?\\()[]{}|^$ \n\té中😀\x00"), min_size=1,
               max_size=12))
def test_literal_automaton_is_the_regex_automaton(literal: str) -> None:
    t = TerminalSpec("T", re.escape(literal), is_string=True)
    fast, general = terminal_dfa(t), regex_to_byte_dfa("T", t.pattern)
    np.testing.assert_array_equal(fast.trans, general.trans)
    np.testing.assert_array_equal(fast.finals, general.finals)


def test_flagged_literals_take_the_general_path() -> None:
    t = TerminalSpec("T", "(?i:if)", is_string=True)
    assert terminal_dfa(t).matches(b"IF")


@pytest.mark.parametrize(
    "pattern",
    ["abc", "a*", "a{3,}", "(?:a|bc)+", "[a-z]{5}", "(ab){2,5}c", "x?y?z?", r"\d+(\.\d+)?",
     "(a|b)*a(a|b){3}"],
)
def test_width_bound_is_a_lower_bound(pattern: str) -> None:
    assert dfa_states_from_width(pattern) <= regex_to_byte_dfa("T", pattern).num_states


@pytest.mark.parametrize(
    ("text", "name", "states"),
    [
        ('start: L\nL: "' + "q" * 5_000 + '"\n', "L", "5,001"),
        ("start: R\nR: /x{2,50000}/\n", "R", "50,001"),
        ("start: R\nR: /" + "ab" * 25_000 + "/\n", "R", "50,001"),
        ('start: r\nr: "[" R "]"\nR: /[a-z]{5000}/\n', "R", "5,001"),
    ],
    ids=["literal-5000", "x{2,50000}", "regex-50000-chars", "class{5000}"],
)
def test_over_limit_terminals_are_refused_before_any_automaton(
    text: str, name: str, states: str
) -> None:
    g = gramask.Grammar.from_lark(text)
    with pytest.raises(gramask.GrammarError) as e:
        gramask.compile(g, VOCAB, cache=False, progress=False)
    assert e.value.name == name
    msg = str(e.value)
    assert f"terminal {name}:" in msg and f"at least {states} automaton states" in msg
    assert len(msg) < 1000  # the pattern is shown abridged


def test_many_literals_compile_to_the_same_lexer() -> None:
    words = [f"w{i}" for i in range(300)]
    text = "start: (" + " | ".join(f'"{w}"' for w in words) + ")+\n"
    cg = gramask.compile(gramask.Grammar.from_lark(text, lexer="basic"), VOCAB, cache=False,
                         progress=False)
    prefixes = {w[:k] for w in words for k in range(1, len(w) + 1)}
    assert cg.dfa.num_states == 1 + len(prefixes)  # the trie of the words


def test_over_limit_literals_are_refused_before_lark_loads_them() -> None:
    long = "q" * 50_000
    with pytest.raises(gramask.GrammarError) as e:
        gramask.Grammar.from_lark(f'start: L | "x"\nL: "{long}"\n')
    assert e.value.name == "L" and e.value.line == 2 and "50,000 characters" in str(e.value)
    with pytest.raises(gramask.GrammarError) as e:  # an anonymous one: by its line
        gramask.Grammar.from_lark(f'start: "x"\n  | "{long}"i\n')
    assert e.value.line == 2 and "the literal on line 2" in str(e.value)
    # unused, or part of a larger terminal: loaded, and left to the automaton construction
    g = gramask.Grammar.from_lark(f'start: "x"\nunused: "{long}"\n')
    assert [t.name for t in g.terminals] == ["X"]
    g = gramask.Grammar.from_lark(f'start: A\nA: /[a-z]+/ | "{long}"\n')
    assert [t.name for t in g.terminals] == ["A"]


def test_parse_automaton_of_a_rule_chain_is_linear() -> None:
    # only kernel states predict: a chain once built n shrinking copies of its prediction
    n = 300
    text = "start: r0\n" + "".join(f'r{i}: r{i + 1} "a" | "b"\n' for i in range(n)) + (
        f'r{n}: "c"\n')
    pt = gramask.compile(gramask.Grammar.from_lark(text), VOCAB, cache=False,
                         progress=False).parse_tables
    assert pt.items is not None
    assert sum(len(s) for s in pt.items[0]) < 10 * n
