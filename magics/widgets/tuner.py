"""ThresholdTuner: explore a harness sweep without touching a database.

``ThresholdTuner(result)`` takes what ``powercontext.eval.harness.sweep`` returns (or
its ``.sweep`` DataFrame: one row per backend × mode × corpus × split × thresholds ×
limit, one column per metric). Dropdowns pick the slice (and the admission family,
when the sweep has several), sliders pick the thresholds the slice reads — one per
admission policy field (``powercontext.memory.policy_fields``) that is a column of the
sweep, so a field added to the policy and swept gets a slider with no code here — and
the limit; the selected sweep point's metrics update live, and the plot shows the
chosen metric and the false-admission rate along the mode's main threshold, with the
selected point and the harness's recommendation marked.

The plot is SVG (sharp at any zoom, shown at its natural size); the no-admission
point (cosine −1: admit everything) sits just left of the swept range under a "none"
tick instead of stretching the axis to −1. Integer fields are IntSliders, the
float thresholds and the limit are SelectionSliders over the swept values, and every
label is shown whole. Without a live kernel the tuner displays its selected point and
plotted curve as tables.

Given a SweepResult, the tuner also shows the run's named points (``result.peers``):
each peer library's documented default (mem0, LangChain, LlamaIndex, Graphiti, … —
``powercontext.eval.scoring.references``) replayed at its own top-k, and this project's
default and recommendation, as a table under the selected point's metrics and, where
a peer's policy sets the plotted threshold, as labelled diamonds on the plot.
"""

from __future__ import annotations

import io
import math
from typing import Any

import ipywidgets as widgets
import pandas as pd

from powercontext.eval.presenting.plots import cosine_positions, place_labels
from powercontext.memory import policy_fields

from ..display import esc, html_table
from ._base import StaticFallback, frame_text

__all__ = ["ThresholdTuner"]

#: The columns every sweep has besides its thresholds.
REQUIRED = ("backend", "mode", "corpus", "split", "limit")
SHOWN = ("ndcg@10", "mrr@10", "recall@10", "set_precision", "set_recall", "set_f1", "false_admission", "empty_answer")
#: Labels shown whole: descriptions take the width they need.
LABEL_STYLE = {"description_width": "initial"}
#: Deterministic SVG (no date, fixed ids): a re-executed notebook diffs cleanly.
SVG_RC = {"svg.hashsalt": "pcmem-tuner", "svg.fonttype": "path"}


