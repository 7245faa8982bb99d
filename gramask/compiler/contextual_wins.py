"""Terminals the parser expects that can never win a lexeme under the contextual lexer.

Under the contextual rule (:mod:`gramask.runtime.core.contextual_rule`) a lexeme is the
terminals of the allowed set ``A`` that accept it, a keyword beating the regexes it is paired
with, then only the highest priority among them. So a terminal ``t`` that the parser expects
beside a higher-priority one matching every text of ``t`` never becomes a lexeme there
(``"abc"`` beside ``T0.2: /\\w+/``): the items waiting for ``t`` can never move. Where every
way to finish the parse runs through such a shift, a token that leads there is a dead end.

:func:`lost_shifts` decides it per LR(0) state of the parse tables, once: the allowed set at
run time holds at least the state's own terminals (and its non-kernel partner's, and the
ignored ones), and a larger set only makes ``t`` lose more often — so a terminal that can win
no lexeme under that lower bound never wins wherever the state is live. It is exact about the
lexer side as far as it goes (a lexeme ``t`` wins under ``A`` ends somewhere), and
conservative about the rest (a higher-priority terminal that a keyword might beat is not
counted as beating ``t``). The runtime uses the answer to refuse Earley sets from which no
path of shifts that can happen reaches the end (:mod:`gramask.runtime.core.viability`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ..encoding import bit_indices, bits_of_rows
from ..errors import GrammarError
from ..grammar import Grammar
from .analysis import GrammarWarning
from .lark_order import contextual_cuts, cuts_matter, order_indices
from .lexer import LexerDFA
from .parse_tables import ParseTables

__all__ = ["Wins", "always_expected", "check_wins", "close_under", "contextual_order",
           "end_reach", "lexing_priorities", "lost_shifts", "reserved_maps", "terminal_threats",
           "wins"]

_T = TypeVar("_T")
# (ids of the objects) → (weak references to them, the value): a few entries, enough for
# the compile-time check and the runtime builder of one compile to share the analysis
_MEMO: dict[tuple[Any, ...], tuple[tuple[weakref.ref[Any], ...], Any]] = {}


def _memo(objs: tuple[object, ...], extra: tuple[Any, ...], make: Callable[[], _T]) -> _T:
    """``make()``, remembered while ``objs`` (compared by identity) live. The values are
    shared: callers must not change them."""
    key = tuple(id(o) for o in objs) + extra
    hit = _MEMO.get(key)
    if hit is not None and all(r() is o for r, o in zip(hit[0], objs, strict=True)):
        value: _T = hit[1]
        return value
    value = make()
    while len(_MEMO) >= 8:
        _MEMO.pop(next(iter(_MEMO)), None)
    _MEMO[key] = (tuple(weakref.ref(o) for o in objs), value)
    return value


class Wins(NamedTuple):
    """The contextual lexer's lost-shifts analysis of one grammar (:func:`wins`)."""

    priorities: list[int]  # lexing_priorities
    reserved: list[tuple[int, int]]  # keywords.reserved_pairs
    threats: dict[int, list[tuple[int, int]]]  # terminal_threats
    lost: list[int] | None  # lost_shifts


def wins(grammar: Grammar, dfa: LexerDFA, pt: ParseTables) -> Wins:
    """The lost-shifts analysis of a contextual grammar, memoised on the three objects: the
    compile-time check (:func:`check_wins`) and the runtime builder of the same compile
    share one (a loaded artifact computes it afresh)."""
    def make() -> Wins:
        from .keywords import reserved_pairs

        prio = lexing_priorities(grammar)
        nl = grammar.newline_terminal
        reserved = reserved_pairs(grammar, dfa)
        threats = _threats(dfa, prio, reserved, nl)
        lost = lost_shifts(dfa, pt, prio, reserved, grammar.reserved_keywords, nl, threats)
        return Wins(prio, reserved, threats, lost)

    return _memo((grammar, dfa, pt), (), make)


def _threats(dfa: LexerDFA, prio: list[int], reserved: Sequence[tuple[int, int]],
             nl: int) -> dict[int, list[tuple[int, int]]]:
    """:func:`terminal_threats`, memoised on ``dfa`` and the arguments (check_wins' gate
    asks it without keywords: the same question where the grammar pairs none)."""
    return _memo((dfa,), (tuple(prio), tuple(reserved), nl),
                 lambda: terminal_threats(dfa, prio, reserved, nl))


