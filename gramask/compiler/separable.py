"""Which terminals can start right after a lexeme, as the greedy lexer splits text.

The greedy lexer (longest match, no backtracking: docs/semantics.md) ends a lexeme only where
the next byte kills it. So a lexeme that ends in lexer state ``q`` can be followed only by a
lexeme whose first byte kills ``q`` — or by ignored lexemes (blanks, comments) first, each
ended the same way. With ``T0: /[a-z]+/`` and ``T2: "ba"`` no lexeme of T2 can ever follow
one of T0 (``ab`` + ``ba`` is one T0), and with ``A: /[a-z]+|[0-9]+/``, ``B: "b"``, B can
follow an A of digits but not one of letters.

:func:`lexeme_next` gives, per accepting state, the significant terminals that can begin the
next lexeme; :func:`all_separable` says whether every terminal can start after every end (then
nothing more is asked: every bundled grammar); :func:`dead_terminals` joins it with the
terminals the grammar puts next (:func:`terminal_follows`) for the compile-time answer;
:class:`Adjacency` is the whole relation, an automaton over lexeme ends that the runtime
searches together with the parser (:mod:`gramask.runtime.core.end_conditions`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..encoding import bits_of_rows
from ..grammar import Grammar
from .lexer import LexerDFA
from .parse_tables import ParseTables
from .reach_back import BITS, ReverseEdges, reach_back

__all__ = ["Adjacency", "adjacency", "all_separable", "contextual_separable", "dead_terminals",
           "follows_separable", "ignored_chains_separable",
           "lexeme_next", "needs_end_search", "next_alive_of", "next_of", "terminal_follows"]


def next_of(dfa: LexerDFA) -> dict[int, int]:
    """:func:`lexeme_next` of ``dfa``, computed once per automaton (the compiler's check and
    the runtime built on the same automaton share it). Read only."""
    got = dfa._next
    if got is None:
        got = dfa._next = lexeme_next(dfa)
    return got


def next_alive_of(dfa: LexerDFA) -> dict[int, int]:
    """``lexeme_next(dfa, alive=True)``, once per automaton (as :func:`next_of`)."""
    got = dfa._next_alive
    if got is None:
        got = dfa._next_alive = lexeme_next(dfa, alive=True)
    return got


def adjacency(dfa: LexerDFA) -> Adjacency:
    """:class:`Adjacency` of ``dfa``, built once per automaton (see :func:`next_of`)."""
    got = dfa._adjacency
    if not isinstance(got, Adjacency):
        got = dfa._adjacency = Adjacency(dfa)
    return got


def needs_end_search(grammar: Grammar, dfa: LexerDFA, pt: ParseTables) -> bool:
    """Does the grammar need the basic lexer mode's dead-end search? Not where every
    terminal can start after every end (:func:`all_separable`: every bundled grammar), nor
    where every terminal the grammar puts after a lexeme can start after one of the ends the
    lexeme can still reach (:func:`follows_separable`). The one answer for the compiler
    (which splits the end classes by :class:`Adjacency` where it is yes) and the runtime
    (which then searches: :mod:`gramask.runtime.core.end_conditions`). In the contextual
    mode (nothing split; the runtime searches where it is yes) the test is
    :func:`contextual_separable`. Both read the parse tables ``pt`` (what the parser expects
    after each terminal)."""
    nl, nxt = grammar.newline_terminal, next_of(dfa)
    if grammar.lexer == "contextual" and not ignored_chains_separable(dfa, nl):
        return True
    if all_separable(dfa, nxt, nl):
        return False
    follows = terminal_follows(grammar)[0]
    if grammar.lexer == "contextual":
        return not contextual_separable(dfa, follows, nl, pt)
    return not follows_separable(dfa, nxt, follows, nl, pt)


def always_after(pt: ParseTables, num_terminals: int) -> list[int]:
    """Per lexer terminal ``a``: the terminals the parser expects after every ``a`` (a bit
    set). An Earley set holding LR(0) state ``t`` expects ``t``'s terminal moves and its
    non-kernel partner's, and, for each rule ``X`` completed in ``t``, those of the state
    its origin moves to over ``X`` (whichever state of the origin that is: their
    intersection); a least fixpoint. After ``a``: the intersection over ``a``'s moves."""
    gi, gs, gt = (x.tolist() for x in (pt.goto_indptr, pt.goto_symbol, pt.goto_target))
    ci, cl, nk = pt.completed_indptr.tolist(), pt.completed_lhs.tolist(), pt.nonkernel.tolist()
    n = len(gi) - 1
    moves = [0] * n
    go: list[dict[int, int]] = [{} for _ in range(n)]
    for st in range(n):
        for e in range(gi[st], gi[st + 1]):
            go[st][gs[e]] = gt[e]
            if gs[e] < num_terminals:
                moves[st] |= 1 << gs[e]
    partners = {x for x in nk if x >= 0}
    # symbol -> per kernel state of a set (its non-kernel partner is there too): the
    # targets of their moves over it, all in the set the move makes
    into: dict[int, list[tuple[int, ...]]] = {}
    for st in range(n):
        if st in partners:
            continue
        both = [go[st], go[nk[st]] if nk[st] >= 0 else {}]
        for x in {*both[0], *both[1]}:
            into.setdefault(x, []).append(tuple(g[x] for g in both if x in g))
    known = [moves[t] | (moves[nk[t]] if nk[t] >= 0 else 0) for t in range(n)]
    full = (1 << num_terminals) - 1

    def after(x: int) -> int:
        w = full if x in into else 0
        for group in into.get(x, ()):
            v = 0
            for u in group:
                v |= known[u]
            w &= v
        return w

    changed = True
    while changed:
        changed = False
        for t in range(n):
            v = known[t]
            for x in cl[ci[t]: ci[t + 1]]:
                v |= after(x)
            if v != known[t]:
                known[t] = v
                changed = True
    return [after(a) for a in range(num_terminals)]


