"""The contextual-mode suffix lattice with Python-style indentation, parsed backwards.

In the contextual mode the suffix ``S`` lexes into a lattice of lexemes
(:mod:`gramask.runtime.fim.suffix_lattice`). With indentation a lexeme does not give the
parser's terminals alone: a newline inside brackets is dropped, and outside it is ``_NEWLINE``
followed by an ``_INDENT`` or some ``_DEDENT`` s, by the indentation stack. Before ``S``'s
first newline outside brackets that stack and the bracket depth are the middle's, unknown at
setup: the same assumptions as the basic mode's branches
(:mod:`gramask.runtime.fim.suffix_lexing`) are made, here as the states of a small automaton
run along the lattice:

* **before the first newline** (``(0, depth, seen, top)``): the depth starts at every ``d0`` up to
  ``MAX_DEPTH`` (brackets the middle left open), a closing bracket at depth 0 ends the path
  (a larger ``d0`` covers it), a newline inside brackets is dropped. At the first newline
  outside brackets, of width ``w``, each outcome is a path: ``_INDENT``, or ``c`` ``_DEDENT`` s
  for ``c`` up to the prefix's levels above ``w`` plus ``MAX_EXTRA_DEDENTS`` (exactly the
  counts a stack up to the line before allows, where the suffix fixes that line's width:
  ``dedent_counts``), the stack then being the prefix's levels below ``w`` (and, as a second hypothesis, the gap up to
  ``w`` filled on the prefix's indentation step), topped by ``w``. The end of input counts as
  a newline of width 0 (with no ``_NEWLINE`` of its own when nothing significant came before
  it: the middle may have ended the line);
* **after it** (``(1, depth, stack, bol, floor)``): the stack is known and each newline
  resolved as the lexer does; a line that returns to a level below the first line's width
  that the stack lacks is assumed opened by the middle (as in the basic mode); the end of
  input closes the line and every block.

The product of lattice nodes and these states (few per offset: the stack only depends on the
hypothesis at the first newline) is parsed backwards with the reversed grammar's Earley
recogniser, each node's set the join of what its edges lead to; the sets of one boundary
(every ``d0``) are joined into its branch. Ends are checked exactly on the real lexer
elsewhere (:mod:`gramask.runtime.fim.contextual`), so the hypotheses only decide what masks
allow: a middle outside them (one that opens more blocks than the caps, or re-indents the
prefix's levels) may be masked, never wrongly called complete.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..core.contextual_lexer import ContextualLexer
from ..core.earley import Automaton, EarleySet
from ..core.indentation import text_carry
from .suffix_lattice import SuffixLattice, boundary_ends, lattice_edges
from .suffix_lexing import (
    MAX_DEPTH,
    Branch,
    assumed_bases,
    closed_bases,
    dedent_counts,
    indent_unit,
    least_width,
    line_readings,
)

__all__ = ["parse_indented_lattice"]

# (0, depth, seen a significant lexeme, the level the stack tops out at, or -1 - a width it
# stands at or above where that level is unknown, see least_width) before the
# first newline outside brackets; (1, depth, stack, at the beginning of a line, first line's
# width) after it
State = tuple[int, int, bool, int] | tuple[int, int, tuple[int, ...], bool, int]
Emit = tuple[int, ...]


class _Indenter:
    """The automaton of the module docstring, for one suffix and prefix stack."""

    def __init__(self, cx: ContextualLexer, suffix: bytes, prefix_indent: tuple[int, ...]) -> None:
        ctx = cx.ctx
        self.suffix = suffix
        self.nl, self.ind, self.ded = ctx.nl_t, ctx.indent_t, ctx.dedent_t
        self.opens, self.closes = ctx.open_brackets, ctx.close_brackets
        self.ignored = cx.ignored_bits
        self.prefix = prefix_indent
        self.unit = indent_unit(prefix_indent)

    def width(self, i: int, j: int) -> int:
        """The width a newline lexeme ``S[i:j]`` leaves (0 where it runs to the end)."""
        return 0 if j == len(self.suffix) else text_carry(self.suffix[i:j])

    def first_line(self, w: int, top: int) -> list[tuple[Emit, tuple[int, ...], int]]:
        """The outcomes of the first newline outside brackets, of width ``w``: (terminals
        after the ``_NEWLINE``, the stack then, the floor: levels below it the middle may have
        opened, -1 for none). ``top``: the level the stack tops out at before it, known when
        the middle's last newline ends inside the suffix; else ``-1 - least``, ``least`` a
        width it stands at or above (0: none known)."""
        if top >= 0:  # the line before stands at ``top``: the outcome follows
            # (or the middle closed some of the prefix's blocks first: no level of its own)
            ind: Emit = (self.ind,)
            if top < w:  # the levels below ``top`` assumed as below a first line's
                return [(ind, (*stack, w), w) for stack in self._bases(top)] + [
                    (ind, (*b, top, w), -1) for b in self._closed(top)]
            n_gt = sum(1 for e in self.prefix if e > w)
            return [((self.ded,) * c, stack, w) for c in dedent_counts(n_gt, w, top)
                    for stack in self._bases(w)] + [
                ((), (*b, w), -1) for b in (self._closed(w) if top == w else ())]
        out: list[tuple[Emit, tuple[int, ...], int]] = []
        n_gt = sum(1 for e in self.prefix if e > w)
        opened = assumed_bases(self.prefix, w, self.unit)
        for b in opened:
            stack = (*b, w)
            if len(stack) > 1:
                out.append(((self.ind,), stack, w))
            out += [((self.ded,) * c, stack, w)
                    for c in dedent_counts(n_gt, w, None, -1 - top)]
        # the middle closed blocks and opened none below ``w``: no level of its own assumed
        # (the first line opens a block, or the middle's last line is known to stand at
        # ``w``)
        for b in closed_bases(self.prefix, w, opened):
            out.append(((self.ind,), (*b, w), -1))
            if -1 - top == w:  # (the suffix's blanks fix that line at ``w``)
                out.append(((), (*b, w), -1))
        return out

    def _closed(self, w: int) -> list[list[int]]:
        """The prefix's levels below ``w`` cut short (:func:`closed_bases`)."""
        return closed_bases(self.prefix, w, assumed_bases(self.prefix, w, self.unit))

    def _bases(self, w: int) -> list[tuple[int, ...]]:
        """The stacks assumed after a first line of width ``w``: the prefix's levels below
        it (and that gap filled on the prefix's step, or, off that step, with one or two
        levels of the middle's own), topped by ``w``."""
        return [(*b, w) for b in assumed_bases(self.prefix, w, self.unit)]

    def step(self, s: State, t: int, i: int, j: int) -> list[tuple[Emit, State]]:
        """The lexeme ``(t, i, j)`` read in state ``s``: (terminals it gives, next state)."""
        nl = self.nl
        if t != nl and (self.ignored >> t) & 1:
            return [((), s)]
        if s[0] == 0:
            depth = s[1]
            if t == nl:
                if depth:
                    return [((), s)]
                w = self.width(i, j)
                return [((nl, *after), (1, 0, stack, True, floor))
                        for after, stack, floor in self.first_line(w, s[3])]
            if t in self.closes:
                return [((t,), (0, depth - 1, True, s[3]))] if depth else []
            return [((t,), (0, depth + (t in self.opens), True, s[3]))]
        _, depth, stack, _, floor = s  # type: ignore[misc]
        if t == nl:
            if depth:
                return [((), s)]
            return self._newline(stack, floor, self.width(i, j))
        if t in self.closes:
            return [((t,), (1, depth - 1, stack, False, floor))] if depth else []
        return [((t,), (1, depth + (t in self.opens), stack, False, floor))]

    def _newline(self, stack: tuple[int, ...], floor: int, w: int
                 ) -> list[tuple[Emit, State]]:
        """A newline outside brackets once the stack is known (the lexer's rule, plus a level
        below the first line's width assumed opened by the middle)."""
        if w > stack[-1]:
            return [((self.nl, self.ind), (1, 0, (*stack, w), True, floor))]
        st = list(stack)
        out = [self.nl]
        while w < st[-1]:
            st.pop()
            out.append(self.ded)
        if w != st[-1]:
            if w > floor:
                return []  # a level the suffix itself never opened
            st.append(w)
        return [(tuple(out), (1, 0, tuple(st), True, floor))]

    def end(self, s: State) -> list[Emit]:
        """What the end of input gives in state ``s`` (closing the line and every block)."""
        if s[1]:
            return []  # a program cannot end inside brackets
        if s[0] == 0:
            n_gt = sum(1 for e in self.prefix if e > 0)
            out: list[Emit] = []
            for c in dedent_counts(n_gt, 0, s[3], max(0, -1 - s[3])):
                out.append((self.nl, *(self.ded,) * c))
                if not s[2]:  # nothing significant: the middle may have ended the line
                    out.append((self.ded,) * c)
            return out
        _, _, stack, bol, _ = s  # type: ignore[misc]
        return [(*(() if bol else (self.nl,)), *(self.ded,) * (len(stack) - 1))]


