"""Byte automata of JSON strings (gramask.frontends.json_strings) against ``json`` and ``re``
as oracles: the fast paths (plain keys as a trie, "any key but these" grafted on the
automaton of every string) accept exactly the spellings of the strings in the language;
minimisation by rounds finds Hopcroft's partition; rows made unique without numpy's
``unique(axis=0)`` give its result."""

from __future__ import annotations

import json
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gramask.compiler import regex_bytes
from gramask.frontends.json_strings import spec_dfa


def _accepts(spec: dict[str, object], text: bytes) -> bool:
    return spec_dfa(json.dumps(spec, sort_keys=True)).matches(text)


def _spellings(s: str) -> list[bytes]:
    return [json.dumps(s).encode(), json.dumps(s, ensure_ascii=False).encode(),
            json.dumps(s).replace("/", "\\/").encode()]


KEYS = ["name", "na", "names", "id", "x-y_z", "a b", "A1"]
CANDIDATES = [*KEYS, "", "nam", "namex", "Name", "ID", "a/b", "é", "name\n", "日本", "😀",
              "a\"b", "x\\y"]


def test_plain_words_and_their_complement() -> None:
    for s in CANDIDATES:
        for text in _spellings(s):
            assert _accepts({"words": KEYS}, text) == (s in KEYS), (s, text)
            assert _accepts({"except": KEYS}, text) == (s not in KEYS), (s, text)
            assert _accepts({"words": ["name"]}, text) == (s == "name"), (s, text)
    assert not _accepts({"words": KEYS}, b'"n\\u0061me"')  # printable ASCII is written raw


def test_words_that_json_escapes_take_the_general_path() -> None:
    words = ["a/b", "é", "tab\t", 'q"']
    for s in [*words, "a", "ab", "e", "tab"]:
        for text in _spellings(s):
            assert _accepts({"words": words}, text) == (s in words), (s, text)
            assert _accepts({"except": words}, text) == (s not in words), (s, text)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("nameidxyz -/é\"\\\n"), max_size=6))
def test_keys_against_membership(s: str) -> None:
    for text in _spellings(s):
        assert _accepts({"words": KEYS}, text) == (s in KEYS)
        assert _accepts({"except": KEYS}, text) == (s not in KEYS)


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab-09.é"), max_size=7))
def test_regex_and_length_against_re(s: str) -> None:
    spec = {"regex": "[a-z]+(?:-[0-9]+)?", "min": 2, "max": 5}
    want = re.fullmatch(spec["regex"], s) is not None and 2 <= len(s) <= 5
    for text in _spellings(s):
        assert _accepts(spec, text) == want


def test_rounds_find_hopcroft_partition() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n, k = int(rng.integers(1, 30)), int(rng.integers(1, 5))
        trans = rng.integers(-1, n, size=(n, k))
        finals = rng.random(n) < 0.3
        full = np.vstack([np.where(trans >= 0, trans, n), np.full((1, k), n)])
        rounds = regex_bytes._moore(full, finals)
        if rounds is None:
            continue
        a = regex_bytes._quotient(trans, finals, rounds)
        b = regex_bytes._quotient(trans, finals, regex_bytes._hopcroft(full, finals))
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    chain = np.full((100, 1), -1)
    chain[np.arange(99), 0] = np.arange(1, 100)
    fin = np.zeros(100, dtype=bool)
    fin[-1] = True
    assert regex_bytes.minimize(chain, fin)[0].shape == (100, 1)  # Hopcroft past the rounds


def test_unique_rows_is_numpys() -> None:
    from gramask.encoding import unique_rows

    rng = np.random.default_rng(1)
    for dt in (bool, np.uint8, np.int64):
        for _ in range(100):
            shape = (int(rng.integers(0, 30)), int(rng.integers(1, 5)))
            a = rng.integers(-3 if dt is np.int64 else 0, 2 if dt is bool else 3,
                             size=shape).astype(dt)
            u1, i1 = np.unique(a, axis=0, return_inverse=True)
            u2, i2 = unique_rows(a)
            assert np.array_equal(u1, u2) and np.array_equal(i1.reshape(-1), i2)


def _same_language(a: regex_bytes.ByteDFA, b: regex_bytes.ByteDFA) -> bool:
    """Both automata accept the same byte strings (a walk of their product)."""
    ta, tb = a.trans, b.trans
    seen, todo = {(0, 0)}, [(0, 0)]
    while todo:
        x, y = todo.pop()
        if bool(a.finals[x]) != bool(b.finals[y]) or not np.array_equal(ta[x] < 0, tb[y] < 0):
            return False
        for nx, ny in zip(ta[x].tolist(), tb[y].tolist(), strict=True):
            if nx >= 0 and (nx, ny) not in seen:
                seen.add((nx, ny))
                todo.append((nx, ny))
    return True


@settings(max_examples=40, deadline=None)
@given(lo=st.integers(0, 6), extra=st.one_of(st.none(), st.integers(0, 5)))
def test_counted_strings_laid_out_directly_are_the_built_minimal_automaton(lo, extra) -> None:
    """``length_string_dfa`` lays the counted string out without building and minimising it:
    the same language as the automaton built from the character-level counter, and as small
    (both minimal)."""
    from gramask.frontends.json_chardfa import CharDFA
    from gramask.frontends.json_strings import json_string_dfa, length_string_dfa

    hi = None if extra is None else lo + extra
    built = json_string_dfa(CharDFA.length(lo, hi))
    laid = length_string_dfa(lo, hi)
    assert _same_language(built, laid)
    assert laid.num_states == built.num_states


def test_long_counted_strings_count_characters_not_bytes() -> None:
    """Lengths far above the character-by-character build's old limit (64), in code points
    however they are spelled: escapes, multi-byte UTF-8, a surrogate pair."""
    spec = {"min": 200, "max": 300}
    for piece in ["a", "é", "\n", "😀", "日", '"']:
        for n, ok in ((199, False), (200, True), (300, True), (301, False)):
            for text in _spellings(piece * n):
                assert _accepts(spec, text) == ok, (piece, n, text[:20])
    assert _accepts({"min": 70}, json.dumps("é" * 70 + "x" * 500).encode())
    assert not _accepts({"min": 70}, json.dumps("é" * 69).encode())
