"""The indentation carry: the leading whitespace of the current line, as CPython counts it.

CPython's tokenizer measures indentation twice, with tabs to the next multiple of the tab size
(``col``) and with tabs as width 1 (``altcol``), and raises ``TabError`` wherever the two
comparisons against the indentation stack disagree. Both measures follow from the counts of
tabs and spaces when every tab comes before every space (a tab after a space rounds ``col``
by an amount the counts do not tell), so the carry is ``spaces + TAB_UNIT * tabs`` — additive,
and equal to the column for plain spaces — and a tab after a space makes it :data:`BROKEN`:
the newline that would end such a line is refused. That is stricter than CPython for lines
such as ``"  \\t"`` used consistently; CPython's own style guide forbids the mix, and a refused
newline never makes a text that does not parse look complete. A form feed resets the carry,
as it resets both of CPython's measures. The compiler's token tables encode the same counts
(:func:`gramask.encoding.nl_code`); :meth:`ParserContext.newline` compares the two measures.
"""

from __future__ import annotations

from ...encoding import BROKEN, TAB_UNIT, decode_nl

__all__ = ["BROKEN", "NEWLINE", "TAB_UNIT", "advance", "columns", "indent_text", "join",
           "newline_width", "space_pad", "text_carry"]

NEWLINE = 10  # the byte that resets the carry
FORMFEED = 12  # resets it too (CPython: "for Emacs users")


def advance(carry: int, byte: int) -> int:
    """The carry after one more byte (bytes above the space leave it alone)."""
    if byte == 32:
        return carry + 1
    if byte == 9:
        return carry + TAB_UNIT if carry % TAB_UNIT == 0 else BROKEN
    if byte in (NEWLINE, FORMFEED):
        return 0
    return carry


def join(carry: int, seg: int) -> int:
    """The carry of whitespace with carry ``carry`` followed by whitespace with carry
    ``seg`` (no reset in between)."""
    if seg >= TAB_UNIT and carry % TAB_UNIT:
        return BROKEN
    return carry + seg


def newline_width(num_terminals: int, head: int, carry: int) -> int:
    """The width a newline lexeme of node head ``head`` (see ``encoding.nl_code``) gives
    its last line, read from ``carry`` where the head is relative to the token's start."""
    width, relative = decode_nl(num_terminals, head)
    return join(carry, width) if relative else width


def text_carry(data: bytes, carry: int = 0) -> int:
    """The carry after ``data`` read from ``carry``."""
    for b in data:
        if b <= 32:
            carry = advance(carry, b)
    return carry


def columns(width: int, tab: int) -> tuple[int, int] | None:
    """CPython's (col, altcol) of a line whose carry is ``width``; None if broken."""
    if width >= BROKEN:
        return None
    tabs, spaces = divmod(width, TAB_UNIT)
    return tab * tabs + spaces, tabs + spaces


def space_pad(carry: int, level: int) -> int | None:
    """Spaces that take a line from ``carry`` to the indentation ``level`` (None: spaces
    cannot: a different number of tabs, or already past it)."""
    d = level - carry
    # (the same tabs: spaces do not add one, ``TAB_UNIT − 5`` spaces are not a tab)
    same_tabs = level // TAB_UNIT == carry // TAB_UNIT
    return d if d >= 0 and same_tabs and carry < BROKEN else None


def indent_text(level: int) -> bytes:
    """The whitespace that indents a line to ``level`` (tabs first)."""
    tabs, spaces = divmod(level, TAB_UNIT)
    return b"\t" * tabs + b" " * spaces
