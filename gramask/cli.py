"""The ``gramask`` command: compile, inspect, mask, trace, demo.

Errors a user can cause (a bad grammar, vocabulary, artifact, file or prefix) print one line to
stderr (``gramask: error: ...``) and exit 1; usage errors exit 2; ``-v`` (before or after the
subcommand) shows the traceback. Sizes are in MiB (2^20 bytes), as in the README.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import GramaskError, NoCompletionError

if TYPE_CHECKING:
    from .compiled import CompiledGrammar

__all__ = ["build_parser", "main"]


class CliError(GramaskError):
    """A mistake in what was passed on the command line (a missing file, bad text)."""


def _grammar_of(args: argparse.Namespace, load_spec: Any) -> Any:
    """The grammar a compile command names: a bundled name or .lark file, a JSON Schema
    (.json file), --regex, --choices or --json-object."""
    from .grammar import Grammar

    given = [x for x in (args.grammar, args.regex, args.choices, args.json_object or None)
             if x is not None]
    if len(given) != 1:
        raise CliError("give exactly one of GRAMMAR, --regex, --choices, --json-object")
    if args.regex is not None:
        return Grammar.from_regex(args.regex)
    if args.choices is not None:
        return Grammar.from_choices(args.choices)
    if args.json_object:
        return Grammar.json_value(object_only=True, whitespace=args.whitespace)
    if args.grammar.endswith(".json"):
        path = Path(args.grammar)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise CliError(f"cannot read JSON Schema {path}: {e.strerror}") from None
        return Grammar.from_json_schema(text, whitespace=args.whitespace, lenient=args.lenient)
    return load_spec(args.grammar, args.start, args.lexer)


def _default_out(grammar: str, vocab: str, vocab_name: str | None = None) -> Path:
    """GRAMMAR.VOCAB.gmask, with the vocabulary's canonical name (``gpt-2`` → ``gpt2``)."""
    g = Path(grammar).stem if grammar.endswith((".lark", ".gbnf", ".json")) else grammar
    is_file = "/" in vocab or "." in Path(vocab).name
    v = Path(vocab).stem if is_file else (vocab_name or vocab)
    return Path(f"{g}.{v}.gmask")


