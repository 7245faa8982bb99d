"""Why one token is allowed or forbidden after a prefix (``gramask mask --explain TOKEN``).

A mask says *that* a token is refused; a person debugging a grammar needs *why*. The causes
are checked from the outside in, each with the constraint that lacks the next ingredient:

* ``budget``  — the grammar allows it, but the program could not be finished in time after it;
* ``suffix``  — the prefix alone allows it, but no middle starting with it meets the suffix;
* ``lexing``  — its bytes do not lex from the lexeme in progress (no terminal takes a byte);
* ``parsing`` — it lexes, but a terminal it completes is not one the parser takes here.

What a token "lexes to" is read with the greedy lexer DFA (as ``gramask mask`` groups tokens);
in the contextual lexer mode the runtime may cut lexemes differently, and what the parser
takes after the token's first lexemes is only told in the basic mode.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from .compiled import CompiledGrammar
from .errors import BudgetError, GramaskError, NoCompletionError
from .mask_report import lex_pieces
from .runtime.core.earley import EXPECTED
from .runtime.core.parse_state import ES

__all__ = ["TokenExplanation", "UnknownTokenError", "explain_token", "resolve_token"]


class UnknownTokenError(GramaskError, ValueError):
    """The text given for a token is no token of the vocabulary."""


@dataclass(frozen=True)
class TokenExplanation:
    """The verdict on one token and its reason.

    ``reason`` is ``"allowed"``, ``"eos"`` (EOS refused: the program is not complete),
    ``"special"``, ``"budget"``, ``"suffix"``, ``"lexing"`` or ``"parsing"``; ``message`` says
    it in a sentence; ``lexes_to`` is what the token's bytes lex to from the current lexer
    state (``"RSQB COMMA…"``); ``parser_expects`` the terminals the parser takes next.
    """

    token_id: int
    token: str
    allowed: bool
    reason: str
    message: str
    lexes_to: str = ""
    parser_expects: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, object]:
        return {"token_id": self.token_id, "token": self.token, "allowed": self.allowed,
                "reason": self.reason, "message": self.message, "lexes_to": self.lexes_to,
                "parser_expects": list(self.parser_expects)}


def resolve_token(cg: CompiledGrammar, spec: str) -> int:
    """The token id a person means by ``spec``: the token's exact text (``']'``, ``' b'``), the
    same with backslash escapes (``'\\n'``), ``EOS``/``<EOS>`` for the end of sequence, or
    ``#123`` / ``id:123`` for an id.

    Raises
    ------
    UnknownTokenError
        No token of the vocabulary is exactly that text.
    """
    v = cg.vocab
    low = spec.lower()
    for tag in ("#", "id:"):
        if low.startswith(tag) and spec[len(tag):].isdigit():
            n = int(spec[len(tag):])
            if n >= len(v):
                raise UnknownTokenError(f"--explain {spec}: the vocabulary has {len(v)} tokens "
                                        f"(ids 0–{len(v) - 1})")
            return n
    found = v.token_id(spec)
    if found is not None:
        return found
    if spec in ("EOS", "<EOS>") and v.eos_token_id is not None:
        return v.eos_token_id
    try:
        unescaped = codecs.decode(spec, "unicode_escape") if "\\" in spec else None
    except UnicodeDecodeError:
        unescaped = None
    if unescaped is not None and (i := v.token_id(unescaped)) is not None:
        return i
    raise UnknownTokenError(
        f"--explain {spec!r}: no token of the vocabulary is exactly this text (give a token's "
        "text, e.g. ']' or ' b', '\\n' for a newline, EOS, or #ID for a token id)"
    )


def explain_token(cg: CompiledGrammar, token_id: int, prefix: str = "",
                  suffix: str | None = None, max_tokens: int | None = None) -> TokenExplanation:
    """Why ``token_id`` is allowed or forbidden after ``prefix`` (and before ``suffix``,
    within ``max_tokens``). Builds the constraint itself, and the ones without the budget
    and without the suffix to tell the causes apart."""
    v = cg.vocab
    c = cg.constraint(prefix=prefix, suffix=suffix, max_tokens=max_tokens)
    why = c.explain()
    expects = tuple(why["parser_expects"])
    shown = _show_list(expects)
    text = "<EOS>" if token_id == v.eos_token_id else repr(
        v.token_bytes(token_id).decode("utf-8", "replace"))
    if token_id == v.eos_token_id:
        ok = c.is_allowed(token_id)
        whole = "prefix + suffix" if suffix is not None else "the prefix"
        try:
            expects_now = f"a completion such as {c.shortest_completion().text!r}"
        except (NotImplementedError, GramaskError):
            expects_now = shown if suffix is None else "more text"
        msg = (f"EOS is allowed: {whole} is a complete program" if ok else
               f"EOS is forbidden: {whole} is not a complete program yet; it needs "
               f"{expects_now}")
        return TokenExplanation(token_id, text, ok, "allowed" if ok else "eos", msg, "<EOS>",
                                expects)
    if v.is_special(token_id) or not v.token_bytes(token_id):
        return TokenExplanation(token_id, text, False, "special",
                                f"{text} is a special token: it never carries grammar text",
                                "", expects)
    data = v.token_bytes(token_id)
    pieces, lex_error = lex_pieces(cg, int(why["lexer_state"]), data)
    lexes_to = " ".join(label for _, label in pieces)
    if c.is_allowed(token_id):
        return TokenExplanation(token_id, text, True, "allowed",
                                f"{text} is allowed: it lexes to {lexes_to or '(nothing)'}",
                                lexes_to, expects)
    if max_tokens is not None:
        free = cg.constraint(prefix=prefix, suffix=suffix)
        if free.is_allowed(token_id):
            return TokenExplanation(token_id, text, False, "budget",
                                    _budget_message(free, token_id, text, c.remaining_tokens),
                                    lexes_to, expects)
    if suffix is not None:
        alone = cg.constraint(prefix=prefix)
        if alone.is_allowed(token_id):
            return TokenExplanation(
                token_id, text, False, "suffix",
                f"{text} is forbidden by the suffix: after the prefix alone it is allowed "
                f"(it lexes to {lexes_to}), but no middle that starts with it connects to the "
                "code after the cursor", lexes_to, expects)
    if lex_error is not None:
        at, byte_reason = lex_error
        return TokenExplanation(
            token_id, text, False, "lexing",
            f"{text} cannot be lexed here: {byte_reason} (byte {at} of the token"
            + (f", after {lexes_to}" if lexes_to else "") + ")", lexes_to, expects)
    return TokenExplanation(token_id, text, False, "parsing",
                            _parsing_message(cg, prefix, data, pieces, text, shown),
                            lexes_to, expects)


def _show_list(names: tuple[str, ...], most: int = 12) -> str:
    return (", ".join(names[:most]) + (f", ... ({len(names)} in all)" if len(names) > most
                                       else "")) or "nothing more"


def _budget_message(free: object, token_id: int, text: str, left: int | None) -> str:
    """The budget's verdict: how many tokens the completion after the token needs."""
    from .runtime.core.constraint import Constraint

    assert isinstance(free, Constraint) and left is not None
    after = free.clone()
    after.advance(token_id)
    try:
        need: int | None = after.min_tokens_to_complete()
    except (BudgetError, NoCompletionError, NotImplementedError, GramaskError):
        need = None
    rest = left - 1
    head = (f"{text} is forbidden by the budget: the grammar allows it, but with {left} "
            f"token{'s' if left != 1 else ''} left")
    if need is None:
        return head + ", gramask finds no completion after it to plan with"
    if need > rest:
        return (head + f", finishing after it needs {need} more token{'s' if need != 1 else ''}"
                f" ({rest} would be left)")
    return (head + f", the completion gramask plans after it takes {need} of the {rest} that "
            "would be left, but its bound (lexemes spelled one by one) does not fit; budgets "
            "may forbid such tokens, never allow one that strands (docs/semantics.md)")


