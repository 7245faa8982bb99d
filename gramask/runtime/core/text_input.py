"""What a user passes as text (a prefix, a suffix) as UTF-8 bytes, checked the same way on
every path that takes one (prefix-only, fill-in-the-middle, budgets, both lexer modes)."""

from __future__ import annotations

from ...errors import InvalidPrefixError, InvalidSuffixError

__all__ = ["text_bytes"]


def text_bytes(value: object, what: str = "prefix") -> bytes:
    """``value`` (the ``prefix`` or the ``suffix``) as UTF-8 bytes, checked the same way on
    every path (prefix-only, fill-in-the-middle, budgets, both lexer modes).

    Raises
    ------
    TypeError
        Not ``str`` or bytes-like (an int would otherwise be read as that many NUL bytes, a
        list of ints as bytes).
    InvalidPrefixError, InvalidSuffixError
        Text that has no UTF-8 encoding (a lone surrogate), at its byte offset.
    """
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as e:
            at = len(value[: e.start].encode("utf-8"))
            err = InvalidSuffixError if what == "suffix" else InvalidPrefixError
            raise err(
                f"the {what} is not valid Unicode text ({e.reason}: {value[e.start]!r})",
                position=at,
            ) from None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"a {what} must be str or bytes, not {type(value).__name__}")
