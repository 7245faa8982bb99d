"""The budget's lexer-side cost tables on long lexemes: ``fin[q, t]`` (the tokens that finish
the lexeme in progress at ``q`` as ``t``) is the fewest tokens spelling ``witness(q, t)``,
computed from the witnesses' suffixes instead of tokenising each (a JSON string with
``minLength`` 1,000 has 22,004 lexer states, each witness up to 1,000 bytes: the planner took
minutes); and the distances those witnesses follow come from a search over reversed
transitions, equal to a level-by-level scan of the whole table."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import gramask
from gramask.runtime.budget.bounded import planner_of
from gramask.runtime.budget.lexeme_costs import LexemeCosts
from gramask.runtime.budget.spelling import INF

from ._support import BYTES

SCHEMAS = [
    {"type": "string", "minLength": 25},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 30},
                                      "b": {"type": "string", "format": "date-time"}}},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{2,5}-\\d+$"}},
]
LARK = ('start: stmt+\nstmt: NAME? _NL\nNAME: /[a-z]+/\nCOMMENT: /#[^\\n]*/\n'
        '%ignore COMMENT\n%ignore " "\n_NL: /(\\r?\\n)+/\n')


@functools.cache
def _lexeme_costs(which: int, vocab: str) -> LexemeCosts:
    v = BYTES if vocab == "bytes" else gramask.Vocabulary.bundled(vocab)
    g = (gramask.Grammar.from_json_schema(SCHEMAS[which]) if which < len(SCHEMAS)
         else gramask.Grammar.from_lark(LARK, lexer="basic"))
    cg = gramask.compile(g, v, cache=False, progress=False)
    return planner_of(cg.constraint("", max_tokens=99)).lex


def _scan(lex: LexemeCosts, targets: np.ndarray) -> np.ndarray:
    """Distances by the definition: level by level, every state with a move into the last."""
    d = np.full(lex.num_states, INF, dtype=np.int64)
    d[targets] = 0
    frontier, level = targets.copy(), 0
    valid = lex.trans >= 0
    while frontier.any():
        level += 1
        reach = (frontier[np.where(valid, lex.trans, 0)] & valid).any(axis=1) & (d == INF)
        d[reach] = level
        frontier = reach
    return d


@pytest.mark.parametrize("vocab", ["bytes", "deepseek-v4"])
@pytest.mark.parametrize("which", range(len(SCHEMAS) + 1))
def test_finishing_costs_are_the_witnesses_fewest_tokens(which: int, vocab: str) -> None:
    lex = _lexeme_costs(which, vocab)
    for t in range(lex.num_terminals):
        d = lex._distances(t)
        for q in np.flatnonzero(d < INF).tolist():
            if q:
                assert lex.fin[q, t] == lex.tok.count(lex.witness(q, t)), (q, t)


@pytest.mark.parametrize("which", range(len(SCHEMAS) + 1))
def test_distances_equal_the_level_by_level_scan(which: int) -> None:
    lex = _lexeme_costs(which, "bytes")
    rng = np.random.default_rng(which)
    for t in range(lex.num_terminals):
        targets = np.zeros(lex.num_states, dtype=bool)
        targets[lex.finish_ends(t)] = True
        assert (lex.distances_to(targets) == _scan(lex, targets)).all(), t
    for p in (0.001, 0.01, 0.2):
        targets = rng.random(lex.num_states) < p
        assert (lex.distances_to(targets) == _scan(lex, targets)).all(), p
