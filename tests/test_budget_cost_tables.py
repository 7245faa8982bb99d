"""The budget planner's grammar cost tables: the one-pass algorithms (Knuth's generalisation of
Dijkstra's for cheapest derivations, Dijkstra for the tail and header costs) against the plain
fixpoint iteration they replace, on random grammars."""

from __future__ import annotations

import random

import pytest

from gramask.compiler.analysis import cheapest_derivations, rule_uses
from gramask.runtime.budget.grammar_costs import _shortest
from gramask.runtime.budget.spelling import INF


def _naive_derivations(cost: list[int], rules: list[tuple[int, tuple[int, ...]]]) -> list[int]:
    cost = list(cost)
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            s = 0
            for x in rhs:
                s += cost[x]
                if s >= INF:
                    break
            if s < cost[lhs]:
                cost[lhs] = s
                changed = True
    return cost


def _random_grammar(rnd: random.Random, nt: int, nn: int,
                    ) -> tuple[list[int], list[tuple[int, tuple[int, ...]]]]:
    cost = [rnd.choice([0, 1, 1, 2, 3, 7, INF]) for _ in range(nt)] + [INF] * nn
    rules = []
    for _ in range(rnd.randint(1, 3 * nn)):
        lhs = rnd.randrange(nt, nt + nn)
        rhs = tuple(rnd.randrange(nt + nn) for _ in range(rnd.choice([0, 1, 1, 2, 2, 3, 4])))
        rules.append((lhs, rhs))
    return cost, rules


@pytest.mark.parametrize("seed", range(300))
def test_cheapest_derivations_match_the_fixpoint(seed: int) -> None:
    rnd = random.Random(seed)
    cost, rules = _random_grammar(rnd, rnd.randint(1, 6), rnd.randint(1, 12))
    got = list(cost)
    cheapest_derivations(got, rules, rule_uses(rules, len(cost)), INF)
    assert got == _naive_derivations(cost, rules)


@pytest.mark.parametrize("seed", range(300))
def test_shortest_matches_the_fixpoint(seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.randint(1, 15)
    dist = [rnd.choice([0, 2, 5, INF, INF, INF]) for _ in range(n)]
    edges: dict[int, list[tuple[int, int]]] = {}
    for _ in range(rnd.randint(0, 3 * n)):
        edges.setdefault(rnd.randrange(n), []).append((rnd.choice([0, 0, 1, 3, 9]),
                                                       rnd.randrange(n)))
    want = list(dist)
    changed = True
    while changed:
        changed = False
        for a, out in edges.items():
            for w, b in out:
                if want[a] + w < want[b]:
                    want[b] = want[a] + w
                    changed = True
    got = list(dist)
    _shortest(got, edges)
    assert got == want


def test_token_widths_match_the_per_token_reading() -> None:
    """The vectorised indentation widths of the vocabulary (newline, carry after the last
    newline, carry of all) equal the per-token loop's, on tokens mixing spaces, tabs, form
    feeds and newlines in every order (a tab after a space breaks the carry)."""
    from gramask.runtime.budget.grouping import token_widths_of

    from ._support import tiny

    rnd = random.Random(7)
    pieces = [" ", "  ", "\t", "\n", "\f", "\r", "x", "ab", "#", "\u00e9"]
    tokens = sorted({"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 9)))
                     for _ in range(600)} | {" ", "\t", "\n", "\n    ", "\n\t  ", "  \t"})
    cg, vocab = tiny('start: "x"+\n%ignore " "\n', tokens)
    c = cg.constraint("", max_tokens=4)
    tm = c._budget_planner().tokens  # type: ignore[attr-defined]
    has, after, total = tm.token_widths()
    for i in range(len(vocab)):
        got = (bool(has[i]), int(after[i]), int(total[i]))
        assert got == token_widths_of(vocab.token_bytes(i)), vocab.token_bytes(i)


def test_final_states_match_the_per_token_walk() -> None:
    """The lexer state each token leaves the greedy lexer in, walked for the whole
    vocabulary at once (columns of bytes, or a trie of them), equals a byte-by-byte walk of
    each token from every lexer state: a byte that kills the lexeme starts the next one from
    state 0, and a byte no lexeme starts with ends the walk (-1)."""
    from ._support import tiny

    rnd = random.Random(11)
    pieces = ["a", "b", "ab", "1", "12", " ", "(", ")", "\"", "x\"", "\u00e9", "", "+"]
    tokens = sorted({"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 7)))
                     for _ in range(500)} - {""})
    cg, vocab = tiny('start: (NAME | NUM | STR | "(" start ")")+\nNAME: /[ab]+/\n'
                     'NUM: /[0-9]+/\nSTR: /"[a-z0-9 ]*"/\n%ignore " "\n', tokens)
    c = cg.constraint("", max_tokens=4)
    tm = c._budget_planner().tokens  # type: ignore[attr-defined]
    trans = tm.trans
    np = pytest.importorskip("numpy")
    some = np.array(sorted(rnd.sample(range(len(vocab)), len(vocab) // 3)), dtype=np.int64)
    for q in range(trans.shape[0]):
        part = tm._walk_tokens(q, some)  # a row's tokens only: the rest is -1
        got = tm.final_states(q, None)
        assert (part[some] == got[some]).all() and (np.delete(part, some) == -1).all()
        for i in range(len(vocab)):
            s = q
            for x in vocab.token_bytes(i):
                if s < 0:
                    break
                nxt = int(trans[s, x])
                s = nxt if nxt >= 0 else int(trans[0, x])
            assert int(got[i]) == s, (q, vocab.token_bytes(i))
