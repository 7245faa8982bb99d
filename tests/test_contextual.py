"""The two lexer modes, with the verdicts written down (issue 9), and lark as the oracle.

Contextual: at each lexeme start only the terminals the parser can take compete; basic: all
terminals compete, keywords reserved. Each case below is checked by prefix walks
(``constraint(prefix)``), by masks forced character by character, and against lark.
"""

from __future__ import annotations

import random
import re
import warnings
from dataclasses import replace

import lark
import numpy as np
import pytest

import gramask

from ._support import is_program, lark_accepts, walk_comparing_masks

BINARY = """
start: "00000" | "1" BIT BIT BIT BIT
BIT: "0" | "1"
"""

ASSIGN = r"""
start: stmt*
stmt: "int" NAME "=" expr ";"      -> decl
    | NAME ASSIGN_OP expr ";"      -> assign
expr: expr "*" atom | atom
atom: NAME | NUMBER
ASSIGN_OP: "=" | "+=" | "-=" | "*="
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
%ignore " "
"""

CONFIG = r"""
start: (entry "\n")*
entry: KEY "=" VALUE
KEY: /[a-z_]+/
VALUE: /[^\n]+/
"""

KEYWORDS = r"""
start: decl*
decl: "int" NAME ";" | NAME NAME ";"
NAME: /[a-z]+/
%ignore " "
"""

# a keyword where the parser takes both it and a name: lark's contextual lexer reads the
# keyword (Grammar.keywords_win, on for Lark files); where only a name fits, a name
CALLS = r"""
start: stmt*
stmt: "if" "(" NAME ")" stmt | NAME "(" NAME ")" "=" NAME ";" | NAME "=" NAME ";"
NAME: /[a-z]+/
%ignore " "
"""

# runs of openings ("((((", "- - -") and a right-recursive chain (".." completes every link
# at once): tails of long tokens decided from parser states cut to their top, and where a
# completion reaches below the cut, exactly (see ContextualLexer._eval)
CHAINS = r"""
start: stmt*
stmt: expr ";"
?expr: cat
?cat: unary (".." cat)?
?unary: "-" unary | "(" expr ")" | "[" expr ("," expr)* "]" | NAME | "..."
NAME: /[a-z]+/
%ignore " "
"""

# statements with no terminator (one may end after any operand, as in Lua): the first lexeme
# after a name completes phrases below the cut almost everywhere; its tails are then tried
# cut again from the exact state it leads to (see ContextualLexer._try_cut)
OPEN_ENDS = r"""
start: stmt*
stmt: NAME "=" expr | "if" "(" expr ")" "{" stmt* "}" | "while" expr "do" stmt* "end" | call
call: NAME "(" (expr ("," expr)*)? ")"
?expr: expr "+" atom | expr "-" atom | atom
?atom: NAME | NUMBER | "(" expr ")" | call
NAME: /[a-z]+/
NUMBER: /[0-9]+/
%ignore /[ \n]+/
"""

# where the table walks below start (cuts then fall inside the prefix)
DEEP_PREFIX = {CHAINS: "((- [a, (x .. (- y", OPEN_ENDS: "if (a) { while b do x = f(a, (b"}

# grammar, text, verdict in contextual mode, verdict in basic mode
CASES = [
    (BINARY, "11111", True, False),  # basic: "1" wins over BIT, then "1" again: no BIT left
    (BINARY, "00000", True, True),
    (BINARY, "10101", True, False),
    (BINARY, "0000", False, False),
    (ASSIGN, "int v = 2;", True, True),
    (ASSIGN, "v = v * 2;", True, False),  # basic: "=" is always the literal
    (ASSIGN, "v += 2;", True, True),
    (ASSIGN, "int v += 2;", False, False),
    (CONFIG, "name=foo\n", True, False),  # basic: VALUE swallows the line
    (CONFIG, "a=b=c\n", True, False),
    (CONFIG, "=foo\n", False, False),
    (KEYWORDS, "int x;", True, True),
    (KEYWORDS, "intx;", False, False),  # one NAME, in both modes
    (KEYWORDS, "inter x;", True, True),  # NAME NAME: longest match, in both modes
    (KEYWORDS, "int inter;", True, True),
    # contextual: only NAME can follow the first "int", so the second one is a NAME;
    # basic: "int" is reserved
    (KEYWORDS, "int int;", True, False),
    (KEYWORDS, "int;", False, False),
    (CALLS, "if (a) x = c;", True, True),
    (CALLS, "if (a) = c;", False, False),  # not a call of "if": the keyword wins there
    (CALLS, "if = c;", False, False),
    (CALLS, "x = if;", True, False),  # only a name can follow "=": a name
    (CALLS, "f (a) = c;", True, True),
]


