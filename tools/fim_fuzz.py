"""Fuzzing fill-in-the-middle and token budgets on random Lark grammars, lark as the oracle.

Usage: python tools/fim_fuzz.py [--grammars N] [--seed S] [--modes contextual,basic]
                                [--cuts N] [--walks N] [--slack 0,1,4] [--indent P] [--out FILE]

Per random grammar (``tools/lark_fuzz_gen.py``; a share ``--indent`` of them with lark's
``Indenter`` as postlex) and lexer mode (lark's parser as in ``tools/lark_fuzz.py``), texts
lark accepts are cut at random into prefix / middle / suffix (cuts fall inside lexemes and
inside ignored text as often as between lexemes), and ``constraint(prefix, suffix=suffix)``

(a) takes the true middle, tokenized by the vocabulary's real tokenizer, token by token, and
    EOS after it (setup must not refuse: a middle exists);
(b) random masked walks: after every allowed token ``shortest_completion()`` must find a
    completion (a dead end that the prefix-only constraint shares is the greedy lexer's,
    counted apart), and the completed prefix + middle + suffix must be lark's;
(c) the same under ``max_tokens`` = the true middle's tokens + k: the true middle forced
    (how often a true token is forbidden, per k), and budgeted walks that must end complete.

A mutated suffix checks setup's refusal: refused only if no middle (from the other cuts'
middles) connects it; taken, its shortest completion must end in lark's language. Cuts whose
whole text gramask's prefix-only constraint and lark judge differently are lark_fuzz's class
(docs/semantics.md: longest match, ties, no backtracking): counted, not checked. Each kind of
problem is minimised once per grammar and mode (grammar lines, then the prefix, middle and
suffix) and written as a JSON line to ``--out``.
"""

from __future__ import annotations

import argparse
import logging
import random
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lark

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fim_fuzz_checks as chk
import lark_fuzz as lf
import lark_fuzz_gen as gen
from fuzz_common import common_args, complete, summary

import gramask
from gramask.errors import GramaskError
from tests._support import hf_tokenizer

# refusals docs/semantics.md describes (lark_fuzz's class): what the error says, what it is
DOCUMENTED_REFUSALS = [
    ("can never be produced", "a terminal another always wins against (basic mode)"),
    ("declared terminals that nothing produces", "a language empty but for %declare'd terms"),
    ("derives no terminal string", "an empty language: no derivation of start finishes"),
    ("which has no finite automaton", "a lookaround or backreference (ESCAPED_STRING with text "
     "after it in one terminal)"),
]


def cut_at(s: str, rnd: random.Random) -> chk.Cut:
    """Two random offsets of ``s`` (the middle may be empty)."""
    i, j = sorted((rnd.randint(0, len(s)), rnd.randint(0, len(s))))
    return chk.Cut(s[:i], s[i:j], s[j:])


def where(p: lark.Lark, s: str, k: int) -> str:
    """Where offset ``k`` of ``s`` falls by lark's basic lexer: inside a lexeme, inside an
    ignored lexeme, or between two (for the statistics)."""
    try:
        toks = list(p.lex(s, dont_ignore=True))
    except (lark.exceptions.LarkError, AttributeError, TypeError):
        return "unknown"
    for t in toks:
        if t.start_pos is not None and t.start_pos < k < (t.end_pos or 0):
            return "ignored" if t.type in p.ignore_tokens else "lexeme"
    return "boundary"


def texts_of(p: lark.Lark, gg: gen.GenGrammar, rnd: random.Random, n: int) -> list[str]:
    """Up to ``n`` random derivations lark accepts."""
    der = gen.Deriver(p)
    out: list[str] = []
    for _ in range(n):
        names = der.derive(rnd, depth=rnd.randint(2, 10))
        t = der.text(names, rnd, spaced=rnd.choice([0.0, 0.3, 1.0]))
        if t is not None and len(t) < 300:
            out.append(t)
    return [t for t in dict.fromkeys(out) if chk.lark_accepts(p, t)]


def build(gg: gen.GenGrammar, mode: str, vocab: gramask.Vocabulary
          ) -> tuple[lark.Lark, gramask.CompiledGrammar] | str | dict[str, object]:
    """lark's parser and gramask's compiled grammar, or why the grammar is skipped (a
    string) or a case (gramask refuses what lark builds)."""
    try:
        p = lf.oracle(gg.text, mode, gen.Indenter() if gg.indent else None)
    except lf.ConflictError:
        return "lark resolves LALR conflicts (skipped)"
    except (lark.exceptions.LarkError, RecursionError):
        return "lark refuses"
    try:
        return p, lf.compile_(gg.text, mode, vocab)
    except GramaskError as e:
        why = str(e).splitlines()[0]
        for known, what in DOCUMENTED_REFUSALS:
            if known in why:
                return f"gramask refuses: {what} (documented)"
        return {"kind": "refused", "error": f"{type(e).__name__}: {why}"}
    except Exception as e:
        return {"kind": "crash-compile", "error": f"{type(e).__name__}: {e}"}


def lexed_empty(case: dict[str, object], gg: gen.GenGrammar, mode: str, rnd: random.Random,
                n: int) -> bool:
    """A refusal as an empty language "as the lexer splits text" is right where lark takes
    none of ``n`` random derivations either (else the case stands, with lark's text)."""
    if "the language is empty as" not in str(case.get("error", "")):
        return False
    p = lf.oracle(gg.text, mode, gen.Indenter() if gg.indent else None)
    good = texts_of(p, gg, rnd, n)
    if good:
        case["lark_takes"] = good[0]
    return not good


