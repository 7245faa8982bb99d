"""GBNF front end: llama.cpp's published grammars (tests/data/gbnf, MIT) and grammars of our
own in the same style, checked against a character-level oracle: lark's Earley parser with
the ``dynamic_complete`` lexer over a direct translation (every literal and character class a
terminal, every match length tried), which is what llama.cpp's grammar means."""

from __future__ import annotations

import functools
import pathlib
import re

import lark
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.errors import GrammarError, InvalidPrefixError
from gramask.frontends.gbnf_syntax import ANY, Alt, Cls, Lit, Node, Ref, Seq, parse_gbnf

from ._support import is_program, lark_accepts

DATA = pathlib.Path(__file__).parent / "data" / "gbnf"


# ----------------------------------------------------------------------------- the oracle
def _oracle_char(c: int) -> str:
    # lark turns \xNN escapes into the raw character before the regex compiles: escape
    # regex metacharacters with a backslash, write the others as escapes
    ch = chr(c)
    if ch == "/":
        return "\\/"
    if ch.isascii() and ch.isprintable():
        return re.escape(ch)
    return f"\\x{c:02x}" if c <= 0xFF else (f"\\u{c:04x}" if c <= 0xFFFF else f"\\U{c:08x}")


def _oracle_class(node: Cls) -> str:
    if node == ANY:
        return "/(?s:.)/"
    body = "".join(_oracle_char(lo) if lo == hi else f"{_oracle_char(lo)}-{_oracle_char(hi)}"
                   for lo, hi in node.ranges)
    return f"/[{'^' if node.negated else ''}{body}]/s"


def _lark_oracle_text(text: str) -> str:
    """GBNF → Lark text that lark parses character by character (dynamic_complete)."""
    rules, _ = parse_gbnf(text)
    names = {n: f"r{i}" for i, n in enumerate(rules)}

    def expr(node: Node) -> str:
        if isinstance(node, Lit):
            if not node.text:
                return "_empty"
            return " ".join(_oracle_class(Cls(((ord(c), ord(c)),))) for c in node.text)
        if isinstance(node, Cls):
            return _oracle_class(node)
        if isinstance(node, Ref):
            return names[node.name]
        if isinstance(node, Seq):
            return "(" + " ".join(expr(x) for x in node.items) + " _empty)"
        if isinstance(node, Alt):
            return "(" + " | ".join(expr(x) for x in node.items) + ")"
        inner = expr(node.item)
        if node.hi is None:
            return f"({inner} ~ {node.lo} {inner}*)" if node.lo else f"{inner}*"
        if node.hi == 0:
            return "_empty"
        return f"({inner} ~ {node.lo}..{node.hi})" if node.lo else f"({inner} ~ 1..{node.hi})?"

    lines = ["start: r_root", "_empty: ", f"r_root: {names['root']}"]
    lines += [f"{names[n]}: {expr(body)}" for n, body in rules.items()]
    return "\n".join(lines)


@functools.cache
def _oracle(text: str) -> lark.Lark:
    return lark.Lark(_lark_oracle_text(text), parser="earley", lexer="dynamic_complete")


def _in_language(text: str, s: str) -> bool:
    parser = _oracle(text)  # a broken translation must fail the test, not read as "rejects"
    return lark_accepts(parser, s)


# ----------------------------------------------------------------------------- gramask side
BYTE_VOCAB = gramask.Vocabulary.from_tokens(
    [bytes([b]) for b in range(256)] + [b"</s>"], eos_token_id=256
)


@functools.cache
def _compiled(text: str, vocab: str = "bytes") -> gramask.CompiledGrammar:
    v = BYTE_VOCAB if vocab == "bytes" else gramask.Vocabulary.bundled(vocab)
    return gramask.compile(gramask.Grammar.from_gbnf(text), v, cache=False, progress=False)


def _viable(cg: gramask.CompiledGrammar, s: str) -> bool:
    try:
        cg.constraint(prefix=s)
    except InvalidPrefixError:
        return False
    return True


