"""Tokens inside a string's body decided by their character count (compiler.plain_chars):
the count against Python's UTF-8 decoder, the rows against the walk they replace, and
counted strings forced at every length boundary against ``jsonschema``."""

from __future__ import annotations

import functools
import json
import random

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gramask
from gramask import Grammar
from gramask.compiler.lexer import LexerDFA
from gramask.compiler.pipeline import build
from gramask.compiler.plain_chars import (
    Finisher,
    PlainChains,
    chain_length,
    lead_needs,
    plain_needs,
    plain_rest,
    uniform_steps,
)
from gramask.compiler.walk_inputs import token_matrix
from gramask.frontends.json_strings import length_string_dfa
from tests._support import hf_tokenizer

# bytes that make the cases: plain ASCII, a quote, a backslash, controls, UTF-8 leads with
# their edge second bytes, continuations, bytes no UTF-8 text holds
_EDGE = [0x41, 0x20, 0x7E, 0x7F, 0x22, 0x5C, 0x0A, 0x00, 0xC2, 0xC3, 0xDF, 0xA9, 0x80, 0xBF,
         0xE0, 0xA0, 0x9F, 0xE2, 0x82, 0xAC, 0xED, 0xEF, 0xF0, 0x90, 0x8F, 0xF1, 0xF4, 0xC0,
         0xC1, 0xF5, 0xFF]


def _expected(token: bytes) -> int:
    """The characters of ``token[1:]`` (a cut last one counted) if they are plain, else -1:
    Python's strict decoder, and a cut tail valid when some continuation completes it."""
    body = token[1:]
    for cut in range(min(3, len(body)) + 1):
        head, tail = body[: len(body) - cut], body[len(body) - cut:]
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if any(c in '"\\' or ord(c) < 0x20 for c in text):
            return -1
        if not tail:
            return len(text)
        for k in range(1, 4):
            for a in range(0x80, 0xC0):
                whole = tail + bytes([a]) + b"\x80" * (k - 1)
                try:
                    if len(whole.decode("utf-8")) == 1:
                        return len(text) + 1
                except UnicodeDecodeError:
                    pass
        return -1
    return -1


def _needs(tokens: list[bytes]) -> np.ndarray:
    lens, buf, _ = token_matrix(tokens, np.zeros(len(tokens), dtype=bool))
    return plain_needs(lens, buf)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_EDGE), min_size=1, max_size=8).map(bytes),
                min_size=1, max_size=300))
def test_plain_needs_match_the_decoder(tokens: list[bytes]) -> None:
    got = _needs(tokens)
    assert got.tolist() == [_expected(t) for t in tokens]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_EDGE), min_size=1, max_size=8).map(bytes),
                min_size=1, max_size=200))
def test_plain_rest_at_every_offset(tokens: list[bytes]) -> None:
    """From any byte of a token on: what a walk entering there crosses (one that reaches a
    chain mid-token)."""
    lens, buf, _ = token_matrix(tokens, np.zeros(len(tokens), dtype=bool))
    rest = plain_rest(lens, buf)
    at = 0
    for t in tokens:
        for i in range(1, len(t)):
            assert rest[at + i] == _expected(b"x" + t[i:]), (t, i)
        at += len(t)


def _expected_lead(token: bytes) -> tuple[int, int]:
    """(width of the character ``token[0]`` leads, 0 for none; the plain characters after
    it as ``_expected`` counts them, 0 where the token ends inside it, -1 where a byte of it
    is no continuation byte or the rest is not plain)."""
    b = token[0]
    w = 2 if 0xC2 <= b <= 0xDF else 3 if 0xE0 <= b <= 0xEF else 4 if 0xF0 <= b <= 0xF4 else 0
    if not w:
        return 0, -1
    if any(not 0x80 <= c < 0xC0 for c in token[1:w]):
        return w, -1
    return w, (0 if len(token) <= w else _expected(b"x" + token[w:]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_EDGE), min_size=1, max_size=8).map(bytes),
                min_size=1, max_size=300))
def test_lead_needs_match_the_decoder(tokens: list[bytes]) -> None:
    lens, buf, _ = token_matrix(tokens, np.zeros(len(tokens), dtype=bool))
    widths, needs = lead_needs(lens, buf)
    assert list(zip(widths.tolist(), needs.tolist(), strict=True)) == [
        _expected_lead(t) for t in tokens]


def test_plain_needs_cut_characters() -> None:
    euro, clef = "€".encode(), "𝄞".encode()
    tokens = [b"x", b"xab", b"x" + euro, b"x" + euro[:2], b"x" + clef[:1], b"xa" + clef[:3],
              b"x" + euro[1:], b"x" + euro[:1] + b"a", b'xa"', b"xa\\", b"\xe2\x82", b"xa\n",
              b"x\xed\xa0\x80", b"x\xe0\x80\x80", b"x\xf4\x90\x80\x80", b"x\xc0\xaf"]
    assert _needs(tokens).tolist() == [0, 2, 1, 1, 1, 2, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                       -1]


def uniform_step(trans: np.ndarray, state_class: np.ndarray, s: int) -> int:
    """:func:`uniform_steps` of one state."""
    return int(uniform_steps(trans, state_class, np.array([s]))[0])


