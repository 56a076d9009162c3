"""The run folder: its tables (Parquet, the small ones also CSV: ``results``),
``summary.json`` and a self-contained ``report.html`` (plots embedded as PNG data
URIs), plus the console summary.

report.html opens with what a reader came for: the recommended thresholds, what they
cost on the held-out test split (with CIs) and the precision/false-admission frontier.
A table of contents follows; every table scrolls sideways inside the page width, long
tables are folded into ``<details>``, p-values print as ``<1e-4`` below the tests'
resolution. Sections are built by the functions in ``SECTIONS``, in order."""

from __future__ import annotations

import datetime as _dt
import html
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..scoring import metrics as M
from . import runfiles
from .html_blocks import COLLAPSE_ROWS, Section, details, fmt_p, image, key_values, table  # noqa: F401 - re-exported
from .plots import plot_frontier, plot_limits, plot_peers, plot_thresholds
from .console import format_summary  # noqa: F401 - the console summary, re-exported
from ..private import private_dir, tighten, write_private_text
from ..runfolder import SWEEP_ORDER, write_table
from . import verdict

from ..running.retrieval import CACHE_DIR
from ..scoring import explain
from ..scoring.grid import family_of
from ..scoring.sweep import INITIAL
from ..scoring.transfer import transfer_table

__all__ = ["SECTIONS", "Section", "default_out", "fmt_p", "format_summary", "render_html", "table", "write_run"]

MODE_ORDER = ("fts", "vector", "hybrid")


def default_out() -> Path:
    return Path("results") / _dt.datetime.now().strftime("sweep-%Y%m%d-%H%M%S")


# ---------------------------------------------------------------------------- tables


def summary_json(result: Any) -> dict:
    c = result.collected
    test = result.summary[result.summary["split"] == "test"]
    return {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "datasets": [{"name": x.name, "path": str(x.path), "entries": len(x.memories), "queries": len(x.queries)}
                     for x in c.corpora],
        "backends": list(c.backends),
        "modes": list(c.modes),
        "analyzer": c.analyzer,
        "grid": {**result.grid.as_dict(), "points": {m: result.grid.size(m) for m in c.modes}},
        "objective": {**result.objective.__dict__, "statement": result.objective.describe()},
        "initial": {"fts_min_terms": INITIAL.fts_min_terms, "fts_min_coverage": INITIAL.fts_min_coverage,
                    "vector_min_cosine": INITIAL.vector_min_cosine},
        "method": result.method,
        "folds": result.folds,
        "seed": result.seed,
        "split_origin": {x.name: x.split_origin for x in c.corpora},
        "recommendations": _records(result.recommendations),
        "crossval": _records(result.crossval_summary),
        "summary_test": _records(test.drop(columns=[x for x in test.columns if x.endswith("_ci")])),
        "timings": _records(result.timings),
        "loads": _records(c.loads),
        "embedding": c.embedding,
        "cross_backend_notes": result.notes,
    }


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for rec in df.to_dict("records"):
        clean = {}
        for k, v in rec.items():
            if isinstance(v, (np.integer,)):
                v = int(v)
            elif isinstance(v, (np.floating, float)):
                v = None if math.isnan(v) else float(v)
            elif isinstance(v, (np.bool_,)):
                v = bool(v)
            elif isinstance(v, tuple):
                v = list(v)
            clean[k] = v
        out.append(clean)
    return out


def write_run(result: Any, out: str | Path) -> Path:
    """Write every table (Parquet, the small ones also CSV: ``runfolder.write_table``),
    the TREC files, summary.json and report.html into ``out``."""
    out = private_dir(out)
    # explain.parquet refers to the candidates' signals when this folder's cache/ is the run's
    cache = getattr(result.collected, "cache", None)
    shared = (cache is not None and Path(cache).resolve() == (out / CACHE_DIR).resolve()
              and (Path(cache) / "candidates.parquet").is_file())
    for name, frame, sort in run_tables(result):
        whole = None
        if name == "explain" and shared:  # the CSV copy, read by people, keeps the signals
            frame, whole = explain.by_reference(frame), frame
        # the grid's metrics are means over many queries: few repeat, so byte-stream-split
        write_table(frame, out, name, sort=sort, float32=M.METRIC_NAMES, split=M.METRIC_NAMES if name == "sweep" else (),
                    csv_frame=whole)
    runfiles.write(result, out)  # qrels.trec + runs/<backend>-<mode>-<policy>.run.gz, for ranx / trec_eval
    if "joint" in set(result.recommendations["mode"]):  # what %config PcMem.policy_file loads
        tighten(result.recommended("joint").save(out / "policy.json"))
    write_private_text(out / "summary.json", json.dumps(summary_json(result), indent=2, ensure_ascii=False, default=str))
    write_private_text(out / "report.html", render_html(result))
    return out


