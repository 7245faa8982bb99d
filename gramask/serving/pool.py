"""``ConstraintPool``: many requests' constraints in worker processes, one call per step.

Pure Python holds the GIL, so threads do not add cores to mask computation; worker processes
do. The pool gives each new request to the worker whose requests cost the least per step
(measured: ``balance.py``); that worker builds
the constraint (the fill-in-the-middle quotient, the budget plan) on a thread of its own, so a
new request never stalls the requests already decoding, and owns it until it is removed.

Per step, :meth:`ConstraintPool.fill` sends each worker one message (the accepted tokens,
rollbacks and removals queued since the last step, and the rows to fill), the workers write
their rows of a shared-memory int32 bitmask in parallel, and ``fill`` returns a numpy view of
it: XGrammar's and vLLM's layout, ``(batch, ceil(V / 32))``, bit ``j`` of word ``w`` = token
``32 * w + j``, set = allowed.

Messages are ``marshal``-encoded tuples of plain data (request ids, token ids, text); the
compiled grammars travel as artifact files, which each worker loads once, or as specs that
each worker compiles itself (a JSON Schema a request carries: :meth:`ConstraintPool.
add_grammar_spec`; see ``grammar_table.py``).
"""

from __future__ import annotations

import contextlib
import json
import marshal
import mmap
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GramaskError
from .balance import CostTable
from .grammar_table import GrammarTable, Spec

if TYPE_CHECKING:
    from ..compiled import CompiledGrammar
    from ..vocab import Vocabulary

__all__ = ["ConstraintPool", "RequestError", "RequestId"]

RequestId = str | int  # what the pool accepts as a request id


class RequestError(GramaskError, RuntimeError):
    """Requests of a step failed (setup, a rejected token, an unknown id).

    ``failures`` maps each failed request id to the worker's message. The step's other rows
    are filled (a failed request's row is all zero): catch this, abort the failed requests,
    remove them from the pool, and use :attr:`bitmask` for the rest.
    """

    def __init__(self, failures: Mapping[Any, str], bitmask: np.ndarray | None = None) -> None:
        self.failures = dict(failures)
        self.bitmask = bitmask
        lines = [f"  request {rid!r}: {msg}" for rid, msg in self.failures.items()]
        super().__init__(f"{len(self.failures)} request(s) failed:\n" + "\n".join(lines))