def run_grammar(gg: gen.GenGrammar, mode: str, vocab: gramask.Vocabulary,
                tok: Callable[[str], list[int]], rnd: random.Random, a: argparse.Namespace,
                stats: Counter[str], found: list[dict[str, object]]) -> None:
    built = build(gg, mode, vocab)
    if isinstance(built, str):
        stats[f"{mode}: {built}"] += 1
        return
    if isinstance(built, dict):
        if lexed_empty(built, gg, mode, rnd, a.texts):
            stats[f"{mode}: gramask refuses: empty as lexed, lark takes no derivation either "
                  "(documented)"] += 1
            return
        found.append({"mode": mode, "grammar": gg.text, **built})
        return
    p, cg = built
    stats[f"{mode}: grammars"] += 1
    slack = [int(k) for k in a.slack.split(",") if k]
    env = chk.Env(cg, lambda t: chk.lark_accepts(p, t, stats), tok, rnd, a.steps, stats,
                  mode)
    good = texts_of(p, gg, rnd, a.texts)
    env.pieces = chk.pieces(good)
    cuts = [cut_at(rnd.choice(good), rnd) for _ in range(a.cuts if good else 0)]
    pending: list[tuple[chk.Problem, chk.Cut]] = []
    taken: list[chk.Cut] = []  # the cuts whose whole text gramask's prefix mode takes
    for cut in cuts:
        stats[f"{mode}: cuts"] += 1
        for k in (len(cut.prefix), len(cut.prefix) + len(cut.middle)):
            stats[f"{mode}: cut offsets {where(p, cut.text, k)}"] += 1
        if not complete(cg, cut.text):
            stats[f"{mode}: lark differences (gramask's prefix mode refuses the text)"] += 1
            continue
        taken.append(cut)
        pending += [(pr, cut) for pr in chk.check_cut(env, cut, a.walks, slack)]
    middles = [c.middle for c in cuts]
    for cut in taken[: a.broken]:
        bad = chk.Cut(cut.prefix, "", gen.mutate(cut.suffix, gg.alphabet, rnd))
        stats[f"{mode}: broken suffixes"] += 1
        pending += [(pr, bad) for pr in chk.check_broken_suffix(env, bad, middles)]
    seen: set[str] = set()
    for pr, cut in pending:
        stats[f"{mode}: problems {pr.kind}"] += 1
        if pr.kind in seen:
            continue  # one of each kind per grammar and mode is written
        seen.add(pr.kind)
        case: dict[str, object] = {"mode": mode, "kind": pr.kind, "grammar": gg.text,
                                   "prefix": cut.prefix, "middle": cut.middle,
                                   "suffix": cut.suffix, "detail": pr.detail,
                                   "walked": pr.middle, "witness": pr.witness,
                                   "features": gg.features}
        if a.minimise:
            minimise_case(case, pr, cut, gg, mode, vocab, tok, a.timeout)
        found.append(case)


def minimise_case(case: dict[str, object], pr: chk.Problem, cut: chk.Cut,
                  gg: gen.GenGrammar, mode: str, vocab: gramask.Vocabulary,
                  tok: Callable[[str], list[int]], timeout: int) -> None:
    """Minimise ``case`` in place where its kind can be replayed (``fim_fuzz_min``)."""
    import fim_fuzz_min as mn

    bad = mn.replay(pr.kind, mode, vocab, tok, gg.indent, pr.witness)
    if bad is None:
        return
    if pr.middle is not None:
        cut = chk.Cut(cut.prefix, pr.middle, cut.suffix)
    signal.alarm(timeout)
    try:
        if not bad(gg.text, cut):
            case["min"] = "does not reproduce"
            return
        g, c = mn.minimise(gg.text, cut, bad)
        case.update(min_grammar=g, min_prefix=c.prefix, min_middle=c.middle,
                    min_suffix=c.suffix)
        print(f"  minimised: {g!r} {c.prefix!r} {c.middle!r} {c.suffix!r}", flush=True)
    except lf.Slow:
        case["min"] = "minimisation timed out"
    finally:
        signal.alarm(0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_args(ap, grammars=30, walks=2, texts_help="derivations each",
                timeout_help="seconds per grammar and mode", out="fim_fuzz.jsonl")
    ap.add_argument("--modes", default="contextual,basic")
    ap.add_argument("--cuts", type=int, default=6, help="cuts per grammar and mode")
    ap.add_argument("--broken", type=int, default=3, help="cuts with a mutated suffix")
    ap.add_argument("--slack", default="0,1,4", help="budgets: true middle's tokens + k")
    ap.add_argument("--indent", type=float, default=0.25,
                    help="share of grammars with lark's Indenter")
    a = ap.parse_args(argv)
    lark.logger.setLevel(logging.CRITICAL)  # Earley's notes on ambiguous cycles
    vocab = gramask.Vocabulary.bundled(a.vocab)
    tok = hf_tokenizer(a.vocab)
    stats: Counter[str] = Counter()
    found: list[dict[str, object]] = []
    t0, c0 = time.time(), time.process_time()
    out = a.out.open("w")
    for k in range(a.grammars):
        rnd = random.Random(f"fim:{a.seed}:{k}")
        gg = gen.indented_grammar(rnd) if rnd.random() < a.indent else gen.grammar(rnd)
        lf.run_modes(lambda mode, gg=gg, rnd=rnd:
                     run_grammar(gg, mode, vocab, tok, rnd, a, stats, found),
                     a.modes, a.timeout, stats, found, out, f"{a.seed}:{k}")
    out.close()
    summary(stats, a.out, len(found), t0, c0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