def _counted_lexer(lo: int, hi: int | None) -> tuple[np.ndarray, np.ndarray]:
    """A counted string's automaton as a lexer's (states x 256) table, one end class."""
    d = length_string_dfa(lo, hi)
    table, byte_class = d.classes()
    return table[:, byte_class].astype(np.int64), np.zeros(table.shape[0], dtype=np.int32)


@pytest.mark.parametrize(("lo", "hi"), [(0, 5), (3, 7), (2, None), (0, None)])
def test_uniform_chain_of_a_counted_string(lo: int, hi: int | None) -> None:
    trans, cls = _counted_lexer(lo, hi)
    after_quote = int(trans[0, 0x22])
    memo: dict[int, int] = {}
    got = chain_length(trans, cls, memo, after_quote, 100)
    # every count below the bound steps on by one character; the bound only closes
    assert got == (hi if hi is not None else 100)
    cls2 = cls.copy()
    cls2[trans[after_quote, 0xC3]] = 1  # inside a character: another class, no chain
    assert uniform_step(trans, cls2, after_quote) == -1
    trans2 = trans.copy()
    trans2[after_quote, ord("q")] = -1  # one character dies: no chain
    assert uniform_step(trans2, cls, after_quote) == -1


@pytest.mark.parametrize("char", ["é", "ࠀ", "€", "\uffff", "𐀀", "\U0010ffff", "𝄞"])
def test_uniform_step_reads_every_byte_of_a_character(char: str) -> None:
    """A character whose bytes pass a state of another class, or end elsewhere, or die,
    breaks the chain (also past its lead: at every byte of a 3- and 4-byte character)."""
    trans, cls = _counted_lexer(0, None)
    s = int(trans[0, 0x22])
    nxt = uniform_step(trans, cls, s)
    assert nxt >= 0
    data = char.encode()
    for depth in range(len(data)):
        path = [s]
        for b in data[: depth + 1]:
            path.append(int(trans[path[-1], b]))
        q = path[-1]  # the state after depth + 1 bytes of the character
        other = np.append(cls, 0).copy()[: len(cls)]
        other[q] = 1
        assert uniform_step(trans, other, s) == -1, depth
        bent = trans.copy()
        bent[path[-2], data[depth]] = -1
        assert uniform_step(bent, cls, s) == -1, depth
    # the whole character leads elsewhere: its last byte's state cloned (states inside
    # characters are shared by many) and the clone's last step bent
    bent = np.vstack([trans, trans[path[-2]]])
    bent[-1, data[-1]] = int(trans[s, 0x22])
    bent[path[-3], data[-2]] = len(trans)
    assert uniform_step(bent, np.append(cls, 0), s) == -1
    assert (uniform_steps(trans, cls, np.array([s, s, 0])) == [nxt, nxt, -1]).all()


@functools.cache
def _mixed() -> gramask.Vocabulary:
    """Every byte, and tokens with UTF-8 split across them, escapes, quotes, long runs (up
    to 40 bytes: longer than the chains of the rows that share no local walk)."""
    rng = random.Random(3)
    text = "aé€𝄞 Zürich ☃ x" * 8
    data = text.encode()
    toks = {bytes([b]) for b in range(256)}
    for _ in range(800):
        i = rng.randrange(len(data))
        toks.add(data[i: i + rng.randint(2, 40)])
    toks |= {b'a"', b'"a', b'\\n', b'a\\', b'\\u00e9', b'":"', b'"}', b'aaaaaaaa', b'\xc3',
             b'\xa9a', b'\xe2\x82', b'\xac"', b'  ', b'" ', b'abc"}'}
    ordered = sorted(toks)
    return gramask.Vocabulary.from_tokens([*ordered, b"</s>"], eos_token_id=len(ordered),
                                          name="plain-mixed")


_SCHEMAS = [
    {"type": "string", "minLength": 2, "maxLength": 20},
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 16},
                                      "b": {"type": "string", "minLength": 3},
                                      "c": {"type": "string", "format": "uuid"}}},
    {"type": "array", "items": {"type": "string", "minLength": 12, "maxLength": 14}},
]


def _one_step(trans: np.ndarray, cls: np.ndarray, s: int) -> int:
    """uniform_step spelled out character by character: every plain character (printable
    ASCII but a quote and a backslash, every UTF-8 character by its bytes) leads to one
    state, through states of ``s``'s class."""
    seen: set[int] = set()
    for cp in [*(c for c in range(0x20, 0x80) if c not in (0x22, 0x5C)),
               *range(0x80, 0x800, 7), *range(0x800, 0xD800, 61), *range(0xE000, 0x10000, 31),
               *range(0x10000, 0x110000, 997), 0x7FF, 0xFFFF, 0x10FFFF]:
        q = s
        for b in chr(cp).encode():
            q = int(trans[q, b])
            if q < 0 or cls[q] != cls[s]:
                return -1
        seen.add(q)
    return seen.pop() if len(seen) == 1 else -1


