"""Constraint behaviour: exact masks against oracles, EOS, clone/rollback, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import lark
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask

from ._support import PARENS, PARENS_TOKENS, compiled, hf_tokenizer, lark_accepts, tiny

# --------------------------------------------------------------------------- tiny grammars

def check(grammar_text, tokens, passing, failing, start="start"):
    """Each passing sequence of token texts is allowed step by step and complete at the end;
    each failing one is rejected at some step or incomplete at the end."""
    cg, vocab = tiny(grammar_text, tokens, start)
    ids = {t: i for i, t in enumerate(tokens)}
    for seq in passing:
        c = cg.constraint()
        for t in seq:
            assert c.allowed()[ids[t]], (seq, t)
            c.advance(ids[t])
        assert c.is_complete(), seq
        assert c.allowed()[vocab.eos_token_id]
    for seq in failing:
        c = cg.constraint()
        ok = True
        for t in seq:
            if not c.allowed()[ids[t]]:
                with pytest.raises(gramask.TokenRejected):
                    c.advance(ids[t])
                ok = False
                break
            c.advance(ids[t])
        if ok:
            assert not c.is_complete(), seq
            assert not c.allowed()[vocab.eos_token_id]


def test_check_parens():
    check(
        PARENS,
        PARENS_TOKENS,
        passing=[[], ["(", ")"], ["((", "a", "))"], ["a", " ", "b"], ["(a", ")", " (", "1", ")"],
                 ["a1"], ["1a"], ["a", "b"]],
        failing=[[")"], ["(", "(", ")"], ["((", ")))"], ["(a"]],  # last: valid prefix, incomplete
    )


def test_completion_chains_deeper_than_the_completion_memo():
    # "x" after 600 "n"s completes 600 nested phrases at once: the memoised completions
    # recurse only so deep (earley._MEMO_DEPTH), the rest is walked without the memo
    n = 600
    check('start: "n" start | "x"', ["n", "x", "nn"],
          passing=[["n"] * n + ["x"], ["nn"] * (n // 2) + ["n", "x"]],
          failing=[["n"] * n, ["n"] * n + ["x", "x"], ["n"] * n + ["x", "n"]])


def test_maximal_munch_keywords_and_operators():
    grammar = r"""
    start: stmt*
    stmt: "if" NAME ":" | NAME "=" NAME | NAME "==" NAME
    NAME: /[a-z]+/
    %ignore " "
    """
    tokens = ["if", "iffy", " ", "x", ":", "=", "==", "i", "f", "fy", "=="]
    check(
        grammar,
        tokens,
        passing=[["if", " ", "x", ":"], ["iffy", "=", "x"], ["i", "f", "fy", "==", "x"],
                 ["x", "=", "=", "x"]],  # "=" "=" lexes as "==" (greedy), so x == x
        failing=[["if", "=", "x"],  # "if" is a keyword, not a NAME
                 ["i", "f", ":"]],
    )


# --------------------------------------------------------------------------- oracle: lark

_PARENS_LARK = lark.Lark(PARENS, parser="lalr", lexer="basic")


def _viable(text: str) -> bool:
    """Every viable prefix of PARENS completes by closing brackets (after a space if needed)."""
    return any(lark_accepts(_PARENS_LARK, text + sep + ")" * k) for k in range(12) for sep in ("", " "))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, len(PARENS_TOKENS) - 1), max_size=10), st.randoms())
def test_parens_masks_equal_oracle(choices, rnd):
    cg, _vocab = tiny(PARENS, PARENS_TOKENS)
    c = cg.constraint()
    text = ""
    for choice in choices:
        m = c.allowed()
        want = np.array([_viable(text + t) for t in PARENS_TOKENS] + [lark_accepts(_PARENS_LARK, text)])
        assert (m == want).all(), (text, np.flatnonzero(m != want))
        allowed = np.flatnonzero(m[:-1])
        if not allowed.size:
            break
        t = int(allowed[choice % len(allowed)]) if rnd.random() < 0.9 else choice
        if not m[t]:
            with pytest.raises(gramask.TokenRejected):
                c.advance(t)
            continue
        c.advance(t)
        text += PARENS_TOKENS[t]
        assert c.text == text


# --------------------------------------------------------------------------- clone/rollback


def test_clone_and_rollback_restore_masks():
    cg, _vocab = tiny(PARENS, PARENS_TOKENS)
    c = cg.constraint()
    seq = [0, 6, 1, 14, 0, 9]
    masks = [c.allowed()]
    for t in seq:
        c.advance(t)
        masks.append(c.allowed())
    d = c.clone()
    d.advance(1)
    assert d.num_tokens == c.num_tokens + 1
    assert (c.allowed() == masks[-1]).all()  # the clone is independent
    for k in range(1, len(seq) + 1):
        c.rollback(1)
        assert (c.allowed() == masks[-1 - k]).all()
    assert c.text == ""
    with pytest.raises(ValueError):
        c.rollback(1)


def test_rejected_token_leaves_constraint_unchanged():
    cg, vocab = tiny(PARENS, PARENS_TOKENS)
    c = cg.constraint("(")
    before = c.allowed()
    with pytest.raises(gramask.TokenRejected):
        c.advance(PARENS_TOKENS.index(")))"))
    with pytest.raises(gramask.TokenRejected):
        c.advance(len(vocab) + 5)
    with pytest.raises(gramask.TokenRejected):
        c.advance(vocab.eos_token_id)  # not complete yet
    assert (c.allowed() == before).all()
    assert c.num_tokens == 0


def test_eos_finishes_and_rollback_reopens():
    cg, vocab = tiny(PARENS, PARENS_TOKENS)
    c = cg.constraint()
    c.advance(PARENS_TOKENS.index("()"))
    assert c.allowed()[vocab.eos_token_id]
    c.advance(vocab.eos_token_id)
    assert c.is_finished and not c.allowed().any()
    c.rollback(1)
    assert not c.is_finished and c.allowed()[vocab.eos_token_id]


def test_invalid_prefix_names_position():
    cg, _ = tiny(PARENS, PARENS_TOKENS)
    with pytest.raises(gramask.InvalidPrefixError) as e:
        cg.constraint("(a))b")
    assert e.value.position == 3  # the second ")"


# --------------------------------------------------------------------------- JSON, real vocab

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False,
                                                                       allow_infinity=False)
    | st.text(max_size=12),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=6), kids,
                                                               max_size=4),
    max_leaves=12,
)


@settings(max_examples=25, deadline=None)
@given(json_values, st.sampled_from([None, 2]), st.booleans())
def test_json_documents_forced_token_by_token(value, indent, ensure_ascii):
    cg = compiled("json", "gpt2")
    vocab = cg.vocab
    doc = json.dumps(value, indent=indent, ensure_ascii=ensure_ascii)
    c = cg.constraint()
    for t in hf_tokenizer("gpt2")(doc):
        assert c.allowed()[t], (doc, c.text, vocab.token_bytes(t))
        c.advance(t)
    assert c.is_complete() and c.allowed()[vocab.eos_token_id]
    assert c.text == doc


def test_json_random_walks_are_sound():
    cg = compiled("json", "gpt2")
    vocab = cg.vocab
    rng = np.random.default_rng(0)
    lengths = np.array([len(vocab.token_bytes(i)) for i in range(len(vocab))], dtype=float)
    completes = 0
    for _ in range(15):
        c = cg.constraint()
        for _step in range(40):
            m = c.allowed()
            ids = np.flatnonzero(m)
            p = np.exp(-lengths[ids])
            p[ids == vocab.eos_token_id] = p.sum()  # stop as soon as it may
            t = int(rng.choice(ids, p=p / p.sum()))
            if t == vocab.eos_token_id:
                json.loads(c.text)  # sound: EOS only when the text is complete JSON
                completes += 1
                break
            c.advance(t)
            if c.is_complete():
                json.loads(c.text)
    assert completes >= 1


# --------------------------------------------------------------------------- Python, real vocab

PY_SNIPPETS = [
    "import os\n\n\ndef f(x, *args, y=1, **kw):\n    return [i ** 2 for i in range(x) if i]\n",
    "class A(B, metaclass=M):\n    '''doc'''\n\n    @property\n    def x(self) -> int:\n"
    "        if (n := len(self)) > 2:\n            return n\n        return -1\n",
    "async def g():\n    async with a as b, c:\n        await b\n    x = {**d, 'k': f'{v!r}'}\n",
    "try:\n\tpass\nexcept* ValueError as e:\n\traise\nfinally:\n\tprint(1, sep='')\n",
    "match command.split():\n    case [action, *rest] if action:\n        pass\n"
    "    case {'x': 1, **kw}:\n        pass\n    case _:\n        pass\n",
    "x = (1 +\n     2)  # comment\ny = [\n    1,\n    2,\n]\nprint(x, y)",
    "if a:\n    if b:\n        pass\n# trailing comment at column 0\n    else:\n        pass\n",
]


@pytest.mark.parametrize("vocab", ["deepseek-v4", "qwen2"])
@pytest.mark.parametrize("src", PY_SNIPPETS, ids=range(len(PY_SNIPPETS)))
def test_python_snippets_forced_with_real_vocab(vocab, src):
    import ast

    ast.parse(src)
    cg = compiled("python", vocab)
    c = cg.constraint()
    for t in hf_tokenizer(vocab)(src):
        assert c.allowed()[t], (c.text, cg.vocab.token_bytes(t))
        c.advance(t)
    assert c.is_complete(), c.text
    assert c.allowed()[cg.vocab.eos_token_id]


@pytest.mark.parametrize(
    ("bad", "position"),
    [("def f(:\n", 6), ("x = = 1\n", 4), ("if x:\npass\n", 6), ("return )\n", 7),
     ("def if(): pass\n", 4), ("x = 1\n    y = 2\n", 5)],
)
def test_python_invalid_prefixes_raise_with_position(bad, position):
    cg = compiled("python", "deepseek-v4")
    with pytest.raises(gramask.InvalidPrefixError) as e:
        cg.constraint(bad)
    assert e.value.position == position


def test_python_eos_only_when_complete():
    cg = compiled("python", "deepseek-v4")
    eos = cg.vocab.eos_token_id
    for prefix, complete in [("x = 1", True), ("x = (1,", False), ("def f():", False),
                             ("def f():\n    pass", True), ("if x:\n    y\nelse", False),
                             ("'''doc", False), ("# just a comment", True), ("", True)]:
        c = cg.constraint(prefix)
        assert c.is_complete() == complete, prefix
        assert c.allowed()[eos] == complete, prefix


# --------------------------------------------------------------------------- layering


def test_runtime_imports_neither_lark_nor_torch_nor_scipy(tmp_path):
    cg, _ = tiny(PARENS, PARENS_TOKENS)
    path = tmp_path / "p.gmask"
    cg.save(path)
    code = textwrap.dedent(
        f"""
        import sys
        import gramask
        cg = gramask.CompiledGrammar.load({str(path)!r})
        c = cg.constraint("(a")
        c.allowed(); c.advance(1)
        bad = [m for m in ("lark", "torch", "scipy", "interegular", "transformers")
               if m in sys.modules]
        print(",".join(bad))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_python_random_walks_are_sound():
    """Whenever a random masked walk is complete, ast.parse accepts it. ASCII tokens only:
    non-ASCII identifier characters are over-approximated (docs/semantics.md)."""
    import ast

    cg = compiled("python", "deepseek-v4")
    v = cg.vocab
    lengths = np.array([len(v.token_bytes(i)) for i in range(len(v))], dtype=float)
    ascii_ok = np.array([v.token_bytes(i).isascii() for i in range(len(v))], dtype=float)
    rng = np.random.default_rng(0)
    complete = 0
    for _ in range(12):
        c = cg.constraint()
        for _step in range(25):
            ids = np.flatnonzero(c.allowed())
            p = np.exp(-2 * lengths[ids]) * ascii_ok[ids]
            p[ids == v.eos_token_id] = 0
            c.advance(int(rng.choice(ids, p=p / p.sum())))
            if c.is_complete():
                complete += 1
                ast.parse(c.text)
    assert complete > 20