def contextual_separable(dfa: LexerDFA, follows: Sequence[int | None],
                         nl_terminal: int, pt: ParseTables) -> bool:
    """The contextual lexer mode's cheap test (where :func:`all_separable` fails): can every
    terminal the grammar may put after a terminal ``a`` start after each end of ``a`` (or
    after an end of ``a`` the lexeme can still run on to that can)? Under any allowed set.

    The contextual lexer lexes a lexeme under the terminals its parser state allows, fewer
    than the whole lexer's: more bytes end a lexeme, never fewer, so the bytes that kill an
    end in the whole automaton are a part of those that kill it under any set. And a
    terminal that loses every lexeme to another in the whole lexer (lark's ``FIELDSEP: ","
    | ";"`` beside ``COMMA: ","``) still starts a lexeme where it is allowed: what may start
    at a byte is every terminal alive after it, not only the winners (whether the parser's
    terminal then wins its lexeme under its allowed set is not asked here: a gap
    docs/semantics.md documents). Each
    end counts for every terminal it accepts, not only the whole lexer's winner.

    With the parse tables ``pt`` (:func:`always_after`): an end of ``a`` that not every follower can start
    after is still no dead end where a terminal ``c`` the parser always expects after ``a``
    can start after it with a lexeme that runs on to an end every follower of ``c`` can start
    after (a TOML comment, one alternative of the newline terminal ``_NL``, is followed only
    by a line break: another ``_NL``, always allowed after one)."""
    return _ends_separable(dfa, next_alive_of(dfa), dfa.accepting, follows,
                           nl_terminal, pt)


def ignored_chains_separable(dfa: LexerDFA, nl_terminal: int) -> bool:
    """The runtime's end check for an ignored lexeme (:func:`~gramask.compiler.ignored_follows
    .follows_ok`) looks one lexeme ahead and takes another ignored lexeme as a follower. That
    is exact where the ignored lexemes the next byte may start lead on to every significant
    terminal (blanks after a comment); not where they lead only to more of themselves (lark's
    own grammar, whose ``COMMENT`` is blanks, then ``//`` and the rest of the line: after a
    rule name only its newline terminal, which the parser refuses there, takes the line
    break, so a comment there is a dead end). Such a grammar needs the search."""
    trans, ignored = dfa.trans, dfa.ignored
    nt = dfa.num_terminals
    if dfa.num_states == 0 or not ignored.any():
        return True
    ign_bits = sum(1 << t for t in range(nt) if ignored[t])
    sig = ((1 << nt) - 1) & ~ign_bits & ~(1 << nl_terminal if nl_terminal >= 0 else 0)
    s0 = trans[0]
    ign_start = np.zeros(256, dtype=bool)  # bytes an ignored lexeme may start with
    ok = s0 >= 0
    ign_start[ok] = (dfa.live[s0[ok]] & ignored[None, :]).any(axis=1)
    ends = np.flatnonzero((dfa.accepting & ignored[None, :]).any(axis=1))
    ends = ends[(ign_start[None, :] & (trans[ends] < 0)).any(axis=1)]
    if not len(ends):
        return True
    nxt = next_alive_of(dfa)
    return all(not sig & ~nxt.get(q, 0) for q in ends.tolist())


