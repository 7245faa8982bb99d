"""The worker process of :class:`~gramask.serving.ConstraintPool`: owns requests, fills rows.

One worker holds, per grammar key, one :class:`~gramask.CompiledGrammar` (loaded from its
artifact file when the worker starts; one registered later, on its first request; one
registered as a spec, compiled here on its first request) and the constraints of the requests
the pool gave it. Two threads:

* the *setup* thread builds new requests' constraints (the fill-in-the-middle quotient and the
  budget plan are the slow part: up to a second) and computes their first mask, so that a new
  request never stalls a step of the requests already running;
* the *main* thread answers the pool's messages: per step, it applies the accepted tokens,
  rollbacks and removals, then writes each named request's mask, packed, into its row of the
  shared bitmask file.

Constraints of one compiled grammar are safe to use from both threads (the runtime's shared
memo tables are; see ``gramask.runtime.core.constraint``); each constraint is touched by one
thread at a time: by the setup thread until it is ready, then only by the main thread.

Garbage collection never runs inside a step, nor when the next step is about to come: the
worker disables the automatic collector, freezes the grammars loaded from artifacts
(``gc.freeze``: a collection skips them; not the ones compiled from specs, which the pool may
tell it to forget), and collects itself only when idle: after a step, if no message comes
within ``_IDLE_WAIT`` (a server runs the model between steps; a caller that steps back to
back is not kept waiting by a collection); the setup thread collects a new request's young
objects when no step is running. The young generation is collected anyway past
``_FORCE_YOUNG`` objects (memory stays bounded). Steps make no cyclic garbage and a removed
constraint, fill-in-the-middle included, is freed by reference counting
(``tests/test_fim_no_cycles.py``); the full collections, every ``_FULL_GC_EVERY`` idle ones,
are for what else may form a cycle (a request's error, say).

Messages are ``marshal``-encoded tuples of plain data over a pipe (see ``pool.py``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import marshal
import mmap
import queue
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

__all__ = ["main"]

# GIL hand-over latency between the setup thread and a step (CPython's default is 5 ms)
_SWITCH_INTERVAL = 0.0005
# a full collection (generation 2) every this many idle collections; younger ones at the others
_FULL_GC_EVERY = 64
# seconds a worker waits after a step for the next message before it counts as idle and collects
# (a collection of one step's young objects takes ~1-10 ms; the young generation after a burst
# of setups, hundreds: never in front of a step that is about to come)
_IDLE_WAIT = 0.002
# young objects past which a collection runs even between back-to-back steps
_FORCE_YOUNG = 400_000


@dataclass
class _Request:
    key: str
    serial: int  # the pool's number for this add (an id may be removed and added again)
    ready: threading.Event = field(default_factory=threading.Event)
    constraint: Any = None
    error: str | None = None


class _Worker:
    def __init__(self, conn: Connection, bitmask_path: str, rows: int, words: int,
                 grammars: dict[str, str]) -> None:
        self.conn = conn
        self.send_lock = threading.Lock()
        self.words = words
        with open(bitmask_path, "r+b") as f:
            self.map = mmap.mmap(f.fileno(), rows * words * 4)
        self.rows_u8 = np.frombuffer(self.map, dtype=np.uint8).reshape(rows, words * 4)
        self.paths = dict(grammars)
        self.specs: dict[str, tuple[Any, str]] = {}  # key -> (grammar spec, vocabulary file)
        self.vocabs: dict[str, Any] = {}  # vocabulary file -> Vocabulary
        self.compiled: dict[str, Any] = {}
        self.table_lock = threading.Lock()  # the three tables above (held for lookups only)
        self.requests: dict[Any, _Request] = {}
        self.setups: queue.SimpleQueue[tuple[Any, _Request, Any, Any, Any] | None] = (
            queue.SimpleQueue())
        self.idle_collections = 0
        self.stepping = False  # the main thread is answering a step (the setup thread's GC waits)

    # ------------------------------------------------------------------ messages
    def send(self, msg: tuple[Any, ...]) -> None:
        data = marshal.dumps(msg)
        with self.send_lock:
            self.conn.send_bytes(data)

    def serve(self) -> None:
        setup = threading.Thread(target=self.setup_loop, name="gramask-setup", daemon=True)
        setup.start()
        try:
            while True:
                msg = marshal.loads(self.conn.recv_bytes())
                kind = msg[0]
                if kind == "step":
                    self.step(msg[1], msg[2], msg[3])
                    self.idle_gc()
                elif kind == "add":
                    _, rid, serial, key, prefix, suffix, max_tokens = msg
                    req = self.requests[rid] = _Request(key, serial)
                    self.setups.put((rid, req, prefix, suffix, max_tokens))
                elif kind in ("grammar", "spec", "forget"):
                    self.register(msg)
                elif kind == "stop":
                    break
        except EOFError:  # the pool's process is gone
            pass
        finally:
            self.setups.put(None)

    def register(self, msg: tuple[Any, ...]) -> None:
        """A grammar registered, replaced or forgotten (for requests set up from now on;
        running ones keep the grammar they were built with)."""
        key = msg[1]
        with self.table_lock:
            self.compiled.pop(key, None)
            self.paths.pop(key, None)
            self.specs.pop(key, None)
            if msg[0] == "grammar":
                self.paths[key] = msg[2]
            elif msg[0] == "spec":
                self.specs[key] = (msg[2], msg[3])

    # ------------------------------------------------------------------ setup thread
    def grammar(self, key: str) -> Any:
        """The compiled grammar of ``key``, loaded or compiled on first use (only the setup
        thread calls this, so one grammar is built at a time)."""
        with self.table_lock:
            cg = self.compiled.get(key)
            path, spec = self.paths.get(key), self.specs.get(key)
        if cg is not None:
            return cg
        if spec is not None:
            cg = self._compile_spec(*spec)
        elif path is not None:
            from ..compiled import CompiledGrammar

            cg = CompiledGrammar.load(path)
            need = (len(cg.vocab) + 31) // 32
            if need > self.words:
                raise ValueError(
                    f"grammar {key!r} ({path}) has a vocabulary of {len(cg.vocab)} tokens: "
                    f"its masks need {need} int32 words per row, the pool's bitmask has "
                    f"{self.words}")
        else:
            raise KeyError(f"no grammar registered under the key {key!r}")
        with self.table_lock:
            if self.paths.get(key) == path and self.specs.get(key) == spec:  # still current
                self.compiled[key] = cg
        if spec is None:
            gc.collect()
            gc.freeze()  # the loaded tables are never garbage: collections skip them
        return cg

    def _compile_spec(self, spec: Any, vocab_path: str) -> Any:
        from ..compiler.pipeline import compile as compile_grammar
        from ..integrations.options import grammar_from_spec
        from .grammar_table import load_vocab_file

        vocab = self.vocabs.get(vocab_path)
        if vocab is None:
            vocab = self.vocabs[vocab_path] = load_vocab_file(vocab_path)
        grammar = grammar_from_spec(spec)
        if grammar is None:
            raise ValueError(f"a grammar spec must not name an artifact: {spec!r}")
        return compile_grammar(grammar, vocab, cache=False, progress=False)

    def setup_loop(self) -> None:
        for key in list(self.paths):  # the pool's grammars, loaded before any request comes
            with contextlib.suppress(Exception):  # else: the first request that names it
                self.grammar(key)                  # raises the error again, and reports it
        while True:
            job = self.setups.get()
            if job is None:
                return
            rid, req, prefix, suffix, max_tokens = job
            t0 = time.perf_counter()
            try:
                c = self.grammar(req.key).constraint(prefix, suffix, max_tokens)
                c.allowed()  # the first mask, computed here rather than in a step
                req.constraint = c
            except Exception as e:
                req.error = _describe(e)
            req.ready.set()
            self.send(("ready", rid, req.serial, req.error, time.perf_counter() - t0))
            if not self.stepping:  # the setup's young objects, while they are few
                gc.collect(0)

    # ------------------------------------------------------------------ steps
    def step(self, seq: int, ops: list[tuple[Any, ...]], fills: list[tuple[Any, int]]) -> None:
        t0 = time.perf_counter()
        self.stepping = True
        for rid in [op[1] for op in ops] + [f[0] for f in fills]:
            req = self.requests.get(rid)
            if req is not None:
                req.ready.wait()  # a request named before its setup finished
        c0 = time.thread_time()  # this thread's CPU time: what the step cost, whatever the load
        costs: dict[Any, float] = {}
        try:
            errors = self._step(ops, fills, costs)
        finally:
            self.stepping = False
        self.send(("done", seq, errors, time.perf_counter() - t0, time.thread_time() - c0,
                   list(costs.items())))

    def _step(self, ops: list[tuple[Any, ...]], fills: list[tuple[Any, int]],
              costs: dict[Any, float]) -> list[tuple[Any, str]]:
        """Apply ``ops``, write ``fills``' rows; ``costs`` gets each filled request's seconds
        (its tokens and its row: what the pool balances workers by)."""
        errors: list[tuple[Any, str]] = []
        clock = time.perf_counter
        spent: dict[Any, float] = {}
        for op in ops:
            rid = op[1]
            t = clock()
            if op[0] == "remove":
                self.requests.pop(rid, None)
                continue
            req = self.requests.get(rid)
            if req is None:
                errors.append((rid, "unknown request (never added, or removed)"))
                continue
            if req.error is not None:
                continue  # reported when a step names it
            c = req.constraint
            try:
                if op[0] == "advance":
                    for tok in op[2]:
                        c.advance(tok)
                else:
                    c.rollback(op[2])
            except Exception as e:
                req.error = _describe(e)
                errors.append((rid, req.error))
            spent[rid] = spent.get(rid, 0.0) + clock() - t
        u8 = self.rows_u8
        for rid, row in fills:
            req = self.requests.get(rid)
            if req is None:
                msg = "unknown request (never added, or removed)"
            elif req.error is None:
                try:
                    t = clock()
                    req.constraint.fill_bitmask(u8[row])  # packed once per configuration
                    costs[rid] = spent.get(rid, 0.0) + clock() - t
                    continue
                except Exception as e:
                    msg = req.error = _describe(e)
            else:
                msg = req.error
            u8[row] = 0
            if (rid, msg) not in errors:
                errors.append((rid, msg))
        return errors

    def idle_gc(self) -> None:
        """Collect if the caller is not about to send the next step (see the module doc)."""
        if gc.get_count()[0] < _FORCE_YOUNG and self.conn.poll(_IDLE_WAIT):
            return  # the next message is here: answer it first
        self.idle_collections += 1
        gc.collect(2 if self.idle_collections % _FULL_GC_EVERY == 0 else 0)


def _describe(e: BaseException) -> str:
    if isinstance(e, (KeyError, ValueError, TypeError, RuntimeError, NotImplementedError,
                      OSError)):
        return f"{type(e).__name__}: {e}"
    return "".join(traceback.format_exception(e)).rstrip()


def main(args: str) -> None:
    """Entry point of a worker process: ``args`` is the JSON list [socket fd, bitmask file,
    rows, words per row, {grammar key: artifact path}] (see ``pool._start_worker``)."""
    fd, bitmask_path, rows, words, grammars = json.loads(args)
    gc.disable()
    sys.setswitchinterval(_SWITCH_INTERVAL)
    conn = Connection(fd)
    try:
        _Worker(conn, bitmask_path, rows, words, grammars).serve()
    finally:
        conn.close()
