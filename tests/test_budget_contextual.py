"""Token budgets (``max_tokens``) in the contextual lexer mode: every token a budget mask admits
has a completion walked with the contextual lexer itself (docs/semantics.md, "Token budgets").

Checked exactly on small grammars whose contextual reading differs from the basic one (a
keyword that is a name where only a name can come), against a breadth-first search over the
unbudgeted contextual constraint's own walks; and by random walks on the bundled C, SQL and
JSON grammars in the contextual mode, judged by ``is_complete`` and lark's contextual LALR
parser.
"""

from __future__ import annotations

import functools
import random
from dataclasses import replace

import lark
import numpy as np
import pytest

import gramask
from gramask.grammar import Grammar
from gramask.runtime.core.parse_state import PUID

from ._support import ExactFewest, follow_along_the_masks
from .test_budget import _walk_budget
from .test_contextual import ASSIGN, BINARY, CONFIG, KEYWORDS

SMALL = [
    (KEYWORDS, ["int", " int", "in", "t", "a", " a", ";", " ", "i", "nt", "int;", "a;", "inta"]),
    (ASSIGN, ["int", " ", "a", " a", "=", " =", "+=", "*", "0", ";", " 0;", "a =", "int a", "*="]),
    (CONFIG, ["a", "b", "=", "\n", "a=", "=b", "b\n", "a=b", "=\n"]),
    (BINARY, ["0", "1", "00", "11", "10", "01", "000", "111"]),
]


def _compile_small(grammar: str, tokens: list[str], longest: bool = False
                   ) -> gramask.CompiledGrammar:
    """``longest``: by the longest lexeme, not lark's terminal order (what the cases found
    before the contextual mode followed it were read by)."""
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    g = Grammar.from_lark(grammar, lexer="contextual")
    return gramask.compile(replace(g, lark_order=()) if longest else g, vocab, cache=False,
                           progress=False)


def _exact_walk(cg: gramask.CompiledGrammar, ex: ExactFewest, prefix: str, budget: int,
                rnd: random.Random) -> tuple[int, int, str]:
    """A random budget walk; every step the mask ⊆ the exact one, EOS exact, never empty;
    it ends complete. Returns (tokens the exact masks allow, of them the ones forbidden, the
    text generated)."""
    c = cg.constraint(prefix, max_tokens=budget)
    eos = len(ex.tokens)
    allowed = forbidden = 0
    while True:
        st = c._history[-1]
        left = c.remaining_tokens
        assert left is not None
        m = c.allowed()
        assert m.any(), (prefix, c.text)
        assert m[eos] == c._complete(st)
        for t, data in enumerate(ex.tokens):
            s = c._walk(st, data)
            want = not isinstance(s, int) and left >= 1 and ex.within(s, left - 1)
            assert want or not m[t], (
                f"{data!r} admitted after {prefix + c.text!r} with {left} left: no completion")
            allowed += want
            forbidden += want and not m[t]
        ids = np.flatnonzero(m)
        t = int(rnd.choice(ids))
        if t == eos:
            break
        c.advance(t)
    assert c.is_complete() and c.num_tokens <= budget
    return allowed, forbidden, c.text


def _lark_accepts(parser: lark.Lark, cg: gramask.CompiledGrammar, text: str) -> bool:
    """Does lark's contextual LALR parser accept ``text``? Where it does not, the cause must
    be one of the two contextual lexers' documented differences (docs/semantics.md: a lexeme
    that several allowed terminals match is all of them in gramask, one in lark): gramask's
    own unbudgeted constraint calls the text complete."""
    try:
        parser.parse(text)
        return True
    except lark.exceptions.LarkError:
        assert cg.constraint(text).is_complete(), text
        return False