# ----------------------------------------------------------------------------- the table
CASES: dict[str, tuple[list[str], list[str]]] = {
    "json.gbnf": (
        ['{"a": 1}', '{}', '{"k": [1, -2, true, false, {"x": "y\\n\\u00e9"}]}',
         '{ "s": "héllo"}', '{"a":[]}'],
        ['{"a": 1.5}', '[1]', '{"a" 1}', '{"a": tru}', '{"a": "\x01"}', '{"a":1}}',
         '{"a": 1} '],
    ),
    "json_arr.gbnf": (
        ['[\n1,\n2]', '[\n]', '[\n{"a": [1.5e3, null]},\n"x"]', '[\n-0.25]'],
        ['[1]', '[\n01]', '[\n1,2]', '[\n1] '],
    ),
    "arithmetic.gbnf": (
        ["a=b\n", "x1 *2 = (y +2 *z)\n", "a=b\nc=d\n", "a = ( b ) \n"],
        ["a=b", "=b\n", "A=b\n", "a==b\n", "a=b+\n"],
    ),
    "chess.gbnf": (
        ["1. e4 e5\n2. Nf3 Nc6\n", "1. O-O O-O-O\n10. exd5 Qxd8+\n", "1. e8=Q a1\n2. a2 a3\n"],
        ["1. e4 e5\n", "1. e4 e5\n2. Nf3\n", "1. e9 e5\n2. a2 a3\n", "1. e4  e5\n2. a2 a3\n"],
    ),
    "list.gbnf": (
        ["- a\n", "- one\n- two words\n", "- é中\n"],
        ["- \n", "-a\n", "- a", "- a\r\n", "- a\u2028b\n"],
    ),
    "japanese.gbnf": (
        ["こんにちは", "カタカナ 漢字", "あ\nい"],
        ["", "abc", "あ  い", "あ "],
    ),
    "english.gbnf": (
        ["Hello, world!", "a b\tc\nd", "x"],
        ["", "a  b", "é", " a"],
    ),
    "c.gbnf": (
        ["int main(){return 0;}", "int f(int x){x = x+1;if(x<2){return x;}}",
         "char c(){/* a * b */}", "float g(){// hi\n}"],
        ["int main(){return 0}", "intmain(){}", "int f(){x==1;}", "int f(){/* */ */}"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_llama_cpp_grammars_accept_and_reject(name: str) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    cg = _compiled(text)
    good, bad = CASES[name]
    for s in good:
        assert _in_language(text, s), f"oracle rejects a good sample {s!r}"
        assert is_program(cg, s), f"{name}: gramask rejects {s!r}"
    for s in bad:
        assert not _in_language(text, s), f"oracle accepts a bad sample {s!r}"
        assert not is_program(cg, s), f"{name}: gramask accepts {s!r}"


def _alphabet(name: str) -> str:
    good, bad = CASES[name]
    return "".join(sorted(set("".join(good + bad))))


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_membership_matches_the_character_level_oracle(name: str, data: st.DataObject) -> None:
    """Random strings (mutated samples and free text over the grammar's characters): gramask
    accepts exactly what llama.cpp's character-level grammar accepts, and every prefix of an
    accepted string is viable."""
    text = (DATA / name).read_text(encoding="utf-8")
    good, _ = CASES[name]
    alphabet = _alphabet(name)
    base = data.draw(st.sampled_from(good))
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(base)), st.integers(0, 2),
                                         st.sampled_from(alphabet)), max_size=3))
    s = base
    for pos, kind, ch in edits:
        pos = min(pos, len(s))
        s = s[:pos] + ch + s[pos:] if kind == 0 else (
            s[:pos] + s[pos + 1:] if kind == 1 else s[:pos] + ch + s[pos + 1:])
    cg = _compiled(text)
    expected = _in_language(text, s)
    assert is_program(cg, s) == expected, s
    if expected:
        for k in range(len(s)):
            assert _viable(cg, s[:k]), (s, k)


