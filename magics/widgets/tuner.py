"""ThresholdTuner: explore a harness sweep without touching a database.

``ThresholdTuner(result)`` takes what ``powercontext.eval.harness.sweep`` returns (or
its ``.sweep`` DataFrame: one row per backend × mode × corpus × split × thresholds ×
limit, one column per metric). Dropdowns pick the slice, sliders pick the thresholds
that matter for the mode (fts: terms and coverage; vector: cosine; hybrid: all three)
and the limit; the selected sweep point's metrics update live, and the plot shows the
chosen metric and the false-admission rate along the mode's main threshold, with the
selected point and the harness's recommendation marked.
"""

from __future__ import annotations

import math
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..display import esc

__all__ = ["ThresholdTuner"]

THRESHOLDS = ("fts_min_terms", "fts_min_coverage", "vector_min_cosine")
RELEVANT = {"fts": ("fts_min_terms", "fts_min_coverage"), "vector": ("vector_min_cosine",), "hybrid": THRESHOLDS}
AXIS = {"fts": "fts_min_coverage", "vector": "vector_min_cosine", "hybrid": "vector_min_cosine"}
SHOWN = ("ndcg@10", "mrr@10", "recall@10", "set_precision", "set_recall", "set_f1", "false_admission", "empty_answer")


def _values(frame: pd.DataFrame, column: str) -> list[Any]:
    return sorted(v for v in frame[column].dropna().unique())


