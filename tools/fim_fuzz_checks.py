"""The checks of ``tools/fim_fuzz.py`` on one cut (prefix / middle / suffix) of a text lark
accepts: the true middle forced through the masks, random masked walks, budgets, and a broken
suffix. Each returns what went wrong as (kind, detail) pairs and counts into ``stats``."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import lark
from fuzz_common import complete, force_into  # complete: gramask's prefix-only verdict

import gramask
from gramask.errors import GramaskError


@dataclass
class Cut:
    """A text split at two offsets: the middle is what the model would write."""

    prefix: str
    middle: str
    suffix: str

    @property
    def text(self) -> str:
        return self.prefix + self.middle + self.suffix


@dataclass
class Env:
    """What every check needs: the compiled grammar, the oracle, the tokenizer."""

    cg: gramask.CompiledGrammar
    accepts: Callable[[str], bool]  # lark's verdict on a whole text
    tok: Callable[[str], list[int]]
    rnd: random.Random
    steps: int
    stats: Counter[str]
    mode: str
    pieces: list[str] = field(default_factory=list)  # continuations to look for a witness in

    @property
    def eos(self) -> int:
        return self.cg.vocab.eos_token_id

    def count(self, key: str, n: int = 1) -> None:
        self.stats[f"{self.mode}: {key}"] += n


@dataclass
class Problem:
    """What went wrong: its kind, in words, and the middle that shows it (a walk's text,
    a witness middle) where that is not the cut's own."""

    kind: str
    detail: str
    middle: str | None = None
    witness: str | None = None  # what completes the middle, where the search found nothing


def lark_accepts(p: lark.Lark, text: str, stats: Counter[str] | None = None) -> bool:
    """lark's verdict; its ``Indenter`` fails (IndexError) on a newline lexeme with no line
    break (a comment ending the text), which gramask reads as a line end (docs/semantics.md,
    "Where lark's Indenter still differs"): taken as accepted, and counted."""
    try:
        p.parse(text)
    except lark.exceptions.LarkError:
        return False
    except IndexError:
        if stats is not None:
            stats["lark's indenter fails on a newline lexeme without a line break"] += 1
        return True
    except AssertionError:  # its indenter on a closing bracket that nothing opened
        if stats is not None:
            stats["lark's indenter fails on an unopened closing bracket (rejected)"] += 1
        return False
    return True


def pieces(texts: list[str], most: int = 1500, longest: int = 6) -> list[str]:
    """Short pieces of ``texts`` (shortest first): continuations a dead end is tried with
    before it counts as one."""
    out = dict.fromkeys([""] + [t[i:i + n] for n in range(1, longest + 1) for t in texts
                                for i in range(len(t) - n + 1)])
    return list(out)[:most]


def prefix_stuck(cg: gramask.CompiledGrammar, text: str) -> bool:
    """Is ``text``, read without a suffix, a prefix gramask refuses or cannot complete? A FIM
    dead end that the prefix-only constraint shares is the greedy lexer's (helper sep's
    class: terminals the lexer cannot split), not the quotient's."""
    try:
        cg.constraint(text).shortest_completion()
    except (gramask.InvalidPrefixError, gramask.NoCompletionError):
        return True
    return False


# docs/semantics.md: read as lark's Indenter reads it, a suffix must end with a newline (a
# program whose suffix ends inside a trailing comment is refused, a documented restriction)
NO_FINAL_NEWLINE = "adds no newline at the end of input"


def no_final_newline(env: Env, pr: Problem) -> bool:
    """Is ``pr`` the documented refusal of a suffix that does not end with a newline under
    lark's Indenter (the text may still be a program: blanks or a comment after the last
    newline)? Counted apart."""
    if pr.kind == "suffix-refused" and NO_FINAL_NEWLINE in pr.detail:
        env.count("suffix refused: no final newline under lark's Indenter (documented)")
        return True
    return False


def setup(env: Env, cut: Cut, max_tokens: int | None = None
          ) -> gramask.Constraint | Problem:
    """The FIM constraint for ``cut``, or the problem that setting it up raised."""
    try:
        return env.cg.constraint(cut.prefix, suffix=cut.suffix, max_tokens=max_tokens)
    except gramask.InvalidSuffixError as e:
        return Problem("suffix-refused", f"{e}")
    except gramask.InvalidPrefixError as e:
        return Problem("prefix-refused", f"{e}")
    except gramask.BudgetError as e:
        return Problem("budget-refused", f"minimum {e.minimum} > budget {e.budget}")
    except gramask.NoCompletionError as e:
        return Problem("budget-no-plan", f"{e}")
    except GramaskError as e:
        return Problem("setup-error", f"{type(e).__name__}: {e}")
    except Exception as e:
        return Problem("crash", f"setup {type(e).__name__}: {e}")


