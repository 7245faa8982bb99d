"""llguidance as a benchmark engine: the same Lark grammar, flattened where llguidance's Lark
dialect differs."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import numpy as np

from bench.common import START, grammar_text
from bench.documents import Doc
from bench.harness import Ctx, NotAvailable, Result, Session, _bits_to_bool
from gramask.grammar import Grammar

LEAD_NOTE = ("llguidance does not accept %ignore'd text (whitespace, comments) before the first "
             "or after the last lexeme; its start rule is wrapped as `start: _lead <start> _lead` "
             "with `_lead: (ignored terminals)*`")


def _llg_grammar_text(grammar: str, ignored: list[str]) -> tuple[str, list[str]]:
    """The bundled Lark text as llguidance takes it: terminal priorities dropped (llguidance:
    "priority not supported yet"; under longest-match lexing they only break ties) and ignored
    terminals allowed before the first lexeme (see LEAD_NOTE)."""
    text = grammar_text(grammar)
    notes = []
    if ignored:
        text, n = re.subn(r"^([?!]?)start(\s*):", r"\1llg_orig_start\2:", text, flags=re.M)
        if n == 1:
            text += (f"\nstart: _llg_lead llg_orig_start _llg_lead\n"
                     f"_llg_lead: ({' | '.join(ignored)})*\n")
            notes.append(LEAD_NOTE)
    pat = re.compile(r"^([A-Z_][A-Z0-9_]*)\.(-?\d+)(\s*:)", re.M)
    found = pat.findall(text)
    if found:
        text = pat.sub(r"\1\3", text)
        notes.append("terminal priorities dropped for llguidance: "
                     + ", ".join(f"{a}.{b}" for a, b, _ in found))
    return text, notes


def _lark_regex(pattern: str) -> str:
    """A Python regex as the body of a Lark ``/.../`` literal for llguidance (Rust regex syntax):
    control characters as ``\\xHH``, ``/`` escaped, and inside character classes ``[``, ``&``,
    ``~`` escaped (Rust reads them as nested classes / set operators, Python as literals)."""
    out = []
    i = 0
    n = len(pattern)
    in_class = False

    def lit(c: str) -> str:
        if ord(c) < 0x20 or ord(c) == 0x7F:
            return f"\\x{ord(c):02x}"
        return c

    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            # a backslash before a raw control character means that character
            out.append(lit(nxt) if lit(nxt) != nxt else ch + nxt)
            i += 2
            continue
        if not in_class:
            if ch == "[":
                in_class = True
                out.append("[")
                i += 1
                if i < n and pattern[i] == "^":
                    out.append("^")
                    i += 1
                if i < n and pattern[i] == "]":  # a leading ] is literal in Python
                    out.append("\\]")
                    i += 1
                continue
            out.append("\\/" if ch == "/" else lit(ch))
        else:
            if ch == "]":
                in_class = False
                out.append("]")
            elif ch in "[&~":
                out.append("\\" + ch)
            else:
                out.append("\\/" if ch == "/" else lit(ch))
        i += 1
    return "".join(out)


def flat_lark(g: Grammar, lead_ignored: bool = True) -> str:
    """gramask's view of a grammar (lark's expansion: templates instantiated, EBNF expanded) as
    plain BNF Lark text, for engines that lack some Lark features (templates)."""
    rn: dict[str, str] = {}

    def rname(n: str) -> str:
        if n == "start" and n not in rn:
            return "start"
        if n not in rn:
            rn[n] = f"r{len(rn)}_" + re.sub(r"[^a-z0-9]+", "_", n.lower()).strip("_")[:40]
        return rn[n]

    tn = {t.name: f"T{i}_" + re.sub(r"[^A-Z0-9]+", "_", t.name.upper()).strip("_")[:40]
          for i, t in enumerate(g.terminals)}
    lines = []
    ign = [tn[t.name] for t in g.terminals if t.ignored]
    if lead_ignored and ign:
        rn["start"] = "r_orig_start"
        lines.append(f"start: _llg_lead {rname(g.start)} _llg_lead")
        lines.append(f"_llg_lead: ({' | '.join(ign)})*")
    elif g.start != "start":
        lines.append(f"start: {rname(g.start)}")
    by_lhs: dict[str, list[tuple[str, ...]]] = {}
    for r in g.rules:
        by_lhs.setdefault(str(r.lhs), []).append(r.rhs)
    for lhs, alts in by_lhs.items():
        body = [" ".join(tn[s] if s in tn else rname(s) for s in rhs) for rhs in alts if rhs]
        empty = any(not rhs for rhs in alts)
        if not body:
            raise NotAvailable(f"rule {lhs} derives only the empty string")
        text = " | ".join(body)
        lines.append(f"{rname(lhs)}: ({text})?" if empty else f"{rname(lhs)}: {text}")
    for t in g.terminals:
        m = re.fullmatch(r"\(\?([a-z]+):(.*)\)", t.pattern, re.S)
        flags, pat = (m.group(1), m.group(2)) if m else ("", t.pattern)
        if t.is_string:
            value = re.sub(r"\\(.)", r"\1", pat, flags=re.S)
            lines.append(f"{tn[t.name]}: {json.dumps(value)}{'i' if 'i' in flags else ''}")
        else:
            lines.append(f"{tn[t.name]}: /{_lark_regex(t.pattern)}/")
    for t in g.terminals:
        if t.ignored:
            lines.append(f"%ignore {tn[t.name]}")
    return "\n".join(lines) + "\n"


class LLGuidanceEngine:
    name = "llguidance"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar == "python":
            raise NotAvailable(
                "no INDENT/DEDENT in llguidance (its issue #107) and no Lark templates "
                "('params not supported yet' on python.lark's _params{p, sp})")
        import llguidance

        t0 = time.perf_counter()
        self.tok = args.real_tok[vname].lltokenizer()
        t1 = time.perf_counter()
        g = Grammar.from_lark(grammar_text(grammar), start=START.get(grammar, "start"))
        text, notes = _llg_grammar_text(grammar, [t.name for t in g.terminals if t.ignored])
        self.grammar = llguidance.LLMatcher.grammar_from_lark(text)
        is_err, msgs = llguidance.LLMatcher.validate_grammar_with_warnings(self.grammar, self.tok)
        form = "the bundled Lark text"
        if is_err:
            # e.g. "params not supported yet" (Lark templates): give llguidance the same grammar
            # as plain BNF, expanded by lark's loader exactly as gramask sees it.
            first = " | ".join(msgs)[:160].replace("\n", " ")
            self.grammar = llguidance.LLMatcher.grammar_from_lark(flat_lark(g))
            is_err, msgs = llguidance.LLMatcher.validate_grammar_with_warnings(
                self.grammar, self.tok)
            if is_err:
                raise NotAvailable("llguidance rejects the grammar: " + " | ".join(msgs)[:300])
            form = "lark-expanded BNF (the bundled text fails: " + first + ")"
            notes = ["terminal priorities dropped for llguidance", LEAD_NOTE]
        res.notes.extend(notes)
        res.notes.append(f"llguidance grammar: {form}")
        self.limits = None
        if args.llg_step_max_items:
            self.limits = llguidance.LLParserLimits(step_max_items=args.llg_step_max_items)
        # 0 / None: llguidance's own default limits
            res.notes.append(f"llguidance step_max_items={args.llg_step_max_items}")
        m = llguidance.LLMatcher(self.tok, self.grammar, log_level=0, limits=self.limits)
        t2 = time.perf_counter()
        if m.is_error():
            raise NotAvailable("llguidance matcher error: " + m.get_error()[:300])
        res.setup_s = t2 - t1
        tok_note = (f"+{t1 - t0:.2f} s tokenizer" if t1 - t0 > 0.01 else "tokenizer cached")
        res.setup_note = f"grammar + matcher ({tok_note})"
        if self.tok.vocab_size != len(vocab):
            res.notes.append(f"llguidance vocab_size {self.tok.vocab_size} != {len(vocab)}")
        self.words = (max(self.tok.vocab_size, len(vocab)) + 31) // 32

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        import llguidance

        return LLGuidanceSession(
            llguidance.LLMatcher(self.tok, self.grammar, log_level=0, limits=self.limits),
            self.words, ctx.V)


class LLGuidanceSession:
    def __init__(self, m: Any, words: int, v: int) -> None:
        self.m, self.v = m, v
        self.bm = np.zeros(words, dtype=np.int32)
        self.ptr, self.nbytes = self.bm.ctypes.data, self.bm.nbytes
        self.compute = m.unsafe_compute_mask_ptr
        self.consume = m.consume_token

    def mask(self) -> None:
        self.compute(self.ptr, self.nbytes)

    def advance(self, token: int) -> str | None:
        if self.consume(token):
            return None
        return f"consume_token({token}) failed: {self.m.get_error().splitlines()[0][:200]}"

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm, self.v)

    def error(self) -> str | None:
        return self.m.get_error().splitlines()[0][:200] if self.m.is_error() else None

    def accepts(self, token: int) -> bool | None:
        return bool(self.m.deep_copy().consume_token(token))


# ---------------------------------------------------------------------------- XGrammar