def _mib(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def _copy_atomic(src: str, dest: Path) -> int:
    """Copy a cache entry to ``dest`` (temp file + rename); returns its size."""
    import shutil

    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest.stat().st_size


def cmd_compile(args: argparse.Namespace) -> int:
    import gramask
    from gramask.grammars import load_spec

    from .vocab import load_vocabulary

    t0 = time.perf_counter()
    grammar = _grammar_of(args, load_spec)
    t1 = time.perf_counter()
    vocab = load_vocabulary(args.vocab)
    t2 = time.perf_counter()
    cg = gramask.compile(
        grammar, vocab, cache=not args.no_cache, cache_dir=args.cache_dir,
        progress=None if not args.quiet else False,
    )
    t3 = time.perf_counter()
    name = vocab.metadata().get("name")
    what = ("regex" if args.regex is not None else "choices" if args.choices is not None
            else "json_object" if args.json_object else args.grammar)
    out = Path(args.output) if args.output else _default_out(
        what, args.vocab, name if isinstance(name, str) else None)
    entry = cg.info.get("cache_path")
    hit = bool(cg.info.get("from_cache"))
    if hit and isinstance(entry, str) and Path(entry).resolve() != out.resolve():
        size = _copy_atomic(entry, out)  # the entry is this artifact: no re-encoding
    else:
        size = cg.save(out)
    t4 = time.perf_counter()
    how = "loaded from the cache" if hit else "compiled"
    where = f"; cache: {Path(entry).parent}" if isinstance(entry, str) else "; cache off"
    print(f"{out}: {_mib(size)}, {cg.dfa.num_states} lexer states, {cg.tables.nnz} table "
          f"entries, {len(vocab)} tokens ({how} in {t3 - t2:.2f} s{where})")
    if isinstance(name, str) and args.vocab != name and not Path(args.vocab).exists():
        print(f"  vocabulary {args.vocab!r} is the bundled {name!r} (an alias)")
    if not args.quiet:
        print(f"  {t4 - t0:.2f} s in all: grammar {t1 - t0:.2f} s (lark reads and checks it), "
              f"vocabulary {t2 - t1:.2f} s, {how} {t3 - t2:.2f} s, writing {t4 - t3:.2f} s")
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
    if args.plot:
        from .plots import plot_tables

        try:
            plot_tables(cg, args.plot, walk_steps=args.plot_steps)
        except ImportError as e:  # matplotlib missing: say how to get it, in one line
            raise CliError(str(e)) from None
        st["plot"] = args.plot
    if args.json:
        json.dump(st, sys.stdout)
        sys.stdout.write("\n")
        return 0
    print(f"artifact          {args.artifact} ({_mib(st['bytes_on_disk'])} on disk, "
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
    print(f"array bytes       {_mib(st['array_bytes'])}")
    print(f"build             {st['build_seconds']} s at {st['built_at']}, "
          f"gramask {st['gramask_version']}")
    if args.terminals:
        print("\nterminal                 live  accept   entries  pattern")
        for t in st["per_terminal"]:
            ign = " (ignored)" if t["ignored"] else ""
            print(f"{t['name'][:24]:<24} {t['live_states']:>5} {t['accepting_states']:>7} "
                  f"{t['table_entries']:>9}  {_escaped(t['pattern'])}{ign}")
    if args.plot:
        print(f"\nplot written to {args.plot}")
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

    from .mask_report import Group, group_by_lexing, load_logits, rank_by_logits, softmax

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
    if args.save_mask:
        save_mask(args.save_mask, m)
        report["saved_mask"] = args.save_mask
    if args.explain:
        from .token_explain import explain_token, resolve_token

        report["explain"] = [
            explain_token(cg, resolve_token(cg, spec), prefix, suffix, args.max_tokens).as_dict()
            for spec in args.explain
        ]
    groups: list[Group] = []
    if args.logits:
        logits = load_logits(args.logits, len(v))
        probs = softmax(logits)
        kept = probs[ids].sum()
        ranked = rank_by_logits(ids, logits)[: args.top]
        report["allowed_probability"] = float(kept)
        report["tokens"] = [dict(token(int(i)), logit=float(logits[i]), p=float(probs[i]),
                                 p_masked=float(probs[i] / kept) if kept > 0 else 0.0)
                            for i in ranked]
        refused = rank_by_logits(np.flatnonzero(~m), logits)[: args.top]
        report["forbidden"] = [dict(token(int(i)), logit=float(logits[i]), p=float(probs[i]))
                               for i in refused]
    else:
        all_groups = group_by_lexing(cg, int(why["lexer_state"]), ids)
        groups = all_groups[: args.top]
        report["group_count"] = len(all_groups)
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
        n = int(report["min_tokens_to_complete"])  # type: ignore[call-overload]
        print(f"shortest completion: {report['shortest_completion']!r} "
              f"({n} token{'s' if n != 1 else ''})"
              + (f"; budget {args.max_tokens} tokens" if args.max_tokens is not None else ""))

    def show(i: int) -> str:
        return "<EOS>" if i == v.eos_token_id else repr(v.token_bytes(i).decode("utf-8", "replace"))

    if args.logits:
        print(f"most likely allowed tokens (by {args.logits}; the mask keeps "
              f"{report['allowed_probability']:.2%} of the probability, p' renormalised):")
        print(f"  {'id':>7}  {'logit':>9}  {'p':>8}  {'p′':>8}  token")
        for s in report["tokens"]:  # type: ignore[attr-defined]
            print(f"  {s['id']:>7}  {s['logit']:>9.3f}  {s['p']:>8.2%}  {s['p_masked']:>8.2%}  "
                  f"{show(s['id'])}")
        print("most likely forbidden tokens (what the grammar took away):")
        for s in report["forbidden"]:  # type: ignore[attr-defined]
            print(f"  {s['id']:>7}  {s['logit']:>9.3f}  {s['p']:>8.2%}  {'':>8}  {show(s['id'])}")
        if not report["forbidden"]:
            print("  (none)" if args.top else "  (--top 0 shows none)")
    else:
        total = int(report["group_count"])  # type: ignore[call-overload]
        print(f"allowed tokens by what they lex to (… = a lexeme left open), largest group first"
              f" ({len(groups)} of {total} group{'s' if total != 1 else ''}"
              + (f"; --top {total} shows all" if len(groups) < total else "") + "):")
        for g in groups:
            examples = " ".join(show(i) for i in g.ids[:8])
            print(f"  {len(g.ids):>7}  {g.lexes_to or '(nothing)':<28} {examples}")
    if args.save_mask:
        print(f"mask saved to {args.save_mask} (numpy bool, shape ({len(v)},))")
    for e in report.get("explain", []):  # type: ignore[attr-defined]
        print(f"explain {e['token']} (id {e['token_id']}): {e['reason']}")
        print(f"  {e['message']}")
    return 0


def save_mask(path: str, mask: object) -> None:
    """``mask`` as a ``.npy`` (bool, no pickle), written atomically."""
    import numpy as np

    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.save(f, np.asarray(mask, dtype=bool), allow_pickle=False)
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise CliError(f"cannot write the mask to {path}: {e.strerror or e}") from None


def cmd_trace(args: argparse.Namespace) -> int:
    from .cli_demo import DEMO_PREFIX, DEMO_TARGET, WantsText
    from .trace import trace_completion, write_trace_html

    cg = _load(args.artifact)
    prefix = _text_arg(args.prefix, args.prefix_file, "prefix")
    suffix = _text_arg(args.suffix, args.suffix_file, "suffix")
    wants = args.wants
    if prefix is None and wants is None:  # the demo's: a model that would close with ']'
        prefix, wants = DEMO_PREFIX, DEMO_TARGET
    prefix = prefix or ""
    if wants is None:
        raise CliError("trace: say what the toy model wants to write (--wants TEXT)")
    c = cg.constraint(prefix=prefix, suffix=suffix, max_tokens=args.max_tokens)
    lm = WantsText(cg.vocab, wants, seed=args.seed)
    steps = trace_completion(c, lm, max_new_tokens=args.steps, top=args.top)
    write_trace_html(args.output, steps, prefix=prefix, suffix=suffix, complete=c.is_complete(),
                     title=f"gramask trace: {Path(args.artifact).name}",
                     note=f"toy model that wants to write {wants!r}")
    changed = sum(1 for s in steps if s.forbidden_preferred)
    print(f"{args.output}: {len(steps)} step{'s' if len(steps) != 1 else ''}, the mask "
          f"overrode the model at {changed}; complete: {c.is_complete()}")
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
    c.add_argument("grammar", nargs="?",
                   help="bundled grammar name (json, python, ...), a .lark or .gbnf file, or a "
                        "JSON Schema .json file")
    c.add_argument("--regex", metavar="PATTERN",
                   help="compile a regular expression (Python re syntax, whole match)")
    c.add_argument("--choices", nargs="+", metavar="CHOICE", help="compile a fixed choice")
    c.add_argument("--json-object", action="store_true", help="compile 'any JSON object'")
    c.add_argument("--whitespace", choices=("flexible", "compact"), default="flexible",
                   help="JSON Schema / --json-object: whitespace between tokens")
    c.add_argument("--lenient", action="store_true",
                   help="JSON Schema: ignore unsupported keywords with a warning")
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
    i.add_argument("--plot", metavar="PNG",
                   help="draw the tables: row density per lexer state, distinct outcomes per "
                   "row, entries per terminal, allowed-set sizes on random walks (needs "
                   "matplotlib: pip install 'gramask[plot]')")
    i.add_argument("--plot-steps", type=_count, default=300, metavar="N",
                   help="random masked walk steps for the allowed-set panel (default 300)")
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
                   help="a 1-D .npy of a model's logits here: the most likely allowed tokens "
                   "(probability before and after masking) and the most likely forbidden ones")
    m.add_argument("--explain", action="append", metavar="TOKEN",
                   help="why TOKEN is allowed or forbidden here (lexing, parsing, the suffix "
                   "or the budget): its exact text (']', ' b', '\\n'), EOS, or #ID; repeatable")
    m.add_argument("--save-mask", metavar="PATH",
                   help="write the full mask as a .npy (bool, one entry per token id)")
    m.add_argument("--json", action="store_true", help="one JSON object on stdout")
    m.set_defaults(func=cmd_mask)

    tr = sub.add_parser("trace", parents=[sub_common],
                        help="write an HTML page of a constrained completion, step by step")
    tr.add_argument("artifact", help="a .gmask file")
    pre = tr.add_mutually_exclusive_group()
    pre.add_argument("--prefix", help="the code before the cursor (default: the demo's)")
    pre.add_argument("--prefix-file", metavar="FILE", help="the prefix from a file ('-' = stdin)")
    suf = tr.add_mutually_exclusive_group()
    suf.add_argument("--suffix", help="the code after the cursor (fill-in-the-middle)")
    suf.add_argument("--suffix-file", metavar="FILE", help="the suffix from a file")
    tr.add_argument("--wants", metavar="TEXT",
                    help="what the toy model tries to write (its logits favour the tokens that "
                    "spell it; afterwards, EOS)")
    tr.add_argument("--max-tokens", type=_count, metavar="N", help="token budget")
    tr.add_argument("--steps", type=_count, default=40, metavar="N",
                    help="stop after N tokens even before EOS (default 40)")
    tr.add_argument("--top", type=_count, default=5, metavar="N",
                    help="forbidden and alternative tokens shown per step (default 5)")
    tr.add_argument("--seed", type=int, default=0, help="seed of the toy model's other scores")
    tr.add_argument("-o", "--output", default="trace.html", help="the page (default trace.html)")
    tr.set_defaults(func=cmd_trace)

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
        context = getattr(e, "context", None)  # a grammar's line with a caret under the error
        if isinstance(context, str) and context.strip():
            print(textwrap.indent(context.rstrip("\n"), "    "), file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
