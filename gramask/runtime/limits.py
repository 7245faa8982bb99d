"""``RuntimeLimits``: every bound the runtime enforces, in one frozen, documented place.

Two kinds. *Memo bounds* cap the shared memo tables of one compiled grammar's runtime (hash-
consed Earley sets and parser states, next-state memos, prepared table rows, whole masks):
exceeding them only forgets entries, which costs recomputation, never correctness.
*Hard limits* stop a constraint whose parse grows without bound, as a highly ambiguous
grammar does (``s: s s | "a"``: the Earley set after n tokens holds about n items, so steps
slow down linearly and memory grows quadratically). They raise
:class:`~gramask.LimitExceededError` from ``allowed()``, ``advance()`` or ``constraint()``,
like llguidance's ``step_max_items``. The bundled grammars stay far below them: an Earley set
of the Python grammar holds a few dozen items.

This module imports nothing heavy: it is part of the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import LimitExceededError

__all__ = ["RuntimeLimits", "check_suffix_size", "memo_size"]


def memo_size(entries: int) -> int:
    """Capacity per generation of a :class:`~gramask.runtime.memo.BoundedMemo` holding at
    most ``entries`` entries."""
    return max(1, entries // 2)


@dataclass(frozen=True, slots=True)
class RuntimeLimits:
    """Bounds of one compiled grammar's runtime; pass to ``CompiledGrammar.constraint``.

    Attributes
    ----------
    max_items_per_step:
        Earley items in one parser set (one position of the text). Exceeding it raises
        :class:`~gramask.LimitExceededError`. A step costs about linear time in this; the
        Python grammar's sets hold at most a few dozen items.
    max_total_items:
        Earley items summed over the sets on the path to the current one (one set per
        lexeme; a set shared with earlier text counts where it was first built): a proxy for
        a constraint's memory, about 300 bytes per item, so the default is ~75 MB. The
        Python grammar stays under 2,000 on 60 KB files. Exceeding it raises
        :class:`~gramask.LimitExceededError`.
    interned_sets:
        Hash-consed Earley sets kept for sharing (memo bound, like all below: at most this
        many entries, the least recently used half is forgotten first).
    step_memo:
        Remembered (set, terminal) → next set transitions.
    parser_states:
        Hash-consed parser states (Earley set + indentation); the next-state memo holds
        twice as many.
    row_cache:
        Prepared table rows and kill sets (memo bound; each about one vocabulary-sized
        array).
    mask_cache:
        Whole masks (each one vocabulary-sized bool array: 150 KB for a 150k vocabulary, so
        the default holds up to ~38 MB).
    max_suffix_bytes:
        Length of a fill-in-the-middle suffix (hard limit, checked before any work, so an
        oversized suffix fails in microseconds). Setup costs about 0.5-1 KB of memory and
        10-30 µs per suffix byte (lexing, the backward parse, the lexeme lattice of the
        contextual mode), so the default, 256 KiB, keeps one request under ~250 MB; code
        after a cursor is rarely longer. Raise it for longer suffixes (or cut the suffix at
        a statement boundary: only the part the middle must connect to matters).
    max_quotient_rules:
        Rules of the grammar's right quotient by one suffix (hard limit, checked while they
        are built). Each bracket, block or call left open *in the suffix* (a ``)`` whose
        ``(`` the middle must write) adds the whole chain of nonterminals that can end
        there: about 300 rules on the C grammar, 600 on Python. Cuts of real Python files
        need a few thousand (median 2,000, at most 5,600 over 63 stdlib cuts); the default,
        50,000, stops ~80 open Python brackets after about a second instead of minutes and
        gigabytes.
    """

    max_items_per_step: int = 10_000
    max_total_items: int = 250_000
    interned_sets: int = 60_000
    step_memo: int = 120_000
    parser_states: int = 60_000
    row_cache: int = 96
    mask_cache: int = 256
    max_suffix_bytes: int = 262_144
    max_quotient_rules: int = 50_000

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"RuntimeLimits.{name} must be a positive int, got {v!r}")


def check_suffix_size(suffix: bytes, limits: RuntimeLimits) -> None:
    """Refuse a suffix longer than ``limits.max_suffix_bytes`` before any work is done.

    Raises
    ------
    LimitExceededError
        Naming the suffix's size, the limit and how to raise it.
    """
    if len(suffix) > limits.max_suffix_bytes:
        raise LimitExceededError(
            f"the suffix is {len(suffix):,} bytes, over RuntimeLimits.max_suffix_bytes="
            f"{limits.max_suffix_bytes:,}: pass limits=gramask.RuntimeLimits("
            f"max_suffix_bytes={len(suffix)}) to constraint() to accept it (fill-in-the-middle "
            "setup costs about 0.5-1 KB of memory per suffix byte), or cut the suffix shorter",
            limit="max_suffix_bytes", value=len(suffix),
        )