def force(c: gramask.Constraint, ids: list[int]) -> str | None:
    """None if every token of ``ids`` and then EOS is allowed; else what failed."""
    return force_into(c, ids, "after the whole middle")


def both_take(env: Env, text: str) -> bool:
    """Do lark and gramask's prefix-only constraint both take the whole ``text``?"""
    return env.accepts(text) and complete(env.cg, text)


def walked(c: gramask.Constraint) -> str:
    return c.data.decode(errors="replace")


def dead_end(env: Env, cut: Cut, c: gramask.Constraint) -> Problem | None:
    """Does the walk in ``c`` still have a completion? Else the dead end, classified."""
    try:
        c.shortest_completion()
        return None
    except gramask.NoCompletionError:
        pass
    ignored = {t.name for t in env.cg.grammar.terminals if t.ignored}
    could = c.explain()["lexeme_could_be"]
    if could and set(could) <= ignored:  # docs/semantics.md, "Where exactness is traded away"
        return Problem("dead-end-ignored", f"after {c.data!r}: an ignored lexeme in progress "
                       "that the suffix would continue (documented)", walked(c))
    here = cut.prefix + walked(c)
    stuck = prefix_stuck(env.cg, here)
    x = next((x for x in env.pieces if both_take(env, here + x + cut.suffix)), None)
    if x is not None:  # the state is no dead end: the search missed a completion
        also = " (so does the prefix-only constraint's)" if stuck else ""
        return Problem("completion-missed", f"none found after {c.data!r}, but {x!r} "
                       f"completes{also}", walked(c), x)
    if stuck:  # sep's class
        return Problem("dead-end-lexer", f"after {c.data!r}: the prefix-only constraint is "
                       "stuck too", walked(c))
    if not c.allowed().any():
        return Problem("dead-end-empty", f"empty mask after {c.data!r}", walked(c))
    return Problem("dead-end", f"no completion after {c.data!r} (nor a witness)", walked(c))


def walk(env: Env, cut: Cut, c: gramask.Constraint) -> Problem | None:
    """Random allowed tokens (each checked for a completion), then the shortest completion:
    the text must be complete and lark's."""
    for _ in range(env.rnd.randint(0, env.steps)):
        ids = c.allowed().nonzero()[0]
        ids = ids[ids != env.eos]
        if not len(ids):
            break
        c.advance(int(env.rnd.choice(ids)))
        env.count("walk tokens")
        problem = dead_end(env, cut, c)
        if problem is not None:
            return problem
    try:
        for t in c.shortest_completion().token_ids:
            c.advance(t)
    except gramask.NoCompletionError:
        return dead_end(env, cut, c)
    except gramask.TokenRejected:
        return Problem("completion-rejected", f"a token of the shortest completion after "
                       f"{c.data!r} rejected", walked(c))
    text = finish_text(cut, c)
    if not c.allowed()[env.eos]:
        return Problem("walk-eos", f"EOS forbidden after the shortest completion {c.data!r}",
                       walked(c))
    if not env.accepts(text):
        if not complete(env.cg, text):
            return Problem("walk-unsound", f"EOS allowed, neither lark nor gramask takes "
                           f"{text!r}", walked(c))
        env.count("lark differences (walk text, gramask's prefix mode agrees with FIM)")
    return None


def finish_text(cut: Cut, c: gramask.Constraint) -> str:
    return cut.prefix + walked(c) + cut.suffix


def budget_walk(env: Env, cut: Cut, c: gramask.Constraint) -> Problem | None:
    """Random allowed tokens (EOS among them) until EOS or the budget is spent: the text
    must then be complete and lark's."""
    while True:
        m = c.allowed()
        ids = m.nonzero()[0]
        if not len(ids):
            return Problem("empty-mask", f"empty mask after {c.data!r}", walked(c))
        if c.remaining_tokens == 0:
            if not m[env.eos] or len(ids) != 1:
                return Problem("spent", f"budget spent after {c.data!r}, {len(ids)} allowed",
                               walked(c))
            break
        t = int(env.rnd.choice(ids))
        if t == env.eos:
            break
        c.advance(t)
        env.count("budget walk tokens")
    if not c.is_complete():
        return Problem("incomplete", f"EOS allowed, not complete after {c.data!r}", walked(c))
    text = finish_text(cut, c)
    if not env.accepts(text) and not complete(env.cg, text):
        return Problem("unsound", f"neither lark nor gramask takes {text!r}", walked(c))
    return None