def run_tables(result: Any) -> list[tuple[str, pd.DataFrame, tuple[str, ...]]]:
    """(name, table, row order) of every table a run folder holds."""
    c = result.collected
    tables = [("sweep", result.sweep, SWEEP_ORDER), ("recommendations", result.recommendations, ()),
              ("summary", result.summary, ()), ("per_query", result.per_query, ()),
              ("breakdown", result.breakdown, ()), ("stats", result.stats, ()), ("abstention", result.abstention, ()),
              ("timings", result.timings, ()), ("bound_sensitivity", result.sensitivity, ()), ("loads", c.loads, ()),
              # the (possibly assigned) split and fold of every query: reproducible
              ("splits", result.splits, ())]
    if len(result.transfer):
        tables.append(("leave_one_out", result.transfer, ()))
    if len(result.peers):
        tables.append(("peers", result.peers, ()))
    if result.folds:
        tables += [("crossval_folds", result.crossval, ()), ("crossval", result.crossval_summary, ())]
    if len(result.stages):
        tables.append(("stages", result.stages, ()))
    if len(result.explain_policies):  # why each query failed, readable without a database (explain.py)
        tables += [("explain", result.explain, explain.KEYS), ("explain_policies", result.explain_policies, ())]
    tables += [(f"cross_backend_{name}", df, ()) for name, df in result.cross.items()]
    return tables


# ---------------------------------------------------------------------------- sections


def _modes(result: Any) -> list[str]:
    return [m for m in MODE_ORDER if m in result.collected.modes]


def section_recommendation(result: Any) -> Section:
    """The first screen (``verdict.first_screen``): the library's default and this run's
    recommendation, what each costs on the test split, then the frontier."""
    pieces = [p if isinstance(p, str) else table(p, collapse=None) for p in verdict.first_screen(result)]
    pieces.append(image(plot_frontier(result, _modes(result)), "nDCG vs false admission frontier per mode"))
    return Section("recommendation", "What to set, and what it costs", "\n".join(pieces))


def by_field(frame: pd.DataFrame, key: str) -> pd.DataFrame:
    """``frame`` turned on its side: one row per column, one column per ``key`` value. A
    table of a few rows and many columns (every threshold and estimate of a
    recommendation) then fits the page width instead of scrolling sideways."""
    shown = frame.dropna(axis=1, how="all").set_index(key)
    cells = shown.apply(lambda col: col.map(lambda v: f"{v:.3f}" if isinstance(v, float) and not pd.isna(v) else v))
    return cells.T.reset_index().rename(columns={"index": "field"}).rename_axis(columns=None)


def section_external(result: Any) -> Section | None:
    """Other systems' TREC runs (``--run``) beside our policies on the test split, with
    the paired tests of recommended and joint against each (none given: no section)."""
    external = sorted(p for p in result.per_query["policy"].unique() if str(p).startswith("external:"))
    if not external:
        return None
    s = result.summary
    rows = s[(s["split"] == "test") & s["policy"].isin(["recommended", "joint", *external])]
    cols = ["backend", "mode", "policy", "label", "queries", "ndcg@10", "ndcg@10_ci", "recall@10", "false_admission",
            "false_admission_ci", "empty_answer", "hits"]
    stats = result.stats[result.stats["b"].isin(external)] if len(result.stats) else result.stats
    parts = [f"<p>{len(external)} run file(s) of other systems, scored by the harness's own metrics at limit "
             f"{result.objective.limit}: a query's documents, best score first, are its hits; an empty-answer query "
             "with any hit is a false admission, exactly as for our policies. The external rows repeat in every "
             "database × mode block so each block compares like with like.</p>",
             table(rows[[c for c in cols if c in rows.columns]], what="rows"),
             "<h3>Paired tests against the external runs (test split)</h3>", table(stats, 4, what="tests")]
    return Section("external", "External runs beside ours", "\n".join(parts))


