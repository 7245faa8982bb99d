#!/usr/bin/env python
"""Serving benchmark: per-step batch fill for B concurrent requests, gramask's ConstraintPool
with 1, 2, ... worker processes, gramask in-process, llguidance and XGrammar, in one run.

A *request* is a real document cut at a line start: its prefix is set up (gramask: the
constraint, with the suffix for fill-in-the-middle; llguidance/XGrammar: a matcher that
consumes the prefix's tokens), then it is walked along its true next tokens (real tokenizer of
the vocabulary). A *step* advances every request of the batch by its last true token and fills
the batch's int32 bitmask (XGrammar/vLLM layout); the time of that whole call is the step's
fill time:

* ``pool-N``: :class:`gramask.serving.ConstraintPool` with N workers: ``advance`` (queued) +
  ``fill`` (one message per worker, rows written to shared memory in parallel);
* ``inproc``: gramask in this process, one thread: ``Constraint.advance`` per request +
  ``gramask.torch.fill_next_token_bitmask`` (what a single-stream user does today);
* ``llguidance``: ``consume_token`` per matcher + ``llguidance.torch.fill_next_token_bitmask_par``
  (its ``LLExecutor`` thread pool), on json and c (no Python: no INDENT/DEDENT);
* ``xgrammar``: ``BatchGrammarMatcher.batch_accept_token`` + ``batch_fill_next_token_bitmask``
  (threads), on json only (builtin JSON grammar; no faithful C or Python grammar).

Workloads: ``python-fim`` (stdlib files, a 1-4 line middle, the suffix up to the next top-level
definition at least 1 KB on), ``python-prefix`` (the same cuts, no suffix), ``json``
(generated ~2 KB documents), ``c`` (C files of the Python installation); asked by name,
``python-fim-budget`` and ``python-prefix-budget``: the same requests with a token budget
(``max_tokens`` = the true continuation's tokens + 8; gramask engines only). Requests are set up
before the timed steps (setup is reported per request: for the pool, measured in the worker).
With ``--churn``, a request whose walk ends is removed and a new one is added *during* the
steps; it joins the batch once ready, so the step times show whether setup stalls a step.
``CPU/row`` is the mask work's CPU time per request and step (pool: the workers' step threads;
in-process: this process): on a machine shared with other programs the wall times grow with
the load, this does not. ``rows`` is the mean requests per step (without ``--churn`` a request
leaves when its walk ends: FIM middles are short, so a FIM step fills fewer rows than a prefix
step of the same B); ``gap`` is the pool step's mean time outside its busiest worker (pipes,
this process, a worker that started the step late).

    python tools/bench_serving.py                          # all workloads, B=1,16,64,256
    python tools/bench_serving.py --quick                  # B=16,64, fewer steps
    python tools/bench_serving.py --workloads python-fim --batches 64 --workers 1,2 --churn
    python tools/bench_serving.py --json out.json
    python tools/bench_serving.py --workloads python-fim-budget,python-fim --batches 16 \
        --workers 2 --engines pool
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
sys.path.insert(0, str(TOOLS.parent))

from bench import documents, engine_llguidance, harness, real_tokenizer  # noqa: E402

import gramask  # noqa: E402
from gramask.serving import ConstraintPool  # noqa: E402

WORKLOADS = ("python-fim", "python-prefix", "json", "c")
# with a token budget (``max_tokens`` = the true continuation's tokens + BUDGET_SLACK): not in
# the default run, asked by name
BUDGETED = ("python-fim-budget", "python-prefix-budget")
BUDGET_SLACK = 8
GRAMMAR = {"python-fim": "python", "python-prefix": "python", "json": "json", "c": "c",
           "python-fim-budget": "python", "python-prefix-budget": "python"}


def log(msg: str) -> None:
    print(f"[bench_serving {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Spec:
    name: str
    prefix: str
    suffix: str | None
    walk: list[int]  # true next tokens
    prefix_tokens: list[int] = field(default_factory=list)  # for llguidance / XGrammar
    max_tokens: int | None = None  # the budget (gramask only)


# ============================================================================ requests
def _line_starts(text: str) -> list[int]:
    return [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n" and i + 1 < len(text)]


def make_specs(workload: str, n: int, steps: int, encode: Any, seed: int) -> list[Spec]:
    """``n`` requests of ``workload`` (distinct cuts of real documents), each with at least
    ``steps`` tokens to walk where the document allows. A ``-budget`` workload is the one
    without it with ``max_tokens`` = the true continuation's tokens (the middle; without a
    suffix, the rest of the document) + ``BUDGET_SLACK``."""
    budgeted = workload in BUDGETED
    workload = workload.removesuffix("-budget")
    rng = random.Random(seed)
    if workload.startswith("python"):
        docs = documents.python_docs(max(8, n // 2), seed)
    elif workload == "json":
        docs = documents.json_generated_docs(max(8, n), seed, depth=4)
    else:
        docs = documents.c_docs(max(8, n // 2), seed)
    out: list[Spec] = []
    i = 0
    while len(out) < n:
        name, text = docs[i % len(docs)]
        i += 1
        starts = _line_starts(text)
        cut = rng.choice(starts[: max(1, len(starts) * 3 // 4)])
        if workload == "json" and i <= len(docs):
            cut = 0  # the first pass over the documents starts each at its beginning
        suffix = None
        rest = text[cut:]
        if workload == "python-fim":
            k = rng.randint(1, 4)
            ends = [s for s in starts if s > cut]
            end = ends[k - 1] if len(ends) >= k else len(text)
            stop = next((s for s in starts if s > end + 1000 and
                         text.startswith(("def ", "class ", "@"), s)), len(text))
            rest, suffix = text[cut:end], text[end:stop]
        true = encode(rest)
        walk = true[: 2 * steps]
        if not walk:
            continue
        out.append(Spec(f"{name}@{cut}", text[:cut], suffix, walk, encode(text[:cut]),
                        len(true) + BUDGET_SLACK if budgeted else None))
    return out


# ============================================================================ engines
class Stats:
    def __init__(self) -> None:
        self.step_s: list[float] = []
        self.rows: list[int] = []
        self.setup_s: list[float] = []
        self.errors: list[str] = []
        self.worker_s: list[float] = []  # pool: the busiest worker's own time in the step
        # pool: the step's time outside its busiest worker (pipes, this process, a worker
        # that started late: scheduling, a collection in front of the step)
        self.gap_s: list[float] = []
        # CPU seconds of the step's mask work (pool: the workers' step threads, summed;
        # in-process: this process), and the busiest worker's: unlike wall times, these do
        # not grow when other programs load the machine
        self.cpu_s: list[float] = []
        self.worker_cpu_s: list[float] = []

    def summary(self) -> dict[str, Any]:
        st = np.array(self.step_s) * 1e3
        su = np.array(self.setup_s) * 1e3
        def pct(a: np.ndarray, q: float) -> float | None:
            return round(float(np.percentile(a, q)), 2) if a.size else None
        return {
            "steps": int(st.size), "rows_mean": round(float(np.mean(self.rows)), 1)
            if self.rows else 0,
            "step_ms": {"mean": round(float(st.mean()), 2) if st.size else None,
                        "p50": pct(st, 50), "p99": pct(st, 99),
                        "max": round(float(st.max()), 2) if st.size else None},
            "setup_ms": {"n": int(su.size), "p50": pct(su, 50), "p99": pct(su, 99),
                         "max": round(float(su.max()), 2) if su.size else None},
            "busiest_worker_ms_mean": round(float(np.mean(self.worker_s)) * 1e3, 2)
            if self.worker_s else None,
            "busiest_worker_cpu_ms_mean": round(float(np.mean(self.worker_cpu_s)) * 1e3, 2)
            if self.worker_cpu_s else None,
            "gap_ms": {"mean": round(float(np.mean(self.gap_s)) * 1e3, 2),
                       "p99": pct(np.array(self.gap_s) * 1e3, 99)} if self.gap_s else None,
            "cpu_ms_per_row": round(float(np.sum(self.cpu_s) / np.sum(self.rows)) * 1e3, 3)
            if self.cpu_s else None,
            "errors": self.errors[:5], "error_count": len(self.errors),
        }


class Driver:
    """One engine's requests: ``add`` (setup), ``step`` (advance + fill), ``remove``."""

    def ready(self) -> list[int]:
        raise NotImplementedError