def _parsing_message(cg: CompiledGrammar, prefix: str, data: bytes,
                     pieces: list[tuple[int, str]], text: str, shown: str) -> str:
    """Name the lexeme the parser refuses and what it takes instead: the walk of the
    prefix-only constraint returns the offset in the token where the offending lexeme
    starts."""
    alone = cg.constraint(prefix=prefix)
    at = alone._walk(alone._history[-1], data)
    if not isinstance(at, int):  # the prefix alone takes it: refused by what else
        return f"{text} lexes to {' '.join(lab for _, lab in pieces)}, but is refused here"
    k = max((j for j, (start, _) in enumerate(pieces) if start <= at), default=0)
    refused = pieces[k][1].rstrip("…") if pieces else "?"
    expects = _expects_after(alone, data[:at]) if k > 0 else None
    instead = _show_list(expects) if expects else shown
    after = ("after " + " ".join(lab for _, lab in pieces[:k])) if k > 0 and expects is not None else "here"
    return (f"{text} lexes to {' '.join(lab for _, lab in pieces)}: {after} the parser "
            f"takes {instead or 'nothing more'}, not {refused}")


def _expects_after(c: object, head: bytes) -> tuple[str, ...] | None:
    """The terminals the parser takes once ``head`` (ending at a lexeme boundary) is read,
    the lexeme in progress ended; None where this cannot be told (the contextual mode)."""
    from .runtime.core.constraint import Constraint
    from .runtime.core.lexing import walk

    assert isinstance(c, Constraint)
    b = c._b
    if b.contextual is not None:
        return None
    st = walk(b, c._history[-1], head, c._tab, check_end=False)
    if isinstance(st, int):
        return None
    q, carry, p = st
    if q:
        a = int(b.accept[q])
        ended = b.ctx.end_lexeme(p, a, carry) if a >= 0 else None
        if ended is None:
            return None
        p = ended
    auto = b.ctx.automaton
    return tuple(auto.symbols[t] for t in range(auto.num_terminals) if (p[ES][EXPECTED] >> t) & 1)
