"""Figures of a compiled artifact (``gramask inspect --plot out.png``).

The numbers ``gramask inspect`` prints (rows, non-zeros, density) hide where the tables are
heavy and what a mask costs. Four panels show it: how many tokens each lexer state's row holds
(the dense rows are the lexeme classes most tokens continue, e.g. names), how many distinct
outcomes a row has (a mask decides each distinct outcome once per parser configuration: this is
its cost), which terminals own the table entries, and how large allowed sets are on random
masked walks (how much a mask typically leaves).

matplotlib is an optional extra (``pip install 'gramask[plot]'``); it is imported only here.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .compiled import CompiledGrammar
from .compiler.table_rows import expand_row

__all__ = ["import_pyplot", "plot_tables", "random_walk_sizes"]


def import_pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or an ImportError saying how to get it."""
    try:
        import matplotlib
    except ImportError:
        raise ImportError(
            "gramask's plots need matplotlib: pip install 'gramask[plot]' (or pip install "
            "matplotlib)"
        ) from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def random_walk_sizes(cg: CompiledGrammar, steps: int = 300, seed: int = 0) -> np.ndarray:
    """Allowed-set sizes along random masked walks from the empty prefix: what a mask
    typically leaves. Each step draws a first byte uniformly among the allowed tokens' first
    bytes, then a token with it (uniform over tokens would almost always extend the name in
    progress); EOS starts a new walk."""
    rng = np.random.default_rng(seed)
    first = cg.tables.first_byte
    eos = cg.vocab.eos_token_id
    c = cg.constraint()
    sizes = []
    for _ in range(steps):
        ids = np.flatnonzero(c.allowed())
        sizes.append(len(ids))
        if not len(ids):
            c = cg.constraint()
            continue
        heads = first[ids]
        tok = int(rng.choice(ids[heads == rng.choice(np.unique(heads))]))
        if tok == eos or first[tok] < 0:
            c = cg.constraint()
        else:
            c.advance(tok)
    return np.asarray(sizes)


def _row_shapes(cg: CompiledGrammar) -> tuple[np.ndarray, np.ndarray]:
    """Per lexer state: tokens in its row (base rows applied) and distinct outcome nodes."""
    bases: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    sizes, outcomes = [], []
    for q in range(cg.dfa.num_states):
        ids, nodes = expand_row(cg.tables, q, bases)
        sizes.append(len(ids))
        outcomes.append(len(np.unique(nodes)))
    return np.asarray(sizes), np.asarray(outcomes)


def _state_label(cg: CompiledGrammar, q: int) -> str:
    """What a lexer state is in the middle of: its winner so far, else what it can become."""
    dfa = cg.dfa
    if q == 0:
        return "start"
    a = int(dfa.accept[q])
    if a >= 0:
        return dfa.terminal_names[a] + "…"
    could = [dfa.terminal_names[t] for t in np.flatnonzero(dfa.winnable[q])]
    return "|".join(could[:2]) + ("|…" if len(could) > 2 else "…")


def plot_tables(cg: CompiledGrammar, path: str | os.PathLike[str], *, walk_steps: int = 300,
                seed: int = 0, title: str | None = None) -> None:
    """Write the four-panel figure of ``cg`` to ``path`` (PNG, or any format matplotlib
    knows by the extension)."""
    plt = import_pyplot()
    sizes, outcomes = _row_shapes(cg)
    v = len(cg.vocab)
    whole = cg.tables.row_base < 0
    st = cg.stats()
    walk = random_walk_sizes(cg, walk_steps, seed) if walk_steps else np.zeros(0)

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    fig.suptitle(title or f"{st['grammar']} × {cg.vocab.metadata().get('name') or '?'}: "
                 f"{st['lexer_states']} lexer states, {v:,} tokens, {st['nonzeros']:,} "
                 f"table entries ({st['array_bytes'] / 2**20:.1f} MiB of arrays)", fontsize=12)

    ax = axes[0, 0]
    order = np.argsort(-sizes, kind="stable")
    xs = np.arange(len(order))
    ax.bar(xs, sizes[order], width=1.0,
           color=np.where(whole[order], "tab:blue", "tab:orange"))
    ax.set_yscale("symlog", linthresh=10)
    ax.set_xlabel("lexer state (densest row first)")
    ax.set_ylabel("tokens in the row")
    ax.set_title("Row density per lexer state\n(blue: stored whole, orange: stored as a diff)")
    dense: list[str] = []
    seen: set[str] = set()
    for q in order.tolist():  # the lexemes behind the densest rows, one line each
        label = _state_label(cg, q)
        if label not in seen and len(dense) < 6:
            seen.add(label)
            dense.append(f"{label} {sizes[q]:,}")
    ax.text(0.97, 0.6, "densest rows:\n" + "\n".join(dense), transform=ax.transAxes,
            ha="right", va="center", fontsize=8, bbox={"fc": "white", "ec": "grey"})
    ax.axhline(v, color="grey", lw=0.8, ls="--")
    ax.text(len(order) * 0.98, v, "whole vocabulary", ha="right", va="bottom", fontsize=8,
            color="grey")

    ax = axes[0, 1]
    nz = sizes > 0
    ax.scatter(sizes[nz], outcomes[nz], s=12, alpha=0.6,
               c=np.where(whole[nz], "tab:blue", "tab:orange"))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tokens in the row")
    ax.set_ylabel("distinct outcomes (decided once per mask)")
    ax.set_title("What a mask costs per row: distinct outcomes vs tokens")

    ax = axes[1, 0]
    per = sorted(st["per_terminal"], key=lambda t: -t["table_entries"])[:15]
    ax.barh([t["name"] for t in per][::-1], [t["table_entries"] for t in per][::-1],
            color="tab:green")
    ax.set_xscale("log")
    ax.set_xlabel("table entries in rows where the terminal is live")
    ax.set_title("Which terminals own the tables (top 15)")
    ax.tick_params(axis="y", labelsize=8)

    ax = axes[1, 1]
    if len(walk):
        bins = np.unique(np.geomspace(1, v, 40).astype(int))
        ax.hist(np.maximum(walk, 1), bins=bins, color="tab:purple")
        ax.set_xscale("log")
        ax.axvline(float(np.median(walk)), color="k", lw=1, ls="--")
        ax.text(float(np.median(walk)), ax.get_ylim()[1] * 0.95, f" median {int(np.median(walk)):,}",
                fontsize=8, va="top")
    ax.set_xlabel("tokens allowed")
    ax.set_ylabel("steps")
    ax.set_title(f"Allowed-set sizes on random masked walks ({len(walk)} steps, seed {seed})")
    fig.tight_layout()
    fig.savefig(os.fspath(path), dpi=90)
    plt.close(fig)
