#!/usr/bin/env python
"""Per-token mask latency while forcing real documents: gramask vs XGrammar, llguidance, outlines.

A document is tokenised with the *real* tokenizer of the vocabulary (no special tokens); then, at
every step, each engine computes its mask and is advanced by the true token. The true token must
be allowed; when an engine's mask excludes it (or its advance rejects it) that is reported. All
engines run in the same process on the same grammar (as far as each engine can express it) and
the same vocabulary.

Timed calls (one ``perf_counter_ns`` pair around the call itself, nothing else):

* gramask: ``Constraint.allowed()`` (mask) and ``allowed()`` + ``advance()`` (step);
* llguidance: ``LLMatcher.unsafe_compute_mask_ptr`` (what ``llguidance.numpy.
  fill_next_token_bitmask`` calls) and ``+ consume_token``;
* XGrammar: ``GrammarMatcher.fill_next_token_bitmask`` and ``+ accept_token``;
* outlines-core: ``Guide.write_mask_into`` and ``+ Guide.advance``.

The mask is also computed once after the last token (so each document gives tokens + 1 masks).
Each engine gets its own pass over a document; gramask goes first and its masks (packed) are
kept, so the other engines' masks are compared with gramask's step by step (the comparison is
outside the timed calls). Grammars and documents:

* json: ``gramask/grammars/json.lark`` for gramask and llguidance (same Lark text); XGrammar's
  builtin JSON grammar; outlines-core: a generic JSON regex with bounded nesting depth (built
  here, see ``json_regex``); documents: real ``.json`` files from the venv's site-packages
  (first tokens) + generated ~2 KB documents.
* python: ``python.lark`` (start ``file_input``), gramask only (llguidance has no INDENT/DEDENT
  and no Lark templates; XGrammar and outlines-core have no Python grammar); documents: a seeded
  sample of stdlib ``.py`` files (first tokens of each).
* sql: ``sql.lark`` for gramask and llguidance (llguidance does not support terminal priorities:
  ``BLOB.2`` becomes ``BLOB``, the same language under longest-match lexing); documents:
  generated SQLite scripts (~2 KB), each checked by executing it with ``sqlite3``.
* c: ``c.lark`` for gramask and llguidance (llguidance has no Lark templates: it gets the same
  grammar as plain BNF, expanded by lark's loader exactly as gramask sees it, see
  ``flat_lark``); documents: a seeded sample of real ``.c``/``.h`` files of the Python
  installation and the venv.

llguidance accepts %ignore'd text only *between* lexemes, so its start rule is wrapped as
``start: _lead <start> _lead`` (``_lead``: the ignored terminals, repeated) so that documents may
begin with a comment and end with a newline as in gramask and lark. Its ``step_max_items`` limit
is raised to 1e6 by default (at its default, 50000, it stops on C with the 129k/151k
vocabularies: "Too many items"); ``--llg-step-max-items 0`` keeps its default. gramask compiles
through its cache (``--compile-cold`` to force a cold compile); one ``CompiledGrammar`` serves all
documents of a (grammar, vocabulary) cell, as in a server. Python's cyclic GC stays on
(``--no-gc`` to measure without it); GC pauses are reported per engine.

    python tools/bench_runtime.py                 # default run (<= ~10 min on 2 cores)
    python tools/bench_runtime.py --quick         # ~1-2 min
    python tools/bench_runtime.py --grammars json --vocabs qwen2 --engines gramask,llguidance
    python tools/bench_runtime.py --json > out.json
"""


from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

import gramask

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.common import ENGINES, GRAMMARS, VOCABS, is_grammar_file, log
from bench.documents import (
    Doc,
    _cut,
    c_docs,
    json_generated_docs,
    json_real_docs,
    python_docs,
    sql_generated_docs,
)
from bench.engine_gramask import GramaskEngine
from bench.engine_llguidance import LLGuidanceEngine
from bench.engine_outlines import OutlinesEngine
from bench.engine_xgrammar import XGrammarEngine
from bench.harness import Ctx, Engine, NotAvailable, Result, run_doc
from bench.real_tokenizer import RealTokenizer
from bench.report import details, fmt_us, markdown, pct, summarize

ENGINE_CLASSES: dict[str, type[Engine]] = {
    "gramask": GramaskEngine,
    "llguidance": LLGuidanceEngine,
    "xgrammar": XGrammarEngine,
    "outlines": OutlinesEngine,
}


