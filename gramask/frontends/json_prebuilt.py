"""Byte automata that every process serving JSON Schema requests needs, built ahead of time.

The ``format`` automata (``email`` and ``hostname`` alone take ~100 ms each to build), the
automaton of every JSON string (what "any key but these" is grafted on) and the regex
terminals of the JSON text (whitespace, strings, numbers) are the same in every request, so a
new process's first schema should not build them. They ship in ``json_automata.npz``,
written by :func:`write` (``python tools/build_json_automata.py``) and keyed by a
digest of what they are built from: a changed regex or spec misses and is built as before.
``tests/test_json_prebuilt.py`` rebuilds each one and compares.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..compiler.regex_bytes import ByteDFA

__all__ = ["FILE", "prebuilt", "sources", "write"]

FILE = Path(__file__).with_name("json_automata.npz")
_LOADED: dict[str, ByteDFA] | None = None
_LOCK = threading.Lock()


def sources() -> list[str]:
    """What is prebuilt: ``spec:`` + a string terminal's automaton spec, ``regex:`` + a regex
    terminal's pattern."""
    from . import json_text as jt
    from .json_formats import FORMATS

    specs: list[dict[str, str]] = [{}, *({"regex": body} for body in FORMATS.values())]
    out = ["spec:" + json.dumps(s, sort_keys=True) for s in specs]
    # the regex terminals of JSON text (default options): whitespace, strings, numbers, and
    # the integers of `"type": "integer"` with and without `"minimum": 0`
    out += ["regex:" + p for p in (jt.JSON_WS, jt.JSON_STRING, jt.JSON_NUMBER,
                                   jt.integer_range_regex(0, None),
                                   jt.integer_range_regex(None, None))]
    return out


def _digest(source: str) -> str:
    return hashlib.blake2b(source.encode(), digest_size=12).hexdigest()


def prebuilt(source: str) -> ByteDFA | None:
    """The shipped automaton of ``source`` (see :func:`sources`), or None."""
    global _LOADED
    if _LOADED is None:
        with _LOCK:
            if _LOADED is None:
                _LOADED = _load()
    return _LOADED.get(_digest(source))


def _load() -> dict[str, ByteDFA]:
    if not FILE.exists():
        return {}
    with np.load(FILE, allow_pickle=False) as z:  # four arrays: one read each
        keys, starts = z["keys"].tolist(), z["starts"].tolist()
        trans, finals = z["trans"].astype(np.int32), z["finals"].astype(bool)
    trans.flags.writeable = False
    return {k.decode(): ByteDFA(trans[a:b], finals[a:b])
            for k, a, b in zip(keys, starts[:-1], starts[1:], strict=True)}


def write(build: Callable[[str], ByteDFA], path: Path = FILE) -> None:
    """Build every source with ``build`` (``json_strings.build_source``) and save them
    stacked (int16 transitions, compressed): ``python tools/build_json_automata.py``."""
    built = {_digest(source): build(source) for source in sources()}
    assert all(d.num_states < 2**15 for d in built.values())
    np.savez_compressed(
        path, keys=np.array([k.encode() for k in built]),
        starts=np.cumsum([0, *(d.num_states for d in built.values())]),
        trans=np.concatenate([d.trans for d in built.values()]).astype(np.int16),
        finals=np.concatenate([d.finals for d in built.values()]))
