"""ThresholdTuner through its controls: sliders pick the sweep point, the plot is a
crisp SVG with the no-admission point off the axis, labels are whole, integers are
integers, and a static renderer gets the point and curve as tables."""

from __future__ import annotations

import re

import ipywidgets as widgets
import pandas as pd
import pytest

from powercontext.magics.widgets import ThresholdTuner


class Result:  # the shape harness.sweep returns
    def __init__(self, sweep: pd.DataFrame, recommendations: pd.DataFrame | None = None) -> None:
        self.sweep, self.recommendations = sweep, recommendations


def vector_sweep(cosines=(-1.0, 0.2, 0.4, 0.6)) -> pd.DataFrame:
    return pd.DataFrame([dict(backend="sqlite", mode="vector", corpus="all", split="dev", fts_min_terms=float("nan"),
                              fts_min_coverage=float("nan"), vector_min_cosine=c, limit=8,
                              **{"ndcg@10": 0.5 + c / 4, "false_admission": 0.4 - c / 4}) for c in cosines])


def fts_rows() -> list[dict]:
    return [dict(backend="sqlite", mode="fts", corpus="all", split="dev", fts_min_terms=terms, fts_min_coverage=cov,
                 vector_min_cosine=float("nan"), limit=8, **{"ndcg@10": 0.4 + terms / 10, "false_admission": 0.5 - cov})
            for terms in (1, 2, 3, 4) for cov in (0.0, 0.25)]


def texts(svg: bytes) -> list[str]:
    """The strings a matplotlib SVG draws (it writes each text, drawn as paths, in a comment)."""
    return re.findall(r"<!-- (.*?) -->", svg.decode())


def test_threshold_tuner_follows_its_sliders():
    rows = []
    for cov in (0.0, 0.25, 0.5):
        for terms in (1, 2):
            for limit in (3, 8):
                rows.append(dict(backend="sqlite", mode="fts", corpus="all", split="dev", fts_min_terms=terms,
                                 fts_min_coverage=cov, vector_min_cosine=float("nan"), limit=limit,
                                 **{"ndcg@10": 0.5 - cov / 2 + terms / 100 + limit / 1000, "false_admission": 1 - cov}))
    for cos in (0.3, 0.5):
        rows.append(dict(backend="sqlite", mode="vector", corpus="all", split="dev", fts_min_terms=float("nan"),
                         fts_min_coverage=float("nan"), vector_min_cosine=cos, limit=8,
                         **{"ndcg@10": 0.7 - cos, "false_admission": 0.9 - cos}))
    sweep = pd.DataFrame(rows)
    rec = pd.DataFrame([dict(mode="fts", fts_min_terms=2, fts_min_coverage=0.25, vector_min_cosine=0.3)])
    t = ThresholdTuner(Result(sweep, rec))
    # starts at the recommendation
    assert (t.point.fts_min_terms, t.point.fts_min_coverage, t.point.limit) == (2, 0.25, 8)
    assert t.point["ndcg@10"] == pytest.approx(0.5 - 0.125 + 0.02 + 0.008)
    t.fts_min_coverage.value = 0.5
    assert t.point["false_admission"] == pytest.approx(0.5) and "0.500" in t.table.value
    assert list(t.curve.fts_min_coverage) == [0.0, 0.25, 0.5] and set(t.curve.fts_min_terms) == {2}
    t.limit.value = 3
    assert t.point.limit == 3 and set(t.curve.limit) == {3}
    t.mode.value = "vector"
    assert t.fts_min_terms.disabled and not t.vector_min_cosine.disabled
    assert list(t.curve.vector_min_cosine) == [0.3, 0.5] and t.point.limit == 8
    t.vector_min_cosine.value = 0.5
    assert t.point["ndcg@10"] == pytest.approx(0.2) and "vector_min_cosine=0.5" in repr(t)
    with pytest.raises(TypeError):
        ThresholdTuner(pd.DataFrame({"x": [1]}))


def test_threshold_tuner_plot_is_svg_and_redraws():
    t = ThresholdTuner(vector_sweep())
    first = bytes(t.plot.value)
    assert t.plot.format == "svg+xml" and first.startswith(b"<?xml") and b"<svg" in first
    assert not t.plot.layout.width  # shown at its natural size, never stretched
    t.vector_min_cosine.value = 0.2
    assert bytes(t.plot.value).startswith(b"<?xml") and bytes(t.plot.value) != first
    assert bytes(ThresholdTuner(vector_sweep()).plot.value) == first  # deterministic: reruns diff cleanly


