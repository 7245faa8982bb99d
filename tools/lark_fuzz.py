"""Differential fuzzing of gramask against lark on random small Lark grammars.

Usage: python tools/lark_fuzz.py [--grammars N] [--seed S] [--vocab gpt2] [--modes basic,contextual]
                                 [--texts N] [--walks N] [--out FILE] [--no-minimise]

For each random grammar (``tools/lark_fuzz_gen.py``) and lexer mode, lark is the oracle:
``Lark(text, parser="lalr", lexer="contextual")`` for gramask's contextual mode,
``Lark(text, parser="earley", lexer="basic")`` for the basic mode (a grammar lark cannot build
is skipped). gramask compiles the grammar on a real vocabulary, and

(a) ``constraint(text).is_complete()`` must equal lark's verdict, on random derivations
    (spelled out, ignored text between terminals now and then) and on mutations of them;
(b) every text lark accepts, tokenized by the vocabulary's own tokenizer, is forced through
    the mask token by token: no token of it forbidden, EOS allowed at its end;
(c) random masked walks from prefixes of those texts (random allowed tokens, then the
    shortest completion) end where EOS is allowed, in a text lark accepts.

A grammar lark builds and gramask refuses is listed with gramask's error; any exception that
is not a ``GramaskError`` is a crash. Each disagreement is minimised (text, then grammar
lines) and written as one JSON line to ``--out``. docs/semantics.md lists the documented
differences (the contextual mode's longest match against lark's first-match alternation,
the LALR state's allowed set against the union of Earley items, ...): the report classifies
by hand.
"""

from __future__ import annotations

import argparse
import functools
import logging
import random
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import lark

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import lark_fuzz_gen as gen
from fuzz_common import (
    common_args,
    complete,
    force_into,
    random_steps,
    summary,
    walk_case,
    write_cases,
)

import gramask
from gramask.errors import GramaskError
from tests._support import hf_tokenizer

ORACLE = {"contextual": {"parser": "lalr", "lexer": "contextual"},
          "basic": {"parser": "earley", "lexer": "basic"}}


class Conflicts(logging.Handler):
    """Counts the shift/reduce conflicts lark resolves silently (as shift): where it does,
    its LALR parser accepts less than the grammar's language, so it is no oracle."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage().startswith("Shift/Reduce conflict")


class ConflictError(lark.exceptions.GrammarError):
    """lark's LALR table has a shift/reduce conflict (see :class:`Conflicts`)."""


def oracle(text: str, mode: str, postlex: lark.lark.PostLex | None = None) -> lark.Lark:
    """lark's parser for ``mode``; ConflictError for an LALR table with conflicts."""
    h = Conflicts()
    log = lark.logger
    handlers, level = log.handlers, log.level
    log.handlers, log.level = [h], logging.DEBUG
    try:
        p = lark.Lark(text, postlex=postlex, **ORACLE[mode])  # type: ignore[arg-type]
    finally:
        log.handlers, log.level = handlers, level
    if h.count:
        raise ConflictError(f"{h.count} shift/reduce conflicts")
    return p


def accepts(p: lark.Lark, text: str) -> bool:
    try:
        p.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def compile_(text: str, mode: str, vocab: gramask.Vocabulary) -> gramask.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = gramask.Grammar.from_lark(text, lexer=mode)
        return gramask.compile(g, vocab, cache=False, progress=False)


def small_vocab() -> gramask.Vocabulary:
    """Printable ASCII bytes, newline and tab, one token each, and EOS."""
    toks = [bytes([c]) for c in range(32, 127)] + [b"\n", b"\t", b"\r"]
    return gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))


def force(cg: gramask.CompiledGrammar, ids: list[int]) -> str | None:
    """None if the mask takes every token of ``ids`` from the start and then EOS; else what
    failed."""
    return force_into(cg.constraint(), ids)


def walk(cg: gramask.CompiledGrammar, prefix: str, rnd: random.Random,
         steps: int) -> tuple[str, str | None]:
    """A random masked walk from ``prefix``: (text, problem or None)."""
    c = cg.constraint(prefix)
    eos = cg.vocab.eos_token_id
    random_steps(c, eos, rnd, steps)
    try:
        for t in c.shortest_completion().token_ids:
            c.advance(t)
    except gramask.NoCompletionError:
        return prefix + c.data.decode(errors="replace"), "no completion after allowed tokens"
    except gramask.TokenRejected:
        return prefix + c.data.decode(errors="replace"), "shortest completion token rejected"
    text = prefix + c.data.decode(errors="replace")
    if not c.allowed()[eos]:  # type: ignore[index]
        return text, "EOS forbidden after the shortest completion"
    return text, None


def shrink(items: list[str], still: Callable[[list[str]], bool]) -> list[str]:
    """Greedy one-at-a-time removal while ``still`` holds."""
    i = 0
    while i < len(items):
        cand = items[:i] + items[i + 1:]
        if still(cand):
            items = cand
        else:
            i += 1
    return items