def _compile(text: str, mode: str, chars: str):
    toks = sorted(set(chars))
    vocab = gramask.Vocabulary.from_tokens(
        [c.encode() for c in toks] + [b"</s>"], eos_token_id=len(toks)
    )
    g = gramask.Grammar.from_lark(text, lexer=mode)
    return gramask.compile(g, vocab, cache=False, progress=False), toks


def _forced_verdict(cg, toks: list[str], text: str) -> bool:
    c = cg.constraint()
    for ch in text:
        i = toks.index(ch)
        if not c.allowed()[i]:
            with pytest.raises(gramask.TokenRejected):
                c.advance(i)
            return False
        c.advance(i)
    return bool(c.allowed()[len(toks)]) and c.is_complete()


ALPHABET = "".join(sorted({c for g, t, *_ in CASES for c in t} | set("abcdefghinortvxyz=+-*;\n ")))


@pytest.mark.filterwarnings("ignore:.*can never be followed by:UserWarning")  # basic: KEY=VALUE
@pytest.mark.parametrize(("grammar", "text", "ctx", "basic"), CASES)
def test_verdicts_in_both_modes(grammar: str, text: str, ctx: bool, basic: bool) -> None:
    for mode, want in (("contextual", ctx), ("basic", basic)):
        cg, toks = _compile(grammar, mode, ALPHABET)
        assert is_program(cg, text) is want, (mode, text)
        assert _forced_verdict(cg, toks, text) is want, (mode, text)


@pytest.mark.parametrize("grammar", [BINARY, ASSIGN, CONFIG, KEYWORDS, CALLS])
def test_contextual_verdicts_agree_with_lark(grammar: str) -> None:
    """lark's LALR parser with its contextual lexer decides; every case above agrees."""
    parser = lark.Lark(grammar, parser="lalr", lexer="contextual")
    for g, text, ctx, _ in CASES:
        if g is grammar:
            assert lark_accepts(parser, text) is ctx, text


def test_random_masked_walks_give_texts_lark_parses() -> None:
    """Walks that follow the contextual masks and stop at EOS produce texts lark parses."""
    rnd = random.Random(0)
    for grammar in (ASSIGN, CONFIG, KEYWORDS, CALLS):
        parser = lark.Lark(grammar, parser="lalr", lexer="contextual")
        cg, toks = _compile(grammar, "contextual", ALPHABET)
        done = 0
        for _ in range(60):
            c = cg.constraint()
            for _step in range(30):
                m = c.allowed()
                if m[len(toks)] and (rnd.random() < 0.3 or m.sum() == 1):
                    break
                ids = [i for i in range(len(toks)) if m[i]]
                c.advance(rnd.choice(ids))
            if c.is_complete():
                done += 1
                assert lark_accepts(parser, c.text), repr(c.text)
        assert done > 10


def test_lexer_mode_is_part_of_the_grammar_identity() -> None:
    a = gramask.Grammar.from_lark(BINARY, lexer="contextual")
    b = gramask.Grammar.from_lark(BINARY, lexer="basic")
    assert a.fingerprint() != b.fingerprint()
    assert gramask.Grammar.from_json(a.to_json()).lexer == "contextual"
    with pytest.raises(gramask.GrammarError, match="lexer"):
        gramask.Grammar.from_lark(BINARY, lexer="dynamic")


def test_bundled_grammars_declare_their_mode() -> None:
    for name in ("python", "c", "json", "sql"):
        assert gramask.grammars.lexer_mode(name) == "basic"
        assert gramask.grammars.load(name).lexer == "basic"
    assert gramask.grammars.load("json", lexer="contextual").lexer == "contextual"


# --------------------------------------------------------------------------- diagnostics

SHADOW = 'start: A | B | C\nA: /[ab]+/\nB: "ab"\nC: /a/\n'


