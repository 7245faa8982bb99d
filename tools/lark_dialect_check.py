"""gramask's Lark reader (with llguidance's dialect, ``gramask/frontends/lark_dialect.py``) on
llguidance's own Lark test cases, llguidance as the oracle.

Usage: python tools/lark_dialect_check.py TEST_FILE.rs... [--out FILE] [--mutations N]

Reads the cases of llguidance's Rust tests (``parser/tests/test_lark.rs`` and the like; keep
them outside the repository and name them here): ``lark_str_test_many(grammar, passing,
failing)`` (and ``_quiet``), ``lark_ok(grammar)`` and ``lark_err_test(grammar, error)``. For
each grammar, the installed llguidance decides whether it builds and, on each listed string
and on random edits of them, whether the whole string is accepted (``FINAL_REJECT:``
strings: a prefix it allows, not accepted at the end). gramask either refuses the grammar
with a ``GrammarError`` (counted by its first line: it should name what it refuses) or
agrees with llguidance on every string. Grammars llguidance refuses and gramask builds are
listed too (not always a bug: llguidance refuses some grammars lark reads).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gramask
from gramask.errors import GramaskError

_STR = re.compile(r'r(#*)"(.*?)"\1|"((?:\\.|[^"\\])*)"', re.S)
_ESC = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", "\"": "\"", "'": "'"}


def _unescape(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e.startswith("u{"):
            return chr(int(e[2:-1], 16))
        if e.startswith("x"):
            return chr(int(e[1:], 16))
        if e == "\n":
            return ""
        return _ESC[e]

    s = re.sub(r"\\\n\s*", "", s)  # a backslash at the end of a line: the line goes on
    return re.sub(r"\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)", one, s, flags=re.S)


def _strings(src: str) -> list[str]:
    return [m.group(2) if m.group(2) is not None or m.group(1) else _unescape(m.group(3))
            for m in _STR.finditer(src)]


def _call_args(src: str, start: int) -> tuple[str, int]:
    """The text between the parenthesis at ``start`` and its match (strings skipped)."""
    depth, i = 0, start
    while i < len(src):
        m = _STR.match(src, i)
        if m and src[i] in "r\"" and (src[i] == "\"" or src[i + 1] in "#\""):
            i = m.end()
            continue
        if src[i] == "(":
            depth += 1
        elif src[i] == ")":
            depth -= 1
            if depth == 0:
                return src[start + 1: i], i
        i += 1
    raise ValueError("unbalanced call")


def cases(src: str) -> list[dict[str, Any]]:
    """The test cases of one Rust file: kind, grammar, passing and failing strings."""
    out: list[dict[str, Any]] = []
    for m in re.finditer(r"\b(lark_str_test_many(?:_quiet)?|lark_ok|lark_err_test)\s*\(", src):
        try:
            body, _ = _call_args(src, m.end() - 1)
        except ValueError:
            continue
        if m.group(1) == "lark_ok" or m.group(1) == "lark_err_test":
            got = _strings(body)
            if got:
                out.append({"kind": m.group(1), "grammar": got[0], "passing": [],
                            "failing": [], "error": got[1] if len(got) > 1 else ""})
            continue
        parts = body.split("&[")
        if len(parts) != 3:
            continue  # built at run time: not read here
        g = _strings(parts[0])
        if len(g) != 1:
            continue
        out.append({"kind": "many", "grammar": g[0], "passing": _strings(parts[1]),
                    "failing": _strings(parts[2])})
    return out


def compile_quietly(g: str, vocab: gramask.Vocabulary, width: int
                    ) -> tuple[gramask.CompiledGrammar | None, str | None]:
    """``g`` compiled by gramask (uncached, warnings silenced), or its refusal's first line
    cut to ``width``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return gramask.compile(gramask.Grammar.from_lark(g), vocab, cache=False,
                                   progress=False), None
    except GramaskError as e:
        return None, str(e).strip().splitlines()[0][:width]


