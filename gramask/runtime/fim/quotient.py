"""The right quotient of the grammar by a lexed suffix, as a few rules added to the grammar.

Section IV-B of "Constrained Decoding for Fill-in-the-Middle Code Language Models via Efficient
Left and Right Quotienting of Context-Sensitive Grammars" (Melcer, Fulton, Gouda, Qian): parse
the suffix backwards with the *reversed* grammar (the runtime's own Earley recogniser, on an
automaton built once per compiled grammar), from the end of the document. After the suffix's
first terminal, every item ``C^R → γ^R • δ^R`` (origin set ``o``) says "``γ`` derives the
suffix up to ``o``, ``δ`` is still to come, from the middle": the quotient rule is
``C!o → δ #b`` (``#b``: the branch's marker, a parser terminal the lexer never emits). Each item
of ``o`` waiting for ``C`` (``D^R → ε^R • C^R ζ^R``, origin ``o2``) adds ``D!o2 → ζ C!o``, up to
``$start!root``, the quotient's start symbol. The new rules number about the nesting open at the
cursor times the branches, never ``|S|``; the original rules stay, and so do the token tables
(they depend only on the terminals).

The quotient's parse automaton is built lazily (:class:`~.lazy_automaton.LazyAutomaton`): the original
automaton's states are reused as they are (no original item set contains a new rule), and a
state holding a new rule is built the first time the parse reaches it, so setup does not pay
for the thousands of states the new rules could create. A marker in the parser's
expected set means "the middle may end here" (with the branch's lexing condition at the
boundary, which :mod:`gramask.runtime.fim.constraint` checks).

When the suffix continues the middle's last lexeme (a branch with ``k > 0``), that lexeme's
terminal ``a`` (one of those it can end as at ``k``) is parsed backwards after the suffix's
terminals, and the marker of (branch, ``a``) stands for the lexeme and the rest: the quotient
then only accepts middles whose last lexeme can be ``a``, so a suffix that no program ends
with is rejected at setup. The parser expecting such a marker counts as expecting ``a`` for
the lexeme in progress (:meth:`QuotientContext.expects`), when that lexeme can still take
``suffix[:k]`` (:mod:`gramask.runtime.fim.boundary`).
"""

from __future__ import annotations

import copy

from ...compiler.parse_tables import (
    AUGMENTED_START,
)
from ...errors import InvalidSuffixError, LimitExceededError
from ...grammar import Grammar
from ..core.earley import ACCEPTS, EXPECTED, UID, Automaton, EarleySet, set_items
from ..core.masks import MaskBuilder
from ..core.parse_state import ES, PUID, ParserContext, PState
from .last_terminal import last_sets, restrict_last
from .lazy_automaton import LazyAutomaton
from .quotient_base import base_for
from .suffix_lexing import Branch

__all__ = ["QuotientContext", "build_quotient"]


class QuotientContext(ParserContext):
    """A parser context whose "end of input" is "some branch marker can be shifted and the
    parse then accepts"."""

    markers: tuple[int, ...] = ()  # markers shifted after the middle's last lexeme
    # per marker of ``markers``: the suffix byte that must end the middle's last lexeme
    # (``suffix[0]`` for the branch at k = 0; -1: none to check)
    marker_bytes: tuple[int, ...] = ()
    _expects: dict[int, int]  # expects() per parser state uid (set in _builder_for)
    # (marker, terminal): markers shifted *instead of* the middle's last lexeme, which the
    # suffix continues and which must end as that terminal
    boundary: tuple[tuple[int, int], ...] = ()

    def finish(self, p: PState) -> bool:
        es = p[ES]
        for m in self.markers:
            if (es[EXPECTED] >> m) & 1:
                e2 = self.automaton.advance(es, m)
                if e2 is not None and e2[ACCEPTS]:
                    return True
        return False

    def finish_after(self, p: PState, next_bytes: int) -> bool:
        """:meth:`finish` through a marker whose suffix byte may follow the lexeme end (a
        byte that continues the middle's last lexeme leaves greedy lexing no end there)."""
        es = p[ES]
        for m, b in zip(self.markers, self.marker_bytes, strict=True):
            if b >= 0 and not (next_bytes >> b) & 1:
                continue
            if (es[EXPECTED] >> m) & 1:
                e2 = self.automaton.advance(es, m)
                if e2 is not None and e2[ACCEPTS]:
                    return True
        return False

    def continues_into_suffix(self, p: PState, a: int) -> bool:
        expected = p[ES][EXPECTED]
        return any(b == a and (expected >> m) & 1 for m, b in self.boundary)

    def expects(self, p: PState) -> int:
        """As the original's, plus the terminal of each boundary marker ``p`` expects: a
        lexeme in progress that can become it may be the one the suffix continues.
        Memoised per state (the contextual lexer asks at every byte of a mask's trie walk)."""
        memo = self._expects
        bits = memo.get(p[PUID])
        if bits is not None:
            return bits
        bits = super().expects(p)
        expected = p[ES][EXPECTED]
        for m, a in self.boundary:
            if (expected >> m) & 1:
                bits |= 1 << a
        if len(memo) >= 65536:
            memo.clear()
        memo[p[PUID]] = bits
        return bits


