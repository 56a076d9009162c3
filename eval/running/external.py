"""Other systems' runs beside ours: TREC run files scored exactly like a named policy.

``sweep --run bm25=runs/bm25.trec`` (``harness.sweep(..., runs={"bm25": path})``) takes a
run file of another system — a BM25 baseline from another toolkit, a dense retriever —
for the same queries, with the corpus's entry ids as document ids, in any format ranx
reads (``<qid> Q0 <docid> <rank> <score> <tag>`` lines, ``.gz``, ranx JSON), read by
``trecrun`` (streamed, every line checked as it is read).

A query's documents, best score first (ties by document id, as trec_eval breaks them),
cut at the objective's limit, are its hits; a query the file has no line for returned
nothing. Every metric is computed by ``metrics.row_metrics``, the function that scores
the harness's own policies — false admission included: an empty-answer query (no
judgement) with any hit is falsely admitted. The rows join ``per_query`` as policy
``external:<name>`` in every database × mode block, so the summary, the breakdowns and
the paired tests (``tables.stats_frame``) put each external run beside ours.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..scoring import metrics as M
from ..errors import EvalError
from ..scoring.grid import POINT_COLUMNS
from .trecrun import read_ranked

__all__ = ["PREFIX", "external_per_query", "external_runs", "parse_run_option", "read_run"]

PREFIX = "external:"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,19}$")  # short: it is a column of the terminal table


def parse_run_option(text: str) -> tuple[str, Path]:
    """``NAME=PATH`` or ``PATH`` (named by the file's name without its extensions)."""
    name, sep, path = text.partition("=")
    if not sep:
        path, name = text, Path(text).name.split(".")[0]
    if not _NAME.match(name):
        raise EvalError(f"run name {name!r}: use letters, digits and . _ + - (at most 20), e.g. bm25=PATH")
    return name, Path(path)


def read_run(path: str | Path, query_ids: Sequence[str], entry_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """query id → its documents, best first, from a run file (TREC lines, gzipped or not,
    or ranx JSON/LZ4). Streamed and checked line by line (``trecrun``): a file that names
    queries or entries the corpora do not have (a run of another collection), a bad id, a
    NaN score or a (query, document) pair given twice is refused at its line."""
    return read_ranked(path, query_ids, entry_ids)


def external_runs(runs: Mapping[str, Any] | None, corpora) -> dict[str, dict[str, tuple[str, ...]]]:
    """name → query id → ranked entry ids, from run files (read and checked against the
    corpora's ids) or given as such."""
    if not runs:
        return {}
    query_ids = [q.id for c in corpora for q in c.queries]
    entry_ids = [m.id for c in corpora for m in c.memories]
    return {name: read_run(run, query_ids, entry_ids) if isinstance(run, (str, Path)) else dict(run)
            for name, run in runs.items()}


def external_per_query(runs: Mapping[str, Mapping[str, Sequence[str]]], queries: pd.DataFrame,
                       qrels: Mapping[str, Mapping[str, int]], limit: int,
                       blocks: Sequence[tuple[str, str]]) -> pd.DataFrame:
    """``per_query`` rows of every external run, repeated in each (backend, mode) block."""
    meta = queries.reset_index(drop=True)
    frames = []
    for name, ranked in runs.items():
        rankings = [tuple(ranked.get(q, ())[:limit]) for q in meta["query_id"]]
        gains = np.zeros((len(meta), limit))
        for i, (q, ranking) in enumerate(zip(meta["query_id"], rankings)):
            gains[i, :len(ranking)] = [qrels[q].get(d, 0) for d in ranking]
        values = M.row_metrics(gains, np.array([len(r) for r in rankings]), meta["n_rel"].to_numpy(),
                               np.array([M.idcg(list(qrels[q].values())) for q in meta["query_id"]]), limit)
        for backend, mode in blocks:
            df = meta.copy()
            df.insert(0, "backend", backend)
            df.insert(1, "mode", mode)
            df.insert(2, "policy", PREFIX + name)
            df.insert(3, "label", f"TREC run {name}")
            for key in POINT_COLUMNS:
                df[key] = limit if key == "limit" else math.nan
            for metric in M.METRIC_NAMES:
                df[metric] = values[metric]
            df["ranking"] = rankings
            frames.append(df)
    return M.per_query_scoped(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()
