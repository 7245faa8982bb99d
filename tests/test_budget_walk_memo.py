"""Budget checks memoise walks and end checks per state (fill-in-the-middle's ``_walk``, the
contextual prefix constraint's ``_walk`` and ``_complete``) and the quotient's end verdict
reads its per-lexer-state branch filter: each must give what the computation gives, on states
that differ only in the indentation carry too."""

from __future__ import annotations

import random

import gramask
from gramask.runtime.core.constraint import Constraint
from gramask.runtime.core.earley import ACCEPTS
from gramask.runtime.core.indentation import join
from gramask.runtime.core.parse_state import DEPTH, ES, PUID

from .conftest import compiled
from .test_fim_quotient_memo import _views

# blanks, line breaks and a tab: states that differ in the carry alone
_EXTRA = [b" ", b"  ", b"\n", b"\n    ", b"\t", b"):\n", b")", b")\n", b" x", b"(", b"#"]


def _same(a: object, b: object) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    assert isinstance(a, tuple) and isinstance(b, tuple)
    return len(a) == len(b) and all(
        x == y if isinstance(x, int) else x[PUID] == y[PUID] for x, y in zip(a, b, strict=True))


def _datas(c: gramask.Constraint, rng: random.Random) -> list[bytes]:
    vocab = c._vocab  # type: ignore[attr-defined]
    return [*_EXTRA, *(vocab.token_bytes(t) for t in rng.sample(range(len(vocab)), 40))]


def _with_carries(c: gramask.Constraint, views: list[tuple]) -> list[tuple]:
    """``views`` and the states after each blank run of ``_EXTRA`` from them."""
    more = [c._walk_fresh(st, d) if hasattr(c, "_walk_fresh")  # type: ignore[attr-defined]
            else Constraint._walk(c, st, d) for st in views for d in _EXTRA[:5]]
    return views + [s for s in more if not isinstance(s, int)]


def _reference_verdict(c: object, q: int, carry: int, pq: tuple) -> int:
    """FimConstraint._quotient_verdict as it read every branch for every state."""
    b, n, verdict = c._b, len(c._suffix), 0  # type: ignore[attr-defined]
    for br, marker, a in c._branches:  # type: ignore[attr-defined]
        g = c._glue_walk(q, br.k)  # type: ignore[attr-defined]
        if g is None:
            continue
        qq, reset, width = g
        if qq != 0 and br.k == n and b.accept[qq] == b.continuation_t >= 0:
            continue
        if a >= 0:
            if b.accept[qq] != a:
                continue
            p2 = b.ctx.shift(pq, marker)
            if p2 is None or p2[DEPTH] not in br.depths or not p2[ES][ACCEPTS]:
                continue
        else:
            p2 = b.lexeme_end(pq, qq, width if reset else join(carry, width), at_eof=br.k == n)
            if p2 is None or p2[DEPTH] not in br.depths:
                continue
            es = b.ctx.automaton.advance(p2[ES], marker)
            if es is None or not es[ACCEPTS]:
                continue
        if not c._tabbed and (not br.assumptions or c._holds(br, p2)):  # type: ignore[attr-defined]
            return 2
        verdict = 1
    return verdict


def test_fim_walk_memo_and_branch_filter() -> None:
    from gramask.runtime.fim import constraint as fim

    cg = compiled("python", "gpt2")
    rng = random.Random(3)
    prefix, suffix = "def f(a, b):\n    if a:\n        x = (a, ", ")\n    return b\n"
    c = cg.constraint(prefix=prefix, suffix=suffix, max_tokens=24)
    views = _with_carries(c, _views(c, rng, 8))
    c._holds = fim._holds  # type: ignore[attr-defined]
    datas = _datas(c, rng)
    verdicts = set()
    for st in views:
        for d in datas:
            fresh = c._walk_fresh(st, d)  # type: ignore[attr-defined]
            assert _same(c._walk(st, d), fresh)  # type: ignore[attr-defined]
            assert _same(c._walk(st, d), fresh)  # type: ignore[attr-defined]  # (memo hit)
            if not isinstance(fresh, int):
                v = c._quotient_verdict(*fresh[:3])  # type: ignore[attr-defined]
                assert v == _reference_verdict(c, *fresh[:3])
                verdicts.add(v)
    assert len(verdicts) > 1


def test_contextual_walk_and_end_memo() -> None:
    cg = gramask.compile(gramask.grammars.load("python", lexer="contextual"),
                         gramask.Vocabulary.bundled("gpt2"), progress=False)
    rng = random.Random(5)
    c = cg.constraint(prefix="def f(a):\n    return g(a", max_tokens=20)
    views = _with_carries(c, _views(c, rng, 8))
    datas = _datas(c, rng)
    ends = set()
    for st in views:
        for d in datas:
            fresh = Constraint._walk(c, st, d)  # type: ignore[arg-type]
            for _ in range(2):  # the second reads the memo
                assert _same(c._walk(st, d), fresh)  # type: ignore[attr-defined]
            if not isinstance(fresh, int):
                end = Constraint._complete(c, fresh)  # type: ignore[arg-type]
                assert c._complete(fresh) == end  # type: ignore[attr-defined]
                assert c._complete(fresh) == end  # type: ignore[attr-defined]
                ends.add(end)
    assert ends == {True, False}
