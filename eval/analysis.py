"""The offline half of the harness: a run's collected candidates replayed over the
policy grid, the recommendation chosen, the named policies' tables, the
leave-one-corpus-out transfer and the cross-backend comparison, gathered in a
``SweepResult``. No database or model is touched here (``harness.analyse`` is this
module's ``analyse``; ``harness`` adds the entry points that collect first)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import AdmissionPolicy

from . import metrics as M
from .collect import Collected
from .compare import admitted_agreement, explain, hit_agreement, metric_deltas, pool_agreement, vector_recall
from .crossval import crossvalidate, fold_count, fold_groups, summarise
from .databases import EvalError
from .explain import explain_tables
from .external import external_per_query, external_runs
from .peers import peers_frame
from .grid import policy_from_fields
from .progress import bar
from .recommend import Objective, choose, choose_joint, sensitivity
from .splits import DEFAULT_SEED
from .sweep import Grid, Replay, point_values
from .tables import abstention_frame, breakdown_frame, check_metrics, per_query_table, stats_frame, summary_frame
from .transfer import leave_one_out

__all__ = ["SweepResult", "analyse", "build_replays", "cross_backend", "spot_check", "split_groups", "sweep_table"]


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
    breakdown: pd.DataFrame
    stats: pd.DataFrame
    abstention: pd.DataFrame
    cross: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: pd.DataFrame = field(default_factory=pd.DataFrame)
    sensitivity: pd.DataFrame = field(default_factory=pd.DataFrame)
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
            out[(backend, mode)] = Replay.build(cands, retr, qrels, mode, min_width=collected.max_limit)
            if seconds is not None:
                seconds[(backend, mode)] = time.perf_counter() - start
    return out


def sweep_table(replays: dict[tuple[str, str], Replay], queries: pd.DataFrame, grid: Grid,
                progress: bool = False, groups: tuple[np.ndarray, list[tuple[str, str]]] | None = None,
                ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The aggregated grid (every point × group; by default corpus × split) and the
    time each (backend, mode) took."""
    weights, labels = groups if groups is not None else split_groups(queries)
    frames, times = [], []
    for (backend, mode), replay in bar(progress, iterable=list(replays.items()), desc="sweep", leave=False):
        start = time.perf_counter()
        policies = grid.policies(mode)
        agg = replay.aggregate(policies, grid.limits, weights)
        frames.append(_frame(agg, policies, grid.limits, labels, backend, mode))
        times.append(dict(backend=backend, mode=mode, points=len(policies) * len(grid.limits),
                          seconds=time.perf_counter() - start))
    return pd.concat(frames, ignore_index=True), pd.DataFrame(times)


def _frame(agg, policies, limits, labels, backend, mode) -> pd.DataFrame:
    P, L, G = len(policies), len(limits), len(labels)
    params = pd.DataFrame([point_values(p, mode, limit) for p in policies for limit in limits])
    params = params.loc[params.index.repeat(G)].reset_index(drop=True)
    df = pd.DataFrame({"backend": backend, "mode": mode,
                       "corpus": [c for _ in range(P * L) for c, _ in labels],
                       "split": [s for _ in range(P * L) for _, s in labels]})
    df = pd.concat([df, params], axis=1)
    for name in M.METRIC_NAMES:
        df[name] = agg[name].reshape(-1)
    for pop in ("positive", "empty", "all"):
        df[f"n_{pop}"] = np.tile(agg[f"n_{pop}"], P * L).astype(int)
    return df


def spot_check(collected: Collected, replays: dict[tuple[str, str], Replay]) -> pd.DataFrame:
    """Compare the online searches made during collection with the replay of the same
    policy and limit: one row per search, ``equal`` when hits, order, scores and
    channels are identical."""
    from .collect import SPOT_POLICIES, hit_key

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


def cross_backend(collected: Collected, per_query: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], list[str]]:
    if not {"sqlite", "oceanbase"} <= set(collected.backends):
        recall = vector_recall(collected.candidates, collected.exact)
        return {"vector_recall": recall}, explain(pd.DataFrame(columns=["mode", "channel"]), pd.DataFrame(), recall)
    default = collected.default_policy
    pool = default.pool_size(8)
    pools = pool_agreement(collected.candidates, pool)
    admitted = admitted_agreement(collected.candidates, default, 8, queries=[
        (mode, q) for mode in collected.modes for q in collected.queries["query_id"]])
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
            runs: Mapping[str, Any] | None = None, metrics: Sequence[str] | None = None) -> SweepResult:
    """Everything offline: replay the grid, choose, compare. No database is touched.

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
    build_seconds: dict = {}
    replays = build_replays(collected, seconds=build_seconds)
    table, sweep_times = sweep_table(replays, queries, grid, progress)
    recs = {mode: choose(table, mode, chooser) for mode in collected.modes}
    recs["joint"] = choose_joint(table, collected.modes, chooser)
    recs = {mode: _tied_to(rec, collected.profile_id) for mode, rec in recs.items()}
    cv_folds, cv_summary, fold = (_crossvalidated(replays, queries, grid, objective, k, seed, collected.modes, progress)
                                  if k else (pd.DataFrame(), pd.DataFrame(), None))
    recommendations = _with_heldout(pd.DataFrame([r.as_dict() for r in recs.values()]), cv_summary, objective, k)
    default = collected.default_policy
    per_query = per_query_table(replays, queries, recs, objective.limit, default=default)
    transfer = leave_one_out(table, replays, queries, objective, seed=seed, default=default)
    peers = peers_frame(replays, queries, collected.max_limit, objective.limit,
                        named={m: {"default": default, "recommended": recs[m].policy} for m in collected.modes})
    qrels = collected.qrels
    explained, explained_policies = explain_tables(
        collected.candidates, queries, qrels, {m: {"default": default, "recommended": recs[m].policy}
                                               for m in collected.modes}, objective.limit)
    cross, notes = cross_backend(collected, per_query)  # our policies only: an external run is the same on both
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
    return SweepResult(
        collected=collected, grid=grid, objective=chooser, sweep=table, recommendations=recommendations,
        per_query=per_query, summary=summary_frame(per_query, qrels), breakdown=breakdown_frame(per_query),
        stats=stats_frame(per_query, qrels, metrics=check_metrics(metrics)),
        abstention=abstention_frame(replays, queries, collected.candidates),
        cross=cross, notes=notes, timings=timings, replays=replays,
        sensitivity=sensitivity(table, collected.modes, chooser), folds=k, crossval=cv_folds,
        crossval_summary=cv_summary, splits=_splits_table(collected, fold), seed=seed, transfer=transfer, peers=peers,
        explain=explained, explain_policies=explained_policies,
    )
