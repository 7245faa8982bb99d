"""The contextual lexer mode's token tables for a grammar with Python-style indentation.

Oracle: walking the vocabulary as a byte trie under the contextual rule (``trie_mask``, the
path the mode took before these tables) is exact. Every mask the table path computes, in
prefix-only walks, fill-in-the-middle and token budgets, must equal it bit for bit. The
vocabulary is small and made for the cases the newline's width decides: tokens that end a
newline lexeme inside themselves (its width counted in the token, or joined to the carry
of a line that began before it), tabs after spaces, dedents, brackets across lines,
comments and continuation lines.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import gramask
from gramask.runtime.core import contextual_lexer as cl
from gramask.runtime.core.contextual_trie import trie_mask
from gramask.runtime.core.parse_state import PUID
from gramask.runtime.core.terminal_sets import VocabTrie

WORDS = [
    "\n", "\n    ", "\n        ", "\n\t", "\n\n", "\n  \n", "    ", "  ", "\t", " \t", "\t ",
    ":\n", ":\n    ", "):\n", "):\n        ", "\n    return", "\n        pass", "  x", "   y",
    "\tx", " \tx", "  pass", "\n\n    x", "\nx", "\n#", "# c\n", "# c", "  # c\n    ",
    "\\\n", "\\\n    ", "(\n", ",\n    ", "\n)", "]\n", "def ", "return ", " = ", "if ",
    "else", "pass", "self", "x", "y", " in ", "for ", "class ", "\f", "\n\f  ",
]

SNIPPETS = [
    # blocks, dedents by one and by two, a blank line
    "def f(x):\n    if x:\n        return 1\n    return 2\n\n\nclass A:\n    pass\n",
    # brackets across lines, a comment inside them and after a block, a continuation line
    "x = [1,\n     2,  # two\n  3]\ny = (x +\n\t1)\nif x:\n    z = 1 + \\\n        2\n"
    "    # done\n",
    # tabs, a tab after spaces (TabError: no newline may end that line), a form feed
    "if x:\n\ty = 1\n\tif y:\n\t\tpass\n\f\nfor i in x:\n  pass\n",
]


@pytest.fixture(scope="module")
def py() -> tuple[gramask.CompiledGrammar, list[bytes], VocabTrie]:
    toks = [bytes([b]) for b in range(32, 127)] + [b"\t", b"\f"]
    toks += [w.encode() for w in WORDS if w.encode() not in toks]
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    cg = gramask.compile(gramask.grammars.load("python", lexer="contextual"), vocab,
                         cache=False, progress=False)
    assert cg.tables.contextual  # the tables this file is about
    return cg, toks, VocabTrie(vocab.token_tuple, vocab.special_mask)


@pytest.fixture
def checked(py, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every new mask of a table-backed contextual lexer compared with the trie walk."""
    trie = py[2]
    seen: set[tuple[int, int, int, int]] = set()
    count = [0]
    orig = cl.ContextualLexer.mask

    def mask(self: cl.ContextualLexer, p, q: int, carry: int) -> np.ndarray:
        m = orig(self, p, q, carry)
        key = (id(self), p[PUID], q, carry)
        if self.tables is not None and key not in seen:
            seen.add(key)
            ref = trie_mask(self, trie, p, q, carry, self.vocab_size)
            assert np.array_equal(m, ref), (q, carry, np.flatnonzero(m != ref)[:8])
            count[0] += 1
        return m

    monkeypatch.setattr(cl.ContextualLexer, "mask", mask)
    return count


_RUNS = itertools.count(1)


def _fresh(cg: gramask.CompiledGrammar) -> gramask.RuntimeLimits:
    """Limits unlike any before: constraints made with them start a runtime of their own
    (empty memos), so each test checks masks whatever ran before it."""
    return dataclasses.replace(cg.limits, mask_cache=cg.limits.mask_cache + next(_RUNS))


def _tokenize(toks: list[bytes], text: str) -> list[int]:
    """Greedy longest match (every byte is a token, so it always succeeds)."""
    data, out, i = text.encode(), [], 0
    by_len = sorted(range(len(toks)), key=lambda t: -len(toks[t]))
    while i < len(data):
        t = next(t for t in by_len if data.startswith(toks[t], i))
        out.append(t)
        i += len(toks[t])
    return out


def _force(c: gramask.Constraint, ids: list[int]) -> None:
    for t in ids:
        assert c.allowed()[t], c.text[-30:]
        c.advance(t)
    c.allowed()


def test_prefix_walks_match_the_trie(py, checked: list[int]) -> None:
    cg, toks, _ = py
    lim = _fresh(cg)
    for text in SNIPPETS:
        c = cg.constraint(limits=lim)
        _force(c, _tokenize(toks, text))
        assert c.is_complete()
    # lines that no newline may end: a tab after spaces, a dedent to no open level
    for text in ("if x:\n  \ty = 1", "if x:\n        y = 1\n    z = 2"):
        c = cg.constraint(limits=lim)
        ids = _tokenize(toks, text)
        for t in ids[:-1]:
            if not c.allowed()[t]:
                break
            c.advance(t)
    assert checked[0] > 100


def test_fill_in_the_middle_matches_the_trie(py, checked: list[int]) -> None:
    cg, toks, _ = py
    text, lim = SNIPPETS[0], _fresh(cg)
    for a, b in [(10, 40), (52, 80)]:
        c = cg.constraint(prefix=text[:a], suffix=text[b:], limits=lim)
        _force(c, _tokenize(toks, text[a:b]))
        assert c.allowed()[cg.vocab.eos_token_id]
    assert checked[0] > 30


def test_budgets_match_the_trie(py, checked: list[int]) -> None:
    cg, toks, _ = py
    ids = _tokenize(toks, SNIPPETS[0][:14])
    c = cg.constraint(max_tokens=len(ids) + 4, limits=_fresh(cg))
    _force(c, ids)
    assert checked[0] > 10


def test_lazy_and_saved_tables_match_the_trie(py, checked: list[int], tmp_path) -> None:
    """Rows walked on demand (a grammar compiled per request), and the tables written to an
    artifact and read back (the newline widths travel as ``lex_nl``)."""
    from gramask.compiler.pipeline import build

    cg, toks, _ = py
    lazy = build(cg.grammar, cg.vocab, progress=False, lazy=True)
    path = tmp_path / "py.gmask"
    cg.save(path)
    loaded = gramask.CompiledGrammar.load(path)
    assert np.array_equal(loaded.tables.lex_nl, cg.tables.lex_nl)
    assert (cg.tables.lex_nl >= 0).any()
    ids = _tokenize(toks, SNIPPETS[1][:40])
    for g in (lazy, loaded):
        _force(g.constraint(limits=_fresh(g)), ids)
    assert checked[0] > 30
