"""Fill-in-the-middle: a constraint that also knows the code after the cursor.

A :class:`FimConstraint` runs two parsers over the middle, side by side, on one lexer:

* the **quotient parser** (``qb``), built per request for the right quotient of the grammar by
  the lexed suffix (see :mod:`gramask.runtime.quotient`): its masks allow only middles that
  can still connect to the suffix;
* the **original parser** (``ob``), shared by every constraint of the compiled grammar: it is
  what confirms an end exactly. ``is_complete()`` holds iff prefix + middle + suffix is a
  program: the quotient says the middle may end here (cheap, independent of ``|S|``), then the
  suffix is walked from the original parser's state (cost ``∝ |S|``, memoised per state, paid
  only at candidate ends).

State per step: ``(q, carry, pq, po)``: lexer state, indentation carry, quotient parser state,
original parser state. Both parser states are immutable, hash-consed objects, so clone and
rollback stay free.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from ..errors import InvalidPrefixError, InvalidSuffixError
from .boundary import boundary_filter, with_boundary
from .constraint import Constraint
from .lexing import NEWLINE, indent_widths, walk
from .masks import MaskBuilder
from .parse_state import PState
from .quotient import build_quotient
from .suffix_lexing import Branch, lex_suffix

if TYPE_CHECKING:
    from ..grammar import Grammar
    from ..vocab import Vocabulary

__all__ = ["FimConstraint", "walk"]

FimState = tuple[int, int, PState, PState]


class FimConstraint(Constraint):
    """A :class:`Constraint` for ``prefix + middle + suffix``; create it with
    ``CompiledGrammar.constraint(prefix=..., suffix=...)``."""

    MAX_ENDS = 4096  # memo of exact end checks, per constraint family

    def __init__(
        self,
        qb: MaskBuilder,
        ob: MaskBuilder,
        vocab: Vocabulary,
        prefix: str | bytes = "",
        suffix: str | bytes = "",
        *,
        tab_len: int = 8,
        _history: list[FimState] | None = None,
        _chunks: list[bytes] | None = None,
        _finished: bool = False,
        _shared: dict[tuple[int, int, PState], bool] | None = None,
        _branches: list[tuple[Branch, int, int]] | None = None,
        _glue: dict[tuple[int, int], tuple[int, int, int] | None] | None = None,
        _ends_at: dict[tuple[int, int], tuple[bool]] | None = None,
        _alive: list[PState] | None = None,
    ) -> None:
        self._ob = ob
        self._branches = _branches if _branches is not None else []
        self._glue: dict[tuple[int, int], tuple[int, int, int] | None] = (
            _glue if _glue is not None else {})
        self._suffix = suffix.encode("utf-8") if isinstance(suffix, str) else bytes(suffix)
        self._ends: dict[tuple[int, int, PState], bool] = _shared if _shared is not None else {}
        # (suffix offset, parser state uid) at a lexeme boundary → verdict; states kept alive
        self._ends_at: dict[tuple[int, int], tuple[bool]] = (
            _ends_at if _ends_at is not None else {})
        self._alive: list[PState] = _alive if _alive is not None else []
        super().__init__(qb, vocab, prefix, tab_len=tab_len, _history=_history,
                         _chunks=_chunks, _finished=_finished)

    # ------------------------------------------------------------------ lexing
    def _initial_state(self) -> FimState:  # type: ignore[override]
        qs = self._b
        os_ = self._ob
        st: FimState = (0, 0, qs.ctx.root, os_.ctx.root)
        if os_.nl_t >= 0 and os_.ctx.automaton.advance(os_.ctx.root.es, os_.nl_t) is not None:
            r = self._walk(st, b"\n")
            if isinstance(r, int):
                raise InvalidPrefixError("no program fits this suffix", position=0)
            st = r
        return st

    def _walk(self, st: FimState, data: bytes) -> FimState | int:  # type: ignore[override]
        q, carry, pq, po = st
        r1 = walk(self._b, (q, carry, pq), data, self._tab)
        if isinstance(r1, int):
            return r1
        # the original parser follows along for the exact end check only: whether the lexeme
        # in progress can still end well is the quotient's call (the original's "finish" means
        # the input ends here, the quotient's that the suffix follows)
        r2 = walk(self._ob, (q, carry, po), data, self._tab, check_end=False)
        if isinstance(r2, int):
            return r2
        return (r1[0], r1[1], r1[2], r2[2])

    def _complete(self, st: FimState) -> bool:  # type: ignore[override]
        q, carry, _, po = st
        v = self._quotient_end(st)
        if v != 1:
            return v == 2  # the quotient's verdict, exact
        key = (q, carry, po)
        r = self._ends.get(key)
        if r is None:
            was_enabled = gc.isenabled()
            gc.disable()  # as in setup: the walk builds long-lived parser states
            try:
                r = self._suffix_completes(q, carry, po)
            finally:
                if was_enabled:
                    gc.enable()
            if len(self._ends) >= self.MAX_ENDS:
                self._ends.clear()
            self._ends[key] = r
        return r

    def _suffix_completes(self, q: int, carry: int, p: PState) -> bool:
        """Exact: does the suffix, read from this state with the original grammar, end a
        program? Walks from different states converge (hash-consed parser states at the same
        suffix offset), so each walk stops at the first lexeme boundary an earlier walk
        passed through, and reuses its verdict: the suffix is read in full about once."""
        b = self._ob
        memo = self._ends_at
        rows, accept, ctx = b.trans_rows, b.accept, b.ctx
        widths = indent_widths(self._tab)
        seen: list[tuple[int, int]] = []
        result: bool | None = None
        data = self._suffix
        for i, byte in enumerate(data):
            nq = rows[q][byte]
            if nq < 0:
                a = accept[q]
                if a < 0 or q == 0:
                    result = False
                    break
                p2 = ctx.end_lexeme(p, a, carry)
                if p2 is None:
                    result = False
                    break
                p = p2
                carry = 0
                key = (i, p.uid)
                known = memo.get(key)
                if known is not None:
                    result = known[0]
                    break
                seen.append(key)
                self._alive.append(p)
                nq = rows[0][byte]
                if nq < 0:
                    result = False
                    break
            q = nq
            carry = 0 if byte == NEWLINE else carry + widths[byte]
        if result is None:
            result = (q == 0 or b.end_ok(p, q)) and b.complete(p, q, carry)
        if len(memo) > 8 * len(data) + 4096:
            memo.clear()
            self._alive.clear()
        for k in seen:
            memo[k] = (result,)
        return result

    def _glue_walk(self, q: int, k: int) -> tuple[int, int, int] | None:
        """The middle's last lexeme (lexer state ``q``) continued by ``suffix[:k]`` and ended
        there: (final lexer state, whether a newline reset the carry, width added), or None
        if greedy lexing would not end it at ``k``. Memoised per (q, k)."""
        key = (q, k)
        if key in self._glue:
            return self._glue[key]
        s = self._suffix
        b = self._b
        rows = b.trans_rows
        res: tuple[int, int, int] | None = None
        qq = q
        reset, width = 0, 0
        ok = True
        for byte in s[:k]:
            qq = rows[qq][byte]
            if qq < 0:
                ok = False
                break
            if byte == 10:
                reset, width = 1, 0
            elif byte == 32:
                width += 1
            elif byte == 9:
                width += self._tab
        if ok and (qq == 0 or b.accept[qq] >= 0) and (
                k == len(s) or qq == 0 or rows[qq][s[k]] < 0):
            res = (qq, reset, width)
        self._glue[key] = res
        return res

    def _quotient_end(self, st: FimState) -> int:
        """Can the middle end here, per the quotient (cost independent of |S|)? 0: no;
        2: yes, exactly (a branch whose assumptions about the boundary — bracket depth,
        indentation — hold here accepts); 1: only branches whose assumptions do not hold
        accept (the suffix must be walked to know)."""
        q, carry, pq, _ = st
        b = self._b
        adv = b.ctx.automaton.advance
        verdict = 0
        n = len(self._suffix)
        for br, marker, a in self._branches:
            g = self._glue_walk(q, br.k)
            if g is None:
                continue
            qq, reset, width = g
            if qq != 0 and br.k == n and b.accept[qq] == b.continuation_t >= 0:
                continue  # input may not end in a line continuation
            if a >= 0:
                # the marker stands for the boundary lexeme (of terminal a) and the rest
                if b.accept[qq] != a:
                    continue
                p2 = b.ctx.shift(pq, marker)
                if p2 is None or p2.depth not in br.depths or not p2.es.accepts:
                    continue
            else:
                c2 = width if reset else carry + width
                p2 = b.lexeme_end(pq, qq, c2, at_eof=br.k == n)
                if p2 is None or p2.depth not in br.depths:
                    continue
                es = adv(p2.es, marker)
                if es is None or not es.accepts:
                    continue
            if not br.assumptions or _holds(br, p2):
                return 2
            verdict = 1
        return verdict

    # ------------------------------------------------------------------ API
    def _view(self, st: FimState) -> tuple[int, int, PState]:
        """The quotient parser's view of a step: what masks and budgets work on."""
        return st[0], st[1], st[2]

    @property
    def suffix(self) -> bytes:
        """The code after the cursor."""
        return self._suffix

    def clone(self) -> FimConstraint:
        c = FimConstraint(
            self._b, self._ob, self._vocab, suffix=self._suffix, tab_len=self._tab,
            _history=list(self._history), _chunks=list(self._chunks),
            _finished=self._finished, _shared=self._ends, _branches=self._branches,
            _glue=self._glue, _ends_at=self._ends_at, _alive=self._alive,
        )
        c._prefix = self._prefix
        return c

    def explain(self) -> dict[str, object]:
        """Why the mask is what it is (quotient parser's view), plus the suffix length."""
        q, carry, pq, _po = self._history[-1]
        saved = self._history
        self._history = [(q, carry, pq)]
        try:
            out = super().explain()
        finally:
            self._history = saved
        out["suffix_bytes"] = len(self._suffix)
        return out