class ConstraintPool:
    """Worker processes that own requests' constraints and fill a shared bitmask per step.

    Parameters
    ----------
    grammars
        Grammar key → an artifact path (``.gmask``, e.g. ``CompiledGrammar.save``'s or the
        compile cache's) or a :class:`~gramask.CompiledGrammar` (its cache file is used when it
        came from the cache; otherwise it is saved once into a temporary directory). More can
        be registered with :meth:`add_grammar`. Each worker loads the pool's grammars when it
        starts (beside any request), one added later on its first request.
    vocab_size
        The bitmask's vocabulary size: rows are ``ceil(vocab_size / 32)`` words. Default: the
        vocabulary of the first grammar given as a ``CompiledGrammar``. A grammar whose masks
        need wider rows fails its requests.
    workers
        Worker processes (default: the CPUs this process may use).
    max_batch
        Rows of the shared bitmask: the most requests one step can name.
    max_idle_grammars
        Grammars registered by :meth:`add_grammar_spec` that no request uses are kept up to
        this many (the most recently released), then forgotten by the pool and its workers.

    Example
    -------
    >>> import gramask
    >>> from gramask.serving import ConstraintPool
    >>> vocab = gramask.Vocabulary.bundled("gpt2")
    >>> compiled = gramask.compile(gramask.grammars.load("json"), vocab)
    >>> with ConstraintPool({"json": compiled}, workers=2) as pool:
    ...     pool.add("r1", "json", prefix='{"a": ')
    ...     pool.add("r2", "json", prefix="[1, ", max_tokens=16)
    ...     bitmask = pool.fill(["r1", "r2"])  # int32 (2, ceil(V/32)), in shared memory
    ...     pool.advance("r1", [vocab.token_id("true")])  # the token sampled for r1
    ...     pool.advance("r2", [vocab.token_id("2")])
    ...     pool.rollback("r2", 1)  # a draft token the target model rejected
    ...     bitmask = pool.fill(["r1", "r2"])  # the next step's masks
    ...     pool.remove("r2")  # finished or aborted

    Use the rows with ``torch.from_numpy(bitmask)`` and ``gramask.torch.
    apply_token_bitmask_inplace`` (or any kernel of this layout).

    The returned array is a view of the shared memory: the next ``fill`` overwrites it (copy it,
    e.g. to the GPU, before). Not thread-safe: one thread drives a pool.

    Raises
    ------
    RequestError
        From :meth:`fill` (and :meth:`wait_ready`): requests whose setup or tokens failed.
    GramaskError
        A worker process died.
    """

    def __init__(
        self,
        grammars: Mapping[str, str | os.PathLike[str] | CompiledGrammar],
        *,
        vocab_size: int | None = None,
        workers: int | None = None,
        max_batch: int = 256,
        max_idle_grammars: int = 32,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self._tmp = Path(tempfile.mkdtemp(prefix="gramask-pool-"))
        self._grammars = GrammarTable(self._tmp, max_idle_grammars)
        try:
            for key, src in grammars.items():
                self._grammars.add_artifact(key, src)
                if vocab_size is None and not isinstance(src, (str, os.PathLike)):
                    vocab_size = len(src.vocab)
            if vocab_size is None:
                raise ValueError("vocab_size is needed when no grammar is a CompiledGrammar")
            if vocab_size < 1:
                raise ValueError(f"vocab_size must be at least 1, got {vocab_size}")
            n = workers if workers is not None else len(os.sched_getaffinity(0))
            if n < 1:
                raise ValueError(f"workers must be at least 1, got {n}")
            self.vocab_size = vocab_size
            self.words = (vocab_size + 31) // 32
            self.max_batch = max_batch
            shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else str(self._tmp)
            fd, self._bitmask_path = tempfile.mkstemp(prefix="gramask-bitmask-", dir=shm_dir)
            size = max_batch * self.words * 4
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
            os.close(fd)
            self._bitmask = np.frombuffer(self._map, dtype=np.int32).reshape(
                max_batch, self.words)
            self._conns: list[Connection] = []
            self._procs: list[subprocess.Popen[bytes]] = []
            for i in range(n):
                conn, proc = _start_worker(i, self._bitmask_path, max_batch, self.words,
                                           self._grammars.paths)
                self._conns.append(conn)
                self._procs.append(proc)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self._owner: dict[Any, int] = {}  # request id -> worker index
        self._key_of: dict[Any, str] = {}  # request id -> its grammar's key
        self._costs = CostTable()  # each request's measured seconds per step
        self._ops: list[list[tuple[Any, ...]]] = [[] for _ in range(n)]
        self._ready: dict[Any, str | None] = {}  # set-up requests -> None, or their error
        self._seq = 0
        self._late: dict[Any, str] = {}  # failures answered to a step with no fills
        self.last_worker_seconds: list[float] = [0.0] * n  # each worker's time in the last step
        # and the CPU time its step thread used (the step's cost on an idle core)
        self.last_worker_cpu_seconds: list[float] = [0.0] * n
        self.setup_seconds: dict[Any, float] = {}  # per set-up request: its setup's seconds
        self._serial: dict[Any, int] = {}  # request id -> the number of its add
        self._adds = 0
        self._finalizer = weakref.finalize(
            self, _shutdown, self._conns, self._procs, self._map, self._bitmask_path,
            str(self._tmp))

    # ------------------------------------------------------------------ grammars
    def add_grammar(self, key: str, source: str | os.PathLike[str] | CompiledGrammar) -> None:
        """Register (or replace, for requests added later) the grammar named ``key``."""
        path = self._grammars.add_artifact(key, source)
        for conn in self._conns:
            self._send(conn, ("grammar", key, path))

    def add_grammar_spec(self, key: str, spec: Spec, vocab: Vocabulary) -> None:
        """Register a grammar spec (as the integrations' ``grammar`` option takes it, e.g.
        ``{"json_schema": ...}``) that each worker compiles against ``vocab`` on its first
        request, without the disk cache: a per-request grammar is never built in this
        process. Forgotten once no request uses it and ``max_idle_grammars`` newer ones
        are idle (register it again to use it after that).

        Raises
        ------
        ValueError
            ``vocab`` is wider than the bitmask, or ``spec`` is not plain JSON data.
        """
        if len(vocab) > self.words * 32:
            raise ValueError(f"grammar {key!r}: a vocabulary of {len(vocab)} tokens does not "
                             f"fit the pool's rows of {self.words} int32 words")
        spec, vocab_path = self._grammars.add_spec(key, spec, vocab)
        for conn in self._conns:
            self._send(conn, ("spec", key, spec, vocab_path))

    @property
    def grammar_keys(self) -> list[str]:
        return self._grammars.keys()

    @property
    def bitmask(self) -> np.ndarray:
        """The whole shared ``(max_batch, W)`` int32 bitmask (what ``fill`` writes into).
        Rows that a step does not name may be written by the caller (e.g. EOS-only rows)."""
        return self._bitmask

    @property
    def num_workers(self) -> int:
        return len(self._conns)

    # ------------------------------------------------------------------ requests
    def add(self, request_id: RequestId, grammar: str, prefix: str | bytes = "",
            suffix: str | bytes | None = None, max_tokens: int | None = None) -> None:
        """Start a request: its constraint is built in a worker, beside running steps.

        Returns at once; :meth:`is_ready` says when its setup is done (a step that names it
        earlier waits for it). Setup errors (an invalid prefix, an unmet budget) are raised by
        the step that names the request, as :class:`RequestError`.
        """
        _check_id(request_id)
        if request_id in self._owner:
            raise ValueError(f"request {request_id!r} is already in the pool (remove it first)")
        if grammar not in self._grammars:
            raise KeyError(f"no grammar registered under the key {grammar!r}; registered: "
                           f"{sorted(self._grammars.keys())}")
        if max_tokens is not None and (isinstance(max_tokens, bool)
                                       or not isinstance(max_tokens, int)):
            raise TypeError(f"max_tokens must be an int or None, got {max_tokens!r}")
        w = self._costs.pick(len(self._conns), self._owner, self._key_of, grammar)
        self._owner[request_id] = w
        self._key_of[request_id] = grammar
        self._grammars.use(grammar)
        self._ready.pop(request_id, None)
        self._flush(w)  # a remove of the same id queued earlier goes first
        self._adds += 1
        self._serial[request_id] = self._adds
        self._send(self._conns[w], ("add", request_id, self._adds, grammar, prefix, suffix,
                                    max_tokens))

    def advance(self, request_id: RequestId, token_ids: Iterable[int]) -> None:
        """Queue accepted tokens of a request (applied by the next :meth:`fill`)."""
        ids = [_token(t) for t in token_ids]
        if ids:
            self._ops[self._worker(request_id)].append(("advance", request_id, ids))

    def rollback(self, request_id: RequestId, n: int) -> None:
        """Queue undoing the last ``n`` accepted tokens (speculative decoding)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"rollback needs a token count >= 0, got {n!r}")
        if n:
            self._ops[self._worker(request_id)].append(("rollback", request_id, n))

    def remove(self, request_id: RequestId) -> None:
        """Forget a request (finished or aborted)."""
        w = self._worker(request_id)
        del self._owner[request_id]
        self._costs.forget(request_id)
        self._ready.pop(request_id, None)
        self.setup_seconds.pop(request_id, None)
        self._serial.pop(request_id, None)
        self._ops[w].append(("remove", request_id))
        for key in self._grammars.release(self._key_of.pop(request_id)):
            for conn in self._conns:
                self._send(conn, ("forget", key))

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._owner

    def __len__(self) -> int:
        return len(self._owner)

    def is_ready(self, request_id: RequestId) -> bool:
        """Has the request's setup finished (successfully or not)? Never blocks."""
        self._worker(request_id)
        self._drain()
        return request_id in self._ready

    def wait_ready(self, request_ids: Iterable[RequestId], timeout: float | None = None
                   ) -> bool:
        """Block until the setups of ``request_ids`` are done (False on timeout).

        Raises
        ------
        RequestError
            Some of them failed their setup.
        """
        import time

        ids = list(request_ids)
        for rid in ids:
            self._worker(rid)
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            self._drain()
            missing = [r for r in ids if r not in self._ready]
            if not missing:
                break
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            conns = {self._conns[self._owner[r]] for r in missing}
            wait(list(conns), left)
            self._check_alive()
        failed = {r: e for r in ids if (e := self._ready[r]) is not None}
        if failed:
            raise RequestError(failed)
        return True

    # ------------------------------------------------------------------ the step
    def fill(self, request_ids: Sequence[RequestId], rows: Sequence[int] | None = None
             ) -> np.ndarray:
        """Fill the bitmask rows of ``request_ids`` (after the queued tokens); one call per step.

        Row ``i`` is ``request_ids[i]``'s mask, or row ``rows[i]`` when ``rows`` is given.
        Returns the filled rows' view of the shared bitmask: ``(len(request_ids), W)`` int32
        by default; with ``rows``, the whole ``(max_batch, W)`` bitmask (rows not named are
        left as they were). Waits for requests whose setup is still running.

        Raises
        ------
        RequestError
            Some requests failed (their rows are zero; the others are filled).
        ValueError
            A request named twice, too many requests, or a row out of range.
        """
        n = len(request_ids)
        if rows is None:
            if n > self.max_batch:
                raise ValueError(f"{n} requests in one step, the pool has {self.max_batch} rows")
            targets: Sequence[int] = range(n)
        else:
            if len(rows) != n:
                raise ValueError(f"{n} request ids but {len(rows)} rows")
            rows = [_row_index(r) for r in rows]  # numpy or torch integers too
            for r in rows:
                if not 0 <= r < self.max_batch:
                    raise ValueError(f"row {r} is out of range (the pool has {self.max_batch})")
            if len(set(rows)) != n:
                raise ValueError("a row is named twice")
            targets = rows
        if len(set(request_ids)) != n:
            raise ValueError("a request is named twice in one step")
        per: list[list[tuple[Any, int]]] = [[] for _ in self._conns]
        failures: dict[Any, str] = {}
        for rid, row in zip(request_ids, targets, strict=True):
            w = self._owner.get(rid)
            if w is None:
                failures[rid] = "unknown request (never added, or removed)"
                self._bitmask[row] = 0
                continue
            per[w].append((rid, row))
        self._seq += 1
        busy = []
        for w, conn in enumerate(self._conns):
            if per[w] or self._ops[w]:
                self._send(conn, ("step", self._seq, self._ops[w], per[w]))
                self._ops[w] = []
                busy.append(w)
        self.last_worker_seconds = [0.0] * len(self._conns)
        self.last_worker_cpu_seconds = [0.0] * len(self._conns)
        pending = {self._conns[w]: w for w in busy}
        while pending:
            for ready in wait(list(pending)):
                conn = ready  # type: ignore[assignment]  # wait() returns what it was given
                msg = self._recv(conn)
                if msg[0] == "done" and msg[1] == self._seq:
                    w = pending.pop(conn)
                    failures.update(dict(msg[2]))
                    self.last_worker_seconds[w] = msg[3]
                    self.last_worker_cpu_seconds[w] = msg[4]
                    self._costs.measured(msg[5], self._owner)
                else:
                    self._note(msg)
        if self._late:
            failures.update(self._late)
            self._late = {}
        out = self._bitmask[:n] if rows is None else self._bitmask
        if failures:
            raise RequestError(failures, out)
        return out

    # ------------------------------------------------------------------ plumbing
    def _worker(self, request_id: Any) -> int:
        try:
            return self._owner[request_id]
        except KeyError:
            raise KeyError(f"request {request_id!r} is not in the pool") from None
        except TypeError:
            raise TypeError(f"a request id must be a str or int, got {request_id!r}") from None

    def _flush(self, w: int) -> None:
        if self._ops[w]:
            self._seq += 1
            self._send(self._conns[w], ("step", self._seq, self._ops[w], []))
            self._ops[w] = []

    def _send(self, conn: Connection, msg: tuple[Any, ...]) -> None:
        try:
            conn.send_bytes(marshal.dumps(msg))
        except (OSError, ValueError):
            self._check_alive()
            raise

    def _recv(self, conn: Connection) -> tuple[Any, ...]:
        try:
            msg: tuple[Any, ...] = marshal.loads(conn.recv_bytes())
        except (EOFError, OSError):
            self._check_alive()
            raise GramaskError("a gramask pool worker closed its pipe") from None
        return msg

    def _drain(self) -> None:
        """Read the setup notices waiting on the pipes (never blocks)."""
        for conn in self._conns:
            while conn.poll(0):
                self._note(self._recv(conn))

    def _note(self, msg: tuple[Any, ...]) -> None:
        """Record a message that answers no step being waited for: a setup's end, or the
        answer to the queued operations that :meth:`add` sent ahead of it."""
        if msg[0] == "ready":
            _, rid, serial, error, seconds = msg
            if self._serial.get(rid) == serial:  # not an earlier request of the same id
                self._ready[rid] = error
                self.setup_seconds[rid] = seconds
        elif msg[0] == "done":
            self._late.update(dict(msg[2]))

    def _check_alive(self) -> None:
        for i, p in enumerate(self._procs):
            if p.poll() is not None:
                raise GramaskError(
                    f"gramask pool worker {i} (pid {p.pid}) died (exit code {p.returncode}); "
                    "the pool cannot continue: close it and start a new one")

    def close(self) -> None:
        """Stop the workers and free the shared memory (also on garbage collection)."""
        self._finalizer()

    def __enter__(self) -> ConstraintPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _start_worker(i: int, bitmask_path: str, rows: int, words: int,
                  grammars: Mapping[str, str]) -> tuple[Connection, subprocess.Popen[bytes]]:
    """A worker process (a fresh interpreter: nothing of the caller's ``__main__`` is
    imported or run in it) and the pool's end of its socket."""
    ours, theirs = socket.socketpair()
    fd = theirs.fileno()
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the directory holding gramask/
    env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH")) if x)
    args = json.dumps([fd, bitmask_path, rows, words, dict(grammars)])
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", "import sys; from gramask.serving.worker import main; "
             "main(sys.argv[1])", args],
            pass_fds=[fd], env=env, stdin=subprocess.DEVNULL)
    finally:
        theirs.close()
    return Connection(ours.detach()), proc


def _shutdown(conns: list[Connection], procs: list[subprocess.Popen[bytes]],
              shared: mmap.mmap, path: str, tmp: str) -> None:
    for conn in conns:
        with contextlib.suppress(OSError, ValueError):
            conn.send_bytes(marshal.dumps(("stop",)))
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.terminate()
            p.wait(timeout=5)
    for conn in conns:
        conn.close()
    with contextlib.suppress(BufferError):
        shared.close()  # a caller still holding a view keeps the mapping alive
    with contextlib.suppress(OSError):
        os.unlink(path)
    shutil.rmtree(tmp, ignore_errors=True)


def _check_id(request_id: object) -> None:
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        raise TypeError(f"a request id must be a str or int, got {request_id!r}")


def _row_index(r: object) -> int:
    if isinstance(r, bool) or not isinstance(r, (int, np.integer)):
        try:
            return int(r.__index__())  # type: ignore[attr-defined]  # a 0-d torch tensor
        except (AttributeError, TypeError):
            raise TypeError(f"a row must be an int, got {r!r}") from None
    return int(r)


def _token(t: object) -> int:
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError(f"a token id must be an int, got {t!r}")
    return int(t)

