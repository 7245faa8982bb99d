"""Do token budgets let the real code through? Force the *true* continuation of real code, token
by token (as the vocabulary's own tokenizer splits it), under a budget of its true length + k,
and count the requests where the budget mask forbids one of its tokens (or EOS at its end).

A model that writes exactly the original code must never be blocked where the budget does not
bind; random walks (``tools/budget_eval.py``) cannot show this, they only choose among tokens the
mask already allows.

Cases: Python — random cuts of the running interpreter's standard library (``fim_eval``'s
cases; prefix-only: a cut in the last 200 characters before the end of a top-level statement,
the continuation is the rest of that program); C, SQL — ``fim_eval``'s documents plus one with
comments each; JSON — documents built from this interpreter's build configuration. With
``--fim`` the case's suffix stays (fill-in-the-middle) and the continuation is the middle.

    python tools/budget_force.py --grammar python --fim --cases 23
    python tools/budget_force.py --grammar c --lexer contextual --ks 0,1,4,64
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import json
import random
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))

import fim_eval  # noqa: E402

import gramask  # noqa: E402

C_COMMENTED = """// running totals of small squares
#include <stdio.h>

/* the square of x; no overflow check */
static int square(int x) { return x * x; }

int table[4] = {1, 2, 3, 4};

int main(void) {
    int total = 0; // the sum so far
    for (int i = 0; i < 4; i++) {
        /* every entry counts */
        total += square(table[i]);
    }
    int first = table[0]; // kept for the report
    printf("%d %d\\n", total, first);
    return 0;
}
"""

SQL_COMMENTED = """-- the biggest customers of the year
SELECT c.name, SUM(o.amount) AS total /* gross */
FROM customers c
JOIN orders o ON o.customer_id = c.id
WHERE o.year = 2024 -- this year only
GROUP BY c.name
HAVING SUM(o.amount) > 1000
ORDER BY total DESC;
"""


def json_docs() -> list[str]:
    """A few real JSON documents: slices of this interpreter's build configuration."""
    cfg = {k: v for k, v in sorted(sysconfig.get_config_vars().items())
           if isinstance(v, str | int) and len(str(v)) < 60}
    keys = list(cfg)
    out = []
    for i in range(4):
        part = {k: cfg[k] for k in keys[i * 9: i * 9 + 9]}
        nested = {"name": f"part{i}", "size": len(part), "vars": part, "flags": [1, 2.5, None,
                  True, "x"]}
        out.append(json.dumps(nested, indent=1 + i % 3))
    return out


def python_prefix_cases(n: int, seed: int) -> Iterator[fim_eval.FimCase]:
    """A program cut at the end of a top-level statement, the cursor in its last 200 chars."""
    rnd = random.Random(seed)
    files = fim_eval.stdlib_files(64_000)
    rnd.shuffle(files)
    made = 0
    for p in files:
        text = fim_eval.parsable_text(p)
        if text is None or made >= n:
            continue
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        ends = [sum(len(x) for x in lines[: s.end_lineno]) for s in tree.body
                if s.end_lineno is not None]
        if not ends:
            continue
        end = rnd.choice(ends)
        prog = text[:end]
        if fim_eval.python_error(prog) is not None:
            continue
        start = rnd.randint(max(0, end - 200), end - 1)
        made += 1
        yield fim_eval.FimCase("prefix", str(p), start, end, prog)


def doc_prefix_cases(docs: list[str], name: str, n: int, seed: int,
                     ) -> Iterator[fim_eval.FimCase]:
    """A cut at a random point of a document; the continuation is the rest of it."""
    rnd = random.Random(f"{name}:{seed}")
    for k in range(n):
        i = k % len(docs)
        d = docs[i]
        yield fim_eval.FimCase("prefix", f"{name}-doc{i}", rnd.randint(0, len(d) - 1), len(d), d)


def cases(grammar: str, fim: bool, n: int, seed: int) -> Iterator[fim_eval.FimCase]:
    if grammar == "python":
        return fim_eval.cases("random", n, seed) if fim else python_prefix_cases(n, seed)
    docs = {"c": [*fim_eval.C_DOCS, C_COMMENTED], "sql": [*fim_eval.SQL_DOCS, SQL_COMMENTED],
            "json": json_docs()}[grammar]
    if fim:
        return fim_eval.doc_cases(docs, grammar, n, seed)
    return doc_prefix_cases(docs, grammar, n, seed)