class ThresholdTuner(widgets.VBox):
    """State: ``backend``, ``mode``, ``split``, ``corpus``, ``metric`` (Dropdowns);
    ``fts_min_terms``, ``fts_min_coverage``, ``vector_min_cosine``, ``limit``
    (SelectionSliders over the swept values); ``point`` (the selected row), ``curve``
    (the plotted rows), ``table`` (HTML of the point's metrics), ``plot`` (Output)."""

    def __init__(self, result: Any, metric: str = "ndcg@10", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.frame = result.sweep if hasattr(result, "sweep") else result
        if not isinstance(self.frame, pd.DataFrame) or not set(THRESHOLDS) <= set(self.frame.columns):
            raise TypeError("ThresholdTuner takes a harness SweepResult or its .sweep DataFrame")
        self.recommendations = getattr(result, "recommendations", None)
        f = self.frame
        pick = lambda col, prefer: prefer if prefer in set(f[col]) else sorted(set(f[col]))[0]  # noqa: E731
        self.backend = widgets.Dropdown(options=sorted(set(f.backend)), value=pick("backend", "sqlite"), description="backend")
        self.mode = widgets.Dropdown(options=sorted(set(f["mode"])), value=pick("mode", "fts"), description="mode")
        self.split = widgets.Dropdown(options=sorted(set(f.split)), value=pick("split", "dev"), description="split")
        self.corpus = widgets.Dropdown(options=sorted(set(f.corpus)), value=pick("corpus", "all"), description="corpus")
        metrics = [m for m in SHOWN if m in f.columns and m != "false_admission"]
        self.metric = widgets.Dropdown(options=metrics, value=metric if metric in metrics else metrics[0], description="metric")
        self.sliders = {name: widgets.SelectionSlider(options=[0], description=name, continuous_update=False)
                        for name in (*THRESHOLDS, "limit")}
        self.fts_min_terms, self.fts_min_coverage, self.vector_min_cosine, self.limit = self.sliders.values()
        self.table = widgets.HTML()
        self.plot = widgets.Image(format="png")
        self.point: pd.Series | None = None
        self._sliced = False  # before the first slice, sliders hold placeholders
        self.curve = pd.DataFrame()
        for control in (self.backend, self.mode, self.split, self.corpus):
            control.observe(self._reslice, names="value")
        for control in (*self.sliders.values(), self.metric):
            control.observe(self._update, names="value")
        self.children = [
            widgets.HBox([self.backend, self.mode]), widgets.HBox([self.split, self.corpus, self.metric]),
            widgets.HBox([self.fts_min_terms, self.fts_min_coverage]), widgets.HBox([self.vector_min_cosine, self.limit]),
            self.table, self.plot,
        ]
        self._reslice()

    def _slice(self) -> pd.DataFrame:
        f = self.frame
        return f[(f.backend == self.backend.value) & (f["mode"] == self.mode.value)
                 & (f.split == self.split.value) & (f.corpus == self.corpus.value)]

    def _reslice(self, change: Any = None) -> None:
        """New slice: reset each slider to the values swept there, keeping the current
        value when it was swept too."""
        part = self._slice()
        self._quiet = True
        for name, slider in self.sliders.items():
            values = _values(part, name)
            relevant = name == "limit" or name in RELEVANT[self.mode.value]
            slider.disabled = not relevant or not values
            if values:
                swept = self._sliced and slider.value in values
                keep = slider.value if swept else self._default(name, values)
                slider.options = values
                slider.value = keep
        self._quiet = False
        self._sliced = True
        self._update()

    def _default(self, name: str, values: list[Any]) -> Any:
        rec = self._recommended()
        if rec is not None and name in rec and rec[name] in values:
            return rec[name]
        return 8 if name == "limit" and 8 in values else values[len(values) // 2]

    def _recommended(self) -> dict[str, Any] | None:
        if self.recommendations is None or not len(self.recommendations):
            return None
        rows = self.recommendations[self.recommendations["mode"] == self.mode.value]
        return None if rows.empty else {k: rows.iloc[0][k] for k in THRESHOLDS}

    def _update(self, change: Any = None) -> None:
        if getattr(self, "_quiet", False):
            return
        part = self._slice()
        chosen = part[part.limit == self.limit.value]
        for name in RELEVANT[self.mode.value]:
            chosen = chosen[chosen[name] == self.sliders[name].value]
        self.point = chosen.iloc[0] if len(chosen) else None
        axis = AXIS[self.mode.value]
        curve = part[part.limit == self.limit.value]
        for name in RELEVANT[self.mode.value]:
            if name != axis:
                curve = curve[curve[name] == self.sliders[name].value]
        self.curve = curve.sort_values(axis)
        self.table.value = self._table_html()
        self._draw(axis)

    def _table_html(self) -> str:
        if self.point is None:
            return "<i>no sweep point at these thresholds</i>"
        cells = "".join(
            f"<td style='padding:2px 8px'><b>{esc(m)}</b><br>{self.point[m]:.3f}</td>"
            for m in SHOWN if m in self.point.index and not (isinstance(self.point[m], float) and math.isnan(self.point[m]))
        )
        return f"<table><tr>{cells}</tr></table>"

    def _draw(self, axis: str) -> None:
        """Render to PNG bytes with a pyplot-free Figure: no global backend state, and
        an Image widget (unlike an Output widget) adds no cell outputs per redraw."""
        import io

        from matplotlib.figure import Figure

        fig = Figure(figsize=(6, 3))
        ax = fig.subplots()
        ax.plot(self.curve[axis], self.curve[self.metric.value], marker="o", label=self.metric.value)
        ax.plot(self.curve[axis], self.curve["false_admission"], marker="x", label="false_admission")
        if self.point is not None:
            ax.axvline(self.point[axis], color="grey", linestyle="--", label="selected")
        rec = self._recommended()
        if rec is not None:
            ax.axvline(rec[axis], color="green", linestyle=":", label="recommended")
        ax.set_xlabel(axis)
        ax.set_ylim(0, 1.02)
        ax.legend(loc="best", fontsize="small")
        ax.set_title(f"{self.backend.value} · {self.mode.value} · {self.split.value} · limit {self.limit.value}")
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
        self.plot.value = buf.getvalue()

    def __repr__(self) -> str:  # stable text for nbval
        if self.point is None:
            return "ThresholdTuner(no point)"
        picked = ", ".join(f"{n}={self.point[n]:g}" for n in RELEVANT[self.mode.value])
        return (f"ThresholdTuner({self.backend.value}/{self.mode.value}/{self.split.value}, {picked}, limit={self.limit.value}: "
                f"{self.metric.value}={self.point[self.metric.value]:.3f}, false_admission={self.point['false_admission']:.3f})")
