"""Fill-in-the-middle evaluation on real code: completeness, soundness, setup and per-token cost.

Cases are cut from the running interpreter's standard library (``Lib/``, not site-packages),
seeded, in the two kinds of the evaluation of Melcer, Fulton, Gouda and Qian, "Constrained
Decoding for Fill-in-the-Middle Code Language Models via Efficient Left and Right Quotienting
of Context-Sensitive Grammars":

* ``random`` (their Stack-RandSpan): a random point in the first 90% of a file, up to 100
  characters (at most 20% of the file) cut out;
* ``boundary`` (their Stack-Boundary): two ``tokenize`` tokens of the same block (same
  indentation level); the suffix starts at the second, the prefix ends inside the first.

For each case the true middle, tokenised by the vocabulary's own tokenizer, is forced token by
token through ``compiled.constraint(prefix=P, suffix=S)``:

* completeness — every token of the true middle allowed, EOS allowed at its end;
* soundness — whenever ``is_complete()`` holds (while forcing, and on random masked walks that
  start after a random part of the true middle), ``ast.parse(P + middle + S)`` must succeed;
* setup per request, per-token mask latency (the process starts with nothing memoised), and
  the "checked unconstrained" baseline of that paper: ``ast.parse`` of every candidate end.

``--grammar c|sql`` runs the same on a few hand-written documents, checked by lark.

    PYTHONPATH=. python tools/fim_eval.py --cases 200 --kind both --seed 0 --vocab deepseek-v4
    PYTHONPATH=. python tools/fim_eval.py --grammar sql --cases 100
    PYTHONPATH=. python tools/fim_eval.py --grammar sql --lexer contextual --cases 100
"""

from __future__ import annotations

import argparse
import ast
import io
import itertools
import json
import os
import random
import sys
import sysconfig
import time
import tokenize
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gramask

__all__ = [
    "FimCase",
    "boundary_case",
    "cases",
    "random_span_case",
    "stdlib_files",
    "token_spans",
]


@dataclass(frozen=True)
class FimCase:
    """One request: ``text[:start]`` is the prefix, ``text[end:]`` the suffix."""

    kind: str
    source: str  # file path (or document name)
    start: int
    end: int
    text: str = field(repr=False)

    @property
    def prefix(self) -> str:
        return self.text[: self.start]

    @property
    def middle(self) -> str:
        return self.text[self.start: self.end]

    @property
    def suffix(self) -> str:
        return self.text[self.end:]

    def ident(self) -> dict[str, Any]:
        return {"kind": self.kind, "source": self.source, "start": self.start, "end": self.end}


# --------------------------------------------------------------------------- case generation