def section_recommendations(result: Any) -> Section:
    parts = [table(by_field(result.recommendations, "mode"), collapse=None),
             "<p><code>joint</code> is this run's single AdmissionPolicy for every mode: the same objective averaged "
             "over the modes, with the bound holding in each. It is not the library's default "
             "(<code>AdmissionPolicy()</code>, the <code>default</code> rows), which was chosen leave-one-corpus-out. "
             "<code>objective</code> and "
             f"<code>constraint</code> are {result.objective.split}-split values.</p>",
             "<h3>The choice under other bounds (dev)</h3>",
             "<p>objective = dev value of the rule's metric (mean over backends), constraint = worst backend's dev "
             "false admission, secondary = the other metric.</p>",
             # the label spells the thresholds out; every field is in bound_sensitivity.csv
             table(result.sensitivity[[c for c in ("mode", "rule", "label", "family", "feasible", "objective",
                                                   "constraint", "secondary") if c in result.sensitivity.columns]],
                   what="rules")]
    return Section("per-mode", "Recommendations per mode", "\n".join(parts))


def section_method(result: Any) -> Section:
    """How the recommendation was chosen and estimated: the split (given or assigned),
    and for a cross-validated run the held-out estimate and what each fold chose."""
    o = result.objective
    origins = {x.name: x.split_origin for x in result.collected.corpora}
    split = "; ".join(f"{html.escape(name)}: {'from the corpus' if origin == 'file' else 'assigned (seeded, stratified)'}"
                      for name, origin in origins.items())
    parts = [f"<p><b>{html.escape(result.method)}.</b> Dev/test split — {split}; seed {result.seed}. Every query's "
             "split and fold are in <code>splits.csv</code>.</p>"]
    if not result.folds:
        parts.append("<p class='muted'>Runs of fewer than 200 queries are cross-validated by default; "
                     "<code>--folds K</code> (or <code>folds=K</code>) cross-validates any run.</p>")
        return Section("method", "How the recommendation was estimated", "\n".join(parts))
    recs = result.recommendations
    cols = ["mode", "label", f"heldout_{o.metric}", f"heldout_{o.metric}_sd", f"heldout_{o.constraint}",
            f"heldout_{o.constraint}_sd", "fold_policies", "objective", "constraint"]
    parts += [f"<p>Each fold's policy is chosen by the same rule on the other {result.folds - 1} folds and scored "
              "on the fold it never saw. <code>heldout_</code>: mean over folds (and the backends), <code>_sd</code>: "
              "the largest standard deviation of the fold means on any backend; <code>fold_policies</code>: how many "
              f"different policies the folds chose; <code>objective</code>/<code>constraint</code>: the policy chosen "
              f"on all queries, on all queries (not held out).</p>",
              table(recs[[c for c in cols if c in recs.columns]], collapse=None)]
    folds = result.crossval
    if len(folds):
        keep = ["recommendation", "mode", "backend", "fold", "label", "train_objective", "train_constraint",
                "n_positive", "n_empty", o.metric, o.constraint]
        parts += ["<h3>Per fold</h3>", table(folds[keep], collapse=10, what="fold results")]
    return Section("method", "Cross-validated estimate", "\n".join(parts))


def section_transfer(result: Any) -> Section:
    """Leave-one-corpus-out per family: the figure a default is chosen by."""
    loo = result.transfer
    if loo is None or not len(loo):
        return Section("transfer", "Leave one corpus out: which family transfers",
                       "<p class='muted'>This run has one corpus: leave-one-corpus-out needs two or more "
                       "(<code>--dataset A --dataset B</code>, or <code>--all</code>).</p>")
    o = result.objective
    parts = [f"<p>Each family's policy is tuned on all queries of the other corpora ({html.escape(o.metric)} "
             f"pooled over them, {html.escape(o.constraint)} ≤ {o.bound:g} on every tuning corpus and database) and "
             "replayed on every query of the corpus left out. Cell: held-out nDCG@10 / false admission [95 % paired "
             "bootstrap CI of the nDCG@10 difference to the best family on that corpus]. <code>default (not "
             f"tuned)</code> is the library's shipped default for this run's embedding profile (<code>"
             f"AdmissionPolicy.default_for({result.collected.profile_id!r})</code>), <code>initial (not tuned)</code> the "
             "RFC's constants. The default is chosen by this table, not by its in-corpus score: "
             "<code>leave_one_out.csv</code> has every mode and the chosen thresholds.</p>"]
    for mode in [m for m in ("hybrid", "fts", "vector") if m in set(loo["mode"])]:
        parts += [f"<h3>{mode}</h3>", table(transfer_table(loo, o.metric, o.constraint, mode), collapse=None)]
    return Section("transfer", "Leave one corpus out: which family transfers", "\n".join(parts))


