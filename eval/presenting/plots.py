"""The report's figures, as PNG data URIs (pyplot-free, so a notebook's backend is
never switched).

The two databases usually agree to the third decimal, so their lines coincide. Each
backend therefore has its own line style AND marker (SQLite: solid line, filled
circles; OceanBase: dashed line, hollow triangles drawn on top): where the lines
coincide the triangles sit on the circles, where they differ both stay visible.
"""

from __future__ import annotations

import base64
import io
import struct
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..scoring.sweep import MODE_CHANNELS

__all__ = ["BACKEND_STYLE", "DPI", "Png", "backend_style", "cosine_positions", "place_labels", "plot_frontier",
           "plot_limits", "plot_peers", "plot_thresholds", "threshold_axis", "threshold_curve", "threshold_family"]

#: 1.5× a screen's 96 dpi: crisp when the page scales a figure down, and the
#: self-contained report stays around a megabyte.
DPI = 150
BACKEND_STYLE = {
    "sqlite": dict(color="tab:blue", linestyle="-", marker="o", markersize=4, zorder=2),
    "oceanbase": dict(color="tab:orange", linestyle="--", marker="^", markersize=7, markerfacecolor="none",
                      markeredgewidth=1.2, zorder=3),
}


def backend_style(backend: str, **override: Any) -> dict[str, Any]:
    """Line-plot keyword arguments for ``backend`` (any unknown backend gets a dotted
    line with squares)."""
    style = dict(BACKEND_STYLE.get(backend, dict(linestyle=":", marker="s", markersize=5, markerfacecolor="none")))
    style.update(override)
    return style


def _figure(**kwargs):
    from matplotlib.figure import Figure

    return Figure(**kwargs)


class Png(NamedTuple):
    """A rendered figure: its data URI and its width on the page in CSS pixels (the
    PNG holds DPI/96 times more, so the browser scales it down, never up)."""

    uri: str
    width: int


#: The colours a figure is reduced to. Line plots on white use a few dozen colours plus
#: their anti-aliased edges; 256 keep them indistinguishable on screen, and a palette PNG
#: is a third of the truecolour one (the report's nine figures: 698 kB → ~200 kB, i.e.
#: 0.93 → 0.27 MB of base64 in report.html, which counts toward issue 45's run folder bound).
PALETTE = 256


def png(fig) -> Png:
    from PIL import Image  # matplotlib's own dependency

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight", metadata={"Software": None},
                facecolor="white")  # opaque: the palette needs no alpha channel
    image = Image.open(io.BytesIO(buf.getvalue())).convert("RGB").quantize(PALETTE, method=Image.Quantize.FASTOCTREE)
    buf = io.BytesIO()
    image.save(buf, format="PNG", optimize=True)
    data = buf.getvalue()
    pixels = struct.unpack(">I", data[16:20])[0]  # the IHDR chunk's width
    return Png("data:image/png;base64," + base64.b64encode(data).decode(), round(pixels * 96 / DPI))


def _dev(result: Any, mode: str) -> pd.DataFrame:
    o = result.objective
    s = result.sweep
    return s[(s["mode"] == mode) & (s["corpus"] == "all") & (s["split"] == o.split) & (s["limit"] == o.limit)]


def cosine_positions(ax, values: pd.Series) -> pd.Series:
    """x positions of cosine thresholds on ``ax``: the no-admission point (−1, admit
    everything) is drawn just left of the swept range with its tick labelled "none",
    instead of stretching the axis to −1."""
    values = pd.Series(values, dtype=float)
    real = values[values > -1]
    if not (values <= -1).any() or real.empty:
        return values
    lo, hi = max(float(real.min()), 0.0), float(real.max())
    step = 0.1 if hi - lo <= 0.5 else 0.2
    ticks = [t for t in np.arange(0.0, 1.0001, step) if lo - 1e-9 <= t <= hi + 1e-9]
    x_none = lo - max((hi - lo) * 0.18, 0.06)
    ax.set_xticks([x_none, *ticks], ["none", *(f"{t:.1f}" for t in ticks)])
    ax.axvline((x_none + lo) / 2, color="0.75", lw=0.8, ls=(0, (1, 2)))  # the axis break before "none"
    return values.where(values > -1, x_none)


