"""outlines-core as a benchmark engine: JSON through a bounded-depth regex (it has no CFG)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from bench.documents import Doc, json_depth
from bench.harness import Ctx, NotAvailable, Result, Session, _bits_to_bool

WS = r"[ \t\n\r]*"
J_STR = r'"([^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
J_NUM = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"
J_SCALAR = f"({J_STR}|{J_NUM}|true|false|null)"


def json_regex(depth: int) -> str:
    """RFC 8259 JSON (same terminals as json.lark) with container nesting <= ``depth``."""

    def value(d: int) -> str:
        if d == 0:
            return J_SCALAR
        inner = value(d - 1)
        member = f"{J_STR}{WS}:{WS}{inner}{WS}"
        obj = rf"\{{{WS}({member}(,{WS}{member})*)?\}}"
        arr = rf"\[{WS}({inner}{WS}(,{WS}{inner}{WS})*)?\]"
        return f"({J_SCALAR}|{obj}|{arr})"

    return f"{WS}{value(depth)}{WS}"


class OutlinesEngine:
    name = "outlines"
    reference = False

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        if grammar != "json":
            raise NotAvailable("no CFG support (regex / JSON schema only)")
        import outlines_core as oc

        self.depth = args.outlines_depth
        t0 = time.perf_counter()
        d: dict[bytes, list[int]] = {}
        for i in range(len(vocab)):
            if not vocab.is_special(i):
                d.setdefault(vocab.token_bytes(i), []).append(i)
        ov = oc.Vocabulary(vocab.eos_token_id, d)
        t1 = time.perf_counter()
        self.index = oc.Index(json_regex(self.depth), ov)
        t2 = time.perf_counter()
        res.setup_s = t2 - t1
        res.setup_note = f"Index(JSON regex, depth <= {self.depth}) (+{t1 - t0:.2f} s Vocabulary)"
        res.notes.append(f"outlines: generic JSON regex with nesting depth <= {self.depth}; "
                         f"deeper documents are skipped")
        self.oc = oc

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session | None:
        toks = doc.tokens[ctx.vname]
        text = b"".join(ctx.vocab.token_bytes(t) for t in toks).decode("utf-8", "replace")
        dd = json_depth(text)
        if dd > self.depth:
            res.skipped_docs.append(f"{doc.name} (depth {dd})")
            return None
        return OutlinesSession(self.oc.Guide(self.index), ctx.V)


class OutlinesSession:
    def __init__(self, g: Any, v: int) -> None:
        self.v = v
        self.bm = np.zeros((v + 31) // 32, dtype=np.int32)
        self.ptr, self.numel = self.bm.ctypes.data, self.bm.size
        self.write = g.write_mask_into
        self.adv = g.advance

    def mask(self) -> None:
        self.write(self.ptr, self.numel, 4)

    def advance(self, token: int) -> str | None:
        try:
            self.adv(token, return_tokens=False)
        except ValueError as e:
            return f"advance({token}) failed: {e}"
        return None

    def mask_bool(self) -> np.ndarray:
        return _bits_to_bool(self.bm, self.v)

    def error(self) -> str | None:
        return None

    def accepts(self, token: int) -> bool | None:
        return None