def section_files(result: Any) -> Section:
    """The run folder's files for other tools: TREC runs and qrels, and the tables."""
    runs = sorted(runfiles.run_path(result.out or ".", b, m, p).name
                  for (b, m, p), _ in runfiles.ours(result.per_query).groupby(["backend", "mode", "policy"], sort=False))
    listing = "".join(f"<li><code>{runfiles.RUNS_DIR}/{html.escape(name)}</code></li>" for name in runs)
    parts = [f"<p><code>{runfiles.QRELS_NAME}</code> (the judgements of grade ≥ 1 the metrics used) and one TREC run "
             f"file per database × mode × named policy at limit {result.objective.limit}, for "
             "ranx (<code>Run.from_file(path)</code> reads the gzipped runs as they are), ir_measures or "
             "<code>trec_eval -c -m ndcg_cut.10 qrels.trec runs/…</code> after <code>gunzip -k runs/*.gz</code>. "
             "Scores encode the harness's order "
             "(limit + 1 − rank), so ties break as the service broke them.</p>",
             details(f"{len(runs)} run files (click to show)", f"<ul>{listing}</ul>"),
             "<p class='muted'>Also in the folder: every table of this page as Parquet (the small ones also as CSV; "
             "<code>harness.load(folder)</code> or <code>pandas.read_parquet</code> read them), "
             "<code>splits.parquet</code>, <code>explain.parquet</code> (every candidate's verdicts under the "
             "default and the recommendation, its signals read from <code>cache/</code>: "
             "<code>harness.load(folder).explain(query_id)</code>), "
             "<code>summary.json</code> and the candidates cache <code>cache/</code> "
             "(rerun the analysis with "
             "<code>--reuse</code>, no database needed).</p>"]
    return Section("files", "Files for other tools", "\n".join(parts))


def section_summary(result: Any) -> Section:
    parts = [f"<p>Every named policy: <code>recommended</code> (per mode), <code>joint</code> (this run's one policy "
             "for every mode), <code>default</code> (the library's <code>AdmissionPolicy()</code>), "
             f"<code>initial</code> (the RFC's constants: terms≥{INITIAL.fts_min_terms}, "
             f"coverage≥{INITIAL.fts_min_coverage:g}, cosine≥{INITIAL.vector_min_cosine:g}) and "
             "<code>no-admission</code>.</p>",
             *[f"<p class='warn'>{html.escape(n)}</p>" for n in verdict.small_notes(result)],
             "<h3>Test split</h3>", table(result.summary_table("test"), collapse=40, what="policies"),
             "<h3>Dev split (where the choice was made)</h3>",
             table(result.summary_table("dev"), collapse=0, what="policies")]
    return Section("summary", "Every policy, test and dev", "\n".join(parts))


def stats_overview(stats: pd.DataFrame) -> pd.DataFrame:
    """One row per backend × mode × comparison, one column per metric: the difference
    of the means and its p-value, e.g. ``-0.102 (p <1e-4)``."""
    if stats is None or stats.empty:
        return pd.DataFrame()
    s = stats.assign(comparison=stats["a"] + " vs " + stats["b"])
    s["cell"] = [f"{a - b:+.3f}" + (f" (p {fmt_p(p)})" if fmt_p(p) else "")
                 for a, b, p in zip(s["mean_a"], s["mean_b"], s["p_value"])]
    wide = s.pivot_table(index=["backend", "mode", "comparison"], columns="metric", values="cell", aggfunc="first",
                         sort=False)
    return wide.reset_index().rename_axis(columns=None)


def section_stats(result: Any) -> Section:
    parts = ["<p>Difference of the means (a − b) and its p-value on the test split. Ranking metrics: ranx paired "
             "Student's t-test over positive queries; false admission and SetF: Fisher randomization.</p>",
             table(stats_overview(result.stats), collapse=None),
             table(result.stats, 4, what="tests, one per line")]
    return Section("stats", "Statistical tests", "\n".join(parts))