@pytest.mark.parametrize(("text", "ok"), [("  x = 1\n", False), ("  \nx = 1\n", True),
                                          ("   # c\nx = 1\n", True), ("\n\n", True)])
def test_python_first_line_indentation(text, ok):
    import ast

    try:
        ast.parse(text)
        assert ok
    except SyntaxError:
        assert not ok
    cg = compiled("python", "deepseek-v4")
    try:
        complete = cg.constraint(text).is_complete()
    except gramask.InvalidPrefixError:
        complete = False
    assert complete == ok


@pytest.mark.parametrize(("prefix", "hash_ok"), [("x = a.", False), ("def f(", True),
                                                 ("x = 1", True), ("x = [1,", True),
                                                 ("if x:", True), ("return x +", False)])
def test_no_dead_end_through_ignored_lexemes(prefix, hash_ok):
    """A comment is ignored, but only a newline can follow it: where the parser cannot take a
    newline (outside brackets, mid-expression), '#' would be a dead end and is masked."""
    cg = compiled("python", "deepseek-v4")
    assert cg.constraint(prefix).allowed()[cg.vocab.token_id("#")] == hash_ok


def test_comment_at_end_of_input_is_complete():
    cg = compiled("python", "deepseek-v4")
    c = cg.constraint("x = 1  # done")
    assert c.is_complete() and c.allowed()[cg.vocab.eos_token_id]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_parser_states_leave_the_garbage_collector(lexer: str) -> None:
    """Earley sets and parser states are exact tuples of atoms and older such tuples, so
    CPython's cyclic GC stops tracking them after a collection: tens of thousands of them,
    built by cold masks, must not make every later full collection slower (the slowest cold
    masks were full collections). A class instance, or a list inside one, would stay tracked."""
    import gc

    from gramask.runtime.core.earley import ORIGINS
    from gramask.runtime.core.parse_state import ES

    cg, vocab = tiny("start: \"(\" start \")\" | \"x\" (\",\" \"x\")*", ["(", ")", "x", ",", "x,"],
                     lexer=lexer)
    c = cg.constraint()
    for t in ["(", "(", "x,", "x", ")", ")"]:
        c.allowed()
        c.advance(vocab.token_id(t))
    def tracked() -> list[object]:
        out: list[object] = []
        for _q, _carry, p in c._history:
            out += [x for x in (p, p[ES], *p[ES][ORIGINS:]) if gc.is_tracked(x)]
        return out

    for _ in range(2 * len(c._history) + 2):  # a tuple met before its members waits for the
        if not tracked():  # next pass: one pass per level at worst
            break
        gc.collect()
    assert not tracked()
    with pytest.raises(TypeError):  # never hashed by value: its origins nest
        hash(c._history[-1][2])
