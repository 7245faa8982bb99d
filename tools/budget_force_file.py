"""``budget_force.py`` for a grammar file and documents of one's own: does a budget of the true
continuation's tokens + k let the real text through, prefix-only and fill-in-the-middle?

    PYTHONPATH=. python tools/budget_force_file.py GRAMMAR.lark DOC [DOC ...]
                        [--lexer contextual] [--fim] [--cases 12] [--ks 0,1,4] [--vocab gpt2]

Each document must be in lark's language (checked first with ``heldout_lark_check.oracle``:
LALR with the mode's lexer, else Earley); cuts are ``fim_eval``'s random spans (``--fim``) or
a random point in the last 300 characters to the end of the document; ``budget_force.py`` forces them (``force``) and counts
the requests with a true token (or EOS at its end) forbidden, per k. A cut whose prefix (and
suffix) gramask refuses at setup is counted too: lark takes the whole document.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import lark

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent))

import budget_force as bf  # noqa: E402
import fim_eval  # noqa: E402
from heldout_lark_check import indenter, oracle  # noqa: E402

import gramask  # noqa: E402


def tail_cases(docs: list[str], name: str, n: int, seed: int) -> list[fim_eval.FimCase]:
    """Prefix-only cuts in the last 300 characters of a document (the continuation is the rest
    of it: short enough to force under ``--max-tokens``)."""
    rnd = random.Random(f"{name}:{seed}")
    out = []
    for k in range(n):
        d = docs[k % len(docs)]
        start = rnd.randint(max(0, len(d) - 300), len(d) - 1)
        out.append(fim_eval.FimCase("prefix", f"{name}-doc{k % len(docs)}", start, len(d), d))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("grammar", type=Path)
    ap.add_argument("docs", type=Path, nargs="+")
    ap.add_argument("--lexer", choices=["basic", "contextual"], default="contextual")
    ap.add_argument("--fim", action="store_true", help="keep the suffix (fill-in-the-middle)")
    ap.add_argument("--cases", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ks", default="0,1,4", help="budget = true length + k")
    ap.add_argument("--vocab", default="gpt2")
    ap.add_argument("--max-tokens", type=int, default=120,
                    help="skip continuations longer than this (in true tokens)")
    args = ap.parse_args(argv)
    from tests._support import hf_tokenizer  # type: ignore[import-not-found, unused-ignore]

    ks = [int(x) for x in args.ks.split(",")]
    text = args.grammar.read_text()
    docs = [d.read_text() for d in args.docs]
    g = gramask.Grammar.from_lark(text, import_paths=[args.grammar.parent],
                                  source=args.grammar.name, lexer=args.lexer)
    # (lark's Indenter where the grammar declares _INDENT/_DEDENT, as heldout_lark_check)
    postlex = indenter(g.indentation) if g.indentation is not None else None
    parser = oracle(text, str(args.grammar.parent), args.lexer, postlex)[0]
    for path, doc in zip(args.docs, docs, strict=True):
        try:
            parser.parse(doc)
        except lark.exceptions.LarkError as e:  # outside lark's language: nothing to force
            first = str(e).strip().splitlines()[0]
            print(f"{args.grammar.name} ({args.lexer}): lark refuses {path.name}: "
                  f"{type(e).__name__}: {first}")
            return 2
    encode = hf_tokenizer(args.vocab)
    vocab = gramask.Vocabulary.bundled(args.vocab)
    cg = gramask.compile(g, vocab, progress=False)
    name = args.grammar.stem
    todo = list(enumerate(fim_eval.doc_cases(docs, name, args.cases, args.seed) if args.fim
                          else tail_cases(docs, name, args.cases, args.seed)))
    blocked = dict.fromkeys(ks, 0)
    runs = refused = 0
    times: list[float] = []
    for index, case in todo:
        ids = encode(case.middle)
        if not ids or len(ids) > args.max_tokens:
            print(f"  #{index}: skipped, {len(ids)} true tokens", file=sys.stderr)
            continue
        suffix = case.suffix if args.fim else None
        try:  # lark takes the whole document: a refusal here is a bug
            cg.constraint(case.prefix, suffix=suffix)
        except gramask.GramaskError as e:
            refused += 1
            print(f"  #{index} {case.source}:{case.start}-{case.end}: setup refused: "
                  f"{type(e).__name__}: {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
            continue
        runs += 1
        for k in ks:
            why = bf.force(cg, case.prefix, suffix, ids, len(ids) + k, times)
            if why is not None:
                blocked[k] += 1
                print(f"  k={k} #{index} {case.source}:{case.start}-{case.end} "
                      f"({len(ids)} tokens): {why}", file=sys.stderr, flush=True)
    mode = "fill-in-the-middle" if args.fim else "prefix"
    print(f"{args.grammar.name} ({args.lexer}), {mode}, {args.vocab}: {runs} of {len(todo)} "
          f"requests run ({refused} refused at setup); with a true token forbidden: "
          + ", ".join(f"k={k}: {blocked[k]}/{runs}" for k in ks))
    return 0 if all(blocked[k] == 0 for k in ks if k >= 4) and not refused else 1


if __name__ == "__main__":
    raise SystemExit(main())
