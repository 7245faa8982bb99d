"""Token budgets on real code: do budget-constrained generations end as programs, how often does
the budget mask forbid a token that could still finish in time, and what do budgets cost?

Cases are ``tools/fim_eval.py``'s random cuts of the running interpreter's standard library
(the prefix only). For each case and budget N (1 to 64 tokens) a random walk takes allowed
tokens until the budget is spent or EOS; it must end with ``is_complete()`` and
``ast.parse(prefix + text)`` must accept it (rejections the bundled grammar's known prefix-only
gaps explain are counted apart, as in fim_eval). Walks prefer ASCII tokens without backslashes
(the grammar's NAME is wider than CPython's, see docs/semantics.md).

Over-restriction: at every step, up to ``--probe`` tokens that the grammar allows but the budget
mask forbids get a real check — gramask's shortest completion after the token; when it fits in
what is left, the mask forbade a token the exact answer allows. That is a lower bound on the
exact over-restriction (the exact answer needs a search over token sequences). Reported as the
share of probed forbidden tokens that fit, and as an estimate of the share of all fitting tokens
that the mask forbids (each step's forbidden count × its probes' fit rate).

    python tools/budget_eval.py --fim --cases 200 --vocab deepseek-v4   # with the suffixes

Cost: per step, the plain mask (``allowed()`` of a constraint without budget, first) and then
the budget's extra time on top of it (same state; the grammar mask is then a memo hit).

    python tools/budget_eval.py --cases 200 --vocab deepseek-v4
    PYTHONPATH=.:tools python tools/budget_eval.py --grammar c --lexer contextual --cases 100

With ``--lexer contextual`` (C, SQL) the oracle is lark's contextual LALR parser; a rejection
of a text that gramask's own contextual prefix constraint calls complete is counted as a known
difference of the two contextual lexers (as in fim_eval).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fim_eval

import gramask

BUDGETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--probe", type=int, default=8, help="forbidden tokens checked per step")
    ap.add_argument("--time-limit", type=float, default=1e9)
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per walk")
    ap.add_argument("--grammar", choices=["python", "c", "sql"], default="python",
                    help="c and sql: fim_eval's hand-written documents, checked by lark")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                    help="comma-separated budgets drawn from per case (default: 1 to 64)")
    ap.add_argument("--fim", action="store_true",
                    help="keep the cases' suffixes: fill-in-the-middle under a budget")
    ap.add_argument("--lexer", choices=["basic", "contextual"], default=None,
                    help="lexer mode for c and sql (default: the bundled grammar's, basic); "
                         "contextual: checked by lark's contextual LALR parser")
    args = ap.parse_args(argv)
    budgets = [int(x) for x in args.budgets.split(",")]
    if args.lexer == "contextual" and (args.grammar == "python" or args.fim):
        ap.error("--lexer contextual: --grammar c or sql, without --fim")

    vocab = gramask.Vocabulary.bundled(args.vocab)
    grammar = gramask.grammars.load(args.grammar, lexer=args.lexer)
    cg = gramask.compile(grammar, vocab)
    if args.grammar == "python":
        source = fim_eval.cases("random", args.cases, args.seed)
        check = fim_eval.python_error
    else:
        docs = fim_eval.SQL_DOCS if args.grammar == "sql" else fim_eval.C_DOCS
        source = fim_eval.doc_cases(docs, args.grammar, args.cases, args.seed)
        check = fim_eval.lark_checker(args.grammar, grammar.lexer)
        if grammar.lexer == "contextual":  # lark's contextual lexer differs in known ways
            check = fim_eval._contextual_oracle(cg, check)
    plain_ok = np.array([
        not vocab.is_special(i)
        and all((32 <= b < 127 and b != 92) or b == 10 for b in vocab.token_bytes(i))
        for i in range(len(vocab))
    ])
    rnd = random.Random(args.seed)
    eos = vocab.eos_token_id
    t_start = time.perf_counter()
    st: dict[str, Any] = dict(walks=0, refused=0, complete=0, parsed=0, known_gap=0, failed=0,
                              budget_allowed=0, probed=0, over=0, steps=0, unplanned=0, empty=0,
                              over_est=0.0, grammar_allowed=0)
    plain_ms: list[float] = []
    extra_ms: list[float] = []
    setup_ms: list[tuple[float, float]] = []
    failures: list[str] = []
    for case in source:
        if time.perf_counter() - t_start > args.time_limit:
            break
        t_case = time.perf_counter()
        prefix = case.prefix
        suffix = case.suffix if args.fim else None
        n = rnd.choice(budgets)
        try:
            t0 = time.perf_counter()
            ref = cg.constraint(prefix, suffix=suffix)
            t1 = time.perf_counter()
            try:
                c = cg.constraint(prefix, suffix=suffix, max_tokens=n)
            finally:
                setup_ms.append(((t1 - t0) * 1000, (time.perf_counter() - t1) * 1000))
        except gramask.BudgetError:
            st["refused"] += 1
            continue
        except gramask.InvalidPrefixError:  # a broken suffix (InvalidSuffixError) too
            continue
        except gramask.NoCompletionError as e:  # no completion could be planned
            st["unplanned"] += 1
            failures.append(f"{case.source}:{case.start}-{case.end} budget {n}: {e}")
            continue
        st["walks"] += 1
        while True:
            t0 = time.perf_counter()
            grammar_mask = ref.allowed()
            t1 = time.perf_counter()
            m = c.allowed()
            t2 = time.perf_counter()
            plain_ms.append((t1 - t0) * 1000)
            extra_ms.append((t2 - t1) * 1000)
            st["steps"] += 1
            st["budget_allowed"] += int(m.sum())
            forbidden = np.flatnonzero(grammar_mask & ~m)
            left = c.remaining_tokens
            assert left is not None
            forbidden = forbidden[forbidden != eos]
            if forbidden.size and left > 0 and args.probe > 0:
                k = fit = 0
                for t in rnd.sample(forbidden.tolist(), min(args.probe, forbidden.size)):
                    st["probed"] += 1
                    k += 1
                    if c._plan_fits(int(t), left - 1):
                        st["over"] += 1
                        fit += 1
                # this step's forbidden tokens that fit, estimated from the sample
                st["over_est"] += forbidden.size * fit / k
            st["grammar_allowed"] += int(grammar_mask.sum()) - int(bool(grammar_mask[eos]))
            if left == 0:
                break
            ids = np.flatnonzero(m & plain_ok)
            ids = ids if ids.size else np.flatnonzero(m)
            if not ids.size:
                st["empty"] += 1
                failures.append(f"{case.source}:{case.start}-{case.end} budget {n}: empty mask "
                                f"after {c.text!r} ({left} left)")
                break
            if m[eos] and rnd.random() < 0.2:
                break
            t = int(rnd.choice(ids))
            if t == eos:
                break
            c.advance(t)
            ref.advance(t)
        if args.verbose:
            print(f"  {case.source}:{case.start} budget {n}: {c.num_tokens} tokens, "
                  f"{time.perf_counter() - t_case:.2f} s", file=sys.stderr, flush=True)
        text = prefix + c.text + (suffix or "")
        if c.is_complete():
            st["complete"] += 1
        err = check(text)
        if err is None:
            st["parsed"] += 1
        elif fim_eval.known_gap(err) or ("def " in text and "[" in text):
            st["known_gap"] += 1
        else:
            st["failed"] += 1
            failures.append(f"{case.source}:{case.start} budget {n}: {err}: {c.text!r}")
    w = max(1, st["walks"])
    print(f"budget walks{' (fill-in-the-middle)' if args.fim else ''} on {args.grammar} "
          f"({grammar.lexer} lexer), {args.vocab}: "
          f"{st['walks']} walks ({st['refused']} budgets refused "
          f"as too small), {st['steps']} steps, {time.perf_counter() - t_start:.0f} s")
    print(f"  ended complete (is_complete):       {100 * st['complete'] / w:.2f}%"
          + (f" ({st['unplanned']} cases with no completion planned)" if st["unplanned"] else "")
          + (f" ({st['empty']} walks met an empty mask)" if st["empty"] else ""))
    print(f"  accepted by the oracle:             {100 * st['parsed'] / w:.2f}% "
          f"(+{st['known_gap']} known "
          + ("differences of lark's contextual lexer: gramask's own prefix constraint calls "
             "them complete" if grammar.lexer == "contextual" else "grammar gaps")
          + f", {st['failed']} other failures)")
    probed = max(1, st["probed"])
    print(f"  forbidden tokens that fit (probed): {st['over']} of {st['probed']} "
          f"({100 * st['over'] / probed:.2f}%); allowed per step {st['budget_allowed'] / max(1, st['steps']):.0f}")
    fitting = st["budget_allowed"] + st["over_est"]
    print(f"  over-restriction (estimated):       {100 * st['over_est'] / max(1.0, fitting):.2f}% "
          "of the tokens that fit (allowed + forbidden-but-fitting, from the probes) are "
          f"forbidden; grammar mask allows {st['grammar_allowed'] / max(1, st['steps']):.0f} per step")
    print(f"  plain mask ms p50/p99/mean:         {_pct(plain_ms, 50):.3f} / {_pct(plain_ms, 99):.3f}"
          f" / {np.mean(plain_ms):.3f}")
    print(f"  budget extra ms p50/p99/mean:       {_pct(extra_ms, 50):.3f} / {_pct(extra_ms, 99):.3f}"
          f" / {np.mean(extra_ms):.3f} ({100 * np.mean(extra_ms) / max(1e-9, np.mean(plain_ms)):.0f}%"
          " of the plain mean)")
    print(f"  setup ms p50/p99 plain / budgeted:  {_pct([a for a, _ in setup_ms], 50):.1f} / "
          f"{_pct([a for a, _ in setup_ms], 99):.1f} plain, {_pct([b for _, b in setup_ms], 50):.1f}"
          f" / {_pct([b for _, b in setup_ms], 99):.1f} with the budget (its first plan included)")
    for f in failures[:10]:
        print("  FAIL", f[:300])
    return 0 if st["failed"] == 0 and st["complete"] == st["walks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
