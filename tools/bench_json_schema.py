"""JSON Schema requests: gramask vs llguidance vs XGrammar on the same schemas, in one run.

For every schema of ``tools/json_schemas/*.json`` (name, source, schema, valid and invalid
instances; labels checked with ``jsonschema`` first), each engine:

* compiles the schema (a schema it refuses counts as not compiled) and computes its first
  mask: "compile + first mask", in a process that has compiled the schemas before it (warm
  process; the vocabulary and tokenizer are loaded once, outside the timing);
* forces every instance, ``json.dumps(data, separators=(",", ":"))`` tokenized by the
  vocabulary's own tokenizer, one mask per token ("mask" times), and accepts it iff every
  token is allowed and end-of-sequence is allowed at the end. Each engine fills a packed
  int32 bitmask row (gramask ``Constraint.fill_bitmask``, llguidance
  ``unsafe_compute_mask_ptr``, XGrammar ``fill_next_token_bitmask``);
  ``--gramask-api allowed`` times gramask's ``allowed()`` (a fresh bool array) instead.

A schema *passes* when all its valid instances are accepted and all invalid ones rejected.
Engines run with the standard's semantics: gramask and llguidance flexible whitespace,
XGrammar ``strict_mode=False`` (additional properties allowed) and compact separators.

    python tools/bench_json_schema.py [--vocab deepseek-v4] [--engines gramask,llguidance,xgrammar]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench.real_tokenizer import RealTokenizer

HERE = Path(__file__).parent / "json_schemas"


class _Timeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


signal.signal(signal.SIGALRM, _alarm)


def load_cases(sets: list[str] | None = None) -> list[dict[str, Any]]:
    import jsonschema

    cases = []
    for f in sorted(HERE.glob("*.json")):
        if sets and f.stem not in sets:
            continue
        for case in json.loads(f.read_text()):
            cls = jsonschema.validators.validator_for(case["schema"])
            v = cls(case["schema"], format_checker=cls.FORMAT_CHECKER)
            for inst in case["valid"]:
                assert v.is_valid(inst), (case["name"], inst)
            for inst in case["invalid"]:
                assert not v.is_valid(inst), (case["name"], inst)
            cases.append(case)
    return cases


class Gramask:
    name = "gramask"

    def __init__(self, vocab: Any, api: str = "bitmask") -> None:
        import gramask

        self.gm, self.vocab, self.api = gramask, vocab, api
        self.words = (len(vocab) + 31) // 32

    def compile(self, schema: Any) -> Any:
        g = self.gm.Grammar.from_json_schema(schema)
        cg = self.gm.compile(g, self.vocab, cache=False, progress=False)
        c = cg.constraint()
        c.allowed()
        return cg

    def run(self, cg: Any, ids: list[int], times: list[float]) -> bool:
        c = cg.constraint()
        eos = self.vocab.eos_token_id
        if self.api == "allowed":  # a fresh (V,) bool array per step
            for t in [*ids, eos]:
                t0 = time.perf_counter()
                m = c.allowed()
                times.append(time.perf_counter() - t0)
                if not m[t]:
                    return False
                if t != eos:
                    c.advance(t)
            return True
        bm = np.zeros(self.words, dtype=np.int32)  # a bitmask row, as the others fill
        u8 = bm.view(np.uint8)
        for t in [*ids, eos]:
            t0 = time.perf_counter()
            c.fill_bitmask(u8)
            times.append(time.perf_counter() - t0)
            if not (int(bm[t >> 5]) >> (t & 31)) & 1:
                return False
            if t != eos:
                c.advance(t)
        return True


class LLGuidance:
    name = "llguidance"

    def __init__(self, vocab: Any, tok: RealTokenizer) -> None:
        import llguidance

        self.llg, self.tok = llguidance, tok.lltokenizer()
        self.words = (max(self.tok.vocab_size, len(vocab)) + 31) // 32
        self.eos = vocab.eos_token_id

    def compile(self, schema: Any) -> Any:
        g = self.llg.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        bm = np.zeros(self.words, dtype=np.int32)
        m.unsafe_compute_mask_ptr(bm.ctypes.data, bm.nbytes)
        return g

    def run(self, g: Any, ids: list[int], times: list[float]) -> bool:
        m = self.llg.LLMatcher(self.tok, g, log_level=0)
        bm = np.zeros(self.words, dtype=np.int32)
        for t in [*ids, self.eos]:
            t0 = time.perf_counter()
            m.unsafe_compute_mask_ptr(bm.ctypes.data, bm.nbytes)
            times.append(time.perf_counter() - t0)
            if not (int(bm[t >> 5]) >> (t & 31)) & 1:
                return False
            if t != self.eos and not m.consume_token(t):
                return False
        return True


class XGrammar:
    name = "xgrammar"

    def __init__(self, vocab: Any) -> None:
        import xgrammar as xgr

        toks = [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(len(vocab))]
        self.xgr, self.v, self.eos = xgr, len(vocab), vocab.eos_token_id
        ti = xgr.TokenizerInfo(toks, xgr.VocabType.RAW, vocab_size=len(vocab),
                               stop_token_ids=[vocab.eos_token_id])
        self.comp = xgr.GrammarCompiler(ti, max_threads=1, cache_enabled=False)

    def compile(self, schema: Any) -> Any:
        cg = self.comp.compile_json_schema(json.dumps(schema), strict_mode=False,
                                           separators=(",", ":"))
        m = self.xgr.GrammarMatcher(cg)
        m.fill_next_token_bitmask(self.xgr.allocate_token_bitmask(1, self.v))
        return cg

    def run(self, cg: Any, ids: list[int], times: list[float]) -> bool:
        m = self.xgr.GrammarMatcher(cg)
        bm = self.xgr.allocate_token_bitmask(1, self.v)
        arr = bm.numpy()
        for t in [*ids, self.eos]:
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bm)
            times.append(time.perf_counter() - t0)
            if not (int(arr[0, t >> 5]) >> (t & 31)) & 1:
                return False
            if t != self.eos and not m.accept_token(t):
                return False
        return True


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q)) if xs else float("nan")


def fmt(s: float) -> str:
    return "—" if s != s else f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--engines", default="gramask,llguidance,xgrammar")
    ap.add_argument("--sets", default=None,
                    help="comma-separated files of json_schemas/ (default: all): sample, "
                         "schemastore")
    ap.add_argument("--limit", type=int, default=None, help="first N schemas only")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds per schema (compile + instances) before an engine's "
                         "schema counts as timed out (checked between Python calls)")
    ap.add_argument("--gramask-api", choices=("bitmask", "allowed"), default="bitmask",
                    help="what gramask's mask times: bitmask (Constraint.fill_bitmask into an "
                         "int32 bitmask row, what servers call; the others fill the same "
                         "layout) or allowed (a fresh bool array per step)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    import gramask

    cases = load_cases(args.sets.split(",") if args.sets else None)[: args.limit]
    vocab = gramask.Vocabulary.bundled(args.vocab)
    tok = RealTokenizer(args.vocab)
    engines: list[Any] = []
    for name in args.engines.split(","):
        engines.append({"gramask": lambda: Gramask(vocab, args.gramask_api),
                        "llguidance": lambda: LLGuidance(vocab, tok),
                        "xgrammar": lambda: XGrammar(vocab)}[name]())
    n_valid = sum(len(c["valid"]) for c in cases)
    n_invalid = sum(len(c["invalid"]) for c in cases)
    print(f"{len(cases)} schemas, {n_valid} valid and {n_invalid} invalid instances, "
          f"vocabulary {args.vocab} ({len(vocab)} tokens)")
    rows = []
    for eng in engines:
        compiled = passing = rejected_valid = accepted_invalid = timed_out = 0
        crashed: list[str] = []
        first: list[float] = []
        masks: list[float] = []
        for case in cases:
            signal.alarm(max(1, int(args.timeout)))
            try:
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        handle = eng.compile(case["schema"])
                except _Timeout:
                    raise
                except Exception as e:  # an engine's refusal (gramask: anything else is a bug)
                    if eng.name == "gramask" and not isinstance(e, gramask.GramaskError):
                        crashed.append(f"{case['name']}: {type(e).__name__}: {str(e)[:120]}")
                    if args.verbose:
                        print(f"  {eng.name}: {case['name']}: not compiled: {str(e)[:160]}")
                    continue
                first.append(time.perf_counter() - t0)
                compiled += 1
                ok = True
                for label, insts in ((True, case["valid"]), (False, case["invalid"])):
                    for inst in insts:
                        text = json.dumps(inst, separators=(",", ":"), ensure_ascii=False)
                        got = eng.run(handle, tok.encode(text), masks)
                        if got != label:
                            ok = False
                            rejected_valid += label
                            accepted_invalid += not label
                            if args.verbose:
                                print(f"  {eng.name}: {case['name']}: "
                                      f"{'rejected valid' if label else 'ACCEPTED INVALID'} "
                                      f"{text[:200]}")
                passing += ok
            except _Timeout:
                timed_out += 1
                if args.verbose:
                    print(f"  {eng.name}: {case['name']}: over {args.timeout:.0f} s")
            finally:
                signal.alarm(0)
        rows.append((eng.name, compiled, passing, first, masks, rejected_valid,
                     accepted_invalid, timed_out))
        for c in crashed:
            print(f"  CRASH {eng.name}: {c}")
        print(f"{eng.name}: done ({statistics.fmean(first) if first else 0:.3f} s mean compile)",
              flush=True)
    print()
    print("| engine | schemas compiled | schemas passing | valid rejected | invalid accepted "
          "| timed out | compile + first mask p50 / p99 | mask p50 / p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, compiled, passing, first, masks, rv, ai, to in rows:
        print(f"| {name} | {compiled} / {len(cases)} | {passing} | {rv} | {ai} | {to} "
              f"| {fmt(pct(first, 50))} / {fmt(pct(first, 99))} "
              f"| {fmt(pct(masks, 50))} / {fmt(pct(masks, 99))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
