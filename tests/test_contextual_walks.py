"""The dead-end search's lockstep token walks (gramask.runtime.core.contextual_walks) refuse
exactly the tokens ContextualRule.walk refuses, token by token, from the states random
masked walks reach: grammars that need the search (ignored lexemes, lexemes that end inside
a token, keywords beside names, shadowed terminals) and random ones."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import lark
import numpy as np
import pytest

import gramask
from gramask.runtime.core.contextual_walks import refused_walks
from tests._support import tiny
from tests.test_contextual_wins import SHADOWED
from tests.test_separable import FUZZ_25_38, FUZZ_25_44

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import lark_fuzz_gen

SQLISH = r"""
start: "select" item ("," item)* "from" NAME ["where" NAME "=" (NAME | NUMBER | STRING)] ";"
item: NAME ["as" NAME] | NAME "(" NAME ")"
NAME: /[a-z_][a-z0-9_]*/
NUMBER: /[0-9]+/
STRING: /'[^']*'/
%ignore /[ \t\n]+/
"""


def _vocab(chars: list[str], rnd: random.Random) -> list[str]:
    """The characters, then random strings of 2 to 6 of them (tokens that end lexemes)."""
    more = {"".join(rnd.choice(chars) for _ in range(rnd.randint(2, 6))) for _ in range(300)}
    return [*chars, *sorted(more - set(chars))]


def _check(grammar: str, chars: list[str], seed: int) -> int:
    """Random masked walks; at every state the lockstep walks of every token against
    ContextualRule.walk. The number of states compared (0: the grammar was refused)."""
    rnd = random.Random(seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cg, vocab = tiny(grammar, _vocab(chars, rnd), lexer="contextual")
    except (gramask.GrammarError, lark.exceptions.LarkError):
        return 0
    rule = cg._build_runtime(None).contextual
    assert rule is not None
    if rule.nl_t >= 0:
        return 0
    tokens = list(vocab.token_tuple)
    tb = vocab.flat_bytes  # (the table the runtime's walks read)
    toks = np.flatnonzero(tb.lens > 0)
    n = 0
    for _ in range(4):
        c = cg.constraint()
        for _ in range(6):
            q, carry, p = c._history[-1]
            got = refused_walks(rule, tb, toks, p, q)
            want = [isinstance(rule.walk((q, carry, p), tokens[t]), int) for t in toks]
            assert got.tolist() == want, c.text
            n += 1
            m = np.asarray(c.allowed()).copy()
            m[vocab.eos_token_id] = False
            ids = np.flatnonzero(m).tolist()
            if not ids:
                break
            c.advance(rnd.choice(ids))
    return n


@pytest.mark.parametrize(("grammar", "chars"), [
    (SQLISH, [*"selctfromwhas ,;()='x1_", "select", "from"]),
    (FUZZ_25_38, [*"abc()x "]),
    (FUZZ_25_44, [*"ab;/.z"]),
    *[(g, sorted({c for t in toks for c in t})) for g, toks, _ in SHADOWED],
])
def test_lockstep_walks_refuse_what_walk_refuses(grammar: str, chars: list[str]) -> None:
    assert _check(grammar, chars, 1) > 0


@pytest.mark.parametrize("seed", range(8))
def test_lockstep_walks_on_random_grammars(seed: int) -> None:
    gg = lark_fuzz_gen.grammar(random.Random(seed))
    _check(gg.text, sorted(set(gg.alphabet) | set('ab01x;/. "')), seed)
