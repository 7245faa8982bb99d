"""Lark grammars nobody here wrote (SynCode's, outlines', llguidance's samples), in both lexer
modes, with a real vocabulary and lark as the oracle.

Usage: PYTHONPATH=.:tools python tools/heldout_lark_check.py DIR [DIR ...] --samples SDIR
                                [--modes contextual,basic] [--vocab deepseek-v4] [--walks 12]
                                [--steps 40] [--cuts 4] [--seed 0] [--timeout 900] [--json OUT]

The grammars are not vendored: DIR is a folder of ``.lark`` files (e.g. ``git show`` of
SynCode's ``syncode/parsers/grammars/``), read recursively; imports resolve beside each file.
Sample programs are ours and live outside the repository: ``SDIR/<stem>/*`` for a grammar
``<stem>.lark`` (a ``_grammar`` ending of the stem is dropped when no folder has the name).
A ``.lark`` that lark itself cannot build (a library such as ``common.lark``) is listed and
skipped. Per grammar and mode:

* load with gramask; a refusal is listed with its ``GrammarError`` (a crash or a hang, capped
  by ``--timeout``, is a bug);
* compile against the real vocabulary without the cache: compile seconds, the first mask's
  seconds after it (tables are walked lazily), the saved artifact's bytes;
* lark's parser is the oracle: ``lalr`` with the mode's lexer (``contextual`` or ``basic``)
  when its LALR table has no conflict, else Earley (dynamic lexer for the contextual mode,
  basic lexer for the basic one); lark's ``Indenter`` when the grammar ``%declare``s
  ``_INDENT``/``_DEDENT`` (with the newline terminal gramask detected);
* samples: gramask's ``is_complete()`` on the whole text and on random prefixes against
  lark; texts lark takes are forced token by token (the vocabulary's own tokenizer) with EOS
  at the end, then under ``max_tokens`` = their tokens + 4;
* random masked walks from the start and from sample prefixes, finished by
  ``shortest_completion()``: EOS must be allowed there and lark must take the text;
* fill-in-the-middle: ``--cuts`` random cuts of each sample lark takes; ``constraint(prefix,
  suffix=...)`` must take the true middle token by token and EOS after it, and again under
  ``max_tokens`` = the middle's tokens + 4.

Exit status 1 if any check failed (refusals are not failures; they are listed, and so are
walks that lark's LALR parser refuses but its Earley parser takes: lexed otherwise).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import lark
from fuzz_common import force_into
from lark_fuzz import ConflictError, Conflicts

import gramask
from gramask.errors import GramaskError


@dataclass
class Row:
    """One grammar in one mode: what happened, counted."""

    grammar: str
    mode: str
    status: str = "ok"  # ok | refused | crash | hang | lark-refuses
    why: str = ""
    oracle: str = ""
    compile_s: float = 0.0
    first_mask_s: float = 0.0  # the first mask after the compile (tables are walked lazily)
    size: int = 0
    wall_s: float = 0.0
    counts: dict[str, list[int]] = field(default_factory=dict)  # check -> [ok, of]
    failures: list[str] = field(default_factory=list)

    def tally(self, check: str, ok: bool, detail: str = "") -> None:
        c = self.counts.setdefault(check, [0, 0])
        c[0] += ok
        c[1] += 1
        if not ok and len(self.failures) < 40:
            self.failures.append(f"{check}: {detail}")


# a walk lark's LALR parser refuses and its Earley parser takes: listed, not failed
LEXED = "walk lexed unlike lark's LALR (Earley takes it)"


class Hang(BaseException):
    """The grammar ran past ``--timeout`` (a BaseException: no check's handler takes it)."""


def _alarm(_sig: int, _frame: object) -> None:
    raise Hang


def samples_for(sdir: Path | None, stem: str) -> list[str]:
    if sdir is None:
        return []
    for name in (stem, stem.removesuffix("_grammar")):
        d = sdir / name
        if d.is_dir():
            return [f.read_text() for f in sorted(d.iterdir()) if f.is_file()]
    return []


def indenter(spec: gramask.grammar.IndentationSpec) -> lark.indenter.Indenter:
    """lark's Indenter with the names gramask detected."""

    class Ind(lark.indenter.Indenter):
        NL_type = spec.newline
        OPEN_PAREN_types: ClassVar[list[str]] = list(spec.open_brackets)
        CLOSE_PAREN_types: ClassVar[list[str]] = list(spec.close_brackets)
        INDENT_type = spec.indent
        DEDENT_type = spec.dedent
        tab_len = spec.tab_len

    return Ind()


def oracle(text: str, folder: str, mode: str, postlex: Any) -> tuple[lark.Lark, str]:
    """lark's LALR parser with the mode's lexer, or Earley where the table has conflicts."""
    h = Conflicts()
    log = lark.logger
    handlers, level = log.handlers, log.level
    log.handlers, log.level = [h], 10
    try:
        p = lark.Lark(text, parser="lalr", lexer=mode, postlex=postlex, import_paths=[folder])
        if h.count:
            raise ConflictError(f"{h.count} shift/reduce conflicts")
        return p, f"lalr+{mode}"
    except (lark.exceptions.GrammarError, ConflictError):
        lexer = "dynamic" if mode == "contextual" and postlex is None else "basic"
        p = lark.Lark(text, parser="earley", lexer=lexer, postlex=postlex,
                      import_paths=[folder])
        return p, f"earley+{lexer}"
    finally:
        log.handlers, log.level = handlers, level


def lark_takes(p: lark.Lark, text: str) -> bool:
    try:
        p.parse(text)
    except (lark.exceptions.LarkError, IndexError, AssertionError):
        return False  # IndexError / AssertionError: lark's Indenter on odd newlines
    return True


def gramask_takes(cg: gramask.CompiledGrammar, text: str) -> bool:
    try:
        return cg.constraint(text).is_complete()
    except gramask.InvalidPrefixError:
        return False


def _setup(cg: gramask.CompiledGrammar, prefix: str, suffix: str | None,
           max_tokens: int | None) -> gramask.Constraint | str:
    try:
        return cg.constraint(prefix, suffix=suffix, max_tokens=max_tokens)
    except GramaskError as e:
        return f"setup refused: {type(e).__name__}: {str(e)[:200]}"


def forced(cg: gramask.CompiledGrammar, prefix: str, middle: str, suffix: str | None,
           tok: Callable[[str], list[int]], slack: int | None) -> str | None:
    """None if ``middle``'s tokens and then EOS pass the masks (under ``max_tokens`` = its
    tokens + ``slack`` when given); else what failed."""
    ids = tok(middle)
    c = _setup(cg, prefix, suffix, None if slack is None else len(ids) + slack)
    if isinstance(c, str):
        return c
    return force_into(c, ids)


def walk(cg: gramask.CompiledGrammar, prefix: str, rnd: random.Random, steps: int
         ) -> tuple[str, str | None]:
    """Random allowed tokens from ``prefix``, then the shortest completion: (text, problem)."""
    c = cg.constraint(prefix)
    eos = cg.vocab.eos_token_id
    for _ in range(rnd.randint(0, steps)):
        m = c.allowed()
        ids = m.nonzero()[0]
        ids = ids[ids != eos]
        if not len(ids):
            if m[eos]:
                break  # complete, and nothing may follow
            return prefix + c.data.decode(errors="replace"), "dead end: no token allowed"
        c.advance(int(rnd.choice(ids)))
    try:
        for t in c.shortest_completion().token_ids:
            c.advance(t)
    except gramask.NoCompletionError:
        return prefix + c.data.decode(errors="replace"), "no completion after allowed tokens"
    text = prefix + c.data.decode(errors="replace")
    if not c.allowed()[eos]:
        return text, "EOS forbidden after the shortest completion"
    return text, None


def guarded(row: Row, check: str, f: Callable[[], str | None]) -> None:
    """Run one check, counting a crash as its failure."""
    try:
        why = f()
    except Hang:
        raise
    except Exception as e:
        why = f"crash {type(e).__name__}: {str(e)[:200]}"
    row.tally(check, why is None, why or "")


def check_mode(path: Path, root: Path, mode: str, samples: list[str], vocab: gramask.Vocabulary,
               tok: Callable[[str], list[int]], a: argparse.Namespace) -> Row:
    name = str(path.relative_to(root)) if root in path.parents else path.name
    row = Row(name, mode)
    text, folder = path.read_text(), str(path.parent)
    rnd = random.Random(f"{a.seed}:{name}:{mode}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = gramask.Grammar.from_lark(text, import_paths=[folder], source=name, lexer=mode)
            t0 = time.perf_counter()
            cg = gramask.compile(g, vocab, cache=False, progress=False)
            row.compile_s = time.perf_counter() - t0
            cg.constraint().allowed()
            row.first_mask_s = time.perf_counter() - t0 - row.compile_s
    except GramaskError as e:
        row.status, row.why = "refused", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        return row
    with tempfile.TemporaryDirectory() as d:
        cg.save(Path(d) / "a.gmask")
        row.size = (Path(d) / "a.gmask").stat().st_size
    postlex = indenter(g.indentation) if g.indentation is not None else None
    p, row.oracle = oracle(text, folder, mode, postlex)
    earley: list[lark.Lark] = []

    def lexing_only(t: str) -> bool:
        """Does lark's Earley parser (dynamic lexer: every tokenization) take ``t``? Then a
        walk lark's LALR parser refuses is in the grammar's language, lexed otherwise (its
        contextual lexer reads the LALR state's lookaheads, wider than the parse's)."""
        if postlex is not None or row.oracle.startswith("earley"):
            return False
        if not earley:
            earley.append(lark.Lark(text, parser="earley", import_paths=[folder]))
        return lark_takes(earley[0], t)

    good = []
    for s in samples:
        lk = lark_takes(p, s)
        guarded(row, "sample verdict", lambda s=s, lk=lk: None if gramask_takes(cg, s) == lk
                else f"lark {'takes' if lk else 'refuses'}, gramask not: {s[:120]!r}")
        if not lk:
            continue
        good.append(s)
        guarded(row, "sample forced", lambda s=s: forced(cg, "", s, None, tok, None))
        guarded(row, "budget +4", lambda s=s: forced(cg, "", s, None, tok, 4))
        for _ in range(a.cuts):
            i = rnd.randint(0, len(s))
            guarded(row, "prefix verdict", lambda s=s, i=i: None
                    if gramask_takes(cg, s[:i]) == lark_takes(p, s[:i])
                    else f"on prefix {s[:i]!r}: lark {lark_takes(p, s[:i])}")
            i, j = sorted(rnd.randint(0, len(s)) for _ in range(2))
            guarded(row, "FIM", lambda s=s, i=i, j=j: forced(cg, s[:i], s[i:j], s[j:], tok,
                                                              None))
            guarded(row, "FIM budget +4", lambda s=s, i=i, j=j: forced(
                cg, s[:i], s[i:j], s[j:], tok, 4))
    for k in range(a.walks):
        pre = ""
        if good and k % 2:
            s = rnd.choice(good)
            pre = s[:rnd.randint(0, len(s))]

        def one(pre: str = pre) -> str | None:
            t, why = walk(cg, pre, rnd, a.steps)
            if why is None and not lark_takes(p, t):
                why = "lark refuses the complete walk"
                if lexing_only(t):
                    row.tally(LEXED, False,
                              f"{t[-200:]!r}")
                    return None
            return None if why is None else f"{why}: {t[-200:]!r}"

        guarded(row, "walk", one)
    return row


def run(path: Path, root: Path, mode: str, samples: list[str], vocab: gramask.Vocabulary,
        tok: Callable[[str], list[int]], a: argparse.Namespace) -> Row:
    """check_mode under the time cap; a crash or a hang becomes the row's status."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(a.timeout)
    t0 = time.perf_counter()
    try:
        row = check_mode(path, root, mode, samples, vocab, tok, a)
        row.wall_s = time.perf_counter() - t0
        return row
    except Hang:
        return Row(path.name, mode, "hang", f"past {a.timeout} s")
    except lark.exceptions.LarkError as e:
        return Row(path.name, mode, "lark-refuses", f"{type(e).__name__}: {str(e)[:200]}")
    except Exception as e:
        return Row(path.name, mode, "crash", f"{type(e).__name__}: {str(e)[:300]}")
    finally:
        signal.alarm(0)


def lark_builds(path: Path) -> str | None:
    """None if lark builds some parser for the file; else why not (a library file)."""
    try:
        lark.Lark(path.read_text(), parser="earley", import_paths=[str(path.parent)])
    except lark.exceptions.LarkError as e:
        return f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
    return None


def report(row: Row) -> str:
    head = f"{row.grammar} [{row.mode}]"
    if row.status != "ok":
        return f"{head}: {row.status.upper()} {row.why}"
    checks = ", ".join(f"{k} {ok}/{n}" for k, (ok, n) in row.counts.items())
    return (f"{head}: oracle {row.oracle}; compile {row.compile_s:.2f} s + first mask "
            f"{row.first_mask_s:.2f} s, {row.size / 1e6:.2f} MB saved; {checks} "
            f"({row.wall_s:.0f} s in all)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("dirs", type=Path, nargs="+")
    ap.add_argument("--samples", type=Path)
    ap.add_argument("--modes", default="contextual,basic")
    ap.add_argument("--vocab", default="deepseek-v4")
    ap.add_argument("--walks", type=int, default=12)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--cuts", type=int, default=4, help="prefixes and FIM cuts per sample")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=900, help="seconds per grammar and mode")
    ap.add_argument("--only", default="", help="grammars whose path contains this")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    sys.setrecursionlimit(10_000)
    from tests._support import hf_tokenizer

    vocab = gramask.Vocabulary.bundled(a.vocab)
    tok = hf_tokenizer(a.vocab)
    rows: list[Row] = []
    for root in a.dirs:
        for path in sorted(root.rglob("*.lark")):
            if a.only not in str(path):
                continue
            why = lark_builds(path)
            if why is not None:
                print(f"{path}: skipped, lark builds no parser: {why}", flush=True)
                continue
            samples = samples_for(a.samples, path.stem)
            for mode in a.modes.split(","):
                row = run(path, root, mode, samples, vocab, tok, a)
                rows.append(row)
                print(report(row), flush=True)
                for f in row.failures[:8]:
                    print(f"    {f}", flush=True)
    if a.json:
        a.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    bad = sum(r.status in ("crash", "hang") or any(
        ok < n for k, (ok, n) in r.counts.items() if not k.startswith(LEXED)) for r in rows)
    print(f"{len(rows)} grammar-modes, {bad} with failures", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