def random_span_case(text: str, rnd: random.Random, source: str = "") -> FimCase:
    """A cut at a random point in the first 90% of ``text``, of 1 to min(100, 20% of the text)
    characters (or up to the end of the text)."""
    start = rnd.randint(0, int(0.9 * len(text)))
    longest = max(1, min(100, len(text) // 5, len(text) - start))
    end = min(len(text), start + rnd.randint(1, longest))
    return FimCase("random", source, start, end, text)


def token_spans(text: str) -> list[tuple[int, int, int]]:
    """(start, end, block) for each token of ``tokenize`` that carries text: character offsets,
    and an id of the block (indented suite) the token lies in — the same id means the same
    indentation level with no dedent below it in between."""
    line_start = [0]
    for line in text.splitlines(keepends=True):
        line_start.append(line_start[-1] + len(line))
    out = []
    stack = [0]
    next_block = 1
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.INDENT:
            stack.append(next_block)
            next_block += 1
            continue
        if tok.type == tokenize.DEDENT:
            stack.pop()
            continue
        if tok.type in (tokenize.ENDMARKER, tokenize.NL, tokenize.NEWLINE) or not tok.string:
            continue
        a = line_start[tok.start[0] - 1] + tok.start[1]
        b = line_start[tok.end[0] - 1] + tok.end[1]
        out.append((a, b, stack[-1]))
    return out


def boundary_case(text: str, rnd: random.Random, source: str = "",
                  spans: list[tuple[int, int, int]] | None = None) -> FimCase | None:
    """Two different tokens of one block: the prefix ends at a random point inside the first
    (possibly at its start or end), the suffix starts at the second. ``None`` if no block has
    two tokens."""
    spans = token_spans(text) if spans is None else spans
    blocks: dict[int, list[int]] = {}
    for i, (_, _, blk) in enumerate(spans):
        blocks.setdefault(blk, []).append(i)
    members = [m for m in blocks.values() if len(m) > 1]
    if not members:
        return None
    group = rnd.choices(members, weights=[len(m) for m in members])[0]
    i, j = sorted(rnd.sample(group, 2))
    a, b, _ = spans[i]
    return FimCase("boundary", source, rnd.randint(a, b), spans[j][0], text)


def stdlib_files(max_bytes: int) -> list[Path]:
    """The interpreter's stdlib ``.py`` files (site-packages excluded), sorted."""
    root = sysconfig.get_paths()["stdlib"]
    out = []
    for d, subdirs, files in os.walk(root):
        subdirs[:] = sorted(s for s in subdirs if s != "site-packages")
        for f in sorted(files):
            p = Path(d) / f
            if f.endswith(".py") and p.stat().st_size <= max_bytes:
                out.append(p)
    return out


def python_error(text: str) -> str | None:
    """``ast.parse``'s verdict: ``None`` if it accepts ``text``, else the error message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        return f"{type(e).__name__}: {e.args[0] if e.args else e}"
    return None


def parsable_text(p: Path) -> str | None:
    """The file's text if it is UTF-8 and ``ast.parse`` accepts it, else None."""
    try:
        text = p.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    return text if python_error(text) is None else None


def cases(kind: str, n: int, seed: int, *, max_bytes: int = 64_000, per_file: int = 2,
          files: list[Path] | None = None) -> Iterator[FimCase]:
    """``n`` cases of ``kind`` from the stdlib, ``per_file`` per file, files in a seeded order.
    Files that are not UTF-8 or that ``ast.parse`` rejects are skipped."""
    rnd = random.Random(f"{kind}:{seed}")
    order = list(stdlib_files(max_bytes) if files is None else files)
    rnd.shuffle(order)
    made = 0
    for p in order:
        text = parsable_text(p)
        if not text or not text.strip():
            continue
        spans = token_spans(text) if kind == "boundary" else None
        for _ in range(per_file):
            c = (random_span_case(text, rnd, str(p)) if kind == "random"
                 else boundary_case(text, rnd, str(p), spans))
            if c is not None:
                yield c
                made += 1
                if made >= n:
                    return


SCALING_KB = (0.5, 1, 2, 5, 10, 20, 50)


def scaling_cases(n_files: int, seed: int, sizes: tuple[float, ...] = SCALING_KB,
                  ) -> Iterator[tuple[float, FimCase]]:
    """For setup cost against suffix length: in ``n_files`` large stdlib files, one short cut
    near the top, with the suffix truncated after about each size in ``sizes`` KB (at the
    start of the next top-level statement, so the suffix stays a whole program's tail)."""
    rnd = random.Random(f"scaling:{seed}")
    big = [p for p in stdlib_files(400_000) if p.stat().st_size >= 1024 * max(sizes) + 4096]
    rnd.shuffle(big)
    made = 0
    for p in big:
        text = parsable_text(p)
        if text is None:
            continue
        start = rnd.randint(0, len(text) // 20)
        end = min(len(text), start + rnd.randint(1, 100))
        for kb in sizes:
            cut = end + int(kb * 1024)
            while cut < len(text) and not (text[cut - 1] == "\n" and text[cut].isalpha()):
                cut += 1
            yield kb, FimCase("scaling", str(p), start, end, text[:cut])
        made += 1
        if made >= n_files:
            return


# --------------------------------------------------------------------------- hand-written docs

SQL_DOCS = [
    """CREATE TABLE IF NOT EXISTS users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT UNIQUE,
    created_at TEXT DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO users (name, email) VALUES ('ada', 'ada@example.org'), ('bob', NULL);
SELECT u.name, count(*) AS n
FROM users AS u JOIN orders AS o ON o.user_id = u.id
WHERE o.total > 10.5 AND u.email LIKE '%@example.org'
GROUP BY u.name
HAVING count(*) >= 2
ORDER BY n DESC
LIMIT 10;
""",
    """-- monthly report
WITH monthly AS (
  SELECT strftime('%Y-%m', created_at) AS month, sum(total) AS revenue
  FROM orders
  WHERE status IN ('paid', 'shipped')
  GROUP BY 1
)
SELECT month, revenue,
       revenue - lag(revenue) OVER (ORDER BY month) AS delta
FROM monthly
ORDER BY month;
UPDATE orders SET status = 'archived' WHERE created_at < '2020-01-01';
DELETE FROM sessions WHERE expires < 1700000000;
""",
    """CREATE INDEX idx_orders_user ON orders (user_id, created_at);
SELECT name FROM users WHERE id IN (SELECT user_id FROM orders WHERE total BETWEEN 5 AND 50)
UNION
SELECT name FROM admins WHERE NOT disabled;
SELECT CASE WHEN total > 100 THEN 'big' WHEN total > 10 THEN 'mid' ELSE 'small' END AS size,
       CAST(total AS INTEGER) AS t
FROM orders;
""",
]

C_DOCS = [
    """#include <stdio.h>

static int square(int x) { return x * x; }

int main(int argc, char **argv) {
    int total = 0;
    for (int i = 0; i < argc; i++) {
        total += square(i);
    }
    if (total > 10 && argv[0] != 0) {
        printf("%d\\n", total);
    } else {
        total = -1;
    }
    return total;
}
""",
    """/* a tiny linked list */
struct node {
    int value;
    struct node *next;
};

struct node *push(struct node *head, int value) {
    struct node *n = malloc(sizeof(struct node));
    n->value = value;
    n->next = head;
    return n;
}

int length(const struct node *head) {
    int n = 0;
    while (head) {
        n++;
        head = head->next;
    }
    return n;
}
""",
    """typedef unsigned long size_t;
enum color { RED, GREEN = 2, BLUE };

double mean(const double *xs, size_t n) {
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; ++i)
        s += xs[i];
    return n ? s / (double)n : 0.0;
}

int classify(int c) {
    switch (c) {
    case RED: return 1;
    case GREEN: return 2;
    default: break;
    }
    return c % 3 == 0 ? 'a' : 'b';
}
""",
]


def doc_cases(docs: list[str], name: str, n: int, seed: int) -> Iterator[FimCase]:
    """Random spans cut from hand-written documents."""
    rnd = random.Random(f"{name}:{seed}")
    for k in range(n):
        i = k % len(docs)
        yield random_span_case(docs[i], rnd, f"{name}-doc{i}")


def lark_checker(grammar: str, lexer: str = "basic") -> Callable[[str], str | None]:
    """Membership by lark's own LALR parser with the basic lexer, or its contextual lexer for
    ``--lexer contextual`` (the bundled grammars load that way without conflicts)."""
    import lark

    parser = lark.Lark(gramask.grammars.lark_text(grammar), parser="lalr", lexer=lexer,
                       start=gramask.grammars.start_rule(grammar))

    def error(text: str) -> str | None:
        try:
            parser.parse(text)
        except lark.exceptions.LarkError as e:
            return type(e).__name__
        return None

    return error


def _contextual_oracle(cg: gramask.CompiledGrammar, lark_error: Callable[[str], str | None]
                       ) -> Callable[[str], str | None]:
    """The oracle's verdict (lark's; ``ast.parse`` for Python), with its rejections of texts
    that gramask's prefix-only constraint (the contextual semantics FIM follows) calls
    complete labelled as a known cause (for Python: keywords compete with names only where
    the parser expects both, so ``if = 3`` is a program of the contextual-mode grammar)."""
    def error(text: str) -> str | None:
        e = lark_error(text)
        if e is None:
            return None
        try:
            mine = cg.constraint(text).is_complete()
        except gramask.InvalidPrefixError:
            mine = False
        return f"{e} (contextual lexing: gramask's prefix verdict accepts)" if mine else e

    return error


# --------------------------------------------------------------------------- forcing

# Oracle rejections whose cause lies in the prefix-only runtime or the bundled grammar, not in
# fill-in-the-middle: they also occur with no suffix at all (``--no-suffix`` shows them).
KNOWN_GAPS = {
    "f-string": "python.lark lexes an f-string as one string; the fields inside are not parsed",
    "contextual lexing": "lark's contextual lexer (one LALR state's terminals, one winner per "
                         "tie), or Python's tokenizer (reserved keywords), differs from "
                         "gramask's contextual mode (docs/semantics.md); gramask's own prefix "
                         "constraint calls the whole text complete",
}


def known_gap(error: str) -> str | None:
    """The known prefix-only cause of an oracle rejection, if it is one."""
    for key, why in KNOWN_GAPS.items():
        if key in error:
            return why
    return None


@dataclass
class Stats:
    """What the run measured; failures go to the JSONL file as they happen."""

    cases: dict[str, int] = field(default_factory=dict)
    complete_ok: dict[str, int] = field(default_factory=dict)
    sound_checks: dict[str, int] = field(default_factory=dict)
    sound_ok: dict[str, int] = field(default_factory=dict)
    sound_cases_ok: dict[str, int] = field(default_factory=dict)
    sound_known: dict[str, int] = field(default_factory=dict)  # rejections with a known cause
    setup: list[tuple[int, float]] = field(default_factory=list)  # (suffix bytes, seconds)
    mask: list[float] = field(default_factory=list)
    advance: list[float] = field(default_factory=list)
    baseline: list[float] = field(default_factory=list)  # oracle parse per candidate end
    failures: int = 0
    causes: dict[str, int] = field(default_factory=dict)  # check: cause → count


def _bump(d: dict[str, int], k: str, by: int = 1) -> None:
    d[k] = d.get(k, 0) + by


def run_case(cg: gramask.CompiledGrammar, encode: Callable[[str], list[int]],
             oracle: Callable[[str], str | None], case: FimCase, rnd: random.Random, st: Stats,
             fail: Callable[[dict[str, Any]], None], *, walk: int = 16, baseline: bool = False,
             short: np.ndarray | None = None, use_suffix: bool = True) -> None:
    """Force one case's true middle, then walk randomly; record what holds and what not.
    ``use_suffix=False`` asks for a prefix-only constraint and does not expect EOS at the end
    of the middle (the case's text must stop there)."""
    kind, p, s = case.kind, case.prefix, case.suffix
    _bump(st.cases, kind)
    eos = cg.vocab.eos_token_id
    ids = encode(case.middle)
    t0 = time.perf_counter()
    try:
        c = cg.constraint(prefix=p, suffix=s if use_suffix else None)
    except gramask.GramaskError as e:
        fail({**case.ident(), "check": "setup", "step": 0, "error": str(e)})
        return
    st.setup.append((len(s.encode()), time.perf_counter() - t0))
    complete = True
    sound = True

    def check_end(step: int, middle: str, where: str) -> None:
        nonlocal sound
        _bump(st.sound_checks, kind)
        err = oracle(p + middle + s)
        if err is None:
            _bump(st.sound_ok, kind)
        else:
            sound = False
            if known_gap(err):
                _bump(st.sound_known, kind)
            fail({**case.ident(), "check": "soundness", "where": where, "step": step,
                  "middle": middle, "expected": "oracle accepts", "got": err})

    done = 0
    for k, t in enumerate(ids):
        t1 = time.perf_counter()
        m = c.allowed()
        st.mask.append(time.perf_counter() - t1)
        if baseline:
            t1 = time.perf_counter()
            oracle(p + c.text + s)
            st.baseline.append(time.perf_counter() - t1)
        if m[eos] and k:
            check_end(k, c.text, "forced")
        if not m[t]:
            complete = False
            fail({**case.ident(), "check": "completeness", "step": k,
                  "token": repr(cg.vocab.token_bytes(t)), "expected": True, "got": False,
                  "generated": c.text})
            break
        t1 = time.perf_counter()
        try:
            c.advance(t)
        except gramask.TokenRejected as e:  # the mask allowed it: mask and advance disagree
            complete = False
            fail({**case.ident(), "check": "advance", "step": k, "token":
                  repr(cg.vocab.token_bytes(t)), "generated": c.text, "got": str(e)})
            break
        st.advance.append(time.perf_counter() - t1)
        done += 1
    if complete:
        t1 = time.perf_counter()
        m = c.allowed()
        st.mask.append(time.perf_counter() - t1)
        if use_suffix and not m[eos]:
            complete = False
            fail({**case.ident(), "check": "completeness", "step": len(ids), "token": "EOS",
                  "expected": True, "got": False, "generated": c.text})
        _bump(st.complete_ok, kind, complete)
    # soundness walk from a random point of the true middle
    c.rollback(done - rnd.randint(0, done))
    for step in range(walk + 1):
        m = c.allowed()
        if m[eos]:
            check_end(c.num_tokens, c.text, "walk")
        m[eos] = False
        pool = np.flatnonzero(m & short) if short is not None and rnd.random() < 0.5 else None
        if pool is None or not len(pool):
            pool = np.flatnonzero(m)
        if not len(pool) or step == walk:
            break
        t = int(pool[rnd.randrange(len(pool))])
        try:
            c.advance(t)
        except gramask.TokenRejected as e:
            fail({**case.ident(), "check": "advance", "where": "walk", "step": c.num_tokens,
                  "token": repr(cg.vocab.token_bytes(t)), "generated": c.text, "got": str(e)})
            break
    _bump(st.sound_cases_ok, kind, sound)


# --------------------------------------------------------------------------- report


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def summary(st: Stats) -> dict[str, Any]:
    """The numbers the issue asks for, as one JSON-able dict."""
    out: dict[str, Any] = {"kinds": {}}
    for kind, n in st.cases.items():
        checks = st.sound_checks.get(kind, 0)
        out["kinds"][kind] = {
            "cases": n,
            "completeness": st.complete_ok.get(kind, 0) / n,
            "soundness_checks": checks,
            "soundness": st.sound_ok.get(kind, 0) / checks if checks else float("nan"),
            "soundness_without_known_gaps": (
                (st.sound_ok.get(kind, 0) + st.sound_known.get(kind, 0)) / checks
                if checks else float("nan")),
            "sound_cases": st.sound_cases_ok.get(kind, 0) / n,
        }
    small = [t for b, t in st.setup if b <= 2048]
    out["setup_ms_le_2KB"] = {"n": len(small), "p50": 1e3 * _pct(small, 50),
                              "p99": 1e3 * _pct(small, 99)}
    pts = [(b / 1024, t * 1e3) for b, t in st.setup if b <= 50 * 1024]
    if len(pts) > 2 and len({x for x, _ in pts}) > 1:
        slope, icept = np.polyfit([x for x, _ in pts], [y for _, y in pts], 1)
        out["setup_ms_per_KB"] = {"slope": float(slope), "intercept_ms": float(icept),
                                  "n": len(pts)}
    buckets = {}
    for lo, hi in [(0, 2), (2, 10), (10, 50), (50, 10**6)]:
        ts = [t for b, t in st.setup if lo * 1024 < b <= hi * 1024 or (lo == 0 and b == 0)]
        buckets[f"{lo}-{hi}KB" if hi < 10**6 else f">{lo}KB"] = {"n": len(ts), "p50": 1e3 * _pct(ts, 50),
                                   "p99": 1e3 * _pct(ts, 99)}
    out["setup_ms_by_suffix"] = buckets
    out["mask_ms"] = {"n": len(st.mask), "p50": 1e3 * _pct(st.mask, 50),
                      "p99": 1e3 * _pct(st.mask, 99),
                      "max": 1e3 * max(st.mask) if st.mask else float("nan")}
    out["advance_ms"] = {"p50": 1e3 * _pct(st.advance, 50), "p99": 1e3 * _pct(st.advance, 99)}
    out["checked_unconstrained_ms"] = {"n": len(st.baseline),
                                       "p50": 1e3 * _pct(st.baseline, 50),
                                       "p99": 1e3 * _pct(st.baseline, 99)}
    out["failures"] = st.failures
    out["failure_causes"] = dict(sorted(st.causes.items(), key=lambda kv: -kv[1]))
    return out


def print_table(res: dict[str, Any], head: str) -> None:
    print(head)
    print(f"{'kind':10} {'cases':>6} {'complete':>9} {'EOS checks':>10} {'sound':>8} "
          f"{'w/o known':>9} {'sound cases':>11}")
    for kind, r in res["kinds"].items():
        print(f"{kind:10} {r['cases']:6d} {100 * r['completeness']:8.2f}% "
              f"{r['soundness_checks']:10d} {100 * r['soundness']:7.2f}% "
              f"{100 * r['soundness_without_known_gaps']:8.2f}% "
              f"{100 * r['sound_cases']:10.2f}%")
    print("  (targets: complete ≥ 99.9%, sound ≥ 99.5%; 'w/o known' counts the rejections "
          "with a known prefix-only cause, KNOWN_GAPS, as sound)")
    s, m, a, b = (res["setup_ms_le_2KB"], res["mask_ms"], res["advance_ms"],
                  res["checked_unconstrained_ms"])
    print(f"setup ≤2KB suffix: p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms (n={s['n']}; "
          "target p50 ≤ 100, p99 ≤ 1000)")
    for name, bk in res["setup_ms_by_suffix"].items():
        print(f"  suffix {name:>9}: n={bk['n']:5d} p50 {bk['p50']:8.1f} ms  p99 {bk['p99']:8.1f} ms")
    if "setup_ms_per_KB" in res:
        f = res["setup_ms_per_KB"]
        print(f"  fit up to 50 KB: {f['intercept_ms']:.1f} ms + {f['slope']:.2f} ms/KB")
    print(f"mask per token: p50 {m['p50']:.3f} ms, p99 {m['p99']:.2f} ms, max {m['max']:.1f} ms "
          f"(n={m['n']}; target p50 ≤ 1, p99 ≤ 20); advance p50 {a['p50']:.3f} ms")
    print(f"checked unconstrained (oracle parse per candidate end): p50 {b['p50']:.2f} ms, "
          f"p99 {b['p99']:.2f} ms (n={b['n']})")
    print(f"failures: {res['failures']}")
    for cause, k in list(res["failure_causes"].items())[:10]:
        print(f"  {k:6d}  {cause}")


def setup_scaling(cg: gramask.CompiledGrammar, n_files: int, seed: int, as_json: bool) -> int:
    """Setup time (constraint creation + first mask) per suffix size; prints a small table."""
    rows: dict[float, list[float]] = {}
    sizes: dict[float, list[int]] = {}
    errors = 0
    for kb, case in scaling_cases(n_files, seed):
        t0 = time.perf_counter()
        try:
            c = cg.constraint(prefix=case.prefix, suffix=case.suffix)
            c.allowed()
        except gramask.GramaskError as e:
            errors += 1
            print(f"  setup error {case.ident()}: {e}", file=sys.stderr)
            continue
        rows.setdefault(kb, []).append(time.perf_counter() - t0)
        sizes.setdefault(kb, []).append(len(case.suffix.encode()))
    res = {str(kb): {"n": len(ts), "suffix_KB_mean": float(np.mean(sizes[kb])) / 1024,
                     "p50_ms": 1e3 * _pct(ts, 50), "p99_ms": 1e3 * _pct(ts, 99)}
           for kb, ts in sorted(rows.items())}
    xs = [b / 1024 for kb in rows for b in sizes[kb]]
    ys = [1e3 * t for kb in rows for t in rows[kb]]
    fit = np.polyfit(xs, ys, 1).tolist() if len(set(xs)) > 1 else [float("nan")] * 2
    out = {"setup_by_suffix_KB": res, "ms_per_KB": fit[0], "intercept_ms": fit[1],
           "errors": errors}
    if as_json:
        print(json.dumps(out, indent=1))
        return 0
    print("setup (constraint + first mask) by suffix length")
    for size, r in res.items():
        print(f"  {size:>4} KB (mean {r['suffix_KB_mean']:5.1f}): n={r['n']:3d}  "
              f"p50 {r['p50_ms']:8.1f} ms  p99 {r['p99_ms']:8.1f} ms")
    print(f"  fit: {fit[1]:.1f} ms + {fit[0]:.2f} ms/KB; setup errors: {errors}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100, help="cases per kind")
    ap.add_argument("--kind", choices=["random", "boundary", "both"], default="both")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", default="deepseek-v4", help="gpt2, deepseek-v4 or qwen2")
    ap.add_argument("--grammar", choices=["python", "c", "sql"], default="python")
    ap.add_argument("--lexer", choices=["contextual", "basic"], default=None,
                    help="lexer mode (default: the bundled grammar's)")
    ap.add_argument("--out", default="fim_eval_failures.jsonl", help="failures, one JSON a line")
    ap.add_argument("--walk", type=int, default=16, help="tokens per random soundness walk")
    ap.add_argument("--per-file", type=int, default=2)
    ap.add_argument("--max-bytes", type=int, default=64_000, help="skip larger stdlib files")
    ap.add_argument("--baseline-every", type=int, default=10,
                    help="time the checked-unconstrained baseline on every N-th case")
    ap.add_argument("--no-suffix", action="store_true",
                    help="drop the suffixes (prefix-only; checks this tool's plumbing)")
    ap.add_argument("--scaling", type=int, default=0, metavar="FILES",
                    help="only measure setup against suffix length (0.5..50 KB) in FILES files")
    ap.add_argument("--time-limit", type=float, default=0, metavar="SECONDS",
                    help="stop starting new cases after this long and report what ran")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = ap.parse_args(argv)

    try:  # the real tokenizers live with the tests (moving to tests/_support.py, issue 7)
        from tests._support import hf_tokenizer  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        from tests.conftest import hf_tokenizer

    t_start = time.perf_counter()
    grammar = gramask.grammars.load(args.grammar, lexer=args.lexer)
    cg = gramask.compile(grammar, gramask.Vocabulary.bundled(args.vocab), progress=False)
    encode = hf_tokenizer(args.vocab)
    oracle = (python_error if args.grammar == "python"
              else lark_checker(args.grammar, grammar.lexer))
    if grammar.lexer == "contextual":
        oracle = _contextual_oracle(cg, oracle)
    short = np.array([len(b) <= 3 and b.isascii() and not cg.vocab.is_special(i)
                      for i, b in enumerate(cg.vocab.tokens)])
    if args.scaling:
        return setup_scaling(cg, args.scaling, args.seed, args.json)
    kinds = ["random", "boundary"] if args.kind == "both" else [args.kind]
    if args.grammar != "python":
        kinds = ["random"]  # boundary cuts need Python's tokenize
    st = Stats()
    rnd = random.Random(args.seed)
    with open(args.out, "w", encoding="utf-8") as out:
        def fail(rec: dict[str, Any]) -> None:
            st.failures += 1
            got = str(rec.get("got"))
            if rec["check"] == "soundness" and "invalid" in got and "character" in got:
                got = got.split(" character")[0] + " character …"  # one cause, many characters
            got = got.split(" at position")[0].split(" in position")[0]
            cause = f"{rec['check']}: {got if rec['check'] == 'soundness' else ''}"
            if rec["check"] == "completeness":
                cause += "EOS" if rec["token"] == "EOS" else "token"
            elif rec["check"] == "advance":
                cause += "allowed() but advance() rejects"
            elif rec["check"] == "setup":
                cause += rec["error"].split(":")[0][:60]
            st.causes[cause[:90]] = st.causes.get(cause[:90], 0) + 1
            out.write(json.dumps(rec) + "\n")
            out.flush()

        gens = []
        for kind in kinds:
            if args.grammar == "python":
                gens.append(cases(kind, args.cases, args.seed, max_bytes=args.max_bytes,
                                  per_file=args.per_file))
            else:
                gens.append(doc_cases(SQL_DOCS if args.grammar == "sql" else C_DOCS,
                                      args.grammar, args.cases, args.seed))
        # kinds alternate, so that a run cut short by --time-limit has some of each
        for n, round_ in enumerate(itertools.zip_longest(*gens)):
            if args.time_limit and time.perf_counter() - t_start > args.time_limit:
                print(f"  time limit reached after {n} rounds", file=sys.stderr)
                break
            for case in round_:
                if case is None:
                    continue
                if args.no_suffix:
                    case = FimCase(case.kind, case.source, case.start, case.end,
                                   case.text[: case.end])
                try:
                    run_case(cg, encode, oracle, case, rnd, st, fail, walk=args.walk,
                             baseline=n % max(1, args.baseline_every) == 0, short=short,
                             use_suffix=not args.no_suffix)
                except NotImplementedError as e:
                    print(f"error: {e} (use --no-suffix to check the plumbing)", file=sys.stderr)
                    return 2
            if n % 50 == 49:
                print(f"  {n + 1} cases of each kind, {st.failures} failures, "
                      f"{time.perf_counter() - t_start:.0f} s", file=sys.stderr)
    res = summary(st)
    res.update(grammar=args.grammar, lexer=grammar.lexer, vocab=args.vocab, seed=args.seed,
               seconds=round(time.perf_counter() - t_start, 1), failures_file=args.out)
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_table(res, f"FIM eval: {args.grammar} × {args.vocab}, seed {args.seed}, "
                         f"{res['seconds']} s{' (suffixes dropped)' if args.no_suffix else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
