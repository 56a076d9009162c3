"""The run folder: tidy CSV tables, ``summary.json`` and a self-contained
``report.html`` (plots embedded as PNG data URIs), plus the console summary."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import metrics as M
from .sweep import INITIAL, MODE_CHANNELS

__all__ = ["default_out", "format_summary", "write_run"]

MODE_ORDER = ("fts", "vector", "hybrid")


def default_out() -> Path:
    return Path("results") / _dt.datetime.now().strftime("sweep-%Y%m%d-%H%M%S")


# ---------------------------------------------------------------------------- tables


def _csv(df: pd.DataFrame, path: Path) -> None:
    df = df.copy()
    for col in df.columns:
        if df[col].map(lambda v: isinstance(v, (tuple, list))).any():
            df[col] = df[col].map(lambda v: " ".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
    df.to_csv(path, index=False, float_format="%.6g")


def format_summary(result: Any, split: str = "test") -> str:
    """The console table: backend × mode × policy on ``split``."""
    t = result.summary_table(split).copy()
    for col in t.columns:
        if t[col].dtype.kind == "f":
            t[col] = t[col].map(lambda v: f"{v:.3f}")
    t = t.rename(columns={"false_admission": "FA", "false_admission_ci": "FA 95% CI", "empty_answer": "empty",
                          "ndcg@10_ci": "nDCG 95% CI", "set_f1": "SetF"})
    rec = result.recommendations
    lines = [f"objective: {result.objective.describe()}", ""]
    for r in rec.itertuples():
        flag = "" if r.feasible else "  (NO policy met the bound: lowest false admission shown)"
        lines.append(f"recommended {r.mode:7s}: {r.label}  dev {result.objective.metric}={r.objective:.3f} "
                     f"{result.objective.constraint}={r.constraint:.3f}{flag}")
    lines += ["", f"{split} split:", t.to_string(index=False)]
    timing = result.timings
    if not timing.empty:
        lines += ["", "timing (seconds): " + "; ".join(
            f"{r.backend}/{r.mode}: retrieval {r.retrieval_seconds:.2f}, sweep {r.sweep_seconds + r.build_seconds:.2f} "
            f"for {r.points} points (ratio {r.ratio:.2f})" for r in timing.itertuples())]
    if result.out is not None:
        lines.append(f"run folder: {result.out}")
    return "\n".join(lines)


def summary_json(result: Any) -> dict:
    c = result.collected
    test = result.summary[result.summary["split"] == "test"]
    return {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "datasets": [{"name": x.name, "path": str(x.path), "entries": len(x.memories), "queries": len(x.queries)}
                     for x in c.corpora],
        "backends": list(c.backends),
        "modes": list(c.modes),
        "grid": {"fts_min_terms": list(result.grid.fts_min_terms), "fts_min_coverage": list(result.grid.fts_min_coverage),
                 "vector_min_cosine": list(result.grid.vector_min_cosine), "limits": list(result.grid.limits),
                 "points": {m: result.grid.size(m) for m in c.modes}},
        "objective": {**result.objective.__dict__, "statement": result.objective.describe()},
        "initial": {"fts_min_terms": INITIAL.fts_min_terms, "fts_min_coverage": INITIAL.fts_min_coverage,
                    "vector_min_cosine": INITIAL.vector_min_cosine},
        "recommendations": _records(result.recommendations),
        "summary_test": _records(test.drop(columns=[x for x in test.columns if x.endswith("_ci")])),
        "timings": _records(result.timings),
        "loads": _records(c.loads),
        "embedding": c.embedding,
        "cross_backend_notes": result.notes,
    }


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for rec in df.to_dict("records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (np.floating, float)):
                v = None if math.isnan(v) else float(v)
            elif isinstance(v, (np.bool_,)):
                v = bool(v)
            elif isinstance(v, tuple):
                v = list(v)
            clean[k] = v
        out.append(clean)
    return out


def write_run(result: Any, out: str | Path) -> Path:
    """Write every table, summary.json and report.html into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    c = result.collected
    _csv(result.sweep, out / "sweep.csv")
    _csv(result.recommendations, out / "recommendations.csv")
    _csv(result.summary, out / "summary.csv")
    _csv(result.per_query.drop(columns=["text"]), out / "per_query.csv")
    _csv(result.breakdown, out / "breakdown.csv")
    _csv(result.stats, out / "stats.csv")
    _csv(result.abstention, out / "abstention.csv")
    _csv(result.timings, out / "timings.csv")
    _csv(result.sensitivity, out / "bound_sensitivity.csv")
    _csv(c.loads, out / "loads.csv")
    for name, df in result.cross.items():
        _csv(df, out / f"cross_backend_{name}.csv")
    (out / "summary.json").write_text(json.dumps(summary_json(result), indent=2, ensure_ascii=False, default=str))
    (out / "report.html").write_text(render_html(result), encoding="utf-8")
    return out