def lost_shifts(dfa: LexerDFA, pt: ParseTables, priorities: Sequence[int],
                reserved: Sequence[tuple[int, int]] = (), close: bool = False,
                nl_terminal: int = -1,
                threats: dict[int, list[tuple[int, int]]] | None = None) -> list[int] | None:
    """Per LR(0) state of ``pt``, the lexer terminals it shifts that can win no lexeme under
    any allowed set the state is in (a bit set); None where no state has one (then nothing
    changes: every bundled grammar). ``reserved``: the (keyword, regex) pairs, a keyword
    beating its regexes where both accept; ``close``: the allowed set is closed under them
    (reserved keywords, :mod:`gramask.compiler.keywords`). The indentation newline
    ``nl_terminal`` is left out (its lexeme is read as a newline, not shifted). ``threats``:
    :func:`terminal_threats` of the same arguments where the caller has it already."""
    if threats is None:
        threats = terminal_threats(dfa, priorities, reserved, nl_terminal)
    if not threats:
        return None
    nt = dfa.num_terminals
    ign = sum(1 << t for t in range(nt) if dfa.ignored[t])
    partners = reserved_maps(reserved)[0]
    fragile = sum(1 << t for t in threats)
    low, term_bits = always_expected(pt, nt)
    if not any(v & fragile for v in low):
        return None
    memo: dict[tuple[int, int], bool] = {}
    out = [0] * len(low)
    for s in range(len(low)):
        cand = term_bits[s] & fragile
        if not cand:
            continue
        a = low[s] | ign
        if close:
            a = close_under(a, partners)
        for t in bit_indices(cand):
            key = (t, a)
            lost = memo.get(key)
            if lost is None:  # every lexeme of t has a sure winner over it under a
                lost = memo[key] = all(keys & a or higher & a for keys, higher in threats[t])
            if lost:
                out[s] |= 1 << t
    return out if any(out) else None


def reserved_maps(reserved: Sequence[tuple[int, int]]) -> tuple[dict[int, int], dict[int, int]]:
    """The reserved (keyword, regex) pairs as (partners: per terminal of a pair, the
    terminals it brings into an allowed set closed under the pairs; beats: per keyword, the
    regexes it beats where both accept), each a bit set."""
    partners: dict[int, int] = {}
    beats: dict[int, int] = {}
    for s, r in reserved:
        partners[s] = partners.get(s, 0) | 1 << r
        partners[r] = partners.get(r, 0) | 1 << s
        beats[s] = beats.get(s, 0) | 1 << r
    return partners, beats


def close_under(a: int, partners: dict[int, int]) -> int:
    """The allowed set ``a`` closed under the reserved pairs (``partners`` of
    :func:`reserved_maps`): a regex brings its keywords, a keyword its regexes and theirs."""
    todo = a
    while todo:
        low = todo & -todo
        todo ^= low
        new = partners.get(low.bit_length() - 1, 0) & ~a
        a |= new
        todo |= new
    return a


def terminal_threats(dfa: LexerDFA, priorities: Sequence[int],
                     reserved: Sequence[tuple[int, int]] = (), nl_terminal: int = -1,
                     ) -> dict[int, list[tuple[int, int]]]:
    """The significant terminals that may lose every lexeme under some allowed set, each
    with, per accepting set holding it, what may beat it there: (the keywords that beat it,
    the higher-priority terminals no keyword of that set can beat). A terminal some
    accepting set of which holds nothing that could beat it is left out: it wins that lexeme
    wherever it is allowed (no terminal of a grammar without priorities or keywords is
    in)."""
    ignored = dfa.ignored
    beats = reserved_maps(reserved)[1]
    acc = np.flatnonzero(dfa.accepting.any(axis=1))
    sets = sorted(set(bits_of_rows(dfa.accepting[acc])))  # the distinct accepting sets
    threats: dict[int, list[tuple[int, int]]] = {}
    safe = 0
    for x in sets:
        kw = [k for k in bit_indices(x) if k in beats]
        removable = 0  # terminals a keyword of this set may beat (then they beat nothing)
        for k in kw:
            removable |= beats[k]
        for t in bit_indices(x):
            if ignored[t] or t == nl_terminal or safe >> t & 1:
                continue
            keys = sum(1 << k for k in kw if beats[k] >> t & 1)
            higher = sum(1 << u for u in bit_indices(x & ~removable)
                         if priorities[u] > priorities[t])
            if not keys and not higher:
                safe |= 1 << t
                threats.pop(t, None)
            else:
                threats.setdefault(t, []).append((keys, higher))
    # a terminal no state accepts (lark's order drops it wherever it could match: see
    # gramask.compiler.lark_order.contextual_cuts) loses every lexeme, to no one in particular
    for t in np.flatnonzero(~dfa.accepting.any(axis=0)).tolist():
        if not ignored[t] and t != nl_terminal:
            threats[t] = []
    return threats


