"""llama.cpp GBNF (and XGrammar's EBNF, the same family) → a :class:`gramask.Grammar`.

GBNF grammars have no lexer: their terminals are single characters, and the language is a
character-level context-free language. gramask needs lexer terminals for its token tables, so
this front end *chooses* them:

1. Rules that never reach a recursive rule are *lexical* (their language is regular). Every
   maximal lexical piece used by a non-lexical rule becomes one terminal (a lexical rule keeps
   its name), so a JSON string or a number is one lexeme, not one parser step per character.
2. The terminals are lexed by gramask's contextual greedy lexer, which ends a lexeme only when
   the next byte keeps no terminal alive. That is the character-level language exactly when no
   lexeme boundary is ever ambiguous: after any text a terminal matches, no byte that can
   follow that terminal in the grammar may extend a live terminal. This is checked on the
   product lexer automaton; a terminal that fails it is split one level (its alternatives,
   sequence items or repeated item become terminals, a lexical rule becomes a rule again) and
   the check repeats. Single characters never fail, so the loop ends, in the worst case at
   llama.cpp's own character-level grammar.

So the masks are exact for the language llama.cpp accepts, and the tables stay as small as the
grammar's lexical structure allows. Token syntax (``<[id]>``, ``<token>``, ``!<...>``) matches
vocabulary tokens, not text, and is refused.

The text is read by :mod:`.gbnf_syntax`; :mod:`.gbnf_terminals` finds the lexical rules and
emits rules and terminals for one choice of split terminals; this module makes that choice
(step 2) and returns :class:`~.bnf.GrammarParts`, as the other generated front ends do.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import GrammarError
from .bnf import GrammarParts, Rule
from .gbnf_syntax import Node, Ref, parse_gbnf, ref_nodes, refs
from .gbnf_terminals import Emitter, Lexical, splittable

__all__ = ["from_gbnf", "parse_gbnf"]

# rounds of "split the terminals whose lexeme boundary is ambiguous"; each round splits at
# least one terminal, and terminals nest no deeper than the grammar does
MAX_SPLIT_ROUNDS = 64


class _Lexeme(NamedTuple):
    """A candidate terminal, in the shape the lexer construction reads
    (:class:`gramask.compiler.lexer.Terminal`); the result carries them as plain dicts."""

    name: str
    pattern: str
    is_string: bool = False
    priority: int = 0
    ignored: bool = False


def from_gbnf(text: str, *, start: str = "root", source: str = "<gbnf>",
              progress: bool | None = None) -> GrammarParts:
    """Read llama.cpp GBNF / XGrammar EBNF text and choose its terminals (see the module
    docstring); to be lexed in the contextual mode. ``progress``: a bar over the terminals
    of each splitting round that takes more than a second (None: on a terminal only).

    Raises
    ------
    GrammarError
        Syntax errors, token syntax, undefined or duplicate rules, a missing ``start`` rule,
        an empty language; the message names the rule and the line.
    """
    rules, lines = parse_gbnf(text, source)
    if start not in rules:
        raise GrammarError(f"{source}: the grammar has no {start!r} rule (the start rule)",
                           name=start)
    for name, body in rules.items():
        for ref in sorted(refs(body)):
            if ref not in rules:
                line = next((r.line for r in ref_nodes(body) if r.name == ref), lines[name])
                raise GrammarError(
                    f"{source}: rule {name!r} references undefined rule {ref!r}",
                    line=line, name=ref,
                )
    lex = Lexical(rules)
    split: set[str] = set()
    disable = None if progress is None else not progress
    for round_no in range(1, MAX_SPLIT_ROUNDS + 1):
        em = Emitter(rules, lex, split)
        if start in lex.lexical:
            # the whole language is regular: still one terminal, wrapped in a start rule
            syms = em.seq_symbols(Ref(start, lines[start]), start)
            if syms != [start]:
                em.rules.append(Rule(start, tuple(syms)))
        else:
            em.run(start)
        patterns = list(em.terms)
        terminals = [_Lexeme(name=em.terms[p], pattern=p) for p in patterns]
        nodes = [em.term_nodes[p] for p in patterns]
        if not terminals:
            raise GrammarError(f"{source}: the language of {start!r} is only the empty "
                               "string; gramask needs at least one character", name=start)
        try:
            bad = _ambiguous_terminals(
                terminals, em.rules, nodes, start, disable=disable,
                desc=f"gramask: GBNF terminals (round {round_no})")
        except GrammarError as e:  # a terminal over the state limits: split it, if it can be
            idx = next((i for i, t in enumerate(terminals) if t.name == e.name), None)
            if idx is None or not splittable(nodes[idx]) or patterns[idx] in split:
                raise GrammarError(f"{source}: {e}", name=e.name) from None
            bad = {idx}
        if not bad:
            break
        split |= {patterns[i] for i in bad}
    else:  # pragma: no cover - each round splits a terminal
        raise GrammarError(f"{source}: could not choose lexer terminals in "
                           f"{MAX_SPLIT_ROUNDS} rounds")
    from ..compiler.analysis import prune

    pruned = prune(em.rules, [t.name for t in terminals], start, source=source, warn=False)
    used = {s for r in pruned for s in r.rhs}
    return GrammarParts(
        terminals=tuple({"name": t.name, "pattern": t.pattern, "is_string": False,
                         "ignored": False, "automaton": ""}
                        for t in terminals if t.name in used),
        rules=tuple(Rule(r.lhs, tuple(r.rhs)) for r in pruned),
        start=start, source=source, lexer="contextual",
    )


def _ambiguous_terminals(
    terminals: list[_Lexeme], rules: list[Rule], nodes: list[Node], start: str,
    *, desc: str, disable: bool | None,
) -> set[int]:
    """Indices of terminals to split: those whose lexeme can end where a byte that may follow
    them keeps alive a terminal the parser may allow at the same time (the greedy lexer
    would read on; the grammar may not)."""
    import numpy as np
    from tqdm.auto import tqdm

    from ..compiler.lexer import build_lexer_dfa, terminal_dfa

    # terminal_dfa memoises per pattern: the next round, and compile, reuse these automata
    dfas = [terminal_dfa(t) for t in tqdm(terminals, desc=desc, unit="terminal",
                                           disable=disable, leave=False, delay=1.0)]
    dfa = build_lexer_dfa(terminals, dfas)
    n = len(terminals)
    index = {t.name: i for i, t in enumerate(terminals)}
    first_bytes = [np.flatnonzero(d.trans[0] >= 0) for d in dfas]
    follow, first_start = _follow_terminals(rules, index, start)
    # "allowed together", over-approximated: the terminals the parser allows after a lexeme
    # all follow one of the allowed terminals that lexeme matches (or start the text); a
    # lexeme matches several when they are allowed together and share a text
    nxt = np.zeros((n, n), dtype=bool)
    for i, group in follow.items():
        nxt[i, sorted(group)] = True
    together = np.zeros((n, n), dtype=bool)
    g0 = sorted(first_start)
    together[np.ix_(g0, g0)] = True
    for i in range(n):
        together |= np.outer(nxt[i], nxt[i])
    acc = dfa.accepting.astype(np.int64)
    overlap = (acc.T @ acc) > 0
    while True:
        xs, ys = np.nonzero(np.triu(together & overlap, 1))
        grown = together.copy()
        for x, y in zip(xs.tolist(), ys.tolist(), strict=True):
            u = nxt[x] | nxt[y]
            grown |= np.outer(u, u)
        if (grown == together).all():
            break
        together = grown
    blamed: set[int] = set()
    alive = dfa.trans >= 0
    for i in range(n):
        nxt_terms = sorted(follow.get(i, ()))
        if not nxt_terms:
            continue
        fb = np.unique(np.concatenate([first_bytes[j] for j in nxt_terms]))
        states = np.flatnonzero(dfa.accepting[:, i])
        if not states.size or not fb.size:
            continue
        hit = alive[np.ix_(states, fb)]
        for si, bi in zip(*np.nonzero(hit), strict=True):
            live = np.flatnonzero(dfa.live[dfa.trans[states[si], fb[bi]]] & together[i])
            if live.size:
                blamed.add(i)
                blamed.update(live.tolist())
    return {i for i in blamed if splittable(nodes[i])}


def _follow_terminals(
    rules: list[Rule], index: dict[str, int], start: str
) -> tuple[dict[int, set[int]], set[int]]:
    """Per terminal, the terminals that can come right after it in some sentential form;
    and the terminals that can start one."""
    nts = {r.lhs for r in rules}
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.lhs not in nullable and all(s in nullable for s in r.rhs):
                nullable.add(r.lhs)
                changed = True
    first: dict[str, set[int]] = {n: set() for n in nts}
    changed = True
    while changed:
        changed = False
        for r in rules:
            acc = first[r.lhs]
            before = len(acc)
            for s in r.rhs:
                if s in index:
                    acc.add(index[s])
                    break
                acc |= first.get(s, set())
                if s not in nullable:
                    break
            changed |= len(acc) != before
    follow_nt: dict[str, set[int]] = {n: set() for n in nts}
    follow_t: dict[int, set[int]] = {}

    def first_of(seq: tuple[str, ...]) -> tuple[set[int], bool]:
        out: set[int] = set()
        for s in seq:
            if s in index:
                out.add(index[s])
                return out, False
            out |= first.get(s, set())
            if s not in nullable:
                return out, False
        return out, True

    changed = True
    while changed:
        changed = False
        for r in rules:
            for k, s in enumerate(r.rhs):
                f, through = first_of(r.rhs[k + 1:])
                if through:
                    f = f | follow_nt[r.lhs]
                if s in index:
                    tgt = follow_t.setdefault(index[s], set())
                else:
                    tgt = follow_nt.setdefault(s, set())
                before = len(tgt)
                tgt |= f
                changed |= len(tgt) != before
    return follow_t, first.get(start, set())