def run_engine(drv: Any, specs: list[Spec], batch: int, steps: int, churn: bool,
               stats: Stats) -> None:
    """Set up ``batch`` requests, then ``steps`` timed steps (see the module docstring)."""
    queue = list(range(len(specs)))
    live: dict[int, int] = {}  # request index -> tokens advanced so far
    def start(r: int) -> None:
        try:
            drv.add(r, specs[r])
            live[r] = 0
        except gramask.GramaskError as e:  # in-process setup: an invalid cut is reported
            stats.errors.append(f"setup of {specs[r].name}: {str(e)[:160]}")

    for _ in range(batch):
        start(queue.pop(0))
    try:
        drv.wait_all(list(live))
    except gramask.serving.RequestError as e:  # e.g. a cut whose suffix does not lex
        for r, msg in e.failures.items():
            stats.errors.append(f"setup of {specs[r].name}: {msg[:160]}")
            drv.remove(r)
            del live[r]
    pending_adv: dict[int, int] = {}
    for _ in range(steps):
        ids = [r for r in live if drv.is_ready(r)]
        if not ids:
            break
        t0 = time.perf_counter()
        c0 = time.process_time()
        errs = drv.step(ids, pending_adv)
        stats.step_s.append(time.perf_counter() - t0)
        if hasattr(drv, "pool"):
            stats.worker_s.append(max(drv.pool.last_worker_seconds))
            stats.gap_s.append(stats.step_s[-1] - stats.worker_s[-1])
            stats.worker_cpu_s.append(max(drv.pool.last_worker_cpu_seconds))
            stats.cpu_s.append(sum(drv.pool.last_worker_cpu_seconds))
        elif isinstance(drv, InprocDriver):
            stats.cpu_s.append(time.process_time() - c0)
        stats.rows.append(len(ids))
        stats.errors.extend(errs)
        pending_adv = {}
        for r in ids:
            k = live[r]
            walk = specs[r].walk
            pending_adv[r] = walk[k]
            live[r] = k + 1
            if live[r] >= len(walk):  # its walk is over: it leaves the batch
                pending_adv.pop(r)
                stats.setup_s.append(drv.setup_seconds(r))
                drv.remove(r)
                del live[r]
                if churn and queue:  # and a new request arrives
                    start(queue.pop(0))
    for r in list(live):
        if drv.is_ready(r):
            stats.setup_s.append(drv.setup_seconds(r))
        drv.remove(r)


