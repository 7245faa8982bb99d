#!/usr/bin/env python
"""Coverage of gramask's bundled Python grammar on real code.

For every ``.py`` file under the given directories (or files) that is valid UTF-8 and that
``ast.parse`` accepts, parse it with the oracle

    Lark(grammar, parser="lalr", lexer="basic", postlex=PythonIndenter(), start="file_input")

and also lex it the way gramask's lexer does (all terminals at once, greedy, no backtracking;
winner by priority, then string literals over regexes) and check that the greedy token stream is
the one lark's parser consumed.  Prints the pass rate and the failures grouped by cause
(error type + offending token).

    python tools/python_grammar_coverage.py --stdlib
    python tools/python_grammar_coverage.py --sample 300 --seed 0 \\
        $VENV/lib/python3.11/site-packages/{numpy,scipy,torch}

The functions here are also used by tests/test_grammar_python.py.
"""

from __future__ import annotations

import argparse
import ast
import collections
import io
import os
import random
import sys
import sysconfig
import time
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import interegular
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.indenter import PythonIndenter

GRAMMAR_PATH = Path(__file__).resolve().parent.parent / "gramask" / "grammars" / "python.lark"

# Directories below the stdlib root that are not the standard library.
NON_STDLIB_DIRS = frozenset({"site-packages", "dist-packages", "__pycache__"})


# ---------------------------------------------------------------------------------------------
# Oracle
# ---------------------------------------------------------------------------------------------


class RecordingIndenter(PythonIndenter):
    """PythonIndenter that records the (non-ignored) tokens lark's lexer hands to the parser."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens: list[Token] = []

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        def rec(s: Iterator[Token]) -> Iterator[Token]:
            for t in s:
                self.tokens.append(t)
                yield t

        return super().process(rec(stream))


def load_oracle(grammar_path: Path = GRAMMAR_PATH) -> tuple[Lark, RecordingIndenter]:
    indenter = RecordingIndenter()
    from gramask.grammars import _GENERATED, _NAME_FOR_LARK  # lark's collision check is slow
    from gramask.grammars import text as bundled_text

    text = grammar_path.read_text(encoding="utf-8")
    if grammar_path == GRAMMAR_PATH:  # the bundled grammar as the running interpreter has it
        text = bundled_text("python")
    parser = Lark(
        _GENERATED.sub(lambda _m: _NAME_FOR_LARK, text),
        parser="lalr",
        lexer="basic",
        postlex=indenter,
        start="file_input",
    )
    return parser, indenter


# ---------------------------------------------------------------------------------------------
# gramask-style greedy lexer (reference emulation, pure Python)
# ---------------------------------------------------------------------------------------------


def terminal_regexps(parser: Lark) -> dict[str, str]:
    """Terminal name -> the plain regex gramask compiles (string terminals: escaped literal)."""
    return {t.name: t.pattern.to_regexp() for t in parser.terminals}


class GreedyLexer:
    """All terminals at once; a lexeme extends while the next character keeps some terminal
    alive and ends when it kills all of them; the winner among the accepting terminals is the
    one with the highest priority, then string literals over regexes.  No backtracking."""

    def __init__(self, parser: Lark) -> None:
        self.names: list[str] = []
        self.fsms = []
        keys = []
        for t in parser.terminals:
            fsm = interegular.parse_pattern(t.pattern.to_regexp()).to_fsm()
            self.names.append(t.name)
            self.fsms.append(fsm)
            keys.append((t.priority, t.pattern.type == "str"))
        self.ignore = frozenset(parser.lexer_conf.ignore)
        self._keys = keys
        # combined DFA, built lazily: state id -> tuple of (terminal index, fsm state)
        self._states: list[tuple[tuple[int, int], ...]] = []
        self._ids: dict[tuple[tuple[int, int], ...], int] = {}
        self._trans: list[dict[str, int]] = []
        self._winner: list[str | None] = []
        self.ambiguous: set[tuple[str, ...]] = set()
        self.start = self._intern(tuple((i, f.initial) for i, f in enumerate(self.fsms)))

    def _intern(self, st: tuple[tuple[int, int], ...]) -> int:
        sid = self._ids.get(st)
        if sid is None:
            sid = len(self._states)
            self._ids[st] = sid
            self._states.append(st)
            self._trans.append({})
            acc = [i for i, s in st if s in self.fsms[i].finals]
            win = None
            if acc:
                best = max(self._keys[i] for i in acc)
                top = [i for i in acc if self._keys[i] == best]
                if len(top) > 1:
                    self.ambiguous.add(tuple(sorted(self.names[i] for i in top)))
                win = self.names[min(top)]
            self._winner.append(win)
        return sid

    def _step(self, sid: int, ch: str) -> int:
        nxt = []
        for i, s in self._states[sid]:
            f = self.fsms[i]
            t = f.map[s].get(f.alphabet[ch])
            if t is not None:
                nxt.append((i, t))
        r = self._intern(tuple(nxt)) if nxt else -1
        self._trans[sid][ch] = r
        return r

    def lex(self, text: str) -> Iterator[tuple[str, str, int]]:
        """Yields (terminal, value, start offset); raises ValueError on a lexing dead end."""
        trans, winner, start, n = self._trans, self._winner, self.start, len(text)
        pos = 0
        while pos < n:
            sid = start
            i = pos
            while i < n:
                ch = text[i]
                nxt = trans[sid].get(ch)
                if nxt is None:
                    nxt = self._step(sid, ch)
                if nxt < 0:
                    break
                sid = nxt
                i += 1
            w = winner[sid]
            if w is None or i == pos:
                raise ValueError(
                    f"greedy lexer: no terminal accepts {text[pos:i + 1][:40]!r} at offset {pos}"
                )
            yield w, text[pos:i], pos
            pos = i


# ---------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def iter_py_files(paths: Iterable[str | os.PathLike], exclude_dirs=NON_STDLIB_DIRS) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_file():
            out.append(p)
            continue
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if d not in exclude_dirs)
            out.extend(Path(root) / f for f in sorted(files) if f.endswith(".py"))
    return out


def read_source(path: Path) -> str | None:
    """The file's text as gramask would see it, or None if it is not UTF-8 or not valid Python
    according to ast.parse.  A UTF-8 BOM is dropped; a missing final newline is added."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if not text.endswith("\n"):
        text += "\n"
    return text


