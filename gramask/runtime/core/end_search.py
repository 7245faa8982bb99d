"""The search both dead-end checks run (basic mode: :mod:`gramask.runtime.core.end_conditions`;
contextual mode: :mod:`gramask.runtime.core.contextual_ends`): from a pair (parser state,
lexeme end), breadth first over the pairs the next lexemes lead to, until one whose parser
state may finish. Each check supplies only its step; the memo, the limit and the giving up
are the same for both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...errors import LimitExceededError
from .parse_state import PUID

if TYPE_CHECKING:
    from .parse_state import ParserContext, PState

__all__ = ["LIMIT", "EndSearch", "Steps"]

LIMIT = 500  # pairs (parser state, end) one search may meet before it gives up

# a step from the pair ``(p, end)``: the pairs the next lexemes lead to, None where the text
# may be taken as completable without searching on (a lexeme the search does not follow);
# iterating it may raise LimitExceededError (a parse too large to search through)
Steps = Callable[["PState", int], Iterable["tuple[PState, int] | None"]]


class EndSearch:
    """The search and its verdicts, kept per parser context (fill-in-the-middle's quotient
    has its own parser states)."""

    __slots__ = ("_memo", "gave_up")

    def __init__(self) -> None:
        # (context, its (parser state id, end) → verdict)
        self._memo: dict[int, tuple[ParserContext, dict[tuple[int, int], bool]]] = {}
        self.gave_up = 0  # searches that gave up (their tokens were allowed)

    def next_bytes(self, end: int) -> int:
        """The bytes that may come next after a lexeme end ``end`` (a bit set; the
        contextual search's ends are those bit sets)."""
        return end

    def search(self, ctx: ParserContext, p: PState, end: int, steps: Steps) -> bool:
        """Can the text be completed from parser state ``p`` after a lexeme end ``end``,
        taking ``steps``? (True also where the search gives up.)"""
        held = self._memo.get(id(ctx))
        if held is None:
            if len(self._memo) > 8:
                self._memo.clear()
            held = self._memo[id(ctx)] = (ctx, {})  # (holds ctx: its id stays its own)
        memo = held[1]
        key = (p[PUID], end)
        got = memo.get(key)
        if got is not None:
            return got
        # breadth first (the shortest completions first), each pair checked as it is met:
        # a search stops as soon as a pair it queues may finish, not after expanding the
        # rest of that pair's level. What it meets, and so when it gives up, is unchanged:
        # a verdict is False only where every pair reachable was met (at most LIMIT), and
        # then both orders meet them all
        queue = deque([(p, end)])
        seen = {key}
        parent: dict[tuple[int, int], tuple[int, int]] = {}
        hit: tuple[int, int] | None = key if ctx.finish_after(p, self.next_bytes(end)) else None
        found = hit is not None
        while queue and not found:
            p1, e1 = queue.popleft()
            key1 = (p1[PUID], e1)
            step = steps(p1, e1)
            try:
                for nxt in step:
                    if nxt is None:
                        found, hit = True, key1
                        break
                    key2 = (nxt[0][PUID], nxt[1])
                    if key2 in seen:
                        continue
                    seen.add(key2)
                    parent[key2] = key1
                    if memo.get(key2) or ctx.finish_after(nxt[0], self.next_bytes(nxt[1])):
                        found, hit = True, key2
                        break
                    if len(seen) > LIMIT:
                        self.gave_up += 1
                        found = True
                        break
                    queue.append(nxt)
            except LimitExceededError:  # a parse too large to search through
                self.gave_up += 1
                found, hit = True, None
        if len(memo) > 100_000:
            memo.clear()
        if found:
            memo[key] = True
            # the pairs on the way to one that completes complete too (not where it gave up)
            while hit is not None:
                memo[hit] = True
                hit = parent.get(hit)
        else:  # the search was complete: nothing it met can be completed
            for k in seen:
                memo[k] = False
        return found