def _walk_branches(rev: Automaton, branches: list[Branch]
                   ) -> tuple[list[tuple[Branch, EarleySet]], int]:
    """Run each branch's terminals backwards; branches share the walk of their common tail."""
    adv = rev.advance
    out: list[tuple[Branch, EarleySet]] = []
    err = -1
    if not branches:
        return out, err
    # the longest tail common to all branches is walked once
    ref = branches[0].terms
    common = len(ref)
    for br in branches[1:]:
        t = br.terms
        n = 0
        while n < common and n < len(t) and t[len(t) - 1 - n] == ref[len(ref) - 1 - n]:
            n += 1
        common = n
    es: EarleySet | None = rev.root
    bad_at = -1
    for i in range(len(ref) - 1, len(ref) - 1 - common, -1):
        es = adv(es, ref[i]) if es is not None else None
        if es is None:
            bad_at = branches[0].offsets[i]
            break
    for br in branches:
        es2, bad = es, bad_at
        if es2 is not None:
            for i in range(len(br.terms) - 1 - common, -1, -1):
                es2 = adv(es2, br.terms[i])
                if es2 is None:
                    bad = br.offsets[i]
                    break
        if es2 is None:
            err = max(err, bad)
            continue
        out.append((br, es2))
    return out, err


def _plain(ob: MaskBuilder, a: int) -> bool:
    """Can the boundary lexeme's terminal ``a`` stand in the backward parse? (Ignored
    lexemes, newlines and brackets change the parser state otherwise than by a shift: those
    boundaries keep a marker after the lexeme.)"""
    ctx = ob.ctx
    return not (ob.ignored[a] or a == ob.nl_t or a == ob.continuation_t
                or a in ctx.open_brackets or a in ctx.close_brackets)


