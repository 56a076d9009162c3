"""Fitting a calibration artefact (``powercontext.memory.calibration``) on labelled
corpora, and scoring it on queries it was not fitted on.

The labelled data is the harness's cached candidate pool: every candidate a query's
retrieval returned in ``fts`` and ``vector`` mode, with its raw signals, labelled
relevant when its corpus entry has a qrels grade ≥ 1 for the query (a candidate of a
query with no answer is a negative, as a false admission is). Each cell's map is an
isotonic regression (scikit-learn) of the label on the cell's signal: monotone by
construction, and applied at search time by interpolating its points, so search needs
no scikit-learn.

Scores: k-fold by query or leave-one-corpus-out — fit on the other folds, predict the
held-out candidates through ``Calibration.probability`` itself (what a search reads) —
with the expected calibration error (ECE, 10 equal-width bins), the Brier score and
the n each cell rests on.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.model import ArtifactRef, ChannelCandidate
from powercontext.memory.calibration import (
    Calibration, CellMap, ChannelCalibration, InvalidCalibrationError, pair_cell, query_bucket,
)
from powercontext.memory.hybrid_calibration import HybridCalibration, logit


__all__ = ["TooFewLabelsError", "ece", "fit", "hybrid_pairs", "labelled", "predict", "score"]

#: Equal-width probability bins of the ECE and the reliability diagram.
BINS = 10


class TooFewLabelsError(InvalidCalibrationError):
    """Not enough labelled candidates to fit a calibration."""


def labelled(candidates: pd.DataFrame, qrels: Mapping[str, Mapping[str, int]]) -> pd.DataFrame:
    """One row per (query, channel, corpus entry) of the cached pool, with its raw
    signals, its calibration ``cell`` and ``label`` (1 = relevant). Vector candidates
    from ``vector`` mode and full-text ones from ``fts`` mode (hybrid retrieves the same
    ones); the first backend only (both backends retrieve the same candidates)."""
    if candidates.empty:
        return candidates.assign(cell=pd.Series(dtype=object), label=pd.Series(dtype=np.int64))
    c = candidates[candidates["backend"] == candidates["backend"].iloc[0]]
    parts = []
    for channel in ("fts", "vector"):
        rows = c[c["channel"] == channel]
        own = rows[rows["mode"] == channel]
        parts.append(own if len(own) else rows[rows["mode"] == "hybrid"])
    c = pd.concat(parts, ignore_index=True).drop_duplicates(["query_id", "channel", "corpus_entry"])
    c = c.assign(
        cell=[pair_cell(q if isinstance(q, str) else None, s if isinstance(s, str) else None) if ch == "vector"
              else query_bucket(int(n)) for ch, q, s, n in zip(c["channel"], c["query_script"], c["script"],
                                                               c["query_term_count"])],
        label=[int(qrels.get(q, {}).get(e, 0) >= 1) for q, e in zip(c["query_id"], c["corpus_entry"])],
    )
    return c.reset_index(drop=True)


def _signal(rows: pd.DataFrame, signal: str) -> pd.Series:
    if signal == "coverage":
        return pd.to_numeric(rows["matched"], errors="coerce") / pd.to_numeric(rows["query_term_count"]).where(
            rows["query_term_count"] > 0)
    return pd.to_numeric(rows[signal], errors="coerce")


def _fit_map(x: np.ndarray, y: np.ndarray) -> CellMap:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(x, y)
    xs, ps = np.asarray(iso.X_thresholds_, float), np.clip(np.asarray(iso.y_thresholds_, float), 0.0, 1.0)
    keep = np.r_[True, np.diff(xs) > 0]  # the map's x must be strictly increasing
    ps = np.maximum.accumulate(np.round(ps, 6))
    return CellMap(n=int(len(y)), positives=int(y.sum()), x=[float(v) for v in xs[keep]],
                   p=[float(v) for v in ps[keep]])


def _fit_channel(rows: pd.DataFrame, signal: str) -> ChannelCalibration | None:
    x = _signal(rows, signal)
    ok = x.notna().to_numpy()
    rows, x = rows[ok], x[ok].to_numpy(float)
    if not len(rows):
        return None
    y = rows["label"].to_numpy(np.int64)
    cells = {}
    for cell, idx in rows.groupby("cell").indices.items():
        cells[str(cell)] = _fit_map(x[idx], y[idx])
    return ChannelCalibration(signal=signal, pooled=_fit_map(x, y), cells=dict(sorted(cells.items())))


def _check_enough(rows: pd.DataFrame, channel: str, needed: int) -> None:
    n, positives = len(rows), int(rows["label"].sum()) if len(rows) else 0
    if n < needed or positives == 0 or positives == n:
        raise TooFewLabelsError(
            f"too few labels to calibrate the {channel} channel: it needs at least {needed} labelled candidates, "
            f"relevant and not relevant ones both (has {n}, {positives} relevant); judge more questions")


def _auc(rows: pd.DataFrame, calibration: ChannelCalibration, min_n: int) -> float:
    from sklearn.metrics import roc_auc_score

    x = _signal(rows, calibration.signal)
    ok = x.notna().to_numpy()
    p = [calibration.lookup(cell, min_n)[0](v) for cell, v in zip(rows["cell"][ok], x[ok])]
    y = rows["label"][ok]
    return float(roc_auc_score(y, p)) if y.nunique() == 2 else float("nan")


def fit(frame: pd.DataFrame, profile: str, *, min_cell_n: int = 30, vector_signal: str = "auto",
        corpora: Sequence[str] = (), hybrid: bool = True) -> Calibration:
    """The artefact fitted on a ``labelled`` frame for ``profile`` (a profile id).
    ``vector_signal``: ``cosine``, ``centred`` or ``auto`` (the one whose per-cell maps
    separate relevant from not better, by AUC). A channel with no candidates stays
    uncalibrated; one with fewer than ``min_cell_n`` labels or no relevant / no
    irrelevant candidate is refused (TooFewLabelsError, with the count needed). With
    both channels (and ``hybrid``) the hybrid cell is stacked on the two channels' maps
    (``_fit_hybrid``), on the same candidates."""
    if vector_signal not in ("auto", "cosine", "centred"):
        raise InvalidCalibrationError(f"vector_signal must be auto, cosine or centred, got {vector_signal!r}")
    out: dict[str, Any] = {}
    for channel in ("fts", "vector"):
        rows = frame[frame["channel"] == channel] if len(frame) else frame
        if not len(rows):
            out[channel] = None
            continue
        _check_enough(rows, channel, min_cell_n)
        if channel == "fts":
            out[channel] = _fit_channel(rows, "coverage")
            continue
        signals = ("cosine", "centred") if vector_signal == "auto" else (vector_signal,)
        fitted = {s: _fit_channel(rows, s) for s in signals}
        fitted = {s: f for s, f in fitted.items() if f is not None}
        if not fitted:
            out[channel] = None
            continue
        out[channel] = max(fitted.values(), key=lambda f: np.nan_to_num(_auc(rows, f, min_cell_n), nan=-1.0))
    if out["fts"] is None and out["vector"] is None:
        raise TooFewLabelsError(f"too few labels to calibrate: no labelled candidate (needs at least {min_cell_n})")
    channels = Calibration(profile=profile, min_cell_n=min_cell_n, fitted_on=sorted(set(corpora)), **out)
    if channels.fts is None or channels.vector is None or not hybrid:
        return channels
    pairs = hybrid_pairs(frame, channels)
    _check_enough(pairs, "hybrid", min_cell_n)
    return channels.model_copy(update={"hybrid": _fit_hybrid(pairs)})


def hybrid_pairs(frame: pd.DataFrame, calibration: Calibration) -> pd.DataFrame:
    """One row per (query, corpus entry) a hybrid search retrieves — the union of the
    two channels' pools — with each channel's probability by ``calibration`` (NaN = that
    channel did not retrieve it) and the label."""
    scored = predict(frame, calibration)
    scored = scored[scored["probability"].notna()]
    keys = ["corpus", "query_id", "corpus_entry"]
    wide = scored.pivot_table(index=keys, columns="channel", values="probability", aggfunc="first")
    labels = scored.groupby(keys)["label"].max()
    out = wide.reindex(columns=["vector", "fts"]).join(labels).reset_index()
    return out.rename(columns={"vector": "p_vector", "fts": "p_fts"})


def _features(pairs: pd.DataFrame, eps: float) -> np.ndarray:
    pv, pf = pairs["p_vector"].to_numpy(float), pairs["p_fts"].to_numpy(float)
    both = (~np.isnan(pv) & ~np.isnan(pf)).astype(float)
    return np.column_stack([[logit(0.0 if np.isnan(v) else v, eps) for v in pv],
                            [logit(0.0 if np.isnan(v) else v, eps) for v in pf], both])


def _fit_hybrid(pairs: pd.DataFrame) -> HybridCalibration:
    """Platt stacking (scikit-learn's LogisticRegression) of the two channels' logits and
    the found-by-both flag. A feature whose fitted weight comes out negative (more
    evidence → lower probability: not monotone) is dropped and the rest refitted, so every
    stored weight is ≥ 0."""
    from sklearn.linear_model import LogisticRegression

    eps = HybridCalibration.model_fields["eps"].default
    X, y = _features(pairs, eps), pairs["label"].to_numpy(np.int64)
    names, kept = ("vector", "fts", "both"), [0, 1, 2]
    weights = dict.fromkeys(names, 0.0)
    intercept = 0.0
    while kept:
        model = LogisticRegression(max_iter=1000).fit(X[:, kept], y)
        coef = model.coef_[0]
        intercept = float(model.intercept_[0])
        if (coef >= 0).all():
            weights.update({names[i]: float(w) for i, w in zip(kept, coef)})
            break
        kept = [i for i, w in zip(kept, coef) if w >= 0]
    else:  # nothing monotone left: the base rate alone
        rate = min(max(float(y.mean()), eps), 1 - eps)
        intercept = float(np.log(rate / (1 - rate)))
    return HybridCalibration(n=int(len(y)), positives=int(y.sum()), eps=eps, intercept=intercept, **weights)


_NO_REF = ArtifactRef("mem_art_calibration", 1)


def _signals(row: Mapping[str, Any]) -> ChannelCandidate:
    """A candidate carrying a row's signals (the ids do not matter to a probability)."""
    def number(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or pd.isna(value) else float(value)

    def text(name: str) -> str | None:
        value = row.get(name)
        return value if isinstance(value, str) else None

    return ChannelCandidate(
        row["channel"], 1, _NO_REF, "e", "v", "0" * 64, "fact", "", matched_terms=("t",) * int(row["matched"]),
        query_term_count=int(row["query_term_count"]), cosine=number("cosine"), centred=number("centred"),
        script=text("script"), query_script=text("query_script"))


def predict(frame: pd.DataFrame, calibration: Calibration) -> pd.DataFrame:
    """``frame`` (cached candidate rows, or a ``labelled`` frame) with the ``probability``
    and ``calibration_cell`` a search reads: ``Calibration.probability`` itself, of a
    candidate with each row's signals."""
    values = [calibration.probability(_signals(row)) for row in frame.to_dict("records")]
    return frame.assign(probability=[p for p, _ in values], calibration_cell=[c for _, c in values])


def ece(p: np.ndarray, y: np.ndarray, bins: int = BINS) -> float:
    """Expected calibration error: Σ_b n_b/N · |mean p − observed rate| over equal-width bins."""
    p, y = np.asarray(p, float), np.asarray(y, float)
    if not len(p):
        return float("nan")
    which = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in np.unique(which):
        inside = which == b
        total += inside.sum() / len(p) * abs(p[inside].mean() - y[inside].mean())
    return float(total)


def folds_of(frame: pd.DataFrame, folds: int | str) -> list[tuple[str, np.ndarray]]:
    """(label, held-out mask) per fold: ``"corpus"`` = leave one corpus out, an integer
    k = k folds by query (a query's candidates stay together)."""
    if folds == "corpus":
        corpora = sorted(frame["corpus"].unique())
        if len(corpora) < 2:
            raise InvalidCalibrationError("leave-one-corpus-out needs at least two corpora; use folds=5")
        return [(f"held out {c}", (frame["corpus"] == c).to_numpy()) for c in corpora]
    if not isinstance(folds, int) or isinstance(folds, bool) or folds < 2:
        raise InvalidCalibrationError(f"folds must be 'corpus' or an integer ≥ 2, got {folds!r}")
    from sklearn.model_selection import GroupKFold

    groups = frame["query_id"].to_numpy()
    if len(np.unique(groups)) < folds:
        raise TooFewLabelsError(f"{folds}-fold scores need at least {folds} labelled questions, "
                                f"got {len(np.unique(groups))}")
    return [(f"fold {i + 1}", np.isin(np.arange(len(frame)), test))
            for i, (_, test) in enumerate(GroupKFold(n_splits=folds).split(frame, groups=groups))]


def score(frame: pd.DataFrame, profile: str, folds: int | str = "corpus", **fit_options: Any) -> pd.DataFrame:
    """Every labelled candidate with its HELD-OUT probability: for each fold, the
    artefact fitted on the other folds predicts this one (``fold`` says which)."""
    parts = []
    for label, test in folds_of(frame, folds):
        train = frame[~test]
        corpora = sorted(train["corpus"].unique())
        calibration = fit(train, profile, corpora=corpora, **fit_options)
        parts.append(predict(frame[test], calibration).assign(fold=label))
        if calibration.hybrid is not None:
            parts.append(_hybrid_scored(frame[test], calibration).assign(fold=label))
    return pd.concat(parts, ignore_index=True)


def _hybrid_scored(frame: pd.DataFrame, calibration: Calibration) -> pd.DataFrame:
    """The hybrid cell's predictions as rows of channel ``hybrid`` (cell ``stacked``)."""
    pairs = hybrid_pairs(frame, calibration)
    nan = lambda v: None if np.isnan(v) else float(v)  # noqa: E731
    p = [calibration.hybrid(nan(v), nan(f)) for v, f in zip(pairs["p_vector"], pairs["p_fts"])]
    return pairs.assign(channel="hybrid", cell="stacked", probability=p, calibration_cell="hybrid stacked")


def cell_table(scored: pd.DataFrame, min_cell_n: int = 30) -> pd.DataFrame:
    """Per channel and cell (and pooled): held-out n, relevant, ECE, Brier, mean
    predicted vs observed, and ⚠ where the cell rests on fewer than ``min_cell_n``."""
    rows = []
    data = scored[scored["probability"].notna()]
    for (channel, cell), g in [*data.groupby(["channel", "cell"]),
                               *((( ch, "(pooled)"), g) for ch, g in data.groupby("channel"))]:
        p, y = g["probability"].to_numpy(float), g["label"].to_numpy(float)
        rows.append(dict(channel=channel, cell=cell, n=len(g), relevant=int(y.sum()), ece=ece(p, y),
                         brier=float(np.mean((p - y) ** 2)), predicted=float(p.mean()), observed=float(y.mean()),
                         flag="⚠" if len(g) < min_cell_n else ""))
    return pd.DataFrame(rows)
