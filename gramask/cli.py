"""The ``gramask`` command: compile, inspect, mask, demo.

Errors a user can cause (a bad grammar, vocabulary, artifact, file or prefix) print one line to
stderr (``gramask: error: ...``) and exit 1; usage errors exit 2; ``-v`` (before or after the
subcommand) shows the traceback. Sizes are in MB (10^6 bytes), as in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import GramaskError, NoCompletionError

if TYPE_CHECKING:
    from .compiled import CompiledGrammar

__all__ = ["build_parser", "main"]


class CliError(GramaskError):
    """A mistake in what was passed on the command line (a missing file, bad text)."""


def _default_out(grammar: str, vocab: str) -> Path:
    g = Path(grammar).stem if grammar.endswith(".lark") else grammar
    v = Path(vocab).stem if ("/" in vocab or "." in Path(vocab).name) else vocab
    return Path(f"{g}.{v}.gmask")


def cmd_compile(args: argparse.Namespace) -> int:
    import gramask
    from gramask.grammars import load_spec

    from .vocab import load_vocabulary

    grammar = load_spec(args.grammar, args.start, args.lexer)
    vocab = load_vocabulary(args.vocab)
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


def _load(path: str) -> CompiledGrammar:
    from .compiled import CompiledGrammar

    return CompiledGrammar.load(path)


_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]} | {
    ord("\n"): "\\n", ord("\t"): "\\t", ord("\r"): "\\r"
}


def _escaped(pattern: str, width: int = 50) -> str:
    """A regex on one table line: newlines, tabs and other controls escaped (as a regex
    would write them), long ones cut."""
    text = pattern.translate(_CONTROLS)
    return text if len(text) < width else text[: width - 3] + "..."


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
    print(f"lexer states      {st['lexer_states']} ({st['lexer']} lexer)")
    diags = st["lexer_diagnostics"]
    kinds: dict[str, int] = {}
    for d in diags:
        kinds[d["kind"]] = kinds.get(d["kind"], 0) + 1
    print("lexer diagnostics " + (", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
                                  or "none") + ("" if not diags or args.diagnostics
                                                else " (--diagnostics lists them)"))
    if args.diagnostics:
        for d in diags:
            print(f"  {d['kind']:15s} {d['message']}")
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
            ign = " (ignored)" if t["ignored"] else ""
            print(f"{t['name'][:24]:<24} {t['live_states']:>5} {t['accepting_states']:>7} "
                  f"{t['table_entries']:>9}  {_escaped(t['pattern'])}{ign}")
    return 0


def _text_arg(text: str | None, path: str | None, what: str) -> str | None:
    """The text given inline, or read from a file (``-`` = stdin) as UTF-8."""
    if text is not None:
        try:  # bytes that are not UTF-8 reach argv as lone surrogates (PEP 383)
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise CliError(
                f"--{what}: not UTF-8 text (byte {os.fsencode(text[e.start])!r} at character "
                f"{e.start})"
            ) from None
    if text is not None or path is None:
        return text
    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except FileNotFoundError:
        raise CliError(f"{what} file {path}: no such file") from None
    except OSError as e:
        raise CliError(f"cannot read {what} file {path}: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CliError(
            f"{what} file {path} is not UTF-8 text ({e.reason} at byte {e.start})"
        ) from None


def cmd_mask(args: argparse.Namespace) -> int:
    import numpy as np

    from .mask_report import group_by_lexing, load_logits, rank_by_logits

    if args.max_tokens is not None and args.max_tokens < 0:
        raise CliError(f"--max-tokens: expected a number of tokens >= 0, got {args.max_tokens}")
    cg = _load(args.artifact)
    prefix = _text_arg(args.prefix, args.prefix_file, "prefix") or ""
    suffix = _text_arg(args.suffix, args.suffix_file, "suffix")
    c = cg.constraint(prefix=prefix, suffix=suffix, max_tokens=args.max_tokens)
    t0 = time.perf_counter()
    m = c.allowed()
    ms = (time.perf_counter() - t0) * 1000
    ids = np.flatnonzero(m)
    v = cg.vocab
    why = c.explain()

    def token(i: int) -> dict[str, object]:
        return {"id": i, "token": v.token_bytes(i).decode("utf-8", "replace"),
                "eos": i == v.eos_token_id}

    report: dict[str, object] = {"allowed": len(ids), "vocab_size": len(v),
                                 "complete": c.is_complete(), "mask_ms": round(ms, 3), **why}
    try:
        sc = c.shortest_completion()
        report["min_tokens_to_complete"] = len(sc.token_ids)
        report["shortest_completion"] = sc.text
    except (NotImplementedError, NoCompletionError):
        pass  # fill-in-the-middle of a contextual-mode grammar: not built yet; or no plan
    if args.max_tokens is not None:
        report["max_tokens"] = args.max_tokens
    if args.logits:
        logits = load_logits(args.logits, len(v))
        ranked = rank_by_logits(ids, logits)[: args.top]
        shown = [dict(token(int(i)), logit=float(logits[i])) for i in ranked]
        report["tokens"] = shown
        groups = []
    else:
        groups = group_by_lexing(cg, int(why["lexer_state"]), ids)[: args.top]
        report["groups"] = [{"lexes_to": g.lexes_to, "count": len(g.ids),
                             "examples": [token(i) for i in g.ids[:8]]} for g in groups]
    if args.json:
        json.dump(report, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"{len(ids)} of {len(v)} tokens allowed ({ms:.1f} ms); complete: {c.is_complete()}")
    print(f"lexeme in progress: {why['lexeme_in_progress'] or '(none)'}"
          + (f" — could become {', '.join(why['lexeme_could_be'])}" if why["lexeme_could_be"]
             else ""))
    print(f"parser expects: {', '.join(why['parser_expects'])}")
    if "shortest_completion" in report:
        print(f"shortest completion: {report['shortest_completion']!r} "
              f"({report['min_tokens_to_complete']} tokens)"
              + (f"; budget {args.max_tokens} tokens" if args.max_tokens is not None else ""))

    def show(i: int) -> str:
        return "<EOS>" if i == v.eos_token_id else repr(v.token_bytes(i).decode("utf-8", "replace"))

    if args.logits:
        print(f"most likely allowed tokens (by {args.logits}):")
        for s in report["tokens"]:  # type: ignore[attr-defined]
            print(f"  {s['id']:>7}  {s['logit']:>9.3f}  {show(s['id'])}")
    else:
        print("allowed tokens by what they lex to (… = a lexeme left open), largest group first:")
        for g in groups:
            examples = " ".join(show(i) for i in g.ids[:8])
            print(f"  {len(g.ids):>7}  {g.lexes_to or '(nothing)':<28} {examples}")
    return 0


def _count(text: str) -> int:
    """A whole number ≥ 0 (argparse type): ``--top -3`` is a usage error, not "everything"."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    from . import __version__
    from .cli_demo import cmd_demo

    # -v after the subcommand too; SUPPRESS keeps a subcommand from resetting a global -v
    sub_common = argparse.ArgumentParser(add_help=False)
    sub_common.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                            help="show the traceback on errors")
    p = argparse.ArgumentParser(
        prog="gramask",
        description="Compile grammars against LLM vocabularies into token-mask tables, and "
        "use them.",
        epilog="Run 'gramask COMMAND --help' for a command's options; 'gramask demo' to see it work.",
    )
    p.add_argument("-v", "--verbose", action="count", default=0,
                   help="show the traceback on errors")
    p.add_argument("--version", action="version", version=f"gramask {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("compile", parents=[sub_common],
                       help="compile a grammar against a vocabulary into a .gmask artifact")
    c.add_argument("grammar", help="bundled grammar name (json, python, ...) or a .lark file")
    c.add_argument("--vocab", required=True,
                   help="bundled vocabulary name (gpt2, deepseek-v4, qwen2, ...) or tokenizer file")
    c.add_argument("-o", "--output", help="artifact path (default GRAMMAR.VOCAB.gmask)")
    c.add_argument("--start", help="start rule (default: the bundled grammar's, else 'start')")
    c.add_argument("--lexer", choices=("contextual", "basic"),
                   help="lexer mode (default: the bundled grammar's, else contextual)")
    c.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    c.add_argument("--cache-dir", help="cache directory (default $GRAMASK_CACHE_DIR, else the "
                   "user cache directory, ~/.cache/gramask on Linux)")
    c.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    c.set_defaults(func=cmd_compile)

    i = sub.add_parser("inspect", parents=[sub_common], help="what a compiled artifact holds")
    i.add_argument("artifact", help="a .gmask file")
    i.add_argument("--json", action="store_true", help="one JSON object on stdout")
    i.add_argument("--terminals", action="store_true", help="per-terminal breakdown")
    i.add_argument("--diagnostics", action="store_true",
                   help="list the lexer diagnostics (terminals competing for a text)")
    i.set_defaults(func=cmd_inspect)

    m = sub.add_parser("mask", parents=[sub_common],
                       help="which tokens are allowed after a prefix, and why")
    m.add_argument("artifact", help="a .gmask file")
    pre = m.add_mutually_exclusive_group()
    pre.add_argument("--prefix", help="the code before the cursor, as text (default empty)")
    pre.add_argument("--prefix-file", metavar="FILE",
                     help="the code before the cursor, from a UTF-8 file ('-' = stdin)")
    suf = m.add_mutually_exclusive_group()
    suf.add_argument("--suffix", help="the code after the cursor, as text (fill-in-the-middle)")
    suf.add_argument("--suffix-file", metavar="FILE",
                     help="the code after the cursor, from a UTF-8 file ('-' = stdin)")
    m.add_argument("--max-tokens", type=int, metavar="N",
                   help="token budget: only tokens that can still finish within N")
    m.add_argument("--top", type=_count, default=20, metavar="N",
                   help="show N groups of allowed tokens (by what they lex to), or with "
                   "--logits the N most likely allowed tokens (default 20)")
    m.add_argument("--logits", metavar="NPY",
                   help="a 1-D .npy of a model's logits here: rank the allowed tokens by it")
    m.add_argument("--json", action="store_true", help="one JSON object on stdout")
    m.set_defaults(func=cmd_mask)

    d = sub.add_parser("demo", parents=[sub_common],
                       help="compile Python × a real vocabulary and show a masked completion")
    d.add_argument("--vocab", default="deepseek-v4",
                   help="bundled vocabulary name or tokenizer file (default deepseek-v4)")
    d.add_argument("--steps", type=int, default=40,
                   help="stop after this many tokens even before EOS (default 40)")
    d.add_argument("--seed", type=int, default=0, help="seed of the toy model's scores")
    d.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    d.set_defaults(func=cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return int(args.func(args))
    except BrokenPipeError:  # `gramask inspect ... | head`: the reader left; exit quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the final flush does not fail too
        return 141  # 128 + SIGPIPE, as a shell reports a writer killed by a closed pipe
    except (GramaskError, OSError, NotImplementedError) as e:
        if args.verbose:
            raise
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"gramask: error: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