@pytest.mark.parametrize(("grammar", "tokens"), SMALL)
def test_contextual_budget_masks_are_sound_and_mostly_exact(grammar: str,
                                                             tokens: list[str]) -> None:
    """Small grammars that lex differently in the two modes: the budget masks never admit a
    token after which no completion fits (exact search), and forbid few that fit."""
    cg = _compile_small(grammar, tokens)
    ex = ExactFewest(cg)
    parser = lark.Lark(grammar, parser="lalr", lexer="contextual")
    rnd = random.Random(0)
    allowed = forbidden = walks = parsed = 0
    for _ in range(40):
        # a prefix: a few random grammar-allowed tokens
        c = cg.constraint()
        for _step in range(rnd.randint(0, 4)):
            ids = np.flatnonzero(c.allowed()[:-1])
            if not ids.size:
                break
            c.advance(int(rnd.choice(ids)))
        prefix = c.text
        need = ex.fewest(c._history[-1], 6)
        if need is None:
            continue
        budget = need + rnd.randint(0, 3)
        try:
            b = cg.constraint(prefix, max_tokens=budget)
        except gramask.BudgetError as e:
            assert e.minimum > budget >= need  # gramask's minimum is an upper bound
            continue
        assert b.min_tokens_to_complete() >= need
        a, f, text = _exact_walk(cg, ex, prefix, budget, rnd)
        allowed += a
        forbidden += f
        walks += 1
        # the generated text and the shortest completion: programs for lark's contextual
        # parser too (but for the two contextual lexers' known differences)
        parsed += _lark_accepts(parser, cg, prefix + text)
        parsed += _lark_accepts(parser, cg, prefix + b.shortest_completion().text)
    assert walks >= 20 and parsed >= walks, (walks, parsed)
    # what is forbidden but fits is the planner's known upper bound (lexemes spelled one by
    # one): the exact answer here often ends with a token spanning three lexemes (" 0;")
    assert forbidden <= 0.2 * allowed, (forbidden, allowed)


INDENTED = r"""
start: (stmt | _NEWLINE)*
stmt: NAME ":" _NEWLINE _INDENT stmt+ _DEDENT | NAME NAME? _NEWLINE
NAME: /[a-z]+/
_NEWLINE: /(\r?\n[\t ]*)+/
%ignore " "
%declare _INDENT _DEDENT
"""


def test_contextual_budget_with_indentation_is_sound() -> None:
    """With Python-style indentation the carry matters: tokens are walked one by one and
    grouped by their full state (``MAX_LONE``). Sound against the exact search, few
    forbidden that fit (``if`` is a NAME: no keyword in this grammar)."""
    toks = ["a", "b", ":", "\n", "  ", "\n  ", " ", "a:", ":\n", "\n    ", "if", " if"]
    cg = _compile_small(INDENTED, toks)
    assert cg.grammar.indentation is not None
    ex = ExactFewest(cg)
    rnd = random.Random(0)
    allowed = forbidden = walks = 0
    for _ in range(30):
        c = cg.constraint()
        for _step in range(rnd.randint(0, 5)):
            ids = np.flatnonzero(c.allowed()[:-1])
            if not ids.size:
                break
            c.advance(int(rnd.choice(ids)))
        need = ex.fewest(c._history[-1], 6)
        if need is None:
            continue
        try:
            a, f, _text = _exact_walk(cg, ex, c.text, need + rnd.randint(0, 3), rnd)
        except gramask.BudgetError as e:
            assert e.minimum > need
            continue
        allowed += a
        forbidden += f
        walks += 1
    assert walks >= 20 and forbidden <= 0.1 * allowed, (walks, forbidden, allowed)


