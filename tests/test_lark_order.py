"""The basic lexer of a Lark grammar tries terminals in lark's order (first match wins, not
the longest lexeme), with lark's own basic lexer as the oracle."""

from __future__ import annotations

from pathlib import Path

import lark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.lark_order import order_indices
from gramask.compiler.lexer import LexerDFA, build_lexer_dfa
from gramask.errors import GramaskError
from tests._support import follow_along_the_masks, is_program, lark_accepts, terminal_lines, tiny


def _lexer(g: gramask.Grammar) -> LexerDFA:
    return build_lexer_dfa(g.terminals, progress=False,
                           order=order_indices(g.lark_order, g.terminal_names))


def _lex(dfa: LexerDFA, text: str) -> list[tuple[str, str]] | None:
    """``text``'s lexemes (ignored ones left out, as ``Lark.lex`` does) by the automaton's
    rule (a lexeme ends where the next byte kills every terminal); None: no lexing."""
    data = text.encode()
    out: list[tuple[str, int, int]] = []
    q, start, i = 0, 0, 0
    while i <= len(data):
        nxt = int(dfa.trans[q, data[i]]) if i < len(data) else -1
        if nxt >= 0:
            q, i = nxt, i + 1
            continue
        if q == 0:
            if i == len(data):
                break
            return None
        w = int(dfa.accept[q])
        if w < 0:
            return None
        out.append((dfa.terminal_names[w], start, i))
        q, start = 0, i
    return [(n, data[a:b].decode()) for n, a, b in out
            if not dfa.ignored[dfa.terminal_names.index(n)]]


def _lark_lex(text: str, grammar: str) -> list[tuple[str, str]] | None:
    try:
        parser = lark.Lark(grammar, parser="earley", lexer="basic")
        return [(t.type, str(t)) for t in parser.lex(text)]
    except lark.exceptions.UnexpectedInput:
        return None


CASES = [
    # a prioritised string beats a longer match of a regex after it in the order
    ('start: (PLUS|W)+\nPLUS.2: "+"\nW: /[^\\s()]+/\n%ignore " "\n', ["+0", "+", "a+", "+ +0"]),
    # a regex's larger width puts it before a longer string: "a-b" is never lexed
    ('start: (NAME|AB|"-")+\nNAME: /[a-z]+/\nAB: "a-b"\n', ["a-b", "a-bc", "ab", "b-a"]),
    # identical regexes: the first by name wins
    ("start: (B|A)+\nB: /[a-z]+/\nA: /[a-z]+/\n", ["ab"]),
    # a keyword folded into its regex: the regex's lexeme is the keyword where it is its text
    ('start: (NAME|IF)+\nNAME: /[a-z]+/\nIF: "if"\n%ignore " "\n', ["if", "iff", "if x"]),
    # case-insensitive keyword beside a case-sensitive regex: both in the order, and the
    # regex's lexemes that the keyword's pattern matches whole are the keyword
    ('start: (NAME|SEL)+\nNAME: /[a-z]+/\nSEL: "sel"i\n%ignore " "\n',
     ["sel", "SEL", "Sel x", "selx", "sels", "seL", "sEL x"]),
    # ... and where the regex's lexeme ends before the keyword's would, the regex wins it:
    # the keyword's pattern only renames the regex's lexemes, it never lengthens them
    ('start: (T0|ABC|"in")+\nT0: /(a|bc)+/\nABC: "abc"i\n', ["aBC", "abc", "abcaBC", "ABC"]),
    # a case-insensitive keyword the regex before it asks (lark's unless) but that keeps its
    # own place: once the regex has matched "i", "if"i competes no more, so "iF" is "i" then
    # a refusal (tools/lark_fuzz.py seed 9101; gramask read "iF" as the keyword)
    ('start: (T0|IF)+\nT0: /i[nf]?/\nIF: "if"i\n', ["iniiF", "iF", "IF", "if", "iif", "inIf"]),
    # longer pattern text first among unbounded regexes of one priority
    ("start: (INT|NUM|DOT)+\nINT: /[0-9]+/\nNUM: /[0-9]+(x[0-9]+)?/\nDOT: \".\"\n",
     ["12", "12x3", "1.2"]),
]


@pytest.mark.parametrize(("grammar", "texts"), CASES)
def test_lexemes_are_larks(grammar: str, texts: list[str]) -> None:
    dfa = _lexer(gramask.Grammar.from_lark(grammar, lexer="basic"))
    for text in texts:
        assert _lex(dfa, text) == _lark_lex(text, grammar), text


PLUS = 'start: (PLUS | W)+\nPLUS.2: "+"\nW: /[^\\s()+]*[^\\s()]/\n%ignore " "\n'


def test_programs_and_masks_follow_larks_order() -> None:
    cg, _ = tiny(PLUS, [*"+0a ", "+0", "a+", "0+"])
    oracle = lark.Lark(PLUS, parser="earley", lexer="basic")
    for text in ["+0", "a+", "a+0", "+", "0+0", "+ 0", "++"]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text
    c = cg.constraint("")
    done = c.shortest_completion()
    assert lark_accepts(oracle, done.text)


