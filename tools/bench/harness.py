"""What every engine is run through: the session/engine protocols, the per-step timing, and the
step-by-step mask comparison with gramask."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from bench.common import now_ns
from bench.documents import Doc


class NotAvailable(Exception):
    pass


@dataclass
class Result:
    engine: str
    grammar: str
    vocab: str
    setup_s: float | None = None
    setup_note: str = ""
    mask_ns: list[int] = field(default_factory=list)
    step_ns: list[int] = field(default_factory=list)
    masks: int = 0
    compared: int = 0
    disagree_steps: int = 0
    disagree_text_steps: int = 0  # steps where some grammar-text token differs
    slowest: list[tuple[int, str, int, bytes]] = field(default_factory=list)
    disagree_kinds: dict[str, int] = field(default_factory=dict)
    examples: list[dict] = field(default_factory=list)
    example_sigs: set = field(default_factory=set)
    rejected: list[str] = field(default_factory=list)  # true token not allowed
    errors: list[str] = field(default_factory=list)
    gc_pauses: list[tuple[int, float]] = field(default_factory=list)  # (generation, seconds)
    skipped_docs: list[str] = field(default_factory=list)
    unavailable: str = ""
    notes: list[str] = field(default_factory=list)
    docs: int = 0


def _bits_to_bool(words: np.ndarray, v: int) -> np.ndarray:
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:v].astype(bool)


class Ctx:
    """What every engine pass gets: the vocabulary, the document tokens and gramask's masks."""

    def __init__(self, vocab: Any, grammar: str, vname: str, args: Any) -> None:
        self.vocab = vocab
        self.V = len(vocab)
        self.grammar = grammar
        self.vname = vname
        self.args = args
        self.eos = vocab.eos_token_id
        self.special = np.zeros(self.V, dtype=bool)
        self.special[sorted(vocab.special_ids)] = True
        self.ref: list[np.ndarray] | None = None  # gramask's packed masks for the current doc


def compare(res: Result, ctx: Ctx, doc: Doc, step: int, other: np.ndarray, toks: list[int],
            accepts: Callable[[int], bool] | None = None):
    """Compare an engine's bool mask with gramask's at ``step``; record the difference.

    ``accepts(t)``: does the engine's own matcher (a copy at this step) accept token ``t``? For
    tokens only gramask allows, that tells a language difference (the engine rejects the token
    outright) from a mask that disagrees with the engine's own matcher."""
    if ctx.ref is None or step >= len(ctx.ref):
        return
    ref = np.unpackbits(ctx.ref[step], bitorder="little")[: ctx.V].astype(bool)
    res.compared += 1
    if np.array_equal(ref, other):
        return
    res.disagree_steps += 1
    diff = ref != other
    if (diff & ~ctx.special).any():
        res.disagree_text_steps += 1
    g_only = np.flatnonzero(diff & ref)
    o_only = np.flatnonzero(diff & other)
    kinds = set()
    for ids, who in ((g_only, "gramask-only"), (o_only, f"{res.engine}-only")):
        if len(ids) == 0:
            continue
        is_eos = ids == ctx.eos
        is_sp = ctx.special[ids] & ~is_eos
        if is_eos.any():
            kinds.add(f"EOS {who}")
        if is_sp.any():
            kinds.add(f"special {who}")
        if (~is_eos & ~is_sp).any():
            kinds.add(f"text {who}")
    if accepts is not None and len(g_only):
        text_ids = [int(t) for t in g_only if not ctx.special[t]][:16]
        acc = [t for t in text_ids if accepts(t)]
        if acc:
            kinds.add(f"text gramask-only that {res.engine}'s own matcher accepts (its mask "
                      f"omits them)")
    for k in kinds:
        res.disagree_kinds[k] = res.disagree_kinds.get(k, 0) + 1
    sig = tuple(sorted(kinds))
    new_kind = sig not in res.example_sigs and len(res.example_sigs) < 8
    if len(res.examples) < ctx.args.examples or new_kind:
        res.example_sigs.add(sig)
        text = b"".join(ctx.vocab.token_bytes(t) for t in toks[:step])
        nxt = ctx.vocab.token_bytes(toks[step]) if step < len(toks) else b"<end>"

        def ex(ids: np.ndarray) -> list:
            return [(int(i), ctx.vocab.token_bytes(int(i))) for i in ids[:6]]

        res.examples.append({
            "doc": doc.name,
            "step": step,
            "before": text[-50:],
            "next": nxt,
            "gramask_only": len(g_only),
            "gramask_only_examples": ex(g_only),
            "other_only": len(o_only),
            "other_only_examples": ex(o_only),
            "kinds": sorted(kinds),
        })