def engine_available(name: str) -> str:
    """'' if the engine's package imports, else the reason."""
    mod = {"llguidance": "llguidance", "xgrammar": "xgrammar", "outlines": "outlines_core"}.get(name)
    if mod is None:
        return ""
    try:
        __import__(mod)
    except Exception as e:  # ImportError, or a broken native extension
        return f"{type(e).__name__}: {e}"[:200]
    return ""


# ============================================================================ driver


def tokenize_docs(docs: list[Doc], rt: RealTokenizer, vocab: Any, max_tokens: int) -> list[str]:
    """Tokenise every document with the real tokenizer (first ``max_tokens`` tokens); check that
    the token bytes spell the text. Returns problems found."""
    problems = []
    for d in docs:
        ids = rt.encode(d.text)
        data = d.text.encode("utf-8")
        if b"".join(vocab.token_bytes(t) for t in ids) != data:
            problems.append(f"{rt.name}: {d.name}: token bytes do not spell the document")
        if len(ids) > max_tokens:
            ids = ids[:max_tokens]
            d.full = False
        bad = [t for t in ids if vocab.is_special(t)]
        if bad:
            problems.append(f"{rt.name}: {d.name}: special tokens in the encoding: {bad[:5]}")
        d.tokens[rt.name] = ids
    return problems


def build_docs(grammar: str, args: Any) -> list[Doc]:
    char_cap = args.doc_tokens * 12  # generous: tokenise a prefix, keep the first doc_tokens
    if grammar == "python":
        raw = python_docs(args.py_files, args.seed, args.python_source)
    elif grammar == "json":
        raw = json_real_docs(args.json_real, args.seed) + json_generated_docs(
            args.json_generated, args.seed, depth=args.outlines_depth)
    elif grammar == "sql":
        raw = sql_generated_docs(args.sql_docs, args.seed)
    elif grammar == "c":
        raw = c_docs(args.c_files, args.seed)
    elif is_grammar_file(grammar):
        if not args.docs:
            raise SystemExit(f"{grammar}: a grammar file needs its documents (--docs FILE ...)")
        raw = [(Path(f).name, Path(f).read_text()) for f in args.docs]
    else:
        raise ValueError(grammar)
    docs = []
    for name, text in raw:
        cut, full = _cut(text, char_cap)
        docs.append(Doc(name, cut, full))
    return docs


class _GCWatch:
    """Python's cyclic GC pauses, attributed to the engine whose pass is running."""

    def __init__(self) -> None:
        self.engine = ""
        self.t0 = 0.0
        self.pauses: dict[str, list[tuple[int, float]]] = {}

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.t0 = time.perf_counter()
        elif self.engine:
            self.pauses.setdefault(self.engine, []).append(
                (info["generation"], time.perf_counter() - self.t0))


def _track_slowest(res: Result, doc: Doc, first: int, ctx: Ctx, keep: int = 3) -> None:
    part = res.mask_ns[first:]
    if not part:
        return
    toks = doc.tokens[ctx.vname]
    for i in np.argsort(part)[::-1][:keep]:
        step = int(i)
        before = b"".join(ctx.vocab.token_bytes(t) for t in toks[:step])[-40:]
        res.slowest.append((int(part[step]), doc.name.split(" ")[0], step, before))
    res.slowest.sort(reverse=True)
    del res.slowest[keep:]


def run_cell(grammar: str, vname: str, engines: list[str], args: Any, docs: list[Doc]):
    vocab = gramask.Vocabulary.bundled(vname)
    ctx = Ctx(vocab, grammar, vname, args)
    results: dict[str, Result] = {}
    objs: dict[str, Any] = {}
    for e in engines:
        res = Result(e, grammar, vname)
        results[e] = res
        why = engine_available(e)
        if why:
            res.unavailable = f"not available: {why}"
            continue
        obj = ENGINE_CLASSES[e]()
        try:
            log(f"{grammar} x {vname}: setting up {e}")
            obj.compile(grammar, vname, vocab, args, res)
            objs[e] = obj
        except NotAvailable as ex:
            res.unavailable = str(ex)
        except Exception as ex:
            res.unavailable = f"setup failed: {type(ex).__name__}: {ex}"[:300]
            if args.verbose:
                traceback.print_exc()
    if "gramask" not in objs and not (args.only_doc is not None and objs):
        return results  # gramask is the reference (a cold worker runs one engine alone)
    deadline = time.perf_counter() + args.cell_timeout
    watch = _GCWatch()
    gc.callbacks.append(watch)
    if args.no_gc:
        gc.disable()
    if args.gc_freeze:
        gc.collect()
        gc.freeze()
    try:
        _run_docs(engines, objs, results, ctx, docs, args, deadline, watch, vname)
    finally:
        gc.callbacks.remove(watch)
        gc.enable()
        gc.unfreeze()
    for e, pauses in watch.pauses.items():
        results[e].gc_pauses = pauses
        _gc_note(results[e])
    return results