def guarded(what: str, f: Callable[[], Problem | str | None]) -> Problem | str | None:
    """``f()``, a crash turned into a problem."""
    try:
        return f()
    except Exception as e:
        return Problem("crash", f"{what}: {type(e).__name__}: {e}")


def check_cut(env: Env, cut: Cut, walks: int, slack: list[int]) -> list[Problem]:
    """(a) the true middle forced, (b) walks, (c) budgets, on one cut whose whole text
    gramask's prefix mode takes (so some middle exists)."""
    c = setup(env, cut)
    if isinstance(c, Problem):
        if no_final_newline(env, c):
            return []
        return [c]
    out: list[Problem] = []
    env.count("cuts set up")
    ids = env.tok(cut.middle)
    env.count("forced tokens", len(ids))
    why = guarded("force", lambda: force(c.clone(), ids))
    if why is not None:
        out.append(why if isinstance(why, Problem) else Problem("force", why))
    for _ in range(walks):
        env.count("walks")
        p = guarded("walk", lambda: walk(env, cut, c.clone()))
        if isinstance(p, Problem):
            out.append(p)
    for k in slack:
        out += check_budget(env, cut, ids, k)
    return out


def check_budget(env: Env, cut: Cut, ids: list[int], k: int) -> list[Problem]:
    """The true middle forced under ``max_tokens=len(ids) + k``, then a budgeted walk."""
    c = setup(env, cut, len(ids) + k)
    env.count(f"budget k={k}: cuts")
    if isinstance(c, Problem):
        env.count(f"budget k={k}: {c.kind}")
        if no_final_newline(env, c):
            return []
        if k < 4 and c.kind == "budget-refused":
            return []  # the plan's bound is above the true middle's tokens (documented)
        return [Problem(f"budget-k{k}-{c.kind}", c.detail)]
    out: list[Problem] = []
    why = guarded("force", lambda: force(c.clone(), ids))
    env.count(f"budget k={k}: forced tokens", len(ids))
    if why is not None:
        env.count(f"budget k={k}: true middle forbidden")
        if isinstance(why, Problem) or k >= 4:
            out.append(why if isinstance(why, Problem) else Problem(f"budget-k{k}-force", why))
    env.count(f"budget k={k}: walks")
    p = guarded("budget walk", lambda: budget_walk(env, cut, c.clone()))
    if isinstance(p, Problem):
        out.append(Problem(f"budget-k{k}-{p.kind}", p.detail, p.middle))
    return out


def check_broken_suffix(env: Env, cut: Cut, middles: list[str]) -> list[Problem]:
    """A mutated suffix: if setup refuses it, no middle of ``middles`` may connect it (by
    lark and by gramask's prefix mode); if setup takes it, the shortest completion must end in
    a text lark takes (or, where none is found, no middle of ``middles`` may exist)."""
    witness = next((m for m in middles if both_take(env, cut.prefix + m + cut.suffix)), None)
    c = setup(env, cut)
    if isinstance(c, Problem):
        env.count(f"broken suffix: {c.kind}")
        if c.kind != "suffix-refused":
            return [Problem(f"broken-{c.kind}", c.detail)]
        if witness is not None and no_final_newline(env, c):
            return []
        if witness is not None:
            return [Problem("suffix-refused-connectable", f"middle {witness!r} connects; "
                            f"{c.detail}", witness)]
        return []
    env.count("broken suffix: taken")
    try:
        done = c.shortest_completion()
    except gramask.NoCompletionError:
        if witness is not None:
            return [Problem("suffix-no-completion", f"middle {witness!r} connects, no "
                            "completion found", witness)]
        env.count("broken suffix: taken, no middle found")
        return []
    for t in done.token_ids:
        c.advance(t)
    text = finish_text(cut, c)
    if not c.is_complete():
        return [Problem("broken-incomplete", f"{done.text!r}", walked(c))]
    if not env.accepts(text) and not complete(env.cg, text):
        return [Problem("broken-unsound", f"neither lark nor gramask takes {text!r}",
                        walked(c))]
    env.count("broken suffix: taken, completed")
    return []