def test_order_is_serialised_and_bundled_grammars_keep_longest_match() -> None:
    g = gramask.Grammar.from_lark(CASES[0][0], lexer="basic")
    assert g.lark_order[0] == ("PLUS",)
    again = gramask.Grammar.from_json(g.to_json())
    assert again.lark_order == g.lark_order and again.fingerprint() == g.fingerprint()
    # the contextual mode reads the same order (tests/test_lark_contextual_order.py)
    assert gramask.Grammar.from_lark(CASES[0][0]).lark_order == g.lark_order
    assert gramask.grammars.load("c").lark_order == ()


def test_an_artifact_keeps_the_order(tmp_path: Path) -> None:
    cg, _ = tiny(PLUS, [*"+0a ", "+0"])
    cg.save(tmp_path / "g.gramask")
    back = gramask.CompiledGrammar.load(tmp_path / "g.gramask")
    assert back.grammar.lark_order == cg.grammar.lark_order != ()
    assert is_program(back, "+0") == is_program(cg, "+0")


_REGEXES = ["[ab]+", "a[ab]*", "[^ ]+", "b|ab", "a+b?", "[a+]+", "(ab)+", "\\+[ab]"]


@st.composite
def _grammars(draw: st.DrawFn) -> str:
    n = draw(st.integers(2, 4))
    lines = terminal_lines(draw, n, _REGEXES)
    names = " | ".join(f"T{i}" for i in range(n))
    return f"start: ({names})+\n" + "\n".join(lines) + '\n%ignore " "\n'


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammars(), st.lists(st.text("ab+ ", min_size=1, max_size=6), min_size=1,
                             max_size=4))
def test_random_terminal_sets_lex_as_lark(grammar: str, texts: list[str]) -> None:
    try:
        g = gramask.Grammar.from_lark(grammar, lexer="basic")
    except GramaskError:
        return  # (a terminal set gramask refuses is tests elsewhere' business)
    dfa = _lexer(g)
    for text in texts:
        got = _lex(dfa, text)
        if got is None:  # lark backtracks into an earlier end: the automaton cannot
            continue
        assert got == _lark_lex(text, grammar), text


def test_a_terminal_cut_off_everywhere_is_named() -> None:
    text = 'start: T0 ";" | "int" "ab"\nT0: /(a|bc)+/\n'
    # (its rule never finishes; blamed on AB, not on the lexer gluing "int" to what follows)
    with pytest.warns(gramask.GrammarWarning, match="never produces.*: INT by AB") as got:
        cg, _ = tiny(text, [*"abc;int"])
    assert not any("greedy lexer" in str(w.message) for w in got)
    diags = cg.info["lexer_diagnostics"]
    assert any(d["message"].startswith("terminal AB can never be produced: T0")
               for d in diags), diags
    oracle = lark.Lark(text, parser="earley", lexer="basic")
    for t in ["intab", "a;", "bca;"]:
        assert is_program(cg, t) == lark_accepts(oracle, t), t
    with pytest.raises(gramask.GrammarError, match="AB can never be produced"):
        tiny('start: "int" "ab" T0\nT0: /(a|bc)+/\n', [*"abc;int"])


# lark's order leaves the anonymous "all"i no text (MODE wins), and the ignored comment runs
# on from every byte but a newline: the planner must close it and not price NAME, which
# follows the never-lexed "all"i in the grammar, infinite
SQLISH = ('start: "select"i [MODE] NAME ("," NAME)* | "union"i "all"i NAME\n'
          'MODE.2: "all"i | "distinct"i\nNAME: /[a-z]+/\nCOMMENT: /--[^\\n]*/\n'
          '%ignore COMMENT\n%ignore /[ \\n]+/\n')
_SQLISH_TOKENS = ["select", "SELECT", " all", "all", " x", "x", ",", " ", "\n", "-", "--",
                  " c", "c", " --", "distinct", " distinct"]


def test_planner_finishes_a_comment_under_larks_order() -> None:
    with pytest.warns(gramask.GrammarWarning, match="ALL"):
        cg, _ = tiny(SQLISH, _SQLISH_TOKENS)
    oracle = lark.Lark(SQLISH, parser="earley", lexer="basic")
    for prefix in ["", " --", "select x -- c", "SELECT all x --", "-- c\nselect", "select x,"]:
        c = cg.constraint(prefix)
        done = c.shortest_completion()
        assert lark_accepts(oracle, prefix + done.text), (prefix, done.text)
        need = c.min_tokens_to_complete()
        assert need <= len(done.token_ids) < 1000, prefix
        follow_along_the_masks(c, list(done.token_ids))
        tight = cg.constraint(prefix, max_tokens=len(done.token_ids))
        follow_along_the_masks(tight, list(done.token_ids))


def test_budget_takes_texts_after_a_keyword_larks_order_never_lexes() -> None:
    with pytest.warns(gramask.GrammarWarning, match="ALL"):
        cg, vocab = tiny(SQLISH, _SQLISH_TOKENS)
    ids = {t: i for i, t in enumerate(_SQLISH_TOKENS)}
    for text in [["SELECT", " all", " x"], ["select", " x", ",", " x", " --", " c", "\n"]]:
        c = cg.constraint("", max_tokens=len(text) + 1)
        for t in text:
            assert c.allowed()[ids[t]], (text, t)
            c.advance(ids[t])
        assert c.allowed()[vocab.eos_token_id], text
