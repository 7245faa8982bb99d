"""Terminals the greedy lexer cannot split from what the grammar puts after them: a language
emptied by them is a GrammarError, and (basic lexer mode) no allowed token leads into a dead
end (gramask.compiler.separable, gramask.runtime.core.end_conditions)."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.analysis import GrammarWarning
from gramask.compiler.lexer import build_lexer_dfa
from gramask.compiler.parse_tables import build_parse_tables
from gramask.compiler.separable import (
    Adjacency,
    all_separable,
    follows_separable,
    lexeme_next,
    needs_end_search,
    terminal_follows,
)
from gramask.compiler.separable_check import check_separable
from gramask.grammar import Grammar
from tests._support import lark_accepts, tiny

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import lark_fuzz_gen

CHARS = [*"ab01x;/."]


def _completes(c: gramask.Constraint, rnd: random.Random) -> bool:
    """Some completion exists: the planner finds one, or else one of a few masked walks
    reaches a complete text (the planner can miss a completion its cost bounds cannot
    price: ``-`` in ``start: INT "/" INT INT "/" INT "=>"``; a walk that only meets
    non-empty masks but never completes is no proof, so it must end complete)."""
    try:
        c.clone().shortest_completion()
        return True
    except gramask.NoCompletionError:
        pass
    eos = c.vocab.eos_token_id
    for _ in range(20):
        w = c.clone()
        for _ in range(40):
            if w.is_complete():
                return True
            m = np.asarray(w.allowed()).copy()
            m[eos] = False
            ids = np.flatnonzero(m).tolist()
            if not ids:
                break
            w.advance(rnd.choice(ids))
    return False


def _walk_without_dead_ends(cg: gramask.CompiledGrammar, vocab: gramask.Vocabulary,
                            rnd: random.Random, walks: int, steps: int) -> None:
    """Random masked walks: before EOS the mask is never all False, and after every allowed
    token some completion exists."""
    eos = vocab.eos_token_id
    for _ in range(walks):
        c = cg.constraint()
        for _ in range(steps):
            m = np.asarray(c.allowed()).copy()
            m[eos] = False
            ids = np.flatnonzero(m).tolist()
            assert ids or c.is_complete(), c.text
            if not ids:
                break
            c.advance(rnd.choice(ids))
            assert _completes(c, rnd), c.text


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_a_pair_the_lexer_never_splits_empties_the_language(lexer: str) -> None:
    text = 'start: T0 T2\nT0: /[a-z]+/\nT2: "ba"\n'
    with pytest.raises(gramask.GrammarError,
                       match=r"T0 can never be followed by T2.*'aba' is not read"):
        tiny(text, CHARS, lexer=lexer)
    # with something ignored that can stand between them, they are apart again
    cg, _ = tiny(text + '%ignore " "\n', [*CHARS, " "], lexer=lexer)
    assert cg.constraint("ab ba").is_complete()


def test_a_terminal_some_of_whose_ends_cannot_be_followed() -> None:
    grammar = 'start: A B\nA: /[a-z]+|[0-9]+/\nB: "b"\n'
    cg, vocab = tiny(grammar, CHARS)
    oracle = lark.Lark(grammar, parser="earley", lexer="basic")
    c = cg.constraint()
    m = c.allowed()
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    assert m[tok[b"0"]] and m[tok[b"1"]]
    assert not m[tok[b"a"]] and not m[tok[b"x"]]  # a lexeme of letters swallows the "b"
    assert lark_accepts(oracle, "01b") and not lark_accepts(oracle, "ab")
    c.advance(tok[b"0"])
    assert c.allowed()[tok[b"b"]]
    _walk_without_dead_ends(cg, vocab, random.Random(0), 10, 6)



@pytest.mark.parametrize(("grammar", "spared"), [
    ('start: A ";" B\nA: /[a-z]+/\nB: "ba"\n', True),  # never side by side
    ('start: A B\nA: /[a-z]+|[0-9]+/\nB: "b"\n', False),  # side by side, letters swallow it
    # a comment runs on to no end a letter may follow, though the grammar puts a key after it
    ('start: (N K)+\nN: /\\n/ | /#[^\\n]*/\nK: /[a-z]+/\n', False),
    # ... but here the comment's own lexeme runs on to a line break a key may follow
    ('start: (N K)+\nN: /(#[^\\n]*)?\\n/\nK: /[a-z]+/\n', True),
    # ... or here the parser takes another N after every N: a line break
    ('start: N* (K N+)* K?\nN: /\\n/ | /#[^\\n]*/\nK: /[a-z]+/\n', True),
])
def test_the_search_is_spared_where_the_grammar_never_puts_an_unsplittable_pair_side_by_side(
        grammar: str, spared: bool) -> None:
    g = Grammar.from_lark(grammar, lexer="basic")
    dfa = build_lexer_dfa(g.terminals)
    nxt = lexeme_next(dfa)
    assert not all_separable(dfa, nxt, g.newline_terminal)
    pt = build_parse_tables(g)
    assert follows_separable(dfa, nxt, terminal_follows(g)[0], g.newline_terminal, pt) == spared
    # one answer for the compiler's split of the end classes and the runtime's search
    assert needs_end_search(g, dfa, pt) == (not spared)
    assert (check_separable(g, dfa, pt) is None) == spared
    cg, vocab = tiny(grammar, [*CHARS, "#", "\n", ";"])
    assert (cg._build_runtime(None).end_conditions is None) == spared
    _walk_without_dead_ends(cg, vocab, random.Random(1), 10, 8)

# tools/lark_fuzz.py --seed 25, grammar 44 (basic), minimised: ``T0 T2 T0`` can never be
# lexed, so after ';/' a letter (which can only start that alternative) is a dead end
FUZZ_25_44 = r"""
start: r0+ "..."
r0: ";" ["/"]
    | T0 T2 T0
