"""The compiled tables against brute force: walking each token's bytes through the lexer DFA."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask.compiler.lexer import build_lexer_dfa
from gramask.compiler.regex_bytes import regex_to_byte_dfa, utf8_sequences
from gramask.compiler.table_rows import expand_row
from gramask.compiler.tables import build_token_tables, walk_token
from gramask.encoding import BROKEN, TAB_UNIT, decode_nl
from gramask.errors import InvalidRegexError, UnsupportedRegexError
from gramask.grammar import TerminalSpec


def _decode(tt, n_terms, n):
    heads = []
    while tt.node_head[n] >= 0:
        h = int(tt.node_head[n])
        heads.append(("NL", *decode_nl(n_terms, h)) if h >= n_terms else h)
        n = int(tt.node_tail[n])
    return heads, int(tt.node_tail[n])


def _reference(dfa, tt, nl, q, data):
    r = walk_token(dfa, q, data)
    if r is None:
        return None
    lexemes, q_end = r
    heads = []
    for term, start, end in lexemes:
        if term == nl:
            # the runtime's indentation carry: a newline or form feed resets it; spaces and
            # tabs counted apart, BROKEN for a tab after a space (or counts a head cannot hold)
            lines = re.split(rb"[\n\f]", data[max(start, 0) : end])
            relative = start == -1 and len(lines) == 1
            tail = lines[-1]
            sp, tb = tail.count(b" "), tail.count(b"\t")
            broken = re.search(rb" .*\t", tail, re.S) is not None or max(sp, tb) >= 1024
            heads.append(("NL", BROKEN if broken else sp + TAB_UNIT * tb, relative))
        elif not dfa.ignored[term]:
            heads.append(term)
    return heads, int(tt.state_class[q_end])


def _check_tables(grammar, vocab, n_states=40, seed=0):
    dfa = build_lexer_dfa(grammar.terminals)
    nl = (
        [t.name for t in grammar.terminals].index(grammar.indentation.newline)
        if grammar.indentation
        else -1
    )
    special = np.array([vocab.is_special(i) for i in range(len(vocab))])
    tt = build_token_tables(dfa, vocab.tokens, special, nl_terminal=nl)
    nt = dfa.num_terminals
    row0 = dict(zip(*[a.tolist() for a in expand_row(tt, 0)], strict=False))
    states = random.Random(seed).sample(range(dfa.num_states), min(n_states, dfa.num_states))
    mismatches = []
    bases: dict = {}  # the runtime's memo of expanded base rows gives the same rows
    for q in {0, *states}:
        idx, node = expand_row(tt, q)
        for a, b in zip((idx, node), expand_row(tt, q, bases), strict=True):
            assert np.array_equal(a, b)
        row = dict(zip(idx.tolist(), node.tolist(), strict=False))
        for t, data in enumerate(vocab.tokens):
            if special[t] or not data:
                assert t not in row
                continue
            if dfa.trans[q, data[0]] >= 0:
                got = _decode(tt, nt, row[t]) if t in row else None
            elif q == 0 or dfa.accept[q] < 0 or t not in row0:
                got = None
            else:
                heads, cls = _decode(tt, nt, row0[t])
                a = int(dfa.accept[q])
                if a == nl:
                    heads = [("NL", 0, True), *heads]
                elif not dfa.ignored[a]:
                    heads = [a, *heads]
                got = (heads, cls)
            ref = _reference(dfa, tt, nl, q, data)
            if ref != got:
                mismatches.append((q, data, ref, got))
    assert not mismatches, mismatches[:5]


@pytest.mark.parametrize("name", ["json", "python"])
def test_tables_match_brute_force_gpt2(name):
    _check_tables(gramask.grammars.load(name), gramask.Vocabulary.bundled("gpt2"))


def test_tables_match_brute_force_small_vocab_with_multibyte():
    g = gramask.Grammar.from_lark(
        r"""
        start: (WORD | STR | NUM | "(" | ")" | "==" | "=")*
        WORD: /(?:[a-z_]|[^\x00-\x7f])+/
        STR: /"(?:[^"\\\n]|\\.)*"/
        NUM: /[0-9]+(\.[0-9]+)?/
        %ignore /[ \t]+/
        """,
        lexer="basic",
    )
    toks = [b"a", b"ab", b"(", b")", b"=", b"==", b"===", b'"', b'"x', b'x"', b"\\", b"1", b"1.",
            b".5", b" ", b"  a", "é".encode(), "é".encode()[:1], "é".encode()[1:], "日本".encode(),
            "😀".encode()[:3], b'a"b', b'"")', b"\xff", b"1.2.3", b"a==b", b"a = b"]
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    _check_tables(g, vocab, n_states=1000)


# ---------------------------------------------------------------- regex → byte DFA


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 0x10FFFF), st.integers(0, 0x3000))
def test_utf8_sequences_cover_exactly_the_range(lo, span):
    hi = min(0x10FFFF, lo + span)
    seqs = list(utf8_sequences(lo, hi))
    rng = random.Random(lo)
    probes = {lo, hi, *(rng.randint(max(0, lo - 5), min(0x10FFFF, hi + 5)) for _ in range(50))}
    for cp in probes:
        if 0xD800 <= cp <= 0xDFFF:
            continue
        enc = chr(cp).encode()
        hit = any(
            len(s) == len(enc) and all(a <= b <= c for (a, c), b in zip(s, enc, strict=False)) for s in seqs
        )
        assert hit == (lo <= cp <= hi), (hex(cp), hex(lo), hex(hi))


@pytest.mark.parametrize(
    "pattern",
    [r"[^\"\\]+", r'"(?:[^"\\\n]|\\.)*"', r"(?:[A-Za-z_]|[^\x00-\x7f])\w*", r"(?i:select)",
     r"#[^\n]*", r"[é-ü]x", r"a|ab|abc", r"\d+(\.\d*)?([eE][+-]?\d+)?", r"[^a-z]{2,3}"],
)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_byte_dfa_agrees_with_re(pattern, data):
    # classes like \w and \d are ASCII in interegular (documented in docs/semantics.md)
    dfa = regex_to_byte_dfa("T", pattern)
    rx = re.compile(pattern, re.ASCII)
    member = data.draw(st.from_regex(rx, fullmatch=True), label="member")
    assert dfa.matches(member.encode()), member  # every member is accepted ...
    for cut in (member[:-1], member[1:], member + member[-1:]):  # ... near misses decide alike
        assert dfa.matches(cut.encode()) == bool(rx.fullmatch(cut)), cut
    text = data.draw(st.text(alphabet=st.sampled_from([*list('ab"\\\n é日😀#xSeLcT09.e+'), "ü"]),
                             max_size=8), label="text")
    assert dfa.matches(text.encode()) == bool(rx.fullmatch(text)), text


@pytest.mark.parametrize(
    ("pattern", "error", "words"),
    [
        (r"a(?!b)", UnsupportedRegexError, "lookahead"),
        (r"(?<=a)b", UnsupportedRegexError, "lookahead/lookbehind"),
        (r"(a)\1", UnsupportedRegexError, "backreference"),
        (r"^a", UnsupportedRegexError, "anchor"),
        (r"a(", InvalidRegexError, "invalid regex"),
    ],
)
def test_unsupported_regex_names_terminal_and_pattern(pattern, error, words):
    with pytest.raises(error) as e:
        build_lexer_dfa([TerminalSpec("MY_TERM", pattern)])
    assert "MY_TERM" in str(e.value)
    assert pattern in str(e.value)
    assert words in str(e.value)


def test_grammar_error_names_terminal_from_lark_text():
    text = 'start: FOO\nFOO: /a(?<!b)c/\n'
    with pytest.raises(UnsupportedRegexError, match="FOO") as e:  # at load, with its line
        gramask.Grammar.from_lark(text)
    assert e.value.line == 2


def test_grammar_syntax_error_has_line():
    with pytest.raises(gramask.GrammarError) as e:
        gramask.Grammar.from_lark("start: a\n\na: \"x\" )\n")
    assert e.value.line == 3


def test_grammar_undefined_rule_is_named():
    with pytest.raises(gramask.GrammarError, match="missing_rule"):
        gramask.Grammar.from_lark("start: missing_rule\n")
