"""Random sentences of the bundled python.lark, checked with the running interpreter's
``ast.parse``: every sentence gramask calls complete and ``ast.parse`` refuses is a superset.

The soundness walks draw tokens a model might write; these draw the grammar's own rules, so
they reach corners a walk from stdlib cuts rarely does (`del [a, *b]`, `case _.a:`, `(a).b:
int` were found so). Rules are expanded at random down to ``--depth``, then along the
shortest derivation; terminals get a few fixed spellings (the grammar is the running
interpreter's: ``gramask.grammars.text`` cuts newer syntax), and no f-string is written (their
fields are the documented superset)::

    PYTHONPATH=. python tools/python_sentences.py --sentences 4000 --seed 5 --depth 10
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lark.grammar import NonTerminal, Terminal
from lark.load_grammar import load_grammar
from soundness_walk import parse_error

import gramask
import gramask.grammars

SAMPLES = {
    "NAME": ["x", "y", "foo", "_a", "é", "A1"],
    "STRING": ['"s"', "'t'", 'r"\\d"', 'u"u"', '""'],
    "LONG_STRING": ['"""doc"""', "'''x'''"],
    "BYTES": ['b"b"', "rb'\\x'"],
    "LONG_BYTES": ['b"""b"""'],
    "DEC_NUMBER": ["0", "1", "10_0"],
    "HEX_NUMBER": ["0x1f"], "OCT_NUMBER": ["0o7"], "BIN_NUMBER": ["0b1"],
    "FLOAT_NUMBER": ["1.5", "1e3", ".5"], "IMAG_NUMBER": ["2j", "1.5j"],
    "ASYNC": ["async"], "AWAIT": ["await"], "SLASH": ["/"],
}
LAYOUT = ("_NEWLINE", "_INDENT", "_DEDENT")


class Sentences:
    """python.lark's rules as lark expands them (templates and EBNF included)."""

    def __init__(self) -> None:
        g, _ = load_grammar(gramask.grammars.text("python"), "python.lark", None, False)
        terms, rules, _ignore = g.compile(["file_input"], set())
        self.literals = {t.name: t.pattern.value for t in terms if t.pattern.type == "str"}
        self.rules: dict[str, list[list[Any]]] = collections.defaultdict(list)
        for r in rules:
            self.rules[r.origin.name].append(list(r.expansion))
        self.height: dict[str, int] = collections.defaultdict(lambda: 10**9)
        changed = True
        while changed:  # shortest derivation height of every rule
            changed = False
            for name, alts in self.rules.items():
                for alt in alts:
                    h = self._alt_height(alt)
                    if h < self.height[name]:
                        self.height[name], changed = h, True

    def _alt_height(self, alt: list[Any]) -> int:
        return 1 + max([self.height[s.name] for s in alt if isinstance(s, NonTerminal)] or [0])

    def expand(self, sym: Any, depth: int, rnd: random.Random, out: list[str]) -> None:
        if isinstance(sym, Terminal):
            if sym.name in LAYOUT:
                out.append(sym.name)
            elif sym.name in SAMPLES:
                out.append(rnd.choice(SAMPLES[sym.name]))
            else:
                out.append(self.literals[sym.name])
            return
        alts = self.rules[sym.name]
        if depth <= 0:
            low = min(self._alt_height(a) for a in alts)
            alts = [a for a in alts if self._alt_height(a) == low]
        for s in rnd.choice(alts):
            self.expand(s, depth - 1, rnd, out)

    def sentence(self, start: str, depth: int, rnd: random.Random) -> str:
        out: list[str] = []
        self.expand(NonTerminal(start), depth, rnd, out)
        return render(out)


def render(tokens: list[str]) -> str:
    """Tokens joined by blanks, the layout tokens as line breaks and 4-column indentation."""
    lines: list[str] = []
    cur: list[str] = []
    level = 0
    i = 0
    while i < len(tokens):
        if tokens[i] == "_NEWLINE":
            lines.append("    " * level + " ".join(cur))
            cur = []
            i += 1
            while i < len(tokens) and tokens[i] in ("_INDENT", "_DEDENT"):
                level += 1 if tokens[i] == "_INDENT" else -1
                i += 1
            continue
        cur.append(tokens[i])
        i += 1
    if cur:
        lines.append("    " * level + " ".join(cur))
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--start", default="stmt")
    ap.add_argument("--vocab", default="deepseek-v4")
    args = ap.parse_args()
    cg = gramask.compile(gramask.grammars.load("python"), gramask.Vocabulary.bundled(args.vocab))
    gen = Sentences()
    rnd = random.Random(args.seed)
    found: collections.Counter[str] = collections.Counter()
    shortest: dict[str, str] = {}
    checked = 0
    for _ in range(args.sentences):
        text = gen.sentence(args.start, args.depth, rnd)
        if len(text) > 3000:
            continue
        checked += 1
        err = parse_error(text, grouped=True)
        if err is None:
            continue
        try:
            ours = cg.constraint(text).is_complete()
        except gramask.GramaskError:
            ours = False
        if ours:
            found[err] += 1
            if err not in shortest or len(text) < len(shortest[err]):
                shortest[err] = text
    print(f"{checked} sentences; complete for gramask, refused by ast.parse: {sum(found.values())}")
    for err, n in found.most_common():
        print(f"--- {n} x {err}\n{shortest[err]}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
