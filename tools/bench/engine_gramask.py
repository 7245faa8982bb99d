"""gramask as a benchmark engine: one CompiledGrammar per (grammar, vocabulary) cell, one
Constraint per document."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import gramask
from bench.common import START, grammar_lexer, grammar_text
from bench.documents import Doc
from bench.harness import Ctx, Result, Session
from gramask.grammar import Grammar


class GramaskSession:
    def __init__(self, c: Any) -> None:
        self.c = c
        self.m = np.zeros(0, dtype=bool)

    def mask(self) -> None:
        self.m = self.c.allowed()

    def advance(self, token: int) -> str | None:
        try:
            self.c.advance(token)
        except gramask.TokenRejected as e:
            return str(e)
        return None

    def mask_bool(self) -> np.ndarray:
        return self.m

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return bool(self.c.is_allowed(token))

    def finish(self) -> str | None:
        return None if self.c.is_complete() else "not complete after the whole document"


class GramaskEngine:
    name = "gramask"
    reference = True

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        g = Grammar.from_lark(grammar_text(grammar), start=START.get(grammar, "start"),
                              source=grammar if grammar.endswith(".lark") else f"{grammar}.lark",
                              lexer=grammar_lexer(grammar, args.lexer))
        t0 = time.perf_counter()
        if args.compile_cold:
            self.cg = gramask.compile(g, vocab, cache=False, progress=False)
        else:
            self.cg = gramask.compile(g, vocab, cache=True, cache_dir=args.cache_dir,
                                      progress=False)
        res.setup_s = time.perf_counter() - t0
        if self.cg.info.get("from_cache"):
            bs = self.cg.info.get("build_seconds")
            res.setup_note = f"cache load (cold compile was {bs:.1f} s)" if bs else "cache load"
        else:
            res.setup_note = "cold compile"

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session:
        return GramaskSession(self.cg.constraint())


# ---------------------------------------------------------------------------- llguidance
