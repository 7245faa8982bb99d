"""A Python regex → a byte-level NFA, with character classes kept as code-point ranges.

Why not interegular: it builds its alphabet from single characters, so a class such as
``[\\U00010000-\\U0010ffff]`` (a million code points) took about a minute, and case folding
that changes length (``/ß/i``: ``"ß".upper() == "SS"``) crashed it. Here ``re``'s own parser
reads the pattern, each class becomes a :data:`~.charclass.CharSet`, and each set becomes its
UTF-8 byte-range sequences (a few dozen per range) sharing one small trie per NFA edge.

Semantics, kept from gramask's earlier interegular-based compiler so that existing grammars
keep their languages: ``\\d``, ``\\w``, ``\\s`` are ASCII classes where they add characters,
and a class matches what it matches read both with them and with Python's Unicode classes:
``\\S``, ``\\W``, ``\\D``, ``[^\\s]`` take away all of ``re``'s characters (``\\S`` excludes
``\\x1c`` and ``\\xa0`` as ``re`` does), ``[\\s\\S]`` is any character, and the language is
always within ``re``'s (a subset where ``re`` matches more, never a superset). With
``unicode_categories`` (``Grammar.from_regex``; ``from_lark`` on request) they are read as
``re`` reads them instead: its Unicode sets, ASCII ones under the ``a`` flag (Unicode ``\\w``
is ~300 byte-automaton states, ASCII ``\\w`` one). ``.`` is any character
but ``\\n`` (any character with ``s``); case-insensitive characters match their lower and upper
case as ``re`` folds them (the same simple lower case, ``re._casefix``'s extra cases: ``/k/i``
matches the Kelvin sign; ASCII letters only under the ``a`` flag; see
:func:`~.charclass.case_variants`). Lazy repeats are the same language as greedy ones; a Lark
terminal's lexemes end at their first match where its lazy repeats say so (``first_match``).
"""

from __future__ import annotations

import functools
import json
import re
import sys
import unicodedata
from pathlib import Path
from re import _constants as _c  # re's own parser: terminals are Python regexes (3.11+)
from re import _parser as _sre_parse
from typing import Any

import numpy as np

from .charclass import CharSet, case_variants, complement, fold_class, normalize, utf8_sequences
from .regex_features import NOT_REGULAR, regex_ops

__all__ = ["ByteNFA", "CharNFA", "NFATooLarge", "RegexNotRegular", "build_byte_nfa", "char_set",
           "scan_unicode_category", "unicode_category", "word_chars",
           "write_unicode_categories"]

_DIGIT = normalize([(0x30, 0x39)])
_WORD = normalize([(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)])
_SPACE = normalize([(0x09, 0x0D), (0x20, 0x20)])
_ASCII = {"CATEGORY_DIGIT": _DIGIT, "CATEGORY_WORD": _WORD, "CATEGORY_SPACE": _SPACE}


def _ascii_category(name: str) -> CharSet:
    return _ASCII[name]
_NEWLINE: CharSet = ((0x0A, 0x0A),)


@functools.cache
def unicode_category(name: str) -> CharSet:
    """The characters Python's ``re`` matches with the (positive) category ``name`` in a str
    pattern: Unicode digits, word characters or whitespace. Shipped for this interpreter's
    Unicode database (``unicode_categories.json``: read in a millisecond); else found by
    :func:`scan_unicode_category` (~0.1 s each, up to ~1 s on a loaded machine)."""
    kind = name.rsplit("_", 1)[-1]
    shipped = _shipped_categories()
    return shipped[kind] if kind in shipped else scan_unicode_category(kind)


_CATEGORY_PATTERNS = {"DIGIT": r"\d+", "WORD": r"\w+", "SPACE": r"\s+"}
_CATEGORIES_FILE = Path(__file__).with_name("unicode_categories.json")


def scan_unicode_category(kind: str) -> CharSet:
    """``DIGIT``, ``WORD`` or ``SPACE`` as the runs ``re`` itself finds in a string of every
    code point (surrogates left out)."""
    every = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    runs = [(m.start(), m.end() - 1) for m in re.finditer(_CATEGORY_PATTERNS[kind], every)]
    return normalize([r for a, b in runs
                      for r in ((a, min(b, 0xD7FF)), (max(a, 0xE000), b)) if r[0] <= r[1]])


