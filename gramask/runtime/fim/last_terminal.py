"""The boundary's glue as a condition on the middle's last terminal, in the quotient grammar.

A marker after the middle's last lexeme (:mod:`gramask.runtime.fim.quotient`) says "the suffix
follows here"; whether that lexeme really ends there is a lexing question the grammar did not
ask. On the branch where the suffix starts a lexeme of its own (``k = 0``) the lexeme must end
before the suffix's first byte: a terminal whose every lexeme that byte continues (``_NEWLINE``
before a suffix that starts with a blank) cannot be the last one. Left to the exact end check,
such a terminal let masks lead into middles with no end in reach: the parser expected the
marker after every statement, and every statement ended in a newline the suffix's blank would
continue (docs/semantics.md, fill-in-the-middle).

So each such marker gets the set ``L`` of terminals that may stand last before it, and the
quotient's rules are rewritten (:func:`restrict_last`) so that the terminal before the marker
is in ``L``, or there is none (the text so far holds no parser terminal). Per quotient symbol
``X``: ``X`` keeps the derivations of unrestricted markers, ``X|r`` those of restriction ``r``
whose last terminal lies inside ``X`` (and in ``L_r``), ``X|r?`` those with nothing before the
marker inside ``X`` (the left context decides). An original nonterminal ``Y`` in the last
position becomes ``Y|r``: its nonempty strings that end in ``L_r`` (nullable tails left out),
built on demand and only where ``Y`` can end outside ``L_r`` or be empty. Unproductive
symbols are pruned: the parser must not expect terminals that lead nowhere.

``L`` is sound (no true middle is lost): a lexeme of ``t`` that ends before byte ``b`` stops
in a lexer state accepting ``t`` from which ``b`` kills ``t`` (the contextual lexer's allowed
set holds ``t``, so ``t`` itself alive means the lexeme goes on). Where an ignored lexeme may
be the one that ends there, the last terminal only has to end before some ignored lexeme's
first byte. ``_INDENT``/``_DEDENT`` follow a newline lexeme: they count as it does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...compiler.parse_tables import free_closure
from ...encoding import BROKEN
from ..core.indentation import advance

if TYPE_CHECKING:
    from ..core.masks import MaskBuilder
    from .quotient_base import _Base
    from .suffix_lexing import Branch

__all__ = ["last_sets", "restrict_last"]

Rule = tuple[int, tuple[int, ...]]


def _dies_on(ob: MaskBuilder, byte: int) -> int:
    """The terminals some lexeme of which ends before ``byte`` (a bit set)."""
    dfa = ob.dfa
    nxt = dfa.trans[:, byte]
    alive = np.where((nxt >= 0)[:, None], dfa.live[np.maximum(nxt, 0)], False)
    if getattr(ob, "contextual", None) is not None:
        ends = dfa.accepting & ~alive  # (the allowed set holds the terminal itself)
        hit = np.flatnonzero(ends.any(axis=0))
    else:  # basic: the winner ends where every terminal dies
        hit = np.unique(dfa.accept[(nxt < 0) & (dfa.accept >= 0)])
    return sum(1 << int(t) for t in hit)


def _width(data: bytes) -> int:
    carry = 0
    for byte in data:
        carry = advance(carry, byte)
    return carry


def last_sets(ob: MaskBuilder, base: _Base, markers: list[tuple[Branch, int, int]],
              suffix: bytes) -> dict[int, int]:
    """Per marker after the middle's last lexeme that needs one: the terminals that may be
    the last parser terminal before it (a bit set; markers left out are unrestricted)."""
    if not suffix:
        return {}
    ctx = ob.ctx
    n_lex = ob.dfa.num_terminals
    nl = ob.nl_t
    ign = [a for a in range(n_lex) if ob.ignored[a]]
    if ob.continuation_t >= 0:
        ign.append(ob.continuation_t)
    if nl >= 0 and ctx.open_brackets:
        ign.append(nl)  # (dropped inside brackets)
    # per compiled grammar and mode, kept on the base: a pass over the lexer's states each
    # (C's bundled grammar: a tenth of a request's setup when asked afresh)
    ctxl = getattr(ob, "contextual", None) is not None
    memo: dict[tuple[bool, int], int] = base.__dict__.setdefault("_dies_on", {})

    def dies(byte: int) -> int:
        r = memo.get((ctxl, byte))
        if r is None:
            r = memo[(ctxl, byte)] = _dies_on(ob, byte)
        return r

    def after_ignored() -> int:
        key = (ctxl, -1 - sum(1 << a for a in ign))
        r = memo.get(key)
        if r is None:
            trans, live = ob.dfa.trans, ob.dfa.live
            first = live[trans[0].clip(0)][:, ign].any(axis=1) & (trans[0] >= 0)
            r = 0
            for byte in np.flatnonzero(first).tolist():
                r |= dies(byte)
            memo[key] = r
        return r

    full = (1 << base.num_terminals) - 1
    virtual = full & ~((1 << n_lex) - 1)
    for t in (ctx.indent_t, ctx.dedent_t):
        if t >= 0:
            virtual &= ~(1 << t)
    ign_bits = sum(1 << a for a in ign)
    out: dict[int, int] = {}
    for br, m, a in markers:
        if a >= 0:
            continue  # (the boundary lexeme stands in the backward parse)
        if br.k == 0:
            allowed = dies(suffix[0])
            if allowed & ign_bits:
                allowed |= after_ignored()
        else:
            allowed = 0
            for e in br.ends:
                if e == nl and 0 in br.depths and _width(suffix[:br.k]) < BROKEN:
                    allowed |= 1 << e  # (a line with a tab after a space is refused)
                if e in ign or (e == nl and any(br.depths)):
                    allowed |= after_ignored()
                elif e in ctx.open_brackets or e in ctx.close_brackets:
                    allowed |= 1 << e
        if nl >= 0 and (allowed >> nl) & 1:
            for t in (ctx.indent_t, ctx.dedent_t):
                if t >= 0:
                    allowed |= 1 << t
        allowed = (allowed | virtual) & full
        if allowed != full:
            out[m] = allowed
    return out


def _last_of(base: _Base) -> list[int]:
    """Per original symbol: the terminals its strings can end with (a bit set)."""
    got: list[int] | None = getattr(base, "_last_of", None)
    if got is not None:
        return got
    n = len(base.symbols)
    last = [(1 << s) if s < base.num_terminals else 0 for s in range(n)]
    changed = True
    while changed:
        changed = False
        for lhs, rhs in base.rules:
            acc = last[lhs]
            for x in reversed(rhs):
                acc |= last[x]
                if x not in base.nullable:
                    break
            if acc != last[lhs]:
                last[lhs] = acc
                changed = True
    base._last_of = last  # type: ignore[attr-defined]  # (same answer on every thread)
    return last


def _reach(base: _Base, rules: list[Rule], restrict: dict[int, int]
           ) -> dict[int, dict[int, tuple[bool, bool, bool]]]:
    """Per restriction set: the quotient symbols that derive one of its markers, each with
    whether some terminal, and some terminal outside the set, can stand last before it
    inside the symbol, and whether nothing may (the flags only turn on: each rule is looked
    at again at most three times)."""
    last, nullable = _last_of(base), base.nullable

    def last_plus(seq: tuple[int, ...]) -> int:
        acc = 0
        for x in reversed(seq):
            acc |= last[x]
            if x not in nullable:
                break
        return acc

    by_tail: dict[int, list[Rule]] = {}
    for rule in rules:
        by_tail.setdefault(rule[1][-1], []).append(rule)
    out: dict[int, dict[int, tuple[bool, bool, bool]]] = {}
    for allowed in set(restrict.values()):
        got: dict[int, tuple[bool, bool, bool]] = {}
        work: list[Rule] = []
        for m, a in restrict.items():
            if a == allowed:
                work += by_tail.get(m, ())
        while work:
            lhs, rhs = work.pop()
            tail, head = rhs[-1], rhs[:-1]
            below = got.get(tail)
            if below is None:  # a marker's rule
                below = (False, False, True)
            inner, bad, pend = below
            if pend:
                lp = last_plus(head)
                inner, bad = inner or lp != 0, bad or (lp & ~allowed) != 0
                pend = all(x in nullable for x in head)
            old = got.get(lhs)
            new = (inner, bad, pend) if old is None else (
                old[0] or inner, old[1] or bad, old[2] or pend)
            if new != old:
                got[lhs] = new
                work += by_tail.get(lhs, ())
        out[allowed] = got
    return out


def restrict_last(base: _Base, rules: list[Rule], quotient: set[int], markers: set[int],
                  restrict: dict[int, int], start: int, next_id: int, names: list[str]
                  ) -> tuple[list[Rule], int, int] | None:
    """``rules`` (the quotient's, start symbol ``start``) rewritten so that the last parser
    terminal before each marker of ``restrict`` is in its set (or there is none); the new
    rules, start symbol and symbol count; None where no rule can break it. ``quotient``: the
    quotient's own symbols (left-hand sides), ``markers``: all its markers; ``names`` gets
    the new symbols' names."""
    reach = _reach(base, rules, restrict)
    # a set every terminal that can stand before its markers is in needs nothing
    live = {a: got for a, got in reach.items() if got.get(start, (False, False, False))[1]}
    if not live:
        return None
    restrict = {m: a for m, a in restrict.items() if a in live}
    sets = sorted(live)
    rid = {m: sets.index(a) for m, a in restrict.items()}
    inside = [live[a] for a in sets]
    last, nullable, n_t = _last_of(base), base.nullable, base.num_terminals
    ids: dict[tuple[int, int, bool], int] = {}  # (symbol, restriction, pending) → id
    out: list[Rule] = []
    todo: list[tuple[int, int]] = []

    def sym(x: int, r: int, pending: bool) -> int:
        nonlocal next_id
        key = (x, r, pending)
        j = ids.get(key)
        if j is None:
            j = ids[key] = next_id
            next_id += 1
            names.append(f"{names[x]}|{r}{'?' if pending else ''}")
            if x not in quotient:
                todo.append((x, r))
        return j

    def ending(seq: tuple[int, ...], r: int) -> list[tuple[int, ...]]:
        """``seq``'s ways to derive a nonempty string ending in ``sets[r]``."""
        allowed = sets[r]
        ways: list[tuple[int, ...]] = []
        for i in range(len(seq) - 1, -1, -1):
            x = seq[i]
            if x < n_t:
                if (allowed >> x) & 1:
                    ways.append((*seq[:i], x))
            elif x not in nullable and not last[x] & ~allowed:
                ways.append(seq[: i + 1])
            elif last[x] & allowed:
                ways.append((*seq[:i], sym(x, r, False)))
            if x not in nullable:
                break
        return ways

    def nullable_all(seq: tuple[int, ...]) -> bool:
        return all(x in nullable for x in seq)

    for lhs, rhs in rules:
        tail = rhs[-1]
        head = rhs[:-1]
        if tail in restrict:  # a marker's rule
            r = rid[tail]
            out += [(sym(lhs, r, False), (*w, tail)) for w in ending(head, r)]
            if nullable_all(head):
                out.append((sym(lhs, r, True), (tail,)))
            continue
        if tail not in quotient:
            out.append((lhs, rhs))  # (an unrestricted marker's rule)
            continue
        out.append((lhs, rhs))
        for r in range(len(sets)):
            below = inside[r].get(tail)
            if below is None:
                continue
            if below[0]:
                out.append((sym(lhs, r, False), (*head, sym(tail, r, False))))
            if not below[2]:
                continue
            out += [(sym(lhs, r, False), (*w, sym(tail, r, True))) for w in ending(head, r)]
            if nullable_all(head):
                out.append((sym(lhs, r, True), (sym(tail, r, True),)))
    while todo:
        y, r = todo.pop()
        j = ids[(y, r, False)]
        for ri in base.by_lhs.get(y, ()):
            out += [(j, w) for w in ending(base.rules[ri][1], r)]
    new_start = next_id
    next_id += 1
    names.append(f"{names[start]}|last")
    out.append((new_start, (start,)))
    for r in range(len(sets)):
        for pending in (False, True):
            if (start, r, pending) in ids:
                out.append((new_start, (ids[(start, r, pending)],)))
    return _productive(out, len(base.symbols), markers), new_start, next_id


def _productive(rules: list[Rule], n_orig: int, markers: set[int]) -> list[Rule]:
    """``rules`` less those that mention a new symbol no rule derives a string from
    (original symbols and markers derive some)."""
    good = free_closure(rules, [*range(n_orig), *markers])
    return [(lhs, rhs) for lhs, rhs in rules if lhs in good and all(x in good for x in rhs)]