def _ends_separable(dfa: LexerDFA, nxt: dict[int, int], acc: np.ndarray,
                    follows: Sequence[int | None], nl_terminal: int, pt: ParseTables) -> bool:
    """:func:`contextual_separable` and :func:`follows_separable`: each end ``q`` (a key of
    ``nxt``, what can start after it) counts for the terminals ``acc[q]`` (a ``(states,
    terminals)`` bool matrix); is every end of every terminal good, rescued, or one the
    lexeme can run on from to a good end of the same terminal?"""
    ignored = dfa.ignored
    n, nt = dfa.num_states, dfa.num_terminals
    sig = sum(1 << t for t in range(nt) if not ignored[t])
    bad: dict[int, list[int]] = {}  # terminal -> its ends some follower cannot start after
    good = np.zeros((n, nt), dtype=bool)
    for q, v in nxt.items():
        for a in np.flatnonzero(acc[q]).tolist():
            if ignored[a] or a == nl_terminal:
                continue
            need = follows[a] if a < len(follows) else None
            if (sig if need is None else need) & ~v:
                bad.setdefault(a, []).append(q)
            else:
                good[q, a] = True
    if not bad:
        return True
    # an end good only for some of the terminals it accepts is no safe place to run on to
    # (another one may win the lexeme there under some allowed set)
    for qs in bad.values():
        good[qs] = False
    edges = dfa._reverse or ReverseEdges(dfa.trans, by_columns=True)
    reach_good = _reach_good(dfa, good, nl_terminal, edges)
    bad = _rescued(dfa, bad, reach_good, always_after(pt, nt))
    # a bad end of ``a`` the lexeme can run on from to a good end of ``a`` (which keeps
    # ``a`` alive, so under any set that allows it)
    return all(reach_good[q] >> a & 1 for a, qs in bad.items() for q in qs)


def _reach_good(dfa: LexerDFA, good: np.ndarray, nl_terminal: int, edges: ReverseEdges
                ) -> list[int]:
    """Per state, the terminals (the newline's aside) with a good end it can run on to, as
    a bit set (64 terminals per pass)."""
    nt = dfa.num_terminals
    out = [0] * dfa.num_states
    for lo in range(0, nt, BITS):
        seeds = np.zeros(dfa.num_states, dtype=np.uint64)
        for k in range(lo, min(nt, lo + BITS)):
            if k != nl_terminal:
                seeds[good[:, k]] |= np.uint64(1 << (k - lo))
        reach = reach_back(edges, seeds)
        for x in np.flatnonzero(reach).tolist():
            out[x] |= int(reach[x]) << lo
    return out


def _rescued(dfa: LexerDFA, bad: dict[int, list[int]], reach_good: list[int],
             after: Sequence[int]) -> dict[int, list[int]]:
    """``bad`` without the ends a terminal always expected after theirs can follow, with a
    lexeme that starts at a byte that kills the end and runs on to a good end of its own
    (``reach_good``: :func:`_reach_good`; see :func:`contextual_separable`)."""
    trans = dfa.trans
    s0 = trans[0]
    out: dict[int, list[int]] = {}
    kill_memo: dict[bytes, int] = {}
    for a, qs in bad.items():
        for q in qs:
            key = np.packbits(trans[q] < 0).tobytes()
            v = kill_memo.get(key)
            if v is None:  # the terminals that start at a killing byte and reach a good end
                v = 0
                for b in np.flatnonzero((trans[q] < 0) & (s0 >= 0)).tolist():
                    v |= reach_good[int(s0[b])]
                kill_memo[key] = v
            if not v & after[a]:
                out.setdefault(a, []).append(q)
    return out


