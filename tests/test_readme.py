"""The README's hello world runs and prints what the README says it prints."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_hello_world_prints_what_the_readme_shows(capsys):
    text = README.read_text(encoding="utf-8")
    m = re.search(r"## Hello world\n\n```python\n((?s:.*?))```\n\nprints[^\n]*\n\n((?:    .*\n)+)", text)
    assert m, "the README's hello world section changed shape"
    code, shown = m.group(1), m.group(2)
    exec(compile(code, "README.md", "exec"), {})
    expected = "".join(line[4:] + "\n" for line in shown.splitlines())
    assert capsys.readouterr().out == expected