def build_quotient(
    ob: MaskBuilder, grammar: Grammar, branches: list[Branch], lex_error: int,
    walked: list[tuple[Branch, EarleySet]] | None = None, suffix: bytes = b"",
) -> tuple[MaskBuilder, list[tuple[Branch, int, int]]]:
    """The quotient's mask builder (sharing the original's tables) and each live branch with
    its marker terminals: ``(branch, marker, -1)`` for a marker after the middle's last
    lexeme, ``(branch, marker, a)`` for one that stands for a boundary lexeme of terminal
    ``a`` continued into ``suffix[:k]``, then the rest of the suffix.

    Raises
    ------
    InvalidSuffixError
        No branch of the suffix is the end of a program.

    ``walked``: each branch with the suffix already parsed backwards (the contextual mode
    parses a lattice of lexemes, :mod:`gramask.runtime.fim.suffix_lattice`); else the branches'
    terminal sequences are parsed here. ``suffix``: its first byte must end the middle's last
    lexeme before the branch at k = 0 (the dead-end searches check it).
    """
    base = base_for(ob, grammar)
    rev = base.rev
    if walked is None:
        walked, err = _walk_branches(rev, branches)
    else:
        err = -1
    sym = base.rev_symbols
    start_sym = sym.index(AUGMENTED_START)
    orig_start = sym.index(grammar.start)
    root = rev.root
    next_id = len(sym)
    names: list[str] = list(sym)

    ids: dict[tuple[int, int], int] = {}
    # insertion-ordered (a dict as an ordered set): deterministic rule numbers, no sort
    rules: dict[tuple[int, tuple[int, ...]], None] = {}
    work: list[tuple[int, EarleySet]] = []

    def need(c: int, o: EarleySet) -> int:
        nonlocal next_id
        key = (c, o[UID])
        j = ids.get(key)
        if j is None:
            j = ids[key] = next_id
            next_id += 1
            names.append(f"{sym[c]}!{o[UID]}")
            work.append((c, o))
        return j

    markers: list[tuple[Branch, int, int]] = []

    def add_marker(br: Branch, e: EarleySet, a: int) -> None:
        """Rules ``C!o → δ #m`` for the items of ``e`` (the suffix parsed backwards)."""
        nonlocal next_id
        m = next_id  # the marker
        next_id += 1
        names.append(f"#fim{m}")
        base_rules: list[tuple[int, tuple[int, ...]]] = []
        if e is root or any(o is root and st == base.rev_start for st, o in set_items(e)):
            # nothing of the suffix reaches the parser (on some path): the program ends here
            base_rules.append((need(start_sym, root), (orig_start, m)))
        for s, o in set_items(e):
            if o is None:
                continue
            for lhs, rhs, d in base.rev_items[s]:
                if d:
                    base_rules.append((need(lhs, o), (*reversed(rhs[d:]), m)))
        if base_rules:
            rules.update(dict.fromkeys(base_rules))
            markers.append((br, m, a))

    for br, e0 in walked:
        # a boundary lexeme of a plain terminal is parsed backwards with the suffix, so the
        # quotient knows which terminal the middle's last lexeme must be
        plain = sorted(a for a in br.ends if _plain(ob, a))
        if not br.k or len(plain) < len(br.ends):
            add_marker(br, e0, -1)
        for a in plain:
            e1 = rev.advance(e0, a)
            if e1 is not None:
                add_marker(br, e1, a)
    found_root = False
    max_rules = ob.ctx.automaton.limits.max_quotient_rules
    while work:
        if len(rules) > max_rules:
            raise _too_many_rules(len(rules), max_rules, len(names) - len(sym))
        c, o = work.pop()
        if c == start_sym and o is root:
            found_root = True
            continue
        cid = ids[(c, o[UID])]
        for s2, o2 in set_items(o):
            waiting = base.waiting(s2).get(c)
            if waiting is None:
                continue
            oo = o if o2 is None else o2
            for lhs, head in waiting:
                rules[(need(lhs, oo), (*head, cid))] = None
    if not found_root or not markers:
        bad = max(err, lex_error)
        raise InvalidSuffixError(
            "no middle connects the prefix to this suffix: the code after the cursor is not "
            "the end of any program", position=max(bad, 0))
    qstart = ids[(start_sym, root[UID])]
    qrules = list(rules)
    restrict = last_sets(ob, base, markers, suffix)
    got = restrict_last(base, qrules, set(ids.values()), {m for _, m, _ in markers},
                        restrict, qstart, next_id, names) if restrict else None
    if got is not None:
        qrules, qstart, next_id = got
        if not any(lhs == qstart for lhs, _ in qrules):
            raise InvalidSuffixError(
                "no middle connects the prefix to this suffix: the code after the cursor "
                "cannot follow any lexeme where it starts", position=0)
    aut = LazyAutomaton(base, qrules, next_id, [m for _, m, _ in markers], qstart,
                        (*names, "$quotient"), ob.ctx.automaton.limits)
    qb = _builder_for(ob, aut, [m for _, m, a in markers if a < 0],
                      [(m, a) for _, m, a in markers if a >= 0])
    first = suffix[0] if suffix else -1
    assert isinstance(qb.ctx, QuotientContext)
    qb.ctx.marker_bytes = tuple(first if br.k == 0 else -1 for br, _, a in markers if a < 0)
    return qb, markers


def _too_many_rules(n: int, limit: int, symbols: int) -> LimitExceededError:
    return LimitExceededError(
        f"the suffix's quotient grammar outgrew RuntimeLimits.max_quotient_rules={limit:,} "
        f"({n:,} rules over {symbols:,} new symbols so far): every bracket, call or block "
        "the suffix leaves open for the middle to write adds a few hundred rules. Pass "
        f"limits=gramask.RuntimeLimits(max_quotient_rules={4 * limit}) to constraint() to "
        "allow it (about 1 KB and 15 µs per rule), or cut the suffix where fewer are open",
        limit="max_quotient_rules", value=n,
    )


def _builder_for(ob: MaskBuilder, aut: Automaton, markers: list[int],
                 boundary: list[tuple[int, int]]) -> MaskBuilder:
    """A mask builder for the quotient automaton that shares the original's token tables,
    row and kill caches (they depend only on the lexer), with fresh parser-side memos.
    Symbol ids of the original grammar are kept, so the original context's ids carry over."""
    octx = ob.ctx
    ctx = QuotientContext(
        aut, octx.num_lexer_terminals, octx.ignored_bits,
        newline=octx.nl_t, indent=octx.indent_t, dedent=octx.dedent_t,
        open_brackets=tuple(octx.open_brackets), close_brackets=tuple(octx.close_brackets),
        tab_len=octx.tab_len,
    )
    ctx.markers = tuple(markers)
    ctx.boundary = tuple(boundary)
    ctx._expects = {}
    qb = copy.copy(ob)
    qb.ctx = ctx
    qb.forget_masks()  # (keyed by parser state ids; aut.limits are the original's)
    return qb