def test_keyword_as_name_budget_masks_are_exact() -> None:
    """``int int`` is a declaration only in the contextual mode (the second ``int`` is a
    NAME: nothing else can follow ``int``). With one token left only those that end it with
    ``;`` are allowed; with two, ``int`` (``int intint`` + ``;``) and the space too."""
    toks = SMALL[0][1]
    cg = _compile_small(KEYWORDS, toks)
    with pytest.raises(gramask.InvalidPrefixError):
        gramask.compile(Grammar.from_lark(KEYWORDS, lexer="basic"), cg.vocab, cache=False,
                        progress=False).constraint("int int;")

    def names(m: np.ndarray) -> set[str]:
        return {toks[i] for i in np.flatnonzero(m[:-1])}

    assert names(cg.constraint("int int", max_tokens=1).allowed()) == {";", "int;", "a;"}
    two = names(cg.constraint("int int", max_tokens=2).allowed())
    assert {"int", " ", "a", "inta", ";"} <= two and " int" not in two and " a" not in two
    # from the start: "int" needs " a" and ";" after it: a budget of 2 forbids it
    assert "int" not in names(cg.constraint("", max_tokens=2).allowed())
    assert "int" in names(cg.constraint("", max_tokens=3).allowed())
    c = cg.constraint("int", max_tokens=2)
    assert names(c.allowed()) == {" int", " a", " "}
    c.advance(toks.index(" int"))  # "int int": the second one a NAME
    assert names(c.allowed()) == {";", "int;", "a;"}
    c.advance(toks.index("int;"))
    assert c.allowed().tolist() == [False] * len(toks) + [True]
    assert c.is_complete()
    with pytest.raises(gramask.BudgetError) as e:
        cg.constraint("int", max_tokens=1)
    assert e.value.minimum == 2 and e.value.budget == 1


# --------------------------------------------------------------------------- real grammars

PREFIXES = {
    "c": ["", "int main(void) {\n    int x = (1 + ", "int f(int a, int b) { if (a < b) { return",
          "struct point { int x; int y; };\nint g(struct point *p) { return p->",
          "void h() { for (int i = 0; i < 10; i++) { x[i] = i *",
          "int main() { char *s = \"abc", "double d = 1.5e"],
    "sql": ["SELECT a, b FROM t WHERE a > ", "SELECT * FROM users WHERE name = 'bo",
            "INSERT INTO t (a, b) VALUES (1, ", "SELECT count(*) FROM orders GROUP BY",
            "CREATE TABLE t (id INT, name", "SELECT a FROM t JOIN u ON t.id = u."],
    "python": ["def f(x):\n    if x:\n        return", "class A:\n    def g(self",
               "if a:\n    b = 1\n", "x = [1,\n  2"],
    "json": ['{"a": [1, 2, {"b": ', '[true, false, nu', '{"key": "val', "",
             '{"a": {"b": {"c": [1.5e'],
}


@functools.cache
def _contextual(name: str) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.grammars.load(name, lexer="contextual"),
                           gramask.Vocabulary.bundled("gpt2"), progress=False)


def _lark(name: str) -> lark.Lark:
    return lark.Lark(gramask.grammars.lark_text(name), parser="lalr", lexer="contextual",
                     start=gramask.grammars.start_rule(name))


@pytest.mark.parametrize("name", ["c", "sql", "json"])
def test_contextual_budget_walks_end_as_programs(name: str) -> None:
    """Random walks under budgets of 1..32 tokens (ASCII tokens without backslashes) end
    complete, and lark's contextual LALR parser accepts prefix + text, except where the two
    contextual lexers are known to differ (gramask's own unbudgeted constraint then calls the
    text complete: docs/semantics.md)."""
    cg = _contextual(name)
    v = cg.vocab
    prefer = np.array([
        not v.is_special(i) and all((32 <= b < 127 and b != 92) or b == 10
                                    for b in v.token_bytes(i))
        for i in range(len(v))])
    parser = _lark(name)
    rnd = random.Random(3)
    walks = parsed = 0
    for pre in PREFIXES[name]:
        for budget in (1, 2, 3, 5, 8, 13, 32):
            try:
                c = cg.constraint(pre, max_tokens=budget)
            except gramask.BudgetError as e:
                assert e.minimum > budget
                continue
            _walk_budget(c, rnd, prefer, v.eos_token_id)
            assert c.is_complete(), (pre, budget, c.text)
            assert c.num_tokens <= budget
            walks += 1
            parsed += _lark_accepts(parser, cg, pre + c.text)
    # SQL walks glue random words onto keywords (``WINDow...``, ``From``) where the two
    # lexers' tie rules differ: about a quarter of its texts; none for C and JSON
    assert walks >= 25 and parsed >= (0.6 if name == "sql" else 0.95) * walks, (walks, parsed)


