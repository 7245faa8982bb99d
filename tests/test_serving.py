"""ConstraintPool: worker processes fill the same bitmask rows as constraints in this process.

The oracle is the single-process runtime: every row the pool writes is compared, bit for bit
(packed independently by ``pack_bitmask_numpy``), with ``allowed()`` of a constraint built here
and walked along the same tokens.
"""

from __future__ import annotations

import numpy as np
import pytest

import gramask
from gramask.serving import ConstraintPool, RequestError

from ._support import compiled, hf_tokenizer

torch_mod = pytest.importorskip("gramask.torch")

# (grammar key, prefix, middle the generation spells, suffix, max_tokens)
REQUESTS = [
    ("python", "def f(x):\n    y = ", "x * 2 + 1", "\n    return y\n\nprint(f(1))\n", None),
    ("python", "import os\n\nfor name in os.listdir('.'):\n    ", "print(name.upper())\n",
     None, None),
    ("python", "def g(a, b):\n    return ", "a + b", "\n", 12),
    ("python", "x = [", "1, 2, 3]\n", None, 24),
    ("json", '{"key": ', '[1, 2, {"a": null}]}', None, None),
    ("json", "[", 'true, "s"]', None, 16),
]


def _row(c: gramask.Constraint, words: int) -> np.ndarray:
    row: np.ndarray = torch_mod.pack_bitmask_numpy(c.allowed()[None, :], words)[0]
    return row


@pytest.fixture(scope="module")
def grammars() -> dict[str, gramask.CompiledGrammar]:
    return {"python": compiled("python", "gpt2"), "json": compiled("json", "gpt2")}


@pytest.fixture(scope="module")
def pool(grammars: dict[str, gramask.CompiledGrammar]) -> ConstraintPool:
    with ConstraintPool(grammars, workers=2, max_batch=16) as p:
        yield p  # type: ignore[misc]


def test_pool_rows_match_single_process_walks(
        pool: ConstraintPool, grammars: dict[str, gramask.CompiledGrammar]) -> None:
    encode = hf_tokenizer("gpt2")
    refs: dict[str, gramask.Constraint] = {}
    walks: dict[str, list[int]] = {}
    for i, (key, prefix, middle, suffix, budget) in enumerate(REQUESTS):
        rid = f"r{i}"
        pool.add(rid, key, prefix=prefix, suffix=suffix, max_tokens=budget)
        refs[rid] = grammars[key].constraint(prefix, suffix, budget)
        walks[rid] = [*encode(middle), grammars[key].vocab.eos_token_id]
    ids = list(refs)
    assert pool.wait_ready(ids, timeout=120)
    steps = max(len(w) for w in walks.values())
    for step in range(steps):
        live = [r for r in ids if step < len(walks[r])]
        bitmask = pool.fill(live)
        assert bitmask.shape == (len(live), pool.words) and bitmask.dtype == np.int32
        for i, rid in enumerate(live):
            np.testing.assert_array_equal(bitmask[i], _row(refs[rid], pool.words),
                                          err_msg=f"{rid} at step {step}")
            tok = walks[rid][step]
            assert refs[rid].allowed()[tok], (rid, step)
            refs[rid].advance(tok)
            pool.advance(rid, [tok])
    # every walk ended with EOS: the masks are now all zero
    assert not pool.fill(ids).any()
    for rid in ids:
        pool.remove(rid)
    assert len(pool) == 0


def test_rollback_and_rows(pool: ConstraintPool,
                           grammars: dict[str, gramask.CompiledGrammar]) -> None:
    encode = hf_tokenizer("gpt2")
    cg = grammars["python"]
    toks = encode("value = compute(1, 2)\n")
    ref = cg.constraint("", max_tokens=40)
    pool.add("rb", "python", max_tokens=40)
    pool.add("other", "json", prefix="[")
    pool.advance("rb", toks)  # several tokens at once, like a speculative draft accepted
    pool.rollback("rb", 3)
    for t in toks[:-3]:
        ref.advance(t)
    bitmask = pool.fill(["other", "rb"], rows=np.array([5, 2]))  # numpy rows are fine
    assert bitmask.shape == (pool.max_batch, pool.words)
    np.testing.assert_array_equal(bitmask[2], _row(ref, pool.words))
    np.testing.assert_array_equal(bitmask[5], _row(grammars["json"].constraint("["), pool.words))
    pool.remove("rb")
    pool.remove("other")