def terminal_follows(grammar: Grammar) -> tuple[list[int | None], int]:
    """Per terminal (lexer index), the terminals the grammar can put right after it, as a bit
    set (None: unknown — something without a lexeme of its own, an indenter's ``_INDENT``,
    can follow, or the terminal is the indentation newline), and the bit set of terminals
    that can end a text. Ignored terminals are left out: they may stand anywhere."""
    names = [t.name for t in grammar.terminals]
    nt = len(names)
    sym = {n: i for i, n in enumerate(names)}
    for r in grammar.rules:
        for s in (r.lhs, *r.rhs):
            sym.setdefault(s, len(sym))
    # bit sets over symbols: a terminal's FIRST is itself, END is the bit past the symbols
    n = len(sym)
    end = 1 << n
    rules = [(sym[r.lhs], [sym[s] for s in r.rhs]) for r in grammar.rules]
    is_nt = [False] * n
    for lhs, _ in rules:
        is_nt[lhs] = True
    first = [0 if is_nt[x] else 1 << x for x in range(n)]
    nullable = [False] * n
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            acc = first[lhs]
            for x in rhs:
                acc |= first[x]
                if not nullable[x]:
                    break
            else:
                if not nullable[lhs]:
                    nullable[lhs] = changed = True
            if acc != first[lhs]:
                first[lhs] = acc
                changed = True
    follow = [0] * n
    if grammar.start in sym:
        follow[sym[grammar.start]] = end
    changed = True
    while changed:
        changed = False
        for lhs, rhs in rules:
            trail = follow[lhs]
            for x in reversed(rhs):
                if trail & ~follow[x]:
                    follow[x] |= trail
                    changed = True
                trail = (first[x] | trail) if nullable[x] else first[x]
    ind = grammar.indentation
    nl = sym.get(ind.newline, -1) if ind is not None else -1
    sig = sum(1 << i for i, t in enumerate(grammar.terminals) if not t.ignored)
    others = ((1 << n) - 1) & ~((1 << nt) - 1)  # symbols with no lexeme (``_INDENT``)
    out: list[int | None] = []
    last = 0
    for i in range(nt):
        f = follow[i]
        if f & end:
            last |= 1 << i
        out.append(None if f & others or i == nl else f & sig)
    return out, last


def lexeme_next(dfa: LexerDFA, *, alive: bool = False) -> dict[int, int]:
    """Per accepting lexer state ``q``: the significant terminals whose lexeme can begin
    right after a lexeme that ended at ``q`` (first a byte that kills ``q``, maybe after
    ignored lexemes each ended alike), as a bit set. ``alive``: a terminal begins at a byte
    where it is alive after it, not only where it can win the lexeme (the contextual lexer:
    :func:`contextual_separable`)."""
    trans, accept, ignored = dfa.trans, dfa.accept, dfa.ignored
    n, nt = dfa.num_states, dfa.num_terminals
    out: dict[int, int] = {}
    if n == 0:
        return out
    ign_bits = sum(1 << t for t in range(nt) if ignored[t])
    s0 = trans[0]
    starts = [b for b in range(256) if s0[b] >= 0]
    win = bits_of_rows((dfa.live if alive else dfa.winnable)[np.maximum(s0, 0)])
    direct = [win[b] & ~ign_bits if s0[b] >= 0 else 0 for b in range(256)]
    acc = np.flatnonzero(accept >= 0)
    ign_acc = [int(s) for s in acc if ignored[accept[s]]]
    # per start byte, the ignored ends its lexeme can reach
    via: list[list[int]] = [[] for _ in range(256)]
    if ign_acc:
        edges = dfa._reverse or ReverseEdges(trans, by_columns=True)
        for lo in range(0, len(ign_acc), BITS):
            part = ign_acc[lo: lo + BITS]
            seeds = np.zeros(n, dtype=np.uint64)
            seeds[part] = np.left_shift(np.uint64(1), np.arange(len(part), dtype=np.uint64))
            reach = reach_back(edges, seeds)
            for b in starts:
                word = int(reach[s0[b]])
                while word:
                    low = word & -word
                    via[b].append(part[low.bit_length() - 1])
                    word ^= low
    # states alike in the bytes that kill them share their answer
    kills: dict[bytes, list[int]] = {}
    for q in acc.tolist():
        kills.setdefault(np.packbits(trans[q] < 0).tobytes(), []).append(q)
    kill_bytes = {k: [b for b in starts if trans[qs[0], b] < 0] for k, qs in kills.items()}
    nxt = {q: 0 for q in acc.tolist()}
    changed = True
    while changed:  # a least fixpoint over the ignored ends (blanks after blanks)
        changed = False
        for k, qs in kills.items():
            v = 0
            for b in kill_bytes[k]:
                v |= direct[b]
                for g in via[b]:
                    v |= nxt[g]
            for q in qs:
                if nxt[q] != v:
                    nxt[q] = v
                    changed = True
    out.update(nxt)
    return out


