"""A constrained completion step by step, as a self-contained HTML page (``gramask trace``).

Debugging a grammar against a model means seeing where the mask changed what the model wanted:
per step, the token taken, how many tokens were allowed, how much of the model's probability the
mask kept, and the forbidden tokens the model preferred to the one taken. :func:`trace_completion`
records that for any model (a callable from the token ids so far to logits, as the samplers
take); :func:`write_trace_html` writes one page with no outside resources (inline CSS, no
scripts), readable offline and attachable to a bug report.
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .runtime.core.constraint import Constraint

__all__ = ["TraceStep", "trace_completion", "write_trace_html"]


@dataclass(frozen=True)
class TraceStep:
    """One step: the token taken (greedy over the masked logits) and what the mask did.

    ``p_allowed`` is the model's probability mass on the allowed tokens (1.0: the mask changed
    nothing); ``forbidden_preferred`` the forbidden tokens the model ranked above the one taken,
    most likely first, as (token text, probability); ``alternatives`` the next allowed tokens
    with their renormalised probabilities.
    """

    step: int
    token_id: int
    token: str
    allowed: int
    p_token: float
    p_allowed: float
    forbidden_preferred: tuple[tuple[str, float], ...]
    alternatives: tuple[tuple[str, float], ...]
    mask_ms: float


def _text(c: Constraint, i: int) -> str:
    v = c.vocab
    return "<EOS>" if i == v.eos_token_id else v.token_bytes(i).decode("utf-8", "replace")


def trace_completion(constraint: Constraint, lm: Callable[[list[int]], Any], *,
                     max_new_tokens: int = 64, top: int = 5) -> list[TraceStep]:
    """Decode greedily under ``constraint`` (advanced in place) until EOS or
    ``max_new_tokens``, recording each step. ``lm(ids)`` returns logits over at least
    ``len(vocab)`` ids (numpy, torch or a list); wider logits (padded models) are cut."""
    v = constraint.vocab
    ids: list[int] = []
    steps: list[TraceStep] = []
    for step in range(max_new_tokens):
        t0 = time.perf_counter()
        m = constraint.allowed()
        ms = (time.perf_counter() - t0) * 1000
        raw = lm(list(ids))
        logits = np.asarray(raw.detach().cpu().float() if hasattr(raw, "detach") else raw,
                            dtype=np.float64).reshape(-1)[: len(v)]
        z = np.exp(logits - logits.max())
        p = z / z.sum()
        kept = float(p[m].sum())
        masked = np.where(m, logits, -np.inf)
        tok = int(np.argmax(masked))
        order = np.argsort(-logits, kind="stable")
        above = order[: int(np.searchsorted(-logits[order], -logits[tok], side="left"))]
        forbidden = [int(i) for i in above if not m[i]][:top]
        alt = [int(i) for i in order if m[i] and i != tok][:top]
        steps.append(TraceStep(
            step, tok, _text(constraint, tok), int(m.sum()),
            float(p[tok] / kept) if kept > 0 else 0.0, kept,
            tuple((_text(constraint, i), float(p[i])) for i in forbidden),
            tuple((_text(constraint, i), float(p[i] / kept) if kept > 0 else 0.0) for i in alt),
            ms))
        constraint.advance(tok)
        if constraint.is_finished:
            break
        ids.append(tok)
    return steps


_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} .sub{color:#666;margin-bottom:16px}
pre,code,.tok{font-family:ui-monospace,Menlo,Consolas,monospace}
pre{background:#f6f6f6;border:1px solid #ddd;padding:8px 10px;white-space:pre-wrap;margin:4px 0}
.ctx{color:#888} .gen span{border-bottom:2px solid #4a4;} .gen span.changed{background:#fde2e2;
border-bottom-color:#d33}
table{border-collapse:collapse;width:100%;margin-top:12px}
th,td{border-bottom:1px solid #e4e4e4;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#fafafa;font-weight:600} td.n{text-align:right;font-variant-numeric:tabular-nums}
.tok{background:#eef3ff;border-radius:3px;padding:0 3px;white-space:pre}
.bad{background:#fde2e2}.bar{background:#e8e8e8;width:120px;height:10px;display:inline-block;
vertical-align:middle}.bar i{display:block;height:10px;background:#4a8}
.key{color:#666;font-size:13px;margin:8px 0} td.nw{white-space:nowrap}
"""


def _tok(text: str, cls: str = "tok") -> str:
    """A token as a chip: escapes visible (``\\n``), spaces as ``␣``."""
    shown = (text if text == "<EOS>" else
             text.encode("unicode_escape").decode("ascii").replace(" ", "\u2423"))
    return f'<span class="{cls}">{html.escape(shown)}</span>'


def _pct(p: float) -> str:
    return f"{p:.1%}" if p >= 0.001 or p == 0 else "<0.1%"


def write_trace_html(path: str | os.PathLike[str], steps: Sequence[TraceStep], *,
                     prefix: str = "", suffix: str | None = None, title: str = "gramask trace",
                     complete: bool | None = None, note: str = "") -> None:
    """Write the page for ``steps`` (from :func:`trace_completion`) to ``path``, atomically."""
    changed = sum(1 for s in steps if s.forbidden_preferred)
    gen = "".join(
        f'<span class="changed" title="step {s.step}: the model preferred '
        f'{html.escape(s.forbidden_preferred[0][0])!r} (forbidden)">{html.escape(s.token)}</span>'
        if s.forbidden_preferred else
        f'<span title="step {s.step}">{html.escape(s.token)}</span>'
        for s in steps if s.token != "<EOS>")
    rows = []
    for s in steps:
        forb = " ".join(f"{_tok(t, 'tok bad')} {_pct(p)}" for t, p in s.forbidden_preferred)
        alt = " ".join(f"{_tok(t)} {_pct(p)}" for t, p in s.alternatives)
        rows.append(
            f"<tr><td class=n>{s.step}</td><td>{_tok(s.token)}</td>"
            f"<td class=n>{_pct(s.p_token)}</td><td class=n>{s.allowed:,}</td>"
            f'<td class=nw><span class=bar><i style="width:{max(s.p_allowed, 0.0) * 100:.1f}%"></i>'
            f"</span> {_pct(s.p_allowed)}</td><td>{forb or '—'}</td><td>{alt or '—'}</td>"
            f"<td class=n>{s.mask_ms:.1f}</td></tr>")
    done = "" if complete is None else f" · complete: <b>{'yes' if complete else 'no'}</b>"
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{html.escape(title)}</h1>
<div class="sub">{len(steps)} steps · the mask overrode the model's choice at {changed}{done}
{(' · ' + html.escape(note)) if note else ''}</div>
<pre><span class="ctx">{html.escape(prefix)}</span><span class="gen">{gen}</span><span class="ctx">\
{html.escape(suffix or '')}</span></pre>
<div class="key">Grey: the prefix{' and suffix' if suffix else ''}; underlined: generated tokens;
red: steps where the model's favourite token was forbidden (hover for it).</div>
<table><thead><tr><th>step</th><th>token taken</th><th>p′ (renormalised)</th>
<th>allowed tokens</th><th>model mass the mask kept</th>
<th>forbidden, preferred by the model (p)</th><th>next allowed (p′)</th><th>mask ms</th>
</tr></thead><tbody>
{chr(10).join(rows)}
</tbody></table></body></html>
"""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