def section_thresholds(result: Any) -> Section | None:
    from .plots import threshold_family

    family = threshold_family(result)
    body = "".join(f"<h3>{m}</h3>{image(plot_thresholds(result, m), f'{m}: metrics vs threshold')}"
                   for m in _modes(result))
    default = result.collected.default_policy
    note = (f"<p class='muted'>The family drawn is <code>{html.escape(family or 'floors')}</code>: "
            + ("the one the library default uses (<code>"
               f"AdmissionPolicy.default_for({result.collected.profile_id!r})</code>)"
               if family is not None and family == family_of(default) else
               "this run's recommendation's (the run did not sweep the library default's family)")
            + ". Each curve moves one threshold with the others held at that family's best point. SQLite: solid "
            "line, filled circles; OceanBase: dashed line, hollow triangles. Where only circles inside triangles "
            "show, the two databases measured the same value. On cosine axes <i>none</i> is the no-admission "
            "point.</p>")
    return Section("thresholds", "Metric vs threshold", note + body)


def section_limits(result: Any) -> Section:
    body = "".join(image(plot_limits(result, m), f"{m}: recommended policy vs limit") for m in _modes(result))
    return Section("limits", "Limit sensitivity", f"<div class='row'>{body}</div>")


#: The named policies the per-tag tables compare (the shipped default, the run's choice).
BREAKDOWN_POLICIES = ("default", "recommended")
FEW = "⚠"  #: the mark of a rate on fewer than tables.SMALL queries, as on the first screen


def _split_words(split: str) -> str:
    return "all queries (a cross-validated run)" if split == "all" else f"the {split} split"


def _rate(row: pd.Series, metric: str, few: bool) -> str:
    """``0.512 [0.401, 0.620]``, with ⚠ when it rests on fewer than MIN_QUERIES queries; — when undefined."""
    value = row.get(metric)
    if value is None or pd.isna(value):
        return "—"
    return f"{value:.3f} [{row[f'{metric}_lo']:.3f}, {row[f'{metric}_hi']:.3f}]" + (f" {FEW}" if few else "")


def breakdown_table(result: Any, backend: str, mode: str, split: str) -> pd.DataFrame:
    """One row per tag, language and corpus; per named policy nDCG@10, the answered
    share and false admission with their 95 % CIs (``result.breakdown``)."""
    b = result.breakdown
    b = b[(b["backend"] == backend) & (b["mode"] == mode) & (b["split"] == split)
          & b["policy"].isin(BREAKDOWN_POLICIES)]
    rows = []
    for (facet, value), g in b.groupby(["facet", "value"], sort=False):
        first = g.iloc[0]
        row = {"facet": facet, "value": value, "answerable": int(first["positive"]), "unanswerable": int(first["empty"])}
        for _, r in g.set_index("policy").reindex(BREAKDOWN_POLICIES).dropna(how="all").iterrows():
            row[f"{r.name}: nDCG@10"] = _rate(r, "ndcg@10", bool(r["few_positive"]))
            row[f"{r.name}: answered"] = _rate(r, "answered", bool(r["few_positive"]))
            row[f"{r.name}: false adm."] = _rate(r, "false_admission", bool(r["few_empty"]))
        rows.append(row)
    order = {"tag": 0, "lang": 1, "corpus": 2}
    return pd.DataFrame(rows).sort_values(["facet", "value"], key=lambda c: c.map(order) if c.name == "facet" else c,
                                          kind="stable").reset_index(drop=True) if rows else pd.DataFrame()


def section_breakdown(result: Any) -> Section:
    """Which kind of question each policy fails: per tag, language and corpus, with CIs."""
    from ..scoring.tables import MIN_QUERIES

    split = result.headline_split
    modes = sorted(_modes(result), key=lambda m: ("hybrid", "vector", "fts").index(m))
    parts = [f"<p>The shipped default (<code>AdmissionPolicy.default_for({result.collected.profile_id!r})</code>) and "
             f"this run's recommendation on {_split_words(split)}, per query tag, language and corpus: nDCG@10 and the "
             "<i>answered</i> share (answerable queries given at least one hit) over the answerable queries, false "
             "admission over the unanswerable ones, each with its 95 % bootstrap CI. A query with several tags counts "
             f"under each. {FEW}: the rate rests on fewer than {MIN_QUERIES} queries — its interval is wide, read it as "
             "a hint. Every policy, metric and split: <code>breakdown.csv</code>, <code>result.by_tag()</code>.</p>"]
    for i, mode in enumerate(modes):
        for j, backend in enumerate(result.collected.backends):
            body = table(breakdown_table(result, backend, mode, split), collapse=None)
            title = f"{mode} · {backend}"
            parts.append(f"<h3>{html.escape(title)}</h3>{body}" if i == j == 0
                         else details(f"{title} (click to show)", body))
    return Section("breakdown", "Which questions fail: by tag, language and corpus", "\n".join(parts))


