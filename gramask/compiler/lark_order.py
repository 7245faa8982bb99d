"""The basic lexer in lark's terminal order: the first terminal of the order that matches wins.

Why: lark's ``BasicLexer`` matches one ``re`` alternation of its terminals, leftmost-first
(:mod:`gramask.frontends.lark_order` says in which order): once a terminal matches a prefix of
the text, no terminal after it in the order is tried, however long its match would be
(``_T.2: "+"`` beside ``/[^\\s()]+/``: ``+0`` is ``+`` ``0``). The lexer automaton is the
product of the terminals' automata, as for the longest match (``build_lexer_dfa``), with
the cut of the leftmost-first construction (Russ Cox, "Regular Expression Matching: the
Virtual Machine Approach"; :mod:`gramask.compiler.regex_ordered` does it inside one regex)
across terminals: a product state keeps its terminals in lark's order, and where one of them
accepts, the terminals after it are dropped. Those before it live on (one of them may still
match, further on, and win). A lexeme then ends where every terminal left has died, as under
the longest match, so its winner is the first accepting terminal of its last state.

A string that lark folds into a regex (``_create_unless``) has no place in the order: its
automaton lives on while a regex it is folded into does, and where the regex wins on a
lexeme the string's pattern matches whole, the string does (the first such string in lark's
order, as lark's ``UnlessCallback`` asks them). A string the regex renames without folding it
(``"sel"i`` beside ``/[a-z]+/``: flags the regex lacks) has a place of its own too; past a cut
that drops it, its threads go on in a shadow copy of its automaton, which (like a folded
string) lives only while a regex that renames it does and never wins by its own place: the
string renames the regex's lexeme, it never lengthens it (``seL`` is ``se`` then ``L``).

lark's contextual lexer builds that basic lexer per parser state, over the terminals the state
accepts and the ``%ignore``d ones: the same order, restricted to that set. gramask's one
product automaton serves every allowed set, so it can only cut where the cut does not depend
on the set: ``t`` drops ``u`` (after it in the order) where every allowed set holding ``u``
holds ``t`` (:func:`contextual_cuts`, read off the LR(0) states by
:func:`gramask.compiler.contextual_wins.contextual_order`); where ``t`` may be absent
while ``u`` competes, ``u`` lives on, as under the longest match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..encoding import bit_indices

__all__ = ["LarkCut", "contextual_cuts", "cut_by", "cuts_matter", "order_indices"]


def order_indices(
    entries: Sequence[Sequence[str]], names: Sequence[str],
) -> list[tuple[int, ...]]:
    """``Grammar.lark_order`` by terminal index; a terminal the order does not name (none,
    from ``from_lark``) competes after every named one, in grammar order."""
    index = {n: i for i, n in enumerate(names)}
    out = [tuple(index[n] for n in e if n in index) for e in entries if e and e[0] in index]
    listed = {e[0] for e in out}
    folded = {s for e in out for s in e[1:]}
    out += [(i,) for i in range(len(names)) if i not in listed and i not in folded]
    return out


class LarkCut:
    """The cut and the winners over the product's global states (a terminal's state number
    plus its offset, as ``build_lexer_dfa`` numbers them).

    A string with a place of its own in the order that a regex before it also asks (lark's
    ``unless`` keeps a string whose flags the regex lacks in the alternation: ``"if"i``
    beside ``/i[nf]?/``) is cut as a competitor where the regex accepts, yet still asked
    whether the regex's lexeme is it: its thread goes on in a *shadow* copy
    (:meth:`add_shadows`), which competes for nothing and dies with the last regex asking
    it (``iF`` is ``i`` then a refusal, as in lark, not ``"if"i``)."""

    def __init__(self, n_terms: int, entries: Sequence[tuple[int, ...]],
                 owner: np.ndarray, final: np.ndarray) -> None:
        big = n_terms + len(entries) + 1
        rank = [big] * n_terms  # a folded string: no rank of its own
        for r, e in enumerate(entries):
            rank[e[0]] = r
        self.rank = rank
        self.big = big
        hosts: dict[int, set[int]] = {}  # a string -> the regexes that rename it
        for e in entries:  # (a ranked one's hosts keep only its shadow alive)
            for s in e[1:]:
                hosts.setdefault(s, set()).add(e[0])
        self.hosts = hosts
        self.unless = {e[0]: e[1:] for e in entries if len(e) > 1}
        self.unless_of_rank = {r: frozenset(e[1:]) for r, e in enumerate(entries) if len(e) > 1}
        self.owner: list[int] = owner.tolist()
        self.final: list[bool] = final.tolist()
        self.grank = [rank[t] for t in self.owner]  # per global state; a shadow's: big
        self.shadow_of: dict[int, int] = {}  # a renamed string's global state -> its shadow's

    def add_shadows(self, table: np.ndarray, offset: np.ndarray) -> np.ndarray:
        """``table`` with a shadow copy of each renamed string with a place of its own
        appended (its global states after every terminal's); owner and final extended."""
        renamed = sorted({s for ss in self.unless.values() for s in ss
                          if self.rank[s] < self.big})
        rows, n = [table], table.shape[0]
        for s in renamed:
            lo, hi = int(offset[s]), int(offset[s + 1])
            block = table[lo:hi]
            rows.append(np.where(block >= 0, block - lo + n, -1))
            for g in range(lo, hi):
                self.shadow_of[g] = n + g - lo
                self.owner.append(s)
                self.final.append(self.final[g])
                self.grank.append(self.big)
            n += hi - lo
        return np.concatenate(rows) if len(rows) > 1 else table

    def cut(self, key: tuple[int, ...]) -> tuple[int, ...]:
        """A successor set of global states without the threads lark would not try."""
        owner, final, grank, big = self.owner, self.final, self.grank, self.big
        best = min((grank[g] for g in key if final[g]), default=big)
        if best < big:  # (the strings the first accepting regex becomes stay, to be asked)
            keep = self.unless_of_rank.get(best, ())
            shadow = self.shadow_of
            key = tuple(sorted(
                g if grank[g] <= best or grank[g] == big else shadow[g]
                for g in key if grank[g] <= best or grank[g] == big or owner[g] in keep))
        if self.hosts:
            present = {owner[g] for g in key if grank[g] < big}
            key = tuple(g for g in key if grank[g] < big or owner[g] not in self.hosts
                        or self.hosts[owner[g]] & present)
        return key

    def winner(self, key: Sequence[int]) -> int:
        """The terminal a lexeme ending in product state ``key`` is (-1: none)."""
        owner, final, grank, big = self.owner, self.final, self.grank, self.big
        acc = {owner[g] for g in key if final[g]}
        ranked = [owner[g] for g in key if final[g] and grank[g] < big]
        if not ranked:
            return -1
        w: int = min(ranked, key=self.rank.__getitem__)
        for s in self.unless.get(w, ()):
            if s in acc:
                return s
        return w


def contextual_cuts(entries: Sequence[tuple[int, ...]], ignored: Sequence[bool],
                    low: Sequence[int], shifted: Sequence[int], exempt: int = 0,
                    ) -> list[int] | None:
    """Per terminal, the terminals its accepting drops in the contextual lexer, each a bit
    set (None: none). ``entries``: :func:`order_indices`; ``low``, ``shifted``: per LR(0)
    state, the terminals every Earley set holding it expects and those it shifts
    (:func:`gramask.compiler.contextual_wins.always_expected`). ``t`` drops ``u`` where ``u``
    comes after ``t`` in lark's order and every allowed set holding ``u`` holds ``t`` (``t``
    ``%ignore``d, or expected wherever a state shifting ``u`` is live), so lark's lexer of
    that set would drop it too. A string folded into a regex (no rank of its own, or in the
    ``unless`` list of ``t``) and the ``exempt`` terminals (the indentation newline) neither
    drop nor are dropped."""
    n = len(ignored)
    ign = sum(1 << t for t in range(n) if ignored[t])
    need = [-1] * n  # per terminal u: the terminals every allowed set holding u holds
    for s, bits in enumerate(shifted):
        for u in bit_indices(bits):
            need[u] &= low[s] | ign
    earlier = 0  # the ranked terminals before the current entry
    cuts = [0] * n
    for e in entries:
        u = e[0]
        by = earlier & (ign if ignored[u] else need[u]) & ~exempt
        if not exempt >> u & 1:
            for t in bit_indices(by):
                cuts[t] |= 1 << u
        earlier |= 1 << u
    for e in entries:  # (a string the regex's lexeme becomes stays, to be asked)
        for s in e[1:]:
            cuts[e[0]] &= ~(1 << s)
    return cuts if any(cuts) else None


def cuts_matter(accepting: np.ndarray, live: np.ndarray, cuts: Sequence[int]) -> bool:
    """Does a state of the automaton built without ``cuts`` (its ``accepting`` and ``live``
    matrices) hold a terminal accepting beside one it drops? If not, the cut changes
    nothing."""
    for t, c in enumerate(cuts):
        if not c:
            continue
        rows = accepting[:, t]
        if not rows.any():
            continue
        cols = bit_indices(c)
        if bool(live[rows][:, cols].any()):
            return True
    return False


def cut_by(cuts: Sequence[int], owner: np.ndarray, final: np.ndarray,
           ) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """The successor cut of :func:`contextual_cuts` over global states (as
    :meth:`LarkCut.cut`): the threads of the terminals an accepting one drops go."""
    owner_l: list[int] = owner.tolist()
    final_l: list[bool] = final.tolist()

    def cut(key: tuple[int, ...]) -> tuple[int, ...]:
        drop = 0
        for g in key:
            if final_l[g]:
                drop |= cuts[owner_l[g]]
        if not drop:
            return key
        return tuple(g for g in key if not drop >> owner_l[g] & 1)
    return cut