def end_reach(goto_t: Sequence[dict[int, int]], goto_n: Sequence[Sequence[tuple[int, int]]],
              completed: Sequence[Sequence[int]], nonkernel: Sequence[int],
              accepting: Sequence[bool], lost: Sequence[int]) -> tuple[list[int], list[bool]]:
    """Over the LR(0) automaton without the ``lost`` shifts (per state: its terminal moves,
    nonterminal moves, completed rules, non-kernel partner, accepting): per state, the
    nonterminals an item of it can still complete (a bit set over symbols), and can it
    reach the accepting item. Both least fixpoints; a nonterminal move counts where the
    state's predictions (its partner's, or a non-kernel state's own) can derive it."""
    n = len(nonkernel)
    t_next = [[t for sym, t in goto_t[s].items() if not lost[s] >> sym & 1] for s in range(n)]
    pred = [nonkernel[s] if nonkernel[s] >= 0 else s for s in range(n)]
    comp = [sum(1 << x for x in completed[s]) for s in range(n)]
    changed = True
    while changed:
        changed = False
        for s in range(n):
            v = comp[s]
            for t in t_next[s]:
                v |= comp[t]
            derive = comp[pred[s]]
            for sym, t in goto_n[s]:
                if derive >> sym & 1:
                    v |= comp[t]
            if v != comp[s]:
                comp[s] = v
                changed = True
    reach = [bool(accepting[s]) for s in range(n)]  # (by index: a lazy table is a dict)
    changed = True
    while changed:
        changed = False
        for s in range(n):
            if reach[s]:
                continue
            derive = comp[pred[s]]
            if any(reach[t] for t in t_next[s]) or any(
                    reach[t] for sym, t in goto_n[s] if derive >> sym & 1):
                reach[s] = changed = True
    return comp, reach


def check_wins(grammar: Grammar, dfa: LexerDFA, pt: ParseTables) -> None:
    """Contextual lexer mode, at compile time: a :class:`GrammarError` where every text of
    the language needs a shift that never happens (:func:`lost_shifts`), naming the
    terminals and what beats them; a :class:`GrammarWarning` for a terminal that never wins
    where the parser expects it (masks refuse what leads only there). Nothing for a grammar
    with no priorities and no keyword that a regex can lose every lexeme to."""
    prio = lexing_priorities(grammar)
    if not (len(set(prio)) > 1 and _threats(dfa, prio, (), grammar.newline_terminal)
            ) and not _keyword_bound(grammar, dfa):
        return  # (no terminal can lose every lexeme)
    w = wins(grammar, dfa, pt)  # (memoised: the runtime builder reuses it)
    threats, lost = w.threats, w.lost
    if lost is None:
        return
    n = pt.num_states
    goto_t, goto_n, term_bits = _moves(pt, dfa.num_terminals)
    shifted = 0
    for s in range(n):
        shifted |= term_bits[s] & ~lost[s]
    ci, cl = pt.completed_indptr.tolist(), pt.completed_lhs.tolist()
    _, reach = end_reach(goto_t, goto_n, [cl[ci[s]: ci[s + 1]] for s in range(n)],
                         pt.nonkernel.tolist(), pt.accepting.tolist(), lost)
    names = [t.name for t in grammar.terminals]
    never = sorted({t for v in lost for t in bit_indices(v)} - set(bit_indices(shifted)))
    gp = [t.priority for t in grammar.terminals]
    why = "; ".join(
        (f"{names[t]} loses every lexeme to "
         + ", ".join(sorted({names[u] + (f" (priority {gp[u]})" if gp[u] > gp[t]
                                         else " (earlier in lark's order)" if prio[u] > prio[t]
                                         else " (a keyword)")
                             for keys, higher in threats[t] for u in bit_indices(keys | higher)}))
         if threats[t] else f"{names[t]} is never lexed (a terminal before it in lark's order "
         "matches first)")
        for t in (never or sorted({t for v in lost for t in bit_indices(v)}))[:4])
    src = grammar.source or "<grammar>"
    if not reach[pt.start_state]:
        raise GrammarError(
            f"{src}: the language is empty as the contextual lexer reads it: every text "
            f"needs a terminal where the parser expects it beside one that always beats it "
            f"(priorities, then keywords over the regexes matching them): {why}",
            name=names[never[0]] if never else None)
    if never:
        import warnings

        warnings.warn(
            f"{src}: terminals that never win a lexeme where the parser expects them "
            f"(contextual lexer); masks refuse what leads only to them: {why}",
            GrammarWarning, stacklevel=4)