class PoolDriver:
    def __init__(self, pool: ConstraintPool, key: str, words: int) -> None:
        self.pool, self.key = pool, key
        self.seen: set[int] = set()

    def add(self, r: int, s: Spec) -> None:
        self.pool.add(r, self.key, prefix=s.prefix, suffix=s.suffix, max_tokens=s.max_tokens)

    def wait_all(self, ids: list[int]) -> None:
        self.pool.wait_ready(ids)

    def is_ready(self, r: int) -> bool:
        return r in self.pool and self.pool.is_ready(r)  # a failed request was removed

    def setup_seconds(self, r: int) -> float:
        return self.pool.setup_seconds[r]

    def step(self, ids: list[int], adv: dict[int, int]) -> list[str]:
        for r, t in adv.items():
            if r in self.pool:  # not one that failed in the last step
                self.pool.advance(r, [t])
        try:
            self.pool.fill(ids)
        except gramask.serving.RequestError as e:
            for r in e.failures:
                self.pool.remove(r)
            return [f"{r}: {m[:160]}" for r, m in e.failures.items()]
        return []

    def remove(self, r: int) -> None:
        if r in self.pool:
            self.pool.remove(r)


class InprocDriver:
    def __init__(self, cg: gramask.CompiledGrammar) -> None:
        import torch

        from gramask.torch import allocate_token_bitmask, fill_next_token_bitmask

        self.cg = cg
        self.cs: dict[int, Any] = {}
        self.setup: dict[int, float] = {}
        self.fill = fill_next_token_bitmask
        self.bitmask = allocate_token_bitmask(512, len(cg.vocab))
        self.torch = torch

    def add(self, r: int, s: Spec) -> None:
        t0 = time.perf_counter()
        self.cs[r] = self.cg.constraint(s.prefix, s.suffix, max_tokens=s.max_tokens)
        self.setup[r] = time.perf_counter() - t0

    def wait_all(self, ids: list[int]) -> None:
        pass

    def is_ready(self, r: int) -> bool:
        return r in self.cs

    def setup_seconds(self, r: int) -> float:
        return self.setup[r]

    def step(self, ids: list[int], adv: dict[int, int]) -> list[str]:
        errs = []
        for r, t in adv.items():
            try:
                self.cs[r].advance(t)
            except gramask.TokenRejected as e:
                errs.append(f"{r}: {e}"[:160])
        self.fill([self.cs[r] for r in ids], self.bitmask[: len(ids)])
        return errs

    def remove(self, r: int) -> None:
        self.cs.pop(r, None)


