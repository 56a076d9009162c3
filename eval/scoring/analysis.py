"""The offline half of the harness: a run's collected candidates replayed over the
policy grid, the recommendation chosen, the named policies' tables, the
leave-one-corpus-out transfer and the cross-backend comparison, gathered in a
``SweepResult``. No database or model is touched here (``harness.analyse`` is this
module's ``analyse``; ``harness`` adds the entry points that collect first)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import AdmissionPolicy
from powercontext.memory.calibration import calibration_for

from . import metrics as M
from ..running.collect import Collected
from ..running.retrieval import QueryChannels, query_channels
from .compare import admitted_agreement, explain, hit_agreement, metric_deltas, pool_agreement, vector_recall
from .crossval import crossvalidate, fold_count, fold_groups, summarise
from ..errors import EvalError
from .explain import explain_tables
from .external import external_per_query, external_runs
from .peers import peers_frame
from .points import PointGrid
from .grid import NAMED_POLICIES, policy_from_fields
from ..progress import stage
from .recommend import Objective, choose, choose_joint, sensitivity
from ..corpora.splits import DEFAULT_SEED
from .sweep import Grid, Replay, point_values
from .tables import abstention_frame, breakdown_frame, check_metrics, per_query_table, stats_frame, summary_frame
from .transfer import leave_one_out

__all__ = ["SweepResult", "analyse", "build_replays", "cross_backend", "grid_points", "spot_check", "split_groups",
           "sweep_table"]


@dataclass
class SweepResult:
    """Everything a run measured; ``report.write_run`` turns it into the run folder."""

    collected: Collected
    grid: Grid
    objective: Objective
    sweep: pd.DataFrame
    recommendations: pd.DataFrame
    per_query: pd.DataFrame
    summary: pd.DataFrame
    abstention: pd.DataFrame
    cross: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)
    out: Path | None = None
    replays: dict[tuple[str, str], Replay] = field(default_factory=dict, repr=False)
    stages: pd.DataFrame = field(default_factory=pd.DataFrame)  # stage, backend, wall seconds of the whole run
    folds: int = 0  # k of the cross-validated recommendation; 0 = chosen on dev, reported on test
    crossval: pd.DataFrame = field(default_factory=pd.DataFrame)  # per fold × mode × backend (crossval.crossvalidate)
    crossval_summary: pd.DataFrame = field(default_factory=pd.DataFrame)  # held-out mean ± sd per mode × backend
    splits: pd.DataFrame = field(default_factory=pd.DataFrame)  # corpus, query_id, split, split_origin, fold
    seed: int = DEFAULT_SEED
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)  # leave-one-corpus-out per family (transfer.leave_one_out)
    peers: pd.DataFrame = field(default_factory=pd.DataFrame)  # peers' defaults replayed here (peers.peers_frame)
    explain: pd.DataFrame = field(default_factory=pd.DataFrame)  # every candidate's signals and verdicts (explain)
    explain_policies: pd.DataFrame = field(default_factory=pd.DataFrame)  # the policies explain names, as JSON
    #: ``breakdown``, ``stats`` and ``sensitivity``: a DataFrame, or the function that
    #: builds it on first read. Only the report and a reader of these tables want them,
    #: and they were over half of a small sweep's analyse time (the bootstrap CIs of
    #: every tag × policy, the paired tests): a sweep without a run folder
    #: (``write=False``: ``fit``, ``summary``, a notebook reading the summary) skips them.
    deferred: dict[str, pd.DataFrame | Callable[[], pd.DataFrame]] = field(default_factory=dict, repr=False)

    def _deferred(self, name: str) -> pd.DataFrame:
        value = self.deferred.get(name)
        if value is None:
            return pd.DataFrame()
        if callable(value):
            value = self.deferred[name] = value()
        return value

    @property
    def breakdown(self) -> pd.DataFrame:
        """The named policies' metrics by tag, language and corpus (``tables.breakdown_frame``)."""
        return self._deferred("breakdown")

    @property
    def stats(self) -> pd.DataFrame:
        """The paired tests between the named policies (``tables.stats_frame``)."""
        return self._deferred("stats")

    @property
    def sensitivity(self) -> pd.DataFrame:
        """The choice under other false-admission bounds (``recommend.sensitivity``)."""
        return self._deferred("sensitivity")

    @property
    def headline_split(self) -> str:
        """The split every headline figure is quoted on — the terminal summary, the
        report's first screen and its breakdowns: all queries for a cross-validated run
        (its recommendation was chosen on all of them, the held-out estimate comes from
        the folds), the test split otherwise. One rule, so the terminal and the report
        never quote different splits for the same table."""
        return "all" if self.folds else "test"

    @property
    def method(self) -> str:
        """How the recommendation was chosen and estimated, in words."""
        if self.folds:
            return f"{self.folds}-fold cross-validation by query (chosen on all queries; estimate held out)"
        return "chosen on the dev split, reported on the test split"

    def recommended(self, mode: str) -> AdmissionPolicy:
        """The policy recommended for ``mode`` (or ``"joint"``: one for every mode)."""
        return policy_from_fields(self.recommendations.set_index("mode").loc[mode])

    def by_tag(self, facet: str = "tag", policies: Sequence[str] = ("default", "recommended"),
               split: str | None = None, backend: str | None = None, mode: str | None = None) -> pd.DataFrame:
        """Which kind of question a policy fails: ``breakdown`` cut to one ``facet``
        (``tag``, ``lang`` or ``corpus``), the named ``policies`` and ``split`` (default:
        test for a dev/test run, all queries for a cross-validated one), optionally one
        backend and mode. Per row: query counts, nDCG@10, the answered share (answerable
        queries given at least one hit) and false admission with 95 % bootstrap CIs, and
        ``few_positive`` / ``few_empty`` where a rate rests on fewer than 20 queries."""
        split = split or self.headline_split
        b = self.breakdown
        keep = (b["facet"] == facet) & (b["split"] == split) & b["policy"].isin(policies)
        if backend is not None:
            keep &= b["backend"] == backend
        if mode is not None:
            keep &= b["mode"] == mode
        cols = ["backend", "mode", "policy", "value", "queries", "positive", "empty", "ndcg@10", "ndcg@10_lo",
                "ndcg@10_hi", "answered", "answered_lo", "answered_hi", "false_admission", "false_admission_lo",
                "false_admission_hi", "few_positive", "few_empty"]
        return b.loc[keep, cols].rename(columns={"value": facet}).reset_index(drop=True)

    def compared(self) -> "SweepResult":
        """This result as a comparison keeps it while the next model runs: without
        the replays, the per-candidate tables (``collected.candidates``, ``exact``,
        ``spot``, ``explain``) and the swept grid, which its run folder holds already.
        Left: every table the side-by-side files and the terminal summary read
        (summary, per-query, transfer, peers, recommendations, timings, stages).
        A full ``make eval`` peaked in E5's analyse stage while MiniLM's replays were
        still held."""
        from dataclasses import replace

        empty = pd.DataFrame()
        collected = replace(self.collected, candidates=empty, exact=empty, spot=empty)
        # the deferred tables built now: their builders hold the grid table this copy drops
        deferred = {name: self._deferred(name) for name in self.deferred}
        return replace(self, collected=collected, replays={}, explain=empty, sweep=empty, deferred=deferred)

    def summary_table(self, split: str | None = None) -> pd.DataFrame:
        """The printed summary: one row per backend × mode × policy on ``split``
        (default: test for a dev/test run, all queries for a cross-validated one, whose
        recommended rows then carry the held-out estimate ± its spread over folds)."""
        split = split or self.headline_split
        s = self.summary[self.summary["split"] == split]
        cols = ["backend", "mode", "policy", "label", "ndcg@10", "ndcg@10_ci", "mrr@10", "recall@10", "set_f1",
                "false_admission", "false_admission_ci", "empty_answer", "hits"]
        table = s[[c for c in cols if c in s.columns]].reset_index(drop=True)
        if self.folds and len(self.crossval_summary):
            o = self.objective
            cv = self.crossval_summary
            own = cv[(cv["recommendation"] == cv["mode"]) | (cv["recommendation"] == "joint")].assign(
                policy=lambda d: np.where(d["recommendation"] == "joint", "joint", "recommended"))
            keep = {f"{m}_{x}": f"heldout_{m}{'' if x == 'mean' else '_sd'}"
                    for m in (o.metric, o.constraint) for x in ("mean", "sd")}
            own = own[["backend", "mode", "policy", *keep]].rename(columns=keep)
            table = table.merge(own, on=["backend", "mode", "policy"], how="left")
        return table