# ----------------------------------------------------------------------------- vs hand Lark
ARITH_LARK = r"""
start: (expr "=" ws term "\n")+
expr: term (/[-+*\/]/ term)*
term: ident | num | "(" ws expr ")" ws
ident: /[a-z][a-z0-9_]*/ ws
num: /[0-9]+/ ws
ws: /[ \t\n]/*
"""


@functools.cache
def _arith_pair() -> tuple[gramask.CompiledGrammar, gramask.CompiledGrammar]:
    vocab = gramask.Vocabulary.bundled("gpt2")
    text = (DATA / "arithmetic.gbnf").read_text(encoding="utf-8")
    a = gramask.compile(gramask.Grammar.from_gbnf(text), vocab, cache=False, progress=False)
    # GBNF keeps every match of a lexeme; lark's reading (``keywords_win``) would make the
    # literal "\n" beat ws's /[ \t\n]/ where the parser takes both
    b = gramask.compile(gramask.Grammar.from_lark(ARITH_LARK, keywords_win=False), vocab,
                        cache=False, progress=False)
    return a, b


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=st.text(alphabet="ab1_ =+*()\n", max_size=14))
def test_masks_equal_a_hand_written_lark_equivalent(s: str) -> None:
    """GBNF and a Lark grammar written by hand for the same language: the same masks over
    GPT-2's 50k tokens after every viable prefix (and the same viability)."""
    a, b = _arith_pair()
    ok_a, ok_b = _viable(a, s), _viable(b, s)
    assert ok_a == ok_b, s
    if ok_a:
        np.testing.assert_array_equal(a.constraint(prefix=s).allowed(),
                                      b.constraint(prefix=s).allowed())


# ----------------------------------------------------------------------------- terminals
def test_lexical_rules_become_terminals() -> None:
    g = gramask.Grammar.from_gbnf((DATA / "json.gbnf").read_text(encoding="utf-8"))
    names = {t.name for t in g.terminals}
    assert "STRING" in names  # the whole JSON string is one lexeme
    assert g.lexer == "contextual"
    c = gramask.Grammar.from_gbnf((DATA / "c.gbnf").read_text(encoding="utf-8"))
    assert "NUMBER" in {t.name for t in c.terminals}
    # its keywords are not reserved ("int = 1;" assigns to a variable named int): they are
    # split into characters, so that "inx" can still be read as an identifier
    assert "DATATYPE" not in {t.name for t in c.terminals}


def test_ambiguous_boundary_is_split_to_stay_exact() -> None:
    # "a" then "ab" vs "ab" then "b": a greedy lexer with terminal "ab" would take "ab" first
    text = 'root ::= x "b"\nx ::= "a" | "ab"\n'
    cg = _compiled(text)
    for s in ["ab", "abb", "a", "b", "abbb"]:
        assert is_program(cg, s) == _in_language(text, s), s


def test_whole_regular_grammar_is_one_terminal() -> None:
    g = gramask.Grammar.from_gbnf('root ::= [a-z]+ "x" [0-9]{2,3}\n')
    assert len(g.terminals) == 1
    cg = _compiled('root ::= [a-z]+ "x" [0-9]{2,3}\n')
    assert is_program(cg, "abx12") and is_program(cg, "xx123")
    assert not is_program(cg, "abx1") and not is_program(cg, "abx1234")


def test_bounded_repetition_of_a_recursive_rule() -> None:
    text = 'root ::= item{2,3}\nitem ::= "(" item? ")"\n'
    cg = _compiled(text)
    for s in ["()()", "(())()()", "()", "()()()()", "(()"]:
        assert is_program(cg, s) == _in_language(text, s), s


def test_escapes_and_any() -> None:
    text = 'root ::= "\\x41\\u00e9\\U0001F600\\t" . [^\\n]\n'
    cg = _compiled(text)
    assert is_program(cg, "Aé😀\tzz")
    assert is_program(cg, "Aé😀\t\n中")
    assert not is_program(cg, "Aé😀\tz\n")


