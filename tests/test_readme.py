"""The README's examples run and print what the README says they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _run_section(title: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Run the code block under ``## title`` and compare its output with the indented block
    after the following "prints" line."""
    text = README.read_text(encoding="utf-8")
    m = re.search(
        rf"## {re.escape(title)}\n\n(?:[^\n]+\n)*?\n?```python\n((?s:.*?))```\n\nprints[^\n]*\n\n"
        r"((?:    .*\n)+)",
        text,
    )
    assert m, f"the README's {title!r} section changed shape"
    code, shown = m.group(1), m.group(2)
    exec(compile(code, "README.md", "exec"), {})
    expected = "".join(line[4:] + "\n" for line in shown.splitlines())
    assert capsys.readouterr().out == expected


def test_hello_world_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    _run_section("Hello world", capsys)


def test_fim_example_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    _run_section("Fill-in-the-middle", capsys)


def test_budget_example_prints_what_the_readme_shows(capsys: pytest.CaptureFixture[str]) -> None:
    _run_section("Token budgets", capsys)


def test_sampling_example_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("torch")
    _run_section("Sampling", capsys)


def test_inference_example_prints_what_the_readme_shows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Compiles the artifact the way the section says (the CLI), then loads it in the example."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from gramask.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["compile", "json", "--vocab", "gpt2", "-o", "json.gpt2.gmask", "-q"]) == 0
    capsys.readouterr()
    _run_section("In inference code", capsys)
