"""Token budgets let the real code through: the true continuation of a program, forced token by
token (as the vocabulary's own tokenizer splits it) under a budget of its true length + 4, is
never forbidden (``tools/budget_force.py`` measures the same over many cuts).

Random walks cannot show this (they only choose among tokens the mask already allows); a model
that writes exactly the original code must never be blocked where the budget does not bind.
"""

from __future__ import annotations

import functools

import pytest

import gramask
from tools import budget_force

from ._support import hf_tokenizer, tiny

VOCAB = "gpt2"


@functools.cache
def _compiled(name: str, lexer: str, vocab: str = VOCAB) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.grammars.load(name, lexer=lexer),
                           gramask.Vocabulary.bundled(vocab), progress=False)


# programs cut just before an %ignore'd comment: a `//` or `--` comment is ended only by a
# newline, which the budget's bounds must price (they used to forbid the comment's first token)
CUTS = [
    ("c", budget_force.C_COMMENTED, "    int first"),
    ("sql", budget_force.SQL_COMMENTED, "FROM customers"),
]


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("name", "doc", "cut"), CUTS, ids=[c[0] for c in CUTS])
def test_true_continuation_through_comments_fits_its_budget(name: str, doc: str, cut: str,
                                                            lexer: str) -> None:
    cg = _compiled(name, lexer)
    at = doc.index(cut)
    ids = hf_tokenizer(VOCAB)(doc[at:])
    assert "// " in doc[at:] or "-- " in doc[at:]
    why = budget_force.force(cg, doc[:at], None, ids, len(ids) + 4, [])
    assert why is None, why


# fill-in-the-middle: middles whose true tokens end inside a newline lexeme ("):\n", ")\n",
# a run of blanks) or rejoin the step's plan after a detour; each state needs its own walked
# completion, which a step's plan cap used to leave unverified (with DeepSeek's vocabulary, whose
# "):\n" the first cut's true middle takes)
FIM_VOCAB = "deepseek-v4"
FIM_CUTS = [
    ("import os\n\ndef load_tests(load",
     "er, standard_tests, pattern):\n    this_dir = os.path.dirname(__file__)\n"
     "    top_dir = os.path.dirname(dir",
     "ectory)\n    return top_dir\n"),
    ('"""This is a t', 'est"""\n\nfrom __f', "uture import annotations\n"),
    # a middle that opens a block the suffix goes on in: ` def` ends the newline lexeme and
    # its plan must open the block at the suffix's width, not at the cheapest one (the
    # bounds' route opened it at 5, then found no way on; the plan search needed 184 states)
    ("class A:\n    def f(self):\n        pass\n\n", '    def g(self):\n        """\n',
     '        Doc.\n        """\n        return 1\n'),
    ("class D:\n    def __init__(self):\n        self.d = None\n",
     "\n    def _decode(self, data, final):\n        if self.d is None:\n",
     "            out = decode(data)\n            return out\n        return self.d(data)\n"),
]


@pytest.mark.parametrize(("prefix", "middle", "suffix"), FIM_CUTS,
                         ids=["nl", "doc", "block-doc", "block-deeper"])
def test_true_middle_fits_its_budget(prefix: str, middle: str, suffix: str) -> None:
    cg = _compiled("python", "basic", FIM_VOCAB)
    ids = hf_tokenizer(FIM_VOCAB)(middle)
    assert cg.constraint(prefix + middle + suffix).is_complete()
    why = budget_force.force(cg, prefix, suffix, ids, len(ids) + 4, [])
    assert why is None, why