def _through(rev: Automaton, es: EarleySet | None, emit: Emit) -> EarleySet | None:
    """``es`` advanced backwards over ``emit`` (last terminal first)."""
    for t in reversed(emit):
        if es is None:
            return None
        es = rev.advance(es, t)
    return es


def _join(rev: Automaton, parts: Iterable[tuple[EarleySet, Emit]]) -> EarleySet | None:
    """One set for a node: each ``(child set, terminals)`` advanced backwards and joined."""
    shifts: list[tuple[EarleySet, int]] = []
    same: dict[int, EarleySet] = {}
    for es, emit in parts:
        if not emit:
            same[id(es)] = es
            continue
        pre = _through(rev, es, emit[1:])
        if pre is not None:
            shifts.append((pre, emit[0]))
    if not shifts and len(same) == 1:
        return next(iter(same.values()))
    if len(shifts) == 1 and not same:
        return rev.advance(*shifts[0])
    return rev.join(shifts, list(same.values()))


def parse_indented_lattice(cx: ContextualLexer, rev: Automaton, suffix: bytes,
                           prefix_indent: tuple[int, ...]) -> SuffixLattice:
    """The boundaries of ``suffix`` (as :func:`~.suffix_lattice.parse_suffix_lattice`), each
    with the lattice from it parsed backwards under the indentation states of the module
    docstring (``prefix_indent``: the prefix's indentation stack)."""
    n = len(suffix)
    ends = boundary_ends(cx, suffix)
    ks = [0, *sorted(ends)]
    edges = lattice_edges(cx, suffix, ks)
    ind = _Indenter(cx, suffix, prefix_indent)
    readings = {k: _readings(cx, suffix, k, ends.get(k, 0), prefix_indent) for k in ks}
    # forward: the states met at each offset, and each node's moves
    at: dict[int, set[State]] = {}
    for k in ks:
        at[k] = {s for _, starts in readings[k] for s in starts}
    moves: dict[tuple[int, State], list[tuple[Emit, int, State]]] = {}
    for i in sorted(set(edges) | set(ks)):
        for s in at.get(i, ()):
            out = moves[(i, s)] = []
            for t, j in edges.get(i, ()):
                for emit, s2 in ind.step(s, t, i, j):
                    out.append((emit, j, s2))
                    at.setdefault(j, set()).add(s2)
    # backward: each node's set
    sets: dict[tuple[int, State], EarleySet] = {}
    for s in at.get(n, ()):
        joined = _join(rev, ((rev.root, e) for e in ind.end(s)))
        if joined is not None:
            sets[(n, s)] = joined
    kept = 0
    fail = -1
    for i in sorted((i for i in at if i < n), reverse=True):
        for s in at[i]:
            parts = [(sets[(j, s2)], emit) for emit, j, s2 in moves.get((i, s), ())
                     if (j, s2) in sets]
            if not parts:
                continue
            kept += len(parts)
            e = _join(rev, parts)
            if e is None:
                fail = max(fail, i)
            else:
                sets[(i, s)] = e
    if n and not any(j == n for out in edges.values() for _, j in out):
        fail = max(edges)  # no lexing reaches the end: the furthest lexeme start
    walked: list[tuple[Branch, EarleySet]] = []
    for k in ks:
        for term_ends, starts in readings[k]:
            found = list({id(e): e for e in (sets.get((k, s)) for s in starts)
                          if e is not None}.values())
            e0 = found[0] if len(found) == 1 else rev.join([], found) if found else None
            if e0 is not None:
                walked.append((Branch(k, frozenset(range(MAX_DEPTH + 1)), (), (),
                                      ends=term_ends), e0))
    return SuffixLattice(walked, fail, kept)


def _readings(cx: ContextualLexer, suffix: bytes, k: int, ends: int,
              prefix_indent: tuple[int, ...]) -> list[tuple[frozenset[int], list[State]]]:
    """How the middle's last lexeme, continued by ``suffix[:k]``, can end (``ends``, a
    bitset): each reading's terminals and start states. A newline whose last line begins
    inside ``suffix[:k]`` fixes the level the stack tops out at (the basic mode's
    :func:`~.suffix_lexing.line_readings`): a reading of its own."""
    terms = frozenset(t for t in range(cx.ctx.num_lexer_terminals) if (ends >> t) & 1)
    head = suffix[:k]
    nl = cx.ctx.nl_t

    def starts(top: int) -> list[State]:
        return [(0, d0, False, top if d0 == 0 else -1) for d0 in range(MAX_DEPTH + 1)]

    least = least_width(head, terms, nl, prefix_indent)  # (0 where head holds a line break)
    return [(t, starts(-1 - least if top is None else top))
            for t, top in line_readings(head, terms, nl, prefix_indent)]
