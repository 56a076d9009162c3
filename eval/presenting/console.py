"""The summary a sweep prints in the terminal: at most ``WIDTH`` columns, with a legend.

The run folder and report.html carry every column; the terminal gets what decides a
threshold — each mode's recommendation, and per database × mode × named policy the
ranking quality and the false admission with their CIs — and says what every
abbreviation means (the table once was ~240 columns wide, with ``xs``, ``SetF`` and
``FA`` unexplained)."""

from __future__ import annotations

import textwrap
from typing import Any

import pandas as pd

__all__ = ["WIDTH", "LEGEND", "format_summary"]

WIDTH = 100
LEGEND = (
    "nDCG@10: ranking quality of the hits, positive queries; R@10: recall@10; FA: false admission, the share "
    "of empty-answer queries given any hit (lower is better); empty: the share of positive queries given "
    "nothing; hits: mean hits per query; [95% CI]: bootstrap over queries. Policies: recommended (this run's, "
    "per mode), joint (one for every mode), initial (the RFC's constants), default (AdmissionPolicy(), the "
    "library's), no-admission. Thresholds: terms/cov: FTS matched terms/coverage; xs: cross-script terms; "
    "cos: raw cosine; centred: centred cosine; uncovered: a vector candidate outside the model's scripts."
)
#: (header, summary column, its CI column or None, width)
COLUMNS = (("nDCG@10 [95% CI]", "ndcg@10", "ndcg@10_ci", 20), ("R@10", "recall@10", None, 5),
           ("FA [95% CI]", "false_admission", "false_admission_ci", 20), ("empty", "empty_answer", None, 5),
           ("hits", "hits", None, 5))


def wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


def _cell(row: pd.Series, column: str, ci: str | None, width: int) -> str:
    value = row.get(column)
    text = "" if value is None or pd.isna(value) else f"{value:.3f}"
    if ci and isinstance(row.get(ci), str):
        text += " " + row[ci].replace(", ", ",")
    return text.rjust(width)


def table_lines(table: pd.DataFrame) -> list[str]:
    """One line per database × mode × policy, every line ≤ WIDTH."""
    db = max([len("database"), *map(len, table["backend"])])
    policy = max([len("policy"), *map(len, table["policy"])])
    head = f"{'database':<{db}}  {'mode':<6}  {'policy':<{policy}}  " + "  ".join(
        h.rjust(w) for h, _, _, w in COLUMNS)
    lines = [head]
    for _, row in table.iterrows():
        cells = "  ".join(_cell(row, c, ci, w) for _, c, ci, w in COLUMNS)
        lines.append(f"{row['backend']:<{db}}  {row['mode']:<6}  {row['policy']:<{policy}}  {cells}")
    return lines


def format_summary(result: Any, split: str | None = None) -> str:
    """The console summary of a SweepResult on ``split`` (see ``summary_table``)."""
    split = split or result.headline_split
    o = result.objective
    lines = wrap(f"objective: {o.describe()}", "  ")
    if result.folds:
        lines += wrap(f"method: {result.method}", "  ")
    lines.append("")
    for r in result.recommendations.to_dict("records"):
        flag = "" if r["feasible"] else "  (NO policy met the bound: lowest false admission shown)"
        lines += wrap(f"recommended {r['mode']:<7} {r['label']}  ({o.split} {o.metric} {r['objective']:.3f}, "
                      f"{o.constraint} {r['constraint']:.3f}){flag}", " " * 20)
        if result.folds:
            lines += wrap(f"  {result.folds}-fold held out: {o.metric} {r[f'heldout_{o.metric}']:.3f} "
                          f"± {r[f'heldout_{o.metric}_sd']:.3f}, {o.constraint} {r[f'heldout_{o.constraint}']:.3f} "
                          f"± {r[f'heldout_{o.constraint}_sd']:.3f} (the folds chose {int(r['fold_policies'])} "
                          f"distinct polic{'y' if r['fold_policies'] == 1 else 'ies'})", "    ")
    table = result.summary_table(split)
    lines += ["", f"{split} split (every column and each row's thresholds: summary.csv in the run folder):"]
    lines += table_lines(table)
    lines += ["", *wrap("legend: " + LEGEND, "  ")]
    timing = result.timings
    if not timing.empty:
        lines += ["", f"{'timing (s)':<18} {'retrieval':>9}  {'sweep':>7}  {'points':>7}  {'ratio':>5}"]
        lines += [f"{r.backend + '/' + r.mode:<18} {r.retrieval_seconds:>9.2f}  {r.sweep_seconds + r.build_seconds:>7.2f}"
                  f"  {r.points:>7}  {r.ratio:>5.2f}" for r in timing.itertuples()]
    if result.out is not None:
        lines.append(f"run folder: {result.out}")
    return "\n".join(lines)


def side_by_side_lines(table: pd.DataFrame, names: list[str], mode: str = "hybrid", what: str = "model",
                       file: str = "embeddings.md") -> list[str]:
    """The models' (or analyzers') side-by-side table of one mode in at most WIDTH
    columns: nDCG@10 and false admission per ``what``, one line per database × policy
    (the markdown file in the run folder has every column and each policy's label)."""
    if "mode" in table.columns and len(table) and mode not in set(table["mode"]):
        mode = str(table["mode"].iloc[0])  # a run without hybrid (`analyzers --modes fts`) shows its own mode
    part = table[table["mode"] == mode] if "mode" in table.columns else table
    policy = [p.replace("leave-one-out: ", "loo ") for p in part["policy"]]
    width = max([len("policy"), *map(len, policy)])
    db = max([len("database"), *map(len, part["backend"])])
    cells = [(f"nDCG {n}", f"ndcg@10 {n}") for n in names] + [(f"FA {n}", f"false_admission {n}") for n in names]
    w = max(8, *(len(h) for h, _ in cells))
    lines = wrap(f"{mode}, per {what} (nDCG@10: ranking quality; FA: false admission; loo: the family tuned on "
                 f"the other corpora, mean over held-out corpora; every column and each policy's label: {file}):")
    lines.append(f"{'database':<{db}}  {'policy':<{width}}  " + "  ".join(h.rjust(w) for h, _ in cells))
    for (_, row), name in zip(part.iterrows(), policy):
        values = ["" if c not in row or pd.isna(row[c]) else f"{row[c]:.3f}" for _, c in cells]
        lines.append(f"{row['backend']:<{db}}  {name:<{width}}  " + "  ".join(v.rjust(w) for v in values))
    return lines


def where_lines(results: dict[str, Any], extra: list[tuple[str, Any]] = ()) -> list[str]:
    """Every run folder and report of a run, one per line (``name: path``), and any
    ``extra`` (label, path) such as the side-by-side file."""
    from pathlib import Path

    lines = []
    for name, result in results.items():
        if result.out is None:
            continue
        out = Path(result.out).resolve()
        label = f"{name} " if name else ""
        lines.append(f"{label}run folder: {out}")
        if (out / "report.html").is_file():
            lines.append(f"{label}report: {out / 'report.html'}")
    lines += [f"{label}: {Path(path).resolve()}" for label, path in extra]
    return lines