def threshold_family(result: Any, mode: str | None = None) -> str | None:
    """The family the threshold plots draw: the one the run's library default uses
    (centred cosine for MiniLM, the raw cosine for E5), or — when the run did not
    sweep it (in ``mode``, when given: a grid names a mode's family by what that mode
    reads, so a family can be swept in one mode and not another) — the family of the
    run's recommendation; None for a sweep of the RFC's floors only before families existed."""
    from ..scoring.grid import family_of

    sweep = result.sweep
    if "family" not in sweep.columns:
        return None
    swept = set((_dev(result, mode) if mode is not None else sweep)["family"]) or set(sweep["family"])
    recommended = [result.recommended(mode)] if mode is not None and mode in set(result.recommendations["mode"]) else []
    for policy in (result.collected.default_policy, *recommended, result.recommended("joint")):
        family = family_of(policy)
        if family in swept:
            return family
    return sorted(swept)[0]


def threshold_axis(result: Any, mode: str, family: str | None) -> str:
    """The x axis of ``mode``'s threshold plot: full-text coverage in fts mode, else
    the vector threshold the family reads (``vector_min_centred`` for a centred
    family, ``vector_min_cosine`` otherwise)."""
    if mode == "fts":
        return "fts_min_coverage"
    return "vector_min_centred" if family is not None and family.split("+")[0] == "centred" else "vector_min_cosine"


def threshold_curve(result: Any, mode: str) -> tuple[pd.DataFrame, str | None, str, Any]:
    """The sweep rows a threshold plot draws — ``mode``'s points of the plotted family
    on the objective's split and limit with every parameter but the x axis (and, in
    fts mode, the matched-terms floor that makes one line each) held at the family's
    best point — and (rows, family, x axis, that best policy)."""
    from ..scoring.grid import PARAMS, point_values
    from ..scoring.recommend import choose

    o = result.objective
    d = _dev(result, mode)
    family = threshold_family(result, mode)
    if family is not None:
        d = d[d["family"] == family]
    x = threshold_axis(result, mode, family)
    best = choose(result.sweep, mode, o, families=None if family is None else [family]).policy
    lines = {"fts_min_terms"} if mode == "fts" else set()
    for name, value in point_values(best, mode, o.limit).items():
        if name not in PARAMS or name == x or name in lines or name not in d.columns:
            continue
        if isinstance(value, str):
            d = d[d[name] == value]
        elif value != value:  # NaN: the mode does not read it
            d = d[d[name].isna()]
        else:
            d = d[np.isclose(pd.to_numeric(d[name], errors="coerce").astype(float), float(value))]
    return d, family, x, best