def fim_constraint(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes, suffix: str | bytes,
                   grammar: Grammar) -> FimConstraint:
    """Set up one fill-in-the-middle request: lex the suffix into branches, build the
    quotient, walk the prefix.

    Raises
    ------
    InvalidPrefixError
        No program starts with the prefix.
    InvalidSuffixError
        No middle connects the prefix to the suffix (offset in the suffix).
    """
    # Setup allocates many small, long-lived objects (Earley sets of the prefix and of the
    # backward parse of the suffix); the cyclic collector's passes over them cost more than
    # the parsing itself (5-20x on a 100 KB file), and none of them is garbage. So the
    # collector is paused for the setup only, and restored as it was.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _setup(ob, vocab, prefix, suffix, grammar)
    finally:
        if was_enabled:
            gc.enable()


def _setup(ob: MaskBuilder, vocab: Vocabulary, prefix: str | bytes, suffix: str | bytes,
           grammar: Grammar) -> FimConstraint:
    ind = grammar.indentation
    tab = ind.tab_len if ind is not None else 8
    sdata = suffix.encode("utf-8") if isinstance(suffix, str) else bytes(suffix)
    pdata = prefix.encode("utf-8") if isinstance(prefix, str) else bytes(prefix)
    plain = Constraint(ob, vocab, pdata, tab_len=tab)  # validates the prefix
    short = equivalent_prefix(ob, plain._initial_state(), pdata, tab)
    octx = ob.ctx
    lexing = lex_suffix(
        ob, sdata, tab=tab, prefix_indent=plain._history[-1][2].indent,
        open_brackets=octx.open_brackets, close_brackets=octx.close_brackets,
        indent_t=octx.indent_t, dedent_t=octx.dedent_t,
    )
    if not lexing.branches:
        raise InvalidSuffixError("the code after the cursor cannot be lexed",
                                 position=max(lexing.error_offset, 0))
    qb, markers = build_quotient(ob, grammar, lexing.branches, lexing.error_offset)
    qb = with_boundary(qb, boundary_filter(ob, vocab, sdata, markers, contextual=False))
    try:
        c = FimConstraint(qb, ob, vocab, short, sdata, tab_len=tab, _branches=markers)
        c._prefix = pdata
        return c
    except InvalidPrefixError as e:
        if isinstance(e, InvalidSuffixError):
            raise
        raise InvalidSuffixError(
            "no middle connects this prefix to the suffix (the prefix, up to the quoted "
            f"byte, is fine alone): {e}", position=0) from None