T0: /[a-z]+/
T2: "ba"
"""


def test_fuzz_25_44_letters_are_refused_where_only_a_dead_alternative_takes_them() -> None:
    # T2 ("ba", also a T0) can only be followed by a T0, which continues it
    with pytest.warns(GrammarWarning, match="T2 can never be followed by T0"):
        cg, vocab = tiny(FUZZ_25_44, CHARS)
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    c = cg.constraint(";;/")
    assert not c.allowed()[tok[b"a"]]
    assert c.allowed()[tok[b";"]] and c.allowed()[tok[b"."]]
    _walk_without_dead_ends(cg, vocab, random.Random(1), 10, 8)


# tools/lark_fuzz.py --seed 25, grammar 47 (basic): after a T0 only '"' can follow (the other
# followers start with a byte that continues it), and after '"' T0 again only '"': a T0 at
# the start can never reach the T3+ that must end the text. Two levels deep: the runtime
# searches the lexeme adjacency with the parser, not only the next terminal.
FUZZ_25_47 = r"""
start: [_T1] (T0* r2+ T3+ | [_T1])
r2: _T1
    | T3 [(T0 | r3 r3 "[")]
    | "\"" T0
r3: T2 ("x" T0* _T1+ | T3 "*" _r1*)+ ":"
_r1: _T1 ~ 2..2
    | r3 _r1 [r3]
    | [r3]