def test_no_admission_point_is_marked_apart_not_on_an_axis_to_minus_one():
    t = ThresholdTuner(vector_sweep())
    t.vector_min_cosine.value = -1.0
    assert t.point["ndcg@10"] == pytest.approx(0.25) and "vector_min_cosine=-1" in repr(t)
    drawn = texts(bytes(t.plot.value))
    assert "none" in drawn  # the no-admission point's own tick
    assert not [s for s in drawn if re.fullmatch(r"[−-]\d[\d.]*", s)], drawn  # no axis running to −1
    assert dict(t.vector_min_cosine.options)["none (−1)"] == -1.0 and t.vector_min_cosine.label == "none (−1)"
    without = ThresholdTuner(vector_sweep((0.2, 0.4)))
    assert "none" not in texts(bytes(without.plot.value))


def test_labels_are_whole_and_integer_thresholds_are_integers():
    rec = pd.DataFrame([dict(mode="fts", fts_min_terms=3.0, fts_min_coverage=0.25, vector_min_cosine=0.3)])
    t = ThresholdTuner(Result(pd.concat([pd.DataFrame(fts_rows()), vector_sweep()]), rec))
    for control in (t.fts_min_terms, t.fts_min_coverage, t.vector_min_cosine, t.limit, t.backend, t.metric):
        assert control.style.description_width == "initial", control.description
    assert isinstance(t.fts_min_terms, widgets.IntSlider) and not isinstance(t.fts_min_terms, widgets.FloatSlider)
    assert (t.fts_min_terms.min, t.fts_min_terms.max, t.fts_min_terms.value) == (1, 4, 3)
    assert type(t.fts_min_terms.value) is int and t.fts_min_terms.readout_format == "d"
    assert [label for label, _ in t.limit.options] == ["8"] and [label for label, _ in t.fts_min_coverage.options] == ["0", "0.25"]
    assert "fts_min_terms=3," in repr(t) and "3.0" not in repr(t)
    t.fts_min_terms.value = 1
    assert t.point.fts_min_terms == 1 and t.point["ndcg@10"] == pytest.approx(0.5)
    t.mode.value = "vector"
    assert t.fts_min_terms.disabled and t.fts_min_terms.value == 1
    t.mode.value = "fts"
    assert not t.fts_min_terms.disabled and t.point.fts_min_terms == 1  # a swept value is kept


def test_threshold_tuner_displays_its_point_and_curve_without_a_live_kernel():
    t = ThresholdTuner(vector_sweep())
    t.vector_min_cosine.value = 0.4
    bundle = t._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    lines = bundle["text/plain"].splitlines()
    assert lines[0] == repr(t) == "ThresholdTuner(sqlite/vector/dev, vector_min_cosine=0.4, limit=8: ndcg@10=0.600, false_admission=0.300)"
    assert lines[1] == "ndcg@10 0.600 · false_admission 0.300" and lines[2] == "along vector_min_cosine:"
    assert [line.split() for line in lines[4:]] == [["none", "(−1)", "0.250", "0.650"], ["0.2", "0.550", "0.350"],
                                                   ["0.4", "0.600", "0.300"], ["0.6", "0.650", "0.250"]]
    html = bundle["text/html"]
    assert "<td>none (−1)</td><td>0.250</td><td>0.650</td>" in html and "<b>ndcg@10</b><br>0.600" in html


