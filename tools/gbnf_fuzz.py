"""Differential fuzzing of gramask's GBNF reader against XGrammar on random small grammars.

Usage: python tools/gbnf_fuzz.py [--grammars N] [--seed S] [--vocab gpt2] [--texts N]
                                 [--walks N] [--out FILE] [--no-minimise]

For each random grammar (``tools/gbnf_fuzz_gen.py``) XGrammar is the oracle
(``xgrammar.Grammar.from_ebnf`` and a string-level ``GrammarMatcher``; a grammar it refuses
is skipped), and gramask compiles ``Grammar.from_gbnf`` on a real vocabulary:

(a) random masked walks (random allowed tokens, then ``shortest_completion()``), from the
    empty prefix and from prefixes of samples, must end where EOS is allowed, in a text
    XGrammar accepts;
(b) texts sampled from the grammar's tree that XGrammar accepts, tokenized by the
    vocabulary's own tokenizer, are forced through the masks token by token: no token
    forbidden, EOS allowed at the end;
(c) ``is_complete()`` equals XGrammar's verdict on the samples and on mutations of them.

A grammar XGrammar builds and gramask refuses with a ``GrammarError`` is counted, not a bug;
any other exception is a crash; a grammar over ``--timeout`` seconds is listed with the
stage it was in (slow masks or a hang: time one mask to tell). Each
disagreement is minimised (text, then grammar lines and words) and written as a JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import xgrammar as xg
from xgrammar.testing import _get_matcher_from_grammar

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gbnf_fuzz_gen as gen
from fuzz_common import common_args, complete, random_steps, summary, walk_case, write_cases
from lark_fuzz import Slow, _alarm, force, minimised, shrink, small_vocab

import gramask
from gramask.errors import GramaskError
from tests._support import hf_tokenizer

STAGE = [""]  # what run_grammar is doing, for the report of a time-out


class Oracle:
    """XGrammar's verdict on whole strings of one grammar."""

    def __init__(self, text: str) -> None:
        self.m = _get_matcher_from_grammar(xg.Grammar.from_ebnf(text))

    def accepts(self, s: str) -> bool:
        self.m.reset()
        return bool(self.m.accept_string(s)) and bool(self.m.is_terminated())