# ---------------------------------------------------------------------------- engines
#
# An engine is one class with ``compile`` (once per grammar × vocabulary; raises NotAvailable
# when it cannot express the grammar) and ``start`` (a Session for one document, or None to
# skip it). A Session is the per-document matcher: ``mask`` (the timed mask call), ``advance``
# (the timed advance call; returns why it failed, or None). ``run_doc`` is the one loop that
# times, checks and compares them. Adding an engine is one class and one ENGINE_CLASSES line;
# adding a grammar is one line in GRAMMARS plus its documents in build_docs.


class Session(Protocol):
    def mask(self) -> None:
        """Compute the next-token mask (timed: nothing else may happen here)."""

    def advance(self, token: int) -> str | None:
        """Consume ``token`` (timed); None, or why the engine refused it."""

    def mask_bool(self) -> np.ndarray:
        """The last mask as a bool array over the vocabulary (not timed)."""

    def error(self) -> str | None:
        """An engine error after ``mask`` that ends the document, else None."""

    def accepts(self, token: int) -> bool | None:
        """Does a copy of the engine's own matcher accept ``token`` here? (None: unknown)"""


class Engine(Protocol):
    name: str
    reference: bool  # its masks are the ones the other engines are compared with

    def compile(self, grammar: str, vname: str, vocab: Any, args: Any, res: Result) -> None:
        """Build what every document of this cell shares; raise NotAvailable if impossible."""

    def start(self, ctx: Ctx, doc: Doc, res: Result) -> Session | None:
        """A fresh matcher for ``doc`` (None: skip it, with the reason in ``res``)."""


def run_doc(engine: Engine, ctx: Ctx, doc: Doc, res: Result) -> None:
    """Force ``doc``'s true tokens through ``engine``: time each mask and step, check that the
    true token is allowed, and compare the masks with the reference engine's."""
    s = engine.start(ctx, doc, res)
    if s is None:
        return
    toks = doc.tokens[ctx.vname]
    ref: list[np.ndarray] | None = None
    if engine.reference:
        ref = ctx.ref = []
    n = len(toks)
    for i in range(n + 1):
        t0 = now_ns()
        s.mask()
        t1 = now_ns()
        res.mask_ns.append(t1 - t0)
        err = s.error()
        if err is not None:
            res.errors.append(f"{doc.name} step {i}: {err}")
            return
        mask = s.mask_bool()
        if ref is not None:
            ref.append(np.packbits(mask, bitorder="little"))
        else:
            compare(res, ctx, doc, i, mask, toks, accepts=s.accepts)
        if i == n:
            break
        t = toks[i]
        if not mask[t]:
            res.rejected.append(f"{doc.name} step {i}: mask excludes true token {t} "
                                f"{ctx.vocab.token_bytes(t)!r}")
        t2 = now_ns()
        why = s.advance(t)
        t3 = now_ns()
        if why is not None:
            res.rejected.append(f"{doc.name} step {i}: {why}")
            return
        res.step_ns.append(t1 - t0 + t3 - t2)
    res.masks = len(res.mask_ns)
    finish = getattr(s, "finish", None)
    if finish is not None and doc.full:
        note = finish()
        if note:
            res.notes.append(f"{doc.name}: {note}")


# ---------------------------------------------------------------------------- gramask