def section_failures(result: Any) -> Section | None:
    """Which questions each named policy failed and the reason that decided it, from
    the run's explain table (the words are ``admission.explain``'s); every candidate of
    any query: ``harness.load(folder).explain(query_id, policy=…)``."""
    from ..scoring.explain import EXPLAINED, failures

    if not len(result.explain_policies):
        return None
    split, backend = result.headline_split, result.collected.backends[0]
    mode = "hybrid" if "hybrid" in result.collected.modes else _modes(result)[0]
    parts = [f"<p>The questions each policy got wrong on {_split_words(split)} ({html.escape(mode)}, "
             f"{html.escape(backend)}): <i>missed</i> — answerable, yet no relevant entry among the hits (the reason "
             "is the best-ranked relevant candidate's); <i>false admission</i> — unanswerable, yet a hit (the first "
             "hit's reason). Every candidate of a query, with its signals and the reason for each: "
             "<code>harness.load(folder).explain(query_id, policy='default')</code>, no database needed.</p>"]
    for policy in EXPLAINED:
        failed = failures(result.explain, result.explain_policies, result.per_query, backend, mode, split, policy)
        parts += [f"<h3>{html.escape(policy)}: {len(failed)} failed</h3>", table(failed, collapse=10, what="queries")]
    return Section("failures", "Why questions failed", "\n".join(parts))


def section_peers(result: Any) -> Section | None:
    """Where peers' defaults land: each library's documented default relevance cutoff,
    mapped onto this project's signals, replayed on this run (``result.peers``)."""
    from ..scoring.peers import peers_table
    from ..scoring.references import references_frame

    peers = result.peers
    title = "Peers' defaults on the same frontier"
    if peers is None or peers.empty:
        return None
    split = result.headline_split
    profile = (result.collected.embedding or {}).get("profile", "none")
    parts = [f"<p>What a user gets who keeps another memory library's default relevance cutoff, replayed on this run's "
             f"candidates (the same replay as every sweep point, so each figure is what an online search with that "
             f"policy returns here). Each library's documented default is mapped onto the nearest signal of this "
             f"project (the table below says how, and where the mapping is approximate); most document no cutoff at "
             f"all, only a top-k, and so admit something for every unanswerable question. Cell: nDCG@10 / false "
             f"admission on {_split_words(split)}, at the library's own top-k (<i>k</i>). <code>default</code> and "
             f"<code>recommended</code> are this project's, at limit {result.objective.limit}.</p>",
             f"<p class='muted'>Cosine cutoffs are model-specific: each library chose its value for the model it ships "
             f"with, so the same number admits different sets under another model. This run embeds with "
             f"<code>{html.escape(str(profile))}</code>; <code>--embeddings minilm,e5</code> shows the peers under "
             f"each profile. Sources, values and the mapping: <code>reports/thresholds/peers.md</code>.</p>"]
    libraries = peers[(peers["kind"] == "peer") & (peers["reference"] != "rfc-initial")]  # the RFC's: in every table
    for mode in [m for m in ("vector", "hybrid", "fts") if m in set(libraries["mode"])]:
        parts += [f"<h3>{mode}</h3>", table(peers_table(peers, split, mode=mode), collapse=None),
                  image(plot_peers(result, mode, split), f"{mode}: peers' defaults on the frontier")]
    refs = references_frame()
    parts.append(details(f"{len(refs)} reference policies: source, documented value, what it thresholds, the "
                         "mapping (click to show)",
                         table(refs[["name", "library", "default", "basis", "thresholds", "limit", "modes", "policy",
                                     "mapping", "note", "source", "version"]], collapse=None)))
    return Section("peers", title, "\n".join(parts))


