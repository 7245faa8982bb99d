"""Reserved keywords in the contextual lexer mode (gramask.compiler.keywords): the bundled
Python and C grammars lex keywords as their languages do; grammars that do not opt in keep
lark's contextual reading."""

from __future__ import annotations

import ast
import warnings

import pytest

import gramask
from gramask.compiler.keywords import reserved_pairs, soft_pairs
from gramask.errors import InvalidPrefixError

from ._support import walk_comparing_masks

# single bytes plus the pieces the cases below split at (one token each)
PIECES = ["if", " =", "def", "self", ".def", "self.def", " in", "tersect", "class", ".x", "match", " x",
          ":\n", "    ", "case", " 1", "pass", "type", "_", " 2", "\n", "int", " if", " ="]


@pytest.fixture(scope="module")
def py() -> tuple[gramask.CompiledGrammar, gramask.Vocabulary]:
    toks = sorted({*(bytes([b]) for b in range(32, 127)), b"\n",
                   *(p.encode() for p in PIECES)})
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    g = gramask.grammars.load("python", lexer="contextual")
    return gramask.compile(g, vocab, cache=False, progress=False), vocab


def _verdict(cg: gramask.CompiledGrammar, text: str) -> bool | None:
    """is_complete() of ``text`` as a prefix; None when it is no prefix at all."""
    try:
        return cg.constraint(text).is_complete()
    except InvalidPrefixError:
        return None


def test_bundled_python_reserves_its_hard_keywords_only(py) -> None:
    cg, _ = py
    g = cg.grammar
    assert g.reserved_keywords
    assert {s for s, _ in soft_pairs(g)} == {"MATCH", "CASE", "TYPE", "UNDERSCORE"}
    names = [t.name for t in g.terminals]
    kw = {names[s] for s, r in reserved_pairs(g, cg.dfa) if names[r] == "NAME"}
    assert {"IF", "DEF", "CLASS", "IN", "NONE", "TRUE", "AWAIT"} <= kw
    assert not kw & {"MATCH", "CASE", "TYPE", "UNDERSCORE"}


@pytest.mark.parametrize(("text", "cut", "piece"), [
    ("if = 3", "if", " ="),          # a keyword where a name is expected
    ("self.def", "self.def", "\n"),  # ... after a dot
    ("x intersect", "x in", "tersect"),  # a name is not cut into a keyword and a name
    ("def = 1", "def", " ="),
    ("class.x", "class", ".x"),
])
def test_keyword_texts_are_not_names(py, text: str, cut: str, piece: str) -> None:
    cg, vocab = py
    assert _verdict(cg, text) is not True and _verdict(cg, text + "\n") is not True
    with pytest.raises(SyntaxError):
        ast.parse(text)
    c = cg.constraint(cut)
    assert not c.allowed()[vocab.token_id(piece)], (text, piece)


@pytest.mark.parametrize("text", [
    "match = 1", "case.x", "type = 3", "_ = 2", "match x:\n    case 1:\n        pass",
    "x = a if b else c", "x in y", "for i in x:\n    pass",
    "match.case = _", "None", "y = True or not x",
])
def test_soft_keywords_and_keywords_in_place(py, text: str) -> None:
    cg, _ = py
    ast.parse(text)
    assert _verdict(cg, text) is True, text


def test_soft_keyword_tokens_stay_allowed_as_names(py) -> None:
    cg, vocab = py
    for cut, piece in [("", "match"), ("match", " ="), ("x.", "case"), ("", "type"),
                       ("type", " ="), ("", "_"), ("_", " =")]:
        assert cg.constraint(cut).allowed()[vocab.token_id(piece)], (cut, piece)


def test_fill_in_the_middle_and_budgets_reserve_too(py) -> None:
    """The contextual FIM end check (the suffix walked with the rule) and the budget's walked
    plans use the same allowed sets."""
    cg, vocab = py
    eos = vocab.eos_token_id
    c = cg.constraint("x = ", suffix="\ny = 2\n")
    c.advance(vocab.token_id("if"))
    assert not c.allowed()[eos] and not c.is_complete()
    c = cg.constraint("for i ", suffix="tersect:\n    pass\n")  # not `for i in tersect:`
    c.advance(vocab.token_id(" in"))
    assert not c.allowed()[eos]
    c.advance(vocab.token_id(" x"))
    assert c.allowed()[eos]
    ast.parse("for i in x" + "tersect:\n    pass\n")
    b = cg.constraint("x = ", max_tokens=1)
    assert not b.allowed()[vocab.token_id("if")] and b.allowed()[vocab.token_id("_")]