@pytest.mark.parametrize(("name", "case"), [("c", 1), ("c", 4), ("sql", 2)])
def test_contextual_budget_error_and_shortest_completion(name: str, case: int) -> None:
    cg = _contextual(name)
    pre = PREFIXES[name][case]
    c = cg.constraint(pre)
    sc = c.shortest_completion()
    need = c.min_tokens_to_complete()
    assert len(sc.token_ids) == need >= 2
    follow_along_the_masks(c, list(sc.token_ids))
    assert _lark_accepts(_lark(name), cg, pre + sc.text)
    with pytest.raises(gramask.BudgetError) as e:
        cg.constraint(pre, max_tokens=need - 1)
    assert e.value.minimum == need and e.value.budget == need - 1
    assert f"max_tokens={need - 1}" in str(e.value)
    b = cg.constraint(pre, max_tokens=need)
    m = b.allowed()
    assert m[sc.token_ids[0]] and not m[cg.vocab.eos_token_id]


def test_contextual_budget_survives_clone_and_rollback() -> None:
    cg = _contextual("c")
    v = cg.vocab
    pre = "int f(int a) { return (a"
    c = cg.constraint(pre, max_tokens=4)
    c.advance(v.token_id(" +"))
    d = c.clone()
    assert type(d) is type(c) and d.remaining_tokens == 3
    c.rollback(1)
    assert c.remaining_tokens == 4 and d.remaining_tokens == 3
    assert (c.allowed() == cg.constraint(pre, max_tokens=4).allowed()).all()
    with pytest.raises(gramask.TokenRejected, match="within the budget"):
        cg.constraint(pre, max_tokens=2).advance(v.token_id(" +"))  # then 3 more


@pytest.mark.parametrize("name", ["c", "sql", pytest.param("python", marks=pytest.mark.slow)])
def test_vectorised_grouping_matches_real_walks(name: str) -> None:
    """The budget groups tokens by the state a vectorised contextual walk says they lead to;
    every token's real walk (``ContextualLexer.walk``) lands in its group's state (Python:
    the indentation carry too, where the newline is live)."""
    cg = _contextual(name)
    v = cg.vocab
    rnd = random.Random(5)
    checked = 0
    # Python's masks walk the vocabulary trie (no contextual tables with indentation): fewer
    for pre in PREFIXES[name][: 2 if name == "python" else 4]:
        c = cg.constraint(pre, max_tokens=40)
        for _ in range(3 if name == "python" else 6):
            st = c._history[-1]
            toks = np.flatnonzero(c._grammar_mask(st))
            pl = c._budget_planner()
            groups = pl.group_tokens(st[0], st[2], toks, st[1])
            assert sum(g[3].size for g in groups) == toks.size  # every allowed token walks
            for fq, fc, fp, members in groups:
                for t in rnd.sample(members.tolist(), min(8, members.size)):
                    s = c._walk(st, v.token_bytes(t))
                    assert not isinstance(s, int)
                    assert (s[0], pl.norm_carry(s), s[2][PUID]) == (fq, fc, fp[PUID])
                    checked += 1
            ids = np.flatnonzero(c.allowed())
            ids = ids[ids != v.eos_token_id]
            if not ids.size:
                break
            c.advance(int(rnd.choice(ids)))
    assert checked > 200


# A GBNF grammar (found by tools/gbnf_fuzz.py) whose rule ``r2`` nests through ``r1``: each
# backslash opens one more ``r2`` that must be closed. The bounds' route ended a lexeme ``a``
# and found no next one it could glue on (``abc`` would run into it for the basic lexer),
# leaving the plan to the fallback search, which gave up from the sixth level on: a false
# "no completion". The contextual lexer ends ``a`` there, and the route now tries it.
NESTED_GBNF = r'''root ::= [0-9a-c]{1} [b]+ ("b" | "a") | r2+ "b"? "\u00e9"{0,3} | "b" r2 r2
r0 ::= "abc"+ "\\"
r1 ::= [0-9a-z ] | r2 "("
r2 ::= "\\" ((r1+ [a-cb] "(") [a-z]+) ((r0{2} "xy"* r2 | [(-*a-z] r0{1,4})+ "+"? [a-cx-z]{2})+
'''