# ---------------------------------------------------------------------------------------------
# Checking
# ---------------------------------------------------------------------------------------------


@dataclass
class Failure:
    path: str
    cause: str
    detail: str


@dataclass
class Report:
    total: int = 0
    skipped: int = 0
    passed: int = 0
    greedy_checked: int = 0
    failures: list[Failure] = field(default_factory=list)
    greedy_failures: list[Failure] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 1.0

    def by_cause(self, greedy: bool = False) -> list[tuple[str, list[Failure]]]:
        groups: dict[str, list[Failure]] = collections.defaultdict(list)
        for f in self.greedy_failures if greedy else self.failures:
            groups[f.cause].append(f)
        return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))

    def format(self, max_examples: int = 3) -> str:
        lines = [
            f"files: {self.total} checked, {self.skipped} skipped (not UTF-8, rejected by ast.parse, "
            f"or using a \\N{{...}} escape, which python.lark refuses by design)",
            f"oracle (lark LALR, basic lexer): {self.passed}/{self.total} passed = {100 * self.rate:.2f}%",
            f"greedy lexing agrees with the oracle's tokens: "
            f"{self.greedy_checked - len(self.greedy_failures)}/{self.greedy_checked} files",
            f"time: {self.seconds:.1f} s",
        ]
        for title, groups in (("oracle failures", self.by_cause()),
                              ("greedy-lexing mismatches", self.by_cause(greedy=True))):
            if not groups:
                continue
            lines.append(f"{title} by cause:")
            for cause, fs in groups:
                lines.append(f"  {len(fs):5d}  {cause}")
                for f in fs[:max_examples]:
                    lines.append(f"           {f.path}: {f.detail}")
        return "\n".join(lines)


def _cause(e: Exception) -> tuple[str, str]:
    name = type(e).__name__
    where = ""
    if isinstance(e, UnexpectedInput):
        where = f"line {getattr(e, 'line', '?')} col {getattr(e, 'column', '?')}"
    if isinstance(e, UnexpectedToken):
        tok = e.token
        val = str(tok) if tok.type in ("NAME", "STRING", "LONG_STRING") else repr(str(tok))
        if tok.type in ("STRING", "LONG_STRING", "BYTES", "LONG_BYTES", "NAME", "_NEWLINE"):
            return f"{name} {tok.type}", f"{where}: {val[:60]!r}"
        return f"{name} {tok.type} {str(tok)[:20]!r}", where
    if isinstance(e, UnexpectedCharacters):
        return f"{name} {e.char!r}", where
    return name, str(e).split("\n")[0][:120]