T0: /(a|bc)+/i
_T1: ("a".."c")+ T0
T2: "x"
T3: "a"
"""


def test_fuzz_25_47_a_dead_end_two_lexemes_deep_is_refused() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(FUZZ_25_47, [*"aAbBcx\"[*:"])
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    m = cg.constraint().allowed()
    assert not m[tok[b"A"]]  # only a T0 starts with 'A'
    assert m[tok[b"a"]]
    _walk_without_dead_ends(cg, vocab, random.Random(2), 12, 8)


def test_bundled_grammars_have_no_end_to_decide() -> None:
    """Every terminal can start after every end in the bundled grammars: nothing is split,
    nothing searched (their tables and masks are what they were)."""
    for name in ("json", "sql", "c", "python"):
        g = gramask.grammars.load(name)
        dfa = build_lexer_dfa(g.terminals)
        assert all_separable(dfa, lexeme_next(dfa), g.newline_terminal), name


def test_adjacency_follows_the_bytes_that_end_a_lexeme() -> None:
    """After a lexeme of letters B ("b") cannot start, after one of digits it can; after
    ';' (of /;+/) no other ';' lexeme can, after a letter or digit one can."""
    g = Grammar.from_lark('start: (A | B | C)+\nA: /[a-z]+|[0-9]+/\nB: "b"\nC: /;+/\n',
                          lexer="basic")
    dfa = build_lexer_dfa(g.terminals)
    adj = Adjacency(dfa)
    a, b, c = (g.terminal_index(n) for n in ("A", "B", "C"))

    def group(text: bytes) -> int:
        q = 0
        for x in text:
            q = int(dfa.trans[q, x])
        return int(adj.group[q])

    assert (group(b"ab"), b) not in adj.delta
    assert (group(b"07"), b) in adj.delta
    assert (group(b";;"), c) not in adj.delta
    assert (group(b"ab"), c) in adj.delta and (group(b"07"), c) in adj.delta
    assert (group(b";"), a) in adj.delta and (0, a) in adj.delta  # (0: the start)


# Fixed examples (derandomize): a fresh draw per run would make a failure come by chance; new
# draws belong in tools/ fuzzing (seed 9125, pinned below, was found here).
@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.integers(0, 10**6))
def test_random_grammars_have_no_dead_ends(seed: int) -> None:
    """Random small grammars (tools/lark_fuzz_gen.py), basic lexer mode, one-character
    tokens: random masked walks never meet a dead end — but where the runtime's search gave
    up (documented: it then allows the token)."""
    _no_dead_ends(seed)


def test_no_dead_end_after_a_lexeme_that_may_be_an_ignored_comment() -> None:
    _no_dead_ends(9125)  # '#' was allowed (it may become a comment), after which nothing can follow


def _no_dead_ends(seed: int, lexer: str = "basic") -> None:
    """A random grammar of ``seed``'s, masked walks with no dead end (the contextual mode's
    vocabulary also spells what imported common terminals need: a completion the vocabulary
    cannot spell is no dead end of the lexer's)."""
    rnd = random.Random(seed)
    gg = lark_fuzz_gen.grammar(rnd)
    extra = "ab01x;/." if lexer == "basic" else 'ab01x;/.AZe"\\-+_'
    chars = sorted(set(gg.alphabet) | set(extra))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cg, vocab = tiny(gg.text, chars, lexer=lexer)
    except (gramask.GrammarError, lark.exceptions.LarkError):
        return  # refused grammars say why elsewhere
    if lexer == "contextual":
        first = np.asarray(cg.constraint().allowed()).copy()
        first[vocab.eos_token_id] = False
        if not first.any() and not cg.constraint().is_complete():
            # a language empty as the contextual lexer splits texts (decided at compile time
            # in the basic mode only): no first token is the answer
            assume(not _gave_up(cg))
            return
    try:
        _walk_without_dead_ends(cg, vocab, rnd, 4, 6)
    except AssertionError:
        assume(not _gave_up(cg))  # (a search gave up: documented, not tested)
        raise


# Contextual lexer mode. tools/lark_fuzz.py --seed 25, grammar 44 (contextual): as in the
# basic mode, a T0 swallows the "ba" that must follow it (letters continue a T0 under every
# allowed set), so after ';;;' a letter is a dead end
def test_contextual_fuzz_25_44_letters_are_refused() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(FUZZ_25_44, CHARS, lexer="contextual")
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    m = cg.constraint(";;;").allowed()
    assert not m[tok[b"a"]] and not m[tok[b"x"]]
    assert m[tok[b";"]] and m[tok[b"/"]] and m[tok[b"."]]
    _walk_without_dead_ends(cg, vocab, random.Random(3), 10, 8)


# tools/lark_fuzz.py --seed 25, grammar 38 (contextual), minimised: nothing can follow a T0
# (it takes every byte the grammar has), so ``T1 T0 T0`` is dead and only "aa" is left
FUZZ_25_38 = r"""
start: T1 T0 T0 | r0
r0: "aa"
T0: /[^\s()]+/
T1: ("a".."c")+ T0
"""


def test_contextual_fuzz_25_38_only_the_live_alternative_is_offered() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(FUZZ_25_38, CHARS, lexer="contextual")
    oracle = lark.Lark(FUZZ_25_38, parser="lalr", lexer="contextual")
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    m = cg.constraint().allowed()
    assert m[tok[b"a"]] and not m[tok[b"b"]]
    m = cg.constraint("a").allowed()
    assert m[tok[b"a"]] and not m[tok[b"b"]] and not m[tok[b"x"]]
    assert cg.constraint("aa").is_complete() and lark_accepts(oracle, "aa")
    assert not lark_accepts(oracle, "ab;")


