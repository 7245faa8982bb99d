"""String terminals that an ``%ignore``d regex swallows, which lark's lexers never produce.

lark folds a string terminal into a regex terminal of the same priority that matches the
string's whole text (its ``_create_unless``: the regex's lexeme is retyped as the string), but
decides whether a lexeme is dropped by the regex's own name. So where the regex is ignored,
the string's text is always dropped: with ``%ignore WS`` and ``WS: /[ \\t\\n]+/``, a rule's
``"\\n"`` is never lexed, in lark's basic and contextual lexers alike, and the rules that need
it never parse. gramask reads such grammars the same way: the string is dropped before the
rules are pruned (a warning names it and the regex), so neither lexer mode lexes it and no
mask leads into a rule that can never finish.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from typing import Any

from ..compiler.analysis import GrammarWarning

__all__ = ["swallowed_strings"]


def swallowed_strings(lark_terminals: Iterable[Any], ignore: set[str], source: str
                      ) -> dict[str, str]:
    """Per string terminal lark never produces, the ignored regex terminal that swallows it
    (lark's condition: equal priority, the string's flags among the regex's, and the regex's
    match on the string's text is that whole text); warns naming them."""
    ts = list(lark_terminals)
    regexes = [t for t in ts if t.name in ignore and t.pattern.type == "re"]
    out: dict[str, str] = {}
    for s in ts:
        if s.pattern.type != "str" or s.name in ignore:
            continue
        for r in regexes:
            if s.priority != r.priority or not set(s.pattern.flags) <= set(r.pattern.flags):
                continue
            try:
                m = re.match(r.pattern.to_regexp(), s.pattern.value)
            except re.error:  # refused with its own message where the regex is checked
                continue
            if m is not None and m.group(0) == s.pattern.value:
                out[s.name] = r.name
                break
    if out:
        warnings.warn(f"{source}: never lexed, as in lark: " + ", ".join(
            f"{s} (the ignored {r} matches its text)" for s, r in out.items()),
            GrammarWarning, stacklevel=3)
    return out
