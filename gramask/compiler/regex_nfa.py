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
terminal with one is read as ``re`` matches it, leftmost-first (``first_match``).
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
from .regex_features import NOT_REGULAR

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

    __slots__ = ("checks", "enters", "eps", "exits", "final", "limit", "moves", "ordered")
    chars = False  # moves over bytes (CharNFA: over code points)

    def __init__(self, limit: int) -> None:
        self.eps: list[list[int]] = []
        self.moves: list[list[tuple[int, int, int]]] = []  # (lo byte, hi byte, target)
        self.final = -1
        self.limit = limit
        # read leftmost-first, as ``re`` matches (``build_byte_nfa``'s ``first_match``): the
        # repeats whose body may match nothing, by number: the node where an optional copy
        # of repeat r begins (node → r), where r ends, and where r's next copy is decided
        # (node → (r, the end)): ``re`` takes no copy after one that matched nothing
        self.ordered = False
        self.enters: dict[int, int] = {}
        self.exits: dict[int, int] = {}
        self.checks: dict[int, tuple[int, int]] = {}

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

    ``first_match``: read the pattern as Python's ``re`` (and so lark's lexers) matches it,
    leftmost-first: ordered alternatives, lazy repeats preferring fewer copies, and ``re``'s
    zero-width protection of repeats whose body may match nothing. The NFA's epsilon moves
    are then in priority order, no node has both moves and epsilon moves, and a repeat
    whose body may match nothing marks where an optional copy begins, where its repeat
    ends, and where the next copy is decided (``enters``, ``exits``, ``checks``); the
    determinisation keeps threads in that order (:mod:`gramask.compiler.regex_ordered`).
    Without it, the NFA is the language's (lazy repeats as greedy ones).

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
    builder = _OrderedBuilder(nfa, unicode_categories) if first_match else \
        _Builder(nfa, unicode_categories)
    nfa.ordered = first_match
    nfa.final = builder.seq(parsed, start, int(parsed.state.flags))
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


class _OrderedBuilder(_Builder):
    """Thompson construction in ``re``'s order of preference: a node has either moves or
    epsilon moves (a loop's head its copy and its exit, ordered by greed), and the repeats
    whose body may match nothing carry ``re``'s zero-width protection (``ByteNFA.checks``).
    Every node a construction step starts from has nothing leaving it yet."""

    def atom(self, op: Any, av: Any, cur: int, flags: int) -> int:
        if op not in (_c.MAX_REPEAT, _c.MIN_REPEAT) or av[0] == av[1]:
            return super().atom(op, av, cur, flags)
        lo, hi, sub = av
        nfa = self.nfa
        cur = self.copies(sub, cur, flags, lo, None)  # (a chain: no node with both)
        # re counts the copies of a repeat whose body may be empty, and after an optional
        # copy that matched nothing it takes no further one (sre's ``last_ptr``)
        r = len(nfa.exits) if sub.getwidth()[0] == 0 else -1  # (one end each: a number)
        end = nfa.node()
        if r >= 0:
            nfa.exits[end] = r
        copies = 1 if hi is _c.MAXREPEAT else hi - lo
        head = cur
        for _ in range(copies):
            body = nfa.node()
            nfa.eps[cur] = [body, end] if op is _c.MAX_REPEAT else [end, body]
            if r >= 0:
                nfa.enters[body] = r
                nfa.checks[cur] = (r, end)
            cur = self.seq(sub, body, flags)
        nfa.eps[cur].append(head if hi is _c.MAXREPEAT else end)
        return end