def _database() -> str:
    """What ``re``'s categories depend on: the Unicode database and the interpreter."""
    return f"unicode {unicodedata.unidata_version}, python {sys.version_info[0]}." \
           f"{sys.version_info[1]}"


@functools.cache
def _shipped_categories() -> dict[str, CharSet]:
    """The shipped categories where they were scanned with this interpreter's database."""
    try:
        data = json.loads(_CATEGORIES_FILE.read_text())
    except (OSError, ValueError):
        return {}
    if data.get("database") != _database():
        return {}
    return {k: normalize(tuple(r) for r in data[k]) for k in _CATEGORY_PATTERNS if k in data}


def write_unicode_categories(path: Path = _CATEGORIES_FILE) -> None:
    """Scan and save the categories for this interpreter (``python
    tools/build_unicode_categories.py``, after a Python upgrade)."""
    data: dict[str, Any] = {"database": _database()}
    data.update({k: [list(r) for r in scan_unicode_category(k)] for k in _CATEGORY_PATTERNS})
    path.write_text(json.dumps(data, separators=(",", ":")) + "\n")


class RegexNotRegular(Exception):
    """The pattern uses a construct with no finite automaton; ``args[0]`` names it."""


class NFATooLarge(Exception):
    """The NFA would exceed its node limit (a huge counted repeat)."""


class ByteNFA:
    """Nodes with epsilon moves and byte-range moves; node 0 is the start."""

    __slots__ = ("eps", "final", "first_ends", "limit", "moves")
    chars = False  # moves over bytes (CharNFA: over code points)

    def __init__(self, limit: int) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[int, int, int]]] = []  # (lo byte, hi byte, target)
        self.final = -1
        # (first node, node after the last, end node) of each alternative that ends at its
        # first match (see ``build_byte_nfa``'s ``first_match``)
        self.first_ends: list[tuple[int, int, int]] = []
        self.limit = limit

    def node(self) -> int:
        if len(self.eps) >= self.limit:
            raise NFATooLarge
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def add_class(self, src: int, dst: int, chars: CharSet) -> None:
        """Moves from ``src`` to ``dst`` on the UTF-8 encoding of every character in ``chars``."""
        seqs = _class_sequences(chars)
        if len(seqs) == 1 and len(seqs[0]) == 1:  # one byte range (``x`` in ``x{1000}``)
            self.moves[src].append((*seqs[0][0], dst))
            return
        trie: dict[tuple[tuple[int, int], ...], int] = {}
        for seq in seqs:
            cur = src
            for j in range(len(seq) - 1):
                key = tuple(seq[: j + 1])
                nxt = trie.get(key)
                if nxt is None:
                    nxt = trie[key] = self.node()
                    self.moves[cur].append((*seq[j], nxt))
                cur = nxt
            self.moves[cur].append((*seq[-1], dst))


class CharNFA(ByteNFA):
    """The same automaton with moves over code points, not their UTF-8 bytes: a class is
    one move per range. Its determinisation is character-level (a counted repeat of a
    Unicode class is a chain of a few states, not of ~300 byte states per copy), then
    expanded to bytes once (:func:`gramask.compiler.regex_utf8.utf8_expand`). An ASCII-only
    pattern gives the same moves as :class:`ByteNFA`."""

    __slots__ = ()
    chars = True

    def add_class(self, src: int, dst: int, chars: CharSet) -> None:
        self.moves[src].extend((lo, hi, dst) for lo, hi in chars)


@functools.lru_cache(maxsize=4096)
def _class_sequences(chars: CharSet) -> tuple[list[tuple[int, int]], ...]:
    """The UTF-8 byte-range sequences of a class (memoised: a counted repeat wires the same
    class once per copy)."""
    return tuple(seq for lo, hi in chars for seq in utf8_sequences(lo, hi))


