"""The incremental lexer's byte loop, one copy for every walk of the runtime.

A walk feeds bytes to the lexer DFA; where a byte ends the lexeme in progress (greedy longest
match, docs/semantics.md) the finished lexeme goes to the parser side
(:meth:`ParserContext.end_lexeme`) and the byte starts the next one. Alongside, the *carry* is
the width of the current line's leading whitespace so far (Python indentation): a newline
resets it, a space adds 1, a tab adds the tab width — one lookup in :func:`~.indentation.indent_widths`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .indentation import advance

if TYPE_CHECKING:
    from .masks import MaskBuilder
    from .parse_state import PState

__all__ = ["walk"]

def walk(b: MaskBuilder, st: tuple[int, int, PState], data: bytes, tab: int,
         check_end: bool = True) -> tuple[int, int, PState] | int:
    """Feed ``data`` to the lexer and the parser of ``b`` from ``st`` = (lexer state, carry,
    parser state): the new state, or the offset where the offending lexeme starts. With
    ``check_end``, the lexeme still in progress must be able to end as a terminal the parser
    takes."""
    q, carry, p = st
    lex_start = 0
    rows, accept, end_lexeme = b.trans_rows, b.accept, b.ctx.end_lexeme
    for i, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0:
            a = accept[q]
            if a < 0 or q == 0:
                return i  # no lexeme can take this byte
            p2 = end_lexeme(p, a, carry)
            if p2 is None:
                return lex_start
            p = p2
            carry = 0
            lex_start = i
            nq = rows[0][byte]
            if nq < 0:
                return i
        q = nq
        if byte <= 32:
            carry = advance(carry, byte)
    if check_end and q != 0 and not b.end_ok(p, q):
        return lex_start
    return (q, carry, p)
