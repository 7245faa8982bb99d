"""GBNF read as XGrammar reads it: grammars from ``tools/gbnf_fuzz.py`` (random GBNF against
XGrammar's matcher) pinned on a small vocabulary, with XGrammar as the oracle, and the one
place the two dialects part (``\\x`` escapes), pinned to llama.cpp's reading."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

import gramask

from ._support import is_program

xg = pytest.importorskip("xgrammar")
testing = pytest.importorskip("xgrammar.testing")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import gbnf_fuzz_gen as gen  # noqa: E402

TOKENS = [*gen.ALPHABET, "n", "t", "ab", "in", "int", "xy", "  ", "()", "\"\\", "é]", "01"]

# escapes in literals and classes, a negated class that takes 'é', '{m,}', an empty literal,
# alternatives continued over lines, comments, left and mutual recursion
GRAMMARS = [
    'root ::= "a\\xe9" [^a-c\\]\\n]{1,} | "\\\\" r0  # comment "x" [y]\n'
    'r0 ::= r0 [x-z-] | "" | "\\u00e9"\n',
    'root ::= ([0-9] r1){2,} |\n    "(" root ")"\n'
    'r1 ::= [ -+]* | "in" r2?\nr2 ::= r1 "\\"" | [^ ]{0,2}\n',
    'root ::= r0{2,3} "int"?\nr0 ::= "ab" | [a-c]+ "]" | "a" r0 "b"\n',
]


def _oracle(text: str) -> object:
    return testing._get_matcher_from_grammar(xg.Grammar.from_ebnf(text))


def _accepts(m: object, s: str) -> bool:
    m.reset()  # type: ignore[attr-defined]
    return bool(m.accept_string(s)) and bool(m.is_terminated())  # type: ignore[attr-defined]


@pytest.mark.parametrize("k", range(len(GRAMMARS)))
def test_membership_matches_xgrammar(k: int) -> None:
    text = GRAMMARS[k]
    vocab = gramask.Vocabulary.from_tokens([*TOKENS, "</s>"], eos_token_id=len(TOKENS))
    cg = gramask.compile(gramask.Grammar.from_gbnf(text), vocab, cache=False, progress=False)
    m = _oracle(text)
    rnd = random.Random(k)
    texts = ["", "a\xe9", "a\xe9é", "\\", "\\é", "\\éx-", "0 1+", "(0in)", "0in\"0", "abab",
             "a]ab", "aabbint", "c]abint", "aab", "0", "((0 0))"]
    for _ in range(60):
        texts.append(gen.mutate(rnd.choice(texts), rnd))
    for s in texts:
        assert is_program(cg, s) == _accepts(m, s), s
    # from every prefix of an accepted text, the masks' shortest completion is XGrammar's too
    for s in [s for s in texts if _accepts(m, s)]:
        for i in range(len(s) + 1):
            done = cg.constraint(s[:i]).shortest_completion()
            assert _accepts(m, s[:i] + done.text), (s[:i], done.text)


def test_hex_escapes_take_two_digits_as_llama_cpp_does() -> None:
    """``\\x410`` is 'A' then '0' (llama.cpp); XGrammar 0.2.8 reads all the hex digits that
    follow (U+0410). gramask keeps llama.cpp's reading: the tools/gbnf_fuzz.py generator
    spells '-' in classes bare for this reason."""
    vocab = gramask.Vocabulary.from_tokens(["A", "0", "\u0410", "</s>"], eos_token_id=3)
    cg = gramask.compile(gramask.Grammar.from_gbnf('root ::= "\\x410"\n'), vocab,
                         cache=False, progress=False)
    assert is_program(cg, "A0") and not is_program(cg, "\u0410")


# Found by tools/gbnf_fuzz.py. A completion spelled '[^a-c]' by its first readable byte,
# 'd': with no 'd' token the planner found no completion, though the mask allows 'x'.
@pytest.mark.parametrize("text", ["root ::= [^a-c]\n", 'root ::= "a" [^a-c\\]\\n]{1,} | "b"\n'])
def test_completion_spells_a_class_with_a_byte_the_vocabulary_has(text: str) -> None:
    vocab = gramask.Vocabulary.from_tokens(["a", "b", "c", "x", "y", "</s>"], eos_token_id=5)
    cg = gramask.compile(gramask.Grammar.from_gbnf(text), vocab, cache=False, progress=False)
    m = _oracle(text)
    for prefix in ["", "a"]:
        if not _accepts_prefix(m, prefix):
            continue
        c = cg.constraint(prefix)
        done = c.shortest_completion()
        for t in done.token_ids:
            c.advance(t)
        assert c.is_complete() and _accepts(m, prefix + done.text), (prefix, done.text)


def _accepts_prefix(m: object, s: str) -> bool:
    m.reset()  # type: ignore[attr-defined]
    return bool(m.accept_string(s))  # type: ignore[attr-defined]


# Found by tools/gbnf_fuzz.py: 'r1' never finishes, so 'root' derives only the empty string;
# compiling crashed (IndexError in the completion planner) instead of refusing.
@pytest.mark.parametrize("text", ['root ::= "\\\\"+ r1 | r1*\nr1 ::= "x" r1\n'])
def test_a_language_of_only_the_empty_string_after_pruning_is_refused(text: str) -> None:
    vocab = gramask.Vocabulary.from_tokens(["x", "\\", "</s>"], eos_token_id=2)
    with pytest.raises(gramask.GrammarError, match=r"only the empty string.*r1"):
        gramask.compile(gramask.Grammar.from_gbnf(text), vocab, cache=False, progress=False)
