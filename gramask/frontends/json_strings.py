"""Byte automata of JSON strings whose *decoded* value is in a language.

A JSON Schema constrains decoded strings (``"caf\\u00e9"`` is ``café``); the lexer reads the
encoded bytes. Building the byte automaton directly from a character automaton of the decoded
language handles the spellings exactly — raw UTF-8, short escapes, ``\\uXXXX`` in either
case for controls and non-ASCII characters, surrogate pairs as one character — and, unlike a
regex that spells all of that out for interegular, compiles in milliseconds: sub-states
inside a multi-byte character or an escape are shared wherever the rest of the character
cannot change the outcome. Two spellings are refused (never accepted, whatever the
language): lone surrogates, and printable ASCII written as ``\\u0020``-``\\u007f``, which
``json.dumps`` never writes; refusing the latter keeps keys, formats and patterns over ASCII
at about one lexer state per character.

A terminal carries its language as a small JSON spec (``TerminalSpec.automaton``):
``{"words": [...]}`` (one of them), ``{"except": [...]}`` (none of them), ``{"regex": P,
"min": m, "max": n}`` (a Python regex over the decoded value, whole match, and a length in
code points; each part optional), ``{"except": [...], "match": [P...], "nomatch": [P...]}``
(a region of keys: none of the words, every ``match`` regex, no ``nomatch`` one). One spec
is not a string: ``{"multiple_of": D, "number": R}``, the numbers regex ``R`` matches that are
multiples of ``D`` (:mod:`.json_numbers`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable
from functools import lru_cache

import numpy as np

from ..compiler.charclass import MAX_CODEPOINT as MAX_CP
from ..compiler.regex_bytes import MAX_BYTE_STATES, ByteDFA, _trim
from ..errors import GrammarError
from .json_chardfa import CharDFA, Piece
from .json_keys import key_region, plain, words_dfa

__all__ = ["build_source", "build_spec_dfa", "json_string_dfa", "length_string_dfa", "spec_dfa"]

# a counted string laid out directly (length_string_dfa): 22 states per counted character
# (json_schema_base.MAX_PLAIN_LENGTH, 10,000 characters: 220,004 states)
MAX_STRING_STATES = 16 * MAX_BYTE_STATES
# states json_string_dfa may build before minimising: a pattern's counted Unicode class,
# /[^"\s]{1,128}/, builds ~20,000 for its 2,947 (each takes ~0.2 ms; more would cost seconds)
_MAX_BUILT_STATES = 2 * MAX_BYTE_STATES
_SHORT = {ord('"'): 0x22, ord("\\"): 0x5C, ord("/"): 0x2F, ord("b"): 0x08, ord("f"): 0x0C,
          ord("n"): 0x0A, ord("r"): 0x0D, ord("t"): 0x09}
_HEX = {**{ord(c): int(c, 16) for c in "0123456789abcdef"},
        **{ord(c): int(c, 16) for c in "ABCDEF"}}
_LEADS = [(lead, 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3,
           (0xA0, 0xBF) if lead == 0xE0 else (0x80, 0x9F) if lead == 0xED
           else (0x90, 0xBF) if lead == 0xF0 else (0x80, 0x8F) if lead == 0xF4
           else (0x80, 0xBF)) for lead in range(0xC2, 0xF5)]


def json_string_dfa(cdfa: CharDFA) -> ByteDFA:
    """The byte DFA of ``"`` + every JSON spelling of a string ``cdfa`` accepts + ``"``."""
    cdfa = cdfa.trimmed()
    index: dict[Hashable, int] = {}
    order: list[Hashable] = []
    rows: list[dict[int, int]] = []
    finals: list[bool] = []

    def sid(key: Hashable) -> int:
        n = index.get(key)
        if n is None:
            n = index[key] = len(order)
            order.append(key)
            if len(order) > _MAX_BUILT_STATES:
                raise GrammarError(f"a JSON string terminal needs more than "
                                   f"{_MAX_BUILT_STATES:,} automaton states")
        return n

    def effective(q: int, lo: int, hi: int) -> tuple[Piece, ...]:
        """δ(q) over code points [lo, hi], surrogates excluded."""
        ps = cdfa.pieces(q, lo, hi)
        out = []
        for a, b, t in ps:
            for x, y in ((a, min(b, 0xD7FF)), (max(a, 0xE000), b)):
                if x <= y and t >= 0:
                    out.append((x, y, t))
        return tuple(out)

    def constant(ps: tuple[Piece, ...], lo: int, hi: int) -> int | None:
        """The one target of ``ps`` if it covers [lo, hi] minus surrogates, else None."""
        if not ps:
            return None
        t0 = ps[0][2]
        if any(t != t0 for _, _, t in ps):
            return None
        covered = sum(b - a + 1 for a, b, _ in ps)
        need = (hi - lo + 1) - max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1)
        return t0 if covered == need else None

    def utf8_node(q: int, lo: int, hi: int, rem: int, first: tuple[int, int]) -> Hashable:
        """Inside a UTF-8 character: ``rem`` continuation bytes to go, code points [lo, hi]
        still possible, the next byte in ``first``."""
        ps = effective(q, lo, hi)
        if not ps:
            return None
        t = constant(ps, lo, hi)
        if t is not None:
            return ("skip", t, rem, first)
        return ("utf8", q, lo, hi, rem, first)

    def hex_range(base: int, k: int) -> tuple[int, int]:
        return base, base + 16**k - 1

    def unit_pieces(q: int, lo: int, hi: int) -> tuple[Piece, ...]:
        """δ(q) over what UTF-16 units [lo, hi] can spell: BMP characters but printable
        ASCII, and the astral characters of the high surrogates among them (lone lows are
        dead)."""
        ps = [(a, b, t) for x, y, t in effective(q, lo, hi)
              for a, b in ((x, min(y, 0x1F)), (max(x, 0x80), y)) if a <= b]
        hlo, hhi = max(lo, 0xD800), min(hi, 0xDBFF)
        if hlo <= hhi:
            ps += effective(q, 0x10000 + ((hlo - 0xD800) << 10),
                            0x10000 + ((hhi - 0xD800) << 10) + 0x3FF)
        return tuple(ps)

    def unit_constant(q: int, lo: int, hi: int) -> tuple[bool, int | None]:
        """(anything alive, the one target if all of it leads there)."""
        ps = unit_pieces(q, lo, hi)
        if not ps:
            return False, None
        t0 = ps[0][2]
        if any(t != t0 for _, _, t in ps):
            return True, None
        covered = sum(b - a + 1 for a, b, _ in ps)
        bmp = ((hi - lo + 1) - max(0, min(hi, 0xDFFF) - max(lo, 0xD800) + 1)
               - max(0, min(hi, 0x7F) - max(lo, 0x20) + 1))
        hlo, hhi = max(lo, 0xD800), min(hi, 0xDBFF)
        astral = (hhi - hlo + 1) * 1024 if hlo <= hhi else 0
        return True, (t0 if covered == bmp + astral else None)

    def has_surrogates(lo: int, hi: int) -> bool:
        """Whether [lo, hi] holds units a \\u escape treats specially: surrogates, and the
        printable ASCII that must be written raw."""
        return (lo <= 0xDFFF and hi >= 0xD800) or (lo <= 0x7F and hi >= 0x20)

    def hex_node(q: int, base: int, k: int) -> Hashable:
        lo, hi = hex_range(base, k)
        alive, t = unit_constant(q, lo, hi)
        if not alive:
            return None
        if t is not None:
            return ("hexskip", t, base if has_surrogates(lo, hi) else None, k)
        return ("hex", q, base, k)

    def unit_done(q: int | None, t: int | None, unit: int) -> Hashable:
        """After the 4th hex digit of ``\\uXXXX``."""
        if 0xDC00 <= unit <= 0xDFFF or 0x20 <= unit <= 0x7F:
            return None
        if 0xD800 <= unit <= 0xDBFF:
            if t is not None:
                return ("pairskip", t)
            assert q is not None
            a = 0x10000 + ((unit - 0xD800) << 10)
            alive, tt = unit_constant(q, unit, unit)
            if not alive:
                return None
            del a
            return ("pairskip", tt) if tt is not None else ("pair", q, unit)
        if t is not None:
            return ("char", t)
        assert q is not None
        nt = cdfa.step(q, unit)
        return ("char", nt) if nt >= 0 else None

    def fill_hex(key: tuple[object, ...], row: dict[int, Hashable]) -> None:
        kind, qt, base, k = key
        assert isinstance(qt, int) and isinstance(k, int)
        for byte, d in _HEX.items():
            if kind == "hexskip" and base is None:
                row[byte] = ("char", qt) if k == 1 else ("hexskip", qt, None, k - 1)
                continue
            assert isinstance(base, int)
            nb = base + d * 16 ** (k - 1)
            if k == 1:
                row[byte] = (unit_done(None, qt, nb) if kind == "hexskip"
                             else unit_done(qt, None, nb))
            elif kind == "hexskip":
                lo, hi = hex_range(nb, k - 1)
                if (lo >= 0xDC00 and hi <= 0xDFFF) or (lo >= 0x20 and hi <= 0x7F):
                    continue  # only lone low surrogates or printable ASCII below
                row[byte] = ("hexskip", qt, nb if has_surrogates(lo, hi) else None, k - 1)
            else:
                row[byte] = hex_node(qt, nb, k - 1)

    def low_node(key: tuple[object, ...], base: int, k: int) -> Hashable:
        lo, hi = hex_range(base, k)
        if hi < 0xDC00 or lo > 0xDFFF:
            return None
        if key[0] == "pairskip_u":
            return ("lowskip", key[1], base, k)
        return ("low", key[1], key[2], base, k)

    def fill_low(key: tuple[object, ...], row: dict[int, Hashable]) -> None:
        if key[0] == "lowskip":
            _, t, base, k = key
            q = h = None
        else:
            _, q, h, base, k = key
            t = None
        assert isinstance(base, int) and isinstance(k, int)
        for byte, d in _HEX.items():
            nb = base + d * 16 ** (k - 1)
            if k > 1:
                lo, hi = hex_range(nb, k - 1)
                if hi < 0xDC00 or lo > 0xDFFF:
                    continue
                row[byte] = (("lowskip", t, nb, k - 1) if t is not None
                             else ("low", q, h, nb, k - 1))
            elif 0xDC00 <= nb <= 0xDFFF:
                if t is not None:
                    row[byte] = ("char", t)
                else:
                    assert isinstance(q, int) and isinstance(h, int)
                    cp = 0x10000 + ((h - 0xD800) << 10) + (nb - 0xDC00)
                    nt = cdfa.step(q, cp)
                    if nt >= 0:
                        row[byte] = ("char", nt)

    start = sid("start")
    final = sid("final")
    del start, final
    i = 0
    while i < len(order):
        key = order[i]
        i += 1
        row: dict[int, Hashable] = {}
        fin = False
        if key == "start":
            row[0x22] = ("char", 0)
        elif key == "final":
            fin = True
        else:
            assert isinstance(key, tuple)
            kind = key[0]
            if kind == "char":
                q = key[1]
                if cdfa.finals[q]:
                    row[0x22] = "final"
                for a, b, t in cdfa.pieces(q, 0x20, 0x7F):  # printable ASCII: raw only
                    for byte in range(a, b + 1):
                        if byte != 0x22 and byte != 0x5C:
                            row[byte] = ("char", t)
                row[0x5C] = ("esc", q)
                high = effective(q, 0x80, MAX_CP)
                if not high:  # no multi-byte character (ASCII keys, formats)
                    continue_leads = False
                else:
                    one = constant(high, 0x80, MAX_CP)
                    continue_leads = one is None
                    if one is not None:  # every multi-byte character leads to one state
                        for lead, rem, first in _LEADS:
                            row[lead] = ("skip", one, rem, first)
                for lead in range(0xC2, 0xF5) if continue_leads else ():
                    if lead < 0xE0:
                        lo = (lead & 0x1F) << 6
                        node = utf8_node(q, lo, lo + 0x3F, 1, (0x80, 0xBF))
                    elif lead < 0xF0:
                        lo = (lead & 0x0F) << 12
                        first = (0xA0, 0xBF) if lead == 0xE0 else (0x80, 0x9F) if lead == 0xED \
                            else (0x80, 0xBF)
                        node = utf8_node(q, max(lo, 0x800), lo + 0xFFF, 2, first)
                    else:
                        lo = (lead & 0x07) << 18
                        first = (0x90, 0xBF) if lead == 0xF0 else (0x80, 0x8F) if lead == 0xF4 \
                            else (0x80, 0xBF)
                        node = utf8_node(q, max(lo, 0x10000), min(lo + 0x3FFFF, MAX_CP), 3,
                                         first)
                    if node is not None:
                        row[lead] = node
            elif kind == "skip":
                _, t, rem, (a, b) = key
                nxt = ("char", t) if rem == 1 else ("skip", t, rem - 1, (0x80, 0xBF))
                for byte in range(a, b + 1):
                    row[byte] = nxt
            elif kind == "utf8":
                _, q, lo, hi, rem, (a, b) = key
                width = 64 ** (rem - 1)
                base = lo - (lo % (width * 64)) if rem > 0 else lo
                for byte in range(a, b + 1):
                    clo = max(lo, base + (byte - 0x80) * width)
                    chi = min(hi, base + (byte - 0x80 + 1) * width - 1)
                    if clo > chi:
                        continue
                    if rem == 1:
                        t = cdfa.step(q, clo) if not 0xD800 <= clo <= 0xDFFF else -1
                        if t >= 0:
                            row[byte] = ("char", t)
                    else:
                        node = utf8_node(q, clo, chi, rem - 1, (0x80, 0xBF))
                        if node is not None:
                            row[byte] = node
            elif kind == "esc":
                q = key[1]
                for byte, cp in _SHORT.items():
                    t = cdfa.step(q, cp)
                    if t >= 0:
                        row[byte] = ("char", t)
                node = hex_node(q, 0, 4)
                if node is not None:
                    row[ord("u")] = node
            elif kind in ("hex", "hexskip"):
                fill_hex(key, row)
            elif kind in ("pair", "pairskip"):
                # after a high surrogate: '\' 'u' then a low surrogate
                row[0x5C] = (key[0] + "_u", *key[1:])
            elif kind in ("pair_u", "pairskip_u"):
                row[ord("u")] = low_node(key, 0, 4)
            elif kind in ("low", "lowskip"):
                fill_low(key, row)
            else:  # pragma: no cover
                raise AssertionError(key)
        rows.append({b: sid(k) for b, k in row.items() if k is not None})
        finals.append(fin)

    trans = np.full((len(order), 256), -1, dtype=np.int64)
    for src, row_ids in enumerate(rows):
        for b, dst in row_ids.items():
            trans[src, b] = dst
    return _trim(trans, np.array(finals, dtype=bool))


@lru_cache(maxsize=1)
def _one_character() -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """The minimal byte DFA of a JSON string of exactly one character, taken apart:
    (table per byte class, byte classes, the state before the character, the state after
    it, the states inside it)."""
    d = json_string_dfa(CharDFA.length(1, 1))
    table, byte_class = d.classes()
    quote = int(byte_class[0x22])
    before = int(table[0, quote])
    final = int(np.flatnonzero(d.finals)[0])
    after = int(np.flatnonzero(table[:, quote] == final)[0])
    inside = np.array([s for s in range(table.shape[0]) if s not in (0, final, before, after)],
                      dtype=np.int64)
    return table, byte_class, before, after, inside


def length_string_dfa(lo: int, hi: int | None) -> ByteDFA:
    """:func:`json_string_dfa` of ``CharDFA.length(lo, hi)``, built directly.

    The minimal automaton of a counted string is the one-character automaton repeated once
    per count (a count is a state before a character; the states inside a character are
    copied per count), so it is laid out here in linear time instead of being built state by
    state and minimised, which took ~1 s at 64 characters (the minimisation is superlinear).
    Minimal as laid out: counts below ``lo`` differ in how many characters are still needed,
    counts up to ``hi`` in how many are still allowed, and the copies of a minimal automaton
    stay apart."""
    table, byte_class, before, after, inside = _one_character()
    top = hi if hi is not None else lo  # the counts the automaton tells apart: 0 .. top
    loop = hi is None and lo == 0  # then count 0 is every count, and reads on forever
    whole = top + loop  # the counts with states inside a character
    width = 1 + len(inside)  # a count's states: before its character, then inside it
    # start, final, the counts, and top's "before" state apart (bounded: only the closing
    # quote is left there; unbounded: it reads on through the states of the count below,
    # which lead back to it)
    n = 2 + whole * width + (not loop)
    if n > MAX_STRING_STATES:
        raise GrammarError(f"a JSON string terminal needs more than {MAX_STRING_STATES:,} "
                           "automaton states")
    quote = int(byte_class[0x22])
    local = np.full(table.shape[0], -1, dtype=np.int64)  # one-character state -> its slot
    local[before] = 0
    local[inside] = np.arange(1, width)
    rows = table[np.concatenate(([before], inside))]  # (width, classes)
    slot = np.where(rows >= 0, local[np.maximum(rows, 0)], -1)
    out = np.full((n, table.shape[1]), -1, dtype=np.int32)
    out[0, quote] = 2
    if whole:
        first = 2 + np.arange(whole, dtype=np.int64)[:, None, None] * width  # (whole, 1, 1)
        nxt = 2 + np.minimum(np.arange(1, whole + 1), top) * width  # the next count's
        block = np.where(slot >= 0, first + slot, -1)
        block = np.where(rows == after, nxt[:, None, None], block)
        out[2 : 2 + whole * width] = block.reshape(whole * width, -1)
    if hi is None and not loop:
        out[2 + top * width] = out[2 + (top - 1) * width]
    counts = np.arange(top + 1)
    out[2 + counts * width, quote] = np.where(counts >= lo, 1, -1)
    finals = np.zeros(n, dtype=bool)
    finals[1] = True
    return ByteDFA.of_classes(out, byte_class, finals)


_Builder = Callable[[CharDFA], ByteDFA]


@lru_cache(maxsize=512)
def spec_dfa(spec: str) -> ByteDFA:
    """The byte DFA of a terminal's ``automaton`` spec (see the module docstring); cached,
    since schemas repeat their keys and string constraints, and shipped prebuilt for the
    formats (:mod:`gramask.frontends.json_prebuilt`)."""
    from .json_prebuilt import prebuilt

    got = prebuilt("spec:" + spec)
    return got if got is not None else build_spec_dfa(spec)


def build_source(source: str) -> ByteDFA:
    """A prebuilt automaton's source (``json_prebuilt.sources``), built."""
    kind, _, text = source.partition(":")
    if kind == "spec":
        return build_spec_dfa(text)
    from ..compiler.regex_bytes import regex_to_byte_dfa

    return regex_to_byte_dfa("prebuilt", text)


def build_spec_dfa(spec: str) -> ByteDFA:
    """:func:`spec_dfa`, built."""
    obj = json.loads(spec)
    if "multiple_of" in obj:  # not a string: numbers that are multiples (json_numbers)
        from .json_numbers import multiple_dfa

        return multiple_dfa(obj)
    if "match" in obj or "nomatch" in obj:  # a region of keys (patternProperties)
        return json_string_dfa(key_region(obj.get("except", []), obj.get("match", []),
                                          obj.get("nomatch", [])))
    if "words" in obj and plain(obj["words"]):
        return words_dfa(obj["words"], None)
    if "except" in obj and plain(obj["except"]):
        return words_dfa(obj["except"], spec_dfa("{}"))
    if "words" in obj:
        cdfa = CharDFA.words(obj["words"])
    elif "except" in obj:
        cdfa = CharDFA.words(obj["except"], complement=True)
    elif "regex" not in obj:
        return length_string_dfa(obj.get("min", 0), obj.get("max"))
    else:
        cdfa = CharDFA.regex(obj["regex"])
        if "min" in obj or "max" in obj:
            cdfa = cdfa.product(CharDFA.length(obj.get("min", 0), obj.get("max")))
    return json_string_dfa(cdfa)


