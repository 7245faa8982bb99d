"""The ``gramask`` command: compile, inspect, mask, demo.

Errors print one line to stderr (``gramask: error: ...``) and exit 1; usage errors exit 2.
``-v`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from .errors import GramaskError

__all__ = ["main"]

DEMO_PREFIX = '''def fibonacci(n: int) -> int:
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci('''


DEMO_TARGET = "n - 2]\n"


def _show(vocab, tok: int) -> str:
    if tok == vocab.eos_token_id:
        return "<EOS>"
    return repr(vocab.token_bytes(tok).decode("utf-8", "replace"))


class _ToyModel:
    """Scores that follow a target text (with a bug in it); after the target, it wants EOS.
    Everything else gets a small score, so the masked choice is visible."""

    def __init__(self, vocab, target: str, seed: int) -> None:
        import numpy as np

        self.vocab = vocab
        self.rest = target.encode()
        rng = np.random.default_rng(seed)
        toks = [vocab.token_bytes(i) for i in range(len(vocab))]
        plausible = {b")", b"\n", b")\n", b" ", b"2", b"1"}
        self.base = np.array(
            [(2.0 if t in plausible else rng.random()) if t.isascii() and not
             vocab.is_special(i) else -1.0 for i, t in enumerate(toks)]
        )
        self.toks = toks

    def scores(self):
        s = self.base.copy()
        if self.rest:
            for i, t in enumerate(self.toks):
                if t and self.rest.startswith(t) and not self.vocab.is_special(i):
                    s[i] = 10.0 + len(t)
        elif self.vocab.eos_token_id is not None:
            s[self.vocab.eos_token_id] = 20.0
        return s

    def took(self, tok: int, want: int) -> None:
        t = self.vocab.token_bytes(want if self.rest.startswith(self.vocab.token_bytes(want))
                                   and want != tok else tok)
        if self.rest.startswith(t):
            self.rest = self.rest[len(t):]


def _vocab(spec: str):
    from .vocab import load_vocabulary

    return load_vocabulary(spec)


def _default_out(grammar: str, vocab: str) -> Path:
    g = Path(grammar).stem if grammar.endswith(".lark") else grammar
    v = Path(vocab).stem if ("/" in vocab or "." in Path(vocab).name) else vocab
    return Path(f"{g}.{v}.gmask")


def cmd_compile(args: argparse.Namespace) -> int:
    import gramask
    from gramask.grammars import load_spec

    grammar = load_spec(args.grammar, args.start)
    vocab = _vocab(args.vocab)
    t0 = time.perf_counter()
    cg = gramask.compile(
        grammar, vocab, cache=not args.no_cache, cache_dir=args.cache_dir,
        progress=None if not args.quiet else False,
    )
    secs = time.perf_counter() - t0
    out = Path(args.output) if args.output else _default_out(args.grammar, args.vocab)
    size = cg.save(out)
    src = "cache" if cg.info.get("from_cache") else "built"
    print(
        f"{out}: {size / 1e6:.2f} MB, {cg.dfa.num_states} lexer states, "
        f"{cg.tables.nnz} table entries, {len(vocab)} tokens ({src} in {secs:.2f} s)"
    )
    return 0


def _load(path: str):
    from .compiled import CompiledGrammar

    return CompiledGrammar.load(path)


def cmd_inspect(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    cg = _load(args.artifact)
    load_s = time.perf_counter() - t0
    st = cg.stats()
    st["artifact"] = args.artifact
    st["bytes_on_disk"] = Path(args.artifact).stat().st_size
    st["load_seconds"] = round(load_s, 4)
    if args.json:
        json.dump(st, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"artifact          {args.artifact} ({st['bytes_on_disk'] / 1e6:.2f} MB on disk, "
          f"loaded in {load_s * 1000:.0f} ms)")
    print(f"grammar           {st['grammar']} (start {st['start']}, {st['rules']} rules, "
          f"{st['terminals']} terminals)")
    voc = st["vocabulary"]
    print(f"vocabulary        {voc.get('name') or '?'}: {st['vocab_size']} tokens, "
          f"eos {voc.get('eos_token_id')}")
    print(f"lexer states      {st['lexer_states']}")
    print(f"parser states     {st['parser_states']}")
    print(f"table rows        {st['table_rows']} ({st['rows_stored_whole']} whole, "
          f"{st['rows_stored_as_diff']} as diffs; {st['unique_rows']} unique)")
    print(f"non-zeros         {st['nonzeros']} (density {st['density']:.4%})")
    print(f"outcome nodes     {st['outcome_nodes']} ({st['winnable_classes']} end classes)")
    print(f"array bytes       {st['array_bytes'] / 1e6:.2f} MB")
    print(f"build             {st['build_seconds']} s at {st['built_at']}, "
          f"gramask {st['gramask_version']}")
    if args.terminals:
        print("\nterminal                 live  accept   entries  pattern")
        for t in st["per_terminal"]:
            pat = t["pattern"] if len(t["pattern"]) < 50 else t["pattern"][:47] + "..."
            ign = " (ignored)" if t["ignored"] else ""
            print(f"{t['name'][:24]:<24} {t['live_states']:>5} {t['accepting_states']:>7} "
                  f"{t['table_entries']:>9}  {pat}{ign}")
    return 0


def _read(path: str | None) -> str | None:
    if path is None:
        return None
    return Path(path).read_text(encoding="utf-8")


def cmd_mask(args: argparse.Namespace) -> int:
    import numpy as np

    cg = _load(args.artifact)
    prefix = _read(args.prefix_file) or ""
    suffix = _read(args.suffix_file)
    c = cg.constraint(prefix=prefix, suffix=suffix)
    t0 = time.perf_counter()
    m = c.allowed()
    ms = (time.perf_counter() - t0) * 1000
    ids = np.flatnonzero(m)
    v = cg.vocab
    shown = []
    for i in ids[: args.top]:
        shown.append({"id": int(i), "token": v.token_bytes(int(i)).decode("utf-8", "replace"),
                      "eos": int(i) == v.eos_token_id})
    why = c.explain()
    if args.json:
        json.dump({"allowed": len(ids), "vocab_size": len(v), "complete": c.is_complete(),
                   "mask_ms": round(ms, 3), **why, "tokens": shown}, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{len(ids)} of {len(v)} tokens allowed ({ms:.1f} ms); complete: {c.is_complete()}")
    print(f"lexeme in progress: {why['lexeme_in_progress'] or '(none)'}"
          + (f" — could become {', '.join(why['lexeme_could_be'])}" if why["lexeme_could_be"]
             else ""))
    print(f"parser expects: {', '.join(why['parser_expects'])}")
    for s in shown:
        print(f"  {s['id']:>7}  {'<EOS>' if s['eos'] else repr(s['token'])}")
    if len(ids) > args.top:
        print(f"  ... and {len(ids) - args.top} more")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    import numpy as np

    import gramask
    from gramask.grammars import load

    vocab_name = args.vocab
    print(f"== compiling the bundled Python grammar against the {vocab_name} vocabulary")
    grammar = load("python")
    vocab = _vocab(vocab_name)
    t0 = time.perf_counter()
    cg = gramask.compile(grammar, vocab, cache=not args.no_cache)
    print(f"   {'loaded from cache' if cg.info.get('from_cache') else 'compiled'} in "
          f"{time.perf_counter() - t0:.2f} s")
    st = cg.stats()
    print(f"   {st['terminals']} terminals, {st['rules']} rules, {st['lexer_states']} lexer "
          f"states, {st['nonzeros']} table entries ({st['density']:.3%} dense), "
          f"{st['array_bytes'] / 1e6:.1f} MB of arrays")
    print("\n== a constrained completion, step by step")
    print(f"   a toy model wants to write {DEMO_TARGET!r} (the ']' should be ')');")
    print("   each step takes the model's favourite *allowed* token")
    print("--- prefix ---")
    print(DEMO_PREFIX + "|")
    c = cg.constraint(prefix=DEMO_PREFIX)
    model = _ToyModel(vocab, DEMO_TARGET, seed=args.seed)
    for step in range(args.steps):
        t1 = time.perf_counter()
        m = c.allowed()
        ms = (time.perf_counter() - t1) * 1000
        scores = model.scores()
        want = int(np.argmax(scores))
        scores[~m] = -np.inf
        tok = int(np.argmax(scores))
        note = "" if tok == want else f"   (model wanted {_show(vocab, want)}: masked)"
        print(f"step {step:2d}: {int(m.sum()):6d} allowed ({ms:5.1f} ms)  → "
              f"{_show(vocab, tok)}{note}")
        c.advance(tok)
        model.took(tok, want)
        if c.is_finished:
            break
    print("--- completed program ---")
    print(DEMO_PREFIX + c.text)
    import ast

    try:
        ast.parse(DEMO_PREFIX + c.text)
        print("--- ast.parse: OK")
    except SyntaxError as e:  # pragma: no cover - would be a bug
        print(f"--- ast.parse: {e}")
    _demo_fim(cg, vocab, args)
    print("\nBudgets (max_tokens=...) are not built yet.")
    return 0


DEMO_FIM_PREFIX = DEMO_PREFIX.rsplit("fibonacci(", 1)[0] + "fibonacci("
DEMO_FIM_SUFFIX = ")\n\n\nprint(fibonacci(10))\n"


def _demo_fim(cg: Any, vocab: Any, args: argparse.Namespace) -> None:
    """Fill-in-the-middle: the code after the cursor decides when the middle may end."""
    import numpy as np

    print("\n== fill-in-the-middle: the code after the cursor constrains the middle")
    print("   a toy model wants to write 'n -' and stop; the suffix starts with ')', so")
    print("   stopping is masked until the middle is a complete argument")
    print("--- prefix | middle | suffix ---")
    print(DEMO_FIM_PREFIX + "|" + "|" + DEMO_FIM_SUFFIX, end="")
    t0 = time.perf_counter()
    c = cg.constraint(prefix=DEMO_FIM_PREFIX, suffix=DEMO_FIM_SUFFIX)
    print(f"--- setup (quotient of the grammar by the suffix): "
          f"{(time.perf_counter() - t0) * 1000:.1f} ms (the first request of a compiled grammar "
          "also builds its reversed automaton)")
    model = _ToyModel(vocab, "n -", seed=args.seed)
    for step in range(args.steps):
        m = c.allowed()
        scores = model.scores()
        want = int(np.argmax(scores))
        scores[~m] = -np.inf
        tok = int(np.argmax(scores))
        note = "" if tok == want else f"   (model wanted {_show(vocab, want)}: masked)"
        eos = "allowed" if c.is_complete() else "masked "
        print(f"step {step:2d}: {int(m.sum()):6d} allowed, EOS {eos}  → {_show(vocab, tok)}{note}")
        c.advance(tok)
        model.took(tok, want)
        if c.is_finished:
            break
    print("--- completed: prefix + middle + suffix ---")
    text = DEMO_FIM_PREFIX + c.text + DEMO_FIM_SUFFIX
    print(text, end="")
    import ast

    try:
        ast.parse(text)
        print("--- ast.parse: OK")
    except SyntaxError as e:  # pragma: no cover - would be a bug
        print(f"--- ast.parse: {e}")


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="count", default=0,
                        help="show tracebacks on errors")
    p = argparse.ArgumentParser(
        prog="gramask", description="Compile grammars into token-mask tables and use them.",
        parents=[common],
    )
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", parents=[common], help="compile a grammar against a vocabulary")
    c.add_argument("grammar", help="bundled grammar name or path to a .lark file")
    c.add_argument("--vocab", required=True, help="bundled vocabulary name or tokenizer file")
    c.add_argument("-o", "--output", help="artifact path (default GRAMMAR.VOCAB.gmask)")
    c.add_argument("--start", help="start rule (default: the bundled grammar's, else 'start')")
    c.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    c.add_argument("--cache-dir", help="cache directory (default $GRAMASK_CACHE_DIR or "
                   "~/.cache/gramask)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_compile)

    i = sub.add_parser("inspect", parents=[common], help="what a compiled artifact holds")
    i.add_argument("artifact")
    i.add_argument("--json", action="store_true", help="one JSON object on stdout")
    i.add_argument("--terminals", action="store_true", help="per-terminal breakdown")
    i.set_defaults(func=cmd_inspect)

    m = sub.add_parser("mask", parents=[common], help="which tokens are allowed after a prefix")
    m.add_argument("artifact")
    m.add_argument("--prefix-file", required=True)
    m.add_argument("--suffix-file")
    m.add_argument("--top", type=int, default=20)
    m.add_argument("--json", action="store_true")
    m.set_defaults(func=cmd_mask)

    d = sub.add_parser("demo", parents=[common], help="compile Python × a real vocabulary and "
                       "show a masked completion")
    d.add_argument("--vocab", default="deepseek-v4")
    d.add_argument("--steps", type=int, default=40)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--no-cache", action="store_true")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (GramaskError, OSError, ValueError, NotImplementedError, KeyError) as e:
        if args.verbose:
            raise
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"gramask: error: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover
        return 130


def _entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
