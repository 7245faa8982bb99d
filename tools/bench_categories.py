"""What reading ``\\d``, ``\\w``, ``\\s`` as Python's ``re`` does (Unicode classes) costs,
against gramask's ASCII reading: lexer states, full build and compile + first mask.

For each grammar, both readings (``Grammar.from_lark(..., unicode_categories=...)``, and the
same terminals flagged for the bundled grammars):

* lexer states (``build_lexer_dfa``), and for bundled grammars whether every terminal's
  automaton is the same under both readings (then their tables and digests are too);
* full build (``compiler.pipeline.build``, every row) CPU and wall seconds, median of
  ``--repeat``;
* compile without cache + first ``allowed()`` (rows built lazily, as a request's are).

re's Unicode sets are found once per process (~0.1 s) before any timing. Give ``uptime``
with the numbers::

    PYTHONPATH=. python tools/bench_categories.py [--vocab deepseek-v4] [--repeat 3]
        [--grammars user,regex,python,c,sql,json] [--full-bundled]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable

import numpy as np

import gramask
from gramask.compiler.lexer import build_lexer_dfa, terminal_dfa
from gramask.compiler.pipeline import build
from gramask.compiler.regex_features import has_category, parse_regex
from gramask.compiler.regex_nfa import unicode_category
from gramask.grammar import Grammar

# a small configuration language written the way users write Lark terminals
USER = r"""
start: item*
item: NAME "=" value ";"
value: NUMBER | NAME | STRING | "[" [value ("," value)*] "]"
NAME: /[^\W\d]\w*/
NUMBER: /-?\d+(\.\d+)?/
STRING: /"[^"\n]*"/
%ignore /\s+/
"""
REGEX = r"[\w.+-]+@\w+(\.\w+)+"  # an e-mail address as a serving request's regex


def _timed(f: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of ``f()``."""
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = time.process_time(), time.perf_counter()
        f()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def _flagged(g: Grammar) -> Grammar:
    """``g`` with its regex terminals read with re's categories (as ``from_lark`` sets them)."""
    terms = tuple(dataclasses.replace(
        t, unicode_categories=not t.is_string and has_category(parse_regex(t.pattern))) for t in g.terminals)
    return dataclasses.replace(g, terminals=terms)


def _same_automata(a: Grammar, b: Grammar) -> bool:
    return all(np.array_equal(terminal_dfa(x).trans, terminal_dfa(y).trans)
               and np.array_equal(terminal_dfa(x).finals, terminal_dfa(y).finals)
               for x, y in zip(a.terminals, b.terminals, strict=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--grammars", default="user,regex,python,c,sql,json")
    ap.add_argument("--full-bundled", action="store_true",
                    help="time the bundled grammars' builds too (minutes)")
    a = ap.parse_args(argv)
    vocab = gramask.Vocabulary.bundled(a.vocab)
    for name in ("CATEGORY_WORD", "CATEGORY_DIGIT", "CATEGORY_SPACE"):
        unicode_category(name)
    for name in a.grammars.split(","):
        bundled = name not in ("user", "regex")
        for uni in (False, True):
            if name == "user":
                g = Grammar.from_lark(USER, unicode_categories=uni)
            elif name == "regex":
                g = Grammar.from_regex(REGEX if uni else f"(?a){REGEX}")
            else:
                g = gramask.grammars.load(name)
                if uni:
                    same = _same_automata(g, g := _flagged(g))
                    print(f"{name}: {sum(t.unicode_categories for t in g.terminals)} terminals "
                          f"with a category; every automaton the same: {same}")
            label = f"{name:7s} {'unicode' if uni else 'ascii  '}"
            states = build_lexer_dfa(g.terminals, progress=False).num_states
            if bundled and not a.full_bundled:
                print(f"{label} lexer states {states}", flush=True)
                continue
            full = _timed(lambda g=g: build(g, vocab, progress=False), a.repeat)
            first = _timed(lambda g=g: gramask.compile(g, vocab, cache=False, progress=False)
                           .constraint().allowed(), a.repeat)
            print(f"{label} lexer states {states:5d}; full build {full[0]:.2f} s CPU / "
                  f"{full[1]:.2f} s wall; compile + first mask {first[0] * 1e3:.0f} ms CPU / "
                  f"{first[1] * 1e3:.0f} ms wall", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