@pytest.mark.parametrize("schema", _SCHEMAS)
def test_uniform_steps_match_the_characters(schema: dict[str, object]) -> None:
    w = build(Grammar.from_json_schema(schema), _mixed(), progress=False,
              lazy=True).tables.walker
    assert w is not None
    states = np.arange(w.dfa.num_states)
    got = uniform_steps(w.trans, w.state_class, states)
    want = [_one_step(w.trans, w.state_class, s) for s in states.tolist()]
    # (the sampled characters see every lead; a state that the sample calls uniform but the
    # full check does not differs on some unsampled character)
    assert all(g == x or (g == -1 and x >= 0) for g, x in zip(got.tolist(), want, strict=True))
    assert (got >= 0).sum() > 10
    assert [uniform_step(w.trans, w.state_class, s) for s in states[:50].tolist()] == got[
        :50].tolist()


@pytest.mark.parametrize("schema", _SCHEMAS)
def test_rows_match_the_walk(schema: dict[str, object], monkeypatch: pytest.MonkeyPatch
                             ) -> None:
    """Every row of the lexer, built with the character counts and walked in full (the
    counted strings are long enough that their rows share no local walk)."""
    vocab = _mixed()
    g = Grammar.from_json_schema(schema)
    fast = build(g, vocab, progress=False, lazy=True).tables.walker
    assert fast is not None
    dfa: LexerDFA = fast.dfa
    rows = [fast.row(q) for q in range(dfa.num_states)]
    monkeypatch.setattr(PlainChains, "tokens",
                        lambda self, groups: [np.zeros(len(t), dtype=bool) for _, t in groups])
    monkeypatch.setattr(Finisher, "finish", lambda self, act, ka, cur, at, out: (act, ka, None))
    slow = build(g, vocab, progress=False, lazy=True).tables.walker
    assert slow is not None
    for q, (a_idx, a_node) in enumerate(rows):
        b_idx, b_node = slow.row(q)
        assert np.array_equal(a_idx, b_idx), q
        # the same outcomes (ids may be numbered in another order where the walks differ)
        pairs = set(zip(a_node.tolist(), b_node.tolist(), strict=True))
        assert len({a for a, _ in pairs}) == len(pairs) == len({b for _, b in pairs}), q
    assert (fast.chains.length > 0).any()  # the fast path ran


def _forced(cg: gramask.CompiledGrammar, ids: list[int]) -> bool:
    c = cg.constraint()
    for t in ids:
        if not c.allowed()[t]:
            return False
        c.advance(t)
    return bool(c.allowed()[cg.vocab.eos_token_id]) and c.is_complete()


def _boundary_texts(lo: int, hi: int) -> list[str]:
    """Strings of every length around the bounds: ASCII, 2-, 3-, 4-byte characters mixed
    (a byte-level vocabulary splits them), escapes."""
    parts = ["a", "é", "€", "𝄞", "\n", '"', "\\", "/", "Z", "☃"]
    out = []
    for n in sorted({max(lo - 1, 0), lo, hi, hi + 1, (lo + hi) // 2}):
        for shift in range(3):
            out.append("".join(parts[(i + shift) % len(parts)] for i in range(n)))
    return out


@pytest.mark.parametrize(("lo", "hi"), [(0, 1), (2, 5), (3, 9)])
def test_counted_boundaries_tiny_vocabulary(lo: int, hi: int) -> None:
    vocab = _mixed()
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": lo,
                                                     "maxLength": hi},
                                               "u": {"type": "string", "format": "uuid"}}}
    cg = gramask.compile(Grammar.from_json_schema(schema), vocab, cache=False,
                         progress=False)
    index = {t: i for i, t in enumerate(vocab.tokens) if i != vocab.eos_token_id}
    rng = random.Random(lo * 31 + hi)
    for s in _boundary_texts(lo, hi):
        data = json.dumps({"s": s}, ensure_ascii=False).encode()
        ids, i = [], 0
        while i < len(data):  # random cuts: characters split across tokens
            n = rng.randint(1, 12)
            while data[i: i + n] not in index:
                n -= 1
            ids.append(index[data[i: i + n]])
            i += n
        assert _forced(cg, ids) == jsonschema.Draft202012Validator(schema).is_valid(
            {"s": s}), (s, ids)


@pytest.mark.parametrize(("lo", "hi"), [(1, 20), (5, 40)])
def test_counted_boundaries_real_vocabulary(lo: int, hi: int) -> None:
    vocab = gramask.Vocabulary.bundled("deepseek-v4")
    encode = hf_tokenizer("deepseek-v4")
    schema = {"type": "object", "properties": {"s": {"type": "string", "minLength": lo,
                                                     "maxLength": hi},
                                               "h": {"type": "string", "format": "hostname"}}}
    cg = gramask.compile(Grammar.from_json_schema(schema), vocab, cache=False,
                         progress=False)
    for s in _boundary_texts(lo, hi):
        for ensure_ascii in (False, True):
            inst = {"s": s}
            ids = encode(json.dumps(inst, ensure_ascii=ensure_ascii))
            assert _forced(cg, ids) == jsonschema.Draft202012Validator(schema).is_valid(
                inst), (s, ensure_ascii)