def test_basic_mode_shadowed_terminal_is_a_warning_naming_both(caplog) -> None:  # type: ignore[no-untyped-def]
    # lark builds the grammar (its collision check only warns) and never lexes C: neither
    # does gramask, and the two accept the same texts
    vocab = gramask.Vocabulary.from_tokens([b"a", b"b", b"</s>"], eos_token_id=2)
    g = gramask.Grammar.from_lark(SHADOW, lexer="basic")
    with caplog.at_level("WARNING", logger="gramask"):
        cg = gramask.compile(g, vocab, cache=False, progress=False)
    assert re.search(r"terminal C can never be produced: A .*'a'", caplog.text)
    oracle = lark.Lark(SHADOW, parser="earley", lexer="basic")
    for text in ["a", "b", "ab", "ba", "aab", ""]:
        assert is_program(cg, text) == lark_accepts(oracle, text), text


def test_basic_mode_language_emptied_by_a_shadowed_terminal_is_an_error() -> None:
    # every program needs B, which the ignored A always wins: lark builds it and accepts
    # nothing; a constraint would allow no token, not even EOS
    vocab = gramask.Vocabulary.from_tokens([b"a", b"b", b"</s>"], eos_token_id=2)
    g = gramask.Grammar.from_lark('start: B\nA: /a+/\nB: /a/\n%ignore A\n', lexer="basic")
    with pytest.raises(gramask.GrammarError, match=r"language is empty.*terminal B can never"):
        gramask.compile(g, vocab, cache=False, progress=False)
    ok = gramask.Grammar.from_lark('start: B | "b"\nA: /a+/\nB: /a/\n%ignore A\n',
                                   lexer="basic")
    assert is_program(gramask.compile(ok, vocab, cache=False, progress=False), "ab")