class LLGuidanceDriver:
    def __init__(self, workload: str, vname: str, vocab: Any, real_tok: Any,
                 threads: int) -> None:
        import llguidance
        import llguidance.torch as lt
        import torch

        eng = engine_llguidance.LLGuidanceEngine()
        args = types.SimpleNamespace(real_tok={vname: real_tok}, llg_step_max_items=1_000_000)
        res = harness.Result("llguidance", GRAMMAR[workload], vname)
        eng.compile(GRAMMAR[workload], vname, vocab, args, res)
        self.eng, self.llg, self.lt = eng, llguidance, lt
        self.notes = res.notes
        self.executor = llguidance.LLExecutor(num_threads=threads)
        self.bitmask = torch.zeros((512, eng.words), dtype=torch.int32)
        self.ms: dict[int, Any] = {}
        self.setup: dict[int, float] = {}

    def add(self, r: int, s: Spec) -> None:
        t0 = time.perf_counter()
        m = self.llg.LLMatcher(self.eng.tok, self.eng.grammar, log_level=0,
                               limits=self.eng.limits)
        for t in s.prefix_tokens:
            if not m.consume_token(t):
                break
        self.ms[r] = m
        self.setup[r] = time.perf_counter() - t0

    def wait_all(self, ids: list[int]) -> None:
        pass

    def is_ready(self, r: int) -> bool:
        return r in self.ms

    def setup_seconds(self, r: int) -> float:
        return self.setup[r]

    def step(self, ids: list[int], adv: dict[int, int]) -> list[str]:
        errs = []
        for r, t in adv.items():
            if not self.ms[r].consume_token(t):
                errs.append(f"{r}: consume_token({t}) failed")
        self.lt.fill_next_token_bitmask_par(
            self.executor, [(self.ms[r], i) for i, r in enumerate(ids)],
            self.bitmask[: len(ids)])
        return errs

    def remove(self, r: int) -> None:
        self.ms.pop(r, None)


class XGrammarDriver:
    def __init__(self, vocab: Any, threads: int) -> None:
        import xgrammar as xgr

        toks = [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(len(vocab))]
        stop = [vocab.eos_token_id] if vocab.eos_token_id is not None else None
        ti = xgr.TokenizerInfo(toks, xgr.VocabType.RAW, vocab_size=len(vocab),
                               stop_token_ids=stop)
        self.compiled = xgr.GrammarCompiler(ti, max_threads=2,
                                            cache_enabled=False).compile_builtin_json_grammar()
        self.xgr = xgr
        self.batch = xgr.BatchGrammarMatcher(max_threads=threads)
        self.bitmask = xgr.allocate_token_bitmask(512, len(vocab))
        self.ms: dict[int, Any] = {}
        self.setup: dict[int, float] = {}

    def add(self, r: int, s: Spec) -> None:
        t0 = time.perf_counter()
        m = self.xgr.GrammarMatcher(self.compiled)
        for t in s.prefix_tokens:
            if not m.accept_token(t):
                break
        self.ms[r] = m
        self.setup[r] = time.perf_counter() - t0

    wait_all = LLGuidanceDriver.wait_all
    is_ready = LLGuidanceDriver.is_ready
    setup_seconds = LLGuidanceDriver.setup_seconds
    remove = LLGuidanceDriver.remove

    def step(self, ids: list[int], adv: dict[int, int]) -> list[str]:
        errs = []
        if adv:
            rs = list(adv)
            ok = self.xgr.BatchGrammarMatcher.batch_accept_token(
                [self.ms[r] for r in rs], [adv[r] for r in rs])
            errs = [f"{r}: accept_token failed" for r, o in zip(rs, ok, strict=True) if not o]
        self.batch.batch_fill_next_token_bitmask([self.ms[r] for r in ids],
                                                 self.bitmask[: len(ids)])
        return errs


