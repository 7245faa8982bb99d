"""Benchmark results as percentiles, markdown tables and per-row details."""

from __future__ import annotations

import numpy as np

from bench.harness import Result


def pct(ns: list[int]) -> dict[str, float]:
    if not ns:
        return {}
    a = np.asarray(ns, dtype=np.float64) / 1e3
    return {
        "p50": float(np.percentile(a, 50)),
        "p90": float(np.percentile(a, 90)),
        "p99": float(np.percentile(a, 99)),
        "max": float(a.max()),
        "mean": float(a.mean()),
    }


def fmt_us(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 1000:
        return f"{x / 1000:.2f} ms"
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def summarize(r: Result, raw: bool = False) -> dict:
    d = {
        "engine": r.engine,
        "grammar": r.grammar,
        "vocab": r.vocab,
        "unavailable": r.unavailable,
        "setup_s": r.setup_s,
        "setup_note": r.setup_note,
        "mask_us": pct(r.mask_ns),
        "step_us": pct(r.step_ns),
        "masks": len(r.mask_ns),
        "docs": r.docs,
        "compared_steps": r.compared,
        "disagree_steps": r.disagree_steps,
        "disagree_text_steps": r.disagree_text_steps,
        "slowest_masks": [{"us": ns / 1e3, "doc": d, "step": st, "before": b if isinstance(b, str) else repr(b)}
                          for ns, d, st, b in r.slowest],
        "disagree_kinds": r.disagree_kinds,
        "examples": [{k: (repr(v) if isinstance(v, bytes) else
                          [(i, repr(b)) for i, b in v] if k.endswith("examples") else v)
                      for k, v in ex.items()} for ex in r.examples],
        "rejected": r.rejected,
        "errors": r.errors,
        "skipped_docs": r.skipped_docs,
        "notes": sorted(set(r.notes)),
    }
    if raw:
        d["raw"] = {"mask_ns": r.mask_ns, "step_ns": r.step_ns, "gc_pauses": r.gc_pauses}
    return d


def markdown(rows: list[dict]) -> str:
    head = ("| engine | grammar | vocab | setup | mask mean | p50 | p90 | p99 | max | step p50 | step p99 "
            "| masks | disagree (steps) | true token rejected |")
    # disagree: steps where a grammar-text token's verdict differs from gramask's / steps
    # compared; steps that differ only on special tokens or EOS are counted apart
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        if r["unavailable"]:
            out.append(f"| {r['engine']} | {r['grammar']} | {r['vocab']} | "
                       f"{r['unavailable']} | | | | | | | | | | |")
            continue
        m, s = r["mask_us"], r["step_us"]
        setup = "—" if r["setup_s"] is None else (
            f"{r['setup_s'] * 1e3:.0f} ms" if r["setup_s"] < 1 else f"{r['setup_s']:.2f} s")
        if r["engine"] == "gramask":
            dis = "(reference)"
        elif r["compared_steps"]:
            dis = f"{r['disagree_text_steps']} / {r['compared_steps']}"
            if r["disagree_steps"] > r["disagree_text_steps"]:
                dis += f" (+{r['disagree_steps'] - r['disagree_text_steps']} special/EOS only)"
        else:
            dis = "—"
        rej = str(len(r["rejected"]))
        if r["errors"]:
            rej += f" (+{len(r['errors'])} errors)"
        if r["skipped_docs"]:
            rej += f" ({len(r['skipped_docs'])} docs skipped)"
        out.append(
            f"| {r['engine']} | {r['grammar']} | {r['vocab']} | {setup} | {fmt_us(m.get('mean'))} "
            f"| {fmt_us(m.get('p50'))} "
            f"| {fmt_us(m.get('p90'))} | {fmt_us(m.get('p99'))} | {fmt_us(m.get('max'))} "
            f"| {fmt_us(s.get('p50'))} | {fmt_us(s.get('p99'))} | {r['masks']} | {dis} | {rej} |"
        )
    return "\n".join(out)


def details(rows: list[dict]) -> str:
    out = []
    for r in rows:
        if r["unavailable"]:
            continue
        key = f"{r['engine']} / {r['grammar']} / {r['vocab']}"
        lines = []
        if r["setup_note"]:
            lines.append(f"setup: {r['setup_note']}")
        for n in r["notes"]:
            lines.append(f"note: {n}")
        if r["slowest_masks"]:
            lines.append("slowest masks: " + "; ".join(
                f"{x['us'] / 1e3:.2f} ms at {x['doc']} step {x['step']} (after …{x['before']})"
                for x in r["slowest_masks"]))
        if r["disagree_kinds"]:
            lines.append("disagreement kinds (steps): " + ", ".join(
                f"{k}: {v}" for k, v in sorted(r["disagree_kinds"].items())))
        for ex in r["examples"]:
            lines.append(
                f"  diff at {ex['doc']} step {ex['step']} {ex['kinds']}: before …{ex['before']} next "
                f"{ex['next']}; gramask-only {ex['gramask_only']} {ex['gramask_only_examples']}; "
                f"{r['engine']}-only {ex['other_only']} {ex['other_only_examples']}")
        for x in r["rejected"][:5]:
            lines.append(f"  REJECTED: {x}")
        if len(r["rejected"]) > 5:
            lines.append(f"  ... {len(r['rejected']) - 5} more rejections")
        for x in r["errors"][:5]:
            lines.append(f"  ERROR: {x}")
        if r["skipped_docs"]:
            lines.append("  skipped docs: " + "; ".join(r["skipped_docs"]))
        if lines:
            out.append(f"- **{key}**")
            out.extend("  " + ln for ln in lines)
    return "\n".join(out)