def test_random_masked_walks_are_python(py) -> None:
    """Tokens drawn from allowed() in the contextual mode: every complete text parses."""
    import random

    cg, vocab = py
    rnd = random.Random(0)
    eos = vocab.eos_token_id
    cuts = ["def f(x):\n    ", "for i in x:\n    y = ", "class A:\n    def g(self", "x = "]
    claims = 0
    for cut in cuts:
        for _ in range(6):
            c = cg.constraint(cut)
            for _ in range(12):
                m = c.allowed()
                if m[eos]:
                    claims += 1
                    with warnings.catch_warnings():  # `1or 2`: a SyntaxWarning in 3.11
                        warnings.simplefilter("ignore", SyntaxWarning)
                        ast.parse(cut + c.text)
                m[eos] = False
                pool = m.nonzero()[0]
                assert len(pool) or c.is_complete()
                if not len(pool):
                    break
                # favour the multi-byte pieces (keywords, names) over single characters
                multi = [int(t) for t in pool if len(vocab.token_bytes(int(t))) > 1]
                pick = multi if multi and rnd.random() < 0.6 else pool
                c.advance(int(pick[rnd.randrange(len(pick))]))
    assert claims > 0


def test_bundled_c_reserves_keywords() -> None:
    toks = sorted({*(bytes([b]) for b in range(32, 127)), b"\n"})
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    cg = gramask.compile(gramask.grammars.load("c", lexer="contextual"), vocab, cache=False,
                         progress=False)
    assert cg.grammar.reserved_keywords
    assert _verdict(cg, "int x = 3;") is True
    assert _verdict(cg, "int intx = 3;") is True
    assert _verdict(cg, "int if = 3;") is not True
    assert _verdict(cg, "int f(void) { return 1; }") is True
    assert _verdict(cg, "int f(void) { int while = 1; return 1; }") is not True


def test_lark_grammars_without_the_option_keep_lark_reading(tmp_path) -> None:
    text = 'start: "if" NAME | NAME "=" NAME\nNAME: /[a-z]+/\n%ignore " "\n'
    toks = [bytes([b]) for b in b"aeifxz= "]
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    plain = gramask.compile(gramask.Grammar.from_lark(text, lexer="contextual"), vocab,
                            cache=False, progress=False)
    res = gramask.compile(gramask.Grammar.from_lark(text, lexer="contextual",
                                                    reserved_keywords=True),
                          vocab, cache=False, progress=False)
    assert _verdict(plain, "x = if") is True  # lark's contextual lexer: a name here
    assert _verdict(res, "x = if") is not True
    assert _verdict(plain, "if x") is True and _verdict(res, "if x") is True
    assert plain.grammar.fingerprint() != res.grammar.fingerprint()
    assert "reserved_keywords" not in plain.grammar.to_json()  # old cache keys stay valid
    res.save(tmp_path / "r.gmask")  # the artifact keeps the option
    back = gramask.CompiledGrammar.load(tmp_path / "r.gmask")
    assert back.grammar.reserved_keywords and _verdict(back, "x = if") is not True


def test_contextual_tables_agree_with_token_walks_when_reserved() -> None:
    """The contextual tables (class vectors and plans keyed by the allowed set before the
    reserved pairs close it) give the mask of walking each token's bytes under the rule."""
    import random

    from gramask.runtime.core.contextual_lexer import ContextualLexer

    text = ('start: decl*\ndecl: "int" NAME ";" | NAME NAME ";" | "if" NAME "in" NAME ";"\n'
            'NAME: /[a-z]+/\n%ignore " "\n')
    toks = ["int", "in", "i", "n", "t", "if", "x", "intx", " ", ";", "f", " in", "t ", "nt",
            "ifx", " int", "int;", "x;", "s"]
    vocab = gramask.Vocabulary.from_tokens([*toks, "</s>"], eos_token_id=len(toks))
    cg = gramask.compile(gramask.Grammar.from_lark(text, reserved_keywords=True), vocab,
                         cache=False, progress=False)
    assert cg.tables.contextual
    cx = cg._runtime().contextual
    assert cx.reserved
    ref = ContextualLexer(cg.dfa, cx.ctx, cx.prio, cx._tokens, cx._special,
                          reserved=cx.reserved)  # no tables: the trie walk
    rnd = random.Random(1)
    # starts where the closed set differs from A: a keyword where a name is expected, a name
    # where only a keyword is
    for start in ["", "int", "int ", "x", "if x", "if x ", "if x i", "if x in", "if x in y"]:
        walk_comparing_masks(cg.constraint(start), cx, ref, rnd, 8)
    assert _verdict(cg, "int int;") is not True and _verdict(cg, "int intx;") is True
    assert _verdict(cg, "if x in y;") is True and _verdict(cg, "if x iny;") is not True