def build_byte_nfa(pattern: str, max_nodes: int, first_match: bool = False,
                   unicode_categories: bool = False, *, chars: bool = False) -> ByteNFA:
    """Thompson construction over bytes for ``pattern`` (a Python regex).

    ``first_match``: read lazy repeats as Python's ``re`` (and so lark's lexers) do: a
    top-level alternative whose variable repeats are all lazy (``/\\/\\*(.|\\n)*?\\*\\//``)
    ends at its first match, not at the last ``*/`` of the text. Such an alternative gets
    an end of its own (``first_ends``); the determinisation drops the alternative's other
    threads where a subset reaches it; a tail after such a head that may match nothing and
    holds no lazy repeat (``".*?"i?``) follows the head's first match greedily, as in ``re``.
    Other alternatives that mix lazy and greedy repeats are read as the language they match
    (as without ``first_match``).

    ``unicode_categories``: read ``\\d``, ``\\w``, ``\\s`` and their negations exactly as
    ``re`` does (Unicode sets; ASCII ones under the ``a`` flag) instead of as both readings.

    ``chars``: a :class:`CharNFA` (moves over code points) instead.

    Raises :class:`RegexNotRegular` for lookarounds, backreferences, anchors, atomic groups and
    possessive repeats, :class:`NFATooLarge` past ``max_nodes`` nodes, and ``re.error`` for
    a pattern ``re`` cannot parse.
    """
    parsed = _sre_parse.parse(pattern)
    nfa = CharNFA(max_nodes) if chars else ByteNFA(max_nodes)
    start = nfa.node()
    builder = _Builder(nfa, unicode_categories)
    flags = int(parsed.state.flags)
    if not first_match:
        nfa.final = builder.seq(parsed, start, flags)
        return nfa
    ends = []
    for items, fl in _top_alternatives(parsed, flags):
        first = nfa.node()
        nfa.eps[start].append(first)
        k = _greedy_tail(parsed, items)
        if not _lazy_only(items[:k]):
            ends.append(builder.seq(items, first, fl))
            continue
        end = builder.seq(items[:k], first, fl)  # its nodes: the ones made since ``first``
        stop = nfa.node()  # without moves (``end`` may be a loop's)
        nfa.eps[end].append(stop)
        nfa.first_ends.append((first, len(nfa.eps), stop))
        if k < len(items):  # the tail, greedy, after the head's first match
            tail = nfa.node()
            nfa.eps[stop].append(tail)
            ends.append(builder.seq(items[k:], tail, fl))
    nfa.final = nfa.node()
    for end in ends:
        nfa.eps[end].append(nfa.final)
    return nfa


def char_set(op: Any, av: Any, flags: int, unicode_categories: bool = True) -> CharSet:
    """The characters one parse-tree character item (``re``'s LITERAL, NOT_LITERAL, ANY or
    IN) matches under ``flags``, as ``re`` reads it (Unicode categories, case folding), or,
    not ``unicode_categories``, as :func:`build_byte_nfa` reads it then."""
    return _Builder(ByteNFA(0), unicode_categories).charset(op, av, flags)


def word_chars(ascii_only: bool) -> CharSet:
    """What ``\\w`` (and so ``\\b``) counts as a word character: ``re``'s Unicode set, or
    ASCII under the ``a`` flag."""
    return _WORD if ascii_only else unicode_category("CATEGORY_WORD")


def _top_alternatives(parsed: Any, flags: int) -> list[tuple[Any, int]]:
    """The pattern's top-level alternatives (inside the groups that wrap it: lark joins a
    terminal's alternatives as ``(?:a|b)``, flags as ``(?s:...)``), with their flags."""
    items = list(parsed)
    while len(items) == 1 and items[0][0] is _c.SUBPATTERN:
        _group, add, remove, sub = items[0][1]
        flags = (flags | add) & ~remove
        items = list(sub)
    # re's parser moves a prefix that every alternative starts with out of the branch
    # (``--\[\[.*?\]\]|--[^\n]*`` is parsed as ``--(?:\[\[.*?\]\]|[^\n]*)``); where the
    # prefix matches one way only, ``re`` tries it followed by each alternative in turn, so
    # those are the alternatives (else a lazy block comment beside a greedy line comment
    # was one mixed alternative, read greedily: the block comment could never end)
    *prefix, (op, av) = items or [(None, None)]
    if op is _c.SUBPATTERN and len(av[3]) == 1 and av[3][0][0] is _c.BRANCH \
            and _one_way(prefix):
        group, add, remove, sub = av
        return [([*prefix, (op, (group, add, remove,
                                 _sre_parse.SubPattern(sub.state, list(alt))))], flags)
                for alt in sub[0][1][1]]
    if op is _c.BRANCH and _one_way(prefix):
        return [([*prefix, *alt], flags) for alt in av[1]]
    return [(items, flags)]


