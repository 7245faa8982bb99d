"""Is a budget mask a function of its own request only? Run the same budgeted requests in
several orders in one process (one compiled grammar, so every memo the constraints share is
warm with other requests' states), and optionally each request alone in a fresh process; at
every step hash the budget mask and note the step's plan length. Any difference is a mask
that depends on process history (what other constraints of the grammar did before).

Requests are ``tools/budget_force.py``'s cases: the true continuation of real code forced
token by token under a budget of its true length + ``--k``, up to its end or its first
forbidden token (the digest lists then differ in length too).

    python tools/budget_determinism.py --grammar c --lexer contextual --cases 8
    python tools/budget_determinism.py --grammar python --fim --cases 8 --fresh

Exit status 0 when every order (and every fresh process) gave the same digests.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))

import budget_force  # noqa: E402

import gramask  # noqa: E402

Trace = list[str]  # per step: "<mask digest>:<plan length or ->"


def trace(cg: gramask.CompiledGrammar, prefix: str, suffix: str | None, ids: list[int],
          budget: int) -> Trace:
    """The digests of forcing ``ids`` then EOS under ``budget`` from a fresh constraint."""
    try:
        c = cg.constraint(prefix, suffix=suffix, max_tokens=budget)
    except (gramask.BudgetError, gramask.NoCompletionError) as e:
        return [f"refused:{type(e).__name__}"]
    out: Trace = []
    for step in budget_force.forced_walk(c, ids, cg.vocab.eos_token_id):
        try:
            need = str(c.min_tokens_to_complete())
        except gramask.GramaskError:
            need = "-"
        out.append(f"{hashlib.sha256(np.packbits(step.mask).tobytes()).hexdigest()[:12]}:{need}")
    return out


def load(args: argparse.Namespace, only: int | None = None,
         ) -> tuple[gramask.CompiledGrammar, list[tuple[int, str, str | None, list[int]]]]:
    """The compiled grammar and the runnable requests: (index, prefix, suffix, ids); with
    ``only``, that request alone (no other request's setup runs in the process)."""
    from tests._support import hf_tokenizer  # type: ignore[import-not-found, unused-ignore]

    encode = hf_tokenizer(args.vocab)
    vocab = gramask.Vocabulary.bundled(args.vocab)
    grammar = gramask.grammars.load(args.grammar, lexer=args.lexer)
    cg = gramask.compile(grammar, vocab)
    todo = [ic for ic in enumerate(budget_force.cases(args.grammar, args.fim, args.cases,
                                                      args.seed)) if only in (None, ic[0])]
    return cg, [(i, case.prefix, suffix, ids) for i, case, suffix, ids
                in budget_force.runnable(cg, todo, encode, args.fim, args.max_tokens)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grammar", choices=["python", "c", "sql", "json"], default="c")
    ap.add_argument("--lexer", choices=["basic", "contextual"], default=None)
    ap.add_argument("--fim", action="store_true")
    ap.add_argument("--cases", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=4, help="budget = true length + k")
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--max-tokens", type=int, default=120)
    ap.add_argument("--orders", default="forward,reverse,shuffle",
                    help="orders to run the requests in, in one process")
    ap.add_argument("--fresh", action="store_true",
                    help="also run each request alone in a fresh process")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # (a fresh run)
    args = ap.parse_args(argv)
    cg, reqs = load(args, args.one)
    if args.one is not None:
        for _, prefix, suffix, ids in reqs:
            print(json.dumps(trace(cg, prefix, suffix, ids, len(ids) + args.k)))
        return 0
    runs: dict[str, dict[int, Trace]] = {}
    for order in args.orders.split(","):
        todo = list(reqs)
        if order == "reverse":
            todo.reverse()
        elif order == "shuffle":
            random.Random(args.seed + 1).shuffle(todo)
        got = runs[order] = {}
        for i, prefix, suffix, ids in todo:
            got[i] = trace(cg, prefix, suffix, ids, len(ids) + args.k)
        print(f"  {order}: {len(got)} requests, {sum(map(len, got.values()))} steps",
              file=sys.stderr, flush=True)
    if args.fresh:
        got = runs["fresh"] = {}
        base = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--fresh"]
        for i, *_ in reqs:
            r = subprocess.run([sys.executable, __file__, *base, "--one", str(i)],
                               capture_output=True, text=True, check=True)
            got[i] = json.loads(r.stdout.strip().splitlines()[-1])
        print(f"  fresh: {len(got)} processes", file=sys.stderr, flush=True)
    names = list(runs)
    ref = runs[names[0]]
    bad = 0
    for i, *_ in reqs:
        for name in names[1:]:
            a, b = ref[i], runs[name][i]
            if a != b:
                bad += 1
                j = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                         min(len(a), len(b)))
                print(f"request #{i}: {names[0]} and {name} differ at step {j} "
                      f"({len(a)} vs {len(b)} steps): {a[j:j + 1]} vs {b[j:j + 1]}")
    mode = "fill-in-the-middle" if args.fim else "prefix"
    print(f"{args.grammar} ({cg.grammar.lexer} lexer), {mode}, k={args.k}: {len(reqs)} "
          f"requests, {len(names)} runs ({', '.join(names)}): {bad} differing")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
