"""Analyzer v1 and v2 side by side: the same corpora swept twice, every database of a
run created with one analyzer (v1: Analyzer v1; v2: v1 + Snowball English stemming of
Latin terms). The vector channel reads no analyzer, so the two runs differ only where
full-text candidates do; the table puts each policy's figures next to each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from ..private import write_private_text

METRICS = ("ndcg@10", "false_admission", "empty_answer")
POLICIES = ("default", "initial", "recommended")


def side_by_side(results: dict[str, Any]) -> pd.DataFrame:
    """One row per backend × mode × policy, a column per analyzer × metric.

    Policies: the untuned default and the RFC's initial constants and the run's own
    recommendation on the test split (``all`` for a run chosen by k folds), and each
    family's leave-one-corpus-out figure (mean nDCG@10 over the held-out corpora, the
    worst false admission among them)."""
    frames = []
    for analyzer, result in results.items():
        split = "all" if result.folds else "test"
        s = result.summary
        s = s[(s["split"] == split) & s["policy"].isin(POLICIES)]
        rows = s[["backend", "mode", "policy", "label", *METRICS]].assign(analyzer=analyzer, split=split)
        loo = result.transfer
        if len(loo):
            held = (loo[loo["family"].notna()]
                    .groupby(["backend", "mode", "family"], as_index=False)
                    .agg(**{"ndcg@10": ("ndcg@10", "mean"), "false_admission": ("false_admission", "max"),
                            "label": ("policy", lambda p: " | ".join(dict.fromkeys(p)))}))
            held = held.assign(policy="leave-one-out: " + held["family"], empty_answer=float("nan"),
                               analyzer=analyzer, split="held-out corpora")
            rows = pd.concat([rows, held.drop(columns=["family"])], ignore_index=True)
        frames.append(rows)
    long = pd.concat(frames, ignore_index=True)
    index = ["backend", "mode", "policy", "split"]
    # unstack, not pivot_table: only the (backend, mode, policy, split) rows that exist
    wide = long.drop_duplicates([*index, "analyzer"]).set_index([*index, "analyzer"])[[*METRICS, "label"]]
    wide = wide.unstack("analyzer")
    wide.columns = [f"{column} {analyzer}" for column, analyzer in wide.columns]
    order = [f"{c} {a}" for c in (*METRICS, "label") for a in results if f"{c} {a}" in wide.columns]
    return wide[order].reset_index().sort_values(index, kind="stable").reset_index(drop=True)


def format_table(table: pd.DataFrame, analyzers: Sequence[str]) -> str:
    """The console / markdown view: nDCG@10 and false admission per analyzer."""
    shown = table.copy()
    for col in shown.columns:
        if shown[col].dtype.kind == "f":
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    cols = ["backend", "mode", "policy", *[f"{m} {a}" for m in ("ndcg@10", "false_admission") for a in analyzers]]
    head = "| " + " | ".join(cols) + " |"
    rule = "|" + "---|" * len(cols)
    body = ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in shown.to_dict("records")]
    return "\n".join([head, rule, *body])


def write(table: pd.DataFrame, analyzers: Sequence[str], out: Path) -> None:
    from ..runfolder import write_table
    from ..scoring.metrics import METRIC_NAMES

    write_table(table, out, "analyzers", float32=METRIC_NAMES)
    write_private_text(
        out / "analyzers.md", f"# Analyzers {' vs '.join(analyzers)}\n\nEach analyzer's run folder is beside this file "
        f"({', '.join(analyzers)}/). Test split unless the run chose by k folds.\n\n"
        + format_table(table, analyzers) + "\n")
