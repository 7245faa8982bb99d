"""Paths, names and logging shared by the benchmark modules."""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


GRAMMARS = ("json", "python", "sql", "c")
VOCABS = ("gpt2", "deepseek-v4", "qwen2")
ENGINES = ("gramask", "llguidance", "xgrammar", "outlines")
START = {"python": "file_input"}
now_ns = time.perf_counter_ns


def is_grammar_file(grammar: str) -> bool:
    """A grammar given as a ``.lark`` path (a grammar this repository has never seen) rather
    than a bundled name."""
    return grammar.endswith(".lark")


def grammar_text(grammar: str) -> str:
    import gramask

    return Path(grammar).read_text() if is_grammar_file(grammar) else gramask.grammars.text(grammar)


def grammar_lexer(grammar: str, override: str | None) -> str:
    import gramask

    if override:
        return override
    return "contextual" if is_grammar_file(grammar) else gramask.grammars.lexer_mode(grammar)


def log(msg: str) -> None:
    print(f"[bench_runtime {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


