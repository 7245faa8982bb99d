"""Fill-in-the-middle budgets skip the plan searches, detours and retries of states proven to
have no completion at all (gramask/runtime/budget/dead_ends.py): the proof must be sound — a
state it calls dead has no middle that completes it — and not vacuous. Checked against the
exact answer on random small grammars (the character-level CFG intersected with
prefix·middle·x·suffix, tests/_fim_reference.py; their lexemes rarely leave a state dead), and
against an exhaustive search with Lark's own parser (every x of up to _X bytes) on a grammar
whose comments end only in a significant line break, as Python's do."""

from __future__ import annotations

import itertools
import random

import lark
import lark.indenter
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask.grammar import Grammar

from . import _fim_reference as ref

_DEPTH = 3  # bytes walked from the prefix, every string over the grammar's alphabet
_X = 4  # bytes of the exhaustive search's completions
_CHECKED = 4  # dead states searched per request (the search is the test's cost)


def _claims(seed: int) -> tuple[int, int]:
    """Walk every middle of up to _DEPTH bytes of a random small grammar's request; where
    the proof calls the state dead, the exact answer must find no completion. Returns (states
    called dead, states walked)."""
    rnd = random.Random(seed)
    case = ref.random_budget_case(rnd, fim=True)
    g, tokens, cfg, prefix, suffix = case.grammar, case.tokens, case.cfg, case.prefix, case.suffix
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    cg = gramask.compile(Grammar.from_lark(g.to_lark(), lexer="basic"), vocab, cache=False)
    try:
        c = cg.constraint(prefix, suffix=suffix, max_tokens=8)
        dead = c._budget_planner().search.dead
    except (gramask.GramaskError, ValueError):
        return 0, 0
    if dead is None:
        return 0, 0
    alphabet = sorted({ch for t in tokens for ch in t})
    frontier = [("", c._history[-1])]
    claimed = walked = 0
    for _ in range(_DEPTH):
        nxt = []
        for middle, s in frontier:
            for ch in alphabet:
                s2 = c._walk(s, ch.encode())
                if isinstance(s2, int):
                    continue
                walked += 1
                if dead.dead(*c._view(s2)):
                    claimed += 1
                    assert not ref.nonempty(cfg, prefix + middle + ch, suffix), (
                        g.to_lark(), prefix, middle + ch, suffix)
                nxt.append((middle + ch, s2))
        frontier = nxt
    return claimed, walked


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_state_proven_dead_has_no_completion(seed: int) -> None:
    _claims(seed)


# comments run to the line break, which is part of the statement's end (Python's _NEWLINE):
# after an operator, a comment leaves nothing the parser takes
_COMMENTED = r"""
start: (_NEWLINE | stmt)*
stmt: expr _NEWLINE | ":" expr _NEWLINE _INDENT stmt+ _DEDENT
expr: NAME (OP NAME)*
NAME: /[ab]+/
OP: "+"
_NEWLINE: /(#[^\n]*)?(\n[ ]*(#[^\n]*)?)+/
COMMENT: /#[^\n]*/
%ignore COMMENT
%ignore " "
%declare _INDENT _DEDENT
"""


class _Indenter(lark.indenter.Indenter):
    NL_type = "_NEWLINE"
    OPEN_PAREN_types = ()
    CLOSE_PAREN_types = ()
    INDENT_type = "_INDENT"
    DEDENT_type = "_DEDENT"
    tab_len = 8


_ALPHABET = "ab+# \n:"


def _sentence(rnd: random.Random) -> str:
    lines = []
    for _ in range(rnd.randint(1, 3)):
        names = ["".join(rnd.choice("ab") for _ in range(rnd.randint(1, 2)))
                 for _ in range(rnd.randint(1, 3))]
        line = rnd.choice([" + ", "+"]).join(names)
        lines.append(line + rnd.choice(["", " #a", "#"]) + "\n")
    return "".join(lines)


def _lark_claims(seed: int, parser: lark.Lark, cg: gramask.CompiledGrammar) -> int:
    """States of a request on ``_COMMENTED`` the proof calls dead, each checked: no ``x`` of
    up to _X bytes over the grammar's characters completes it by Lark's parser."""
    rnd = random.Random(seed)
    text = _sentence(rnd)
    i = rnd.randint(0, len(text))
    prefix, suffix = text[:i], text[rnd.randint(i, len(text)):]
    try:
        c = cg.constraint(prefix, suffix=suffix, max_tokens=8)
    except gramask.GramaskError:
        return 0
    dead = c._budget_planner().search.dead
    if dead is None:
        return 0  # an empty suffix: the prefix planner, no quotient
    frontier = [("", c._history[-1])]
    claimed = 0
    for _ in range(_DEPTH):
        nxt = []
        for middle, s in frontier:
            for ch in _ALPHABET:
                s2 = c._walk(s, ch.encode())
                if isinstance(s2, int):
                    continue
                if dead.dead(*c._view(s2)):
                    claimed += 1
                    if claimed > _CHECKED:
                        continue
                    for n in range(_X + 1):
                        for x in itertools.product(_ALPHABET, repeat=n):
                            whole = prefix + middle + ch + "".join(x) + suffix
                            for end in ("", "\n"):  # (gramask ends the last line itself)
                                try:
                                    parser.parse(whole + end)
                                except lark.exceptions.LarkError:
                                    continue
                                raise AssertionError((prefix, middle + ch, "".join(x), suffix))
                else:
                    nxt.append((middle + ch, s2))
        frontier = nxt
    return claimed


def _commented() -> tuple[lark.Lark, gramask.CompiledGrammar]:
    parser = lark.Lark(_COMMENTED, parser="lalr", lexer="basic", postlex=_Indenter())
    vocab = gramask.Vocabulary.from_tokens([*_ALPHABET, "a+", "+#", "#a", "</s>"],
                                           eos_token_id=len(_ALPHABET) + 3)
    cg = gramask.compile(Grammar.from_lark(_COMMENTED, lexer="basic"), vocab, cache=False)
    return parser, cg


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_a_state_proven_dead_has_no_completion_by_lark(seed: int) -> None:
    _lark_claims(seed, *_commented())


def test_the_proof_is_not_vacuous() -> None:
    """A comment after an operator is proven dead (``a+#`` before the suffix ``b\n``: the
    comment runs into the suffix, and only a line break can end it), and over fixed seeds
    some states are."""
    parser, cg = _commented()
    c = cg.constraint("a", suffix="b\n", max_tokens=8)
    dead = c._budget_planner().search.dead
    assert dead is not None
    s = c._walk(c._history[-1], b"+#")
    assert not isinstance(s, int) and dead.dead(*c._view(s))
    s = c._walk(c._history[-1], b"+")
    assert not isinstance(s, int) and not dead.dead(*c._view(s))
    assert sum(_lark_claims(seed, parser, cg) for seed in range(4)) > 0
