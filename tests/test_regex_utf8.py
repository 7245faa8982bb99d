"""Character-level determinisation + UTF-8 expansion (gramask.compiler.regex_utf8) against the
byte-level construction it replaces for Unicode patterns, and against ``re.fullmatch``."""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

import gramask.compiler.regex_bytes as rb
from gramask.compiler.regex_nfa import build_byte_nfa
from gramask.errors import GrammarError


def _same_language(a: rb.ByteDFA, b: rb.ByteDFA) -> bool:
    """Walk the product of two byte DFAs: no reachable pair disagrees on acceptance."""
    ta, tb = a.trans, b.trans
    seen = {(0, 0)}
    todo = [(0, 0)]
    while todo:
        p, q = todo.pop()
        fa = p >= 0 and bool(a.finals[p])
        fb = q >= 0 and bool(b.finals[q])
        if fa != fb:
            return False
        ra = ta[p] if p >= 0 else np.full(256, -1)
        rb_ = tb[q] if q >= 0 else np.full(256, -1)
        for pair in set(zip(ra.tolist(), rb_.tolist(), strict=True)):
            if pair != (-1, -1) and pair not in seen:
                seen.add(pair)
                todo.append(pair)
    return True


CASES = [
    (r"\w{1,8}", False, True),
    (r'[^"\s]{2,6}', False, True),
    (r"(?i:straße|[ǅ-ǌ]+k)", False, True),
    (r".{0,5}x", False, False),
    (r"[\u0800-\uffff]{1,3}", False, False),
    (r"[\U00010000-\U0010ffff]\d?", False, True),
    (r"[\ud7fe-\ue001]+", False, False),
    (r"\W{2}\S", False, True),
    (r"(?:\w|é)*?x|[α-ω]+", True, True),
    (r"[\x80-\u07ff]|[^\x00-\x7f]{2}", False, False),
]


@pytest.mark.parametrize(("pattern", "first", "uni"), CASES)
def test_character_construction_is_the_byte_construction(pattern, first, uni,
                                                         monkeypatch) -> None:
    monkeypatch.setattr(rb, "_CHAR_PATH_RANGES", 1)  # every pattern past ASCII by characters
    new = rb.regex_to_byte_dfa("R", pattern, first, uni)
    old = rb._determinise("R", pattern, build_byte_nfa(pattern, rb.MAX_NFA_NODES, first, uni))
    assert _same_language(new, old)
    assert new.num_states == old.num_states  # both minimal


def _strings(alphabet: list[str], lengths: list[int], n: int, seed: int) -> list[str]:
    rnd = random.Random(seed)
    return ["".join(rnd.choice(alphabet) for _ in range(rnd.choice(lengths))) for _ in range(n)]


# characters of 1-4 UTF-8 bytes, in and out of \w, \d, \s
ALPHABET = ["a", "Z", "_", "7", "٣", "é", "ß", "中", "\U0001d7d8", "\U00010400", "😀", ".", "-",
            "@", '"', " ", "\n", "\xa0", "\u0300", "\u2028"]


@pytest.mark.parametrize(("pattern", "lengths"), [
    (r"\w{1,64}", [0, 1, 2, 40, 63, 64, 65, 80]),
    (r"\d{1,300}", [0, 1, 299, 300, 301]),
    (r'[^"]{1,256}', [0, 1, 255, 256, 257]),
    (r".{0,100}", [0, 1, 99, 100, 101]),
    (r"[\w.-]{3,64}@[\w.-]+", [2, 3, 10, 64, 65, 66, 70]),
])
def test_long_counted_unicode_classes_match_as_re_does(pattern, lengths) -> None:
    d = rb.regex_to_byte_dfa("R", pattern, False, True)
    rx = re.compile(pattern)
    digits_words = [*ALPHABET, "1", "٣", "\U0001d7d8", "x"]  # more characters in the classes
    texts = _strings(digits_words, lengths, 400, seed=len(pattern))
    if "@" in pattern:
        texts += [f"{a}@{b}" for a, b in zip(texts[::2], texts[1::2], strict=False)]
    for s in texts:
        assert d.matches(s.encode()) == bool(rx.fullmatch(s)), s
        if rx.fullmatch(s):  # and no byte prefix that cuts a character is a match
            data = s.encode()
            cut = [i for i in range(1, len(data)) if (data[i] & 0xC0) == 0x80]
            assert not any(d.matches(data[:i]) for i in cut[:20])


def test_expansion_past_its_limit_names_the_terminal(monkeypatch) -> None:
    monkeypatch.setattr(rb, "MAX_TERMINAL_STATES", 64)  # expanded limit 16 x 64 = 1,024
    with pytest.raises(GrammarError, match=r"terminal R: .* more than 1,024 byte automaton"):
        rb.regex_to_byte_dfa("R", r"\w{1,8}", False, True)