# ---------------------------------------------------------------------------- plots


def _figure(**kwargs):
    """A pyplot-free Figure: the report never touches the global backend, so inline
    plots in a notebook that runs the harness keep working."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _dev(result: Any, mode: str) -> pd.DataFrame:
    o = result.objective
    s = result.sweep
    return s[(s["mode"] == mode) & (s["corpus"] == "all") & (s["split"] == o.split) & (s["limit"] == o.limit)]


def plot_thresholds(result: Any, mode: str) -> str:
    """nDCG@10 and false admission vs the mode's threshold, one line per backend (and
    per fts_min_terms for fts)."""
    o = result.objective
    d = _dev(result, mode)
    metrics = (o.metric, o.constraint, "empty_answer", "set_f1")
    fig = _figure(figsize=(4.2 * len(metrics), 3.4))
    axes = fig.subplots(1, len(metrics))
    rec = result.recommendations.set_index("mode").loc[mode]
    for ax, metric in zip(axes, metrics):
        for backend, g in d.groupby("backend"):
            style = "-" if backend == "sqlite" else "--"
            if mode == "fts":
                for terms, gt in g.groupby("fts_min_terms"):
                    gt = gt.sort_values("fts_min_coverage")
                    ax.plot(gt["fts_min_coverage"], gt[metric], style, marker=".", label=f"{backend} terms≥{int(terms)}")
                ax.set_xlabel("fts_min_coverage")
                ax.axvline(rec["fts_min_coverage"], color="k", lw=0.6, ls=":")
            elif mode == "vector":
                g = g.sort_values("vector_min_cosine")
                ax.plot(g["vector_min_cosine"].clip(lower=-0.05), g[metric], style, marker=".", label=backend)
                ax.set_xlabel("vector_min_cosine (−1 drawn at −0.05)")
                ax.axvline(rec["vector_min_cosine"], color="k", lw=0.6, ls=":")
            else:
                fixed = g[(g["fts_min_terms"] == rec["fts_min_terms"]) & (g["fts_min_coverage"] == rec["fts_min_coverage"])]
                fixed = fixed.sort_values("vector_min_cosine")
                ax.plot(fixed["vector_min_cosine"].clip(lower=-0.05), fixed[metric], style, marker=".",
                        label=f"{backend} fts at recommended")
                ax.set_xlabel("vector_min_cosine (fts thresholds fixed)")
                ax.axvline(rec["vector_min_cosine"], color="k", lw=0.6, ls=":")
        ax.set_title(metric, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{mode}: {o.split} split, limit {o.limit} (dotted: recommended)", fontsize=11)
    return _png(fig)


def plot_frontier(result: Any, mode: str) -> str:
    """Every grid point as (false admission, nDCG@10), the Pareto frontier, and the
    chosen, initial and no-admission points."""
    o = result.objective
    d = _dev(result, mode)
    fig = _figure(figsize=(6.4, 4.4))
    ax = fig.subplots()
    colors = {"sqlite": "tab:blue", "oceanbase": "tab:orange"}
    for backend, g in d.groupby("backend"):
        ax.scatter(g[o.constraint], g[o.metric], s=8, alpha=0.35, color=colors.get(backend), label=f"{backend} grid")
        pts = g.sort_values([o.constraint, o.metric], ascending=[True, False])
        best, fx, fy = -np.inf, [], []
        for x, y in zip(pts[o.constraint], pts[o.metric]):
            if y > best:
                best = y
                fx.append(x)
                fy.append(y)
        ax.step(fx, fy, where="post", color=colors.get(backend), lw=1)
    named = result.summary[(result.summary["mode"] == mode) & (result.summary["split"] == o.split)]
    markers = {"recommended": ("*", 220), "initial": ("s", 60), "no-admission": ("X", 70), "joint": ("D", 50)}
    for _, r in named.iterrows():
        if r["policy"] in markers:
            marker, size = markers[r["policy"]]
            ax.scatter(r[o.constraint], r[o.metric], marker=marker, s=size, edgecolor="k",
                       color=colors.get(r["backend"]), label=f"{r['policy']} ({r['backend']})", zorder=5)
    ax.axvline(o.bound, color="red", lw=0.8, ls="--", label=f"bound {o.bound:g}")
    ax.set_xlabel(f"{o.constraint} ({o.split})")
    ax.set_ylabel(f"{o.metric} ({o.split})")
    ax.set_title(f"{mode}: precision / false-admission frontier, limit {o.limit}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    return _png(fig)


def plot_limits(result: Any, mode: str) -> str:
    o = result.objective
    s = result.sweep
    rec = result.recommendations.set_index("mode").loc[mode]
    d = s[(s["mode"] == mode) & (s["corpus"] == "all") & (s["split"] == o.split)]
    for col, ch in (("fts_min_terms", "fts"), ("fts_min_coverage", "fts"), ("vector_min_cosine", "vector")):
        if ch in MODE_CHANNELS[mode]:
            d = d[np.isclose(d[col].astype(float), float(rec[col]))]
    fig = _figure(figsize=(8, 3))
    axes = fig.subplots(1, 2)
    for ax, metric in zip(axes, (o.metric, "recall@10")):
        for backend, g in d.groupby("backend"):
            g = g.sort_values("limit")
            ax.plot(g["limit"], g[metric], marker="o", label=backend)
        ax.set_xlabel("limit")
        ax.set_title(metric, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{mode}: recommended policy vs limit ({o.split})", fontsize=10)
    return _png(fig)


# ---------------------------------------------------------------------------- html


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    if df is None or df.empty:
        return "<p><em>none</em></p>"
    df = df.copy()
    for col in df.columns:
        if df[col].dtype.kind == "f":
            df[col] = df[col].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
        elif df[col].map(lambda v: isinstance(v, (tuple, list))).any():
            df[col] = df[col].map(lambda v: " ".join(map(str, v)))
    return df.to_html(index=False, escape=True, border=0, classes="t")


def _definitions() -> str:
    items = "".join(f"<dt><code>{html.escape(m.name)}</code> ({m.population})</dt><dd>{html.escape(m.definition)}</dd>"
                    for m in M.METRICS)
    extra = [
        ("populations", "positive = queries with at least one qrels line (grade ≥ 1); empty-answer = queries with none "
                        "(negative, forgotten, hard-negative without a relevant entry)."),
        ("hits / ranking", "the hits an online MemoryService.search returns with that policy and limit (the sweep "
                           "replays admission.admit + rrf on cached candidates; a test pins equality)."),
        ("95 % CI", "percentile bootstrap of the mean over queries (2,000 resamples, seed 0)."),
        ("p-values", "ranx.compare paired Student's t-test for nDCG@10 / MRR@10 / recall@10 (positive queries); Fisher "
                     "randomization (10,000 sign flips) for false admission (empty-answer queries) and SetF (all)."),
        ("nAUC", "MTEB-style normalised area under the abstention curve: abstain on the least confident queries first, "
                 "mean utility of the answered ones at abstention rates 0…0.9, scaled so a random order scores 0 and "
                 "the oracle 1. Utility = nDCG@10 without admission at limit 10 (0 for empty-answer queries)."),
        ("Jaccard", "|A ∩ B| / |A ∪ B| of the two backends' admitted sets for one query (1 when both are empty)."),
        ("RBO", "rank-biased overlap (p = 0.9) of the two complete rankings, normalised so identical rankings score 1."),
        ("vector recall@k", "share of the exact cosine top-k (numpy over the same cached vectors, active entries of "
                            "the searched memories) that the backend's vector channel returns in its top k."),
        ("sweep/retrieval ratio", "(array replay of every grid point incl. metrics + building the arrays) / (one "
                                  "svc.retrieve pass over all queries), per backend and mode."),
    ]
    items += "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in extra)
    return f"<dl>{items}</dl>"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1200px;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table.t{border-collapse:collapse;font-size:12px;margin:.5em 0}
table.t th,table.t td{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}
table.t th{background:#f4f4f4}
dt{font-weight:600;margin-top:.4em}dd{margin-left:1.5em}
.note{background:#f8f8f0;padding:.5em 1em;border-left:3px solid #cc9}
img{max-width:100%}
"""


