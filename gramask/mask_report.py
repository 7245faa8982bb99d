"""Which allowed tokens to show a person first (``gramask mask --top N``).

A mask allows tens of thousands of tokens; the first N ids say nothing. With a model's logits
the most likely allowed tokens are the useful ones. Without, tokens are grouped by what they
lex to from the current lexer state (the terminals they complete, then the lexeme they stop
inside), largest group first: the groups are the choices the grammar offers here.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from .compiled import CompiledGrammar
from .errors import GramaskError

__all__ = ["Group", "group_by_lexing", "load_logits", "rank_by_logits"]


@dataclass(frozen=True)
class Group:
    """Allowed tokens that lex the same way: ``lexes_to`` is e.g. ``"RPAR COLON NAME…"``."""

    lexes_to: str
    ids: tuple[int, ...]


def group_by_lexing(cg: CompiledGrammar, lexer_state: int, ids: np.ndarray) -> list[Group]:
    """Group ``ids`` by the terminals their bytes complete from ``lexer_state`` and the
    lexeme they end inside (``NAME…``); largest group first, short tokens first inside one."""
    dfa = cg.dfa
    rows = dfa.trans.tolist()
    accept = dfa.accept.tolist()
    names = dfa.terminal_names
    winnable = dfa.winnable
    vocab = cg.vocab
    groups: dict[str, list[int]] = defaultdict(list)
    for i in ids.tolist():
        if i == vocab.eos_token_id:
            groups["<EOS>"].append(i)
            continue
        q, parts = lexer_state, []
        for byte in vocab.token_bytes(i):
            nq = rows[q][byte]
            if nq < 0:  # the lexeme ends (an allowed token's lexemes have winners)
                parts.append(names[accept[q]] if accept[q] >= 0 else "?")
                nq = rows[0][byte]
                if nq < 0:
                    break
            q = nq
        if q > 0:
            parts.append(_open_lexeme(q, accept, winnable, names))
        groups[" ".join(parts)].append(i)
    out = [
        Group(k, tuple(sorted(v, key=lambda t: (len(vocab.token_bytes(t)), t))))
        for k, v in groups.items()
    ]
    return sorted(out, key=lambda g: (-len(g.ids), g.lexes_to))


def _open_lexeme(q: int, accept: list[int], winnable: np.ndarray, names: tuple[str, ...]) -> str:
    """``NAME…`` for a lexeme left open at ``q``: its winner so far, else what it can become."""
    if accept[q] >= 0:
        return names[accept[q]] + "…"
    could = [names[t] for t in np.flatnonzero(winnable[q])]
    return "|".join(could[:2]) + ("|…" if len(could) > 2 else "…")


_NPY_MAGIC = b"\x93NUMPY"


def load_logits(path: str | os.PathLike[str], vocab_size: int) -> np.ndarray:
    """A 1-D ``.npy`` of logits at least as wide as the vocabulary (padded models are wider)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(len(_NPY_MAGIC))
        if magic != _NPY_MAGIC:  # numpy would call any other file "pickled data"
            raise GramaskError(
                f"logits file {path} is not a .npy array (save one with numpy.save)"
            )
        a = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise GramaskError(f"logits file {path}: no such file") from None
    except (OSError, ValueError) as e:
        raise GramaskError(f"logits file {path} is not a .npy array: {e}") from None
    if not isinstance(a, np.ndarray) or a.ndim != 1 or a.dtype.kind not in "fiu":
        raise GramaskError(f"logits file {path}: expected a 1-D numeric array")
    if a.shape[0] < vocab_size:
        raise GramaskError(
            f"logits file {path} holds {a.shape[0]} values, the vocabulary has {vocab_size}"
        )
    return np.asarray(a[:vocab_size], dtype=np.float64)


def rank_by_logits(ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
    """``ids`` from the highest logit down (ties by id)."""
    return ids[np.lexsort((ids, -logits[ids]))]