# A dead end the first token already leads into: after "x" only ``T0 T2`` may follow
def test_contextual_a_first_token_into_a_dead_alternative_is_refused() -> None:
    grammar = 'start: "x" T0 T2 | "y"\nT0: /[a-z]+/\nT2: "ba"\n'
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(grammar, [*CHARS, "y"], lexer="contextual")
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    m = cg.constraint().allowed()
    assert m[tok[b"y"]] and not m[tok[b"x"]]


# Under the contextual rule a lexeme ends where the next byte keeps no *allowed* terminal
# alive: after "x" only A competes, so "aab" is A then B; the basic lexer reads it as one C
SPLIT_BY_CONTEXT = r"""
start: "x" A B | C ";"
A: /a+/
B: "b"
C: /[ab]+/
"""


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_what_may_follow_depends_on_the_allowed_set(lexer: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(SPLIT_BY_CONTEXT, CHARS, lexer=lexer)
    oracle = lark.Lark(SPLIT_BY_CONTEXT, parser="lalr", lexer=lexer)
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    contextual = lexer == "contextual"
    assert bool(cg.constraint().allowed()[tok[b"x"]]) == contextual  # (basic: dead at once)
    assert lark_accepts(oracle, "xaab") == contextual
    if contextual:
        assert cg.constraint("x").allowed()[tok[b"a"]]
        assert cg.constraint("xaab").is_complete()
    _walk_without_dead_ends(cg, vocab, random.Random(4), 10, 6)


# tools/lark_fuzz_gen.py's grammar 13793: ``_T2 _T2`` must start every text and a rest-of-line
# comment can never be followed by another (no newline): the language is empty as lexed,
# though every terminal can also end the text (no terminal is dead on its own)
REST_OF_LINE = r"""
start: _T2 ~ 2..2 r0
r0: "0"+
    | T3* _T2
_T2: /#[^\n]*/
T3: /[a-z]+/i
"""


def test_an_empty_language_as_lexed_is_a_grammar_error() -> None:
    with pytest.raises(gramask.GrammarError, match=r"_T2 can never be followed by _T2"):
        tiny(REST_OF_LINE, CHARS)


# Hand-written grammars of seed 9125's shape: a lexeme in progress that may still end as an
# ignored one (a rest-of-line comment), decided by lark's own parser on the texts at stake.
# (grammar, tokens, (prefix, token, allowed) triples)
COMMENT_SHAPED = [
    # '#' only as a comment's start (nothing starts with the newline that ends one, and the
    # text may not end at the start), or as "#" which only a comment's bytes can follow
    (r"""
start: "#" NAME | NAME ";"
NAME: /[a-z]+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore " "
""", [*"#ab; \n"], [("", "#", False), ("ab;", "#", True), ("ab", "#", False)]),
    # ... where the newline is ignored too, a comment may stand first
    (r"""
start: "#" NAME | NAME ";"
NAME: /[a-z]+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore /\n/
""", [*"#ab;\n"], [("", "#", True), ("#", "a", True), ("#\n", "a", True)]),
    # '/' as a division needs another: with a blank between ("/ /"), not side by side
    # ("//" is a comment)
    (r"""
start: NUM | "/" "/"
NUM: /[0-9]+/
COMMENT: /\/\/[^\n]*/
%ignore COMMENT
%ignore " "
""", [*"/01 \n"], [("", "/", True), ("/", "/", False), ("/", " ", True), ("/ ", "/", True),
                   ("1", "/", True)]),
]


@pytest.mark.parametrize(("grammar", "chars", "cases"), COMMENT_SHAPED)
def test_a_lexeme_that_may_still_become_a_comment_is_searched_both_ways(
        grammar: str, chars: list[str], cases: list[tuple[str, str, bool]]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the first: "#" can never be followed by NAME)
        cg, vocab = tiny(grammar, chars)
    oracle = lark.Lark(grammar, parser="earley", lexer="basic")
    tok = {t.decode(): i for i, t in enumerate(vocab.token_tuple)}
    for prefix, t, allowed in cases:
        assert bool(cg.constraint(prefix).allowed()[tok[t]]) == allowed, (prefix, t)
        # the oracle: some short text after prefix + t is the language's
        tails = ["", *chars, *(a + b for a in chars for b in chars),
                 *(a + b + c for a in chars for b in chars for c in chars)]
        assert any(lark_accepts(oracle, prefix + t + w) for w in tails) == allowed, (prefix, t)
    _walk_without_dead_ends(cg, vocab, random.Random(3), 10, 6)


def _gave_up(cg: gramask.CompiledGrammar) -> bool:
    """Did one of the runtime's searches give up (documented: it then allows the token)?"""
    rt = cg._build_runtime(None)
    ec = rt.contextual.dead_ends if rt.contextual is not None else rt.end_conditions
    return ec is not None and ec.gave_up > 0


@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.integers(0, 10**6))
def test_random_grammars_have_no_dead_ends_contextual(seed: int) -> None:
    """As test_random_grammars_have_no_dead_ends, in the contextual lexer mode."""
    _no_dead_ends(seed, "contextual")


