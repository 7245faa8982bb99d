"""Fill-in-the-middle in the contextual lexer mode with Python-style indentation
(docs/semantics.md, "Fill-in-the-middle", the contextual mode).

The oracle for ends is gramask's own prefix constraint on ``P + middle + S`` in the contextual
mode (exact for that mode's language). That language is not quite Python: in the contextual
mode a keyword and a name compete only where the parser expects both, so ``if = 3`` is a
program and ``x intersect`` lexes as ``x in tersect`` (``ast.parse`` refuses both), which is
why ``ast.parse`` is not the oracle here. Masks may allow more than the exact set; they must
allow every true middle, and agree with the basic mode where the two languages agree.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import gramask
from gramask.errors import InvalidPrefixError

# real-looking code: nested blocks, brackets across lines, comments, decorators, strings
SOURCE = '''\
import os


class Store:
    """Keeps values by key."""

    def __init__(self, root, *, limit=8):
        self.root = root
        self.items = {}  # key -> value
        if limit < 0:
            raise ValueError(
                "limit must be >= 0",
            )
        self.limit = limit

    @property
    def size(self):
        return len(self.items)

    def put(self, key, value):
        if key in self.items:
            del self.items[key]
        elif len(self.items) >= self.limit:
            for old in list(self.items)[:1]:
                del self.items[old]
        self.items[key] = [value,
                           os.path.join(self.root, key)]
        return value


def main(args):
    s = Store(args[0])
    while args:
        s.put(args.pop(), 1)
    return s.size
'''

WORDS = ["    ", "self", "def ", "return ", " = ", "):\n", "\n        ", "items", " in ", "if "]


@pytest.fixture(scope="module")
def py() -> tuple[gramask.CompiledGrammar, gramask.CompiledGrammar, list[bytes]]:
    """The bundled Python grammar in both modes over the printable bytes and a few words."""
    toks = [bytes([b]) for b in range(32, 127)] + [b"\n"] + [w.encode() for w in WORDS]
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    ctx = gramask.compile(gramask.grammars.load("python", lexer="contextual"), vocab,
                          cache=False, progress=False)
    basic = gramask.compile(gramask.grammars.load("python", lexer="basic"), vocab,
                            cache=False, progress=False)
    return ctx, basic, toks


def _complete(cg: gramask.CompiledGrammar, text: str) -> bool:
    """The exact contextual-mode verdict on a whole text (prefix constraint)."""
    try:
        return cg.constraint(text).is_complete()
    except InvalidPrefixError:
        return False


def _spans(n: int, seed: int) -> list[tuple[int, int]]:
    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        a = rnd.randrange(len(SOURCE) - 2)
        out.append((a, min(len(SOURCE), a + rnd.randint(1, 40))))
    return out


def test_true_middles_are_never_blocked(py) -> None:
    """Forcing the true middle of spans of real code byte by byte: every byte allowed, EOS
    exactly where the whole text is a program and at the middle's end; the masks allow
    everything the basic mode allows (its language is inside the contextual mode's here:
    the contextual mode adds keywords where names can stand, ``self.def``, ``for = 1``, and
    allows a comment wherever something may follow it, docs/semantics.md)."""
    ctx, basic, toks = py
    index = {t: i for i, t in enumerate(toks)}
    eos = ctx.vocab.eos_token_id
    for a, b in [*_spans(4, 1), (0, 0), (len(SOURCE), len(SOURCE)), (140, 141)]:
        pre, mid, suf = SOURCE[:a], SOURCE[a:b], SOURCE[b:]
        c = ctx.constraint(prefix=pre, suffix=suf)
        cb = basic.constraint(prefix=pre, suffix=suf)
        for ch in mid.encode():
            m, mb = c.allowed(), cb.allowed()
            assert m[index[bytes([ch])]], (pre[-20:], c.text, chr(ch))
            assert not (mb & ~m).any(), (pre[-20:], c.text)
            if len(c.text) % 3 == 0:  # the oracle reads the whole text: a third of the steps
                assert m[eos] == _complete(ctx, pre + c.text + suf), (pre[-20:], c.text)
            c.advance(index[bytes([ch])])
            cb.advance(index[bytes([ch])])
        assert c.allowed()[eos] and c.is_complete(), (a, b)


@pytest.mark.parametrize(("prefix", "suffix"), [
    ("x = 1\n", "x\n= = 1\n"),  # the second line is no statement
    ("x = 1\n", "x\n'abc"),  # a string cut short
    ("", "x\n(\n"),  # a bracket left open at the end
    ("def f():\n    pass\n", "x\n  y\n    z\n"),  # an indent no line opened
])
def test_unconnectable_suffixes_raise(py, prefix: str, suffix: str) -> None:
    ctx, basic, _ = py
    for cg in (ctx, basic):
        with pytest.raises(gramask.InvalidSuffixError):
            cg.constraint(prefix=prefix, suffix=suffix)


@pytest.mark.parametrize(("prefix", "middle", "suffix"), [
    ("def f(x):\n    y = ", "x", "\n    return y\n"),
    ("def f(x):\n    if x:\n", "        return 1\n", "    return 2\n"),  # the middle indents
    ("def f(x):\n    if x:\n        return 1\n", "", "    return 2\n"),
    ("class A:\n    def f(self):\n        ", "pass\n\n", "x = A()\n"),  # dedents two blocks
    ("x = [1,\n", "     2", "]\n"),  # a newline inside brackets
    ("if x:\n    ", "y = (\n", "  1)\n"),  # the suffix closes the middle's bracket
    ("", "import os", ""),
])
def test_hand_cases(py, prefix: str, middle: str, suffix: str) -> None:
    """The true middle passes and ends; EOS only where the whole text is a program."""
    ctx, _, toks = py
    index = {t: i for i, t in enumerate(toks)}
    eos = ctx.vocab.eos_token_id
    c = ctx.constraint(prefix=prefix, suffix=suffix)
    done = ""
    for ch in middle:
        assert c.allowed()[eos] == _complete(ctx, prefix + done + suffix), done
        assert c.allowed()[index[ch.encode()]], (done, ch)
        c.advance(index[ch.encode()])
        done += ch
    assert c.is_complete() and c.allowed()[eos]


def test_random_walks_end_in_programs(py) -> None:
    """Masked random walks: whenever the constraint says complete, the whole text is a
    program of the contextual-mode grammar (and no walk is left with an empty mask before
    a few steps)."""
    ctx, _, _ = py
    rnd = random.Random(7)
    eos = ctx.vocab.eos_token_id
    claims = 0
    for a, b in _spans(5, 3):
        pre, suf = SOURCE[:a], SOURCE[b:]
        c = ctx.constraint(prefix=pre, suffix=suf)
        for _ in range(12):
            m = c.allowed()
            if m[eos]:
                claims += 1
                assert _complete(ctx, pre + c.text + suf), (pre[-20:], c.text, suf[:20])
            ids = np.flatnonzero(m)
            ids = ids[ids != eos]
            if not ids.size:
                break
            c.advance(int(rnd.choice(ids)))
    assert claims


@pytest.mark.slow  # the budget planner's first build (~3 s)
def test_budgets_with_indentation(py) -> None:
    """``max_tokens`` with a suffix: a budgeted walk that follows the masks ends complete."""
    ctx, _, _ = py
    eos = ctx.vocab.eos_token_id
    rnd = random.Random(1)
    pre, suf = "def f(x):\n    if x:\n", "    return 2\n"
    c = ctx.constraint(prefix=pre, suffix=suf, max_tokens=6)
    for _ in range(6):
        ids = np.flatnonzero(c.allowed())
        if ids.size == 1 and ids[0] == eos:
            break
        ids = ids[ids != eos]
        c.advance(int(rnd.choice(ids)))
    assert c.is_complete() and _complete(ctx, pre + c.text + suf)