def _blocks(gtext: str) -> list[str]:
    """The grammar's definitions, each with its continuation lines (``    | ...``)."""
    out: list[str] = []
    for line in gtext.splitlines():
        if line.startswith(" ") and out:
            out[-1] += "\n" + line
        else:
            out.append(line)
    return out


def failing(kind: str, mode: str, vocab: gramask.Vocabulary,
            tok: Callable[[str], list[int]]) -> Callable[[str, str], bool]:
    """Does (grammar, text) still show a disagreement of ``kind``?"""

    @functools.lru_cache(maxsize=4)  # the text shrinks under one grammar: built once
    def built(g: str) -> tuple[lark.Lark, gramask.CompiledGrammar]:
        return oracle(g, mode), compile_(g, mode, vocab)

    def bad(g: str, t: str) -> bool:
        try:
            p, cg = built(g)
            if kind == "complete":
                return complete(cg, t) != accepts(p, t)
            if kind == "force":
                return accepts(p, t) and force(cg, tok(t)) is not None
            c = cg.constraint(t)  # "stuck": a valid prefix with no completion found
            try:
                c.shortest_completion()
            except gramask.NoCompletionError:
                return any(accepts(p, t + x) for x in SUFFIXES)
            return False
        except (lark.exceptions.LarkError, GramaskError, RecursionError):
            return False

    return bad


# completions a stuck prefix is tried with: a real program must exist for "stuck" to count
SUFFIXES = ["", "0", "-0", "+0", "a", " a", "*/", "\n", ")", "\"", "aa", "0)", "*/=="]


def minimise(gtext: str, text: str, bad: Callable[[str, str], bool]) -> tuple[str, str]:
    """A smaller grammar and text that still disagree the same way: characters of the
    text, then definitions, alternatives and words of the grammar, then the text again."""
    text = "".join(shrink(list(text), lambda cs: bad(gtext, "".join(cs))))
    blocks = shrink(_blocks(gtext), lambda bs: bad("\n".join(bs) + "\n", text))
    lines = shrink("\n".join(blocks).splitlines(),
                   lambda ls: bad("\n".join(ls) + "\n", text))
    for i in range(len(lines)):
        words = lines[i].split(" ")
        words = shrink(words, lambda ws, i=i: bad(
            "\n".join([*lines[:i], " ".join(ws), *lines[i + 1:]]) + "\n", text))
        lines[i] = " ".join(words)
    gtext = "\n".join(lines) + "\n"
    text = "".join(shrink(list(text), lambda cs: bad(gtext, "".join(cs))))
    return gtext, text


def run_grammar(gg: gen.GenGrammar, mode: str, vocab: gramask.Vocabulary,
                tok: Callable[[str], list[int]], rnd: random.Random, a: argparse.Namespace,
                stats: Counter[str], found: list[dict[str, object]]) -> None:
    try:
        p = oracle(gg.text, mode)
    except ConflictError:
        stats[f"{mode}: lark resolves LALR conflicts (skipped)"] += 1
        return
    except (lark.exceptions.LarkError, RecursionError):
        stats[f"{mode}: lark refuses"] += 1
        return
    try:
        cg = compile_(gg.text, mode, vocab)
    except GramaskError as e:
        stats[f"{mode}: gramask refuses"] += 1
        found.append({"mode": mode, "kind": "refused", "grammar": gg.text,
                      "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"})
        return
    except Exception as e:
        found.append({"mode": mode, "kind": "crash-compile", "grammar": gg.text,
                      "error": f"{type(e).__name__}: {e}"})
        return
    stats[f"{mode}: grammars"] += 1
    der = gen.Deriver(p)
    texts: list[str] = []
    for _ in range(a.texts):
        names = der.derive(rnd, depth=rnd.randint(2, 10))
        t = der.text(names, rnd, spaced=rnd.choice([0.0, 0.3, 1.0]))
        if t is not None and len(t) < 300:
            texts.append(t)
    good = [t for t in dict.fromkeys(texts) if accepts(p, t)]
    muts = [gen.mutate(rnd.choice(good or texts or [""]), gg.alphabet, rnd)
            for _ in range(a.texts)]
    pending: list[tuple[str, str, str]] = []  # (kind, text, detail)
    for t in dict.fromkeys(texts + muts):
        stats[f"{mode}: texts (a)"] += 1
        try:
            lk, gm = accepts(p, t), complete(cg, t)
        except GramaskError as e:
            pending.append(("crash", t, f"{type(e).__name__}: {e}"))
            continue
        except Exception as e:
            pending.append(("crash", t, f"{type(e).__name__}: {e}"))
            continue
        stats[f"{mode}: lark accepts (a)"] += lk
        if lk != gm:
            pending.append(("complete", t, f"lark {lk}, gramask {gm}"))
    for t in good[: a.force]:
        stats[f"{mode}: forced (b)"] += 1
        try:
            why = force(cg, tok(t))
        except Exception as e:
            why = f"crash {type(e).__name__}: {e}"
        if why is not None and complete(cg, t):
            pending.append(("force", t, why))
    for _ in range(a.walks if good else 0):
        s = rnd.choice(good)
        pre = s[: rnd.randint(0, len(s))]
        stats[f"{mode}: walks (c)"] += 1
        problem = walk_case(walk, cg, s, pre, rnd, a.steps, lambda t: accepts(p, t), "lark")
        if problem is not None:
            pending.append(problem)
    seen: set[str] = set()
    small = small_vocab()
    for kind, t, detail in pending:
        if kind in seen:
            continue  # one of each kind per grammar and mode
        seen.add(kind)
        stats[f"{mode}: disagreements {kind}"] += 1
        case: dict[str, object] = {"mode": mode, "kind": kind, "grammar": gg.text, "text": t,
                                   "detail": detail, "features": gg.features, "prefix": t}
        mk = {"complete": "complete", "force": "force", "walk": "complete"}.get(kind)
        if kind == "walk" and detail.startswith("no completion"):
            mk, t = "stuck", str(case["prefix"])
        if a.minimise and mk is not None:
            # is_complete does not depend on the vocabulary: the small one compiles faster
            v = small if mk == "complete" else vocab
            bad = failing(mk, mode, v, tok)
            signal.alarm(a.timeout)  # each minimisation gets its own time
            try:
                reproduces = bad(gg.text, t)
                mg, mt = minimise(gg.text, t, bad) if reproduces else ("", "")
            except Slow:
                case["min_kind"] = f"{mk}: minimisation timed out"
                found.append(case)
                continue
            if reproduces:
                case["min_kind"], case["min_grammar"], case["min_text"] = mk, mg, mt
                if mk == "complete":
                    mp, mc = oracle(mg, mode), compile_(mg, mode, v)
                    case["min_verdicts"] = f"lark {accepts(mp, mt)}, gramask {complete(mc, mt)}"
            else:
                case["min_kind"] = f"{mk}: does not reproduce"
        found.append(case)