def _one_way(items: Any) -> bool:
    """``items`` match at most one way where they match (no alternatives, no repeat of a
    variable count): ``re`` never backtracks into them."""
    return not any(op is _c.BRANCH or (op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] != av[1])
                   for op, av in regex_ops(items))


def _greedy_tail(parsed: Any, items: list[Any]) -> int:
    """Where the alternative ``items`` splits into a head and its longest tail that may
    match nothing and holds no lazy repeat (``[imslux]*`` after lark.lark's lazy
    ``/\\/(...)+?\\//``, ``i?`` after ``".*?"``): ``re`` ends the head at its first match
    and the tail, which cannot fail, greedily after it (no backtracking into the head).
    Grown one item at a time, testing only the new item: the tail so far has neither, and
    a sequence's least width is the sum of its items'."""
    k = len(items)
    while k and not any(op is _c.MIN_REPEAT for op, _ in regex_ops(items[k - 1:k])):
        if _sre_parse.SubPattern(parsed.state, items[k - 1:k]).getwidth()[0] != 0:
            break
        k -= 1
    return k


def _lazy_only(items: Any) -> bool:
    """Every repeat of a variable count in ``items`` is lazy, and there is one: then
    Python's ``re`` ends a match of it at the first point it can (the shortest match)."""
    kinds = {op for op, av in regex_ops(items)
             if op in (_c.MAX_REPEAT, _c.MIN_REPEAT) and av[0] != av[1]}
    return kinds == {_c.MIN_REPEAT}