@pytest.mark.parametrize("depth", [1, 5, 6, 9])
def test_gbnf_nested_rule_completion_found_at_any_depth(depth: int) -> None:
    tokens = [*map(chr, range(32, 127)), "\n"]
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    cg = gramask.compile(gramask.Grammar.from_gbnf(NESTED_GBNF), vocab, cache=False)
    prefix = "b" + "\\" * depth
    done = cg.constraint(prefix).shortest_completion()
    c = cg.constraint(prefix + done.text)
    assert c.is_complete()


# tools/lark_fuzz_gen.py grammar 61 (contextual), in small: T1's own lexemes (those the greedy
# lexer reads as T1 and not as the WORD before it in the grammar) are only ``İ``, which the
# vocabulary lacks, and after the T3 ``ab`` (a WORD too) an ``i`` would run on into it, so
# only the ignored line break keeps them apart: ``ab\ni``. The planner spelled T1 as ``İ``
# and, after the lexeme, put the unspellable ``İ`` before a line break it could spell:
# no completion, and ``max_tokens`` raised where ``ab\ni`` is three tokens.
SPELLED_APART = r"""
start: WORD* T3 T1
WORD: /[a-zA-Z]+/
T3: /(ab|a)c?/
T1: /i[nf]?/i
%import common.NEWLINE
%ignore NEWLINE
"""


@pytest.mark.parametrize("prefix", ["", "x\n", "ab", "ab\n"])
def test_a_terminal_spelled_only_where_the_contextual_lexer_reads_it(prefix: str) -> None:
    # (in lark's order WORD drops T3 wherever T3 could start: no program, as in lark)
    cg = _compile_small(SPELLED_APART, ["a", "b", "c", "i", "x", "\n", "ab"], longest=True)
    c = cg.constraint(prefix)
    done = c.shortest_completion()
    assert cg.constraint(prefix + done.text).is_complete()
    # the walk of the plan's tokens ends complete, and a budget of that many tokens is met
    b = cg.constraint(prefix, max_tokens=len(done.token_ids) + 1)
    for i in done.token_ids:
        assert b.allowed()[i]
        b.advance(i)
    assert b.is_complete()


# A key/value grammar where ``-`` alone is a key (``KEY``: the greedy lexer's winner on
# ``-1``) and a value is a number: after ``k =`` the contextual lexer reads `` -12`` as a
# number. The plans finished ``-`` only where no terminal sharing a predecessor with the
# number accepts (``KEY`` and the numbers both follow ``[``): as ``-0.0``, two tokens more
# than ``-0``, so a budget of the true `` -12\n`` (k = 0, 1) forbade `` -``. The route now
# also finishes a lexeme where a terminal the parser expects accepts (walked).
SIGNED = r"""
start: (item _NL)*
item: KEY "=" value | "[" KEY "]"
?value: INTEGER | FLOAT | "[" value "]"
KEY: /[A-Za-z0-9_-]+/
INTEGER: /[+-]?[0-9][0-9_]*/
FLOAT: /[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/
_NL: /\n/
%ignore " "
"""


@pytest.mark.parametrize("k", [0, 1, 4])
def test_contextual_budget_finishes_a_lexeme_as_the_parser_reads_it(k: int) -> None:
    vocab = gramask.Vocabulary.bundled("gpt2")
    # (in lark's order FLOAT drops INTEGER wherever it could match: the longest match here)
    g = replace(Grammar.from_lark(SIGNED, lexer="contextual"), lark_order=())
    cg = gramask.compile(g, vocab, progress=False)
    assert lark.Lark(SIGNED, parser="lalr", lexer="contextual").parse("k = -12\n")
    pieces = [b" -", b"12", b"\n"]
    ids = [vocab.token_id(p) for p in pieces]
    c = cg.constraint("k =", max_tokens=len(ids) + k)
    for i in ids:
        assert i is not None and c.is_allowed(i), (k, vocab.token_bytes(i or 0))
        c.advance(i)
    assert c.is_complete()
