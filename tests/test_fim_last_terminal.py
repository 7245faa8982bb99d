"""The boundary's glue as a condition on the middle's last terminal (the quotient, see
gramask/runtime/fim/last_terminal.py): masks lead only into middles from which an end is in
reach, with indentation and ignored blanks where the suffix's first byte would continue a
newline lexeme."""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

import lark
import pytest

import gramask
from tests._support import indenter_oracle, lark_accepts, tiny

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import lark_fuzz as lf
import lark_fuzz_gen as gen

# tools/fim_fuzz.py --indent 1 --seed 7709, case 0 (both modes), minimised. Every statement
# ends in a newline lexeme, which the suffix's blank would continue (and a tab after a space
# breaks that line): only a middle of blanks reaches an end. The middle " ." was allowed,
# and after it whitespace, "." and "do" forever, EOS never again.
DOTS = r"""
start: stmt+
stmt: simple _NEWLINE | "do" T_ARG ":" _NEWLINE _INDENT stmt+ _DEDENT
simple: "." ["0"]
T_ARG: "x"
%ignore /[ \t]+/
_NEWLINE: (/\r?\n[\t ]*/)+
%declare _INDENT _DEDENT
"""
TOKENS = [" ", "\t", ".", "0", "\n", "do", "x", ":", " .", "\n "]


def _allowed(c: gramask.Constraint, vocab: gramask.Vocabulary) -> list[str]:
    return [TOKENS[i] if i != vocab.eos_token_id else "EOS"
            for i in c.allowed().nonzero()[0].tolist()]


def no_dead_end(c: gramask.Constraint, vocab: gramask.Vocabulary, depth: int,
                check: lark.Lark, prefix: str, suffix: str) -> int:
    """Every masked walk of up to ``depth`` tokens from ``c``: the mask is never all False,
    a completion exists after each token and lark takes it; how many tokens were taken."""
    m = c.allowed()
    assert m.any(), c.text
    seen = 0
    for t in m.nonzero()[0].tolist():
        if t == vocab.eos_token_id:
            assert lark_accepts(check, prefix + c.text + suffix), c.text
            continue
        c2 = c.clone()
        c2.advance(t)
        seen += 1
        done = c2.text + c2.shortest_completion().text
        assert lark_accepts(check, prefix + done + suffix), (c2.text, done)
        if depth > 1:
            seen += no_dead_end(c2, vocab, depth - 1, check, prefix, suffix)
    return seen


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_no_middle_whose_last_newline_the_suffixs_blank_would_continue(lexer: str) -> None:
    cg, vocab = tiny(DOTS, TOKENS, lexer=lexer)
    check = indenter_oracle(DOTS)
    assert lark_accepts(check, " \t.\n") and not lark_accepts(check, " .\n \t.\n")
    c = cg.constraint("", suffix=" \t.\n")
    assert _allowed(c, vocab) == [" ", "\t", "EOS"]
    for piece in (".", " .", "do"):
        assert not c.is_allowed(TOKENS.index(piece))
        with pytest.raises(gramask.TokenRejected):
            c.clone().advance(TOKENS.index(piece))
    assert no_dead_end(c, vocab, 3, check, "", " \t.\n") > 0


# The same grammar where the suffix's first byte ends the newline's line (no blank first):
# the middles the condition keeps are lark's, and true middles still end complete.
@pytest.mark.parametrize("lexer", ["basic", "contextual"])
@pytest.mark.parametrize(("prefix", "middle", "suffix"), [
    ("", [".", "\n"], ".\n"),
    ("", ["do", " ", "x", ":", "\n", "\t", ".", "\n"], ".\n"),
    ("do x:\n", ["\t", ".", "0", "\n"], "\t.\n"),
    ("", [" "], " .\n"),
    ("", ["do", "x", ":", "\n"], "\t.\n"),
])
def test_true_middles_still_end_complete(lexer: str, prefix: str, middle: list[str],
                                         suffix: str) -> None:
    cg, vocab = tiny(DOTS, TOKENS, lexer=lexer)
    check = indenter_oracle(DOTS)
    assert lark_accepts(check, prefix + "".join(middle) + suffix)
    c = cg.constraint(prefix, suffix=suffix)
    for piece in middle:
        t = TOKENS.index(piece)
        assert c.is_allowed(t), (piece, c.text)
        c.advance(t)
    assert c.is_complete() and c.allowed()[vocab.eos_token_id]
    assert no_dead_end(cg.constraint(prefix, suffix=suffix), vocab, 2, check, prefix,
                       suffix) > 0


