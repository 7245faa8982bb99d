"""The contextual lexer of a Lark grammar tries the terminals the parser can take in lark's
order (gramask.compiler.lark_order.contextual_cuts), with lark's LALR parser and contextual
lexer as the oracle."""

from __future__ import annotations

import warnings

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.contextual_wins import contextual_order
from gramask.compiler.lexer import build_lexer_dfa
from gramask.compiler.parse_tables import build_parse_tables
from gramask.errors import GramaskError
from tests._support import is_program, lark_accepts, terminal_lines, tiny
from tests.test_lark_order import _lex, _lexer

# (grammar, texts): each case's first text is read differently under the longest match
CASES = [
    # a prioritised string stops a longer match of the regex after it in the order: "+0" is
    # "+" then "0", which no rule takes
    ('start: W | PLUS "!"\nPLUS.2: "+"\nW: /[^\\s()!]+/\n', ["+0", "+!", "0+", "+"]),
    # a regex's larger width puts it before a longer string: "a-b" is never AB
    ('start: NAME | AB "!"\nNAME: /[a-z]+/\nAB: "a-b"\n', ["a-b!", "a-b", "a"]),
    ('start: NAME "-" NAME | AB "!"\nNAME: /[a-z]+/\nAB: "a-b"\n', ["a-b", "a-b!", "a"]),
    # AB alone where NAME is not expected: there it is lexed
    ('start: "(" NAME ")" | "[" AB\nNAME: /[a-z]+/\nAB: "a-b"\n', ["[a-b", "(a-b)", "(a)"]),
    # two terminals of one priority match a lexeme: the first in lark's order is it, alone
    # (T1's pattern text is the longer; tools/lark_fuzz.py seed 2002), and of two equal
    # regexes the first by name (INT; seed 2003): no parse goes on with the other
    ('start: T0 T3 | T0 T1 "0"\nT0: /[+*]/\nT1: /[a-c][a-c0-9]*/\nT3: /(a|bc)+/\n',
     ["+bc", "+bc0", "+a", "*a0"]),
    ('start: INT? INT T1\nINT: /[0-9]+/\nT1: /[0-9]+/\n%ignore " "\n', ["9 2", "9 2 3", "9"]),
    # an ignored terminal competes in every state: "#x" is a comment then "x", no NAME
    ('start: NAME\nNAME: /[a-z]*#[a-z]*/\nCOMMENT.2: "#"\n%ignore COMMENT\n',
     ["#x", "a#b", "#", "a#"]),
]


def _oracle(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, parser="lalr", lexer="contextual")


@pytest.mark.parametrize(("grammar", "texts"), CASES)
def test_programs_are_larks(grammar: str, texts: list[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, _ = tiny(grammar, sorted({c for t in texts for c in t}), lexer="contextual")
    oracle = _oracle(grammar)
    for text in texts:
        assert is_program(cg, text) == lark_accepts(oracle, text), text


def _cuts(g: gramask.Grammar) -> list[int] | None:
    return contextual_order(g, build_parse_tables(g), build_lexer_dfa(g.terminals,
                                                                      progress=False))


def test_old_reading_is_kept_without_the_order() -> None:
    """The first case under the longest match (the bundled grammars' reading): "+0" is one
    W. So the cases above pin the order, not something else."""
    from dataclasses import replace

    g = gramask.Grammar.from_lark(CASES[0][0])
    assert g.lark_order and _cuts(g) is not None
    vocab = gramask.Vocabulary.from_tokens([*"+0!", "</s>"], eos_token_id=3)
    plain = gramask.compile(replace(g, lark_order=()), vocab, cache=False)
    assert is_program(plain, "+0")


def test_a_cut_only_where_the_set_always_holds_the_earlier_terminal() -> None:
    """After "x" the parser takes W alone: PLUS does not stop it there, and since W is
    expected without PLUS, it is not cut at the start either (a limit: lark's lexer of the
    start state would)."""
    text = 'start: "x" W | W | PLUS "!"\nPLUS.2: "+"\nW: /[^\\s()!x]+/\n'
    g = gramask.Grammar.from_lark(text)
    cuts = _cuts(g) or [0] * len(g.terminals)
    assert not cuts[g.terminal_index("PLUS")] >> g.terminal_index("W") & 1
    cg, _ = tiny(text, [*"x+0!"], lexer="contextual")
    assert is_program(cg, "x+0") and lark_accepts(_oracle(text), "x+0")


def test_bundled_grammars_and_reserved_keywords_keep_the_longest_match() -> None:
    for name in ("c", "sql", "json", "python"):
        g = gramask.grammars.load(name, lexer="contextual")
        assert g.lark_order == ()
        assert _cuts(g) is None
    g = gramask.Grammar.from_lark(CASES[0][0], reserved_keywords=True)
    assert _cuts(g) is None


# Every terminal is expected at every lexeme start, and each is followed by a marker only it
# is followed by: a text is a program iff it lexes as lark lexes it
_REGEXES = ["[ab]+", "a[ab]*", "[^ 012]+", "b|ab", "a+b?", "[a+]+", "(ab)+", "\\+[ab]"]


@st.composite
def _grammars(draw: st.DrawFn) -> str:
    n = draw(st.integers(2, 3))
    lines = terminal_lines(draw, n, _REGEXES)
    alts = " | ".join(f'T{i} "{i}"' for i in range(n))
    return f"start: ({alts})+\n" + "\n".join(lines) + '\n%ignore " "\n'


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammars(), st.lists(st.text("ab+ 012", min_size=1, max_size=7), min_size=1,
                             max_size=4))
def test_random_terminal_sets_parse_as_lark(grammar: str, texts: list[str]) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cg, _ = tiny(grammar, [*"ab+ 012"], lexer="contextual")
        oracle = _oracle(grammar)
    except (GramaskError, lark.exceptions.LarkError):
        return  # (a grammar either refuses is other tests' business)
    # where lark backtracks into an earlier end, the automaton cannot follow (as in the basic
    # mode, which lexes these texts alike: every terminal competes at every start)
    basic = _lexer(gramask.Grammar.from_lark(grammar, lexer="basic"))
    for text in texts:
        if _lex(basic, text) is None:
            continue
        assert is_program(cg, text) == lark_accepts(oracle, text), text
