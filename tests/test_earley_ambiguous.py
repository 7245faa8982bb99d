"""The Earley runtime on random ambiguous grammars (left, right and middle recursion, nullable
symbols, several derivations of one text), with lark's Earley parser as the oracle: the
verdict on every short text and the mask after every short prefix. The completions merged
into an Earley set skip what another completion brought in already (see
``Automaton._complete_into``): these grammars are where the same phrase completes into the
same origin along many paths."""

from __future__ import annotations

import itertools
import warnings

import lark
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gramask
from gramask.errors import GramaskError
from tests._support import lark_accepts, tiny

_NAMES = ["s", "x", "y"]
_SYMBOLS = [*_NAMES, '"a"', '"b"']


@st.composite
def _grammars(draw: st.DrawFn) -> str:
    lines = []
    for name in _NAMES:
        alts = []
        for _ in range(draw(st.integers(1, 3))):
            seq = draw(st.lists(st.sampled_from(_SYMBOLS), min_size=1, max_size=3))
            nullable = draw(st.lists(st.booleans(), min_size=len(seq), max_size=len(seq)))
            alts.append(" ".join(f"{s}?" if q else s for s, q in zip(seq, nullable,
                                                                        strict=True)))
        lines.append(f"{name}: " + " | ".join(alts))
    return "start: s\n" + "\n".join(lines) + "\n"


def _texts(n: int) -> list[str]:
    return ["".join(t) for k in range(n + 1) for t in itertools.product("ab", repeat=k)]


def _check(grammar: str) -> None:
    try:
        oracle = lark.Lark(grammar, parser="earley", lexer="basic")
    except (lark.exceptions.LarkError, RecursionError):
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gramask.GrammarWarning)  # unused or dead rules
            cg, vocab = tiny(grammar, ["a", "b"])
    except GramaskError:
        return  # (grammars gramask refuses are other tests' business)
    eos = vocab.eos_token_id
    language = {t for t in _texts(6) if lark_accepts(oracle, t)}
    for p in _texts(4):
        extended = [t for t in language if t.startswith(p)]
        try:
            c = cg.constraint(p)
        except gramask.InvalidPrefixError:
            assert not extended, (grammar, p)
            continue
        m = c.allowed()
        assert bool(m[eos]) == (p in language), (grammar, p)
        for tid, x in enumerate("ab"):
            if any(t.startswith(p + x) for t in language):
                assert m[tid], (grammar, p, x)
            if m[tid]:  # allowed: a completion exists, and lark takes it
                done = cg.constraint(p + x).shortest_completion()
                assert lark_accepts(oracle, p + x + done.text), (grammar, p, x, done.text)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_grammars())
def test_random_ambiguous_grammars_mask_as_lark_earley_parses(grammar: str) -> None:
    _check(grammar)


def test_highly_ambiguous_grammars_mask_exactly() -> None:
    """Hand-picked shapes: every split of ``s s`` (Catalan many parses), both recursions with
    a nullable middle, a cycle of unit rules, and phrases that end together in many origins."""
    for grammar in [
        'start: s\ns: s s | "a"\n',
        'start: s\ns: s s | "a" | "b" s "b"\n',
        'start: s\ns: s x? s | "a"\nx: "b"?\n',
        'start: s\ns: x | "a"\nx: y | s "b"\ny: s | "b" x\n',
        'start: s\ns: s? "a" s? | s "b"\n',
        'start: s+\ns: "a"+ | "a" s "b"?\n',
    ]:
        _check(grammar)
