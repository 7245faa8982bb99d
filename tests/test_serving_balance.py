"""How a ConstraintPool spreads requests over its workers: by measured cost per step."""

from __future__ import annotations

import pytest

from gramask.serving import ConstraintPool
from gramask.serving.balance import CostTable

from ._support import compiled


def test_new_request_goes_to_the_cheapest_worker() -> None:
    t = CostTable()
    owner = {"a": 0, "b": 1, "c": 1}
    key_of = {"a": "py", "b": "py", "c": "py"}
    assert t.pick(2, {}, {}, "py") == 0  # nothing there: the lowest index
    assert t.pick(2, {"a": 0}, key_of, "py") == 1  # nothing measured: the fewest requests
    t.measured([("a", 0.010)], owner)
    t.measured([("b", 0.001), ("c", 0.002)], owner)
    assert t.pick(2, owner, key_of, "py") == 1  # 3 ms beside 10 ms, though two requests
    t.measured([("a", 0.002)], owner)  # a moving average, not the last step alone
    assert t.cost["a"] == pytest.approx(0.010 + 0.25 * (0.002 - 0.010))
    t.measured([("gone", 5.0)], owner)  # removed while its step ran: not kept
    assert "gone" not in t.cost


def test_unmeasured_requests_count_as_their_grammars_mean() -> None:
    t = CostTable()
    owner = {"a": 0, "b": 1, "c": 1, "j": 0}
    key_of = {"a": "py", "b": "py", "c": "py", "j": "json"}
    t.measured([("a", 0.004), ("b", 0.001), ("j", 0.0001)], owner)
    # c (py, unmeasured) counts as py's mean, 2.5 ms: worker 1 expects 3.5 ms, worker 0 4.1
    assert t.pick(2, owner, key_of, "py") == 1
    t.forget("a")
    del owner["a"]
    assert t.pick(2, owner, key_of, "py") == 0


def test_pool_measures_each_filled_request() -> None:
    cg = compiled("json", "gpt2")
    with ConstraintPool({"json": cg}, workers=2) as pool:
        for r in ("a", "b", "c"):
            pool.add(r, "json", prefix="[1, ")
        pool.fill(["a", "b"])
        costs = pool._costs.cost
        assert set(costs) == {"a", "b"}
        assert all(s > 0 for s in costs.values())
        pool.remove("a")
        assert set(costs) == {"b"}
