"""The swept grid of one backend × mode as arrays, and which of its rows a run keeps.

A full sweep table is every (policy, limit, corpus × split) of the grid: ~140k points
per database with MiniLM × 15 query groups for the four bundled corpora, millions of
rows. Built as one DataFrame it peaked ``make eval`` at 6.96 GB and wrote a 61 MB
``sweep.parquet``, while everything that reads it reads a small part:

* the recommendation, the bound sensitivity and the report's frontier and threshold
  plots read every point at the objective's limit on the objective's split, all
  corpora pooled; leave-one-corpus-out reads every point at that limit per corpus on
  all its queries (the *decision slice*: a choice made on the kept rows is the choice
  made on the full grid, because those rows are all there);
* the ThresholdTuner and a reader of the run folder look at the frontier — the best
  ranking quality reachable at each false-admission rate — at any limit, corpus and
  split, and move one threshold at a time from a named point.

So a run chooses on the decision slice and each slice's frontier, and keeps (in
``result.sweep`` and sweep.parquet), per backend and mode: every point at the
objective's limit on its split, all corpora pooled; at every limit, corpus and split,
the points within ``NEAR`` of that slice's frontier (not beaten by more than ``NEAR`` on
both the metric and the false admission at once), one per distinct pair of values; and
the named points (initial, no admission, the default, each recommendation) with every
grid point one threshold away from them, everywhere. The per-corpus rows the
leave-one-corpus-out tuning reads are its own table (leave_one_out.parquet).
``sweep(full_grid=True)`` keeps every row.

The grid is held as float64 arrays [policy, limit, group] (the replay's own numbers,
so a choice on them is bit-identical to one on the old table) and turned into rows only
for what is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import AdmissionPolicy

from . import metrics as M
from .grid import PARAMS, family_of, point_values

__all__ = ["NEAR", "PointGrid", "near_frontier"]

#: How far from a slice's frontier a kept point may be, on both axes at once.
NEAR = 0.01


def near_frontier(metric: np.ndarray, cost: np.ndarray, near: float = NEAR) -> np.ndarray:
    """Points of one slice not beaten by more than ``near`` on both axes at once: no
    other point has ``metric`` higher by more than ``near`` AND ``cost`` lower by more
    than ``near``. Where a slice has no cost (NaN: no empty-answer query there) the
    points within ``near`` of the best metric; where it has no metric, those within
    ``near`` of the lowest cost."""
    metric, cost = np.asarray(metric, float), np.asarray(cost, float)
    keep = np.zeros(len(metric), bool)
    has_m, has_c = ~np.isnan(metric), ~np.isnan(cost)
    both = has_m & has_c
    if both.any():
        idx = np.flatnonzero(both)
        c, m = cost[idx], metric[idx]
        order = np.argsort(c, kind="stable")
        best = np.maximum.accumulate(m[order])  # best metric at cost ≤ c[order[i]]
        # the best metric among points whose cost is lower by more than ``near``
        below = np.searchsorted(c[order], c - near, side="left")  # points with cost < c − near
        beaten = np.where(below > 0, best[np.maximum(below - 1, 0)], -np.inf) > m + near
        keep[idx] = ~beaten
    only_m = has_m & ~has_c
    if only_m.any():
        keep |= only_m & (metric >= np.nanmax(metric[only_m]) - near)
    only_c = has_c & ~has_m
    if only_c.any():
        keep |= only_c & (cost <= np.nanmin(cost[only_c]) + near)
    return keep


@dataclass
class PointGrid:
    """One backend × mode of a sweep: ``values[metric]`` [P, L, G] (group means, NaN
    where a group has no query of the metric's population), ``counts[population]``
    [G], the policies, limits and (corpus, split) labels."""

    backend: str
    mode: str
    policies: list[AdmissionPolicy]
    limits: list[int]
    labels: list[tuple[str, str]]
    values: dict[str, np.ndarray]
    counts: dict[str, np.ndarray]
    params: pd.DataFrame = field(init=False, repr=False)  # one row per policy: family and thresholds

    def __post_init__(self) -> None:
        limit = self.limits[0] if self.limits else 0
        self.params = pd.DataFrame([point_values(p, self.mode, limit) for p in self.policies]).drop(columns="limit")
        if not len(self.params):
            self.params = pd.DataFrame(columns=["family", *PARAMS])

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self.policies), len(self.limits), len(self.labels)

    def decision(self, limit: int, split: str, per_corpus: bool = True) -> np.ndarray:
        """[P, L, G] mask of the decision slice: every point at ``limit`` on ``split``
        of all corpora pooled, and (``per_corpus``) on every query of each corpus."""
        mask = np.zeros(self.shape, bool)
        if limit not in self.limits:
            return mask
        groups = [g for g, (corpus, s) in enumerate(self.labels)
                  if (corpus == "all" and s == split) or (per_corpus and corpus != "all" and s == "all")]
        mask[:, self.limits.index(limit), groups] = True
        return mask

    def frontier(self, metric: str, cost: str, near: float = NEAR) -> np.ndarray:
        """[P, L, G] mask: in every (limit, group), the points near its frontier, one per
        distinct (metric, cost) pair (many policies admit the same sets and tie exactly;
        the first in grid order stands for them)."""
        mask = np.zeros(self.shape, bool)
        m, c = self.values[metric], self.values[cost]
        for li in range(len(self.limits)):
            for g in range(len(self.labels)):
                near_mask = near_frontier(m[:, li, g], c[:, li, g], near)
                pairs = pd.DataFrame({"m": m[:, li, g], "c": c[:, li, g]}).round(9)
                mask[:, li, g] = near_mask & ~pairs.duplicated().to_numpy()
        return mask

    def around(self, anchors: Sequence[AdmissionPolicy]) -> np.ndarray:
        """[P, L, G] mask: each anchor's grid point and every point of its family one
        threshold away from it (what moving one slider of the tuner reaches), at every
        limit and group."""
        mask = np.zeros(self.shape, bool)
        if not len(self.params):
            return mask
        columns = [c for c in PARAMS if c in self.params.columns]
        table = self.params[columns]
        for anchor in anchors:
            values = point_values(anchor, self.mode, self.limits[0])
            same = np.zeros((len(table), len(columns)), bool)
            for i, name in enumerate(columns):
                column, value = table[name], values.get(name, math.nan)
                if isinstance(value, str):
                    same[:, i] = (column == value).to_numpy()
                elif value is None or value != value:
                    same[:, i] = column.isna().to_numpy()
                else:
                    numbers = pd.to_numeric(column, errors="coerce").to_numpy(float)
                    same[:, i] = np.isclose(numbers, float(value))
            rows = (self.params["family"] == family_of(anchor)).to_numpy() & (same.sum(1) >= len(columns) - 1)
            mask[rows] = True
        return mask

    def rows(self, mask: np.ndarray | None = None) -> pd.DataFrame:
        """The table rows of the points ``mask`` holds (every point if None): backend,
        mode, corpus, split, family, thresholds, limit, each metric and the query counts."""
        P, L, G = self.shape
        if mask is None:
            p, li, g = (a.ravel() for a in np.meshgrid(np.arange(P), np.arange(L), np.arange(G), indexing="ij"))
        else:
            p, li, g = np.nonzero(mask)
        corpora = np.array([c for c, _ in self.labels], dtype=object)
        splits = np.array([s for _, s in self.labels], dtype=object)
        frame = pd.DataFrame({"backend": self.backend, "mode": self.mode, "corpus": corpora[g], "split": splits[g]})
        params = self.params.iloc[p].reset_index(drop=True)
        params.insert(len(params.columns), "limit", np.asarray(self.limits, dtype=np.int64)[li])
        frame = pd.concat([frame, params], axis=1)
        for name in M.METRIC_NAMES:
            frame[name] = self.values[name][p, li, g]
        for pop in ("positive", "empty", "all"):
            frame[f"n_{pop}"] = self.counts[f"n_{pop}"][g].astype(int)
        return frame