# A property over random requests: random grammars in Python-style blocks with ignored
# blanks (tools/lark_fuzz_gen.py's indented grammars; a `%ignore /[ \t]+/` added where they
# have none), texts lark's Indenter takes cut into prefix / middle / suffix, the suffix
# starting at a blank half the time (where the boundary's glue bites). From the request and
# after every allowed token (and along a random masked walk) the mask is never all False
# and a completion exists, which lark takes or (lark_fuzz's class, docs/semantics.md)
# gramask's own prefix mode calls complete.
def _property_cases(seed: int) -> list[tuple[str, str, str, str]]:
    rnd = random.Random(f"fim-last:{seed}")
    gg = gen.indented_grammar(rnd)
    text = gg.text if "%ignore" in gg.text else gg.text + "%ignore /[ \\t]+/\n"
    out: list[tuple[str, str, str, str]] = []
    for mode in ("basic", "contextual"):
        try:
            p = lf.oracle(text, mode, gen.Indenter())
        except Exception:  # lark refuses the grammar (or resolves conflicts): skipped
            continue
        der = gen.Deriver(p)
        for _ in range(4):
            t = der.text(der.derive(rnd, depth=rnd.randint(2, 6)), rnd, spaced=1.0)
            if not t or len(t) > 80 or not _takes(p, t):
                continue
            i, j = sorted((rnd.randint(0, len(t)), rnd.randint(0, len(t))))
            blanks = [k for k in range(i, len(t)) if t[k] in " \t"]
            if blanks and rnd.random() < 0.5:
                j = rnd.choice(blanks)
            out.append((mode, text, t[:i], t[j:]))
    return out


def _takes(p: lark.Lark, text: str) -> bool:
    try:
        p.parse(text)
    except Exception:  # (lark's Indenter raises more than LarkError on odd newlines)
        return False
    return True


def _check_request(mode: str, text: str, prefix: str, suffix: str, walk: int,
                   rnd: random.Random) -> None:
    p = lf.oracle(text, mode, gen.Indenter())
    chars = sorted(set(prefix + suffix + text) - set("\r") | set(" \t\n"))
    tokens = [c for c in chars if c.isprintable() or c in " \t\n"]
    vocab = gramask.Vocabulary.from_tokens([*tokens, "</s>"], eos_token_id=len(tokens))
    eos = vocab.eos_token_id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg = gramask.compile(gramask.Grammar.from_lark(text, lexer=mode), vocab, cache=False)
    try:
        c = cg.constraint(prefix, suffix=suffix)
    except (gramask.InvalidPrefixError, gramask.InvalidSuffixError):
        return  # a cut gramask's prefix mode and lark judge differently

    def fine(done: str) -> bool:
        whole = prefix + done + suffix
        return _takes(p, whole) or cg.constraint(whole).is_complete()

    for _ in range(walk):
        m = c.allowed()
        assert m.any(), (mode, prefix, c.text, suffix)
        ok = [t for t in m.nonzero()[0].tolist() if t != eos]
        if m[eos]:
            assert fine(c.text), (mode, prefix, c.text, suffix)
        for t in ok:
            c2 = c.clone()
            c2.advance(t)
            assert fine(c2.text + c2.shortest_completion().text), (mode, prefix, c2.text)
        if not ok:
            break
        c.advance(rnd.choice(ok))


# (seed 47, contextual: the suffix " \t \t+\n", a middle whose last newline its blank would
# continue had no completion before the condition)
@pytest.mark.parametrize("seed", [*range(8), 47])
def test_random_indented_requests_have_no_dead_end(seed: int) -> None:
    rnd = random.Random(seed)
    for mode, text, prefix, suffix in _property_cases(seed):
        _check_request(mode, text, prefix, suffix, 5, rnd)