def plot_thresholds(result: Any, mode: str) -> Png:
    """The objective metric, false admission, empty answers and SetF against the mode's
    main threshold of the family the library default uses (``threshold_curve``); one
    line per backend (and per fts_min_terms for fts), that family's best point and the
    default's own threshold dotted."""
    o = result.objective
    d, family, x, best = threshold_curve(result, mode)
    metrics = (o.metric, o.constraint, "empty_answer", "set_f1")
    fig = _figure(figsize=(2.7 * len(metrics), 2.8), layout="constrained")  # + the legend: within the page
    axes = fig.subplots(1, len(metrics))
    marks = {"best": getattr(best, x), "default": getattr(result.collected.default_policy, x)}
    for ax, metric in zip(axes, metrics):
        for backend, g in d.groupby("backend"):
            if mode == "fts":
                colors = iter(("tab:blue", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:gray"))
                for terms, gt in g.groupby("fts_min_terms"):
                    gt = gt.sort_values(x)
                    ax.plot(gt[x], gt[metric], label=f"{backend} terms≥{int(terms)}",
                            **backend_style(backend, color=next(colors, "k")))
            else:
                g = g.sort_values(x)
                xs = cosine_positions(ax, g[x]) if x == "vector_min_cosine" else g[x]
                ax.plot(xs, g[metric], label=backend, **backend_style(backend))
        for what, style in (("best", ":"), ("default", "--")):
            if isinstance(marks[what], float) and marks[what] > -1.0:
                ax.axvline(marks[what], color="k" if what == "best" else "tab:green", lw=0.6, ls=style)
        ax.set_xlabel(x + (" (fts at the best)" if mode == "hybrid" else ""))
        ax.set_title(metric, fontsize=10)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right upper", fontsize=7)
    fig.suptitle(f"{mode}, family {family or 'floors'}: {o.split} split, limit {o.limit} (dotted: the family's best; "
                 "dashed: the library default)", fontsize=10)
    return png(fig)


def _frontier(g: pd.DataFrame, x: str, y: str) -> tuple[list[float], list[float]]:
    pts = g.sort_values([x, y], ascending=[True, False])
    best, fx, fy = -np.inf, [], []
    for a, b in zip(pts[x], pts[y]):
        if b > best:
            best = b
            fx.append(a)
            fy.append(b)
    return fx, fy


def draw_frontiers(ax, points: pd.DataFrame, x: str, y: str, label: str = "") -> None:
    """Every grid point of ``points`` as a faint dot and each backend's Pareto frontier
    (the best ``y`` reachable at each ``x``) as a step line in the backend's style."""
    for backend, g in points.groupby("backend"):
        style = backend_style(backend)
        ax.scatter(g[x], g[y], s=6, alpha=0.25, color=style["color"], marker=style["marker"])
        fx, fy = _frontier(g, x, y)
        ax.step(fx, fy, where="post", color=style["color"], linestyle=style["linestyle"], lw=1.2,
                label=f"{backend} frontier{label}")


POINT_MARKERS = {"recommended": ("*", 160), "initial": ("s", 45), "no-admission": ("X", 55)}


def plot_frontier(result: Any, modes: list[str]) -> Png:
    """One panel per mode: every grid point as (false admission, objective metric) on
    the objective's split, each backend's Pareto frontier, the bound, and the
    recommended, initial and no-admission policies."""
    o = result.objective
    fig = _figure(figsize=(3.9 * len(modes), 3.0), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(modes), sharey=True))
    summary = result.summary
    for ax, mode in zip(axes, modes):
        d = _dev(result, mode)
        draw_frontiers(ax, d, o.constraint, o.metric)
        named = summary[(summary["mode"] == mode) & (summary["split"] == o.split)]
        for _, r in named.iterrows():
            if r["policy"] in POINT_MARKERS:
                marker, size = POINT_MARKERS[r["policy"]]
                color = backend_style(r["backend"])["color"]
                if r["backend"] == "sqlite":  # filled; the other database hollow and larger, on top
                    ax.scatter(r[o.constraint], r[o.metric], marker=marker, s=size, edgecolor="k", linewidths=0.6,
                               color=color, zorder=5)
                else:
                    ax.scatter(r[o.constraint], r[o.metric], marker=marker, s=size * 2, facecolor="none",
                               edgecolor=color, linewidths=1.4, zorder=6)
        ax.axvline(o.bound, color="red", lw=0.8, ls="--")
        ax.set_xlabel(f"{o.constraint} ({o.split})")
        ax.set_title(mode, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{o.metric} ({o.split})")
    from matplotlib.lines import Line2D

    legend = [Line2D([], [], **{k: v for k, v in backend_style(b).items() if k != "zorder"}, label=b)
              for b in result.collected.backends]
    legend += [Line2D([], [], marker=m, linestyle="", markerfacecolor="w", markeredgecolor="k", markersize=7, label=p)
               for p, (m, _) in POINT_MARKERS.items()]
    legend.append(Line2D([], [], color="red", lw=0.8, ls="--", label=f"bound {o.bound:g}"))
    axes[-1].legend(handles=legend, fontsize=7, loc="lower right")
    fig.suptitle(f"nDCG vs false admission: every swept policy ({o.split} split, limit {o.limit}); "
                 "the step line is the best reachable trade-off", fontsize=10)
    return png(fig)


#: A label's height as a fraction of the axes, and a character's width in font sizes.
LABEL_HEIGHT, CHAR_WIDTH = 0.045, 0.55


def place_labels(ax, labels: list[tuple[float, float, str]], fontsize: float = 6.5) -> None:
    """Name points on ``ax`` (after its limits are set) without labels covering each
    other: a label that would overlap one already drawn moves down, with a leader line
    back to its point. ``labels``: (x, y, text) in data units."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    width_pt = ax.get_position().width * ax.figure.get_figwidth() * 72
    placed: list[tuple[float, float, float]] = []  # (left, right, y) of the labels drawn, as fractions of the axes
    for x, y, text in sorted(labels, key=lambda t: (t[0], -t[1])):
        fx, fy = (x - x0) / (x1 - x0), (y - y0) / (y1 - y0)
        right = fx + len(text) * fontsize * CHAR_WIDTH / width_pt
        at = fy
        while any(fx < r and l < right and abs(at - py) < LABEL_HEIGHT for l, r, py in placed):
            at -= LABEL_HEIGHT / 2
        placed.append((fx, right, at))
        ax.annotate(text, (x, y), xytext=(fx + 0.012, at + 0.008), textcoords="axes fraction", fontsize=fontsize,
                    zorder=7, arrowprops=dict(arrowstyle="-", color="0.5", lw=0.5) if at != fy else None,
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.7))


#: This project's own policies among the peers: (marker, size).
OWN_MARKERS = {"default": ("*", 150), "recommended": ("P", 70)}


def _peer_labels(points: pd.DataFrame, x: str, y: str) -> list[tuple[float, float, str]]:
    """One label per distinct (x, y) to three decimals: peers that land on the same
    point (every no-cutoff library at a similar k) share it, names joined."""
    keyed = points.assign(_x=points[x].round(3), _y=points[y].round(3))
    return [(float(g[x].iloc[0]), float(g[y].iloc[0]), ", ".join(g["reference"]))
            for _, g in keyed.groupby(["_x", "_y"], sort=True)]


def plot_peers(result: Any, mode: str, split: str) -> Png:
    """Peers' defaults on ``mode``'s frontier: every grid point of the run (objective
    limit, ``split``, all corpora pooled) as (false admission, nDCG@10), each backend's
    Pareto frontier, and each reference policy (``result.peers``, at its own top-k) as
    a named point, beside this project's default and the run's recommendation."""
    o = result.objective
    s = result.sweep
    d = s[(s["mode"] == mode) & (s["corpus"] == "all") & (s["split"] == split) & (s["limit"] == o.limit)]
    p = result.peers
    p = p[(p["mode"] == mode) & (p["corpus"] == "all") & (p["split"] == split)]
    fig = _figure(figsize=(7.2, 4.2), layout="constrained")
    ax = fig.subplots()
    draw_frontiers(ax, d, o.constraint, o.metric, f" (limit {o.limit})")
    for backend, g in p.groupby("backend"):
        color = backend_style(backend)["color"]
        filled = backend == result.collected.backends[0]
        for kind, part in g.groupby("kind"):
            for _, r in part.iterrows():
                marker, size = OWN_MARKERS.get(r["reference"], ("D", 34)) if kind == "this project" else ("D", 34)
                ax.scatter(r[o.constraint], r[o.metric], marker=marker, s=size if filled else size * 2,
                           color=color if filled else "none", edgecolor="k" if filled else color,
                           linewidths=0.6 if filled else 1.3, zorder=5 if filled else 6)
    ax.axvline(o.bound, color="red", lw=0.8, ls="--", label=f"bound {o.bound:g}")
    ax.set_xlim(-0.03, 1.08)
    ax.set_ylim(-0.02, 1.02)
    first = p[p["backend"] == result.collected.backends[0]]
    place_labels(ax, _peer_labels(first, o.constraint, o.metric))
    ax.set_xlabel(f"{o.constraint} ({split})")
    ax.set_ylabel(f"{o.metric} ({split})")
    ax.grid(alpha=0.3)
    from matplotlib.lines import Line2D

    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], marker="D", linestyle="", markerfacecolor="w", markeredgecolor="k", label="peer default"),
                *[Line2D([], [], marker=m, linestyle="", markerfacecolor="w", markeredgecolor="k", markersize=8,
                         label=f"{name} (this project)") for name, (m, _) in OWN_MARKERS.items()]]
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.set_title(f"{mode}: peers' defaults at their own top-k (filled: {result.collected.backends[0]}; "
                 "hollow: the other database)", fontsize=9)
    return png(fig)


def plot_limits(result: Any, mode: str) -> Png:
    """The recommended policy's objective metric and recall@10 against the limit."""
    from ..scoring.recommend import point_rows

    o = result.objective
    policy = result.recommended(mode)
    d = pd.concat([point_rows(result.sweep, policy, mode, limit, o.split) for limit in result.grid.limits])
    fig = _figure(figsize=(5.4, 2.4), layout="constrained")  # two side by side fit the page
    axes = fig.subplots(1, 2)
    for ax, metric in zip(axes, (o.metric, "recall@10")):
        for backend, g in d.groupby("backend"):
            g = g.sort_values("limit")
            ax.plot(g["limit"], g[metric], label=backend, **backend_style(backend))
        ax.set_xlabel("limit")
        ax.set_title(metric, fontsize=10)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{mode}: recommended policy vs limit ({o.split})", fontsize=10)
    return png(fig)