def equivalent_prefix(b: MaskBuilder, st: tuple[int, int, PState], data: bytes,
                      tab: int) -> bytes:
    """A prefix that leaves lexer and parser exactly where ``data`` does, usually much shorter.

    At a lexeme boundary the runtime's whole state is (lexer start, parser state), and parser
    states are hash-consed objects, so two boundaries with the same parser state, where the
    same byte starts the next lexeme, have the same continuations (with or without a suffix).
    The text between them is a loop and can be cut; cutting every loop (a loop-erased walk)
    leaves roughly the headers of the blocks around the cursor, and the quotient parser,
    which starts cold for each request, reads only that."""
    q, carry, p = st
    rows, accept, ctx = b.trans_rows, b.accept, b.ctx
    widths = indent_widths(tab)
    bounds: list[tuple[int, PState]] = []
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0:
            a = accept[q]
            if a < 0 or q == 0:
                return data
            p2 = ctx.end_lexeme(p, a, carry)
            if p2 is None:
                return data
            p = p2
            carry = 0
            bounds.append((i, p))
            nq = rows[0][byte]
            if nq < 0:
                return data
        q = nq
        carry = 0 if byte == NEWLINE else carry + widths[byte]
    return erase_loops(data, bounds)


def erase_loops(data: bytes, bounds: list[tuple[int, PState]]) -> bytes:
    """``data`` with the text between any two lexeme boundaries ``(offset, parser state after
    the lexeme that ends there)`` that have the same parser state and the same next byte cut
    out (see :func:`equivalent_prefix`; any lexer mode whose next lexeme depends only on the
    parser state and the text)."""
    # the kept path: [key, offset where its boundary was first met, offset the text resumes]
    keys: list[tuple[int, int]] = []
    starts: list[int] = []
    conts: list[int] = []
    where: dict[tuple[int, int], int] = {}
    for i, p in bounds:
        key = (p.uid, data[i])
        j = where.get(key)
        if j is None:
            where[key] = len(keys)
            keys.append(key)
            starts.append(i)
            conts.append(i)
        else:
            for k in keys[j + 1:]:
                del where[k]
            del keys[j + 1:], starts[j + 1:], conts[j + 1:]
            conts[j] = i
    if not keys:
        return data
    parts = [data[: starts[0]]]
    parts += [data[conts[n] : starts[n + 1]] for n in range(len(keys) - 1)]
    parts.append(data[conts[-1] :])
    return b"".join(parts)


def _holds(br: Branch, p: PState) -> bool:
    """Does one of the branch's boundary assumptions hold for the parser state ``p`` at the
    boundary? Then the branch's terminals are exactly the suffix's, and the quotient's
    verdict is exact."""
    stack = p.indent
    for d0, w1, outcome, below, eof_nl in br.assumptions:
        if d0 != p.depth:
            continue
        if eof_nl is not None:
            if outcome == len(stack) - 1 and eof_nl == (not p.bol):
                return True
            continue
        if tuple(e for e in stack if e < w1) != below:
            continue
        if outcome < 0:
            if stack[-1] < w1:
                return True
        elif w1 in stack and sum(1 for e in stack if e > w1) == outcome:
            return True
    return False
