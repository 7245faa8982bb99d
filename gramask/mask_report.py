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

__all__ = ["Group", "group_by_lexing", "lex_pieces", "load_logits", "rank_by_logits",
           "softmax"]


@dataclass(frozen=True)
class Group:
    """Allowed tokens that lex the same way: ``lexes_to`` is e.g. ``"RPAR COLON NAME…"``."""

    lexes_to: str
    ids: tuple[int, ...]


def group_by_lexing(cg: CompiledGrammar, lexer_state: int, ids: np.ndarray) -> list[Group]:
    """Group ``ids`` by the terminals their bytes complete from ``lexer_state`` and the
    lexeme they end inside (``NAME…``); largest group first, short tokens first inside one."""
    vocab = cg.vocab
    lists = (cg.dfa.trans.tolist(), cg.dfa.accept.tolist())
    groups: dict[str, list[int]] = defaultdict(list)
    for i in ids.tolist():
        if i == vocab.eos_token_id:
            groups["<EOS>"].append(i)
            continue
        pieces, _ = lex_pieces(cg, lexer_state, vocab.token_bytes(i), lists)
        groups[" ".join(label for _, label in pieces)].append(i)
    out = [
        Group(k, tuple(sorted(v, key=lambda t: (len(vocab.token_bytes(t)), t))))
        for k, v in groups.items()
    ]
    return sorted(out, key=lambda g: (-len(g.ids), g.lexes_to))


def lex_pieces(cg: CompiledGrammar, lexer_state: int, data: bytes,
               lists: tuple[list[list[int]], list[int]] | None = None,
               ) -> tuple[list[tuple[int, str]], tuple[int, str] | None]:
    """What ``data`` lexes to from ``lexer_state`` with the greedy lexer DFA: ``(start, label)``
    per lexeme (start -1: the lexeme was already in progress; ``NAME…``: left open), repeats
    folded (``MINUS×12``), and where lexing failed, if it did: ``(offset, why)``. ``lists``:
    the DFA's transitions and accepts as lists, for callers that lex many tokens."""
    dfa = cg.dfa
    rows, accept = lists if lists is not None else (dfa.trans.tolist(), dfa.accept.tolist())
    names = dfa.terminal_names
    q, start = lexer_state, (-1 if lexer_state > 0 else 0)
    raw: list[tuple[int, str]] = []
    for at, byte in enumerate(data):
        nq = rows[q][byte]
        if nq < 0:  # the lexeme ends here
            if q > 0 and accept[q] < 0:  # ... but is no terminal yet
                open_as = _open_lexeme(q, accept, dfa.winnable, names)
                raw.append((start, open_as[:-1] + "?"))
                return _fold(raw), (at, f"byte {bytes([byte])!r} does not continue the lexeme "
                                    f"in progress ({open_as}), which is no terminal yet")
            if q > 0:
                raw.append((start, names[accept[q]]))
            start, nq = at, rows[0][byte]
            if nq < 0:
                return _fold(raw), (at, f"no terminal starts with byte {bytes([byte])!r}")
        q = nq
    if q > 0:
        raw.append((start, _open_lexeme(q, accept, dfa.winnable, names)))
    return _fold(raw), None


def _fold(pieces: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Runs of one terminal as one piece, ``MINUS×16`` (``MINUS×16…`` when the last is left
    open): a token of 16 dashes is one choice, not a 16-word label."""
    out: list[tuple[int, str]] = []
    for start, label in pieces:
        name = label.rstrip("…")
        if out:
            prev_start, prev = out[-1]
            prev_name, _, count = prev.partition("×")
            if prev_name == name and not prev.endswith("…"):
                n = int(count) if count else 1
                out[-1] = (prev_start, f"{name}×{n + 1}" + label[len(name):])
                continue
        out.append((start, label))
    return out


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


def softmax(logits: np.ndarray) -> np.ndarray:
    """Probabilities from logits (float64; ``-inf`` logits get 0)."""
    z = logits - np.max(logits)
    e = np.exp(z)
    return np.asarray(e / e.sum())
