"""``gramask demo``: compile Python × a real vocabulary and show a masked completion, a
fill-in-the-middle one (the code after the cursor decides when the middle may end) and one
under a token budget (the program is closed in time)."""

from __future__ import annotations

import argparse
import ast
import time
from pathlib import Path

import numpy as np

from .compiled import CompiledGrammar
from .vocab import Vocabulary, load_vocabulary

__all__ = ["DEMO_PREFIX", "DEMO_TARGET", "WantsText", "cmd_demo"]

DEMO_PREFIX = '''def fibonacci(n: int) -> int:
    """Return the n-th Fibonacci number."""
    if n < 2:
        return n
    return fibonacci(n - 1) + fibonacci('''


DEMO_TARGET = "n - 2]\n"


def _show(vocab: Vocabulary, tok: int) -> str:
    if tok == vocab.eos_token_id:
        return "<EOS>"
    return repr(vocab.token_bytes(tok).decode("utf-8", "replace"))


class _ToyModel:
    """Scores that follow a target text (with a bug in it); after the target, it wants EOS.
    Everything else gets a small score, so the masked choice is visible."""

    def __init__(self, vocab: Vocabulary, target: str, seed: int) -> None:
        self.vocab = vocab
        self.rest = target.encode()
        rng = np.random.default_rng(seed)
        toks = [vocab.token_bytes(i) for i in range(len(vocab))]
        plausible = {b")", b"\n", b")\n", b" ", b"2", b"1"}
        self.base = np.array(
            [(2.0 if t in plausible else rng.random()) if t.isascii() and not
             vocab.is_special(i) else -1.0 for i, t in enumerate(toks)]
        )
        self.toks = toks

    def scores(self) -> np.ndarray:
        s = self.base.copy()
        if self.rest:
            for i, t in enumerate(self.toks):
                if t and self.rest.startswith(t) and not self.vocab.is_special(i):
                    s[i] = 10.0 + len(t)
        elif self.vocab.eos_token_id is not None:
            s[self.vocab.eos_token_id] = 20.0
        return s

    def pick(self, m: np.ndarray) -> tuple[int, int]:
        """(the token the model wants, the most likely one the mask ``m`` allows)."""
        scores = self.scores()
        want = int(np.argmax(scores))
        scores[~m] = -np.inf
        return want, int(np.argmax(scores))

    def took(self, tok: int, want: int) -> None:
        t = self.vocab.token_bytes(want if self.rest.startswith(self.vocab.token_bytes(want))
                                   and want != tok else tok)
        if self.rest.startswith(t):
            self.rest = self.rest[len(t):]


class WantsText:
    """The toy model as a language model (token ids so far -> scores), for ``gramask trace``:
    it follows its target text even where the mask made it take another token."""

    def __init__(self, vocab: Vocabulary, target: str, seed: int = 0) -> None:
        self.toy = _ToyModel(vocab, target, seed)
        self.seen = 0
        self.want: int | None = None

    def __call__(self, ids: list[int]) -> np.ndarray:
        for tok in ids[self.seen:]:
            self.toy.took(tok, self.want if self.want is not None else tok)
        self.seen = len(ids)
        scores = self.toy.scores()
        self.want = int(np.argmax(scores))
        return scores


def cmd_demo(args: argparse.Namespace) -> int:
    import gramask
    from gramask.grammars import load

    vocab_name = args.vocab
    print(f"== compiling the bundled Python grammar against the {vocab_name} vocabulary")
    grammar = load("python")
    vocab = load_vocabulary(vocab_name)
    t0 = time.perf_counter()
    cg = gramask.compile(grammar, vocab, cache=not args.no_cache)
    entry = cg.info.get("cache_path")
    where = f" (cache: {Path(entry).parent})" if isinstance(entry, str) else " (cache off)"
    print(f"   {'loaded from the cache' if cg.info.get('from_cache') else 'compiled'} in "
          f"{time.perf_counter() - t0:.2f} s{where}")
    st = cg.stats()
    print(f"   {st['terminals']} terminals, {st['rules']} rules, {st['lexer_states']} lexer "
          f"states, {st['nonzeros']} table entries ({st['density']:.3%} dense), "
          f"{st['array_bytes'] / 2**20:.1f} MiB of arrays")
    print("\n== a constrained completion, step by step")
    print(f"   a toy model wants to write {DEMO_TARGET!r} (the ']' should be ')');")
    print("   each step takes the model's favourite *allowed* token")
    print("--- prefix ---")
    print(DEMO_PREFIX + "|")
    c = cg.constraint(prefix=DEMO_PREFIX)
    model = _ToyModel(vocab, DEMO_TARGET, seed=args.seed)
    for step in range(args.steps):
        t1 = time.perf_counter()
        m = c.allowed()
        ms = (time.perf_counter() - t1) * 1000
        want, tok = model.pick(m)
        note = "" if tok == want else f"   (model wanted {_show(vocab, want)}: masked)"
        print(f"step {step:2d}: {int(m.sum()):6d} allowed ({ms:5.1f} ms)  → "
              f"{_show(vocab, tok)}{note}")
        c.advance(tok)
        model.took(tok, want)
        if c.is_finished:
            break
    if c.is_finished:
        print("--- completed program (the model chose EOS where the mask allowed it) ---")
    else:
        print(f"--- program so far (cut after {args.steps} steps, before EOS) ---")
    print(DEMO_PREFIX + c.text)
    if c.is_finished:
        try:
            ast.parse(DEMO_PREFIX + c.text)
            print("--- ast.parse: OK")
        except SyntaxError as e:  # pragma: no cover - would be a bug
            print(f"--- ast.parse: {e}")
    else:
        print(f"--- complete program yet: {c.is_complete()} (more --steps to finish it)")
    _demo_fim(cg, vocab, args)
    _demo_budget(cg, vocab, args)
    return 0