def all_separable(dfa: LexerDFA, nxt: dict[int, int], nl_terminal: int = -1) -> bool:
    """Can every significant terminal start after every end of every other (the newline
    aside)? Then nothing else need be asked (every bundled grammar: a cheap first test)."""
    sig = sum(1 << t for t in range(dfa.num_terminals) if not dfa.ignored[t])
    accept, ignored = dfa.accept, dfa.ignored
    return all(not sig & ~v for q, v in nxt.items()
               if not ignored[accept[q]] and accept[q] != nl_terminal)


def follows_separable(dfa: LexerDFA, nxt: dict[int, int], follows: Sequence[int | None],
                      nl_terminal: int, pt: ParseTables) -> bool:
    """The second cheap test, where :func:`all_separable` fails: can every terminal the
    grammar may put after a lexeme (``follows``, from :func:`terminal_follows`) start after
    each of its ends, or after an end of the same terminal the lexeme can still run on to (a
    comment held by a newline lexeme ends nowhere but after its line break)? Then no lexeme
    in progress is a dead end, and the runtime's search is not needed. With the parse
    tables ``pt``, an end is also rescued as in :func:`contextual_separable`. Each end
    counts only for the whole lexer's winner there."""
    accept = dfa.accept
    at = np.flatnonzero(accept >= 0)
    winner = np.zeros((dfa.num_states, dfa.num_terminals), dtype=bool)
    winner[at, accept[at]] = True
    return _ends_separable(dfa, nxt, winner, follows, nl_terminal, pt)


class Adjacency:
    """The greedy lexer's lexeme adjacency as a finite automaton over lexeme ends.

    A lexeme end is abstracted to its *group*: the accepting states with the same bytes that
    kill them (all that decides what may start after them). ``delta[(k, b)]``: the groups
    of the ends of the lexemes of ``b`` that can start right after an end of group ``k``
    (the next lexeme's first byte kills it; ignored lexemes may stand between); group 0 is
    the start of the text. ``ids[q]``: per lexer state, the id of ``table[id]``, the pairs
    (terminal, groups of its ends the lexeme in progress at ``q`` can still reach), for its
    significant terminals, and ``(-1, groups)`` for the ends of its ignored ones (a ``#``
    that can still become a comment: the parser then stays where it is); states alike share
    an id (0: none). A sequence of lexemes is how
    the lexer splits some text iff it is a path of ``delta`` (exactly: the lexer ends a
    lexeme only where the next byte kills it)."""

    __slots__ = ("delta", "group", "ids", "next_bytes", "table")

    def __init__(self, dfa: LexerDFA) -> None:
        n, trans, accept, ignored = dfa.num_states, dfa.trans, dfa.accept, dfa.ignored
        acc = np.flatnonzero(accept >= 0).tolist()
        sigs: dict[bytes, int] = {}
        group: dict[int, int] = {}
        self.group = np.zeros(n, dtype=np.int64)  # per state, its end group (0: none)
        for q in acc:
            group[q] = sigs.setdefault(np.packbits(trans[q] < 0).tobytes(), len(sigs) + 1)
            self.group[q] = group[q]
        kill_of = {k: np.unpackbits(np.frombuffer(sg, dtype=np.uint8)).astype(bool)
                   for sg, k in sigs.items()}
        kill_of[0] = np.ones(256, dtype=bool)  # the start of the text: any byte
        # per state, the (terminal, group) pairs of the ends it can reach (itself included)
        pairs = sorted({(int(accept[q]), group[q]) for q in acc})
        pid = {x: i for i, x in enumerate(pairs)}
        reached: list[list[int]] = [[] for _ in range(n)]
        edges = dfa._reverse or ReverseEdges(trans, by_columns=True)
        seed_of = np.array([pid[(int(accept[q]), group[q])] for q in acc], dtype=np.int64)
        acc_a = np.array(acc, dtype=np.int64)
        for lo in range(0, len(pairs), BITS):
            sel = (seed_of >= lo) & (seed_of < lo + BITS)
            seeds = np.zeros(n, dtype=np.uint64)
            np.bitwise_or.at(seeds, acc_a[sel],
                             np.left_shift(np.uint64(1), (seed_of[sel] - lo).astype(np.uint64)))
            reach = reach_back(edges, seeds)
            for x in np.flatnonzero(reach).tolist():
                word = int(reach[x])
                while word:
                    low = word & -word
                    reached[x].append(lo + low.bit_length() - 1)
                    word ^= low
        s0 = trans[0]
        # delta without the ignored lexemes first, then closed over them (a least fixpoint)
        step: dict[int, dict[int, set[int]]] = {}  # group -> terminal -> groups
        for k, kill in kill_of.items():
            out: dict[int, set[int]] = {}
            for x in np.flatnonzero(kill & (s0 >= 0)).tolist():
                for i in reached[int(s0[x])]:
                    a, g = pairs[i]
                    out.setdefault(a, set()).add(g)
            step[k] = out
        ign = [t for t in range(dfa.num_terminals) if ignored[t]]
        changed = True
        while changed:
            changed = False
            for out in step.values():
                for t in ign:
                    for g in list(out.get(t, ())):
                        for b, gs in step[g].items():
                            have = out.setdefault(b, set())
                            if not gs <= have:
                                have |= gs
                                changed = True
        self.delta: dict[tuple[int, int], tuple[int, ...]] = {
            (k, b): tuple(sorted(gs)) for k, out in step.items() for b, gs in out.items()
            if not ignored[b]}
        # per group: the bytes that may come next after its ends, ignored lexemes between
        # (a bit set; what a fill-in-the-middle suffix's first byte must be)
        kill_int = {k: int.from_bytes(np.packbits(v, bitorder="little").tobytes(), "little")
                    for k, v in kill_of.items()}
        self.next_bytes: dict[int, int] = {}
        for k, out in step.items():
            nb = kill_int[k]
            for t in ign:
                for g in out.get(t, ()):
                    nb |= kill_int[g]
            self.next_bytes[k] = nb
        self.ids = np.zeros(n, dtype=np.int64)
        self.table: list[tuple[tuple[int, tuple[int, ...]], ...]] = [()]
        index: dict[tuple[tuple[int, tuple[int, ...]], ...], int] = {(): 0}
        for x in range(n):
            per: dict[int, set[int]] = {}
            for i in reached[x]:
                a, g = pairs[i]
                per.setdefault(-1 if ignored[a] else a, set()).add(g)
            key = tuple((a, tuple(sorted(gs))) for a, gs in sorted(per.items()))
            got = index.get(key)
            if got is None:
                got = index[key] = len(self.table)
                self.table.append(key)
            self.ids[x] = got