def test_escapes_xgrammar_reads_too() -> None:
    """C's control escapes, ``\\'`` ``\\/`` ``\\?``, and regex punctuation escaped inside a
    class (``[a\\-z]`` is three characters, ``[\\^a]`` not negated) were "unknown escape"."""
    cg = _compiled('root ::= "\\0\\a\\b\\e\\f\\v\\\'\\/\\?" [a\\-z]+ [\\^\\.]\n')
    assert is_program(cg, "\0\a\b\x1b\f\v'/?a-z^")
    assert is_program(cg, "\0\a\b\x1b\f\v'/?-.")
    assert not is_program(cg, "\0\a\b\x1b\f\v'/?b^")
    with pytest.raises(GrammarError, match="unknown escape"):
        gramask.Grammar.from_gbnf('root ::= "\\-"\n')  # outside a class: still refused


def test_a_line_that_begins_with_a_bar_goes_on_with_the_rule() -> None:
    """``|`` at the start of the next line (XGrammar reads it so; it was "expected a rule
    name"); a comment or blank line between is skipped, the next rule still starts a rule."""
    text = 'root ::= "a"\n    | "b" # one\n\n    | x\nx ::= "c"\n  | "d"\n'
    cg = _compiled(text)
    for s, ok in (("a", True), ("b", True), ("c", True), ("d", True), ("ab", False)):
        assert is_program(cg, s) == ok, s
    with pytest.raises(GrammarError, match="expected a rule name"):
        gramask.Grammar.from_gbnf('root ::= "a"\n"b"\n')


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ("root ::= <[1000]> x\n", "token syntax", 1),
        ("root ::= a\na ::= <think> \"x\"\n", "token syntax", 2),
        ("root ::= !<[7]>\n", "token syntax", 1),
        ("root ::= undefined-rule\n", "undefined rule 'undefined-rule'", 1),
        ('root ::= "a"\nroot ::= "b"\n', "defined twice", 2),
        ('x ::= "a"\n', "no 'root' rule", None),
        ('root ::= "a\n', "unterminated string", 1),
        ('root ::= [a-\n', "unterminated character class", 1),
        ('root ::= "\\q"\n', "unknown escape", 1),
        ('root ::= "a"{3,1}\n', "maximum is below the minimum", 1),
        ('root ::= ("a"\n', "expected ')'", 2),
        ('root ::= ""\n', "only the empty string", None),
        ('root ::= "a" root\n', "language is empty", None),
    ],
)
def test_bad_grammars_are_refused_clearly(text: str, needle: str, line: int | None) -> None:
    with pytest.raises(GrammarError) as e:
        gramask.Grammar.from_gbnf(text)
    assert needle in str(e.value)
    if line is not None:
        assert e.value.line == line


def test_cli_compiles_a_gbnf_file(tmp_path: pathlib.Path) -> None:
    from gramask.cli import main

    src = tmp_path / "list.gbnf"
    src.write_text((DATA / "list.gbnf").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "list.gmask"
    assert main(["compile", str(src), "--vocab", "gpt2", "-o", str(out), "--no-cache",
                 "-q"]) == 0
    cg = gramask.CompiledGrammar.load(out)
    assert cg.grammar.start == "root"


def test_readme_gbnf_example_prints_what_it_shows(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.test_readme import _run_section

    _run_section("GBNF grammars", capsys)


@pytest.mark.parametrize("kw", [{}, {"max_tokens": 4}])
def test_long_right_recursive_whitespace_completes(kw: dict[str, int]) -> None:
    """llama.cpp's older JSON grammars write ``ws ::= ([ \\t\\n] ws)?``: one Earley origin
    per blank, and the completion costs walked that chain recursively, so 1,500 blanks (a
    model stuck on spaces) raised RecursionError in ``shortest_completion`` and in a
    ``max_tokens`` mask (gbnf_real_fuzz, json_arr.gbnf, qwen2, seed 4101)."""
    cg = _compiled('root ::= "[" ws "1" ws "]"\nws ::= ([ \\t\\n] ws)?\n')
    c = cg.constraint("[1" + " \n\t" * 500, **kw)
    assert c.allowed()[ord("]")]
    done = c.shortest_completion()
    assert b"".join(cg.vocab.token_bytes(t) for t in done.token_ids) == b"]"