# ============================================================================ main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--batches", default="1,16,64,256")
    ap.add_argument("--workers", default=None,
                    help="pool sizes (default: 1, 2 and the CPUs available, deduplicated)")
    ap.add_argument("--engines", default="pool,inproc,llguidance,xgrammar")
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--churn", action="store_true",
                    help="replace finished requests during the steps (setup beside the batch)")
    ap.add_argument("--inproc-max-batch", type=int, default=64,
                    help="skip the in-process baseline above this batch (it is slow)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    if args.quick:
        args.batches, args.steps = "16,64", 16
    cpus = len(os.sched_getaffinity(0))
    workers = sorted({int(x) for x in args.workers.split(",")} if args.workers
                     else {1, 2, cpus})
    batches = [int(x) for x in args.batches.split(",")]
    engines = args.engines.split(",")
    vocab = gramask.Vocabulary.bundled(args.vocab)
    real_tok = real_tokenizer.RealTokenizer(args.vocab)
    results: list[dict[str, Any]] = []
    log(f"{cpus} CPUs available; workers {workers}; batches {batches}")
    for wl in args.workloads.split(","):
        t0 = time.perf_counter()
        cg = gramask.compile(gramask.grammars.load(GRAMMAR[wl]), vocab)
        log(f"{wl}: compiled/loaded in {time.perf_counter() - t0:.1f} s")
        need = max(batches) * (3 if args.churn else 1)
        specs = make_specs(wl, need, args.steps, real_tok.encode, args.seed)
        log(f"{wl}: {len(specs)} requests")
        for b in batches:
            runs: list[tuple[str, Any]] = []
            if "pool" in engines:
                runs += [(f"pool-{w}", ("pool", w)) for w in workers]
            if "inproc" in engines and b <= args.inproc_max_batch:
                runs.append(("inproc", ("inproc", 1)))
            if "llguidance" in engines and wl in ("json", "c"):
                runs.append((f"llguidance-{cpus}t", ("llguidance", cpus)))
            if "xgrammar" in engines and wl == "json":
                runs.append((f"xgrammar-{cpus}t", ("xgrammar", cpus)))
            for label, (kind, n) in runs:
                stats = Stats()
                pool = None
                try:
                    if kind == "pool":
                        pool = ConstraintPool({GRAMMAR[wl]: cg}, workers=n, max_batch=512)
                        drv: Any = PoolDriver(pool, GRAMMAR[wl], pool.words)
                    elif kind == "inproc":
                        drv = InprocDriver(gramask.CompiledGrammar.load(cg.info["cache_path"]))
                    elif kind == "llguidance":
                        drv = LLGuidanceDriver(wl, args.vocab, vocab, real_tok, n)
                    else:
                        drv = XGrammarDriver(vocab, n)
                    gc.collect()
                    run_engine(drv, specs, b, args.steps, args.churn, stats)
                finally:
                    if pool is not None:
                        pool.close()
                row = {"workload": wl, "batch": b, "engine": label, "cpus": cpus,
                       "churn": args.churn, **stats.summary()}
                results.append(row)
                if args.json:  # after every run: a long benchmark keeps what it measured
                    Path(args.json).write_text(json.dumps(results, indent=1))
                s, u = row["step_ms"], row["setup_ms"]
                log(f"{wl} B={b} {label}: {row['rows_mean']} rows per step; step mean "
                    f"{s['mean']} p50 {s['p50']} p99 {s['p99']} "
                    f"max {s['max']} ms (busiest worker {row['busiest_worker_ms_mean']}, CPU "
                    f"{row['busiest_worker_cpu_ms_mean']}); CPU per row "
                    f"{row['cpu_ms_per_row']} ms; setup p50 {u['p50']} p99 {u['p99']} ms; "
                    f"errors {row['error_count']}; load average {os.getloadavg()[0]:.1f}")
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def print_table(results: list[dict[str, Any]]) -> None:
    """``rows``: requests per step, on average (a request leaves once its walk is over: FIM
    middles are short, so FIM steps fill fewer rows than prefix steps of the same B); ``gap``:
    the step's mean time outside its busiest worker (pool)."""
    print("| workload | B | engine | rows | step mean | p50 | p99 | max | CPU/row | gap | "
          "setup p50 | setup p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        s, u, g = r["step_ms"], r["setup_ms"], r.get("gap_ms")
        print(f"| {r['workload']} | {r['batch']} | {r['engine']} | {r['rows_mean']} | "
              f"{s['mean']} | {s['p50']} | {s['p99']} | {s['max']} | {r['cpu_ms_per_row']} | "
              f"{g['mean'] if g else '—'} | {u['p50']} | {u['p99']} |"
              + (f" ({r['error_count']} errors)" if r["error_count"] else ""))


if __name__ == "__main__":
    main()
