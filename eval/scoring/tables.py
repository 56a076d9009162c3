"""The tables of a run's named policies (recommended, joint, initial, default, no
admission), query by query and aggregated: the per-query metrics and rankings, the
summary with ranx's numbers and bootstrap CIs, breakdowns by tag / language / corpus,
paired tests against the initial constants and no admission, and abstention nAUC.
``harness.analyse`` builds them from the replays; each is a plain DataFrame."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from . import metrics as M
from .abstention import abstention_table
from ..running.databases import check_names
from .recommend import Recommendation
from .sweep import INITIAL, POINT_COLUMNS, point_values, policy_label
from ..presenting.verdict import SMALL

__all__ = ["BREAKDOWN_CIS", "MIN_QUERIES", "STATS_METRICS", "abstention_frame", "check_metrics", "breakdown_frame",
           "per_query_table", "stats_frame", "summary_frame"]

SUMMARY_METRICS = ("ndcg@10", "mrr@10", "recall@10", "precision@1", "set_precision", "set_recall", "set_f1",
                   "false_admission", "empty_answer", "hits")
CI_METRICS = ("ndcg@10", "false_admission", "set_f1", "empty_answer")


def _named(recs: dict[str, Recommendation], mode: str, default: AdmissionPolicy) -> dict[str, AdmissionPolicy]:
    named = {"recommended": recs[mode].policy}
    if "joint" in recs:
        named["joint"] = recs["joint"].policy
    named["initial"] = INITIAL
    if default != INITIAL:
        named["default"] = default
    named["no-admission"] = NO_ADMISSION
    return named


def per_query_table(replays, queries: pd.DataFrame, recs: dict[str, Recommendation], limit: int,
                    default: AdmissionPolicy | None = None) -> pd.DataFrame:
    """Per-query metrics and ``ranking`` (corpus ids of the hits, in order) of the named
    policies at ``limit``; ``default`` is the run's profile's shipped default
    (``AdmissionPolicy.default_for``; None: ``AdmissionPolicy()``)."""
    frames = []
    meta = queries.reset_index(drop=True)
    default = default if default is not None else AdmissionPolicy()
    for (backend, mode), replay in replays.items():
        for name, policy in _named(recs, mode, default).items():
            values = replay.evaluate([policy], [limit])
            df = meta.copy()
            df.insert(0, "backend", backend)
            df.insert(1, "mode", mode)
            df.insert(2, "policy", name)
            df.insert(3, "label", policy_label(policy, mode))
            for key, v in point_values(policy, mode, limit).items():
                df[key] = v
            for metric in M.METRIC_NAMES:
                df[metric] = values[metric][0, 0]
            ranking = replay.ranking(policy, limit)
            df["ranking"] = [tuple(ranking[q]) for q in df["query_id"]]
            frames.append(df)
    return M.per_query_scoped(pd.concat(frames, ignore_index=True))


def _population(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    pop = M.BY_NAME[metric].population
    return df if pop == "all" else df[df["positive"] == (pop == "positive")]


def summary_frame(per_query: pd.DataFrame, qrels: dict[str, dict[str, int]]) -> pd.DataFrame:
    """Per backend × mode × policy × split: ranking metrics computed by ranx (and
    checked against the sweep's own arithmetic), set and abstention metrics, and 95 %
    bootstrap CIs."""
    rows = []
    for (backend, mode, policy), group in per_query.groupby(["backend", "mode", "policy"], sort=False):
        pos_all = group[group["positive"]]
        ranx = M.ranx_scores({q: qrels[q] for q in pos_all["query_id"]}, dict(zip(pos_all["query_id"], pos_all["ranking"])),
                             M.RANX_METRICS)
        for metric in M.RANX_METRICS:
            ours = pos_all[metric].to_numpy(float)
            theirs = np.array([ranx[metric][q] for q in pos_all["query_id"]], dtype=float)
            if not np.allclose(ours, theirs, atol=1e-9):
                raise AssertionError(f"{backend}/{mode}/{policy}: the sweep's {metric} differs from ranx's")
        for split in ("dev", "test", "all"):
            g = group if split == "all" else group[group["split"] == split]
            row = dict(backend=backend, mode=mode, policy=policy, label=g["label"].iloc[0], split=split,
                       queries=len(g), positive=int(g["positive"].sum()), empty=int((~g["positive"]).sum()))
            for key in POINT_COLUMNS:
                row[key] = g[key].iloc[0]
            pos_ids = g[g["positive"]]["query_id"]
            for metric in M.RANX_METRICS:  # ranx's numbers
                values = [ranx[metric][q] for q in pos_ids]
                row[metric] = float(np.mean(values)) if values else math.nan
            for metric in M.METRIC_NAMES:
                if metric not in M.RANX_METRICS:
                    vals = _population(g, metric)[metric]
                    row[metric] = float(vals.mean()) if len(vals) else math.nan
            for metric in CI_METRICS:
                lo, hi = M.bootstrap_ci(_population(g, metric)[metric].to_numpy(float))
                row[f"{metric}_ci"] = f"[{lo:.3f}, {hi:.3f}]" if not math.isnan(lo) else ""
                row[f"{metric}_lo"], row[f"{metric}_hi"] = lo, hi
            rows.append(row)
    return pd.DataFrame(rows)


#: Below this many queries a rate's interval is too wide to rank policies by (the
#: report's rule, ``verdict.SMALL``); the breakdown flags such rates (``few_positive`` /
#: ``few_empty``) and the report marks them.
MIN_QUERIES = SMALL
#: The rates the breakdown gives 95 % bootstrap CIs for, and the population each is a
#: mean over: nDCG@10 and the answered share over answerable queries, false admission
#: over the unanswerable ones.
BREAKDOWN_CIS = {"ndcg@10": "positive", "answered": "positive", "false_admission": "empty"}
_KEYS = ["backend", "mode", "policy"]


def _population_mask(d: pd.DataFrame, population: str) -> pd.Series:
    positive = d["positive"].astype(bool)
    return {"positive": positive, "empty": ~positive, "all": pd.Series(True, index=d.index)}[population]


def _group_cis(g: pd.DataFrame) -> dict[tuple, dict[str, float]]:
    """CIs of ``BREAKDOWN_CIS`` for each backend × mode × policy of one facet value and
    split: the policies share the group's queries, so one resampling serves them all,
    and the metrics over one population (nDCG@10 and answered) share it too."""
    out: dict[tuple, dict[str, float]] = {}
    for population in dict.fromkeys(BREAKDOWN_CIS.values()):
        metrics = [m for m, p in BREAKDOWN_CIS.items() if p == population]
        part = g[_population_mask(g, population)].sort_values([*_KEYS, "query_id"], kind="stable")
        if part.empty:
            continue
        sizes = part.groupby(_KEYS, sort=False).size()  # sorted: each group is one block of rows, in this order
        keys = list(sizes.index)
        if sizes.nunique() == 1:  # one reshape and one draw for every policy and metric, not a pandas group each
            rows = np.concatenate([part[m].to_numpy(float).reshape(len(sizes), int(sizes.iloc[0])) for m in metrics])
            lo, hi = M.bootstrap_ci_rows(rows)  # the same draw as each row's bootstrap_ci
            bounds = {m: (lo[i * len(keys):(i + 1) * len(keys)], hi[i * len(keys):(i + 1) * len(keys)])
                      for i, m in enumerate(metrics)}
        else:  # policies over different queries (a hand-made table): one at a time
            groups = [v for _, v in part.groupby(_KEYS, sort=False)]
            bounds = {m: tuple(map(np.array, zip(*(M.bootstrap_ci(v[m].to_numpy(float)) for v in groups))))
                      for m in metrics}
        for metric, (lo, hi) in bounds.items():
            for k, a, b in zip(keys, lo, hi):
                out.setdefault(k, {}).update({f"{metric}_lo": float(a), f"{metric}_hi": float(b)})
    return out


def breakdown_frame(per_query: pd.DataFrame) -> pd.DataFrame:
    """Metrics of the named policies by tag, language and corpus (and split), so a
    researcher sees which kind of question a policy fails. Each metric is the mean over
    the group's queries of its population; ``answered`` is the share of answerable
    queries given at least one hit (1 − empty_answer); ``queries`` / ``positive`` /
    ``empty`` count the group's queries, answerable ones and unanswerable ones;
    ``ndcg@10_lo`` … ``false_admission_hi`` are 95 % percentile-bootstrap CIs of
    ``BREAKDOWN_CIS`` (2,000 resamples, seed 0, as the summary's); ``few_positive`` /
    ``few_empty`` flag rates resting on fewer than ``MIN_QUERIES`` queries. A query
    with several tags counts under each."""
    pq = per_query.assign(answered=1.0 - per_query["empty_answer"].astype(float))
    metrics = [*M.METRIC_NAMES, "answered"]
    population = {**{m: M.BY_NAME[m].population for m in M.METRIC_NAMES}, "answered": "positive"}
    frames = []
    exploded = pq.explode("tags").rename(columns={"tags": "tag"})
    facets = {"tag": exploded, "lang": pq, "corpus": pq}
    for facet, df in facets.items():
        for split in ("all", "dev", "test"):
            d = df if split == "all" else df[df["split"] == split]
            d = d[d[facet].notna()]
            keys = [d[k] for k in (*_KEYS, facet)]
            out = d.groupby(keys, sort=True).agg(queries=("positive", "size"), positive=("positive", "sum"))
            for metric in metrics:
                values = d[metric].where(_population_mask(d, population[metric]))
                out[metric] = values.groupby(keys, sort=True).mean()
            out = out.reset_index()
            out.columns = [*_KEYS, "value", *out.columns[4:]]
            cis = {}
            for value, g in d.groupby(facet, sort=True):
                cis.update({(*k, value): v for k, v in _group_cis(g).items()})
            bounds = pd.DataFrame([cis.get(tuple(r), {}) for r in out[[*_KEYS, "value"]].itertuples(index=False)],
                                  index=out.index)
            frames.append(pd.concat([out, bounds], axis=1).assign(facet=facet, split=split))
    ci_cols = [f"{m}_{end}" for m in BREAKDOWN_CIS for end in ("lo", "hi")]
    result = pd.concat(frames, ignore_index=True)
    for col in ci_cols:
        if col not in result:
            result[col] = math.nan
    result["positive"] = result["positive"].astype(int)
    result["empty"] = result["queries"] - result["positive"]
    result["few_positive"] = result["positive"] < MIN_QUERIES
    result["few_empty"] = result["empty"] < MIN_QUERIES
    cols = [*_KEYS, "facet", "value", "split", "queries", "positive", "empty", *metrics, *ci_cols,
            "few_positive", "few_empty"]
    return result[cols]


#: The metrics the paired tests compare unless told otherwise (``--metrics``).
STATS_METRICS = ("ndcg@10", "mrr@10", "recall@10", "false_admission", "set_f1")


def check_metrics(metrics: Sequence[str] | str | None) -> tuple[str, ...]:
    """The paired tests' metrics (default ``STATS_METRICS``), each a known metric."""
    if metrics is None:
        return STATS_METRICS
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    return check_names("metric", metrics, M.METRIC_NAMES)


def stats_frame(per_query: pd.DataFrame, qrels: dict[str, dict[str, int]], split: str = "test",
                metrics: tuple[str, ...] = STATS_METRICS) -> pd.DataFrame:
    """Recommended vs the initial constants and vs no admission, and recommended and
    joint vs every external run (``external``), on ``split``: ranx's paired t-test for
    the ranking ``metrics`` (positive queries), Fisher randomization for the others
    (false admission on empty-answer queries, SetF on all …)."""
    rows = []
    ranking = tuple(m for m in metrics if m in M.RANX_METRICS)
    others = tuple(m for m in metrics if m not in M.RANX_METRICS)
    external = sorted(p for p in per_query["policy"].unique() if str(p).startswith("external:"))
    pairs = [("recommended", "initial"), ("recommended", "no-admission"), ("joint", "initial"),
             *[(ours, theirs) for theirs in external for ours in ("recommended", "joint")]]
    for (backend, mode), group in per_query[per_query["split"] == split].groupby(["backend", "mode"], sort=False):
        policies = {name: g.set_index("query_id") for name, g in group.groupby("policy")}
        pos_ids = group[group["positive"]]["query_id"].unique()
        runs = {name: dict(zip(p.loc[pos_ids].index, p.loc[pos_ids, "ranking"])) for name, p in policies.items()}
        result = M.ranx_compare({q: qrels[q] for q in pos_ids}, runs, ranking).to_dict() if ranking else {}
        for a, b in pairs:
            if a not in policies or b not in policies:
                continue
            for metric in ranking:
                rows.append(dict(backend=backend, mode=mode, split=split, a=a, b=b, metric=metric, test="ranx student t",
                                 mean_a=result[a]["scores"][metric], mean_b=result[b]["scores"][metric],
                                 p_value=result[a]["comparisons"][b][metric]))
            for metric in others:
                pa, pb = _population(policies[a].reset_index(), metric), _population(policies[b].reset_index(), metric)
                va, vb = pa[metric].to_numpy(float), pb.set_index("query_id").loc[pa["query_id"], metric].to_numpy(float)
                rows.append(dict(backend=backend, mode=mode, split=split, a=a, b=b, metric=metric,
                                 test="Fisher randomization", mean_a=va.mean() if len(va) else math.nan,
                                 mean_b=vb.mean() if len(vb) else math.nan,
                                 p_value=M.paired_randomization_test(va, vb)))
    return pd.DataFrame(rows)


def abstention_frame(replays, queries: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (backend, mode), replay in replays.items():
        values = replay.evaluate([NO_ADMISSION], [10])
        utility = np.where(queries["positive"].to_numpy(), values["ndcg@10"][0, 0], 0.0)
        rows.append(pd.DataFrame(dict(backend=backend, mode=mode, query_id=queries["query_id"], split=queries["split"],
                                      utility=utility)))
    return abstention_table(candidates, pd.concat(rows, ignore_index=True))
