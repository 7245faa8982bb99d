"""The shortcuts behind compile time at scale give what the plain constructions give: the
small-local-automaton test against the search it replaces, a counted repeat's NFA (wired
in one go) against ``re``, a regex automaton's class table against its 256-wide table, a
shared walk's jump over a run against a byte-by-byte scan, and a literal's chain built per
class against its 256-wide table."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gramask.compiler import local_walks
from gramask.compiler.regex_bytes import regex_to_byte_dfa
from gramask.compiler.regex_nfa import build_byte_nfa
from gramask.compiler.walk_inputs import run_ends, token_matrix


def test_small_local_agrees_with_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    for _ in range(40):
        n = int(rng.integers(1, 200))
        t = np.where(rng.random((n, 6)) < rng.random() * 0.6, rng.integers(0, n, (n, 6)), -1)
        trans = np.pad(t, ((0, 0), (0, 250)), constant_values=-1).astype(np.int32)
        limit = int(rng.integers(1, 40))
        monkeypatch.setattr(local_walks, "MAX_LOCAL_STATES", limit)
        want = [local_walks.local_automaton(trans, s) is not None for s in range(n)]
        assert local_walks.small_local(trans, limit).tolist() == want
        # searches sharing one lexer's successor lists and known-large states, in any order,
        # find what a plain breadth-first search finds
        succ = local_walks.Successors(trans)
        for s in rng.permutation(n)[:12].tolist():
            got = local_walks.local_automaton(trans, s, succ)
            order = _bfs(trans, s)
            assert (got is None) == (len(order) > limit)
            if got is not None:
                assert got[0].tolist() == order
                pos = np.full(n + 1, -1)
                pos[order] = np.arange(len(order))
                assert np.array_equal(got[1], pos[trans[order]])


def _bfs(trans: np.ndarray, s: int) -> list[int]:
    """The states reachable from ``s``, breadth first, bytes ascending (a plain queue)."""
    order, seen, i = [s], {s}, 0
    while i < len(order):
        for r in trans[order[i]].tolist():
            if r >= 0 and r not in seen:
                seen.add(r)
                order.append(r)
        i += 1
    return order


@pytest.mark.parametrize("pattern", ["x{7}[a-z]*", "[0-9]{2,5}", "(?i:k){3}", "[^a]{4}b",
                                     "\\d{0,3}x", "(ab){3}", "[a\u00e9]{3}", "(a|){3}",
                                     "[ab]{2,}x?"])
def test_counted_repeat_means_what_re_means(pattern: str) -> None:
    import re

    nfa = build_byte_nfa(pattern, 10**5)
    rng = random.Random(pattern)
    alphabet = "xab01kK\u00e9"
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 9)))
        assert _nfa_matches(nfa, text.encode()) == (re.fullmatch(pattern, text) is not None), text


def _nfa_matches(nfa: object, data: bytes) -> bool:
    eps, moves, final = nfa.eps, nfa.moves, nfa.final  # type: ignore[attr-defined]

    def close(states: set[int]) -> set[int]:
        stack = list(states)
        while stack:
            for t in eps[stack.pop()]:
                if t not in states:
                    states.add(t)
                    stack.append(t)
        return states

    cur = close({0})
    for x in data:
        cur = close({t for q in cur for lo, hi, t in moves[q] if lo <= x <= hi})
    return final in cur


@pytest.mark.parametrize("pattern", ["x{30}[a-z]*", "[a-z]+", "\"([^\"\\\\]|\\\\.)*\"",
                                     "[\u0100-\u07ff]{2}", "(a|b)*a(a|b){3}"])
def test_class_table_is_the_byte_table(pattern: str) -> None:
    d = regex_to_byte_dfa("T", pattern)
    cls_trans, byte_class = d.classes()
    assert np.array_equal(cls_trans[:, byte_class], d.trans)
    cols = {c.tobytes() for c in np.ascontiguousarray(cls_trans.T)}
    assert len(cols) == cls_trans.shape[1]  # distinct
    firsts = [int(np.flatnonzero(byte_class == c)[0]) for c in range(cls_trans.shape[1])]
    assert firsts == sorted(firsts)  # numbered by first byte


def test_run_ends_match_a_scan() -> None:
    rng = random.Random(3)
    tokens = [bytes(rng.choice(b"ab\"\\x\n") for _ in range(rng.randint(0, 6)))
              for _ in range(300)]
    special = np.zeros(len(tokens), dtype=bool)
    special[:3] = True
    lens, buf, _ = token_matrix(tokens, special)
    member = np.zeros(256, dtype=bool)
    member[list(b"abx")] = True
    ends = run_ends(lens, buf, member)
    for t, n in enumerate(lens.tolist()):
        if n == 0:
            continue
        k = 1
        while k < n and member[buf[t, k]]:
            k += 1
        assert ends[t] == k, (tokens[t], ends[t], k)


def test_chain_by_classes_is_the_byte_table() -> None:
    """``ByteDFA.chain`` (built per byte class) has the 256-wide chain's table, classes and
    column ranks: what the lexer product reads."""
    from gramask.compiler.regex_bytes import ByteDFA

    rng = random.Random(0)
    cases = [b'"a"', b"aaa", b"\x00ab\x00", bytes(range(256)), b"\xff"] + [
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 30))) for _ in range(100)]
    for data in cases:
        n = len(data)
        table = np.full((n + 1, 256), -1, dtype=np.int32)
        table[np.arange(n), np.frombuffer(data, dtype=np.uint8)] = np.arange(1, n + 1)
        finals = np.zeros(n + 1, dtype=bool)
        finals[n] = True
        plain, fast = ByteDFA(table, finals), ByteDFA.chain(data)
        for a, b in [*zip(plain.classes(), fast.classes(), strict=True),
                     (plain.column_rank()[0], fast.column_rank()[0]), (plain.trans, fast.trans)]:
            assert a.dtype == b.dtype and np.array_equal(a, b)
        assert fast.matches(data) and not fast.matches(data[:-1])
