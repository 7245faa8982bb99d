#!/usr/bin/env python
"""Ahead-of-time compile benchmark: bundled grammars x bundled vocabularies.

For every (grammar, vocabulary) cell, in a fresh subprocess (so that the peak RSS is the cell's
own, ``ru_maxrss`` of the child):

* cold compile time: ``gramask.compiler.pipeline.build(grammar, vocab)``, the full tables as
  compiling to disk builds them (``cache=False`` would walk rows lazily) (the vocabulary and the
  grammar are loaded before the clock starts; their load times are reported separately);
* artifact size on disk (``CompiledGrammar.save``);

then, in a second fresh subprocess (a warm process that has imported gramask, as a server
would):

* load time: ``CompiledGrammar.load(path)``, first call and median of 5;
* cache hit: ``gramask.compile(grammar, vocab, cache=True, cache_dir=...)`` on a populated
  cache (this also hashes the grammar and the vocabulary), first call;
* first mask: ``cg.constraint()`` + ``allowed()`` on the loaded artifact (builds the runtime).

Prints a Markdown table and checks the targets of DESIGN.md::

    python tools/bench_compile.py
    python tools/bench_compile.py --grammars json --vocabs gpt2,qwen2 --json

``--scaling`` runs the size cases of issue 23 instead (grammars generated here: rule chains,
thousands of literals or regexes, bounded repeats, over-limit grammars that must be refused,
a GBNF grammar), each in a fresh process with its own timeout: time to load the grammar, time
to compile it cold (wall and CPU: on a shared machine CPU time is the steadier number), peak
RSS, and the GrammarError for the refused ones. ``--against DIR`` runs every case a second
time with another checkout first on the path (e.g. ``/work/main``: before/after in one table)::

    python tools/bench_compile.py --scaling --vocabs deepseek-v4 --against /work/main
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAMMARS = ("json", "python", "sql", "c")
DEFAULT_GRAMMARS = ("json", "python")
VOCABS = ("gpt2", "deepseek-v4", "qwen2")
# start symbol per bundled grammar (python.lark: start="file_input", as the runtime uses it)
START = {"python": "file_input"}

# DESIGN.md targets (129k vocabulary = deepseek-v4; applied to every vocabulary here as a guide)
TARGET_COMPILE_S = {"python": 60.0, "json": 5.0}
TARGET_RSS_MB = 4096.0
TARGET_ARTIFACT_MB = 64.0
TARGET_LOAD_S = 0.3


# ------------------------------------------------------------------------------------ children


def _peak_rss_mb() -> float:
    import resource

    # Linux: kilobytes
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _load_inputs(grammar: str, vocab: str):
    import gramask
    from gramask.grammar import Grammar

    t0 = time.perf_counter()
    v = gramask.Vocabulary.bundled(vocab)
    t1 = time.perf_counter()
    g = Grammar.from_lark(
        gramask.grammars.text(grammar), start=START.get(grammar, "start"), source=f"{grammar}.lark",
        lexer=gramask.grammars.lexer_mode(grammar),
    )
    t2 = time.perf_counter()
    return v, g, t1 - t0, t2 - t1


def child_compile(grammar: str, vocab: str, out_dir: str) -> dict:
    import gramask
    from gramask.artifact import FORMAT_VERSION
    from gramask.cache.store import cache_key, cached_path
    from gramask.compiler.pipeline import build

    v, g, vocab_s, grammar_s = _load_inputs(grammar, vocab)
    rss_before = _peak_rss_mb()
    t0 = time.perf_counter()
    cg = build(g, v, progress=False)  # the full tables (cache=False would walk rows lazily)
    compile_s = time.perf_counter() - t0
    rss = _peak_rss_mb()
    path = Path(out_dir) / f"{grammar}-{vocab}.gmask"
    t0 = time.perf_counter()
    size = cg.save(path)
    save_s = time.perf_counter() - t0
    size_on_disk = path.stat().st_size
    # Populate a cache directory for the cache-hit measurement of the load child (same key as
    # gramask.compile(cache=True) computes).
    cache_dir = Path(out_dir) / "cache"
    cache_dir.mkdir(exist_ok=True)
    key = cache_key(
        grammar_hash=g.fingerprint(),
        vocab_hash=v.fingerprint(),
        format_version=FORMAT_VERSION,
        version=gramask.__version__,
    )
    cached = cached_path(cache_dir, key)
    if not cached.exists():
        os.link(path, cached)
    try:
        st = cg.stats()
        stats = {k: st[k] for k in ("lexer_states", "parser_states", "terminals", "nonzeros")}
    except Exception as e:  # stats are informative only
        stats = {"error": f"{type(e).__name__}: {e}"}
    return {
        "vocab_size": len(v),
        "vocab_load_s": vocab_s,
        "grammar_load_s": grammar_s,
        "compile_s": compile_s,
        "save_s": save_s,
        "artifact_bytes": size_on_disk,
        "artifact_bytes_reported": size,
        "peak_rss_mb": rss,
        "rss_before_compile_mb": rss_before,
        "path": str(path),
        "cache_dir": str(cache_dir),
        "stats": stats,
    }


def child_load(grammar: str, vocab: str, path: str, cache_dir: str, repeats: int) -> dict:
    import numpy as np

    import gramask

    v, g, _, _ = _load_inputs(grammar, vocab)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cg = gramask.CompiledGrammar.load(path)
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    c = cg.constraint()
    m = c.allowed()
    first_mask_s = time.perf_counter() - t0
    del cg, c
    t0 = time.perf_counter()
    hit = gramask.compile(g, v, cache=True, cache_dir=cache_dir, progress=False)
    hit_s = time.perf_counter() - t0
    from_cache = bool(hit.info.get("from_cache"))
    return {
        "load_first_s": times[0],
        "load_median_s": statistics.median(times),
        "load_all_s": times,
        "cache_hit_s": hit_s,
        "cache_hit_from_cache": from_cache,
        "first_mask_s": first_mask_s,
        "first_mask_allowed": int(np.count_nonzero(m)),
        "peak_rss_mb": _peak_rss_mb(),
    }


# ------------------------------------------------------------------------------------ scaling


def _scaling_cases() -> dict[str, tuple[str, str]]:
    """name -> (kind, grammar text): kind "lark" or "gbnf"; the text is built here."""
    def chain(n: int) -> str:
        return "start: r0\n" + "".join(f'r{i}: r{i + 1} "a" | "b"\n' for i in range(n)) + (
            f'r{n}: "c"\n')

    def alts(names: list[str]) -> str:
        return "start: (" + " | ".join(names) + ")+\n"

    lits = [f"K{i}" for i in range(5000)]
    regs = [f"R{i}" for i in range(1, 2001)]
    gbnf_json = (ROOT / "tests" / "data" / "gbnf" / "json.gbnf")
    return {
        "bundled c": ("bundled", "c"),
        "bundled sql": ("bundled", "sql"),
        "bundled python": ("bundled", "python"),
        "bundled json": ("bundled", "json"),
        "chain of 500 rules": ("lark", chain(500)),
        "chain of 1,000 rules": ("lark", chain(1000)),
        "chain of 2,000 rules": ("lark", chain(2000)),
        "5,000 literal terminals": ("lark", alts(lits) + "".join(
            f'K{i}: "kw{i}"\n' for i in range(5000)) + "%ignore \" \"\n"),
        "2,000 regex terminals /x{i}[a-z]*/": ("lark", alts(regs) + "".join(
            f"R{i}: /x{{{i}}}[a-z]*/\n" for i in range(1, 2001)) + "%ignore \" \"\n"),
        "[\\U00010000-\\U0010ffff]+": ("lark", "start: A\nA: /[\\U00010000-\\U0010ffff]+/\n"),
        "/[a-z]{1000}/": ("lark", 'start: A ";"\nA: /[a-z]{1000}/\n'),
        "/(ab){2,500}c/": ("lark", "start: A\nA: /(ab){2,500}c/\n"),
        "over limit: 100 literals of 100 KB": ("lark", alts([f"L{i}" for i in range(100)]) + "".join(
            f'L{i}: "{chr(97 + i % 26) * 3}{"q" * 100_000}"\n' for i in range(100))),
        "over limit: 10 literals of 2,000 characters": ("lark", alts(
            [f"L{i}" for i in range(10)]) + "".join(
            f'L{i}: "{"".join(chr(97 + (i * 7 + j * 13) % 26) for j in range(2000))}"\n'
            for i in range(10))),
        "over limit: one regex of 50,000 characters": ("lark", "start: R\nR: /" + "ab" * 25_000
                                                       + "/\n"),
        "over limit: x{2,50000}": ("lark", "start: R\nR: /x{2,50000}/\n"),
        "GBNF json.gbnf (llama.cpp)": ("gbnf", gbnf_json.read_text(encoding="utf-8")
                                       if gbnf_json.exists() else ""),
    }


def child_scaling(case: str, vocab: str) -> dict:
    import gramask
    from gramask.compiler.pipeline import build
    from gramask.errors import GrammarError
    from gramask.grammar import Grammar

    kind, text = _scaling_cases()[case]
    v = gramask.Vocabulary.bundled(vocab)
    rss0 = _peak_rss_mb()
    w0, c0 = time.perf_counter(), time.process_time()
    out: dict = {}
    try:
        if kind == "bundled":
            g = gramask.grammars.load(text)
        elif kind == "gbnf":
            g = Grammar.from_gbnf(text)
        else:
            g = Grammar.from_lark(text)
        out["load_s"], out["load_cpu_s"] = time.perf_counter() - w0, time.process_time() - c0
        w1, c1 = time.perf_counter(), time.process_time()
        cg = build(g, v, progress=False)  # the full tables, as compiling to disk builds them
        out["compile_s"], out["compile_cpu_s"] = time.perf_counter() - w1, time.process_time() - c1
        out["lexer_states"] = cg.dfa.num_states
    except GrammarError as e:
        out["refused"] = str(e).splitlines()[0][:160]
    out["total_s"], out["total_cpu_s"] = time.perf_counter() - w0, time.process_time() - c0
    out["peak_rss_mb"] = _peak_rss_mb()
    out["rss_before_mb"] = rss0
    return out


def run_scaling(vocab: str, against: str | None, timeout: float, only: str | None) -> list[dict]:
    rows = []
    for case in _scaling_cases():
        if only and only.lower() not in case.lower():
            continue
        row: dict = {"case": case}
        for label, root in [("after", str(ROOT)), ("before", against)]:
            if root is None:
                continue
            print(f"[bench_compile] {case} ({label}) ...", file=sys.stderr, flush=True)
            row[label] = _run_child(["--child", "scaling", "--case", case, "--vocab", vocab],
                                    timeout, root=root)
        rows.append(row)
    return rows


def _cell(r: dict | None) -> str:
    if r is None:
        return "—"
    if "error" in r:
        return r["error"].split(":")[0] if "timed out" in r["error"] else "error"
    if "refused" in r:
        return f"refused in {r['total_s']:.1f} s ({r['total_cpu_s']:.1f} s CPU)"
    return (f"{r['load_s']:.1f} + {r['compile_s']:.1f} s ({r['load_cpu_s']:.1f} + "
            f"{r['compile_cpu_s']:.1f} s CPU), {r['peak_rss_mb']:.0f} MB")


def scaling_markdown(rows: list[dict], vocab: str, against: str | None) -> str:
    head = f"| case (× {vocab}) | after: load + compile, peak RSS |"
    if against:
        head += f" before ({against}) |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        line = f"| {r['case']} | {_cell(r.get('after'))} |"
        if against:
            line += f" {_cell(r.get('before'))} |"
        lines.append(line)
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ parent


def _run_child(args: list[str], timeout: float, root: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root or ROOT)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(
            [sys.executable, __file__, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(ROOT),
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {p.returncode}: " + " | ".join(tail)}
    out = json.loads(lines[-1])
    out["child_wall_s"] = wall
    return out


def _fmt_s(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _checks(r: dict) -> list[str]:
    out = []
    t = TARGET_COMPILE_S.get(r["grammar"])
    if "compile_s" in r:
        if t is not None and r["compile_s"] > t:
            out.append(f"compile {r['compile_s']:.1f}s > {t:.0f}s")
        if r["grammar"] == "python":
            if r["peak_rss_mb"] > TARGET_RSS_MB:
                out.append(f"RSS {r['peak_rss_mb']:.0f}MB > {TARGET_RSS_MB:.0f}MB")
            if r["artifact_bytes"] / 2**20 > TARGET_ARTIFACT_MB:
                out.append(f"artifact > {TARGET_ARTIFACT_MB:.0f}MB")
    if r.get("load_median_s") is not None and r["load_median_s"] > TARGET_LOAD_S:
        out.append(f"load {r['load_median_s']:.2f}s > {TARGET_LOAD_S}s")
    if r.get("cache_hit_s") is not None and not r.get("cache_hit_from_cache"):
        out.append("cache hit did not come from the cache (rebuilt)")
    if r.get("cache_hit_s") is not None and r["cache_hit_s"] > TARGET_LOAD_S:
        out.append(f"cache hit {r['cache_hit_s']:.2f}s > {TARGET_LOAD_S}s")
    return out


def markdown(rows: list[dict]) -> str:
    head = (
        "| grammar | vocab | V | compile (s, cold) | peak RSS (MiB) | artifact (MiB) "
        "| load median / first (s) | cache hit (s) | first mask (ms) | targets |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['grammar']} | {r['vocab']} | — | ERROR: {r['error']} |||||||")
            continue
        chk = _checks(r)
        lines.append(
            "| {g} | {v} | {V} | {c} | {rss:.0f} | {a:.2f} | {lm} / {lf} | {ch} | {fm} | {t} |".format(
                g=r["grammar"],
                v=r["vocab"],
                V=r["vocab_size"],
                c=_fmt_s(r["compile_s"], 2),
                rss=r["peak_rss_mb"],
                a=r["artifact_bytes"] / 2**20,
                lm=_fmt_s(r.get("load_median_s"), 3),
                lf=_fmt_s(r.get("load_first_s"), 3),
                ch=_fmt_s(r.get("cache_hit_s"), 3),
                fm=_fmt_s(None if r.get("first_mask_s") is None else r["first_mask_s"] * 1e3, 1),
                t="ok" if not chk else "MISS: " + "; ".join(chk),
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammars", default=",".join(DEFAULT_GRAMMARS),
                    help=f"comma-separated bundled grammars (default json,python; known: {','.join(GRAMMARS)})")
    ap.add_argument("--vocabs", default=",".join(VOCABS), help="comma-separated bundled vocabularies")
    ap.add_argument("--repeats", type=int, default=5, help="load repetitions (median reported)")
    ap.add_argument("--timeout", type=float, default=900.0, help="per-child timeout in seconds")
    ap.add_argument("--keep", metavar="DIR", help="write the artifacts to DIR and keep them")
    ap.add_argument("--json", action="store_true", help="print machine-readable JSON instead")
    ap.add_argument("--scaling", action="store_true",
                    help="the size cases of issue 23 instead of the bundled table")
    ap.add_argument("--against", metavar="DIR",
                    help="--scaling: also run every case with this checkout on the path")
    ap.add_argument("--only", help="--scaling: cases whose name contains this text")
    # internal: child modes
    ap.add_argument("--child", choices=["compile", "load", "scaling"], help=argparse.SUPPRESS)
    ap.add_argument("--case", help=argparse.SUPPRESS)
    ap.add_argument("--grammar", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--path", help=argparse.SUPPRESS)
    ap.add_argument("--cache-dir", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)

    if a.child == "compile":
        print(json.dumps(child_compile(a.grammar, a.vocab, a.out)))
        return 0
    if a.child == "load":
        print(json.dumps(child_load(a.grammar, a.vocab, a.path, a.cache_dir, a.repeats)))
        return 0
    if a.child == "scaling":
        print(json.dumps(child_scaling(a.case, a.vocab)))
        return 0
    if a.scaling:
        vocab = a.vocabs.split(",")[0]
        t0 = time.perf_counter()
        rows = run_scaling(vocab, a.against, a.timeout, a.only)
        if a.json:
            print(json.dumps({"rows": rows, "total_s": time.perf_counter() - t0}, indent=1))
        else:
            print(scaling_markdown(rows, vocab, a.against))
            print(f"\nload = Grammar.from_lark/from_gbnf; compile = full build (pipeline.build); "
                  f"each case in a fresh process; total wall time "
                  f"{time.perf_counter() - t0:.0f} s")
        return 0

    grammars = [s for s in a.grammars.split(",") if s]
    vocabs = [s for s in a.vocabs.split(",") if s]
    t_start = time.perf_counter()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="gramask-bench-compile-") as tmp:
        out_dir = a.keep or tmp
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        for gname in grammars:
            for vname in vocabs:
                row: dict = {"grammar": gname, "vocab": vname}
                if not a.json:
                    print(f"[bench_compile] {gname} x {vname} ...", file=sys.stderr, flush=True)
                res = _run_child(
                    ["--child", "compile", "--grammar", gname, "--vocab", vname, "--out", out_dir],
                    a.timeout,
                )
                row.update(res)
                if "error" not in res:
                    res2 = _run_child(
                        ["--child", "load", "--grammar", gname, "--vocab", vname,
                         "--path", res["path"], "--cache-dir", res["cache_dir"],
                         "--repeats", str(a.repeats)],
                        a.timeout,
                    )
                    if "error" in res2:
                        row["load_error"] = res2["error"]
                    else:
                        row.update({k: v for k, v in res2.items() if k != "peak_rss_mb"})
                        row["load_peak_rss_mb"] = res2["peak_rss_mb"]
                    if not a.keep:
                        Path(res["path"]).unlink(missing_ok=True)
                rows.append(row)
    total = time.perf_counter() - t_start
    if a.json:
        print(json.dumps({"rows": rows, "total_s": total}, indent=1))
        return 0
    print(markdown(rows))
    print()
    print(
        f"compile = full build (pipeline.build) in a fresh process (vocabulary and grammar "
        f"loaded before the clock); peak RSS = ru_maxrss of that process (includes the "
        f"vocabulary); load = CompiledGrammar.load, median of {a.repeats} in a second fresh "
        f"process; cache hit = gramask.compile(cache=True) on a populated cache (hashes grammar "
        f"+ vocabulary, loads, verifies); first mask = constraint() + allowed() on the loaded "
        f"artifact. Targets (DESIGN.md): python compile <= 60 s, <= 4 GB RSS, artifact <= 64 MB; "
        f"json compile <= 5 s; load <= 0.3 s."
    )
    for r in rows:
        if r.get("load_error"):
            print(f"load child failed for {r['grammar']} x {r['vocab']}: {r['load_error']}")
    print(f"total wall time {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
