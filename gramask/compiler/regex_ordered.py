r"""Leftmost-first determinisation: a Lark terminal's lexemes end where Python's ``re`` ends them.

Why: lark's lexers match a terminal with ``re``, which backtracks. It tries alternatives in
their order, a greedy repeat one more copy before leaving it and a lazy one leaving first, and
the match is the first path that reaches the pattern's end. That is not the longest match of
the regex's language, nor always the shortest: lark's ``common.C_COMMENT``
(``"/*" /(.|\n)*?/ "*/"``) ends at its first ``*/``; lark.lark's ``REGEXP``
(``/\/(\\\/|\\\\|[^\/])+?\/[imslux]*/``) reads the ``\/`` of ``/\//`` as its escape, its
first alternative, and ends after the second ``/`` (the shortest match ends after the first);
``(?:a|ab)c?`` ends ``abc`` after ``a``.

The construction is the one RE2 and Rust's regex use for leftmost-first matching (Russ Cox,
"Regular Expression Matching: the Virtual Machine Approach", 2009): NFA threads kept in
priority order (``re``'s order of trying them); a thread that reaches the end records a
match at this point and cuts off the threads behind it, which ``re`` would only try had this
one failed. A DFA state is the ordered list of live threads and whether a match ended here;
``re.match``'s end is the last match recorded before the list empties. So the DFA's language
is the texts that ``re.match`` matches whole, and the longest match over it (a lexer's) ends
where ``re.match`` ends, for every mix of lazy and greedy repeats and alternatives.

``re``'s zero-width protection is kept too: after an optional copy of a repeat that matched
nothing, ``re`` takes no further copy and goes on after the repeat (sre's ``last_ptr``), where
a plain thread list would drop the path (``(?:|a)*`` matches nothing in ``re``, ``aaa`` in
RE2). Within one epsilon closure (one text position) a thread remembers the repeats whose
current copy began at this position; a node is visited once per such set.
"""

from __future__ import annotations

from .regex_nfa import ByteNFA

__all__ = ["OrderedSubsets"]

# a state: (the live threads' nodes with moves, in priority order; a match ended here)
State = tuple[tuple[int, ...], bool]
_NONE: frozenset[int] = frozenset()


class OrderedSubsets:
    """The states and moves of the leftmost-first DFA of an NFA built with ``first_match``
    (:func:`~gramask.compiler.regex_nfa.build_byte_nfa`), over symbol classes: ``cut_index``
    numbers the class that starts at each end of a move's range, ``n_cls`` classes in all.
    States are numbered by :func:`~gramask.compiler.regex_bytes.explore`."""

    def __init__(self, nfa: ByteNFA, cut_index: dict[int, int], n_cls: int) -> None:
        self.nfa = nfa
        self.n_cls = n_cls
        # each node's moves as (first class, class after the last, target)
        self.spans = [[(cut_index[lo], cut_index[hi + 1], t) for lo, hi, t in ms]
                      for ms in nfa.moves]
        self._memo: dict[tuple[int, ...], State] = {}

    def start(self) -> State:
        return self.closure((0,))

    @staticmethod
    def is_final(state: State) -> bool:
        return state[1]

    def successors(self, state: State) -> list[State | None]:
        """The state after each class (None: no thread lives on). Each thread's moves are
        disjoint (one class or its UTF-8 trie), so a class sends it to one node at most;
        the targets keep the threads' order."""
        threads = state[0]
        row: list[State | None] = [None] * self.n_cls
        if not threads:
            return row
        spans = self.spans
        bounds = sorted({x for th in threads for a, b, _ in spans[th] for x in (a, b)})
        pos = {x: i for i, x in enumerate(bounds)}
        segs: list[list[int]] = [[] for _ in range(len(bounds) - 1)]
        for th in threads:
            for a, b, t in spans[th]:
                for k in range(pos[a], pos[b]):
                    segs[k].append(t)
        memo = self._memo
        for k, targets in enumerate(segs):
            if targets:
                key = tuple(targets)
                got = memo.get(key)
                if got is None:
                    got = memo[key] = self.closure(key)
                if got[0] or got[1]:
                    a, b = bounds[k], bounds[k + 1]
                    row[a:b] = [got] * (b - a)
        return row

    def closure(self, targets: tuple[int, ...]) -> State:
        """The threads that ``targets`` (in priority order) reach through epsilon moves, in
        ``re``'s order of preference, up to the first that reaches the end (a match here:
        the threads behind it are cut). A thread carries the repeats whose current copy
        began in this closure; at a node that decides a further copy (``nfa.checks``), one
        that did goes on past the repeat, as ``re`` does."""
        nfa = self.nfa
        eps, moves, final = nfa.eps, nfa.moves, nfa.final
        enters, exits, checks = nfa.enters, nfa.exits, nfa.checks
        seen: set[tuple[int, frozenset[int]]] = set()
        taken: set[int] = set()
        out: list[int] = []
        stack = [(t, _NONE) for t in reversed(targets)]
        while stack:
            node, began = stack.pop()
            if began and node in exits:
                began = began - {exits[node]}
            if node in enters:
                began = began | {enters[node]}
            key = (node, began)
            if key in seen:
                continue
            seen.add(key)
            if node == final:
                return tuple(out), True
            if moves[node]:  # (then no epsilon moves; what it began no longer matters)
                if node not in taken:
                    taken.add(node)
                    out.append(node)
                continue
            nxt = eps[node]
            check = checks.get(node)
            if check is not None and check[0] in began:
                nxt = [check[1]]  # a copy that matched nothing: no further one
            stack.extend((t, began) for t in reversed(nxt))
        return tuple(out), False