#: What the Abstention section's numbers mean, said once above its table.
ABSTENTION_NOTE = (
    "<p><b>What nAUC measures.</b> Whether a query's strongest signal (its <code>confidence</code>: the best "
    "full-text coverage or matched terms, the best cosine, the gap between the two best cosines, or a sum) tells "
    "the questions worth answering from those that are not — before any threshold is chosen. Sort the queries by "
    "that signal and abstain on the least confident first, at rates 0 to 0.9; at each rate take the mean "
    "<i>utility</i> of the queries still answered (their nDCG@10 with everything admitted at limit 10, and 0 for "
    "a question with no relevant entry, where any answer is wrong); nAUC is the area under that curve, scaled so "
    "abstaining in a random order scores 0 and in the best possible order 1 (MTEB's normalised AUC of "
    "abstention). <b>How to read it:</b> an admission threshold is an abstention rule on these very signals, so a "
    "signal near 0 cannot separate answerable from unanswerable questions at any threshold — tuning it only "
    "trades one error for the other — while one near 1 can; compare the rows of one mode to see which signal is "
    "worth a threshold. <code>mean_utility</code> is the utility with no abstention; all queries are used (no "
    "threshold is tuned here).</p>")


def section_abstention(result: Any) -> Section:
    a = result.abstention
    return Section("abstention", "Abstention (nAUC)", ABSTENTION_NOTE + table(a[a["split"] == "all"] if len(a) else a))


def section_cross(result: Any) -> Section:
    parts = []
    if result.notes:
        items = "<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in result.notes) + "</ul>"
        parts.append(items if len(result.notes) <= 6 else details(f"{len(result.notes)} notes (click to show)", items))
    cross = result.cross
    if "deltas" in cross:
        d = cross["deltas"]
        parts += ["<h3>Metric deltas (OceanBase − SQLite, all queries)</h3>", table(d[d["split"] == "all"], 4, what="deltas")]
        if "admitted" in cross and len(cross["admitted"]):
            adm = cross["admitted"].groupby("mode").agg(queries=("same", "size"), identical=("same", "sum")).reset_index()
            parts += ["<h3>Admitted candidates of the default policy, before the limit</h3>", table(adm)]
        agg = cross["agreement"].groupby(["mode", "policy"]).agg(
            queries=("jaccard", "size"), jaccard=("jaccard", "mean"), rbo=("rbo", "mean"),
            same_set=("same_set", "mean"), identical=("identical", "mean")).reset_index()
        parts += ["<h3>Agreement of the hits at the limit per query</h3>", table(agg)]
        pools = cross["pools"].groupby(["mode", "channel"]).agg(
            queries=("jaccard", "size"), same_order=("same_order", "mean"), same_set=("same_set", "mean"),
            jaccard=("jaccard", "mean"), truncated=("truncated", "mean"), signals_equal=("signals_equal", "mean")).reset_index()
        parts += ["<h3>Retrieved candidate pools (the pool of limit 8: pool_size(8) = 32 candidates)</h3>", table(pools)]
    if "spot_check" in cross:
        spot = cross["spot_check"].groupby(["backend", "mode", "policy"]).agg(
            searches=("equal", "size"), identical=("equal", "sum")).reset_index()
        parts += ["<h3>Online spot check: svc.search vs the replay</h3>", table(spot)]
    if "vector_recall" in cross:
        parts += ["<h3>Vector channel recall vs exact search</h3>", table(cross["vector_recall"], 4)]
    return Section("cross-backend", "Cross-backend comparison", "\n".join(parts) or "<p><em>one backend only</em></p>")


def section_timing(result: Any) -> Section:
    c = result.collected
    parts = ["<h3>Retrieval and replay</h3>", table(result.timings),
             "<h3>Loading the corpora</h3>", table(c.loads),
             "<h3>Embedding</h3>", key_values(dict(c.embedding or {}))]
    return Section("timing", "Timing", "\n".join(parts))


def section_definitions(result: Any) -> Section:
    return Section("definitions", "Metric definitions", _definitions())


#: The report's sections in order; a builder returns a Section (or None to skip).
#: Add a section by adding its builder here: the table of contents follows.
SECTIONS = [
    section_recommendation, section_transfer, section_external, section_peers, section_recommendations, section_method,
    section_summary, section_stats, section_thresholds, section_limits, section_breakdown, section_failures,
    section_abstention, section_cross, section_timing,
    section_files, section_definitions,
]