def test_failures_name_the_request_and_leave_the_rest(pool: ConstraintPool,
                                                      grammars: dict[str, gramask.CompiledGrammar]
                                                      ) -> None:
    pool.add("ok", "json", prefix="{")
    pool.add("bad-prefix", "json", prefix="}")
    pool.add("bad-token", "json", prefix="[")
    pool.advance("bad-token", [grammars["json"].vocab.token_id("}")])
    with pytest.raises(RequestError) as info:
        pool.fill(["ok", "bad-prefix", "bad-token"])
    err = info.value
    assert set(err.failures) == {"bad-prefix", "bad-token"}
    assert "InvalidPrefixError" in err.failures["bad-prefix"]
    assert "TokenRejected" in err.failures["bad-token"]
    assert err.bitmask is not None
    np.testing.assert_array_equal(err.bitmask[0],
                                  _row(grammars["json"].constraint("{"), pool.words))
    assert not err.bitmask[1:].any()
    for rid in ("ok", "bad-prefix", "bad-token"):
        pool.remove(rid)


def test_argument_errors(pool: ConstraintPool) -> None:
    with pytest.raises(KeyError, match="no grammar registered under the key 'sql'"):
        pool.add("x", "sql")
    with pytest.raises(TypeError, match="request id"):
        pool.add(1.5, "json")  # type: ignore[arg-type]
    pool.add("dup", "json")
    with pytest.raises(ValueError, match="already in the pool"):
        pool.add("dup", "json")
    with pytest.raises(ValueError, match="named twice"):
        pool.fill(["dup", "dup"])
    with pytest.raises(KeyError, match="not in the pool"):
        pool.advance("nope", [1])
    with pytest.raises(RequestError, match="unknown request"):
        pool.fill(["nope"])
    with pytest.raises(ValueError, match="out of range"):
        pool.fill(["dup"], rows=[pool.max_batch])
    pool.remove("dup")
    # a removed id can be added again and starts afresh
    pool.add("dup", "json", prefix="[")
    assert pool.wait_ready(["dup"], timeout=60)
    pool.remove("dup")


def test_close_stops_workers(grammars: dict[str, gramask.CompiledGrammar]) -> None:
    p = ConstraintPool({"json": grammars["json"]}, workers=1, max_batch=2)
    procs = list(p._procs)
    p.close()
    assert all(proc.poll() is not None for proc in procs)


class _Conn:
    """A pipe end whose next message is (``waiting``) or is not yet there."""

    def __init__(self, waiting: bool) -> None:
        self.waiting = waiting
        self.polls: list[float] = []

    def poll(self, timeout: float = 0.0) -> bool:
        self.polls.append(timeout)
        return self.waiting


def _collections(conn: _Conn, young: int = 0) -> list[int]:
    """The generations a worker's idle_gc collects once, with ``young`` live young objects."""
    import gc

    from gramask.serving import worker

    w = worker._Worker.__new__(worker._Worker)
    w.conn = conn  # type: ignore[assignment]
    w.idle_collections = 0
    seen: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    keep = [[] for _ in range(young)]  # tracked objects: the young generation's count
    gc.callbacks.append(note)
    try:
        w.idle_gc()
    finally:
        gc.callbacks.remove(note)
    del keep
    return seen


def test_worker_collects_only_when_no_step_is_coming() -> None:
    """A worker's collection never runs in front of a step that is waiting or about to come
    (the caller stepping back to back); it waits ``_IDLE_WAIT`` for one, then collects the
    young generation; past ``_FORCE_YOUNG`` young objects it collects anyway."""
    import gc

    from gramask.serving import worker

    was = gc.isenabled()
    gc.disable()  # as in a worker: only idle_gc collects
    try:
        busy = _Conn(waiting=True)
        assert _collections(busy) == []
        assert busy.polls == [worker._IDLE_WAIT]
        assert _collections(_Conn(waiting=False)) == [0]
        gc.collect()
        assert _collections(_Conn(waiting=True), worker._FORCE_YOUNG + 1000) == [0]
    finally:
        if was:
            gc.enable()