DEMO_BUDGET_PREFIX = "def area(shapes):\n    return sum(s.width * s.height for s in shapes"
DEMO_BUDGET_TARGET = " if s.visible and not s.hidden) / len(shapes)\n"


def _demo_budget(cg: CompiledGrammar, vocab: Vocabulary, args: argparse.Namespace) -> None:
    """Token budgets: the mask closes the program in time instead of cutting it."""
    budget = 6
    print(f"\n== a token budget: max_tokens={budget} never ends a program half-written")
    print(f"   a toy model wants to write {DEMO_BUDGET_TARGET!r}, longer than the budget")
    print("--- prefix ---")
    print(DEMO_BUDGET_PREFIX + "|")
    c = cg.constraint(prefix=DEMO_BUDGET_PREFIX, max_tokens=budget)
    sc = c.shortest_completion()
    print(f"--- shortest completion: {sc.text!r} ({len(sc.token_ids)} tokens)")
    model = _ToyModel(vocab, DEMO_BUDGET_TARGET, seed=args.seed)
    while c.remaining_tokens and c.num_tokens < args.steps:
        m = c.allowed()
        want, tok = model.pick(m)
        note = "" if tok == want else f"   (model wanted {_show(vocab, want)}: over budget)"
        print(f"{c.remaining_tokens} left: {int(m.sum()):6d} allowed → {_show(vocab, tok)}{note}")
        c.advance(tok)
        model.took(tok, want)
        if c.is_finished:
            break
    text = DEMO_BUDGET_PREFIX + c.text
    cut = "" if c.is_complete() or not c.remaining_tokens else f", cut by --steps {args.steps}"
    print(f"--- after {c.num_tokens} tokens (complete: {c.is_complete()}{cut}) ---")
    print(text)
    if cut:
        return
    try:
        ast.parse(text)
        print("--- ast.parse: OK")
    except SyntaxError as e:  # pragma: no cover - would be a bug
        print(f"--- ast.parse: {e}")


DEMO_FIM_PREFIX = DEMO_PREFIX.rsplit("fibonacci(", 1)[0] + "fibonacci("
DEMO_FIM_SUFFIX = ")\n\n\nprint(fibonacci(10))\n"


def _demo_fim(cg: CompiledGrammar, vocab: Vocabulary, args: argparse.Namespace) -> None:
    """Fill-in-the-middle: the code after the cursor decides when the middle may end."""
    print("\n== fill-in-the-middle: the code after the cursor constrains the middle")
    print("   a toy model wants to write 'n -' and stop; the suffix starts with ')', so")
    print("   stopping is masked until the middle is a complete argument")
    print("--- prefix | middle | suffix ---")
    print(DEMO_FIM_PREFIX + "|" + "|" + DEMO_FIM_SUFFIX, end="")
    t0 = time.perf_counter()
    c = cg.constraint(prefix=DEMO_FIM_PREFIX, suffix=DEMO_FIM_SUFFIX)
    print(f"--- setup (quotient of the grammar by the suffix): "
          f"{(time.perf_counter() - t0) * 1000:.1f} ms (the first request of a compiled grammar "
          "also builds its reversed automaton)")
    model = _ToyModel(vocab, "n -", seed=args.seed)
    for step in range(args.steps):
        m = c.allowed()
        want, tok = model.pick(m)
        note = "" if tok == want else f"   (model wanted {_show(vocab, want)}: masked)"
        eos = "allowed" if c.is_complete() else "masked "
        print(f"step {step:2d}: {int(m.sum()):6d} allowed, EOS {eos}  → {_show(vocab, tok)}{note}")
        c.advance(tok)
        model.took(tok, want)
        if c.is_finished:
            break
    text = DEMO_FIM_PREFIX + c.text + DEMO_FIM_SUFFIX
    if c.is_finished:
        print("--- completed: prefix + middle + suffix ---")
    else:
        print(f"--- so far (cut after {args.steps} steps, before EOS): prefix + middle + suffix ---")
    print(text, end="")
    if c.is_finished:
        try:
            ast.parse(text)
            print("--- ast.parse: OK")
        except SyntaxError as e:  # pragma: no cover - would be a bug
            print(f"--- ast.parse: {e}")