@pytest.mark.parametrize(("grammar", "needed"), [
    # lark's FIELDSEP loses "," to COMMA in the whole lexer, never where COMMA is not allowed
    ('start: "{" NAME (FIELDSEP NAME)* "}" | "f" "(" NAME ("," NAME)* ")"\n'
     'NAME: /[a-z]+/\nFIELDSEP: "," | ";"\n', False),
    # a comment alternative of the newline terminal: only a line break follows it, and the
    # parser always takes another newline after one
    ('start: _NL* (K _NL+)* K?\nK: /[a-z]+/\n_NL: /(\\r?\\n)+/ | /#[^\\n]*/\n', False),
    (FUZZ_25_38, True),
    (FUZZ_25_44, True),
])
def test_the_contextual_search_is_spared_where_no_allowed_set_meets_an_unsplittable_pair(
        grammar: str, needed: bool) -> None:
    g = Grammar.from_lark(grammar, lexer="contextual")
    dfa = build_lexer_dfa(g.terminals)
    assert not all_separable(dfa, lexeme_next(dfa), g.newline_terminal)
    assert needs_end_search(g, dfa, build_parse_tables(g)) == needed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg, vocab = tiny(grammar, [*CHARS, *"{}f(),;#\n"], lexer="contextual")
    assert (cg._build_runtime(None).contextual.dead_ends is None) == (not needed)
    _walk_without_dead_ends(cg, vocab, random.Random(5), 10, 8)


# heldout lark.lark (llguidance's copy of lark's own grammar), minimised by tools/fim_fuzz.py's
# triage: a comment that only a line break ends, where the line break can only start another
# comment (``\s*`` heads it) — the parser never gets its ':' after ``a #``
COMMENT_CHAIN = r"""
start: NAME ":" NAME
NAME: /[a-z]+/
COMMENT: /\s*/ "#" /[^\n]/*
%ignore COMMENT
%ignore " "
"""


def test_contextual_a_comment_only_more_comments_can_follow_is_refused() -> None:
    g = Grammar.from_lark(COMMENT_CHAIN, lexer="contextual")
    dfa = build_lexer_dfa(g.terminals)
    assert all_separable(dfa, lexeme_next(dfa), g.newline_terminal)  # (no ignored end asked)
    assert needs_end_search(g, dfa, build_parse_tables(g))
    cg, vocab = tiny(COMMENT_CHAIN, [*"ab: #\n\t"], lexer="contextual")
    tok = {t: i for i, t in enumerate(vocab.token_tuple)}
    m = cg.constraint("a ").allowed()
    assert m[tok[b":"]] and not m[tok[b"#"]] and not m[tok[b"\n"]]
    assert cg.constraint("a:b ").allowed()[tok[b"#"]]  # complete: a comment may end the text
    oracle = lark.Lark(COMMENT_CHAIN, parser="lalr", lexer="contextual")
    assert lark_accepts(oracle, "a:b #x") and not lark_accepts(oracle, "a #x\n:b")
    _walk_without_dead_ends(cg, vocab, random.Random(7), 10, 8)
