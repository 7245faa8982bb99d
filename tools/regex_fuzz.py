"""Fuzzing ``Grammar.from_regex`` against ``re.fullmatch``, and ``Grammar.from_choices``
against membership, on random patterns and choice lists (``tools/regex_fuzz_gen.py``).

Usage: python tools/regex_fuzz.py [--grammars N] [--choices N] [--seed S]
                                  [--vocab gpt2 --vocab deepseek-v4] [--texts N] [--walks N]
                                  [--out FILE] [--no-minimise] [--long P]

For each random regex (anchored or not, flags, lazy repeats, Unicode; rarely a construct with
no finite automaton):

(r) compiling: a construct with no automaton must be refused with a ``GrammarError``; a
    regular pattern must compile (a refusal is listed, with its message); any other exception
    is a crash;
(c) ``is_complete()`` equals ``re.fullmatch`` on samples of the pattern's tree, mutations of
    them, their prefixes and random strings;
(b) samples that match are tokenized by each vocabulary's own tokenizer (GPT-2, DeepSeek by
    default) and forced through the masks token by token: no token forbidden, EOS allowed at
    the end;
(a) random masked walks (random allowed tokens, then ``shortest_completion()``), from the
    empty prefix and from prefixes of samples, end where EOS is allowed in a text that
    ``re.fullmatch`` takes; a state with no completion is a dead end.

Choice lists (shared prefixes, duplicates, ``re``'s special characters, Unicode, the empty
string) get the same (c), (b), (a) with "the text is one of the choices" as the oracle.
Each disagreement is minimised (text, then pattern characters) and written as a JSON line.
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import signal
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import regex_fuzz_gen as gen
from fuzz_common import complete, summary, walk_case, write_cases
from lark_fuzz import Slow, _alarm, force, minimised, shrink, walk

import gramask
from gramask.errors import GramaskError
from tests._support import BYTES, hf_tokenizer

Tok = Callable[[str], list[int]]
Vocabs = list[tuple[str, gramask.Vocabulary, Tok]]


def compile_(g: gramask.Grammar, vocab: gramask.Vocabulary) -> gramask.CompiledGrammar:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gramask.compile(g, vocab, cache=False, progress=False)


def tokens(vocab: gramask.Vocabulary, tok: Tok, text: str) -> list[int] | None:
    """The tokenizer's ids for ``text``, or None where they do not spell it byte for byte
    (a normalising tokenizer): such a text cannot be forced."""
    ids = tok(text)
    spelt = b"".join(vocab.token_bytes(i) for i in ids)
    return ids if spelt == text.encode() else None


def fullmatch(pattern: str) -> Callable[[str], bool]:
    rx = re.compile(pattern)
    return lambda s: rx.fullmatch(s) is not None


def check(cg_of: Callable[[gramask.Vocabulary], gramask.CompiledGrammar], vocabs: Vocabs,
          oracle: Callable[[str], bool], samples: list[str], rnd: random.Random,
          a: argparse.Namespace, stats: Counter[str]) -> list[tuple[str, str, str]]:
    """(c), (b) and (a) on one compiled pattern or choice list: what disagreed."""
    pending: list[tuple[str, str, str]] = []
    good = [s for s in dict.fromkeys(samples) if oracle(s)]
    texts = list(samples)
    texts += [gen.mutate(rnd.choice(good or [""]), rnd) for _ in range(a.texts)]
    texts += [s[: rnd.randint(0, len(s))] for s in good[: a.texts // 2]]
    texts += ["".join(rnd.choice(gen.POOL) for _ in range(rnd.randint(0, 4)))
              for _ in range(a.texts // 3)]
    for k, (name, vocab, tok) in enumerate(vocabs):
        cg = cg_of(vocab)
        if k == 0:
            for t in dict.fromkeys(texts):
                stats["texts (c)"] += 1
                try:
                    want, got = oracle(t), complete(cg, t)
                except Exception as e:
                    pending.append(("crash", t, f"{type(e).__name__}: {e}"))
                    continue
                stats["oracle accepts (c)"] += want
                if want != got:
                    pending.append(("complete", t, f"re/choices {want}, gramask {got}"))
        for t in good[: a.force]:
            ids = tokens(vocab, tok, t)
            if ids is None:
                stats[f"not tokenized byte for byte ({name})"] += 1
                continue
            stats[f"forced (b, {name})"] += 1
            try:
                why = force(cg, ids)
            except Exception as e:
                why = f"crash {type(e).__name__}: {e}"
            if why is not None:
                pending.append(("force", t, f"{name}: {why}"))
        for _ in range(a.walks):
            s = rnd.choice(good) if good and rnd.random() < 0.6 else ""
            pre = s[: rnd.randint(0, len(s))]
            stats[f"walks (a, {name})"] += 1
            problem = walk_case(walk, cg, s, pre, rnd, a.steps, oracle, "the oracle")
            if problem is not None:
                pending.append((problem[0], problem[1], f"{name}: {problem[2]}"))
    return pending


def failing(kind: str, vocabs: Vocabs) -> Callable[[str, str], bool]:
    """Does (pattern, text) still show a disagreement of ``kind`` (on the byte vocabulary
    for ``complete``, else on the vocabularies the run used)?"""

    def bad(p: str, t: str) -> bool:
        try:
            rx = re.compile(p)
            g = gramask.Grammar.from_regex(p)
            if kind == "complete":
                return complete(compile_(g, BYTES), t) != bool(rx.fullmatch(t))
            for _, vocab, tok in vocabs:
                cg = compile_(g, vocab)
                if kind == "force":
                    ids = tokens(vocab, tok, t)
                    if rx.fullmatch(t) and ids is not None and force(cg, ids) is not None:
                        return True
                elif kind == "stuck":
                    try:
                        cg.constraint(t).shortest_completion()
                    except gramask.NoCompletionError:
                        return True
                    except gramask.InvalidPrefixError:
                        pass
            return False
        except (re.error, RecursionError, GramaskError):
            return False

    return bad


def minimise(p: str, t: str, bad: Callable[[str, str], bool]) -> tuple[str, str]:
    t = "".join(shrink(list(t), lambda cs: bad(p, "".join(cs))))
    p = "".join(shrink(list(p), lambda cs: bad("".join(cs), t)))
    t = "".join(shrink(list(t), lambda cs: bad(p, "".join(cs))))
    return p, t


def run_regex(g: gen.GenRegex, vocabs: Vocabs, rnd: random.Random, a: argparse.Namespace,
              stats: Counter[str], found: list[dict[str, object]]) -> None:
    smp = gen.Sampler(rnd)
    samples = [smp.sample(g.tree, g.flags.replace("x", "")) for _ in range(a.texts)]
    oracle = fullmatch(g.pattern)
    case: dict[str, object] = {"pattern": g.pattern}
    try:
        grammar = gramask.Grammar.from_regex(g.pattern)
        first = compile_(grammar, vocabs[0][1])
    except gramask.GrammarError as e:
        msg = str(e)  # (a verbose pattern's message spans lines)
        empty_only = "only the empty string" in msg
        if g.not_regular and not empty_only:
            stats["refused, no automaton (expected)"] += 1
            what = re.search(r"/ uses (.*?), which", msg, re.S)
            stats[f"  refused: {what.group(1) if what else msg[:50]}"] += 1
        elif empty_only and not any(s and oracle(s) for s in samples):
            stats["refused, only the empty string"] += 1
        else:
            stats["refused, regular (finding)"] += 1
            found.append({**case, "kind": "refused", "detail": msg})
        return
    except Exception as e:
        found.append({**case, "kind": "crash-compile", "detail": f"{type(e).__name__}: {e}"})
        return
    if g.not_regular:
        stats["compiled with a construct with no automaton"] += 1
    stats["regexes compiled"] += 1
    pending = check(lambda v: first if v is vocabs[0][1] else compile_(grammar, v), vocabs,
                    oracle, samples, rnd, a, stats)
    seen: set[str] = set()
    for kind, t, detail in pending:
        if kind in seen:
            continue  # one of each kind per pattern
        seen.add(kind)
        stats[f"disagreements {kind}"] += 1
        c = {**case, "kind": kind, "text": t, "detail": detail}
        mk = {"complete": "complete", "force": "force"}.get(kind)
        if kind == "walk":
            mk = "stuck" if "no completion" in detail else "complete"
        if a.minimise and mk is not None:
            got = minimised(failing(mk, vocabs), minimise, g.pattern, t, a.timeout)
            signal.alarm(0)
            if isinstance(got, str):
                c["min_kind"] = f"{mk}: {got}"
            else:
                c.update(min_kind=mk, min_pattern=got[0], min_text=got[1])
        found.append(c)


def run_choices(words: list[str], vocabs: Vocabs, rnd: random.Random, a: argparse.Namespace,
                stats: Counter[str], found: list[dict[str, object]]) -> None:
    case: dict[str, object] = {"choices": words}
    try:
        grammar = gramask.Grammar.from_choices(words)
    except gramask.GrammarError as e:
        if any(words):
            found.append({**case, "kind": "refused", "detail": str(e)})
        else:
            stats["choices refused, only the empty string"] += 1
        return
    except Exception as e:
        found.append({**case, "kind": "crash-compile", "detail": f"{type(e).__name__}: {e}"})
        return
    stats["choice lists compiled"] += 1
    samples = words + [w + rnd.choice(gen.POOL) for w in words]
    pending = check(lambda v: compile_(grammar, v), vocabs, set(words).__contains__, samples,
                    rnd, a, stats)
    for kind in dict.fromkeys(k for k, _, _ in pending):
        t, detail = next((t, d) for k, t, d in pending if k == kind)
        stats[f"choice disagreements {kind}"] += 1
        found.append({**case, "kind": kind, "text": t, "detail": detail})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--grammars", type=int, default=100, help="random regexes")
    ap.add_argument("--choices", type=int, default=40, help="random choice lists")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", action="append", help="gpt2 and deepseek-v4 unless given")
    ap.add_argument("--texts", type=int, default=20, help="samples (and mutations) each")
    ap.add_argument("--force", type=int, default=6, help="texts forced through the mask each")
    ap.add_argument("--walks", type=int, default=6, help="walks each, per vocabulary")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--timeout", type=int, default=60, help="seconds per pattern")
    ap.add_argument("--out", type=Path, default=Path("regex_fuzz.jsonl"))
    ap.add_argument("--no-minimise", dest="minimise", action="store_false")
    ap.add_argument("--wide", type=float, default=0.0,
                    help="chance of one of regex_fuzz_gen.WIDE_ATOMS per node (other seeds "
                    "unchanged)")
    ap.add_argument("--long", type=float, default=0.0,
                    help="chance of a long counted repeat of a class per node (\\w{1,64})")
    a = ap.parse_args(argv)
    logging.disable(logging.WARNING)
    vocabs = [(v, gramask.Vocabulary.bundled(v), hf_tokenizer(v))
              for v in a.vocab or ["gpt2", "deepseek-v4"]]
    stats: Counter[str] = Counter()
    found: list[dict[str, object]] = []
    t0, c0 = time.time(), time.process_time()
    signal.signal(signal.SIGALRM, _alarm)
    jobs = [("regex", k) for k in range(a.grammars)] + [("choices", k) for k in range(a.choices)]
    with a.out.open("w") as out:
        for what, k in jobs:
            rnd = random.Random(f"{a.seed}:{what}:{k}")
            item = (gen.regex(rnd, long=a.long, wide=a.wide) if what == "regex"
                    else gen.choices(rnd))
            n = len(found)
            signal.alarm(a.timeout)
            try:
                if isinstance(item, gen.GenRegex):
                    run_regex(item, vocabs, rnd, a, stats, found)
                else:
                    run_choices(item, vocabs, rnd, a, stats, found)
            except Slow:
                stats["timed out"] += 1
                found.append({"kind": "timeout", "detail": f"{what} {a.seed}:{k}",
                              "case": item if isinstance(item, list) else item.pattern})
            finally:
                signal.alarm(0)
            write_cases(out, found[n:], f"{what} {a.seed}:{k}", f"{what} {a.seed}:{k}")
            if k % 50 == 49:
                print(f"[{what} {a.seed}:{k}] done at {time.time() - t0:.0f} s: "
                      + ", ".join(f"{key} {v}" for key, v in sorted(stats.items())
                                  if not key.startswith(" ")), flush=True)
    summary(stats, a.out, len(found), t0, c0)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