def _definitions() -> str:
    items = "".join(f"<dt><code>{html.escape(m.name)}</code> ({m.population})</dt><dd>{html.escape(m.definition)}</dd>"
                    for m in M.METRICS)
    extra = [
        ("populations", "positive = queries with at least one qrels line (grade ≥ 1); empty-answer = queries with none "
                        "(negative, forgotten, hard-negative without a relevant entry)."),
        ("hits / ranking", "the hits an online MemoryService.search returns with that policy and limit (the sweep "
                           "replays admission.admit + rrf on cached candidates; a test pins equality)."),
        ("95 % CI", "percentile bootstrap of the mean over queries (2,000 resamples, seed 0)."),
        ("p-values", "ranx.compare paired Student's t-test for nDCG@10 / MRR@10 / recall@10 (positive queries); Fisher "
                     "randomization (10,000 sign flips) for false admission (empty-answer queries) and SetF (all). "
                     "Shown as <1e-4 below that resolution."),
        ("nAUC", "MTEB-style normalised area under the abstention curve: abstain on the least confident queries first, "
                 "mean utility of the answered ones at abstention rates 0…0.9, scaled so a random order scores 0 and "
                 "the oracle 1. Utility = nDCG@10 without admission at limit 10 (0 for empty-answer queries)."),
        ("Jaccard", "|A ∩ B| / |A ∪ B| of the two backends' admitted sets for one query (1 when both are empty)."),
        ("RBO", "rank-biased overlap (p = 0.9) of the two complete rankings, normalised so identical rankings score 1."),
        ("vector recall@k", "share of the exact cosine top-k (numpy over the same cached vectors, active entries of "
                            "the searched memories) that the backend's vector channel returns in its top k."),
        ("sweep/retrieval ratio", "(array replay of every grid point incl. metrics + building the arrays) / (one "
                                  "svc.retrieve pass over all queries), per backend and mode."),
    ]
    items += "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in extra)
    return f"<dl>{items}</dl>"


# ---------------------------------------------------------------------------- page

#: The page is at most MAX_WIDTH px wide; wide tables scroll inside their own box.
MAX_WIDTH = 1200
CSS = f"""
*{{box-sizing:border-box}}
body{{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:0 auto;padding:1em 1.5em;max-width:{MAX_WIDTH}px;
color:#222;line-height:1.4}}
h1{{font-size:1.6em;margin:.2em 0}}h2{{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}}
h3{{margin:1.2em 0 .4em}}
nav.toc ol{{display:flex;flex-wrap:wrap;gap:.2em 1.4em;margin:.4em 0 1em;padding:0;list-style:none;font-size:.92em}}
.scroll{{overflow-x:auto;max-width:100%}}
table.t{{border-collapse:collapse;font-size:12px;margin:.5em 0}}
table.t th,table.t td{{padding:2px 8px;border-bottom:1px solid #eee;text-align:right}}
table.t th{{overflow-wrap:break-word}}
table.t th{{background:#f4f4f4;position:sticky;top:0}}
details{{margin:.4em 0}}details>summary{{cursor:pointer;color:#0645ad}}
dt{{font-weight:600;margin-top:.4em}}dd{{margin-left:1.5em}}
.verdict{{font-size:1.05em;background:#eef6ee;border-left:4px solid #4a4;padding:.6em 1em;margin:.6em 0}}
.warn{{background:#fff5d6;border-left:4px solid #c90;padding:.3em 1em}}
code{{overflow-wrap:anywhere}}
.muted{{color:#555;font-size:.92em}}
img{{max-width:100%;height:auto;display:block;margin:.5em 0}}
.row{{display:flex;flex-wrap:wrap;gap:0 1.5em}}
"""


def _toc(sections: list[Section]) -> str:
    links = "".join(f"<li><a href='#{s.id}'>{html.escape(s.title)}</a></li>" for s in sections)
    return f"<nav class='toc' aria-label='Contents'><ol>{links}</ol></nav>"


def render_html(result: Any) -> str:
    c = result.collected
    modes = _modes(result)
    sections = [s for s in (build(result) for build in SECTIONS) if s is not None]
    header = (f"<p class='muted'>Corpora: {', '.join(f'{html.escape(x.name)} ({len(x.memories)} entries, {len(x.queries)} queries)' for x in c.corpora)}"
              f" · databases: {', '.join(c.backends)} · modes: {', '.join(modes)} · grid points: "
              f"{', '.join(f'{m} {result.grid.size(m)}' for m in modes)} · embedding: "
              f"{html.escape(str((c.embedding or {}).get('profile', 'none')))}</p>")
    body = [f"<section id='{s.id}'><h2>{html.escape(s.title)}</h2>\n{s.body}</section>" for s in sections]
    return "\n".join([
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>PowerContext admission sweep</title><style>{CSS}</style></head><body>",
        "<h1>PowerContext relevance-admission sweep</h1>", header, _toc(sections), *body, "</body></html>",
    ])