def _keyword_bound(grammar: Grammar, dfa: LexerDFA) -> bool:
    """Might a regex lose every lexeme to keywords? Only if every text it accepts some
    string terminal accepts too (what :func:`~gramask.compiler.keywords.reserved_pairs`,
    dearer, would pair it with)."""
    if not (grammar.reserved_keywords or grammar.keywords_win):
        return False
    ts = grammar.terminals
    strings = np.array([t.is_string and not t.ignored for t in ts], dtype=bool)
    if not strings.any():
        return False
    acc = np.asarray(dfa.accepting, dtype=bool)
    with_string = np.asarray(acc[:, strings].any(axis=1), dtype=bool)
    for r, t in enumerate(ts):
        if t.is_string or t.ignored:
            continue
        mine = acc[:, r]
        if mine.any() and bool(with_string[mine].all()):
            return True
    return False


def lexing_priorities(grammar: Grammar) -> list[int]:
    """Per terminal, the priority the contextual rule ranks a lexeme's terminals by
    (:mod:`gramask.runtime.core.contextual_rule`): the grammar's, and for a Lark grammar
    with lark's order (as :func:`contextual_order` reads it) that order among equal
    priorities, so one terminal wins a lexeme, the first of the order, as in lark's lexer. A
    string folded into a regex takes the regex's place (the keyword then beats its regex,
    ``Grammar.keywords_win``, as lark's ``unless`` turns the regex's lexeme into it)."""
    prio = [t.priority for t in grammar.terminals]
    if grammar.lexer != "contextual" or not grammar.lark_order or grammar.reserved_keywords:
        return prio
    entries = order_indices(grammar.lark_order, grammar.terminal_names)
    width = len(entries) + 1
    place: dict[int, int] = {}
    for r, e in enumerate(entries):
        place[e[0]] = r
    for r, e in enumerate(entries):
        for s in e[1:]:
            place.setdefault(s, r)
    return [p * width + (width - 1 - place.get(t, width - 1)) for t, p in enumerate(prio)]


def contextual_order(grammar: Grammar, pt: ParseTables, dfa: LexerDFA) -> list[int] | None:
    """:func:`contextual_cuts` of a contextual grammar with lark's order (``Grammar.
    lark_order``), where they change the automaton ``dfa`` built without them (None: no
    cut, or another grammar: the longest lexeme). Reserved keywords (which close the
    allowed set under their pairs, unlike lark) keep the longest lexeme too."""
    if grammar.lexer != "contextual" or not grammar.lark_order or grammar.reserved_keywords:
        return None
    names = grammar.terminal_names
    ts = grammar.terminals
    n = len(ts)
    ignored = [t.ignored for t in ts]
    exempt = 0
    ind = grammar.indentation
    for name in ((ind.newline, ind.continuation) if ind is not None else ()):
        if name is not None and name in names:
            exempt |= 1 << names.index(name)
    entries = order_indices(grammar.lark_order, names)
    # every terminal competing everywhere first (no LR(0) states read): most grammars have
    # no state where a terminal accepts beside one after it in the order
    every = contextual_cuts(entries, ignored, [(1 << n) - 1], [(1 << n) - 1], exempt)
    if every is None or not cuts_matter(dfa.accepting, dfa.live, every):
        return None
    low, shifted = always_expected(pt, n)
    cuts = contextual_cuts(entries, ignored, low, shifted, exempt)
    return cuts if cuts is not None and cuts_matter(dfa.accepting, dfa.live, cuts) else None


