"""The grammars of a :class:`~gramask.serving.ConstraintPool`, by key.

Two kinds of entry:

* an *artifact file* that every worker loads once (a bundled or Lark grammar from the compile
  cache, a saved ``.gmask``): kept for the pool's life;
* a *spec* (JSON Schema, regex, choices: a grammar a serving request carries) that each worker
  compiles itself, lazily, the way :class:`~gramask.integrations.options.GrammarResolver`
  does in one process. The pool's process never builds such a grammar, and nothing is written
  for it but the vocabulary, once. A spec no request uses is kept among the ``max_idle`` most
  recently released ones (a server sees the same schema again) and then forgotten by the
  pool and its workers: a server that sees a new schema per request does not grow.

The vocabulary travels as an ``.npz`` of :meth:`Vocabulary.to_arrays` plus its metadata as
JSON bytes, read back without pickle.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..compiled import CompiledGrammar
    from ..vocab import Vocabulary

__all__ = ["GrammarTable", "load_vocab_file"]

Spec = str | Mapping[str, Any]  # a grammar spec as the integrations' options take it


class GrammarTable:
    """Keys → artifact paths or specs; counts each key's live requests (see the module doc)."""

    def __init__(self, tmp: Path, max_idle: int) -> None:
        self._tmp = tmp
        self.max_idle = max(0, max_idle)
        self.paths: dict[str, str] = {}
        self.specs: dict[str, tuple[Spec, str]] = {}  # key -> (spec, vocabulary file)
        self._vocab_files: dict[str, str] = {}  # vocabulary fingerprint -> its file
        self._users: dict[str, int] = {}
        self._idle: OrderedDict[str, None] = OrderedDict()  # released specs, oldest first

    def __contains__(self, key: object) -> bool:
        return key in self.paths or key in self.specs

    def keys(self) -> list[str]:
        return [*self.paths, *self.specs]

    def add_artifact(self, key: str, src: str | os.PathLike[str] | CompiledGrammar) -> str:
        """Register an artifact (a path, or a compiled grammar: its cache file, or a copy
        saved once in the pool's directory); returns the path workers load."""
        if isinstance(src, (str, os.PathLike)):
            path = Path(src)
            if not path.is_file():
                raise FileNotFoundError(f"grammar {key!r}: no artifact file at {path}")
            out = str(path.resolve())
        else:
            cached = src.info.get("cache_path")
            if cached and Path(cached).is_file():
                out = str(cached)
            else:
                dest = self._tmp / f"grammar-{len(self.paths)}.gmask"
                src.save(dest)
                out = str(dest)
        self.specs.pop(key, None)
        self._idle.pop(key, None)
        self.paths[key] = out
        return out

    def add_spec(self, key: str, spec: Spec, vocab: Vocabulary) -> tuple[Spec, str]:
        """Register a spec that workers compile against ``vocab``; returns (spec, the
        vocabulary file they read)."""
        json.dumps(spec)  # the spec crosses a pipe as plain data: fail here if it cannot
        fp = vocab.fingerprint()
        path = self._vocab_files.get(fp)
        if path is None:
            path = self._vocab_files[fp] = str(self._tmp / f"vocab-{fp[:16]}.npz")
            _write_vocab(vocab, Path(path))
        self.paths.pop(key, None)
        self.specs[key] = (spec, path)
        if not self._users.get(key):
            self._idle[key] = None  # until a request uses it
            self._idle.move_to_end(key)
        return self.specs[key]

    def use(self, key: str) -> None:
        self._users[key] = self._users.get(key, 0) + 1
        self._idle.pop(key, None)

    def release(self, key: str) -> list[str]:
        """A request of ``key`` ended; returns the specs to forget now (oldest idle first)."""
        n = self._users.get(key, 0) - 1
        if n > 0:
            self._users[key] = n
            return []
        self._users.pop(key, None)
        if key not in self.specs:
            return []
        self._idle[key] = None
        self._idle.move_to_end(key)
        gone: list[str] = []
        while len(self._idle) > self.max_idle:
            old, _ = self._idle.popitem(last=False)
            del self.specs[old]
            gone.append(old)
        return gone


def _write_vocab(vocab: Vocabulary, path: Path) -> None:
    meta = np.frombuffer(json.dumps(vocab.metadata()).encode(), dtype=np.uint8)
    part = path.with_suffix(".part.npz")
    arrays: dict[str, Any] = {"vocab_meta": meta, **vocab.to_arrays()}
    np.savez(part, **arrays)
    os.replace(part, path)  # a worker never reads a half-written file


def load_vocab_file(path: str) -> Vocabulary:
    """The vocabulary :class:`GrammarTable` wrote (no pickle)."""
    from ..vocab import Vocabulary

    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("vocab_meta").tobytes().decode())
    return Vocabulary.from_arrays(arrays, meta)
