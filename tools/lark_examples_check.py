"""Grammars written for lark, in gramask's contextual lexer mode, with lark as the oracle.

Usage: python tools/lark_examples_check.py DIR [--walks N] [--seed S]

DIR is lark's ``examples/`` folder (e.g. ``git archive`` of github.com/lark-parser/lark). For
every ``.lark`` file there, and every grammar written inline in an example script
(``name = \"\"\"...\"\"\"`` passed to ``Lark(...)``), the tool

* loads it with gramask (``lexer="contextual"``); a grammar gramask refuses is reported with
  its error (lookarounds are the usual reason) and skipped;
* forces the example's own sample texts (files and inline texts it ships) through a
  ``Constraint`` and checks that they are complete, when lark parses them;
* takes random masked walks over a character vocabulary; every walk that reaches
  ``is_complete()`` gives a text that lark must parse.

lark's parser is ``parser="lalr"`` with its contextual lexer when the grammar is LALR(1),
else Earley with its basic lexer. Nothing here is timed.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from pathlib import Path

import lark

import gramask
from gramask.errors import GramaskError

INLINE = re.compile(r'^[ \t]*(\w+)\s*=\s*r?"""(.*?)"""', re.S | re.M)
# sample texts shipped with the examples: grammar file -> text files beside it
SAMPLES = {"storage.lark": ["combined_csv_and_json.txt"]}
# a few texts of our own per grammar (lark decides whether they count)
OWN = {
    "json": ['{"a": [1, 2.5e3, "x", true, null], "b": {}}', "[ ]", '"s"'],
    "calc": ["a = 1 + 2 * (3 - -x) / 4", "1+2", "x"],
    "turtle": ["c red yellow\nfill { repeat 36 { f200 l170 }}\n"],
    "storage": ["# a b\nx 1 y\n"],
}


def grammars(root: Path) -> list[tuple[str, str, str, list[str]]]:
    """(name, text, folder for imports, sample texts)."""
    out = []
    for f in sorted(root.rglob("*.lark")):
        samples = [(f.parent / s).read_text() for s in SAMPLES.get(f.name, [])
                   if (f.parent / s).exists()]
        out.append((str(f.relative_to(root)), f.read_text(), str(f.parent), samples))
    for f in sorted(root.rglob("*.py")):
        src = f.read_text()
        blocks = dict(INLINE.findall(src))
        for name, text in blocks.items():
            if name.endswith("grammar") and re.search(rf"Lark\(\s*{name}\b", src):
                samples = [t for n, t in blocks.items() if n != name and not n.endswith("grammar")]
                out.append((f"{f.relative_to(root)}:{name}", text, str(f.parent), samples))
    return out


def lark_parser(text: str, folder: str) -> tuple[lark.Lark, str]:
    try:
        return lark.Lark(text, parser="lalr", lexer="contextual", import_paths=[folder]), "lalr"
    except lark.exceptions.GrammarError:
        return lark.Lark(text, parser="earley", lexer="basic", import_paths=[folder]), "earley"


def parses(p: lark.Lark, text: str) -> bool:
    try:
        p.parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


def _walk(cg: gramask.CompiledGrammar, eos: int, rnd: random.Random, steps: int) -> str | None:
    """A random masked walk; its text if it ends complete."""
    c = cg.constraint()
    for _step in range(steps):
        m = c.allowed()
        if m[eos] and (rnd.random() < 0.15 or m.sum() == 1):
            break
        ids = m[:eos].nonzero()[0]
        if not len(ids):
            break
        c.advance(int(rnd.choice(ids)))
    return c.text if c.is_complete() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--walks", type=int, default=200)
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    rnd = random.Random(a.seed)
    toks = [bytes([c]) for c in range(32, 127)] + [b"\n", b"\t"]
    vocab = gramask.Vocabulary.from_tokens([*toks, b"</s>"], eos_token_id=len(toks))
    bad = 0
    for name, text, folder, samples in grammars(a.dir):
        try:
            g = gramask.Grammar.from_lark(text, import_paths=[folder], source=name)
            cg = gramask.compile(g, vocab, cache=False, progress=False)
        except GramaskError as e:
            print(f"{name}: refused by gramask: {str(e).splitlines()[0][:160]}")
            continue
        try:
            p, kind = lark_parser(text, folder)
        except lark.exceptions.LarkError as e:
            print(f"{name}: lark cannot build a parser: {str(e)[:100]}")
            continue
        own = [t for k, ts in OWN.items() if k in name for t in ts]
        # texts the *basic* lexer's masks produce are a cheap source of texts: lark keeps
        # those it parses, and the contextual constraint must take them whole
        basic_texts = []
        try:
            gb = gramask.Grammar.from_lark(text, import_paths=[folder], lexer="basic")
            cb = gramask.compile(gb, vocab, cache=False, progress=False)
            for _ in range(a.walks // 2):
                basic_texts.append(_walk(cb, len(toks), rnd, a.steps))
        except GramaskError:
            pass
        forced = ok = 0
        for s in [*samples, *own, *(t for t in basic_texts if t is not None)]:
            if not parses(p, s):
                continue
            forced += 1
            try:
                ok += cg.constraint(s).is_complete()
            except GramaskError as e:
                print(f"  {name}: sample rejected: {e}")
        walks = sound = 0
        for _ in range(a.walks):
            t = _walk(cg, len(toks), rnd, a.steps)
            if t is not None:
                walks += 1
                if parses(p, t):
                    sound += 1
                elif walks - sound <= 3:
                    print(f"  {name}: lark rejects a complete walk: {t!r}")
        bad += (forced - ok) + (walks - sound)
        print(f"{name}: lark {kind}; texts lark parses {forced}, complete in gramask {ok}; "
              f"complete walks {walks}, lark parses {sound}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
