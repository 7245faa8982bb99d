"""Differential check of gramask's GBNF reader against XGrammar (and llguidance) on real
grammar files, token by token on a real vocabulary.

Usage: python tools/gbnf_real_fuzz.py FILE_OR_DIR... [--vocab gpt2] [--seed S] [--walks N]
                                      [--steps N] [--no-llguidance] [--out FILE]

Where ``tools/gbnf_fuzz.py`` draws small grammars of its own, this one reads grammar files
written by others (llama.cpp's ``grammars/`` folder, XGrammar's and llguidance's test
grammars: keep them outside the repository and name them here). Each file is compiled by
gramask (``Grammar.from_gbnf``), by XGrammar (``Grammar.from_ebnf``, a token matcher on the same
vocabulary's bytes) and, unless ``--no-llguidance``, by llguidance (``gbnf_to_lark``, then its
Lark matcher on the same tokenizer). Then random walks of tokens are fed to every engine at
once: each step compares the masks (every ordinary token and EOS), and the token taken is
drawn from one engine's mask in turn, so that walks follow gramask's masks and the oracles'
masks alike (texts the oracle allows must be allowed by gramask, token by token, and the
other way round). A walk ends at EOS, at ``--steps`` tokens, or at the first disagreement:
the step, the text so far, and the tokens one engine allows and the other forbids (up to 8
of each) are written as a JSON line. A walk that does not end at EOS is then completed by
gramask's ``shortest_completion()``, whose text XGrammar must accept as a whole.

The oracles are exact (Earley parsers); where they disagree with each other the step is
counted under "oracles disagree" and not blamed on gramask. XGrammar lets a pending lead byte
``\xed`` continue with ``\xa0``-``\xbf`` (a surrogate's three bytes, no UTF-8): where that is
all the masks differ in, the step is counted apart and the walk goes on.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import xgrammar as xg

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gramask
from gramask.errors import GramaskError


class XOracle:
    """XGrammar's token matcher for one grammar on ``vocab``."""

    def __init__(self, comp: Any, text: str, n: int, eos: int) -> None:
        self.cg = comp.compile_grammar(xg.Grammar.from_ebnf(text))
        self.n, self.eos = n, eos
        self.bm = xg.allocate_token_bitmask(1, n)
        self.m = xg.GrammarMatcher(self.cg)

    def reset(self) -> None:
        self.m = xg.GrammarMatcher(self.cg)

    def allowed(self) -> np.ndarray:
        self.m.fill_next_token_bitmask(self.bm)
        words = self.bm.numpy()[0].view(np.uint32)
        return _unpack(words, self.n)

    def advance(self, t: int) -> bool:
        return bool(self.m.accept_token(t))

    def error(self) -> str:
        return ""

    def accepts_string(self, s: str) -> bool:
        m = xg.GrammarMatcher(self.cg)
        return bool(m.accept_string(s)) and bool(m.accept_token(self.eos))


class LOracle:
    """llguidance's matcher for the Lark translation of one GBNF grammar."""

    def __init__(self, lltok: Any, text: str, n: int) -> None:
        import llguidance
        from llguidance.gbnf_to_lark import gbnf_to_lark

        self.llg, self.tok, self.n = llguidance, lltok, n
        self.g = llguidance.grammar_from("lark", gbnf_to_lark(text))
        self.reset()
        if self.m.is_error():
            raise ValueError(self.m.get_error())

    def reset(self) -> None:
        self.m = self.llg.LLMatcher(self.tok, self.g, log_level=0)

    def allowed(self) -> np.ndarray:
        words = (max(self.tok.vocab_size, self.n) + 31) // 32
        bm = np.zeros(words, dtype=np.uint32)
        self.m.unsafe_compute_mask_ptr(bm.ctypes.data, bm.nbytes)
        return _unpack(bm, self.n)

    def advance(self, t: int) -> bool:
        return bool(self.m.consume_token(t))

    def error(self) -> str:
        return str(self.m.get_error()) if self.m.is_error() else ""


def _unpack(words: np.ndarray, n: int) -> np.ndarray:
    bits = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")
    return bits[:n].astype(bool)


