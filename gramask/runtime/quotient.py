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

The quotient's parse automaton is then built like the original's. A marker in the parser's
expected set means "the middle may end here" (with the branch's lexing condition at the
boundary, which :mod:`gramask.runtime.fim` checks).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..compiler.parse_tables import build_parse_tables
from ..errors import InvalidSuffixError
from ..grammar import Grammar, RuleSpec
from .earley import Automaton, EarleySet
from .masks import MaskBuilder
from .parse_state import ParserContext, PState
from .suffix_lexing import Branch

if TYPE_CHECKING:
    pass

__all__ = ["QuotientContext", "build_quotient"]


class QuotientContext(ParserContext):
    """A parser context whose "end of input" is "some branch marker can be shifted and the
    parse then accepts"."""

    marker_bits = 0

    def finish(self, p: PState) -> bool:
        bits = p.es.expected & self.marker_bits
        m = 0
        while bits:
            if bits & 1:
                es = self.automaton.advance(p.es, m)
                if es is not None and es.accepts:
                    return True
            bits >>= 1
            m += 1
        return False


class _Reversed:
    """The reversed grammar's automaton and its LR(0) items (built once per compiled grammar)."""

    def __init__(self, grammar: Grammar) -> None:
        rg = replace(grammar, rules=tuple(RuleSpec(r.lhs, tuple(reversed(r.rhs)))
                                          for r in grammar.rules))
        pt = build_parse_tables(rg)
        self.pt = pt
        self.automaton = Automaton(pt)
        self.states, self.rules = pt._debug_items  # type: ignore[attr-defined]
        self.symbols = pt.symbols
        self.sid = {s: i for i, s in enumerate(pt.symbols)}
        # per state: [(lhs, rhs, dot)] for fast scans
        self.items = [[(self.rules[r][0], self.rules[r][1], d) for r, d in sorted(st)]
                      for st in self.states]


def reversed_automaton(ob: MaskBuilder, grammar: Grammar) -> _Reversed:
    r: _Reversed | None = getattr(ob, "_fim_reversed", None)
    if r is None:
        r = _Reversed(grammar)
        ob._fim_reversed = r  # type: ignore[attr-defined]
    return r


def _walk_branches(rev: _Reversed, branches: list[Branch]
                   ) -> tuple[list[tuple[Branch, EarleySet]], int]:
    """Run each branch's terminals backwards; branches share the walk of their common tail."""
    adv = rev.automaton.advance
    out: list[tuple[Branch, EarleySet]] = []
    err = -1
    tail_cache: dict[tuple[int, ...], tuple[EarleySet | None, int]] = {}
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
    es: EarleySet | None = rev.automaton.root
    bad_at = -1
    for i in range(len(ref) - 1, len(ref) - 1 - common, -1):
        es = adv(es, ref[i]) if es is not None else None
        if es is None:
            bad_at = branches[0].offsets[i]
            break
    tail_cache[()] = (es, bad_at)
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


def build_quotient(
    ob: MaskBuilder, grammar: Grammar, branches: list[Branch], lex_error: int
) -> tuple[MaskBuilder, list[tuple[Branch, int]]]:
    """The quotient's mask builder (sharing the original's tables) and each live branch with
    its marker terminal.

    Raises
    ------
    InvalidSuffixError
        No branch of the suffix is the end of a program.
    """
    rev = reversed_automaton(ob, grammar)
    walked, err = _walk_branches(rev, branches)
    sym = rev.symbols
    start_sym = rev.sid["$start"]
    root = rev.automaton.root
    n_orig_terms = len(rev.pt.symbols[: rev.pt.num_terminals])

    names: dict[tuple[int, int], str] = {}
    rules: set[tuple[str, tuple[str, ...]]] = set()
    work: list[tuple[int, EarleySet]] = []

    def need(c: int, o: EarleySet) -> str:
        key = (c, o.uid)
        nm = names.get(key)
        if nm is None:
            nm = names[key] = f"{sym[c]}!{o.uid}"
            work.append((c, o))
        return nm

    markers: list[tuple[Branch, int]] = []
    marker_names: list[str] = []
    for br, e0 in walked:
        mname = f"#fim{len(marker_names)}"
        made = False
        if e0 is root:  # nothing of the suffix reaches the parser: the program ends here
            rules.add((need(start_sym, root), (grammar.start, mname)))
            made = True
        for s, o in e0.items:
            if o is None:
                continue
            for lhs, rhs, d in rev.items[s]:
                if d == 0:
                    continue
                delta = tuple(sym[x] for x in reversed(rhs[d:]))
                rules.add((need(lhs, o), (*delta, mname)))
                made = True
        if made:
            markers.append((br, n_orig_terms + len(marker_names)))
            marker_names.append(mname)
    found_root = False
    while work:
        c, o = work.pop()
        if c == start_sym and o is root:
            found_root = True
            continue
        cname = names[(c, o.uid)]
        for s2, o2 in o.items:
            oo = o if o2 is None else o2
            for lhs, rhs, d in rev.items[s2]:
                if d < len(rhs) and rhs[d] == c:
                    zeta = tuple(sym[x] for x in reversed(rhs[d + 1:]))
                    rules.add((need(lhs, oo), (*zeta, cname)))
    if not found_root or not markers:
        bad = max(err, lex_error)
        raise InvalidSuffixError(
            "no middle connects the prefix to this suffix: the code after the cursor is not "
            "the end of any program", position=max(bad, 0))
    qname = names[(start_sym, root.uid)]
    qg = replace(
        grammar,
        rules=grammar.rules + tuple(RuleSpec(lhs, rhs) for lhs, rhs in sorted(rules)),
        start=qname,
        declared=(*grammar.declared, *marker_names),
    )
    qpt = build_parse_tables(qg)
    qb = _builder_for(ob, qpt, marker_names)
    # marker ids in the quotient's symbol table
    qsid = {s: i for i, s in enumerate(qpt.symbols)}
    markers = [(br, qsid[marker_names[i]]) for i, (br, _) in enumerate(markers)]
    return qb, markers


def _builder_for(ob: MaskBuilder, qpt: Any, marker_names: list[str]) -> MaskBuilder:
    """A mask builder for the quotient automaton that shares the original's token tables,
    row and kill caches (they depend only on the lexer), with fresh parser-side memos."""
    octx = ob.ctx
    sid = {s: i for i, s in enumerate(qpt.symbols)}
    osym = octx.automaton.symbols

    def tr(i: int) -> int:
        return sid[osym[i]] if i >= 0 else -1

    ctx = QuotientContext(
        Automaton(qpt), octx.num_lexer_terminals, octx.ignored_bits,
        newline=tr(octx.nl_t), indent=tr(octx.indent_t), dedent=tr(octx.dedent_t),
        open_brackets=tuple(tr(i) for i in octx.open_brackets),
        close_brackets=tuple(tr(i) for i in octx.close_brackets),
    )
    ctx.marker_bits = sum(1 << sid[m] for m in marker_names)
    qb = copy.copy(ob)
    qb.ctx = ctx
    qb._masks = OrderedDict()
    return qb
