"""Every exception gramask raises; each also subclasses the builtin it means."""

from __future__ import annotations


class GramaskError(Exception):
    """Root of all gramask errors."""


class GrammarError(GramaskError, ValueError):
    """A grammar cannot be loaded or compiled; names the rule/terminal and where."""

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        context: str | None = None,
        name: str | None = None,
    ) -> None:
        self.line = line
        self.column = column
        self.context = context
        self.name = name
        text = message
        if line is not None:
            text += f" (line {line}" + (f", column {column}" if column is not None else "") + ")"
        if context:
            text += "\n" + context
        super().__init__(text)


def text_position(text: str, pos: int) -> tuple[int, int, str]:
    """Where ``pos`` stands in ``text``: its line and column (from 1) and that line with a
    caret under it, the ``line``/``column``/``context`` of a :class:`GrammarError`."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    shown = text[start: end if end >= 0 else len(text)]
    return text.count("\n", 0, pos) + 1, pos - start + 1, f"{shown}\n{' ' * (pos - start)}^"


class UnsupportedRegexError(GrammarError):
    """A terminal's regex is valid but has no finite automaton (lookaround, backreference)."""


class LexerTooLargeError(GrammarError):
    """The lexer automaton exceeds the states a build may walk (``lazy_fits``: a compile
    without the cache, whose rows are walked as masks need them, allows more states)."""

    def __init__(self, message: str, *, name: str | None = None, lazy_fits: bool = False
                 ) -> None:
        super().__init__(message, name=name)
        self.lazy_fits = lazy_fits


class InvalidRegexError(GrammarError):
    """A terminal's regex does not parse."""


class VocabularyError(GramaskError, ValueError):
    """A vocabulary file or tokenizer cannot be read into exact token bytes."""


class ArtifactError(GramaskError, ValueError):
    """A compiled artifact is corrupt, truncated or not a gramask artifact."""


class ArtifactVersionError(ArtifactError):
    """A compiled artifact was written by an incompatible format version."""


class TokenRejected(GramaskError, ValueError):
    """A token id that the constraint does not allow at this step.

    ``token_id``; ``position``: the byte offset in prefix + generated text where the token
    would have started; ``expected``: the terminals the parser could take there (empty after
    EOS); ``finished``: EOS was already advanced.
    """

    def __init__(
        self,
        message: str,
        *,
        token_id: int | None = None,
        position: int | None = None,
        expected: tuple[str, ...] = (),
        finished: bool = False,
    ) -> None:
        self.token_id = token_id
        self.position = position
        self.expected = expected
        self.finished = finished
        super().__init__(message)


class InvalidPrefixError(GramaskError, ValueError):
    """A prefix (or suffix) that no completion can turn into a member of the language."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        self.position = position
        super().__init__(message if position is None else f"{message} (at byte {position})")


class LimitExceededError(GramaskError, RuntimeError):
    """A constraint's parse outgrew a bound of :class:`~gramask.RuntimeLimits` (a highly
    ambiguous grammar); ``limit`` names the field, ``value`` the size reached."""

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(message)


class InvalidSuffixError(InvalidPrefixError):
    """A suffix (the code after the cursor) that no middle can connect to; ``position`` is
    the byte offset in the suffix where the trouble starts."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.position = position
        if position is not None:  # say whose byte it is: the prefix's would be a fair guess
            self.args = (f"{message} (at byte {position} of the suffix)",)


class BudgetError(GramaskError, ValueError):
    """A token budget (``max_tokens``) that gramask cannot guarantee: the shortest
    completion it finds needs ``minimum`` tokens, more than ``budget``. ``minimum`` is an
    upper bound on the true minimum (the plan spells each lexeme shortest in bytes; a
    longer spelling can take fewer tokens), and ``max_tokens=minimum`` is admitted."""

    def __init__(self, message: str, *, budget: int, minimum: int) -> None:
        self.budget = budget
        self.minimum = minimum
        super().__init__(message)


class NoCompletionError(GramaskError, RuntimeError):
    """gramask found no completion of the prefix (and suffix) that the vocabulary can spell,
    so it cannot plan how a generation would end: ``constraint(..., max_tokens=N)`` cannot
    guarantee its budget (``budget``: N; None from ``shortest_completion()``). Not a verdict
    on the input — a completion may exist that the planner's search did not reach; the same
    constraint without ``max_tokens`` still works (its masks need no plan). A
    ``RuntimeError``, as before it had a type of its own."""

    def __init__(self, message: str, *, budget: int | None = None) -> None:
        self.budget = budget
        super().__init__(message)


__all__ = [
    "ArtifactError",
    "ArtifactVersionError",
    "BudgetError",
    "GramaskError",
    "GrammarError",
    "InvalidPrefixError",
    "InvalidRegexError",
    "InvalidSuffixError",
    "LimitExceededError",
    "NoCompletionError",
    "TokenRejected",
    "UnsupportedRegexError",
    "VocabularyError",
    "text_position",
]
