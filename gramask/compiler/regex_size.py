"""A cheap lower bound on a regex's DFA size from its match lengths, before any automaton.

Why: the byte determinisation (:mod:`gramask.compiler.regex_bytes`) stops at its state limit,
which refuses explosive regexes such as ``/(a|b)*a(a|b){20}/`` (2^21 states) in a fraction of
a second; but a long chain (``/x{50000}/``, a 100 KB literal) would first have its NFA built
and walked node by node. Its length alone says it is over the limit.

(A subset count over representative characters used to run before the determinisation too;
the byte determinisation reaches the same limit faster, and the count cost a third of the
compile time of grammars with thousands of regexes.)
"""

from __future__ import annotations

import re
from re import _constants as _c  # re's own parser: the regexes are Python regexes
from re import _parser as _sre_parse

__all__ = ["dfa_states_from_width"]


def dfa_states_from_width(pattern: str) -> int:
    """A lower bound on the states of ``pattern``'s trimmed character DFA from its match
    lengths alone, in time linear in the pattern: along a shortest match the states are
    pairwise distinct (each is exactly one character further from acceptance), and so are
    they along a longest match when matches are bounded. So ``/x{50000}/`` or a 100 KB
    literal is refused before any automaton is built. 0 when the pattern does not parse."""
    try:
        lo, hi = _sre_parse.parse(pattern).getwidth()
    except (re.error, RecursionError, OverflowError):
        return 0
    bounded = hi < _c.MAXREPEAT
    return int(max(lo, hi if bounded else 0)) + 1