def compile_gramask(text: str, vocab: gramask.Vocabulary) -> gramask.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gramask.compile(gramask.Grammar.from_gbnf(text), vocab, cache=False,
                               progress=False)


def _surrogates_only(vocab: gramask.Vocabulary, data: bytes, theirs: np.ndarray,
                     ours: np.ndarray) -> bool:
    """Whether the oracle's mask is gramask's plus only tokens that continue a pending
    ``\xed`` with ``\xa0``-``\xbf``: the UTF-8 spelling of a surrogate (U+D800-DFFF),
    which is no UTF-8. XGrammar allows it after a lead byte ``\xed`` in a negated class."""
    if (ours & ~theirs).any() or not data.endswith(b"\xed"):
        return False
    firsts = [vocab.token_bytes(int(i))[:1] for i in np.nonzero(theirs & ~ours)[0]]
    return all(b"\xa0" <= b <= b"\xbf" for b in firsts)


def _diff(vocab: gramask.Vocabulary, a: np.ndarray, b: np.ndarray) -> list[str]:
    return [repr(vocab.token_bytes(int(i))) for i in np.nonzero(a & ~b)[0][:8]]


def walk(cg: gramask.CompiledGrammar, oracles: dict[str, Any], keep: np.ndarray,
         rnd: random.Random, steps: int, lead: str, stats: Counter[str],
         notes: list[dict[str, object]]) -> dict[str, object] | None:
    """One walk led by the masks of ``lead``; a disagreement found, or None. Steps where
    the oracles disagree with each other (gramask siding with XGrammar) go to ``notes``."""
    c = cg.constraint("")
    vocab, eos = cg.vocab, cg.vocab.eos_token_id
    oracles = dict(oracles)  # one that stops with an error leaves this walk only
    for o in oracles.values():
        o.reset()
    ids: list[int] = []
    for k in range(steps + 1):
        masks = {"gramask": np.asarray(c.allowed(), dtype=bool) & keep}
        for name, o in oracles.items():
            masks[name] = o.allowed() & keep
        ref = masks["gramask"]
        for name in oracles:
            if not np.array_equal(masks[name], ref) and _surrogates_only(
                    vocab, c.data, masks[name], ref):
                stats[f"{name} allows UTF-8-encoded surrogates (gramask: invalid UTF-8)"] += 1
                masks[name] = ref  # (the walk goes on: the oracle is right otherwise)
            if not np.array_equal(masks[name], ref):
                if name != "XGrammar" and "XGrammar" in masks and np.array_equal(
                        masks["XGrammar"], ref):
                    key = f"oracles disagree ({name} vs XGrammar)"
                    stats[key] += 1
                    if len(notes) < 3 and not any(x.get("ids") == ids for x in notes):
                        notes.append({"kind": key, "step": k, "ids": list(ids),
                                      "text": c.data.decode(errors="replace"),
                                      "XGrammar only": _diff(vocab, ref, masks[name]),
                                      f"{name} only": _diff(vocab, masks[name], ref)})
                    continue
                return {"kind": "mask", "oracle": name, "step": k, "lead": lead,
                        "text": c.data.decode(errors="replace"), "ids": ids,
                        "gramask only": _diff(vocab, ref, masks[name]),
                        f"{name} only": _diff(vocab, masks[name], ref)}
        pick = masks[lead] if lead in masks and masks[lead].any() else ref
        cand = np.nonzero(pick)[0]
        if not len(cand):
            return {"kind": "dead end", "step": k, "text": c.data.decode(errors="replace")}
        # end now and then where EOS is allowed, more often as the walk grows
        if pick[eos] and (len(cand) == 1 or rnd.random() < 0.05 + k / (2 * steps)):
            stats["walks ended at EOS"] += 1
            return None
        if k == steps:
            break
        non_eos = cand[cand != eos]
        t = int(rnd.choice(non_eos))
        ids.append(t)
        c.advance(t)
        for name, o in list(oracles.items()):
            o.advance(t)
            err = o.error()
            if err:  # an oracle that stops with an error (a limit of its own) leaves the walk
                key = f"{name} stopped with an error"
                stats[key] += 1
                if len(notes) < 6:
                    notes.append({"kind": key, "step": k, "ids": list(ids), "error": err[:300],
                                  "text": c.data.decode(errors="replace")})
                del oracles[name]
    stem = c.data
    try:
        for t in c.shortest_completion().token_ids:
            c.advance(t)
    except gramask.NoCompletionError:
        return {"kind": "no completion", "text": stem.decode(errors="replace"), "ids": ids}
    stats["walks completed by shortest_completion"] += 1
    text = c.data.decode(errors="replace")
    if not c.allowed()[eos]:
        return {"kind": "EOS forbidden after shortest completion", "text": text}
    x = oracles.get("XGrammar")
    if x is not None and not x.accepts_string(text):
        return {"kind": "completion rejected by XGrammar", "text": text,
                "stem": stem.decode(errors="replace")}
    return None