# ---------------------------------------------------------------------------- analysis


def split_groups(queries: pd.DataFrame) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """Membership columns (corpus × split, "all" included) of the aggregated sweep."""
    labels, columns = [], []
    for corpus in ["all", *sorted(queries["corpus"].unique())]:
        in_corpus = np.ones(len(queries), bool) if corpus == "all" else (queries["corpus"] == corpus).to_numpy()
        for split in ("all", "dev", "test"):
            in_split = np.ones(len(queries), bool) if split == "all" else (queries["split"] == split).to_numpy()
            columns.append((in_corpus & in_split).astype(np.float64))
            labels.append((corpus, split))
    return np.stack(columns, 1), labels


def build_replays(collected: Collected, modes: Sequence[str] | None = None,
                  seconds: dict | None = None) -> dict[tuple[str, str], Replay]:
    """One Replay per (backend, mode), queries in ``collected.queries`` order; the
    build time of each goes into ``seconds`` if given."""
    qrels = collected.qrels
    order = collected.queries["query_id"]
    out = {}
    for backend in collected.backends:
        for mode in modes or collected.modes:
            start = time.perf_counter()
            cands = collected.candidates[(collected.candidates["backend"] == backend) & (collected.candidates["mode"] == mode)]
            retr = collected.retrievals[(collected.retrievals["backend"] == backend) & (collected.retrievals["mode"] == mode)]
            retr = retr.set_index("query_id").loc[order].reset_index()
            # hybrid: the probability depends on the pool (the hybrid cell), so the replay
            # re-annotates with the artefact the collecting service used (the shipped one)
            calibration = calibration_for(collected.profile_id) if mode == "hybrid" else None
            out[(backend, mode)] = Replay.build(cands, retr, qrels, mode, min_width=collected.max_limit,
                                                calibration=calibration)
            if seconds is not None:
                seconds[(backend, mode)] = time.perf_counter() - start
    return out


