"""The suffix (code after the cursor) as a few parser-terminal sequences, one per *branch*.

Section V-B of "Constrained Decoding for Fill-in-the-Middle Code Language Models via Efficient
Left and Right Quotienting of Context-Sensitive Grammars" (Melcer, Fulton, Gouda, Qian): the
middle's last lexeme may continue into the first ``k`` bytes of the suffix. Under greedy
lexing (docs/semantics.md) such a lexeme ends at ``k`` only if it is accepting there and
``S[k]`` kills it, so the candidate ``k`` are found by walking ``S`` from every lexer state at
once. For each ``k``, ``S[k:]`` is lexed greedily from the lexer's start state.

Python's indentation (section VI) makes the rest depend on the boundary, which is unknown
at setup: the bracket depth ``d0`` (branch on each value the suffix can close), and the
outcome of the suffix's first newline outside brackets (``_INDENT``, or ``c`` ``_DEDENT``s;
the end of input counts as a newline of width 0). Lines after that are resolved against an
assumed stack: the prefix's indentation levels below the first line's width, plus the width
itself, plus any lower level the suffix later returns to (the middle must have opened it);
a second hypothesis also fills the gap between the prefix's top level and the first line's
width on the prefix's indentation step (the middle opened those blocks), or, where the gap is
no multiple of that step, with one or two levels of a step of the middle's own (``if:\n ``
then the suffix ``if:\n   x\n``: the end of input closes the middle's block too). A third
keeps only some of the prefix's lower levels (the middle closed the others), where the first
line opens a block, or where the suffix fixes the middle's last line at the first line's width
(``a():\n -\n`` + ``t():\n`` before ``  -\n  -\n``: the stack is 0, 2 there, not 0, 1, 2).
That assumption can only lose middles that re-indent the levels below (it never adds
programs: the end of a middle is confirmed exactly, see :mod:`gramask.runtime.fim.constraint`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.indentation import TAB_UNIT, advance, text_carry
from ..core.masks import MaskBuilder

__all__ = ["Branch", "SuffixLexing", "lex_suffix"]

MAX_DEPTH = 8  # bracket depths at the boundary tried (a suffix closing more is rarer)
MAX_EXTRA_DEDENTS = 2  # blocks the middle may open beyond the prefix's, per branch
# levels above a line's width a stack may close there when the line before is known (CPython's
# tokenizer refuses a 101st level: "too many levels of indentation")
MAX_LEVELS = 100


# one boundary assumption of a branch (see ``Branch.assumptions``)
Assumption = tuple[int, int, int, tuple[int, ...], bool | None]


@dataclass(frozen=True)
class Branch:
    """One way the suffix can be read: ``terms`` follow the marker terminal of the branch."""

    k: int  # bytes of the suffix that continue the middle's last lexeme
    depths: frozenset[int]  # bracket depths at the boundary it fits ({0} without indentation)
    terms: tuple[int, ...]  # parser terminals of suffix[k:], end of input included
    offsets: tuple[int, ...]  # byte offset in the suffix where each terminal starts
    # what the boundary must look like for ``terms`` to be the suffix's real terminals:
    # (depth, first line's width, -1 = INDENT there or c = DEDENTs, levels below that width,
    # a newline emitted at the end of input (None: the suffix has a newline of its own));
    # empty without indentation
    assumptions: frozenset[Assumption] = frozenset()
    # k > 0: the terminals the lexeme continued into suffix[:k] can end as there (the
    # accepting terminals of the lexer states that suffix[k] kills); empty for k = 0
    ends: frozenset[int] = frozenset()


@dataclass
class SuffixLexing:
    branches: list[Branch]
    error_offset: int  # where lexing failed furthest in (for the error message), -1 if none
    # why the plain reading (the suffix starting at a lexeme boundary, k = 0) gives no branch,
    # for the error a person reads: (offset, reason), or None when it gives one. The furthest
    # failure above is often a reading where the middle's string ends inside the suffix,
    # which fails deep inside a docstring that is fine.
    start_error: tuple[int, str] | None = None


def boundary_candidates(b: MaskBuilder, suffix: bytes) -> dict[int, frozenset[int]]:
    """Every ``k > 0`` at which a lexeme continued from the middle can end inside the suffix
    (walk from every lexer state at once; each state dies at the latest where its lexeme
    would), plus ``len(suffix)`` if a lexeme can run to its end; each with the terminals such
    a lexeme can end as there."""
    rows, accept = b.trans_rows, b.accept
    cur = set(range(1, len(rows)))
    out: dict[int, frozenset[int]] = {}
    n = len(suffix)
    for i in range(n):
        byte = suffix[i]
        nxt = set()
        ends: set[int] = set()
        for q in cur:
            nq = rows[q][byte]
            if nq < 0:
                if i > 0 and accept[q] >= 0:
                    ends.add(accept[q])
            else:
                nxt.add(nq)
        if ends:
            out[i] = frozenset(ends)
        cur = nxt
        if not cur:
            break
    else:
        last = frozenset(accept[q] for q in cur if accept[q] >= 0)
        if n and last:
            out[n] = last
    return out


def _raw_lex(b: MaskBuilder, data: bytes, base: int, tab: int
             ) -> tuple[list[tuple[int, int, int]], int]:
    """Greedy lexemes of ``data``: [(terminal, newline width, offset)], ignored ones dropped
    (newlines kept); or ([], offset of the failure)."""
    rows, accept, ignored, nl_t = b.trans_rows, b.accept, b.ignored, b.nl_t
    out: list[tuple[int, int, int]] = []
    q = 0
    carry = 0
    start = 0
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0:
            a = accept[q]
            if a < 0 or q == 0:
                return [], base + i
            if a == nl_t or not ignored[a]:
                out.append((a, carry, base + start))
            carry = 0
            start = i
            nq = rows[0][byte]
            if nq < 0:
                return [], base + i
        q = nq
        if byte <= 32:
            carry = advance(carry, byte)
    if q != 0:
        a = accept[q]
        if a < 0:
            return [], base + start
        if a == nl_t or not ignored[a]:
            out.append((a, 0 if a == nl_t else carry, base + start))
    return out, -1


def lex_suffix(
    b: MaskBuilder,
    suffix: bytes,
    *,
    tab: int,
    prefix_indent: tuple[int, ...] = (0,),
    open_brackets: frozenset[int] = frozenset(),
    close_brackets: frozenset[int] = frozenset(),
    indent_t: int = -1,
    dedent_t: int = -1,
) -> SuffixLexing:
    """All branches of ``suffix`` (see the module docstring)."""
    cands = boundary_candidates(b, suffix)
    ks = [0, *cands]
    branches: list[Branch] = []
    err = -1
    nl_t = b.nl_t
    start_error: tuple[int, str] | None = None
    for k in ks:
        raw, bad = _raw_lex(b, suffix[k:], k, tab)
        if bad >= 0:
            err = max(err, bad)
            if k == 0:
                start_error = (bad, _lex_failure(b, suffix, bad))
            continue
        end = len(suffix)
        if nl_t < 0:
            branches.append(Branch(k, frozenset((0,)), tuple(t for t, _, _ in raw),
                                   tuple(o for _, _, o in raw), ends=cands.get(k, frozenset())))
            continue
        # bracket depths the suffix can close
        depth, lowest = 0, 0
        for t, _, _ in raw:
            if t in open_brackets:
                depth += 1
            elif t in close_brackets:
                depth -= 1
                lowest = min(lowest, depth)
        any_seen = False
        for ends, top in line_readings(suffix[:k], cands.get(k, frozenset()), nl_t, prefix_indent):
            seen: dict[tuple[int, ...], tuple[tuple[int, ...], set[int], set[Assumption]]] = {}
            for d0 in range(min(-lowest, MAX_DEPTH) + 1):
                for terms, offs, assumption in _expand(
                        raw, d0, end, prefix_indent, nl_t, indent_t, dedent_t, open_brackets,
                        close_brackets, top if d0 == 0 else None,
                        least_width(suffix[:k], ends, nl_t, prefix_indent) if d0 == 0 else 0):
                    e = seen.setdefault(terms, (offs, set(), set()))
                    e[1].add(d0)
                    e[2].add(assumption)
            for terms, (offs, ds, ass) in seen.items():
                branches.append(Branch(k, frozenset(ds), terms, offs, frozenset(ass), ends))
            any_seen = any_seen or bool(seen)
        if k == 0 and not any_seen:
            start_error = _unclosed_bracket(raw, open_brackets, close_brackets)
    return SuffixLexing(branches, err, start_error)


def _lex_failure(b: MaskBuilder, suffix: bytes, at: int) -> str:
    """Why greedy lexing stops at ``at``: a lexeme that runs to the end of the suffix
    without ending as a terminal (a string or comment cut short), or a byte no lexeme takes."""
    rows, q = b.trans_rows, 0
    for byte in suffix[at:]:
        q = rows[q][byte]
        if q < 0:
            return f"no terminal takes the byte {suffix[at:at + 1]!r} there"
    return ("the lexeme that starts there is still open where the suffix ends (a string or "
            "comment cut short?)")


def _unclosed_bracket(raw: list[tuple[int, int, int]], opens: frozenset[int],
                      closes: frozenset[int]) -> tuple[int, str] | None:
    """The last bracket the suffix opens and never closes (Python: a program cannot end
    inside brackets), if any."""
    stack: list[int] = []
    for t, _, o in raw:
        if t in opens:
            stack.append(o)
        elif t in closes and stack:
            stack.pop()
    if not stack:
        return None
    return stack[-1], "a bracket opened there is still open where the suffix ends (is it cut short?)"


def line_readings(head: bytes, ends: frozenset[int], nl_t: int,
                  prefix_indent: tuple[int, ...]) -> list[tuple[frozenset[int], int | None]]:
    """How the middle's last lexeme, continued by ``head`` (``suffix[:k]``), can end: as
    ``ends``, each with the indentation level the stack is known to stand at after it.
    A newline lexeme whose line begins inside ``head`` ends at a width the suffix fixes,
    and the indentation stack then tops out at that width (at bracket depth 0): a reading
    of its own, so that a suffix whose later lines cannot follow that width has no branch
    (unless tabs indent: their widths do not compare as numbers, see .indentation)."""
    if not head or nl_t not in ends or (b"\n" not in head and b"\f" not in head):
        return [(ends, None)]
    top = text_carry(head)
    if top >= TAB_UNIT or any(e >= TAB_UNIT for e in prefix_indent):
        return [(ends, None)]
    rest = ends - {nl_t}
    return [(frozenset((nl_t,)), top), *([(rest, None)] if rest else [])]


def least_width(head: bytes, ends: Iterable[int], nl_t: int, prefix_indent: tuple[int, ...]
                ) -> int:
    """Where ``head`` (``suffix[:k]``) is blanks that continue the middle's last lexeme, and
    that lexeme may be a newline: the width its line stands at or above (its blanks'); else
    0. (Tabs: 0, their widths do not compare as numbers, see .indentation.)"""
    if not head or nl_t not in ends or head.strip(b" \t"):
        return 0
    least = text_carry(head)
    return 0 if least >= TAB_UNIT or any(e >= TAB_UNIT for e in prefix_indent) else least


DEFAULT_UNIT = 4  # the indentation step assumed where the prefix shows none


def indent_unit(prefix_indent: tuple[int, ...]) -> int | None:
    """The prefix's indentation step (its smallest increase); None where it has none (one
    open level: the middle's step is unknown)."""
    steps = [b - a for a, b in itertools.pairwise(prefix_indent) if b > a]
    return min(steps) if steps else None


def assumed_bases(prefix_indent: tuple[int, ...], w: int, unit: int | None) -> list[list[int]]:
    """The stacks (below ``w``) assumed under a first line of width ``w``: the prefix's
    levels below it, and, under :data:`TAB_UNIT`, the levels the middle may have opened
    between, on the prefix's step ``unit`` ([0, 4] + first line
    12 → 8 is assumed; :data:`DEFAULT_UNIT` where the prefix shows no step), and one or two
    levels of the middle's own (the filled stack first; the middle need not keep the
    prefix's step: after ``if:\n /**/`` it may open one level at 2 before a first line at
    4, where the step of 1 fills two): after ``class A:\n`` the middle ``  def f():`` and the suffix
    ``\n    return 1\n`` (two-space steps) end by closing both blocks. Where the prefix
    shows no step, every count of levels up to :data:`MAX_EXTRA_DEDENTS` is assumed (the
    filled stack's count and the middle's own for the others: ``  c():\n         x`` after
    ``b():\n`` has one level between, where a step of 4 fills two), as what the quotient
    needs is how many blocks the suffix closes; their widths are checked at the end."""
    base = [e for e in prefix_indent if e < w]
    bases = [base]
    if base and w < TAB_UNIT:
        step = unit or DEFAULT_UNIT
        filled = [*base, *range(base[-1] + step, w, step)]
        if filled != base:
            bases.insert(0, filled)
        # beside the filled stack too: the middle need not follow the prefix's step. Not
        # only counts the filled stack lacks: a suffix that returns to a width below ``w``
        # keeps the levels below that width, so [0, 4] and [0, 1] differ under a suffix
        # line back at 4 (two levels there against three)
        bases += [[*base, *range(base[-1] + 1, base[-1] + j + 1)]
                  for j in range(1, MAX_EXTRA_DEDENTS + 1)
                  if base[-1] + j < w and [*base, *range(base[-1] + 1, base[-1] + j + 1)]
                  not in bases]
    return bases


def dedent_counts(n_gt: int, w: int, top: int | None, least: int = 0) -> range:
    """How many levels above ``w`` the stack may stand at before a line of width ``w`` (the
    ``_DEDENT`` s there), ``n_gt`` of the prefix's levels being above ``w``. Where the line
    before is known to stand at ``top`` (the middle's last newline lexeme ends inside the
    suffix), a stack of rising widths from ``w`` up to ``top`` holds at most ``top - w``
    levels above ``w`` and at least one where ``top > w``: exactly those counts (up to
    :data:`MAX_LEVELS`), however many blocks the middle opened (``if:\n`` then `` if:\n
    if:\n`` before the suffix ``"   b\n"``: the end of input closes three). Else the
    middle's last line's width is open: up to :data:`MAX_EXTRA_DEDENTS` beyond the
    prefix's levels, or, where that line is known to stand at ``least`` or more (the
    suffix's blanks continue the middle's last newline lexeme: ``   int\n`` after a middle
    ending ``\n``), up to ``least - w`` levels (the middle ended its line with no blanks
    of its own: ``n():\n`` + `` q():\n  v():\n`` before ``   int\n``, three)."""
    if top is None or top < 0:
        return range(max(n_gt + MAX_EXTRA_DEDENTS, min(least - w, MAX_LEVELS)) + 1)
    if top <= w:
        return range(1 if top == w else 0)
    return range(1, min(top - w, MAX_LEVELS) + 1)


def closed_bases(prefix_indent: tuple[int, ...], w: int,
                 bases: list[list[int]]) -> list[list[int]]:
    """More stacks under a first line of width ``w`` that opens a block: the middle may have
    closed some of the prefix's blocks below ``w`` first (levels 0, 1, 2, the middle's last
    line at 1, a first line at 3): the prefix's levels below ``w`` cut short, those not in
    ``bases`` (:func:`assumed_bases`)."""
    base = [e for e in prefix_indent if e < w]
    known = {tuple(b) for b in bases}
    return [base[:i] for i in range(len(base) - 1, 0, -1) if tuple(base[:i]) not in known]


def _expand(raw: list[tuple[int, int, int]], d0: int, end: int, prefix_indent: tuple[int, ...],
            nl_t: int, indent_t: int, dedent_t: int, opens: frozenset[int],
            closes: frozenset[int], top: int | None = None, least: int = 0,
            ) -> list[tuple[tuple[int, ...], tuple[int, ...], Assumption]]:
    """The terminal sequences of one raw lexing under bracket depth ``d0``, one per outcome
    of the first significant newline (``top``: the level the stack is known to top out at
    before it, see :func:`line_readings`; else ``least``, a width it stands at or above, see
    :func:`least_width`)."""
    # find the first significant newline (or the end of input)
    depth = d0
    first = len(raw)
    for i, (t, _, _) in enumerate(raw):
        if t == nl_t and depth == 0:
            first = i
            break
        if t in opens:
            depth += 1
        elif t in closes:
            depth = max(0, depth - 1)
    head_t = [t for t, _, _ in raw[:first] if t != nl_t]
    head_o = [o for t, _, o in raw[:first] if t != nl_t]
    if first == len(raw):  # the end of input is the first newline: width 0
        if depth > 0:
            return []
        w = 0
        at = end
    else:
        w = raw[first][1]
        at = raw[first][2]
    n_gt = sum(1 for e in prefix_indent if e > w)
    unit = indent_unit(prefix_indent)
    outcomes: list[tuple[list[int], list[int]]] = []  # (terminals after NL, stack)
    # the last outcomes: the middle closed blocks, opened none below ``w`` (or ``top``)
    extra: list[tuple[list[int], list[int]]] = []
    if top is not None and first < len(raw) and top < w:
        # the stack tops out at ``top``, below the first line: that line opens a block
        # (the levels below ``top`` assumed as below ``w``: the middle may have opened some,
        # or closed some of the prefix's first)
        tb = assumed_bases(prefix_indent, top, unit)
        outcomes += [([indent_t], [*bb, top, w]) for bb in tb]
        extra = [([indent_t], [*bb, top, w]) for bb in closed_bases(prefix_indent, top, tb)]
        bases = []
    else:
        bases = assumed_bases(prefix_indent, w, unit)
    for bb in bases:
        if bb and (top is None or first == len(raw)):
            outcomes.append(([indent_t], [*bb, w]))
        # c dedents: the stack stood at w (c = 0) or above it
        outcomes += [([dedent_t] * c, [*bb, w]) for c in dedent_counts(n_gt, w, top, least)]
    if bases and first < len(raw):
        cb = closed_bases(prefix_indent, w, bases)
        extra = [([indent_t], [*bb, w]) for bb in cb] if top is None else []
        # or the middle opened the first line's block itself, where the suffix fixes its
        # last line at ``w`` (``a():\n -\n`` + ``t():\n`` before ``  -\n  -\n``: the stack
        # is 0, 2 there; not more levels above ``w`` as well: few middles do that, and each
        # branch is one more the budget's planner may chase)
        if (least if top is None else top) == w:
            extra += [([], [*bb, w]) for bb in cb]
    outcomes += extra
    closed = len(extra)
    out: list[tuple[tuple[int, ...], tuple[int, ...], Assumption]] = []
    for n_out, (after, stack0) in enumerate(outcomes):
        if first == len(raw):
            seqs = [([nl_t, *after], [at] * (1 + len(after)))]
            if not head_t:  # nothing significant in the suffix: the middle may end a line
                seqs.append((after, [at] * len(after)))
            for n, (s, o) in enumerate(seqs):
                out.append((tuple(head_t + s), tuple(head_o + o),
                            (d0, 0, len(after), (), n == 0)))
            continue
        terms = [*head_t, nl_t, *after]
        offs = [*head_o, at] + [at] * len(after)
        assumed: list[int] = []
        r = _rest(raw[first + 1:], list(stack0), nl_t, indent_t, dedent_t, opens, closes, end,
                  assumed)
        if r is None or (assumed and n_out >= len(outcomes) - closed):
            continue  # (a closed-blocks stack takes no level of the middle's own as well)
        below = tuple(sorted({*stack0[:-1], *assumed}))
        out.append((tuple(terms + r[0]), tuple(offs + r[1]),
                    (d0, w, -1 if after == [indent_t] else len(after), below, None)))
    return out


def _rest(raw: list[tuple[int, int, int]], stack: list[int], nl_t: int, indent_t: int,
          dedent_t: int, opens: frozenset[int], closes: frozenset[int], end: int,
          assumed: list[int]) -> tuple[list[int], list[int]] | None:
    """Terminals after the first newline: the indentation stack is known from here on."""
    terms: list[int] = []
    offs: list[int] = []
    depth = 0
    bol = True
    floor = stack[-1]  # levels below the first line's width are assumed, not known
    for t, w, o in raw:
        if t == nl_t:
            if depth > 0:
                continue
            terms.append(nl_t)
            offs.append(o)
            if w > stack[-1]:
                stack.append(w)
                terms.append(indent_t)
                offs.append(o)
            else:
                while w < stack[-1]:
                    stack.pop()
                    terms.append(dedent_t)
                    offs.append(o)
                if w != stack[-1]:
                    if w > floor:
                        return None  # a level the suffix itself never opened
                    # a level below the suffix's first line that the prefix did not show:
                    # assume the middle opened it
                    stack.append(w)
                    assumed.append(w)
            bol = True
            continue
        if t in opens:
            depth += 1
        elif t in closes:
            depth -= 1
            if depth < 0:
                return None
        terms.append(t)
        offs.append(o)
        bol = False
    if depth > 0:
        return None
    if not bol:
        terms.append(nl_t)
        offs.append(end)
    for _ in stack[1:]:
        terms.append(dedent_t)
        offs.append(end)
    return terms, offs