def test_a_sweep_of_admission_families_gets_a_family_dropdown_and_its_own_thresholds():
    """The shape a sweep of admission families has (eval/scoring/grid.py's point columns):
    a family column and NaN where a mode does not read a threshold."""
    nan = float("nan")
    base = dict(backend="sqlite", corpus="all", split="dev", limit=8, fts_min_terms=nan, fts_min_coverage=nan,
                hybrid_fts_min_terms=nan, hybrid_fts_min_coverage=nan, vector_min_cosine=nan, vector_min_centred=nan,
                cross_script_min_terms=nan, vector_uncovered=nan, gate_min=nan)
    rows = [dict(base, family="floors", mode="vector", vector_min_cosine=c, **{"ndcg@10": c, "false_admission": 0.1})
            for c in (-1.0, 0.3, 0.5)]
    rows += [dict(base, family="centred+cross-script+coverage", mode="vector", vector_min_cosine=-1.0,
                  vector_min_centred=c, vector_uncovered=u, **{"ndcg@10": c + (u == "refuse") / 10, "false_admission": 0.2})
             for c in (0.2, 0.31, 0.4) for u in ("refuse", 0.5)]
    rows += [dict(base, family="centred+cross-script+coverage", mode="fts", fts_min_terms=t, fts_min_coverage=0.3,
                  cross_script_min_terms=2, **{"ndcg@10": t / 10, "false_admission": 0.3}) for t in (2, 3)]
    rec = pd.DataFrame([dict(mode="vector", family="centred+cross-script+coverage", fts_min_terms=nan,
                             fts_min_coverage=nan, vector_min_cosine=-1.0, vector_min_centred=0.31,
                             vector_uncovered="refuse")])
    t = ThresholdTuner(Result(pd.DataFrame(rows), rec))
    t.mode.value = "vector"
    assert t.family.value == "floors" and t.relevant == ["vector_min_cosine"] and t.axis == "vector_min_cosine"
    assert t.sliders["vector_min_centred"].disabled and t.sliders["vector_uncovered"].disabled
    t.family.value = "centred+cross-script+coverage"
    assert t.relevant == ["vector_min_cosine", "vector_min_centred", "vector_uncovered"] and t.axis == "vector_min_centred"
    assert (t.point.vector_min_centred, t.point.vector_uncovered) == (0.31, "refuse")  # the recommendation
    assert [label for label, _ in t.sliders["vector_uncovered"].options] == ["0.5", "refuse"]
    t.sliders["vector_uncovered"].value = 0.5
    assert t.point["ndcg@10"] == pytest.approx(0.31) and list(t.curve.vector_min_centred) == [0.2, 0.31, 0.4]
    assert repr(t).startswith("ThresholdTuner(sqlite/vector/dev/centred+cross-script+coverage, vector_min_cosine=-1, "
                              "vector_min_centred=0.31, vector_uncovered=0.5, limit=8")
    t.mode.value = "fts"
    assert isinstance(t.sliders["cross_script_min_terms"], widgets.IntSlider) and t.sliders["cross_script_min_terms"].value == 2
    assert t.relevant == ["fts_min_terms", "fts_min_coverage", "cross_script_min_terms"] and t.point is not None

    sweep = pd.DataFrame(rows)
    floors = ThresholdTuner(sweep[sweep.family == "floors"])  # one family: read like a sweep of the floors alone
    floors.mode.value = "vector"
    floors.vector_min_cosine.value = 0.5
    assert floors.family is None and repr(floors) == (
        "ThresholdTuner(sqlite/vector/dev, vector_min_cosine=0.5, limit=8: ndcg@10=0.500, false_admission=0.100)")


class WithPeers(Result):  # a SweepResult also carries the peers' defaults replayed on the run
    def __init__(self, sweep: pd.DataFrame, peers: pd.DataFrame) -> None:
        super().__init__(sweep)
        self.peers = peers


def peers_rows() -> pd.DataFrame:
    base = dict(backend="sqlite", mode="vector", corpus="all", split="dev")
    rows = [("mem0", "peer", 20, 0.1, 0.70, 0.9), ("chroma", "peer", 10, -1.0, 0.72, 1.0),
            ("letta", "peer", 10, -1.0, 0.72, 1.0), ("llamaindex-cutoff", "peer", 2, 0.75, 0.05, 0.0),
            ("default", "this project", 8, float("nan"), 0.55, 0.2)]
    out = [dict(base, reference=name, kind=kind, library_limit=k, limit_used=min(k, 10), vector_min_cosine=cos,
                label=f"cos≥{cos:g}", **{"ndcg@10": ndcg, "false_admission": fa, "set_f1": 0.5})
           for name, kind, k, cos, ndcg, fa in rows]
    out.append(dict(out[0], split="test", **{"ndcg@10": 0.1}))  # another slice: not shown on dev
    return pd.DataFrame(out)


def test_peers_defaults_are_named_points_of_the_slice():
    t = ThresholdTuner(WithPeers(vector_sweep().assign(set_f1=0.4), peers_rows()))
    named = t.named_frame()
    assert list(named["name"]) == ["mem0", "chroma", "letta", "llamaindex-cutoff", "default"]  # dev only
    assert list(named["k"]) == [20, 10, 10, 2, 8] and list(named["ndcg@10"])[0] == "0.700"
    assert "named points" in t.table.value and "llamaindex-cutoff" in t.table.value
    drawn = texts(bytes(t.plot.value))
    # peers on the cosine axis are labelled; the two no-cutoff ones share one label at "none";
    # this project's default sets no raw cosine, so it is in the table only
    assert {"mem0", "chroma, letta", "llamaindex-cutoff", "none"} <= set(drawn)
    assert not [s for s in drawn if re.fullmatch(r"[−-]\d[\d.]*", s)], drawn  # the axis still does not run to −1
    assert "default" not in drawn
    text = t.fallback_text()
    assert "named points (peers' defaults at their own top-k; this project's):" in text and "mem0" in text
    t.metric.value = "set_f1"
    assert list(t.named_frame().columns) == ["name", "k", "policy", "set_f1", "false_admission"]
    # a sweep without peers (a bare DataFrame) shows no named points and draws as before
    bare = ThresholdTuner(vector_sweep())
    assert bare.named.empty and "named points" not in bare.fallback_text() and "named points" not in bare.table.value