#: Policies replayed at once (``Replay.evaluate``): bounds the replay's [policies, queries] arrays.
CHUNK = 2048


def grid_points(replays: dict[tuple[str, str], Replay], queries: pd.DataFrame, grid: Grid,
                groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None,
                stage: Any = None) -> tuple[list[PointGrid], pd.DataFrame]:
    """The grid replayed on every (backend, mode), as arrays (``points.PointGrid``: every
    point × group; by default corpus × split), and the time each took. ``stage`` (a
    ``progress.Stage``) is sized in policies and advanced as each chunk is replayed."""
    weights, labels = groups if groups is not None else split_groups(queries)
    grids, times = [], []
    by_mode = {mode: grid.policies(mode) for mode in dict.fromkeys(m for _, m in replays)}
    if stage is not None:
        stage.total = sum(len(by_mode[mode]) for _, mode in replays)
    for (backend, mode), replay in replays.items():
        start = time.perf_counter()
        policies = by_mode[mode]
        agg = replay.aggregate(policies, grid.limits, weights, chunk=CHUNK,
                               done=None if stage is None else stage.update)
        values = {name: agg[name] for name in M.METRIC_NAMES}
        counts = {f"n_{pop}": agg[f"n_{pop}"] for pop in ("positive", "empty", "all")}
        grids.append(PointGrid(backend, mode, policies, list(grid.limits), labels, values, counts))
        times.append(dict(backend=backend, mode=mode, points=len(policies) * len(grid.limits),
                          seconds=time.perf_counter() - start))
    return grids, pd.DataFrame(times)


