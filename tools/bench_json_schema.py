"""JSON Schema requests: gramask vs llguidance vs XGrammar on the same schemas, in one run.

For every schema of ``tools/json_schemas/*.json`` (name, source, schema, valid and invalid
instances; labels checked with ``jsonschema`` first), each engine:

* compiles the schema (a schema it refuses counts as not compiled) and computes its first
  mask: "compile + first mask", in a process that has compiled the schemas before it (warm
  process; the vocabulary and tokenizer are loaded once, outside the timing);
* forces every instance, ``json.dumps(data, separators=(",", ":"))`` tokenized by the
  vocabulary's own tokenizer, one mask per token ("mask" times), and accepts it iff every
  token is allowed and end-of-sequence is allowed at the end.

A schema *passes* when all its valid instances are accepted and all invalid ones rejected.
Engines run with the standard's semantics: gramask and llguidance flexible whitespace,
XGrammar ``strict_mode=False`` (additional properties allowed) and compact separators.

    python tools/bench_json_schema.py [--vocab deepseek-v4] [--engines gramask,llguidance,xgrammar]
"""

from __future__ import annotations

import argparse
import json
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


def load_cases() -> list[dict[str, Any]]:
    import jsonschema

    cases = []
    for f in sorted(HERE.glob("*.json")):
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

    def __init__(self, vocab: Any) -> None:
        import gramask

        self.gm, self.vocab = gramask, vocab

    def compile(self, schema: Any) -> Any:
        g = self.gm.Grammar.from_json_schema(schema)
        cg = self.gm.compile(g, self.vocab, cache=False, progress=False)
        c = cg.constraint()
        c.allowed()
        return cg

    def run(self, cg: Any, ids: list[int], times: list[float]) -> bool:
        c = cg.constraint()
        eos = self.vocab.eos_token_id
        for t in [*ids, eos]:
            t0 = time.perf_counter()
            m = c.allowed()
            times.append(time.perf_counter() - t0)
            if not m[t]:
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
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    import gramask

    cases = load_cases()
    vocab = gramask.Vocabulary.bundled(args.vocab)
    tok = RealTokenizer(args.vocab)
    engines: list[Any] = []
    for name in args.engines.split(","):
        engines.append({"gramask": lambda: Gramask(vocab),
                        "llguidance": lambda: LLGuidance(vocab, tok),
                        "xgrammar": lambda: XGrammar(vocab)}[name]())
    n_valid = sum(len(c["valid"]) for c in cases)
    n_invalid = sum(len(c["invalid"]) for c in cases)
    print(f"{len(cases)} schemas, {n_valid} valid and {n_invalid} invalid instances, "
          f"vocabulary {args.vocab} ({len(vocab)} tokens)")
    rows = []
    for eng in engines:
        compiled = passing = 0
        first: list[float] = []
        masks: list[float] = []
        for case in cases:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    handle = eng.compile(case["schema"])
            except Exception as e:  # an engine's refusal
                if args.verbose:
                    print(f"  {eng.name}: {case['name']}: not compiled: {str(e)[:160]}")
                continue
            first.append(time.perf_counter() - t0)
            compiled += 1
            ok = True
            for label, insts in ((True, case["valid"]), (False, case["invalid"])):
                for inst in insts:
                    ids = tok.encode(json.dumps(inst, separators=(",", ":"), ensure_ascii=False))
                    got = eng.run(handle, ids, masks)
                    if got != label:
                        ok = False
                        if args.verbose:
                            print(f"  {eng.name}: {case['name']}: "
                                  f"{'rejected valid' if label else 'ACCEPTED INVALID'} {inst}")
            passing += ok
        rows.append((eng.name, compiled, passing, first, masks))
        print(f"{eng.name}: done ({statistics.fmean(first) if first else 0:.3f} s mean compile)",
              flush=True)
    print()
    print("| engine | schemas compiled | schemas passing | compile + first mask p50 / p99 "
          "| mask p50 / p99 |")
    print("| --- | --- | --- | --- | --- |")
    for name, compiled, passing, first, masks in rows:
        print(f"| {name} | {compiled} / {len(cases)} | {passing} | {fmt(pct(first, 50))} / "
              f"{fmt(pct(first, 99))} | {fmt(pct(masks, 50))} / {fmt(pct(masks, 99))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