def always_expected(pt: ParseTables, nt: int) -> tuple[list[int], list[int]]:
    """Per LR(0) state of ``pt``: (the lexer terminals below ``nt`` every Earley set holding
    it expects, a lower bound; those it shifts), each a bit set (lark's contextual order,
    :func:`gramask.compiler.lark_order.contextual_cuts`, asks which terminals come together).
    Memoised per ``pt`` (:func:`lost_shifts` asks too): shared, not to be changed."""
    def make() -> tuple[list[int], list[int]]:
        moves = _moves(pt, nt)
        return _always_expected(pt, *moves), moves[2]

    return _memo((pt,), (nt,), make)


def _moves(pt: ParseTables, nt: int
           ) -> tuple[list[dict[int, int]], list[list[tuple[int, int]]], list[int]]:
    """The CSR goto tables of ``pt`` per state: (its terminal moves, symbol → target; its
    nonterminal moves, (symbol, target); the lexer terminals, below ``nt``, it shifts, as a
    bit set)."""
    gi, gs, gt = (x.tolist() for x in (pt.goto_indptr, pt.goto_symbol, pt.goto_target))
    n, pnt = pt.num_states, pt.num_terminals
    goto_t: list[dict[int, int]] = [{} for _ in range(n)]
    goto_n: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    term_bits = [0] * n
    for s in range(n):
        for e in range(gi[s], gi[s + 1]):
            if gs[e] < pnt:
                goto_t[s][gs[e]] = gt[e]
            else:
                goto_n[s].append((gs[e], gt[e]))
            if gs[e] < nt:
                term_bits[s] |= 1 << gs[e]
    return goto_t, goto_n, term_bits


def _always_expected(pt: ParseTables, goto_t: list[dict[int, int]],
                     goto_n: list[list[tuple[int, int]]], term_bits: list[int]) -> list[int]:
    """Per LR(0) state ``u``: lexer terminals (as ``term_bits``) that every Earley set holding
    ``u`` expects, as a bit set (a least fixpoint, so a lower bound). A set holding ``u``
    holds ``u``'s non-kernel partner; for each rule ``X`` completed in ``u``, the targets of
    its origin's moves over ``X`` (whichever origin state that is: the intersection over
    them, as :func:`gramask.compiler.separable.always_after`); and what ``u`` came with: a
    kernel state is the target of a move over some symbol of a kernel state and its partner,
    which make their other targets together (``start: A B "c"`` after ``A B``: the item
    waiting for ``"c"`` and the one that takes another ``B``); a non-kernel state is some
    kernel state's partner."""
    ci, cl, nk = pt.completed_indptr.tolist(), pt.completed_lhs.tolist(), pt.nonkernel.tolist()
    n = len(nk)
    go = [{**goto_t[st], **dict(goto_n[st])} for st in range(n)]  # every move
    low = list(term_bits)
    partners = {x for x in nk if x >= 0}
    into: dict[int, list[tuple[int, ...]]] = {}  # symbol -> the groups its moves make
    entry: list[list[tuple[int, ...]]] = [[] for _ in range(n)]  # state -> groups it is in
    owners: list[list[int]] = [[] for _ in range(n)]  # non-kernel state -> its kernels
    for st in range(n):
        if st in partners:
            continue
        if nk[st] >= 0:
            owners[nk[st]].append(st)
        both = [go[st], go[nk[st]] if nk[st] >= 0 else {}]
        for x in {*both[0], *both[1]}:
            group = tuple(g[x] for g in both if x in g)
            into.setdefault(x, []).append(group)
            for u in group:
                entry[u].append(group)

    def meet(groups: list[tuple[int, ...]]) -> int:
        w = -1
        for group in groups:
            v = 0
            for u in group:
                v |= low[u]
            w &= v
        return w if groups else 0

    changed = True
    while changed:
        changed = False
        for u in range(n):
            v = low[u] | (low[nk[u]] if nk[u] >= 0 else 0) | meet(entry[u])
            for x in cl[ci[u]: ci[u + 1]]:
                v |= meet(into.get(x, []))
            if owners[u]:
                w = -1
                for k in owners[u]:
                    w &= low[k]
                v |= w
            if v != low[u]:
                low[u] = v
                changed = True
    return low

