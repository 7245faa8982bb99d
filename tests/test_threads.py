"""Constraints of one compiled grammar used from many threads give the single-threaded masks.

Each case is a walk over real stdlib code (prefix-only, fill-in-the-middle, and budgets with
and without a suffix): at every step the mask is digested, and the walk takes the true token
when the mask allows it, else the first token of the shortest completion (so a walk is a pure
function of the masks). The reference digests come from a single-threaded run of the walks, one
after another, on a fresh runtime; then many threads run the same walks on another fresh runtime of the same artifact,
with a tiny ``sys.setswitchinterval`` so that they interleave inside the shared memo tables.
Small memo bounds (``RuntimeLimits``) make eviction happen during the run as well.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import gramask
from gramask import RuntimeLimits
from gramask.runtime.core.earley import ORIGINS, UID
from gramask.runtime.core.parse_state import ES, PUID

from ._support import compiled, hf_tokenizer, run_threads

_STDLIB = Path(sysconfig.get_paths()["stdlib"])
FILES = ["dis.py", "bisect.py", "colorsys.py", "shlex.py"]  # x3 kinds: 12 threads
STEPS = 24
# small enough that memo tables turn over during the walks
SMALL = RuntimeLimits(interned_sets=2_000, step_memo=2_000, parser_states=1_000,
                      row_cache=8, mask_cache=16)

Case = tuple[str, str, str | None, int | None, list[int]]  # name, prefix, suffix, budget, tokens


def _cases() -> list[Case]:
    encode = hf_tokenizer("gpt2")
    out: list[Case] = []
    for name in FILES:
        text = (_STDLIB / name).read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        cut = len("".join(lines[: len(lines) // 3]))  # a line start a third of the way in
        end = len("".join(lines[: len(lines) // 3 + 3]))  # three lines of middle
        # the suffix runs up to a top-level definition about 1 KB on (a program's end)
        stop = next((i for i in range(len(text)) if i > end + 1000 and text[i - 1] == "\n"
                     and text.startswith(("def ", "class ", "@"), i)), len(text))
        prefix, middle, suffix = text[:cut], text[cut:end], text[end:stop]
        toks = encode(middle)[:STEPS]
        out.append((f"{name}:prefix", prefix, None, None, toks))
        out.append((f"{name}:fim", prefix, suffix, None, toks))
        out.append((f"{name}:budget", prefix, None, 2 * STEPS, toks))
    return out


def _walk(cg: gramask.CompiledGrammar, case: Case, limits: RuntimeLimits) -> list[str]:
    """The digests of the case's masks, step by step (and what the walk took)."""
    _name, prefix, suffix, budget, toks = case
    c = cg.constraint(prefix, suffix, budget, limits=limits)
    out = []
    for t in toks:
        m = c.allowed()
        if not m[t]:
            t = c.shortest_completion().token_ids[0] if budget is not None else int(
                np.flatnonzero(m)[0])
        out.append(hashlib.sha256(np.packbits(m).tobytes()).hexdigest()[:16] + f":{t}")
        c.advance(t)
    return out


@pytest.fixture(scope="module")
def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "python.gpt2.gmask"
    compiled("python", "gpt2").save(path)
    return path


@pytest.fixture
def tiny_switch_interval() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


@pytest.mark.parametrize("limits", [RuntimeLimits(), pytest.param(SMALL, marks=pytest.mark.slow)],
                         ids=["default-limits", "small-memos"])
def test_threads_get_the_single_threaded_masks(artifact: Path, limits: RuntimeLimits,
                                               tiny_switch_interval: None) -> None:
    cases = _cases()
    alone = gramask.CompiledGrammar.load(artifact)  # the walks one after another
    reference = {c[0]: _walk(alone, c, limits) for c in cases}
    shared = gramask.CompiledGrammar.load(artifact)  # one fresh runtime for every thread
    results: dict[str, list[str]] = {}
    start = threading.Barrier(len(cases))

    def run(case: Case) -> None:
        start.wait()
        results[case[0]] = _walk(shared, case, limits)

    errors = run_threads(*(functools.partial(run, c) for c in cases))
    assert not errors, errors
    for name, ref in reference.items():
        got = results[name]
        first = next((i for i, (a, b) in enumerate(zip(ref, got, strict=True)) if a != b), None)
        assert first is None, f"{name}: masks differ from step {first} on"


def _ids_shared(histories: list[list[Any]]) -> tuple[int, int, int]:
    """(parser states reached, states sharing a uid with another, Earley sets sharing one)."""
    states: dict[int, Any] = {}
    sets: dict[int, Any] = {}
    shared_states = shared_sets = 0
    for history in histories:
        for _q, _carry, p in history:
            if states.setdefault(p[PUID], p) is not p:
                shared_states += 1
            todo = [p[ES]]
            while todo:
                es = todo.pop()
                known = sets.setdefault(es[UID], es)
                if known is not es:
                    shared_sets += 1
                    continue
                todo.extend(o for o in es[ORIGINS:] if o is not None and o[UID] not in sets)
    return len(states), shared_states, shared_sets


def test_threads_never_give_two_states_one_uid(artifact: Path,
                                               tiny_switch_interval: None) -> None:
    """Memo tables are keyed by Earley-set and parser-state uids: two objects with one uid
    make a memo answer for the wrong state. Eight threads parse different files at once
    through one fresh runtime (building new sets and states all the time)."""
    encode = hf_tokenizer("gpt2")
    names = ["bisect.py", "colorsys.py", "shlex.py", "fnmatch.py", "keyword.py", "glob.py",
             "copy.py", "heapq.py"]
    walks = [encode((_STDLIB / n).read_text(encoding="utf-8"))[:1200] for n in names]
    shared = gramask.CompiledGrammar.load(artifact)
    histories: list[list[Any]] = []

    def run(toks: list[int]) -> None:
        c = shared.constraint("")
        for t in toks:
            c.advance(t)
        histories.append(c._history)

    errors = run_threads(*(functools.partial(run, w) for w in walks))
    assert not errors, errors
    reached, shared_states, shared_sets = _ids_shared(histories)
    assert reached > 100  # the walks did build states
    assert (shared_states, shared_sets) == (0, 0)
