"""Basic lexer mode: a terminal another always wins (``CMP.2: "=" | "<"`` beside ``"="``) is
never produced, so a prefix that can only finish through it (``let x`` where every ``let``
needs ``"="``) must be refused, not left without an end (found on a held-out ML-like grammar:
``constraint("letter")`` had no completion)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import gramask

# reduced from the held-out grammar line by line while "letter" stayed without a completion
GRAMMAR = r"""
start: (decl ";;")* expr?
decl: "let" REC? binding ("and" binding)*
REC: "rec"
binding: LNAME pattern* (":" type)? "=" expr
?type: type_atom ("->" type)?
?type_atom: LNAME | TVAR | type_atom LNAME -> type_app | "(" type ("*" type)* ")"
?expr: "let" REC? binding ("and" binding)* "in" expr -> let_in
     | seq
?seq: tuple
?tuple: cmp ("," cmp)*
?cmp: cons (CMP cons)?
?cons: add ("::" cons)?
?add: add ADD mul | mul
?mul: mul MUL app | app
?app: app atom -> apply | "-" atom -> neg | atom
?atom: INT | FLOAT | STRING | CHAR | "true" -> true | "false" -> false
?pattern: pattern_atom | UNAME pattern_atom -> ctor_pat
?pattern_atom: LNAME | "_" -> wildcard | INT | STRING | UNAME
CMP.2: "=" | "<>" | "<" | ">" | "<=" | ">="
ADD: "+" | "-" | "^" | "+." | "-."
MUL: "*" | "/" | "*." | "/." | "mod"
LNAME.-1: /[a-z_][A-Za-z0-9_']*/
UNAME: /[A-Z][A-Za-z0-9_']*/
TVAR: /'[a-z]+/
INT: /\d+/
FLOAT.2: /\d+\.\d*(e[+-]?\d+)?/
STRING: /"([^"\\]|\\.)*"/
CHAR: /'([^'\\]|\\.)'/
"""
TOKENS = [chr(c) for c in range(32, 127)] + ["\n", "let", "letter", "le", ";;"]


@pytest.fixture(scope="module")
def cg() -> gramask.CompiledGrammar:
    vocab = gramask.Vocabulary.from_tokens([*TOKENS, "</s>"], eos_token_id=len(TOKENS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gramask.Grammar.from_lark(GRAMMAR, lexer="basic")
        return gramask.compile(g, vocab, cache=False, progress=False)


def test_a_keyword_whose_rules_need_a_lost_terminal_is_refused(cg: gramask.CompiledGrammar) -> None:
    allowed = cg.constraint("").allowed()
    for kw in ("let", "letter", "le"):  # "letter" lexes as let, ter (lark's order)
        assert not allowed[TOKENS.index(kw)], kw
    assert allowed[TOKENS.index("1")]
    for dead in ("let", "let x", "letter"):
        with pytest.raises(gramask.InvalidPrefixError):
            cg.constraint(dead)
    assert cg.constraint("1=1").is_complete()  # the comparison, CMP's "="


def test_no_masked_walk_meets_a_dead_end(cg: gramask.CompiledGrammar) -> None:
    rnd = random.Random(5)
    eos = len(TOKENS)
    for _ in range(60):
        c = cg.constraint("")
        for _ in range(12):
            c.shortest_completion()  # raises NoCompletionError at a dead end
            ids = np.flatnonzero(c.allowed())
            t = int(rnd.choice(ids))
            if t == eos:
                break
            c.advance(t)