def _present(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _order(value: Any) -> tuple:
    return (1, 0.0, value) if isinstance(value, str) else (0, float(value), "")


def _values(frame: pd.DataFrame, column: str, integer: bool) -> list[Any]:
    """The swept values of ``column`` in ``frame``: ints for integer thresholds, floats
    (or a word such as ``refuse``) otherwise."""
    values = sorted({v for v in frame[column] if _present(v)}, key=_order)
    if integer:
        return [int(v) for v in values]
    return [v if isinstance(v, str) else float(v) for v in values]


def _label(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if name == "vector_min_cosine" and value <= -1:
        return "none (−1)"
    return f"{value:g}"


def _set_int_range(slider: widgets.IntSlider, values: list[int], value: int) -> None:
    lo, hi = values[0], values[-1]
    if lo > slider.max:  # widen upwards first so that min never exceeds max
        slider.max, slider.min = hi, lo
    else:
        slider.min, slider.max = lo, hi
    slider.value = value


class ThresholdTuner(StaticFallback, widgets.VBox):
    """State: ``backend``, ``mode``, ``split``, ``corpus``, ``metric`` (and ``family``
    for a sweep of several admission families) Dropdowns; one slider per threshold column in
    ``sliders`` — ``fts_min_terms`` and the other integer thresholds are IntSliders,
    ``fts_min_coverage``, ``vector_min_cosine``, … and ``limit`` SelectionSliders over
    the swept values, each enabled where the slice reads it; ``point`` (the selected
    row), ``curve`` (the plotted rows), ``table`` (HTML of the point's metrics),
    ``plot`` (an SVG Image)."""

    def __init__(self, result: Any, metric: str = "ndcg@10", fields: Any = None, **kwargs: Any) -> None:
        """``fields``: the policy fields to offer (default ``policy_fields.FIELDS``): a
        slider for each one that is a column of the sweep, enabled where the slice reads
        it (non-NaN); integer fields get IntSliders."""
        super().__init__(**kwargs)
        self.frame = result.sweep if hasattr(result, "sweep") else result
        tunable = [f for f in (policy_fields.FIELDS if fields is None else fields) if f.tunable]
        if (not isinstance(self.frame, pd.DataFrame) or not set(REQUIRED) <= set(self.frame.columns)
                or not any(f.name in self.frame.columns for f in tunable)):
            raise TypeError("ThresholdTuner takes a harness SweepResult or its .sweep DataFrame")
        self.integer = frozenset({f.name for f in tunable if f.integer} | {"limit"})
        self.recommendations = getattr(result, "recommendations", None)
        peers = getattr(result, "peers", None)
        self.peers = peers if isinstance(peers, pd.DataFrame) and len(peers) else None
        self.named = pd.DataFrame()  # the peers' defaults (and this project's) in the selected slice
        f = self.frame
        pick = lambda col, prefer: prefer if prefer in set(f[col]) else sorted(set(f[col]))[0]  # noqa: E731
        dropdown = lambda name, options, value: widgets.Dropdown(  # noqa: E731
            options=options, value=value, description=name, style=LABEL_STYLE)
        self.backend = dropdown("backend", sorted(set(f.backend)), pick("backend", "sqlite"))
        self.mode = dropdown("mode", sorted(set(f["mode"])), pick("mode", "fts"))
        self.split = dropdown("split", sorted(set(f.split)), pick("split", "dev"))
        self.corpus = dropdown("corpus", sorted(set(f.corpus)), pick("corpus", "all"))
        families = sorted(set(f.family)) if "family" in f else []
        # a family Dropdown only when there is a choice (a sweep cut to one family reads like the floors' own)
        self.family = dropdown("family", families, pick("family", "floors")) if len(families) > 1 else None
        metrics = [m for m in SHOWN if m in f.columns and m != "false_admission"]
        self.metric = dropdown("metric", metrics, metric if metric in metrics else metrics[0])
        self.params = [t.name for t in tunable if t.name in f.columns]
        self.sliders: dict[str, widgets.IntSlider | widgets.SelectionSlider] = {
            name: (widgets.IntSlider(value=1, min=1, max=1, description=name, continuous_update=False, style=LABEL_STYLE)
                   if name in self.integer and name != "limit" else
                   widgets.SelectionSlider(options=[0], description=name, continuous_update=False, style=LABEL_STYLE))
            for name in (*self.params, "limit")
        }
        for name, slider in self.sliders.items():  # t.fts_min_terms, t.limit …
            setattr(self, name, slider)
        self.table = widgets.HTML()
        self.plot = widgets.Image(format="svg+xml")
        self.point: pd.Series | None = None
        self.relevant: list[str] = []  # the thresholds the current slice reads
        self._swept: dict[str, int] = {}  # how many values the slice sweeps per threshold
        self._sliced = False  # before the first slice, sliders hold placeholders
        self.curve = pd.DataFrame()
        slicers = [self.backend, self.mode, self.split, self.corpus] + ([self.family] if self.family else [])
        for control in slicers:
            control.observe(self._reslice, names="value")
        for control in (*self.sliders.values(), self.metric):
            control.observe(self._update, names="value")
        sliders = list(self.sliders.values())
        self.children = [
            widgets.HBox(slicers[:2] + slicers[4:]), widgets.HBox([self.split, self.corpus, self.metric]),
            *(widgets.HBox(sliders[i:i + 2]) for i in range(0, len(sliders), 2)),
            self.table, self.plot,
        ]
        self._reslice()

    def _slice(self) -> pd.DataFrame:
        f = self.frame
        keep = ((f.backend == self.backend.value) & (f["mode"] == self.mode.value)
                & (f.split == self.split.value) & (f.corpus == self.corpus.value))
        if self.family is not None:
            keep &= f.family == self.family.value
        return f[keep]

    @property
    def axis(self) -> str:
        """The threshold the plot runs along: coverage for fts, else the vector
        threshold the slice sweeps most (the centred cosine for a centred family)."""
        if self.mode.value == "fts" or not self.relevant:
            return "fts_min_coverage"
        vector = [n for n in ("vector_min_cosine", "vector_min_centred") if n in self.relevant]
        return max(vector or self.relevant, key=lambda n: self._swept[n])

    def _reslice(self, change: Any = None) -> None:
        """New slice: reset each slider to the values swept there, keeping the current
        value when it was swept too."""
        part = self._slice()
        self._quiet = True
        self.relevant, self._swept = [], {}
        for name, slider in self.sliders.items():
            values = _values(part, name, name in self.integer)
            self._swept[name] = len(values)
            slider.disabled = not values
            if not values:
                continue
            if name != "limit":
                self.relevant.append(name)
            swept = self._sliced and slider.value in values
            keep = slider.value if swept else self._default(name, values)
            if isinstance(slider, widgets.IntSlider):
                _set_int_range(slider, values, int(keep))
            else:
                slider.options = [(_label(name, v), v) for v in values]
                slider.value = keep
        self._quiet = False
        self._sliced = True
        self._update()

    def _default(self, name: str, values: list[Any]) -> Any:
        rec = self._recommended()
        if rec is not None and name in rec and rec[name] in values:
            return values[values.index(rec[name])]
        return 8 if name == "limit" and 8 in values else values[len(values) // 2]

    def _recommended(self) -> dict[str, Any] | None:
        if self.recommendations is None or not len(self.recommendations):
            return None
        rows = self.recommendations[self.recommendations["mode"] == self.mode.value]
        if self.family is not None and "family" in rows:
            rows = rows[rows["family"] == self.family.value]
        if rows.empty:
            return None
        return {k: rows.iloc[0][k] for k in self.params if k in rows.columns and _present(rows.iloc[0][k])}

    def _update(self, change: Any = None) -> None:
        if getattr(self, "_quiet", False):
            return
        part = self._slice()
        chosen = part[part.limit == self.limit.value]
        for name in self.relevant:
            chosen = chosen[chosen[name] == self.sliders[name].value]
        self.point = chosen.iloc[0] if len(chosen) else None
        axis = self.axis
        curve = part[part.limit == self.limit.value]
        for name in self.relevant:
            if name != axis:
                curve = curve[curve[name] == self.sliders[name].value]
        self.curve = curve.sort_values(axis)
        self.named = self._named()
        self.table.value = self._table_html()
        self._draw(axis)

    def _named(self) -> pd.DataFrame:
        """The named points of the slice: each peer library's default (``result.peers``,
        replayed at its own top-k) and this project's default and recommendation."""
        p = self.peers
        if p is None:
            return pd.DataFrame()
        keep = ((p.backend == self.backend.value) & (p["mode"] == self.mode.value) & (p.split == self.split.value)
                & (p.corpus == self.corpus.value))
        return p[keep].reset_index(drop=True)

    def named_frame(self) -> pd.DataFrame:
        """The named points as a table: name, top-k, thresholds, the chosen metric and
        false admission."""
        columns = ["name", "k", "policy", self.metric.value, "false_admission"]
        if self.named.empty:
            return pd.DataFrame(columns=columns)
        n = self.named
        return pd.DataFrame({"name": n["reference"], "k": n["library_limit"].astype(int), "policy": n["label"],
                             self.metric.value: [f"{v:.3f}" for v in n[self.metric.value]],
                             "false_admission": [f"{v:.3f}" for v in n["false_admission"]]})

    def _peer_points(self, axis: str) -> pd.DataFrame:
        """The peers that sit on the plotted axis (their policy sets that threshold)."""
        n = self.named
        if n.empty or axis not in n.columns:
            return pd.DataFrame()
        return n[(n["kind"] == "peer") & n[axis].notna()]

    def _metrics(self) -> list[tuple[str, float]]:
        if self.point is None:
            return []
        return [(m, float(self.point[m])) for m in SHOWN
                if m in self.point.index and not (isinstance(self.point[m], float) and math.isnan(self.point[m]))]

    def _table_html(self) -> str:
        if self.point is None:
            return "<i>no sweep point at these thresholds</i>"
        cells = "".join(f"<td style='padding:2px 8px'><b>{esc(m)}</b><br>{v:.3f}</td>" for m, v in self._metrics())
        return f"<table><tr>{cells}</tr></table>{self._named_html()}"

    def _named_html(self) -> str:
        if self.named.empty:
            return ""
        return html_table(self.named_frame(), caption="named points: peers' defaults at their own top-k, this "
                                                      "project's default and recommendation")

    def _draw(self, axis: str) -> None:
        """Render to SVG with a pyplot-free Figure: no global backend state, and an
        Image widget (unlike an Output widget) adds no cell outputs per redraw."""
        import matplotlib
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 3.2))
        ax = fig.subplots()
        rec = self._recommended() or {}
        marks = {"selected": self.point[axis] if self.point is not None else None, "recommended": rec.get(axis)}
        xs = self.curve[axis].astype(float).tolist()
        peers = self._peer_points(axis)
        peer_xs = peers[axis].astype(float).tolist() if len(peers) else []
        apart = [axis == "vector_min_cosine" and x <= -1 for x in xs]  # no admission: a point of its own
        if any(apart) or any(axis == "vector_min_cosine" and x <= -1 for x in peer_xs):
            # −1 (no admission) left of the range, under a "none" tick
            names = [k for k, v in marks.items() if v is not None]
            placed = cosine_positions(ax, pd.Series(xs + [float(marks[k]) for k in names] + peer_xs,
                                                    dtype=float)).tolist()
            n = len(xs)
            xs, peer_xs = placed[:n], placed[n + len(names):]
            marks = {**marks, **dict(zip(names, placed[n:n + len(names)], strict=True))}
        for column, marker, color in ((self.metric.value, "o", "tab:blue"), ("false_admission", "x", "tab:orange")):
            ys = self.curve[column].tolist()
            ax.plot([x for x, a in zip(xs, apart) if not a], [y for y, a in zip(ys, apart) if not a],
                    marker=marker, color=color, label=column)
            ax.plot([x for x, a in zip(xs, apart) if a], [y for y, a in zip(ys, apart) if a],
                    marker=marker, color=color, linestyle="none", markerfacecolor="none")
        styles = {"selected": dict(color="grey", linestyle="--"), "recommended": dict(color="green", linestyle=":")}
        for name, x in marks.items():
            if x is not None and not (isinstance(x, float) and math.isnan(x)):
                ax.axvline(x, label=name, **styles[name])
        ax.set_xlabel(axis)
        ax.set_ylim(0, 1.02)
        self._draw_peers(ax, peers, peer_xs)  # last: its labels are placed within the final limits
        if peers.empty:
            ax.legend(loc="best", fontsize="small")
        else:  # the named points need the whole plot area
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
        ax.set_title(f"{self.backend.value} · {self.mode.value} · {self.split.value} · limit {self.limit.value}")
        buf = io.BytesIO()
        with matplotlib.rc_context(SVG_RC):
            fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
        self.plot.value = buf.getvalue()

    def _draw_peers(self, ax: Any, peers: pd.DataFrame, xs: list[float]) -> None:
        """Each peer's default as a named point: a filled diamond at its metric, a hollow
        one at its false admission; peers on the same point share one label."""
        if peers.empty:
            return
        metric = self.metric.value
        ax.scatter(xs, peers[metric], marker="D", s=30, color="tab:blue", edgecolor="k", linewidths=0.5, zorder=4,
                   label=f"peers' {metric}")
        ax.scatter(xs, peers["false_admission"], marker="D", s=30, facecolor="none", edgecolor="tab:orange",
                   linewidths=1.1, zorder=4, label="peers' false_admission")
        groups: dict[tuple[float, float], list[str]] = {}
        for x, y, name in zip(xs, peers[metric], peers["reference"]):
            groups.setdefault((round(x, 3), round(float(y), 3)), []).append(name)
        place_labels(ax, [(x, y, ", ".join(names)) for (x, y), names in groups.items()], fontsize=6)

    # ------------------------------------------------------------------ static display

    def headline(self) -> str:  # stable text for nbval
        if self.point is None:
            return "ThresholdTuner(no point)"
        picked = ", ".join(f"{n}={_label('', self.point[n])}" for n in self.relevant)
        family = f"/{self.family.value}" if self.family is not None else ""
        return (f"ThresholdTuner({self.backend.value}/{self.mode.value}/{self.split.value}{family}, {picked}, "
                f"limit={self.limit.value}: "
                f"{self.metric.value}={self.point[self.metric.value]:.3f}, false_admission={self.point['false_admission']:.3f})")

    def curve_frame(self) -> pd.DataFrame:
        """The plotted rows: the mode's main threshold, the chosen metric, false admission."""
        axis = self.axis
        columns = [axis, self.metric.value, "false_admission"]
        if self.curve.empty:
            return pd.DataFrame(columns=columns)
        frame = self.curve[columns].copy()
        frame[axis] = [_label(axis, v) for v in frame[axis]]
        for column in columns[1:]:
            frame[column] = [f"{v:.3f}" for v in frame[column]]
        return frame.reset_index(drop=True)

    def fallback_text(self) -> str:
        metrics = " · ".join(f"{m} {v:.3f}" for m, v in self._metrics())
        lines = [self.headline(), metrics or "no sweep point at these thresholds", f"along {self.axis}:",
                 frame_text(self.curve_frame())]
        if not self.named.empty:
            lines += ["named points (peers' defaults at their own top-k; this project's):",
                      frame_text(self.named_frame())]
        return "\n".join(lines)

    def fallback_html(self) -> str:
        return (f"<b>ThresholdTuner</b> {esc(self.headline())}{self.table.value}"
                f"{html_table(self.curve_frame(), caption=f'along {self.axis}')}")  # table.value holds the named points