def uses_named_escape(text: str) -> bool:
    """Does a str literal use ``\\N{...}``? python.lark refuses those by design (the Unicode
    names do not fit a lexer automaton; docs/semantics.md), so such files are not counted."""
    if "\\N{" not in text:
        return False
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return True
    for t in toks:
        if t.type == tokenize.STRING and "\\N{" in t.string:
            prefix = t.string[: len(t.string) - len(t.string.lstrip("rRbBuUfF"))].lower()
            if "r" not in prefix and "b" not in prefix:
                return True
    return False


def check_file(parser: Lark, indenter: RecordingIndenter, greedy: GreedyLexer | None,
               text: str) -> tuple[Failure | None, Failure | None]:
    """(oracle failure, greedy-lexing mismatch) for one source text; the path is filled later."""
    indenter.tokens = []
    try:
        parser.parse(text)
    except Exception as e:
        cause, detail = _cause(e)
        return Failure("", cause, detail), None
    if greedy is None:
        return None, None
    expected = [(t.type, str(t)) for t in indenter.tokens]
    got: list[tuple[str, str]] = []
    try:
        for name, value, _ in greedy.lex(text):
            if name not in greedy.ignore:
                got.append((name, value))
    except ValueError as e:
        return None, Failure("", "greedy dead end", str(e))
    if got != expected:
        k = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                 min(len(got), len(expected)))
        g = got[k] if k < len(got) else None
        x = expected[k] if k < len(expected) else None
        return None, Failure("", f"greedy token {g[0] if g else 'EOF'} vs lark {x[0] if x else 'EOF'}",
                             f"token #{k}: greedy {g!r}, lark {x!r}")
    return None, None


def run(paths: Iterable[Path], *, greedy_check: bool = True, parser=None, indenter=None,
        progress: bool = False) -> Report:
    if parser is None:
        parser, indenter = load_oracle()
    greedy = GreedyLexer(parser) if greedy_check else None
    rep = Report()
    t0 = time.time()
    paths = list(paths)
    for n, path in enumerate(paths):
        text = read_source(path)
        if text is None or uses_named_escape(text):
            rep.skipped += 1
            continue
        rep.total += 1
        fail, gfail = check_file(parser, indenter, greedy, text)
        if fail is None:
            rep.passed += 1
            if greedy is not None:
                rep.greedy_checked += 1
        else:
            fail.path = str(path)
            rep.failures.append(fail)
        if gfail is not None:
            gfail.path = str(path)
            rep.greedy_failures.append(gfail)
        if progress and n % 200 == 0:
            print(f"  {n}/{len(paths)} files, {time.time() - t0:.0f} s", file=sys.stderr)
    rep.seconds = time.time() - t0
    return rep


def sample_files(paths: list[Path], k: int, seed: int) -> list[Path]:
    if k >= len(paths):
        return list(paths)
    return sorted(random.Random(seed).sample(sorted(paths), k))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="directories or .py files")
    ap.add_argument("--stdlib", action="store_true", help="add the running interpreter's stdlib "
                    "(without site-packages)")
    ap.add_argument("--sample", type=int, default=0, help="check a seeded random sample of N files")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-greedy", action="store_true", help="skip the greedy-lexing comparison")
    ap.add_argument("--examples", type=int, default=3, help="examples shown per cause")
    ap.add_argument("--grammar", type=Path, default=GRAMMAR_PATH,
                    help="grammar file (default: the bundled python.lark)")
    ap.add_argument("--include-site-packages", action="store_true",
                    help="do not skip site-packages/dist-packages directories while walking")
    args = ap.parse_args(argv)
    paths = list(args.paths)
    if args.stdlib:
        paths.append(stdlib_root())
    if not paths:
        ap.error("give directories/files or --stdlib")
    exclude = frozenset({"__pycache__"}) if args.include_site_packages else NON_STDLIB_DIRS
    # A directory named explicitly is walked even if it lies inside site-packages.
    files = iter_py_files(paths, exclude)
    if args.sample:
        files = sample_files(files, args.sample, args.seed)
    parser, indenter = load_oracle(args.grammar)
    rep = run(files, greedy_check=not args.no_greedy, parser=parser, indenter=indenter,
              progress=True)
    print(rep.format(args.examples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