def files(paths: list[str]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.glob("*.gbnf")) if p.is_dir() else [p]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--walks", type=int, default=12, help="walks per grammar")
    ap.add_argument("--steps", type=int, default=24, help="tokens per walk at most")
    ap.add_argument("--no-llguidance", dest="llguidance", action="store_false")
    ap.add_argument("--out", type=Path, default=Path("gbnf_real_fuzz.jsonl"))
    a = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    from bench.real_tokenizer import RealTokenizer

    vocab = gramask.Vocabulary.bundled(a.vocab)
    n = len(vocab)
    keep = np.array([not vocab.is_special(i) or i == vocab.eos_token_id for i in range(n)])
    toks = [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(n)]
    comp = xg.GrammarCompiler(xg.TokenizerInfo(toks, xg.VocabType.RAW, vocab_size=n,
                                               stop_token_ids=[vocab.eos_token_id]),
                              max_threads=1, cache_enabled=False)
    lltok = RealTokenizer(a.vocab).lltokenizer() if a.llguidance else None
    stats: Counter[str] = Counter()
    t0 = time.time()
    with a.out.open("w") as out:
        for path in files(a.paths):
            text = path.read_text("utf-8")
            rnd = random.Random(f"{a.seed}:{path.name}")
            oracles: dict[str, Any] = {}
            try:
                oracles["XGrammar"] = XOracle(comp, text, n, vocab.eos_token_id)
            except RuntimeError as e:
                stats["XGrammar refuses"] += 1
                print(f"[{path.name}] XGrammar refuses: {str(e)[:100]}")
                continue
            if lltok is not None:
                try:
                    oracles["llguidance"] = LOracle(lltok, text, n)
                except Exception as e:
                    stats["llguidance refuses"] += 1
                    print(f"[{path.name}] llguidance refuses: {str(e)[:100]}")
            try:
                cg = compile_gramask(text, vocab)
            except GramaskError as e:
                stats["gramask refuses"] += 1
                out.write(json.dumps({"file": str(path), "kind": "gramask refuses",
                                      "detail": str(e)}) + "\n")
                print(f"[{path.name}] gramask refuses: {e}")
                continue
            stats["grammars"] += 1
            leads = ["gramask", *oracles]
            found = 0
            notes: list[dict[str, object]] = []
            for w in range(a.walks):
                lead = leads[w % len(leads)]
                stats["walks"] += 1
                try:
                    case = walk(cg, oracles, keep, rnd, a.steps, lead, stats, notes)
                except Exception as e:
                    case = {"kind": "crash", "detail": f"{type(e).__name__}: {e}"}
                if case is not None:
                    found += 1
                    stats[f"disagreements: {case['kind']}"] += 1
                    out.write(json.dumps({"file": str(path), "vocab": a.vocab, "walk": w,
                                          **case}, ensure_ascii=False) + "\n")
                    out.flush()
            for note in notes:
                out.write(json.dumps({"file": str(path), "vocab": a.vocab, **note},
                                     ensure_ascii=False) + "\n")
            print(f"[{path.name}] {a.walks} walks, {found} disagreements, "
                  f"{time.time() - t0:.0f} s", flush=True)
    for key, v in sorted(stats.items()):
        print(f"{key}: {v}")
    print(f"cases written to {a.out}; wall {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