def _gc_note(res: Result) -> None:
    pauses = res.gc_pauses
    g2 = [dt for gen, dt in pauses if gen == 2]
    if g2:
        res.notes.append(
            f"Python GC during its passes: {len(pauses)} collections, {len(g2)} of "
            f"generation 2 (max {max(g2) * 1e3:.1f} ms); max pause of any generation "
            f"{max(dt for _, dt in pauses) * 1e3:.1f} ms")


# Arguments a cold worker inherits (everything that decides documents, grammar and engine).
_WORKER_ARGS = ("seed", "tokens", "py_files", "json_real", "json_generated", "sql_docs",
                "c_files", "outlines_depth", "llg_step_max_items", "cache_dir", "lexer",
                "python_source")


def run_cold(grammar: str, vname: str, engines: list[str], args: Any, docs: list[Doc]):
    """``--cold``: every (engine, document) pass in a fresh process (``--only-doc``), so that
    every mask is a first visit: nothing memoised, no warm caches, the compiled grammar loaded
    from the cache as a server would at start. The workers' raw timings are pooled here."""
    import subprocess

    results = {e: Result(e, grammar, vname) for e in engines}
    base = [sys.executable, str(Path(__file__).resolve()), "--json", "--grammars", grammar,
            "--vocabs", vname]
    for k in _WORKER_ARGS:
        v = getattr(args, k)
        if v is not None:
            base += [f"--{k.replace('_', '-')}", str(v)]
    if args.docs:
        base += ["--docs", *args.docs]
    for flag in ("no_gc", "gc_freeze"):
        if getattr(args, flag):
            base.append("--" + flag.replace("_", "-"))
    if args.compile_cold:
        base.append("--compile-cold")
    deadline = time.perf_counter() + args.cell_timeout
    for i, d in enumerate(docs):
        for e in engines:
            res = results[e]
            if time.perf_counter() > deadline:
                res.errors.append(f"cell time limit {args.cell_timeout:.0f} s reached before "
                                  f"{d.name}")
                continue
            t0 = time.perf_counter()
            out = subprocess.run([*base, "--engines", e, "--only-doc", str(i)],
                                 capture_output=True, text=True, check=False)
            try:
                w = json.loads(out.stdout)["rows"][0]
            except (ValueError, IndexError, KeyError):
                res.errors.append(f"{d.name}: worker failed: {out.stderr.strip()[-300:]}")
                continue
            if w["unavailable"]:
                res.unavailable = w["unavailable"]
                continue
            raw = w["raw"]
            res.mask_ns += raw["mask_ns"]
            res.step_ns += raw["step_ns"]
            res.gc_pauses += [tuple(x) for x in raw["gc_pauses"]]
            res.slowest += [(int(x["us"] * 1e3), x["doc"], x["step"], x["before"])
                            for x in w["slowest_masks"]]
            res.slowest.sort(reverse=True)
            del res.slowest[3:]
            for k in ("rejected", "errors", "skipped_docs"):
                getattr(res, k).extend(w[k])
            res.notes += [n for n in w["notes"] if not n.startswith("Python GC")]
            res.setup_s = max(res.setup_s or 0.0, w["setup_s"] or 0.0)
            res.setup_note = w["setup_note"]
            res.docs += w["docs"]
            if args.verbose:
                m = pct(raw["mask_ns"])
                log(f"  {e} {d.name} cold: {len(raw['mask_ns'])} masks, p99 "
                    f"{fmt_us(m.get('p99'))} max {fmt_us(m.get('max'))} "
                    f"({time.perf_counter() - t0:.1f} s)")
    for res in results.values():
        res.masks = len(res.mask_ns)
        res.notes.append("cold: a fresh process per document, first pass only")
        _gc_note(res)
    return results