def oracle_survives(text: str) -> bool:
    """Does building XGrammar's matcher for ``text`` end without killing the process? It is
    tried in a forked child first: XGrammar 0.2.8 segfaults on some grammars
    (``r0 ::= r0{0}``)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        with contextlib.suppress(BaseException):
            Oracle(text)
        os._exit(0)
    return os.waitpid(pid, 0)[1] == 0


def compile_(text: str, vocab: gramask.Vocabulary) -> gramask.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gramask.Grammar.from_gbnf(text)
        return gramask.compile(g, vocab, cache=False, progress=False)


def walk(cg: gramask.CompiledGrammar, prefix: str, rnd: random.Random,
         steps: int) -> tuple[str, str | None]:
    """A random masked walk from ``prefix``: (text, problem or None)."""
    c = cg.constraint(prefix)
    eos = cg.vocab.eos_token_id
    random_steps(c, eos, rnd, steps)
    stem = prefix + c.data.decode(errors="replace")
    try:
        for t in c.shortest_completion().token_ids:
            c.advance(t)
    except gramask.NoCompletionError:
        return stem, "no completion after allowed tokens"
    except gramask.TokenRejected:
        return stem, "shortest completion token rejected"
    try:
        text = prefix + c.data.decode()
    except UnicodeDecodeError:
        return stem, f"completed bytes are not UTF-8: {c.data!r}"
    if not c.allowed()[eos]:  # type: ignore[index]
        return text, "EOS forbidden after the shortest completion"
    return text, None


def failing(kind: str, vocab: gramask.Vocabulary,
            tok: Callable[[str], list[int]]) -> Callable[[str, str], bool]:
    """Does (grammar, text) still show a disagreement of ``kind``?"""

    def bad(g: str, t: str) -> bool:
        try:
            if not oracle_survives(g):
                return False
            o = Oracle(g)
            cg = compile_(g, vocab)
            if kind == "complete":
                return complete(cg, t) != o.accepts(t)
            if kind == "force":
                return o.accepts(t) and force(cg, tok(t)) is not None
            try:  # "stuck": a prefix gramask allows with no completion found
                cg.constraint(t).shortest_completion()
            except gramask.NoCompletionError:
                return True
            except gramask.InvalidPrefixError:
                return False
            return False
        except (RuntimeError, GramaskError, RecursionError):
            return False

    return bad


def minimise(gtext: str, text: str, bad: Callable[[str, str], bool]) -> tuple[str, str]:
    """A smaller grammar and text that still disagree the same way."""
    text = "".join(shrink(list(text), lambda cs: bad(gtext, "".join(cs))))
    lines = shrink(gtext.splitlines(), lambda ls: bad("\n".join(ls) + "\n", text))
    for i in range(len(lines)):
        words = shrink(lines[i].split(" "), lambda ws, i=i: bad(
            "\n".join([*lines[:i], " ".join(ws), *lines[i + 1:]]) + "\n", text))
        lines[i] = " ".join(words)
    gtext = "\n".join(lines) + "\n"
    text = "".join(shrink(list(text), lambda cs: bad(gtext, "".join(cs))))
    return gtext, text


def run_grammar(gg: gen.GenGrammar, vocab: gramask.Vocabulary,
                tok: Callable[[str], list[int]], rnd: random.Random, a: argparse.Namespace,
                stats: Counter[str], found: list[dict[str, object]]) -> None:
    if not oracle_survives(gg.text):
        stats["XGrammar crashes (skipped)"] += 1
        return
    try:
        o = Oracle(gg.text)
    except RuntimeError:
        stats["XGrammar refuses"] += 1
        return
    STAGE[0] = "compile"
    try:
        cg = compile_(gg.text, vocab)
    except GramaskError as e:
        stats["gramask refuses (GrammarError)"] += 1
        stats[f"  refused: {str(e).splitlines()[0].split(':')[-1].strip()[:60]}"] += 1
        return
    except Exception as e:
        found.append({"kind": "crash-compile", "grammar": gg.text,
                      "detail": f"{type(e).__name__}: {e}"})
        return
    stats["grammars"] += 1
    smp = gen.Sampler(gg.rules, rnd, a.wide)
    samples = [s for s in (smp.sample() for _ in range(a.texts)) if s is not None]
    good = [s for s in dict.fromkeys(samples) if o.accepts(s)]
    pending: list[tuple[str, str, str]] = []
    for s in dict.fromkeys(samples):
        if s not in good:
            pending.append(("sampler", s, "XGrammar rejects a sample of the grammar's tree"))
    abc = gen.ALPHABET + (gen.WIDE_SAMPLE if a.wide else "")
    muts = [gen.mutate(rnd.choice(good or [""]), rnd, abc) for _ in range(a.texts)]
    for t in dict.fromkeys(samples + muts):
        STAGE[0] = f"is_complete({t!r})"
        stats["texts (c)"] += 1
        try:
            xa, gm = o.accepts(t), complete(cg, t)
        except Exception as e:
            pending.append(("crash", t, f"{type(e).__name__}: {e}"))
            continue
        stats["XGrammar accepts (c)"] += xa
        if xa != gm:
            pending.append(("complete", t, f"XGrammar {xa}, gramask {gm}"))
    for t in good[: a.force]:
        STAGE[0] = f"force({t!r})"
        stats["forced (b)"] += 1
        try:
            why = force(cg, tok(t))
        except Exception as e:
            why = f"crash {type(e).__name__}: {e}"
        if why is not None:
            pending.append(("force", t, why))
    for _ in range(a.walks):
        s = rnd.choice(good) if good and rnd.random() < 0.6 else ""
        pre = s[: rnd.randint(0, len(s))]
        STAGE[0] = f"walk from {pre!r}"
        stats["walks (a)"] += 1
        problem = walk_case(walk, cg, s, pre, rnd, a.steps, o.accepts, "XGrammar")
        if problem is not None:
            pending.append(problem)
    seen: set[str] = set()
    for kind, t, detail in pending:
        if kind in seen:
            continue  # one of each kind per grammar
        seen.add(kind)
        stats[f"disagreements {kind}"] += 1
        case: dict[str, object] = {"kind": kind, "grammar": gg.text, "text": t,
                                   "detail": detail, "features": gg.features}
        mk = {"complete": "complete", "force": "force"}.get(kind)
        if kind == "walk":
            mk = "stuck" if detail.startswith("no completion") else "complete"
        if a.minimise and mk is not None:
            v = small_vocab() if mk == "complete" else vocab
            got = minimised(failing(mk, v, tok), minimise, gg.text, t, a.timeout)
            if isinstance(got, str):
                case["min_kind"] = f"{mk}: {got}"
            else:
                case.update(min_kind=mk, min_grammar=got[0], min_text=got[1])
        found.append(case)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_args(ap, grammars=100, walks=8, texts_help="samples (and mutations) each",
                timeout_help="seconds per grammar", out="gbnf_fuzz.jsonl")
    ap.add_argument("--wide", action="store_true",
                    help="wide grammars (gbnf_fuzz_gen.grammar's wide=True); seeds differ")
    a = ap.parse_args(argv)
    logging.disable(logging.WARNING)  # lexer diagnostics: expected on these grammars
    vocab = gramask.Vocabulary.bundled(a.vocab)
    tok = hf_tokenizer(a.vocab)
    stats: Counter[str] = Counter()
    found: list[dict[str, object]] = []
    t0, c0 = time.time(), time.process_time()
    with a.out.open("w") as out:
        for k in range(a.grammars):
            rnd = random.Random(f"{a.seed}:{k}")
            gg = gen.grammar(rnd, a.wide)
            n = len(found)
            signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(a.timeout)
            try:
                run_grammar(gg, vocab, tok, rnd, a, stats, found)
            except Slow:
                stats["timed out"] += 1
                found.append({"kind": "timeout", "grammar": gg.text, "detail": STAGE[0]})
            finally:
                signal.alarm(0)
            print(f"[grammar {a.seed}:{k}] done at {time.time() - t0:.0f} s: "
                  + ", ".join(f"{key} {v}" for key, v in sorted(stats.items())
                              if not key.startswith(" ")), flush=True)
            write_cases(out, found[n:], f"{a.seed}:{k}", f"grammar {a.seed}:{k}")
    summary(stats, a.out, len(found), t0, c0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