# a blank that continues a newline lexeme (``\n`` then `` `` then `` [``): its group holds
# tokens of several widths, so the bounds price it at the dearest width and no group plan
# applies; it is planned token by token (found by tools/fim_fuzz.py, seed 62, basic lexer)
INDENTED = r"""
start: stmt+
stmt: simple _NEWLINE
    | "do" T_ARG ":" _NEWLINE _INDENT stmt+ _DEDENT
simple: _T3
_T3: "["
T_ARG: /[0-9]+/
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""


@pytest.mark.parametrize("suffix", [None, ""], ids=["prefix", "fim"])
@pytest.mark.parametrize("k", [0, 4])
def test_a_blank_continuing_a_newline_fits_its_budget(suffix: str | None, k: int) -> None:
    tokens = ["d", "o", "do", "2", ":", "\n", " ", "  ", "\t", " [", "[", "\n\n"]
    cg, _ = tiny(INDENTED, tokens)
    ids = [tokens.index(t) for t in ("\n", " ", " [", "\n")]
    why = budget_force.force(cg, "do2:", suffix, ids, len(ids) + k, [])
    assert why is None, why


# The suffix " 1\n" runs the middle's last newline lexeme on: after "1" the true middle is
# "\nif:\n" (the suffix's line opens the block). A token's plan search (16 states) ran a
# newline lexeme on one blank at a time, "\r" and "\t" included, each its own state (another
# carry) priced like the rest, and spent its states on the widths of one line: no plan, "1"
# forbidden (found by tools/fim_fuzz.py, seed 62, grammar 1). Spaces come as pads to the
# widths that matter, a fresh line as "\n". GPT-2's blanks are what flooded the search.
BLANK_RUNS = r"""
start: stmt+
stmt: simple _NEWLINE
    | "if" ":" _NEWLINE _INDENT stmt+ _DEDENT
simple: "1"
_SP: /[ \t]+/
%ignore _SP
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""


@functools.cache
def _blank_runs(lexer: str) -> gramask.CompiledGrammar:
    return gramask.compile(gramask.Grammar.from_lark(BLANK_RUNS, lexer=lexer),
                           gramask.Vocabulary.bundled(VOCAB), cache=False, progress=False)


@pytest.mark.parametrize(("lexer", "k"), [("basic", 0), ("basic", 4), ("contextual", 4)])
def test_a_block_before_a_suffix_that_runs_the_newline_on_fits_its_budget(lexer: str,
                                                                          k: int) -> None:
    cg = _blank_runs(lexer)
    middle = "1\nif:\n"
    assert cg.constraint(middle + " 1\n").is_complete()
    ids = hf_tokenizer(VOCAB)(middle)
    why = budget_force.force(cg, "", " 1\n", ids, len(ids) + k, [])
    assert why is None, why


# The contextual mode verifies each group of tokens by a walked plan, at most MAX_PLANS
# searches a step; SynCode's Go grammar has 421 groups after `for`, the plans were spent at
# the 145th, and the true " _," (a group of one, its state needs a plan of its own: no step
# plan's rest or detour reaches `:= range`) was forbidden with 60 tokens left. The groups
# past the cap get plans that follow the bounds' choices with no search. Here the cap is
# spent at once (MAX_PLANS = 0 on the constraint).
RANGE_FOR = r"""
start: "for" NAME "{" "}"
     | "for" NAME ("," NAME)+ ":=" "range" NAME "{" "}"
NAME: /[a-z_]+/
%ignore " "
"""


def test_groups_past_the_plan_cap_still_get_a_walked_plan() -> None:
    tokens = ["for", " _,", " _", " x", "x", ",", ":=", " :=", "range", " range", "{", "}",
              "{}", " ", "_"]
    cg, _ = tiny(RANGE_FOR, tokens, lexer="contextual")
    c = cg.constraint("for", max_tokens=12)
    c.MAX_PLANS = 0  # type: ignore[attr-defined]  # the step's plan searches spent
    assert (c.allowed() == cg.constraint("for").allowed()).all()
    c.advance(tokens.index(" _,"))
    rest = c.shortest_completion()
    assert rest.text == "x:=range x{}"
    assert c.remaining_tokens is not None and len(rest.token_ids) <= c.remaining_tokens


# The same with a suffix: fill-in-the-middle budgets verify their groups by walked plans too,
# and had no plans past the cap (SynCode Go's " _," after "for" was forbidden at k = 4 in 3
# of 8 contextual FIM cuts and 1 of 8 basic ones, tools/heldout_lark_check.py).
@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_fim_groups_past_the_plan_cap_still_get_a_walked_plan(lexer: str) -> None:
    tokens = ["for", " _,", " _", " x", "x", ",", ":=", " :=", "range", " range", "{", "}",
              "{}", " ", "_"]
    cg, _ = tiny(RANGE_FOR, tokens, lexer=lexer)
    c = cg.constraint("for", suffix="{}", max_tokens=12)
    c.MAX_PLANS = 0  # type: ignore[misc]  # the step's plan searches spent
    assert c.allowed()[tokens.index(" _,")]
    c.advance(tokens.index(" _,"))
    rest = c.shortest_completion()
    assert rest.text + "{}" == "x:=range x{}"
    assert c.remaining_tokens is not None and len(rest.token_ids) <= c.remaining_tokens