def render_html(result: Any) -> str:
    c = result.collected
    o = result.objective
    modes = [m for m in MODE_ORDER if m in c.modes]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>PowerContext admission sweep</title>"
             f"<style>{CSS}</style></head><body>",
             "<h1>PowerContext relevance-admission sweep</h1>",
             f"<p>Datasets: {', '.join(f'{html.escape(x.name)} ({len(x.memories)} entries, {len(x.queries)} queries)' for x in c.corpora)}. "
             f"Backends: {', '.join(c.backends)}. Modes: {', '.join(modes)}. Grid points: "
             f"{', '.join(f'{m} {result.grid.size(m)}' for m in modes)}. Embedding: "
             f"{html.escape(str(c.embedding.get('profile', 'none')))}.</p>",
             f"<p class='note'><b>Objective.</b> {html.escape(o.describe())}. Chosen on the dev split, reported on "
             f"test next to the initial constants (terms≥{INITIAL.fts_min_terms}, coverage≥{INITIAL.fts_min_coverage:g}, "
             f"cosine≥{INITIAL.vector_min_cosine:g}) and no admission.</p>",
             "<h2>Recommendations</h2>", _table(result.recommendations),
             "<p><code>joint</code> is the single AdmissionPolicy proposed as the library default: the same objective "
             "averaged over the modes, with the bound holding in each.</p>",
             "<h3>The choice under other bounds (dev)</h3>",
             "<p>objective = dev value of the rule's metric (mean over backends), constraint = worst backend's dev "
             "false admission, secondary = the other metric.</p>", _table(result.sensitivity),
             "<h2>Summary (test split)</h2>", _table(result.summary_table("test")),
             "<h2>Summary (dev split)</h2>", _table(result.summary_table("dev")),
             "<h2>Statistical tests (test split)</h2>", _table(result.stats, 4)]
    parts.append("<h2>Metric vs threshold</h2>")
    for mode in modes:
        parts.append(f"<h3>{mode}</h3><img src='{plot_thresholds(result, mode)}'>")
    parts.append("<h2>Precision / false-admission frontier</h2>")
    for mode in modes:
        parts.append(f"<img src='{plot_frontier(result, mode)}'>")
    parts.append("<h2>Limit sensitivity</h2>")
    for mode in modes:
        parts.append(f"<img src='{plot_limits(result, mode)}'>")
    b = result.breakdown
    focus = b[(b["split"] == "test") & (b["policy"].isin(["recommended", "initial", "no-admission"]))]
    cols = ["backend", "mode", "policy", "value", "queries", "ndcg@10", "recall@10", "set_f1", "false_admission", "empty_answer"]
    for facet in ("tag", "lang", "corpus"):
        parts += [f"<h2>Breakdown by {facet} (test split)</h2>", _table(focus[focus["facet"] == facet][cols])]
    parts += ["<h2>Abstention (nAUC)</h2>", _table(result.abstention[result.abstention["split"] == "all"])]
    parts.append("<h2>Cross-backend comparison</h2>")
    if result.notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in result.notes) + "</ul>")
    cross = result.cross
    if "deltas" in cross:
        d = cross["deltas"]
        parts += ["<h3>Metric deltas (OceanBase − SQLite, all queries)</h3>", _table(d[d["split"] == "all"], 4)]
        agg = cross["agreement"].groupby(["mode", "policy"]).agg(
            queries=("jaccard", "size"), jaccard=("jaccard", "mean"), rbo=("rbo", "mean"),
            same_set=("same_set", "mean"), identical=("identical", "mean")).reset_index()
        parts += ["<h3>Agreement of admitted hits per query</h3>", _table(agg)]
        pools = cross["pools"].groupby(["mode", "channel"]).agg(
            queries=("jaccard", "size"), same_order=("same_order", "mean"), same_set=("same_set", "mean"),
            jaccard=("jaccard", "mean"), truncated=("truncated", "mean"), signals_equal=("signals_equal", "mean")).reset_index()
        parts += ["<h3>Retrieved candidate pools (first pool_size(8) = 32 rows)</h3>", _table(pools)]
    if "spot_check" in cross:
        spot = cross["spot_check"].groupby(["backend", "mode", "policy"]).agg(
            searches=("equal", "size"), identical=("equal", "sum")).reset_index()
        parts += ["<h3>Online spot check: svc.search vs the replay</h3>", _table(spot)]
    if "vector_recall" in cross:
        parts += ["<h3>Vector channel recall vs exact search</h3>", _table(cross["vector_recall"], 4)]
    t = result.timings
    parts += ["<h2>Timing</h2>", _table(t), _table(c.loads),
              f"<p>Embedding: {html.escape(json.dumps(c.embedding, default=str))}</p>",
              "<h2>Metric definitions</h2>", _definitions(), "</body></html>"]
    return "\n".join(parts)
