"""Python ``re``'s Unicode ``\\d \\w \\s`` ship as ranges (read in a millisecond instead of
scanned per process): the shipped ranges are what ``re`` matches in this interpreter."""

from __future__ import annotations

import re

import pytest

from gramask.compiler import regex_nfa


@pytest.mark.parametrize("kind", ["DIGIT", "WORD", "SPACE"])
def test_shipped_categories_are_what_re_matches(kind: str) -> None:
    shipped = regex_nfa._shipped_categories()
    if not shipped:
        pytest.skip(f"shipped for another interpreter than {regex_nfa._database()}")
    assert shipped[kind] == regex_nfa.scan_unicode_category(kind)
    assert regex_nfa.unicode_category(f"CATEGORY_{kind}") == shipped[kind]
    pat = re.compile({"DIGIT": r"\d", "WORD": r"\w", "SPACE": r"\s"}[kind])
    for lo, hi in shipped[kind][::7]:  # spot checks at the ranges' edges and just outside
        assert pat.fullmatch(chr(lo)) and pat.fullmatch(chr(hi))
        if lo > 0 and not 0xD800 <= lo - 1 <= 0xDFFF:
            assert not pat.fullmatch(chr(lo - 1))