def sweep_table(replays: dict[tuple[str, str], Replay], queries: pd.DataFrame, grid: Grid,
                progress: bool = False, groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None,
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The whole aggregated grid as one table (every point × group; by default corpus ×
    split) and the time each (backend, mode) took. ``analyse`` keeps only part of it
    (``points``); this is for a grid small enough to hold whole (the fold sweep)."""
    grids, times = grid_points(replays, queries, grid, groups)
    return _table(grids, None), times


def _table(grids: Sequence[PointGrid], masks: Sequence[np.ndarray] | None) -> pd.DataFrame:
    frames = [g.rows(None if masks is None else m) for g, m in zip(grids, masks or [None] * len(grids))]
    return pd.concat(frames, ignore_index=True)


def _kept(grids: Sequence[PointGrid], objective: Objective, anchors: Mapping[str, Sequence[AdmissionPolicy]] | None):
    """Per grid, the mask of the rows a run chooses on (``anchors`` None: the decision
    slice with every corpus's, and the frontier) or keeps (the pooled decision slice, the
    frontier, and the ``anchors`` of its mode with their one-threshold neighbours); see ``points``."""
    masks = []
    for g in grids:
        mask = g.decision(objective.limit, objective.split, per_corpus=anchors is None)
        mask |= g.frontier(objective.metric, objective.constraint)
        if anchors is not None:
            mask |= g.around(anchors.get(g.mode, ()))
        masks.append(mask)
    return masks


def spot_check(collected: Collected, replays: dict[tuple[str, str], Replay]) -> pd.DataFrame:
    """Compare the online searches made during collection with the replay of the same
    policy and limit: one row per search, ``equal`` when hits, order, scores and
    channels are identical."""
    from ..running.collect import SPOT_POLICIES, hit_key

    rows = []
    cache: dict = {}
    for r in collected.spot.itertuples():
        key = (r.backend, r.mode, r.policy, r.limit)
        if key not in cache:
            cache[key] = replays[(r.backend, r.mode)].hits(SPOT_POLICIES[r.policy], r.limit)
        offline = tuple(hit_key(h) for h in cache[key][r.query_id])
        rows.append(dict(backend=r.backend, corpus=r.corpus, mode=r.mode, policy=r.policy, limit=r.limit,
                         query_id=r.query_id, equal=offline == tuple(r.hits), online=len(r.hits), offline=len(offline)))
    return pd.DataFrame(rows, columns=["backend", "corpus", "mode", "policy", "limit", "query_id", "equal", "online", "offline"])


def cross_backend(collected: Collected, per_query: pd.DataFrame,
                  groups: Mapping[tuple[str, str, str], QueryChannels] | None = None) -> tuple[dict[str, pd.DataFrame], list[str]]:
    if not {"sqlite", "oceanbase"} <= set(collected.backends):
        recall = vector_recall(collected.candidates, collected.exact)
        return {"vector_recall": recall}, explain(pd.DataFrame(columns=["mode", "channel"]), pd.DataFrame(), recall)
    default = collected.default_policy
    pool = default.pool_size(8)
    pools = pool_agreement(collected.candidates, pool)
    admitted = admitted_agreement(collected.candidates, default, 8, queries=[
        (mode, q) for mode in collected.modes for q in collected.queries["query_id"]], groups=groups)
    agreement = hit_agreement(per_query)
    deltas = metric_deltas(per_query)
    recall = vector_recall(collected.candidates, collected.exact, ks=(8, pool))
    return ({"deltas": deltas, "agreement": agreement, "admitted": admitted, "pools": pools, "vector_recall": recall},
            explain(pools, agreement, recall, admitted))


def _splits_table(collected: Collected, fold: np.ndarray | None) -> pd.DataFrame:
    q = collected.queries
    origin = {c.name: c.split_origin for c in collected.corpora}
    return pd.DataFrame({"corpus": q["corpus"], "query_id": q["query_id"], "split": q["split"],
                         "split_origin": q["corpus"].map(origin),
                         "fold": fold + 1 if fold is not None else 0})


def _crossvalidated(replays, queries: pd.DataFrame, grid: Grid, objective: Objective, k: int, seed: int,
                    modes: Sequence[str], progress: bool):
    """The fold sweep (only the objective's limit) and the per-fold choices."""
    from dataclasses import replace

    matrix, labels, fold = fold_groups(queries, k, seed)
    table, _ = sweep_table(replays, queries, replace(grid, limits=(objective.limit,)), progress, (matrix, labels))
    folds = crossvalidate(table, modes, objective, k)
    return folds, summarise(folds, objective), fold


def _with_heldout(recommendations: pd.DataFrame, summary: pd.DataFrame, objective: Objective, k: int) -> pd.DataFrame:
    """Recommendation rows with the held-out estimate (mean over backends of the fold
    means, the largest spread of any backend)."""
    recs = recommendations.copy()
    recs.insert(1, "method", f"{k}-fold CV" if k else "dev/test")
    if not k:
        return recs
    mine = summary[summary["recommendation"] == summary["mode"]]  # each mode's own choice
    joint = summary[summary["recommendation"] == "joint"]
    for metric in (objective.metric, objective.constraint):
        by_mode = mine.groupby("mode")
        recs[f"heldout_{metric}"] = recs["mode"].map(by_mode[f"{metric}_mean"].mean())
        recs[f"heldout_{metric}_sd"] = recs["mode"].map(by_mode[f"{metric}_sd"].max())
        is_joint = recs["mode"] == "joint"
        recs.loc[is_joint, f"heldout_{metric}"] = joint[f"{metric}_mean"].mean()
        recs.loc[is_joint, f"heldout_{metric}_sd"] = joint[f"{metric}_sd"].max()
    recs["fold_policies"] = recs["mode"].map(summary.groupby("recommendation")["policies_chosen"].max())
    return recs


def _tied_to(rec, profile_id: str | None):
    """A recommendation whose thresholds read the vector channel records the embedding
    profile they were tuned for (``AdmissionPolicy.profile``): used on another model's
    database, the policy is refused instead of admitting all or nothing."""
    from dataclasses import replace

    if profile_id is None or rec.mode == "fts":
        return rec
    return replace(rec, policy=rec.policy.with_profile(profile_id))


def analyse(collected: Collected, grid: Grid = Grid(), objective: Objective = Objective(),
            progress: bool = False, folds: int | str | None = "auto", seed: int = DEFAULT_SEED,
            runs: Mapping[str, Any] | None = None, metrics: Sequence[str] | None = None,
            full_grid: bool = False) -> SweepResult:
    """Everything offline: replay the grid, choose, compare. No database is touched.

    ``full_grid``: keep every grid point in ``result.sweep`` (and the run folder's
    sweep.parquet); by default a run keeps the points the choices, the report and the
    tuner read (``points``).

    ``folds``: "auto" (5-fold cross-validation below 200 queries, else the dev/test
    split), 0 (dev/test) or k ≥ 2. With k folds the recommendation is chosen on every
    query and its held-out estimate comes from ``crossval``; ``seed`` fixes the folds.
    ``runs``: other systems' TREC run files (name → path, or name → query id → ranked
    entry ids) scored beside the named policies (``external``); ``metrics``: the metrics
    the paired tests compare (default ``tables.STATS_METRICS``)."""
    from dataclasses import replace

    if objective.limit not in grid.limits:
        grid = replace(grid, limits=tuple(sorted(set(grid.limits) | {objective.limit})))
    grid = grid.resolved(collected.candidates, collected.default_policy)
    if grid.max_limit > collected.max_limit:
        raise EvalError(f"the grid reaches limit {grid.max_limit} but candidates were retrieved for limit "
                        f"{collected.max_limit}; collect again with max_limit ≥ {grid.max_limit}")
    queries = collected.queries
    try:
        k = fold_count(folds, len(queries))
    except ValueError as exc:
        raise EvalError(str(exc)) from exc
    chooser = replace(objective, split="all") if k else objective
    stat_metrics = check_metrics(metrics)  # a bad name refused now, not when the deferred stats are first read
    build_seconds: dict = {}
    replays = build_replays(collected, seconds=build_seconds)
    with stage("sweep", None, progress) as sweep_stage:
        grids, sweep_times = grid_points(replays, queries, grid, stage=sweep_stage)
    with stage("analyse", 1, progress) as analysing:  # choices, tables, leave-one-out, comparisons
        # every choice reads the decision slice, which the kept rows hold whole: the same
        # choice as on the full grid (see ``points``)
        table = _table(grids, None if full_grid else _kept(grids, chooser, None))
        recs = {mode: choose(table, mode, chooser) for mode in collected.modes}
        recs["joint"] = choose_joint(table, collected.modes, chooser)
        recs = {mode: _tied_to(rec, collected.profile_id) for mode, rec in recs.items()}
        kept = table
        if not full_grid:  # … and keeps the named points with their neighbours, for the tuner and a reader
            named = [*NAMED_POLICIES.values(), collected.default_policy, recs["joint"].policy]
            anchors = {mode: [*named, *([recs[mode].policy] if mode in recs else [])] for mode in collected.modes}
            kept = _table(grids, _kept(grids, chooser, anchors))
        del grids  # the arrays: the largest thing a run holds
        cv_folds, cv_summary, fold = (_crossvalidated(replays, queries, grid, objective, k, seed, collected.modes, progress)
                                      if k else (pd.DataFrame(), pd.DataFrame(), None))
        recommendations = _with_heldout(pd.DataFrame([r.as_dict() for r in recs.values()]), cv_summary, objective, k)
        default = collected.default_policy
        per_query = per_query_table(replays, queries, recs, objective.limit, default=default)
        transfer = leave_one_out(table, replays, queries, objective, seed=seed, default=default)
        peers = peers_frame(replays, queries, collected.max_limit, objective.limit,
                            named={m: {"default": default, "recommended": recs[m].policy} for m in collected.modes})
        qrels = collected.qrels
        groups = query_channels(collected.candidates)  # read by the explain table and the cross-backend check
        explained, explained_policies = explain_tables(
            collected.candidates, queries, qrels, {m: {"default": default, "recommended": recs[m].policy}
                                                   for m in collected.modes}, objective.limit, groups=groups)
        cross, notes = cross_backend(collected, per_query, groups)  # our policies only: an external run is the same on both
        del groups
        external = external_runs(runs, collected.corpora)
        if external:
            blocks = list(dict.fromkeys(zip(per_query["backend"], per_query["mode"])))
            per_query = pd.concat([per_query, external_per_query(external, queries, qrels, objective.limit, blocks)],
                                  ignore_index=True)
        spot = spot_check(collected, replays)
        if len(spot):
            by = spot.groupby(["backend", "mode"])["equal"].agg(["sum", "size"])
            notes.insert(0, "online spot check (svc.search vs the replay, initial and no-admission at limit 8): " + "; ".join(
                f"{b}/{m} {int(s)}/{int(n)} identical" for (b, m), (s, n) in by.iterrows()))
            cross["spot_check"] = spot
        retrieval = collected.retrieval_seconds().rename(columns={"seconds": "retrieval_seconds"})
        timings = sweep_times.rename(columns={"seconds": "sweep_seconds"}).merge(retrieval, on=["backend", "mode"])
        timings["build_seconds"] = [build_seconds[(b, m)] for b, m in zip(timings["backend"], timings["mode"])]
        timings["ratio"] = (timings["sweep_seconds"] + timings["build_seconds"]) / timings["retrieval_seconds"]
        analysing.update(1)
        return SweepResult(
            collected=collected, grid=grid, objective=chooser, sweep=kept, recommendations=recommendations,
            per_query=per_query, summary=summary_frame(per_query, qrels),
            abstention=abstention_frame(replays, queries, collected.candidates),
            cross=cross, notes=notes, timings=timings, replays=replays, folds=k, crossval=cv_folds,
            crossval_summary=cv_summary, splits=_splits_table(collected, fold), seed=seed, transfer=transfer, peers=peers,
            explain=explained, explain_policies=explained_policies,
            deferred=dict(breakdown=lambda: breakdown_frame(per_query),
                          stats=lambda: stats_frame(per_query, qrels, metrics=stat_metrics),
                          sensitivity=lambda: sensitivity(table, collected.modes, chooser)),
        )