class LLG:
    """The installed llguidance on whole strings (its tokenizer: GPT-2's, byte-level)."""

    def __init__(self) -> None:
        import llguidance
        from bench.real_tokenizer import RealTokenizer

        self.llg, self.tok = llguidance, RealTokenizer("gpt2").lltokenizer()

    def build(self, grammar: str) -> str | None:
        """None if llguidance builds ``grammar``, else its error."""
        try:
            g = self.llg.grammar_from("lark", grammar)
            is_error, msgs = self.llg.LLMatcher.validate_grammar_with_warnings(g, self.tok)
            if is_error:
                return "; ".join(msgs)
            m = self.llg.LLMatcher(self.tok, g, log_level=0)
            return m.get_error() if m.is_error() else None
        except Exception as e:
            return f"{type(e).__name__}: {e}"

    def verdict(self, grammar: str, s: str) -> str:
        """"accept", "prefix" (allowed, not accepted) or "reject"."""
        m = self.llg.LLMatcher(self.tok, self.llg.grammar_from("lark", grammar), log_level=0)
        for t in self.tok.tokenize_bytes(s.encode()):
            if not m.consume_token(t):
                return "reject"
        return "accept" if m.is_accepting() else "prefix"


def gramask_verdict(cg: gramask.CompiledGrammar, s: str) -> str:
    try:
        c = cg.constraint(s)
    except gramask.InvalidPrefixError:
        return "reject"
    return "accept" if c.is_complete() else "prefix"


def mutate(s: str, rnd: random.Random) -> str:
    i = rnd.randint(0, len(s))
    k = rnd.random()
    pool = s + "a1 \n\"{}[]"
    if k < 0.4:
        return s[:i] + rnd.choice(pool) + s[i:]
    if k < 0.7 and s:
        return s[:i] + s[i + 1:]
    return s[:i] + s[i:] + s[i:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("lark_dialect_check.jsonl"))
    ap.add_argument("--mutations", type=int, default=10, help="random edits per grammar")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from lark_fuzz import small_vocab

    vocab = small_vocab()
    llg = LLG()
    stats: Counter[str] = Counter()
    with a.out.open("w") as out:
        for f in a.files:
            for k, case in enumerate(cases(f.read_text("utf-8"))):
                rnd = random.Random(f"{a.seed}:{f.name}:{k}")
                g = case["grammar"]
                stats["grammars"] += 1
                lerr = llg.build(g)
                try:
                    cg, gerr = compile_quietly(g, vocab, 160)
                except Exception as e:
                    cg, gerr = None, f"CRASH {type(e).__name__}: {e}"
                row: dict[str, Any] = {"file": f.name, "case": k, "grammar": g}
                if lerr is not None:
                    key = "both refuse" if gerr is not None else "llguidance refuses, gramask builds"
                    stats[key] += 1
                    if gerr is None:
                        out.write(json.dumps({**row, "kind": key, "llguidance": lerr[:300]},
                                             ensure_ascii=False) + "\n")
                    continue
                if gerr is not None:
                    key = "crash" if gerr.startswith("CRASH") else "gramask refuses"
                    stats[key] += 1
                    out.write(json.dumps({**row, "kind": key, "gramask": gerr},
                                         ensure_ascii=False) + "\n")
                    continue
                stats["both build"] += 1
                texts = [s.removeprefix("FINAL_REJECT:") for s in
                         case["passing"] + case["failing"]]
                texts += [mutate(rnd.choice(texts), rnd) for _ in range(a.mutations) if texts]
                bad = []
                for s in dict.fromkeys(texts):
                    stats["texts"] += 1
                    want = llg.verdict(g, s)
                    try:
                        got = gramask_verdict(cg, s)
                    except Exception as e:
                        got = f"crash {type(e).__name__}: {e}"
                    # a prefix llguidance allows and gramask rejects (or the other way) counts
                    if want != got:
                        bad.append({"text": s, "llguidance": want, "gramask": got})
                if bad:
                    stats["grammars with disagreements"] += 1
                    stats["texts disagreeing"] += len(bad)
                    out.write(json.dumps({**row, "kind": "disagree", "texts": bad[:6]},
                                         ensure_ascii=False) + "\n")
    for key, v in sorted(stats.items()):
        print(f"{key}: {v}")
    print(f"cases written to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
