"""``tools/fim_fuzz.py`` itself: its random indented grammars give texts lark's Indenter
takes, cuts split a text exactly, and a short run counts what it checked."""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent / "tools"
sys.path.insert(0, str(TOOLS))

import fim_fuzz  # noqa: E402
import fim_fuzz_checks as chk  # noqa: E402
import lark_fuzz as lf  # noqa: E402
import lark_fuzz_gen as gen  # noqa: E402


def test_indented_grammars_derive_texts_lark_s_indenter_takes() -> None:
    built = taken = 0
    for seed in range(60):
        rnd = random.Random(seed)
        gg = gen.indented_grammar(rnd)
        assert gg.indent and "%declare _INDENT _DEDENT" in gg.text
        try:
            p = lf.oracle(gg.text, "basic", gen.Indenter())
        except Exception:
            continue
        built += 1
        texts = fim_fuzz.texts_of(p, gg, rnd, 10)
        taken += bool(texts)
        assert all("\n" in t for t in texts)  # every statement ends a line
    assert built >= 5 and taken >= 3, (built, taken)


def test_cuts_and_pieces() -> None:
    rnd = random.Random(0)
    for _ in range(200):
        s = "".join(rnd.choice("ab \n") for _ in range(rnd.randint(0, 9)))
        cut = fim_fuzz.cut_at(s, rnd)
        assert cut.text == s
    ps = chk.pieces(["abc", "bcd"], longest=2)
    assert ps[0] == "" and set(ps) == {"", "a", "b", "c", "d", "ab", "bc", "cd"}


@pytest.mark.slow
def test_a_short_run_writes_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                       ) -> None:
    out = tmp_path / "fim.jsonl"
    assert fim_fuzz.main(["--grammars", "6", "--seed", "0", "--cuts", "2", "--walks", "1",
                          "--broken", "1", "--slack", "4", "--no-minimise",
                          "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "grammars:" in printed and "forced tokens:" in printed
    for line in out.read_text().splitlines():
        assert {"grammar_id", "mode", "kind"} <= set(json.loads(line))


# an indented block whose only statement is an empty line: two newlines that only an ignored
# comment keeps apart (lark's Indenter takes 'y\n #\n'); fim_fuzz seed 410, grammar 0, minimised
BLOCK_OF_BLANK_LINES = r"""start: stmt+
stmt: _NEWLINE
| /[a-z]+/ _NEWLINE _INDENT stmt+ _DEDENT
COMMENT: /#[^\n]*/
%ignore COMMENT
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""


def test_a_stuck_search_that_a_piece_completes_is_a_completion_missed() -> None:
    """A state a short piece of text completes is no dead end, even where the prefix-only
    constraint's search misses it too (then it is the search's miss, not the greedy
    lexer's)."""
    cg = lf.compile_(BLOCK_OF_BLANK_LINES, "basic", lf.small_vocab())
    p = lf.oracle(BLOCK_OF_BLANK_LINES, "basic", gen.Indenter())
    env = chk.Env(cg, lambda t: chk.lark_accepts(p, t), lambda t: [], random.Random(0), 0,
                  Counter(), "basic", pieces=["", "\n", "\n #\n"])
    assert chk.lark_accepts(p, "y\n #\n")
    c = cg.constraint("y")
    problem = chk.dead_end(env, chk.Cut("y", "", ""), c)
    assert problem is None or (problem.kind == "completion-missed"
                               and problem.witness == "\n #\n"), problem


def test_an_empty_language_as_lexed_is_documented_only_where_lark_takes_no_text() -> None:
    # T0 must be followed by a word, and the greedy lexer reads 'i' + a word as one word
    empty = gen.GenGrammar("start: T0 W\nT0: /i[nf]?/\nW: /[a-z_][a-z0-9_]*/\n", "ifn_")
    refused = {"kind": "refused", "error": "GrammarError: x: the language is empty as the "
               "lexer splits text: ..."}
    assert fim_fuzz.lexed_empty(dict(refused), empty, "basic", random.Random(0), 50)
    some = gen.GenGrammar("start: T0 W\nT0: /i[nf]?/\nW: \" \" /[a-z]+/\n", "if ")
    case = dict(refused)
    assert not fim_fuzz.lexed_empty(case, some, "basic", random.Random(0), 50)
    assert case["lark_takes"]
    other = {"kind": "refused", "error": "GrammarError: x: something else"}
    assert not fim_fuzz.lexed_empty(other, some, "basic", random.Random(0), 50)