def test_basic_mode_shadowed_terminal_leaves_no_dead_end() -> None:
    # after "x" only B is expected, and B never wins over A: lark refuses every "x...", and
    # the mask never offers "x" (a dead end)
    text = 'start: "x" B "y" | A | "y" C\nA: /a+/\nB: /a/\nC: "!" | /a/\n'
    vocab = gramask.Vocabulary.from_tokens([b"a", b"x", b"y", b"!", b"</s>"], eos_token_id=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg = gramask.compile(gramask.Grammar.from_lark(text, lexer="basic"), vocab,
                             cache=False, progress=False)
    oracle = lark.Lark(text, parser="earley", lexer="basic")
    m = cg.constraint().allowed()
    assert not m[vocab.token_id(b"x")] and m[vocab.token_id(b"a")]
    for t in ["a", "aa", "xay", "y!", "ya", "x"]:
        assert is_program(cg, t) == lark_accepts(oracle, t), t


def test_partial_shadows_and_collisions_are_listed_and_logged(caplog) -> None:
    from gramask.compiler.diagnostics import lexer_diagnostics
    from gramask.compiler.lexer import build_lexer_dfa
    from gramask.compiler.parse_tables import build_parse_tables

    vocab = gramask.Vocabulary.from_tokens([b"a", b"b", b"</s>"], eos_token_id=2)
    # the longest lexeme (lark's order drops C wherever A is expected, so it never collides:
    # tests/test_lark_contextual_order.py), and every match kept (lark's rule would make B
    # win "ab" from A: tests/test_heldout_lark.py)
    g = replace(gramask.Grammar.from_lark(SHADOW, lexer="contextual", keywords_win=False),
                lark_order=())
    with caplog.at_level("WARNING", logger="gramask"):
        cg = gramask.compile(g, vocab, cache=False, progress=False)
    pairs = {(d["terminal"], d["other"], d["example"]) for d in cg.stats()["lexer_diagnostics"]}
    assert pairs == {("A", "C", "a"), ("A", "B", "ab")}
    assert "both match 'ab'" in caplog.text
    kw = gramask.Grammar.from_lark(KEYWORDS, lexer="basic")
    dfa = build_lexer_dfa(kw.terminals)
    diags = lexer_diagnostics(kw, dfa, build_parse_tables(kw))
    assert [(d.kind, d.terminal, d.example) for d in diags] == [("partial_shadow", "NAME", "int")]


def test_reserved_keywords_are_logged_at_info_not_warned(caplog) -> None:
    """In basic mode a literal winning over NAME on its own text is the point (reserved
    keywords): INFO, so compiling the bundled grammars does not warn."""
    vocab = gramask.Vocabulary.from_tokens([b"int", b"x", b";", b" ", b"</s>"], eos_token_id=4)
    g = gramask.Grammar.from_lark(KEYWORDS, lexer="basic")
    with caplog.at_level("INFO", logger="gramask"):
        gramask.compile(g, vocab, cache=False, progress=False)
    levels = {r.levelname for r in caplog.records if "reserved keyword" in r.getMessage()}
    assert levels == {"INFO"}
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


@pytest.mark.parametrize(
    ("text", "error", "line"),
    [
        ("start: A\n\nA: /a(?=b)/\n", gramask.UnsupportedRegexError, 3),
        ("start: A\nA: /(a)\\1/\n", gramask.UnsupportedRegexError, 2),
        ("start: A B\nA: \"a\"\nB: /b?/\n", gramask.GrammarError, 3),
        ("start: A\nA: /a[/\n", gramask.GrammarError, 2),
    ],
)
def test_bad_terminals_name_the_terminal_and_line(text: str, error: type, line: int) -> None:
    with pytest.raises(error) as e:
        gramask.Grammar.from_lark(text)
    assert e.value.line == line
    assert ("A" in str(e.value)) or ("B" in str(e.value))


# --------------------------------------------------------------------------- tables vs walks


@pytest.mark.parametrize("grammar", [ASSIGN, CONFIG, KEYWORDS, CHAINS, OPEN_ENDS])
def test_table_masks_equal_token_walks_with_real_vocab(grammar: str) -> None:
    """The contextual tables (forks decided per parser state) give exactly the mask of
    walking every token's bytes under the contextual rule (the vocabulary trie walk)."""
    from gramask.runtime.core.contextual_lexer import ContextualLexer

    vocab = gramask.Vocabulary.bundled("gpt2")
    cg = gramask.compile(gramask.Grammar.from_lark(grammar), vocab, cache=False, progress=False)
    assert cg.tables.contextual
    cx = cg._runtime().contextual
    ref = ContextualLexer(cg.dfa, cx.ctx, cx.prio, cx._tokens, cx._special)  # no tables
    rnd = random.Random(1)
    for walk in range(4):
        # every other walk starts deep inside the parse (cuts fall inside the prefix)
        c = cg.constraint(prefix=DEEP_PREFIX.get(grammar, "") * (walk % 2))
        walk_comparing_masks(c, cx, ref, rnd, 20)


def test_basic_tables_have_no_contextual_nodes() -> None:
    vocab = gramask.Vocabulary.from_tokens([b"a", b"b", b"</s>"], eos_token_id=2)
    g = gramask.Grammar.from_lark('start: "a" B\nB: "b"\n', lexer="basic")
    t = gramask.compile(g, vocab, cache=False, progress=False).tables
    assert not t.contextual and "node_alt" not in t.arrays() and "lex_sets" not in t.arrays()


# --------------------------------------------------------------------------- command line


@pytest.mark.filterwarnings("ignore:.*can never be followed by:UserWarning")  # basic: KEY=VALUE
def test_cli_compile_lexer_flag_and_inspect(tmp_path, capsys) -> None:
    from gramask.cli import main

    src = tmp_path / "kv.lark"
    src.write_text(CONFIG)
    for mode in ("basic", "contextual"):
        out = tmp_path / f"kv.{mode}.gmask"
        args = ["compile", str(src), "--vocab", "gpt2", "-o", str(out), "-q", "--no-cache"]
        assert main([*args, "--lexer", mode]) == 0
        assert main(["inspect", str(out), "--diagnostics"]) == 0
        text = capsys.readouterr().out
        assert f"({mode} lexer)" in text
        cg = gramask.CompiledGrammar.load(out)
        assert cg.grammar.lexer == mode and cg.tables.contextual == (mode == "contextual")
    # contextual: the saved artifact still lexes `name=foo` (basic cannot)
    assert cg.constraint("name=foo\n").is_complete()
    bad = tmp_path / "bad.lark"
    bad.write_text("start: A\n\nA: /a(?!b)/\n")
    assert main(["compile", str(bad), "--vocab", "gpt2", "-q", "--no-cache"]) == 1
    err = capsys.readouterr().err
    assert "terminal A" in err and "line 3" in err


def test_branch_whose_continuation_kills_the_token_survives_the_cache(tmp_path):
    """A BRANCH node whose "lexeme continues" side kills the token stores tail -1; the artifact
    check once refused that, so such a grammar (the bundled C grammar in the contextual mode
    among them) was rebuilt on every compile with a CacheWarning."""
    g = gramask.Grammar.from_lark('start: (A | B)* C\nA: /a+b/\nB: "a"\nC: "c"')
    vocab = gramask.Vocabulary.from_tokens([b"a", b"b", b"c", b"aac", b"ab", b"</s>"],
                                           eos_token_id=5)
    first = gramask.compile(g, vocab, cache_dir=tmp_path, progress=False)
    c = first.tables.class_winnable.shape[0]
    assert (first.tables.node_tail[c:] < 0).any()  # the case this pins
    again = gramask.compile(g, vocab, cache_dir=tmp_path, progress=False)  # no CacheWarning
    assert again.info["from_cache"]
    for prefix in ("", "a", "aab", "ab"):
        assert np.array_equal(first.constraint(prefix).allowed(),
                              again.constraint(prefix).allowed())


def test_collision_listing_stops_at_its_limit() -> None:
    """Overlapping terminals collide pairwise (n² pairs): the listing stops at the limit."""
    from gramask.compiler.diagnostics import MAX_LISTED, lexer_diagnostics
    from gramask.compiler.lexer import build_lexer_dfa
    from gramask.compiler.parse_tables import build_parse_tables

    n = 50  # R1..R50 all match "x" * 50: 1,225 pairs
    g = gramask.Grammar.from_lark(
        "start: (" + " | ".join(f"R{i}" for i in range(1, n + 1)) + ")+\n"
        + "".join(f"R{i}: /x{{{i}}}[a-z]*/\n" for i in range(1, n + 1)), lexer="contextual")
    g = replace(g, lark_order=())  # (lark's order: the first that matches wins, no collision)
    dfa, pt = build_lexer_dfa(g.terminals), build_parse_tables(g)
    assert len(lexer_diagnostics(g, dfa, pt)) == MAX_LISTED < n * (n - 1) // 2
    few = lexer_diagnostics(g, dfa, pt, limit=3)
    assert [(d.terminal, d.other, d.example) for d in few] == [
        ("R1", "R2", "xx"), ("R1", "R3", "xxx"), ("R2", "R3", "xxx")]


def test_an_ignored_terminal_that_never_wins_is_a_warning(caplog) -> None:  # type: ignore[no-untyped-def]
    # lark's python.lark: COMMENT is part of _NEWLINE, which wins on every comment
    vocab = gramask.Vocabulary.from_tokens([b"a", b"#", b"\n", b"</s>"], eos_token_id=3)
    text = 'start: (A | _NL)*\nA: "a"\n_NL: (/\\n/ | COMMENT)+\nCOMMENT: /#[^\\n]*/\n%ignore COMMENT\n'
    g = gramask.Grammar.from_lark(text, lexer="basic")
    with caplog.at_level("WARNING", logger="gramask"):
        cg = gramask.compile(g, vocab, cache=False, progress=False)
    assert "COMMENT can never be produced" in caplog.text
    assert cg.constraint("a#x\na").is_complete()


def test_keywords_win_off_keeps_every_match() -> None:
    """llguidance's reading (``keywords_win=False``): the lexeme ``if`` is the keyword and the
    name, and the parser continues with whichever fits: ``if (a) = c;`` is a call of ``if``."""
    toks = sorted(set(ALPHABET))
    vocab = gramask.Vocabulary.from_tokens([c.encode() for c in toks] + [b"</s>"],
                                           eos_token_id=len(toks))
    soft = gramask.Grammar.from_lark(CALLS, keywords_win=False)
    assert not soft.keywords_win and gramask.Grammar.from_lark(CALLS).keywords_win
    assert soft.fingerprint() != gramask.Grammar.from_lark(CALLS).fingerprint()
    cg = gramask.compile(soft, vocab, cache=False, progress=False)
    assert is_program(cg, "if (a) = c;") and is_program(cg, "if (a) x = c;")
