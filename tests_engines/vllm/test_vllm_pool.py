"""The vLLM processor with ``workers`` > 0: the constraints live in a ConstraintPool's worker
processes (gramask.integrations.pool_rows), through a real vLLM engine. Outputs must parse,
exactly as with the in-process processor (test_vllm_engine.py)."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM engine tests run in their own venv: tests_engines/run")

from test_vllm_engine import generated, params

from gramask.integrations.vllm import GramaskLogitsProcessor


class PooledProcessor(GramaskLogitsProcessor):  # type: ignore[misc]
    workers = 2


@pytest.fixture(scope="module")
def pooled_llm(tiny_model: Path, llm: Any) -> Iterator[Any]:
    """A second engine whose processor fills rows from two worker processes (``llm`` is
    requested only so that the session's engine starts first and is shared as usual)."""
    from vllm import LLM

    engine = LLM(
        model=str(tiny_model), dtype="float32", max_model_len=1024, max_num_seqs=16,
        enforce_eager=True, seed=0, logits_processors=[PooledProcessor],
    )
    yield engine
    del engine


def test_pooled_prefix_fim_and_json_outputs_parse(pooled_llm: Any,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    cases = [
        ("def f(x):\n    return ", None),
        ("def f(x):\n    y = ", "\n    return y\n"),
        ("total = 0\nfor i in range(10):\n    total += ", "\nprint(total)\n"),
    ]
    reqs = [params(n=2, seed=20 + i, grammar="python", prefix=p, suffix=s, max_tokens=32)
            for i, (p, s) in enumerate(cases)]
    reqs.append(params(n=2, seed=30, grammar="json", max_tokens=24))
    reqs.append(params(seed=31, grammar="python", prefix="def )", max_tokens=8))
    outs = pooled_llm.generate([p for p, _ in cases] + ["json:", "bad:"], reqs, use_tqdm=False)
    lengths = []
    for (p, s), out in zip(cases, outs, strict=False):
        for comp in out.outputs:
            ast.parse(p + generated(comp) + (s or ""))
            lengths.append(len(comp.token_ids))
    for comp in outs[3].outputs:
        json.loads(generated(comp))
    assert generated(outs[4].outputs[0]) == ""
    assert "InvalidPrefixError" in caplog.text
    assert max(lengths) > 1
    # the pooled processor did the work (not the entry point's in-process one)
    active = [ref() for ref in GramaskLogitsProcessor._claimed.values()]
    assert any(isinstance(p, PooledProcessor) and p._pool is not None for p in active)


def test_pooled_json_schema_requests_compile_in_the_workers(pooled_llm: Any) -> None:
    """JSON Schemas a request carries are compiled by the pool's workers (not in the engine's
    process, not written to the disk cache); the budget keeps the output whole."""
    schemas = [{"type": "object", "properties": {name: {"type": kind}}, "required": [name],
                "additionalProperties": False}
               for name, kind in (("ok", "boolean"), ("n", "integer"))]
    reqs = [params(n=2, seed=40 + i, grammar={"json_schema": s}, max_tokens=16)
            for i, s in enumerate(schemas)]
    outs = pooled_llm.generate(["a:", "b:"], reqs, use_tqdm=False)
    for (name, kind), out in zip((("ok", bool), ("n", int)), outs, strict=True):
        for comp in out.outputs:
            data = json.loads(generated(comp))
            assert list(data) == [name] and type(data[name]) is kind
