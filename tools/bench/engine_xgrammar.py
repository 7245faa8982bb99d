"""XGrammar as a benchmark engine: its builtin JSON grammar and its Lark front end."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.documents import Doc
from bench.harness import Ctx, NotAvailable, Result, Session, _bits_to_bool


class XGrammarEngine:
    name = "xgrammar"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar == "python":
            raise NotAvailable("no Python grammar: python.lark needs INDENT/DEDENT from a lexer; "
                               "XGrammar's EBNF is character-level")
        if grammar == "c":
            raise NotAvailable(
                "c.lark relies on its lexer (keywords reserved against IDENTIFIER, ignored "
                "whitespace/comments/preprocessor lines between any two tokens) and on Lark "
                "templates; XGrammar's EBNF is character-level, no faithful translation")
        if grammar == "sql":
            raise NotAvailable(
                "sql.lark relies on its lexer (case-insensitive keywords reserved against "
                "IDENTIFIER by longest match + priority, %ignore WS/comments between any two "
                "tokens); XGrammar's EBNF is character-level, no faithful translation")
        import xgrammar as xgr

        t0 = time.perf_counter()
        toks = [b"" if vocab.is_special(i) else vocab.token_bytes(i) for i in range(len(vocab))]
        stop = [vocab.eos_token_id] if vocab.eos_token_id is not None else None
        self.ti = xgr.TokenizerInfo(toks, xgr.VocabType.RAW, vocab_size=len(vocab),
                                    stop_token_ids=stop)
        t1 = time.perf_counter()
        comp = xgr.GrammarCompiler(self.ti, max_threads=2, cache_enabled=False)
        self.compiled = comp.compile_builtin_json_grammar()
        t2 = time.perf_counter()
        res.setup_s = t2 - t1
        res.setup_note = (f"compile_builtin_json_grammar (+{t1 - t0:.2f} s TokenizerInfo from "
                          f"gramask's token bytes)")
        res.notes.append("XGrammar builtin JSON grammar: top level must be an object or array, "
                         "no leading whitespace")
        self.xgr = xgr

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        return XGrammarSession(self.xgr, self.xgr.GrammarMatcher(self.compiled), ctx.V)


class XGrammarSession:
    def __init__(self, xgr: Any, m: Any, v: int) -> None:
        self.m, self.v = m, v
        self.bm = xgr.allocate_token_bitmask(1, v)
        self.bm_np = self.bm.numpy()
        self.fill = m.fill_next_token_bitmask
        self.accept = m.accept_token

    def mask(self) -> None:
        self.fill(self.bm)

    def advance(self, token: int) -> str | None:
        return None if self.accept(token) else f"accept_token({token}) failed"

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm_np[0], self.v)

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return bool(self.m.fork().accept_token(token))


# ---------------------------------------------------------------------------- outlines-core