class _Builder:
    def __init__(self, nfa: ByteNFA, unicode_categories: bool = False) -> None:
        self.nfa = nfa
        self.exact = unicode_categories
        # classes by parse node: a counted repeat wires the same atom once per copy
        self.classes: dict[tuple[int, int, int], CharSet] = {}

    def seq(self, items: Any, cur: int, flags: int) -> int:
        for op, av in items:
            cur = self.atom(op, av, cur, flags)
        return cur

    def class_of(self, op: Any, av: Any, flags: int) -> CharSet:
        key = (id(op), av if isinstance(av, int) else id(av), flags)
        chars = self.classes.get(key)
        if chars is None:
            chars = self.classes[key] = self.charset(op, av, flags)
        return chars

    def copies(self, sub: Any, cur: int, flags: int, times: int, skip_to: int | None) -> int:
        """``times`` copies of ``sub`` in a row from ``cur``, each copy's start with an
        epsilon move to ``skip_to`` first if given. A class of single bytes (``x{1000}``,
        ``[0-9]{4}``; any class in a :class:`CharNFA`) is wired in one go: the same nodes
        and moves as copy by copy."""
        nfa = self.nfa
        single = len(sub) == 1 and sub[0][0] in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN)
        chars = self.class_of(sub[0][0], sub[0][1], flags) if single and times > 1 else ()
        seqs = [[r] for r in chars] if nfa.chars else _class_sequences(chars)  # (moves)
        if not seqs or any(len(q) != 1 for q in seqs):
            for _ in range(times):
                if skip_to is not None:
                    nfa.eps[cur].append(skip_to)
                cur = self.seq(sub, cur, flags)
            return cur
        ranges = [q[0] for q in seqs]
        first = len(nfa.eps)
        if first + times > nfa.limit:
            raise NFATooLarge
        if skip_to is not None:
            nfa.eps[cur].append(skip_to)
        nfa.moves[cur].extend((a, b, first) for a, b in ranges)
        nfa.eps.extend([] if skip_to is None else [skip_to] for _ in range(times - 1))
        nfa.eps.append([])
        nfa.moves.extend([(a, b, first + j + 1) for a, b in ranges] for j in range(times - 1))
        nfa.moves.append([])
        return first + times - 1

    def charset(self, op: Any, av: Any, flags: int) -> CharSet:
        icase = bool(flags & _c.SRE_FLAG_IGNORECASE)
        a_flag = bool(flags & _c.SRE_FLAG_ASCII)
        if op is _c.ANY:
            return complement(()) if flags & _c.SRE_FLAG_DOTALL else complement(_NEWLINE)
        if op is _c.LITERAL or op is _c.NOT_LITERAL:
            chars = [chr(av)]
            negate = op is _c.NOT_LITERAL
            ranges: list[tuple[int, int]] = [(av, av)]
            if icase:
                ranges = [(ord(v), ord(v)) for ch in chars for v in case_variants(ch, a_flag)]
            s = normalize(ranges)
            return complement(s) if negate else s
        # IN: read once with the ASCII categories and once with re's Unicode ones; the class
        # is what both readings match (all of it where the class has no category)
        negate = False
        parts: list[tuple[int, int]] = []
        cats: list[str] = []
        for iop, iav in av:
            if iop is _c.NEGATE:
                negate = True
            elif iop is _c.LITERAL:
                parts.append((iav, iav))
            elif iop is _c.RANGE:
                parts.append((iav[0], iav[1]))
            elif iop is _c.CATEGORY:
                cats.append(str(iav))
            else:  # pragma: no cover - re's parser produces nothing else inside []
                raise RegexNotRegular(f"the class item {iop}")
        if self.exact:  # re's reading: its Unicode sets, ASCII ones under the a flag
            return self._class_set(parts, cats, negate, icase,
                                   _ascii_category if a_flag or not cats else unicode_category,
                                   a_flag)
        s = self._class_set(parts, cats, negate, icase, _ascii_category, a_flag)
        if negate or any("_NOT_" in name for name in cats):  # else the ASCII reading is less
            s = complement(normalize([*complement(s), *complement(self._class_set(
                parts, cats, negate, icase, unicode_category, a_flag))]))
        return s

    @staticmethod
    def _class_set(parts: list[tuple[int, int]], cats: list[str], negate: bool, icase: bool,
                   category: Any, ascii_case: bool) -> CharSet:
        ranges: list[tuple[int, int]] = []
        for name in cats:
            cat = category(name.replace("_NOT", ""))
            ranges.extend(complement(cat) if "_NOT_" in name else cat)
        if icase:  # the categories are not folded (re folds the text's character instead)
            s = fold_class(normalize(parts), normalize(ranges), ascii_case)
        else:
            s = normalize([*parts, *ranges])
        return complement(s) if negate else s

    def atom(self, op: Any, av: Any, cur: int, flags: int) -> int:
        nfa = self.nfa
        if op in (_c.LITERAL, _c.NOT_LITERAL, _c.ANY, _c.IN):
            nxt = nfa.node()
            nfa.add_class(cur, nxt, self.class_of(op, av, flags))
            return nxt
        if op is _c.SUBPATTERN:
            _group, add, remove, sub = av
            return self.seq(sub, cur, (flags | add) & ~remove)
        if op is _c.BRANCH:
            end = nfa.node()
            for alt in av[1]:
                first = nfa.node()
                nfa.eps[cur].append(first)
                nfa.eps[self.seq(alt, first, flags)].append(end)
            return end
        if op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            cur = self.copies(sub, cur, flags, lo, None)
            if hi is _c.MAXREPEAT:
                loop = nfa.node()
                nfa.eps[cur].append(loop)
                nfa.eps[self.seq(sub, loop, flags)].append(loop)
                return loop
            end = nfa.node()
            cur = self.copies(sub, cur, flags, hi - lo, end)
            nfa.eps[cur].append(end)
            return end
        raise RegexNotRegular(NOT_REGULAR.get(str(op), str(op)))