def runnable(cg: gramask.CompiledGrammar, todo: list[tuple[int, fim_eval.FimCase]],
             encode: Callable[[str], list[int]], fim: bool, max_tokens: int,
             ) -> Iterator[tuple[int, fim_eval.FimCase, str | None, list[int]]]:
    """(index, case, suffix, true token ids) of the cases a request can be made of: a
    continuation of 1 to ``max_tokens`` tokens, and a prefix (and suffix) the grammar takes
    (the bundled grammars' known gaps are skipped; fim_eval counts them)."""
    for index, case in todo:
        ids = encode(case.middle)
        if not ids or len(ids) > max_tokens:
            continue
        suffix = case.suffix if fim else None
        try:
            cg.constraint(case.prefix, suffix=suffix)
        except gramask.GramaskError:
            continue
        yield index, case, suffix, ids


class Stats:
    """Per-step figures of the forced walks: CPU time of the plain mask (no budget, same
    state) and of the budgeted one; and, at steps where the budget is slack (what is left
    exceeds the step's plan by at least ``margin``), how many grammar-allowed tokens the budget
    forbids (the target: none)."""

    def __init__(self, margin: int) -> None:
        self.margin = margin
        self.plain: list[float] = []
        self.budget: list[float] = []
        self.slack_steps = 0
        self.slack_cut_steps = 0  # slack steps with at least one token forbidden
        self.slack_cut = 0  # tokens forbidden at slack steps
        self.slack_allowed = 0  # grammar-allowed tokens at slack steps


class Step(NamedTuple):
    """One step of :func:`forced_walk`."""

    index: int
    token: int | None  # the true token (EOS after the last; None: the vocabulary has none)
    mask: np.ndarray  # the budgeted constraint's allowed()
    wall: float  # its wall-clock seconds
    cpu: float  # its CPU seconds
    plain: np.ndarray | None  # ``ref``'s allowed() in the same state, read first
    plain_cpu: float  # its CPU seconds


def forced_walk(c: gramask.Constraint, ids: list[int], eos: int | None,
                ref: gramask.Constraint | None = None) -> Iterator[Step]:
    """Force ``ids`` then ``eos`` through ``c`` (and ``ref``, the same request without the
    budget, in step), a :class:`Step` per token; the walk ends with the step whose token
    the mask forbids, or with EOS."""
    for i, t in enumerate([*ids, eos]):
        g, plain_cpu = None, 0.0
        if ref is not None:
            t0 = time.process_time()
            g = ref.allowed()
            plain_cpu = time.process_time() - t0
        t0 = time.perf_counter()
        c0 = time.process_time()
        m = c.allowed()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        yield Step(i, t, m, wall, cpu, g, plain_cpu)
        if t is None or not m[t] or t == eos:
            return
        c.advance(t)
        if ref is not None:
            ref.advance(t)


