"""``harness.calibrate``: fit a calibration artefact on a corpus (yours, or one exported
from judged questions) and write what it rests on — the artefact, held-out scores per
cell, the reliability diagram per language pair, the ECE — to an output folder.

    from powercontext.eval import harness
    report = harness.calibrate("my-corpus", "e5", out="results/calibration")
    report.calibration.save("e5-mine.json")     # svc.calibration = Calibration.load(...)
    report.cells                                 # n, ECE, Brier per channel and cell (⚠ < 30)
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.calibration import Calibration

from ..scoring import calibrate as C
from ..private import private_dir, private_file, write_private_text

__all__ = ["CalibrationReport", "acalibrate", "plot_reliability", "report_from_frame"]


@dataclass
class CalibrationReport:
    """The fitted artefact (on every labelled candidate) and its held-out scores."""

    calibration: Calibration
    scored: pd.DataFrame  # every labelled candidate with its held-out probability and fold
    cells: pd.DataFrame  # C.cell_table: per channel and cell
    folds: str
    out: Path | None = None

    @property
    def ece(self) -> dict[str, float]:
        """Held-out ECE per channel (pooled over its cells)."""
        pooled = self.cells[self.cells["cell"] == "(pooled)"]
        return dict(zip(pooled["channel"], pooled["ece"]))


def report_from_frame(frame: pd.DataFrame, profile: str, folds: int | str = "auto", **fit_options: Any
                      ) -> CalibrationReport:
    """Fit on a ``calibrate.labelled`` frame and score it held out (``folds="auto"``:
    leave one corpus out with two corpora or more, else 5 folds by query)."""
    if folds == "auto":
        folds = "corpus" if frame["corpus"].nunique() >= 2 else 5
    calibration = C.fit(frame, profile, corpora=sorted(frame["corpus"].unique()), **fit_options)
    scored = C.score(frame, profile, folds, **fit_options)
    cells = C.cell_table(scored, calibration.min_cell_n)
    return CalibrationReport(calibration, scored, cells, str(folds))


def plot_reliability(scored: pd.DataFrame, title: str = "", min_cell_n: int = 30):
    """Predicted vs observed per cell (a line per language pair / query length), one
    panel per channel; a cell under ``min_cell_n`` is drawn dashed and marked ⚠."""
    from matplotlib.figure import Figure

    channels = [c for c in ("vector", "fts", "hybrid") if c in set(scored["channel"])]
    fig = Figure(figsize=(5.2 * max(len(channels), 1), 4.6))
    axes = fig.subplots(1, max(len(channels), 1), squeeze=False)[0]
    for ax, channel in zip(axes, channels):
        data = scored[(scored["channel"] == channel) & scored["probability"].notna()]
        ax.plot([0, 1], [0, 1], color="0.6", linewidth=0.8)
        for cell, g in data.groupby("cell"):
            p, y = g["probability"].to_numpy(float), g["label"].to_numpy(float)
            which = np.minimum((p * C.BINS).astype(int), C.BINS - 1)
            xs = [p[which == b].mean() for b in np.unique(which)]
            ys = [y[which == b].mean() for b in np.unique(which)]
            small = len(g) < min_cell_n
            ax.plot(xs, ys, marker="o", markersize=3, linestyle="--" if small else "-",
                    label=f"{cell} n={len(g)}{' ⚠' if small else ''} ECE {C.ece(p, y):.3f}")
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="predicted probability", ylabel="observed relevant share",
               title=f"{title} {channel}".strip())
        ax.legend(fontsize=6.5, loc="upper left")
    return fig


def write(report: CalibrationReport, out: str | Path, title: str = "") -> Path:
    """calibration.json (the artefact), cells.csv, reliability.png and calibration.md."""
    out = private_dir(out)
    write_private_text(out / "calibration.json",
                       json.dumps(report.calibration.to_dict(), indent=1, sort_keys=True) + "\n")
    write_private_text(out / "cells.csv", report.cells.to_csv(index=False))
    with private_file(out / "reliability.png", "wb") as fh:
        plot_reliability(report.scored, title, report.calibration.min_cell_n).savefig(
            fh, format="png", dpi=120, bbox_inches="tight", metadata={"Software": None})
    lines = [f"# Calibration of {report.calibration.profile}", "",
             f"Fitted on {', '.join(report.calibration.fitted_on)}; scores held out ({report.folds}). "
             f"Cells under {report.calibration.min_cell_n} labelled candidates (⚠) use the pooled map.", "",
             "| channel | cell | n | relevant | ECE | Brier | predicted | observed | |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in report.cells.itertuples():
        lines.append(f"| {r.channel} | {r.cell} | {r.n} | {r.relevant} | {r.ece:.3f} | {r.brier:.3f} | "
                     f"{r.predicted:.3f} | {r.observed:.3f} | {r.flag} |")
    lines += ["", "![reliability](reliability.png)", ""]
    write_private_text(out / "calibration.md", "\n".join(lines))
    report.out = out
    return out


async def acalibrate(datasets: Any, profile: Any, out: str | Path | None = None, folds: int | str = "auto",
                     backends: Sequence[str] = ("sqlite",), min_cell_n: int = 30, vector_signal: str = "auto",
                     progress: bool = False, **collect_options: Any) -> CalibrationReport:
    """Load the corpora into a fresh database embedding with ``profile``, retrieve every
    question in fts and vector mode, fit and score the artefact, and (with ``out``)
    write it with its report."""
    from ..running.collect import collect
    from ..corpora.datasets import resolve_datasets

    datasets = resolve_datasets(datasets)
    with tempfile.TemporaryDirectory(prefix="pc-calibrate-") as tmp:
        collected = await collect(datasets, backends=tuple(backends), modes=("fts", "vector"), out=tmp,
                                  embedding=profile, progress=progress, **collect_options)
    frame = C.labelled(collected.candidates, collected.qrels)
    report = report_from_frame(frame, collected.profile_id, folds, min_cell_n=min_cell_n,
                               vector_signal=vector_signal)
    if out is not None:
        write(report, out, title=str(collected.profile_id))
    return report