class Slow(BaseException):
    """A grammar that lark or gramask takes too long over (lark expands ``x?`` and
    ``x ~ m..n`` into alternatives: nested ones blow up)."""


def _alarm(_sig: int, _frame: object) -> None:
    raise Slow


def minimised(bad: Callable[[str, str], bool],
              minimise: Callable[[str, str, Callable[[str, str], bool]], tuple[str, str]],
              source: str, text: str, timeout: int) -> tuple[str, str] | str:
    """The smallest (source, text) ``bad`` still holds for, within its own ``timeout`` (the
    alarm is left running: what is left of it bounds the rest of the run), or why there is
    none: "does not reproduce", "minimisation timed out"."""
    signal.alarm(timeout)
    try:
        if not bad(source, text):
            return "does not reproduce"
        return minimise(source, text, bad)
    except Slow:
        return "minimisation timed out"


def run_modes(run: Callable[[str], None], modes: str, timeout: int, stats: Counter[str],
              found: list[dict[str, object]], out: TextIO, grammar_id: str) -> None:
    """``run(mode)`` for each lexer mode within ``timeout`` seconds, its cases written."""
    signal.signal(signal.SIGALRM, _alarm)
    for mode in modes.split(","):
        n = len(found)
        signal.alarm(timeout)
        try:
            run(mode)
        except Slow:
            stats[f"{mode}: timed out"] += 1
            print(f"[grammar {grammar_id} {mode}] timed out", flush=True)
        finally:
            signal.alarm(0)
        write_cases(out, found[n:], grammar_id, f"grammar {grammar_id} {mode}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    common_args(ap, grammars=50, walks=6, texts_help="derivations (and mutations) each",
                timeout_help="seconds per grammar and mode", out="lark_fuzz.jsonl")
    ap.add_argument("--modes", default="contextual,basic")
    ap.add_argument("--extra", action="store_true",
                    help="regex features and %%ignore blocks the default pool lacks "
                         "(lark_fuzz_gen.EXTRA_REGEXES)")
    a = ap.parse_args(argv)
    vocab = gramask.Vocabulary.bundled(a.vocab)
    tok = hf_tokenizer(a.vocab)
    stats: Counter[str] = Counter()
    found: list[dict[str, object]] = []
    t0, c0 = time.time(), time.process_time()
    out = a.out.open("w")
    for k in range(a.grammars):
        rnd = random.Random(f"{a.seed}:{k}")
        gg = gen.grammar(rnd, extra=a.extra)
        run_modes(lambda mode, gg=gg, rnd=rnd:
                  run_grammar(gg, mode, vocab, tok, rnd, a, stats, found),
                  a.modes, a.timeout, stats, found, out, f"{a.seed}:{k}")
    out.close()
    summary(stats, a.out, len(found), t0, c0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