def dead_terminals(dfa: LexerDFA, follows: Sequence[int | None], last: int,
                   nl_terminal: int = -1, *, alone: bool = False,
                   nxt: dict[int, int] | None = None) -> dict[int, int]:
    """Significant terminals none of whose lexemes can be followed by anything the grammar
    puts after them (nor end the text) → their grammar followers (all of which can never
    start after them). ``alone``: as the contextual lexer reads a lexeme lexed with only its
    own terminal and the ignored ones competing (the fewest it can have, so the most bytes
    end it: what is dead then is dead under every allowed set); any ignored lexeme that can
    start there counts as letting everything follow."""
    ends: dict[int, int] = {}
    if alone:
        ends = _next_alone(dfa)
    else:
        for q, v in (lexeme_next(dfa) if nxt is None else nxt).items():
            a = int(dfa.accept[q])
            ends[a] = ends.get(a, 0) | v
    out: dict[int, int] = {}
    for a in range(dfa.num_terminals):
        f = follows[a] if a < len(follows) else None
        if dfa.ignored[a] or a == nl_terminal or f is None or (last >> a) & 1:
            continue
        if f and not f & ends.get(a, 0) and dfa.accepting[:, a].any():
            out[a] = f
    return out


def _next_alone(dfa: LexerDFA) -> dict[int, int]:
    """Per significant terminal: :func:`dead_terminals`' followers that can start after one
    of its lexemes, with it and the ignored terminals alone in the allowed set (-1: any)."""
    trans, live, ignored = dfa.trans, dfa.live, dfa.ignored
    s0 = trans[0]
    start_live = live[np.maximum(s0, 0)] & (s0 >= 0)[:, None]  # (256, T)
    start_bits = bits_of_rows(start_live & ~ignored[None, :])
    start_ign = start_live[:, ignored].any(axis=1)
    out: dict[int, int] = {}
    for a in range(dfa.num_terminals):
        if ignored[a]:
            continue
        qs = np.flatnonzero(dfa.accepting[:, a])
        if not qs.size:
            continue
        allowed = ignored.copy()
        allowed[a] = True
        nxt = trans[qs]  # (n, 256)
        cont = (nxt >= 0) & live[np.maximum(nxt, 0)][:, :, allowed].any(axis=2)
        kills = np.flatnonzero(((~cont) & (s0 >= 0)[None, :]).any(axis=0))
        v = 0
        for b in kills.tolist():
            v |= -1 if start_ign[b] else start_bits[b]
        out[a] = v
    return out