def _run_docs(engines, objs, results, ctx, docs, args, deadline, watch, vname) -> None:
    for d in docs:
        ctx.ref = None
        for e in engines:
            if e not in objs:
                continue
            if time.perf_counter() > deadline:
                results[e].errors.append(f"cell time limit {args.cell_timeout:.0f} s reached "
                                         f"before {d.name}")
                continue
            watch.engine = e
            try:
                t0 = time.perf_counter()
                first = len(results[e].mask_ns)
                run_doc(objs[e], ctx, d, results[e])
                _track_slowest(results[e], d, first, ctx)
                results[e].docs += 1
                dt = time.perf_counter() - t0
                if args.verbose:
                    log(f"  {e} {d.name}: {len(d.tokens[vname])} tokens in {dt:.2f} s")
            except Exception as ex:
                results[e].errors.append(f"{d.name}: {type(ex).__name__}: {ex}"[:300])
                if args.verbose:
                    traceback.print_exc()
            watch.engine = ""
        for e in engines:
            results[e].masks = len(results[e].mask_ns)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammars", default=",".join(GRAMMARS),
                    help="bundled names, or a .lark file no test has seen (then give --docs)")
    ap.add_argument("--docs", nargs="*", default=None,
                    help="documents for a .lark grammar file (each forced whole, up to --tokens)")
    ap.add_argument("--vocabs", default=",".join(VOCABS))
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--quick", action="store_true", help="small document set (~1-2 min)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=None,
                    help="approximate tokens per (grammar, vocab); default 3000 (quick: 600)")
    ap.add_argument("--py-files", type=int, default=None, help="stdlib files (default 4; quick 2)")
    ap.add_argument("--json-real", type=int, default=None, help="real .json files (default 3)")
    ap.add_argument("--json-generated", type=int, default=None, help="generated docs (default 3)")
    ap.add_argument("--sql-docs", type=int, default=None, help="generated SQL scripts (default 4)")
    ap.add_argument("--c-files", type=int, default=None, help="real C files (default 4; quick 2)")
    ap.add_argument("--outlines-depth", type=int, default=3,
                    help="nesting bound of outlines-core's JSON regex (index time grows ~3x/level)")
    ap.add_argument("--llg-step-max-items", type=int, default=1_000_000,
                    help="llguidance LLParserLimits.step_max_items (default 1000000 so that "
                         "llguidance finishes the C documents with 129k/151k vocabularies; its "
                         "own default, 50000, stops with 'Too many items'; 0 = llguidance's "
                         "default)")
    ap.add_argument("--cache-dir", default=None,
                    help="gramask compile cache (default: gramask's default cache dir)")
    ap.add_argument("--compile-cold", action="store_true",
                    help="compile gramask cold (cache=False)")
    ap.add_argument("--cold", action="store_true",
                    help="first visits only: a fresh process per engine per document (nothing "
                         "memoised, the compiled grammar loaded from the cache); pooled per cell")
    ap.add_argument("--python-source", choices=("stdlib", "site-packages"), default="stdlib",
                    help="python documents: stdlib files, or held-out site-packages files (no "
                         "test reads them)")
    ap.add_argument("--only-doc", type=int, default=None, help=argparse.SUPPRESS)  # cold worker
    ap.add_argument("--lexer", choices=("contextual", "basic"), default=None,
                    help="gramask's lexer mode (default: each bundled grammar's own)")
    ap.add_argument("--examples", type=int, default=4, help="differences printed per row")
    ap.add_argument("--cell-timeout", type=float, default=240.0,
                    help="stop forcing further documents in a (grammar, vocab) cell after this")
    ap.add_argument("--no-gc", action="store_true",
                    help="disable Python's cyclic GC while forcing (diagnostic: GC pauses)")
    ap.add_argument("--gc-freeze", action="store_true",
                    help="gc.freeze() after the engines are set up, as a server may do after "
                         "loading (diagnostic: GC pauses of the runtime's own objects only)")
    ap.add_argument("--json", action="store_true", help="machine-readable output")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    q = a.quick
    a.tokens = a.tokens or (600 if q else 3000)
    a.py_files = a.py_files or (2 if q else 4)
    a.json_real = a.json_real if a.json_real is not None else (1 if q else 3)
    a.json_generated = a.json_generated if a.json_generated is not None else (1 if q else 3)
    a.sql_docs = a.sql_docs or (2 if q else 4)
    a.c_files = a.c_files or (2 if q else 4)

    grammars = [g for g in a.grammars.split(",") if g]
    vocabs = [v for v in a.vocabs.split(",") if v]
    engines = [e for e in a.engines.split(",") if e]
    if "gramask" not in engines and a.only_doc is None:
        engines.insert(0, "gramask")  # the reference for the comparison
    engines.sort(key=ENGINES.index)

    t_start = time.perf_counter()
    a.real_tok = {}
    rows: list[dict] = []
    problems: list[str] = []
    for vname in vocabs:
        log(f"loading tokenizer for {vname}")
        a.real_tok[vname] = RealTokenizer(vname)
    for grammar in grammars:
        n_docs = len(a.docs or ()) if is_grammar_file(grammar) else {
            "python": a.py_files, "json": a.json_real + a.json_generated,
            "sql": a.sql_docs, "c": a.c_files}[grammar]
        a.doc_tokens = max(50, a.tokens // max(1, n_docs))
        docs = build_docs(grammar, a)
        if a.only_doc is not None:
            docs = docs[a.only_doc : a.only_doc + 1]
        log(f"{grammar}: {len(docs)} documents: " + ", ".join(d.name.split(' ')[0] for d in docs))
        for vname in vocabs:
            vocab = gramask.Vocabulary.bundled(vname)
            if a.cold and a.only_doc is None:
                results = run_cold(grammar, vname, engines, a, docs)
            else:
                problems += tokenize_docs(docs, a.real_tok[vname], vocab, a.doc_tokens)
                results = run_cell(grammar, vname, engines, a, docs)
            for e in engines:
                s = summarize(results[e], raw=a.only_doc is not None)
                rows.append(s)
                if not a.json:
                    m = s["mask_us"]
                    log(f"{e:10s} {grammar} x {vname}: {s['masks']} masks, p50 "
                        f"{fmt_us(m.get('p50'))} µs p99 {fmt_us(m.get('p99'))} µs"
                        if not s["unavailable"] else f"{e} {grammar} x {vname}: {s['unavailable']}")
    total = time.perf_counter() - t_start
    if a.json:
        print(json.dumps({"rows": rows, "problems": problems, "total_s": total,
                          "args": {k: v for k, v in vars(a).items() if k != "real_tok"}},
                         indent=1, default=str))
        return 0
    # collapse the "not available" rows that are the same for every vocabulary
    shown: list[dict] = []
    seen = set()
    for r in rows:
        if r["unavailable"]:
            k = (r["engine"], r["grammar"], r["unavailable"])
            if k in seen:
                continue
            seen.add(k)
            same = [x for x in rows if (x["engine"], x["grammar"], x["unavailable"]) == k]
            if len(same) == len(vocabs):
                r = {**r, "vocab": "all"}
        shown.append(r)
    print(markdown(shown))
    print()
    print("Times in µs unless marked. mask = the engine's mask call only; step = mask + advance "
          "(gramask: allowed() + advance(); llguidance: compute_mask + consume_token; XGrammar: "
          "fill_next_token_bitmask + accept_token; outlines-core: write_mask_into + advance). "
          "masks = masks timed (tokens + 1 per document). disagree = steps where the engine's "
          "verdict on some grammar-text token differs from gramask's / steps compared (steps "
          "that differ only on special tokens or EOS in parentheses). true token rejected = "
          "mask excludes, or advance rejects, the document's next token.")
    print()
    print("Documents: " + "; ".join(
        f"{g}: " + (f"{a.py_files} stdlib files" if g == "python" else
                    f"{a.json_real} site-packages + {a.json_generated} generated" if g == "json"
                    else f"{a.c_files} real .c/.h files" if g == "c"
                    else ", ".join(a.docs or ()) if is_grammar_file(g)
                    else f"{a.sql_docs} generated SQLite scripts (checked with sqlite3)")
        for g in grammars) + f"; ~{a.tokens} tokens per (grammar, vocab), seed {a.seed}.")
    for vname in vocabs:
        print(f"Tokenizer {vname}: {a.real_tok[vname].how}")
    print()
    det = details(shown)
    if det:
        print(det)
    for p in problems:
        print(f"PROBLEM: {p}")
    print(f"\ntotal wall time {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