def force(cg: gramask.CompiledGrammar, prefix: str, suffix: str | None, ids: list[int],
          budget: int, times: list[float], stats: Stats | None = None,
          digests: list[str] | None = None,
          masks: list[np.ndarray] | None = None) -> str | None:
    """Walk ``ids`` then EOS under ``budget``; None if every token was allowed, else why not.
    ``digests`` gets one line per step (the mask's SHA-256 prefix), to compare two commits;
    ``masks`` the masks themselves, bit-packed (to tell a superset from a change)."""
    vocab = cg.vocab
    try:
        c = cg.constraint(prefix, suffix=suffix, max_tokens=budget)
        ref = cg.constraint(prefix, suffix=suffix) if stats is not None else None
    except (gramask.BudgetError, gramask.NoCompletionError) as e:
        return f"refused at setup: {type(e).__name__}"
    eos = vocab.eos_token_id
    for step in forced_walk(c, ids, eos, ref):
        m, t = step.mask, step.token
        times.append(step.wall)
        if digests is not None:
            digests.append(hashlib.sha256(np.packbits(m).tobytes()).hexdigest()[:16])
        if masks is not None:
            masks.append(np.packbits(m))
        if step.plain is not None and stats is not None:
            stats.plain.append(step.plain_cpu)
            stats.budget.append(step.cpu)
            left = c.remaining_tokens
            assert left is not None
            if left >= c.min_tokens_to_complete() + stats.margin:
                cut = int((step.plain & ~m).sum())
                stats.slack_steps += 1
                stats.slack_cut += cut
                stats.slack_cut_steps += cut > 0
                stats.slack_allowed += int(step.plain.sum())
        if t is None or not m[t]:
            what = "EOS" if t == eos else repr(vocab.token_bytes(t))
            need = "?"
            with contextlib.suppress(gramask.GramaskError):
                need = str(c.min_tokens_to_complete())
            return f"step {step.index}: {what} forbidden, {c.remaining_tokens} left, plan {need}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammar", choices=["python", "c", "sql", "json"], default="python")
    ap.add_argument("--lexer", choices=["basic", "contextual"], default=None)
    ap.add_argument("--fim", action="store_true", help="keep the suffix (fill-in-the-middle)")
    ap.add_argument("--cases", type=int, default=23)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ks", default="0,1,4,64", help="budget = true length + k")
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--max-tokens", type=int, default=120,
                    help="skip continuations longer than this (in true tokens)")
    ap.add_argument("--margin", type=int, default=4,
                    help="a step is slack when what is left ≥ its plan + this")
    ap.add_argument("--only", default="",
                    help="run only these cases (comma-separated indices in case order)")
    ap.add_argument("--shuffle", type=int, default=None,
                    help="run the cases in an order shuffled with this seed (masks must not "
                    "depend on it: each is a function of its own request)")
    ap.add_argument("--digests", default="",
                    help="write one line per step (request, k, step, mask digest) to this "
                    "file: two commits' files must be identical where masks are meant to be")
    ap.add_argument("--masks", default="",
                    help="write every step's mask, bit-packed, to this .npz file (key "
                    "'request k step'): tools/mask_superset.py compares two commits' files")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    ks = [int(x) for x in args.ks.split(",")]
    from tests._support import hf_tokenizer  # type: ignore[import-not-found, unused-ignore]

    encode: Callable[[str], list[int]] = hf_tokenizer(args.vocab)
    vocab = gramask.Vocabulary.bundled(args.vocab)
    grammar = gramask.grammars.load(args.grammar, lexer=args.lexer)
    cg = gramask.compile(grammar, vocab)
    blocked = dict.fromkeys(ks, 0)
    runs = 0
    times: list[float] = []
    stats = Stats(args.margin)
    t_start = time.perf_counter()
    c_start = time.process_time()
    digest_lines: list[str] = []
    mask_arrays: dict[str, np.ndarray] = {}
    todo = list(enumerate(cases(args.grammar, args.fim, args.cases, args.seed)))
    if args.only:
        keep = {int(x) for x in args.only.split(",")}
        todo = [ic for ic in todo if ic[0] in keep]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(todo)
    for index, case, suffix, ids in runnable(cg, todo, encode, args.fim, args.max_tokens):
        runs += 1
        for k in ks:
            steps: list[str] = []
            packed: list[np.ndarray] | None = [] if args.masks else None
            why = force(cg, case.prefix, suffix, ids, len(ids) + k, times, stats, steps,
                        packed)
            digest_lines += [f"{index} {k} {i} {d}" for i, d in enumerate(steps)]
            mask_arrays.update({f"{index} {k} {i}": pm for i, pm in enumerate(packed or [])})
            if why is not None:
                blocked[k] += 1
                if args.verbose or k >= 4:
                    print(f"  k={k} #{index} {case.source}:{case.start}-{case.end} "
                          f"({len(ids)} tokens): {why}", file=sys.stderr)
        print(f"  after {runs} requests: "
              + ", ".join(f"k={k}: {blocked[k]}" for k in ks), file=sys.stderr, flush=True)
    if args.digests:
        Path(args.digests).write_text("".join(f"{line}\n" for line in digest_lines))
    if args.masks:
        np.savez_compressed(args.masks, **mask_arrays)
    mode = "fill-in-the-middle" if args.fim else "prefix"
    plain, budget = np.array(stats.plain) * 1000, np.array(stats.budget) * 1000
    extra = budget - plain  # the budgeted mask's CPU time over the plain one, same state
    print(f"{args.grammar} ({grammar.lexer} lexer), {mode}, {args.vocab}: {runs} requests, "
          f"{time.perf_counter() - t_start:.0f} s wall, {time.process_time() - c_start:.0f} s "
          f"CPU; budgeted mask ms (wall) mean {1000 * np.mean(times):.2f}, "
          f"p99 {1000 * np.percentile(times, 99):.2f}")
    print("  requests with a true token forbidden: "
          + ", ".join(f"k={k}: {blocked[k]}/{runs}" for k in ks))
    if plain.size:
        print(f"  CPU ms per step: plain mask mean {plain.mean():.2f} p99 "
              f"{np.percentile(plain, 99):.2f}; budget extra mean {extra.mean():.2f} "
              f"({100 * extra.mean() / max(1e-9, plain.mean()):.0f}% of the plain mean) "
              f"p50 {np.percentile(extra, 50):.2f} p99 {np.percentile(extra, 99):.2f}")
    print(f"  slack steps (left ≥ plan + {args.margin}): {stats.slack_steps}, with a token "
          f"forbidden: {stats.slack_cut_steps}; forbidden there "
          f"{100 * stats.slack_cut / max(1, stats.slack_allowed):.3f}% of the grammar's tokens")
    return 0 if all(blocked[k] == 0 for k in ks if k >= 4) else 1


if __name__ == "__main__":
    raise SystemExit(main())
