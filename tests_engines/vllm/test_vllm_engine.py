"""End to end through a real vLLM engine (``LLM.generate``) with GramaskLogitsProcessor:
every constrained output must parse (``ast.parse``/``json.loads`` are the oracles); requests
without gramask options must come out exactly as without gramask."""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

pytest.importorskip("vllm", reason="the vLLM engine tests run in their own venv: tests_engines/run")

import gramask

VOCAB = gramask.Vocabulary.bundled("deepseek-v4")

PREFIXES = [
    "def f(x):\n    return ",
    "import os\n\nclass A:\n    def m(self, a, b):\n        ",
    "values = [",
    "",
]


def params(n: int = 1, seed: int = 0, **gramask_options: Any) -> Any:
    """Sampling (temperature 1) with the gramask options given; the engine's length limit is
    the gramask budget, when there is one."""
    from vllm import SamplingParams

    extra = {"gramask": gramask_options} if gramask_options else None
    limit = gramask_options.get("max_tokens") or 24
    return SamplingParams(n=n, temperature=1.0, seed=seed, max_tokens=limit, extra_args=extra)


def generated(completion: Any) -> str:
    """The exact text of a completion's token ids (EOS dropped), from the vocabulary's bytes."""
    data = b"".join(VOCAB.token_bytes(t) for t in completion.token_ids if t != VOCAB.eos_token_id)
    return data.decode("utf-8")


def test_prefix_with_budget_outputs_parse(llm: Any) -> None:
    prompts = [f"# sample {i}\n" + p for i, p in enumerate(PREFIXES)]
    reqs = [params(n=3, seed=i, grammar="python", prefix=p, max_tokens=40)
            for i, p in enumerate(PREFIXES)]
    outs = llm.generate(prompts, reqs, use_tqdm=False)
    assert len(outs) == len(PREFIXES)
    lengths = []
    for p, out in zip(PREFIXES, outs, strict=True):
        assert len(out.outputs) == 3
        for comp in out.outputs:
            text = generated(comp)
            ast.parse(p + text)  # the budget (40) ends every output complete
            lengths.append(len(comp.token_ids))
    assert max(lengths) > 1  # the random model does produce code, not only EOS


def test_fill_in_the_middle_outputs_parse(llm: Any) -> None:
    cases = [
        ("def f(x):\n    y = ", "\n    return y\n"),
        ("def g(a, b):\n    if ", ":\n        return a\n    return b\n"),
        ("total = 0\nfor i in range(10):\n    total += ", "\nprint(total)\n"),
    ]
    reqs = [params(n=2, seed=10 + i, grammar="python", prefix=p, suffix=s, max_tokens=32)
            for i, (p, s) in enumerate(cases)]
    outs = llm.generate([p for p, _ in cases], reqs, use_tqdm=False)
    for (p, s), out in zip(cases, outs, strict=True):
        for comp in out.outputs:
            ast.parse(p + generated(comp) + s)


def test_json_and_lark_text_grammars(llm: Any) -> None:
    lark = 'start: "[" NUM ("," NUM)* "]"\nNUM: /-?[1-9][0-9]{0,8}/\n'
    outs = llm.generate(
        ["json:", "list:"],
        [params(n=2, seed=3, grammar="json", max_tokens=24),
         params(n=2, seed=4, grammar=lark, max_tokens=24)],
        use_tqdm=False,
    )
    for comp in outs[0].outputs:
        json.loads(generated(comp))
    for comp in outs[1].outputs:
        value = json.loads(generated(comp))
        assert isinstance(value, list) and value


def test_options_as_json_text(llm: Any) -> None:
    """The form the OpenAI-compatible server's ``vllm_xargs`` (flat values only) can carry."""
    from vllm import SamplingParams

    text = json.dumps({"grammar": "json", "max_tokens": 12})
    out = llm.generate(["x"], [SamplingParams(seed=6, temperature=1.0, max_tokens=12,
                                              extra_args={"gramask": text})], use_tqdm=False)
    json.loads(generated(out[0].outputs[0]))


def test_artifact_path_grammar(llm: Any, tmp_path: Any) -> None:
    compiled = gramask.compile(gramask.grammars.load("json"), VOCAB)
    path = tmp_path / "json.deepseek.gmask"
    compiled.save(path)
    out = llm.generate(["x"], [params(seed=5, grammar=str(path), max_tokens=16)],
                       use_tqdm=False)
    json.loads(generated(out[0].outputs[0]))


def test_unconstrained_rows_are_untouched(llm: Any) -> None:
    """A plain request gives the same tokens alone and beside constrained ones (rows are not
    mixed up when the batch is reordered)."""
    plain = params(seed=7)
    alone = llm.generate(["hello"], [plain], use_tqdm=False)[0].outputs[0].token_ids
    mixed = llm.generate(
        ["a", "hello", "b"],
        [params(seed=8, grammar="python", prefix="x = ", max_tokens=20), plain,
         params(seed=9, grammar="json", max_tokens=20)],
        use_tqdm=False,
    )
    assert list(mixed[1].outputs[0].token_ids) == list(alone)
    ast.parse("x = " + generated(mixed[0].outputs[0]))
    json.loads(generated(mixed[2].outputs[0]))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"grammar": "python", "sufix": "x"}, "unknown key"),
        ({"prefix": "x"}, "'grammar' is required"),
        ({"grammar": "pyhton"}, "not a bundled grammar"),
        ({"grammar": "start: ("}, "Unclosed parenthesis"),
        ({"grammar": "python", "max_tokens": -1}, "max_tokens"),
        ({"grammar": "python", "max_tokens": 100}, "above SamplingParams.max_tokens"),
    ],
)
def test_bad_options_are_refused_before_the_engine(llm: Any, options: dict[str, Any],
                                                   message: str) -> None:
    from vllm import SamplingParams
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match=message):
        llm.generate(["x"], SamplingParams(max_tokens=8, extra_args={"gramask": options}),
                     use_tqdm=False)


def test_prefix_without_completion_ends_the_request_not_the_engine(
        llm: Any, caplog: pytest.LogCaptureFixture) -> None:
    outs = llm.generate(
        ["a", "b"],
        [params(seed=1, grammar="python", prefix="def )", max_tokens=8),
         params(seed=2, grammar="python", prefix="y = ", max_tokens=8)],
        use_tqdm=False,
    )
    assert generated(outs[0].outputs[0]) == ""
    assert "InvalidPrefixError" in caplog.text
    ast.parse("y = " + generated(outs[1].outputs[0]))
