"""Issue 20's hostile inputs, each in a fresh process: outcome, seconds and peak memory.

    PYTHONPATH=. python tools/probe_hostile.py [--cases fim_py_paren_1000,...] [--timeout 120]
        [--memory-mb 4096] [--vocab gpt2] [--json]

Run it with ``PYTHONPATH`` pointing at another checkout to measure that code (the "before" of
the issue's note). Each case runs in its own interpreter, with an address-space cap of
``--memory-mb`` and a wall-clock ``--timeout``; the compiled grammars come from the cache and
are loaded, and their runtime tables built, before the clock starts. Columns: the outcome (the exception type and the start of
its message, or "ok"), the case's own seconds, the process's peak RSS and that peak minus the
RSS before the case (what the case itself added). Prints a Markdown table; no assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

CASES: dict[str, Callable[[Any], Any]] = {}


def case(name: str) -> Callable[[Callable[[Any], Any]], Callable[[Any], Any]]:
    def reg(f: Callable[[Any], Any]) -> Callable[[Any], Any]:
        CASES[name] = f
        return f

    return reg


# ------------------------------------------------------------------------------- setups
def _compiled(grammar: str, vocab: str) -> Any:
    import gramask

    return gramask.compile(gramask.grammars.load(grammar), gramask.Vocabulary.bundled(vocab),
                           progress=False)


def _setup(name: str, vocab: str) -> Callable[[], Any]:
    """What a case needs loaded before its clock starts."""
    if name.startswith(("fim_py", "py_")):
        cg = _compiled("python", vocab)
        cg.constraint(prefix="x = ", suffix="1\n")  # the per-grammar reversed automaton
        return lambda: cg
    if name.startswith("fim_json"):  # the contextual lexer mode: the suffix's lexeme lattice
        import gramask

        cg = gramask.compile(gramask.grammars.load("json", lexer="contextual"),
                             gramask.Vocabulary.bundled(vocab), progress=False)
        cg.constraint(prefix="[", suffix="1]")
        return lambda: cg
    if name.startswith(("json_", "adaptrack", "constrained", "shape", "complex", "max_tokens")):
        cg = _compiled("json", vocab)
        cg.constraint(prefix='{"a": ').allowed()  # the runtime's tables, built on first use
        import gramask.sampling  # torch: seconds to import on a busy machine

        return lambda: cg
    return lambda: None


def _sampler(kind: str, cg: Any, lm: Any, **kw: Any) -> Any:
    from gramask.sampling import AdapTrackSampler, ConstrainedSampler

    cls = AdapTrackSampler if kind == "adaptrack" else ConstrainedSampler
    return cls(lm, cg.constraint(prefix='{"a": '), seed=0, **kw)


def _full(v: int, value: float) -> Callable[[list[int]], Any]:
    import torch

    return lambda ids: torch.full((v,), value)


# -------------------------------------------------------------------------- the samplers
for _kind in ("nan", "+inf", "-inf"):
    def _make(kind: str) -> None:
        value = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}[kind]

        @case(f"adaptrack_all_{kind}")
        def _(cg: Any) -> Any:
            return _sampler("adaptrack", cg, _full(len(cg.vocab), value)).sample(16)

    _make(_kind)


@case("adaptrack_fp16_overflow")
def _(cg: Any) -> Any:
    import torch

    g = torch.Generator().manual_seed(0)
    v = len(cg.vocab)
    return _sampler("adaptrack", cg,
                    lambda ids: (torch.randn(v, generator=g) * 1e5).half()).sample(16)


@case("constrained_all_+inf")
def _(cg: Any) -> Any:
    return _sampler("constrained", cg, _full(len(cg.vocab), float("inf"))).sample(16)


@case("shape_1_seq_v")
def _(cg: Any) -> Any:
    import torch

    v = len(cg.vocab)

    def lm(ids: list[int]) -> Any:
        z = torch.zeros(1, 4, v)
        z[0, -1, cg.vocab.token_id("1")] = 50.0  # the last position says "1"
        return z

    ids = _sampler("constrained", cg, lm, greedy=True).sample(1)
    return f"drew {cg.vocab.token_bytes(ids[0])!r}" if ids else "EOS"


@case("shape_2_v")
def _(cg: Any) -> Any:
    import torch

    return _sampler("constrained", cg, lambda ids: torch.zeros(2, len(cg.vocab))).sample(2)


@case("complex_logits")
def _(cg: Any) -> Any:
    import torch

    return _sampler("constrained", cg,
                    lambda ids: torch.zeros(len(cg.vocab), dtype=torch.complex64)).sample(2)


@case("adaptrack_budget20_random")
def _(cg: Any) -> Any:
    import torch

    from gramask.sampling import AdapTrackSampler

    v = len(cg.vocab)
    g = torch.Generator().manual_seed(0)
    s = AdapTrackSampler(lambda ids: torch.randn(v, generator=g), cg.constraint(max_tokens=20),
                         seed=0)
    try:
        return s.sample(32)
    finally:
        print(f"lm_calls={s.lm_calls}", file=sys.stderr)


# ---------------------------------------------------------------- fill-in-the-middle
for _n in (1000, 3000, 10000):
    def _paren(n: int) -> None:
        @case(f"fim_py_paren_{n}")
        def _(cg: Any) -> Any:
            return int(cg.constraint(prefix="", suffix=")" * n).allowed().sum())

    _paren(_n)


for _mb in (0.25, 0.5, 2, 10):
    def _json(mb: float) -> None:
        @case(f"fim_json_valid_{mb}MB")
        def _(cg: Any) -> Any:
            n = int(mb * 1e6) // 12
            suffix = ', {"k": 123}' * n + "]"  # 12 bytes per element
            return int(cg.constraint(prefix="[", suffix=suffix).allowed().sum())

    _json(_mb)


for _n in (20, 60):
    def _paren_small(n: int) -> None:
        @case(f"fim_py_paren_{n}")
        def _(cg: Any) -> Any:
            return int(cg.constraint(prefix="x = (", suffix=")" * n).allowed().sum())

    _paren_small(_n)


@case("fim_py_valid_10MB")
def _(cg: Any) -> Any:
    suffix = "1\nx = 1\n" + "x = 1\n" * (10_000_000 // 6)
    return int(cg.constraint(prefix="x = ", suffix=suffix).allowed().sum())


# ------------------------------------------- deep nesting, long lines, odd unicode (fza)
@case("py_prefix_paren_5000")
def _(cg: Any) -> Any:
    return int(cg.constraint(prefix="x = " + "(" * 5000).allowed().sum())


@case("py_prefix_long_line_1MB")
def _(cg: Any) -> Any:
    return int(cg.constraint(prefix="x = " + "1+" * 500_000).allowed().sum())


@case("py_budget_paren_200")
def _(cg: Any) -> Any:
    c = cg.constraint(prefix="x = " + "(" * 200, max_tokens=260)
    return int(c.allowed().sum()), c.min_tokens_to_complete()


@case("py_fim_suffix_bidi_zwsp")
def _(cg: Any) -> Any:  # bidi override, zero-width space, BOM and astral letters in a string
    suffix = "'\u202e\u200b\ufeff\U0001d518'\ny = 1\n"
    return int(cg.constraint(prefix="x = ", suffix=suffix).allowed().sum())


@case("py_fim_suffix_nul")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="x = ", suffix="1\x00\n")


@case("py_fim_suffix_crlf_lone_cr")
def _(cg: Any) -> Any:
    return int(cg.constraint(prefix="if x:\r\n", suffix="    y = 1\r\n\rz = 2\n")
               .allowed().sum())


@case("py_fim_suffix_unicode_ident_1MB")
def _(cg: Any) -> Any:
    suffix = "\nλ = 1\n" + "ß名 = λ\n" * 100_000
    return int(cg.constraint(prefix="x = ", suffix=suffix).allowed().sum())


@case("json_prefix_deep_100000")
def _(cg: Any) -> Any:
    return int(cg.constraint(prefix="[" * 100_000).allowed().sum())


@case("json_budget_deep_2000")
def _(cg: Any) -> Any:
    c = cg.constraint(prefix="[" * 2000, max_tokens=2100)
    return int(c.allowed().sum()), c.min_tokens_to_complete()


# --------------------------------------------------------------------- argument types
@case("py_suffix_int")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="x = ", suffix=10**8)


@case("py_prefix_int_with_suffix")
def _(cg: Any) -> Any:
    return cg.constraint(prefix=5, suffix="1\n")


@case("py_suffix_list")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="x = [", suffix=[49, 93])


@case("py_suffix_lone_surrogate")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="x = ", suffix="'a\udc80'\n")


@case("py_fim_prefix_lone_surrogate")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="x = '\ud800", suffix="'\n")


@case("json_budget_suffix_int")
def _(cg: Any) -> Any:
    return cg.constraint(prefix="[", suffix=5, max_tokens=8)


@case("grammar_bytes")
def _(cg: Any) -> Any:
    import gramask

    return gramask.Grammar.from_lark(b'start: "a"')


@case("grammar_none")
def _(cg: Any) -> Any:
    import gramask

    return gramask.Grammar.from_lark(None)


@case("grammar_import_missing")
def _(cg: Any) -> Any:
    import gramask

    return gramask.Grammar.from_lark("start: x\n%import nosuch.module (x)\n")


for _bad in ("-1", "True", "'5'"):
    def _mt(bad: str) -> None:
        @case(f"max_tokens_{bad}")
        def _(cg: Any) -> Any:
            return cg.constraint(max_tokens=eval(bad))  # a literal from the list above

    _mt(_bad)


def _cli(args: list[str | bytes]) -> str:
    import gramask

    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "probe_hostile.gmask")
    if not os.path.exists(path):
        vocab = gramask.Vocabulary.from_tokens(["[", "]", "1", ",", "</s>"], eos_token_id=4)
        gramask.compile(gramask.grammars.load("json"), vocab, cache=False).save(path)
    # not from the current directory, which `python -m` would put first on sys.path
    run = subprocess.run([sys.executable, "-m", "gramask", "mask", path, *args],
                         capture_output=True, check=False, cwd=os.path.dirname(path))
    err = run.stderr.decode(errors="replace").strip().splitlines()
    return f"exit {run.returncode}, {len(err)} stderr lines: {err[-1][:70] if err else ''}"


@case("cli_max_tokens_-5")
def _(cg: Any) -> Any:
    return _cli(["--max-tokens", "-5"])


@case("cli_suffix_xff")
def _(cg: Any) -> Any:
    return _cli(["--suffix", b"\xff]"])


# ----------------------------------------------------------------------------- running
def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(name: str, vocab: str, memory_mb: int, timeout: float) -> None:
    """Run one case here; print one JSON line (SIGALRM ends a case past ``timeout``)."""
    import signal

    get = _setup(name, vocab)
    cg = get()
    signal.alarm(max(1, int(timeout)))
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    before = _rss_mb()
    t0 = time.perf_counter()
    try:
        r = CASES[name](cg)
        outcome = f"ok: {r!r}"[:90]
    except BaseException as e:  # the outcome is what we report
        outcome = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:110]
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"case": name, "outcome": outcome, "seconds": round(secs, 2),
                      "peak_mb": round(peak), "added_mb": round(peak - before)}))


def run(name: str, vocab: str, timeout: float, memory_mb: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--child", name, "--vocab", vocab,
                             "--memory-mb", str(memory_mb), "--timeout", str(timeout)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout + 120)  # + loading the compiled grammar
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return {"case": name, "outcome": f"still running, killed after {timeout:.0f} s",
                "seconds": f"> {timeout:.0f}", "peak_mb": "?", "added_mb": "?"}
    lines = [x for x in out.splitlines() if x.startswith("{")]
    if lines:
        return dict(json.loads(lines[-1]))
    if proc.returncode == -14:  # SIGALRM: the case's own time ran out
        return {"case": name, "outcome": f"still running after {timeout:.0f} s (killed)",
                "seconds": f"> {timeout:.0f}", "peak_mb": "?", "added_mb": "?"}
    return {"case": name, "outcome": f"died: {err.strip().splitlines()[-1:] or proc.returncode}",
            "seconds": round(time.perf_counter() - t0, 1), "peak_mb": "?", "added_mb": "?"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case")
    ap.add_argument("--memory-mb", type=int, default=4096, help="address-space cap per case")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.vocab, args.memory_mb, args.timeout)
        return
    rows = []
    for name in args.cases.split(","):
        r = run(name, args.vocab, args.timeout, args.memory_mb)
        rows.append(r)
        if not args.json:
            print(f"| {r['case']} | {r['outcome']} | {r['seconds']} | {r['peak_mb']} | "
                  f"{r['added_mb']} |", flush=True)
    if args.json:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
