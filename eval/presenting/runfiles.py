"""Standard TREC files in the run folder, so any IR toolkit can re-score a sweep.

``runs/<backend>-<mode>-<policy>.run.gz`` holds, for every query, the hits that an online
search with that named policy (recommended, joint, initial = the RFC's constants,
default = the library's, no-admission) returned at the objective's limit, one line per
hit in the TREC run format::

    <query id> Q0 <entry id> <rank> <score> pc-<backend>-<mode>-<policy>

``qrels.trec`` holds the judgements the metrics used (grade ≥ 1; a grade-0 line
carries no gain in any reported metric), ``<query id> 0 <entry id> <grade>``.

The score column is ``limit + 1 − rank``, NOT the fused RRF score: TREC tools re-sort a
run by score and break ties on the document id, while the service breaks RRF ties on
its own ids (the RFC tie-break), which a TREC file does not carry. Scores that encode
the order make ``trec_eval``, ir_measures or ranx read exactly the ranking the harness
evaluated. A query with no admitted hit has no line (``trec_eval -c`` and ranx count it
as zero, as the harness does).

Run files are gzipped (a tenth of the size; a sweep's 30 runs were 3.8 MB): ranx reads
them as they are (``Run.from_file(path)``), ``trec_eval`` after ``gunzip -k runs/*.gz``.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pandas as pd

from ..running.private import private_dir, private_file, write_private_text

__all__ = ["QRELS_NAME", "RUNS_DIR", "ours", "run_path", "write_qrels", "write_runs"]

RUNS_DIR, QRELS_NAME = "runs", "qrels.trec"


def run_path(out: str | Path, backend: str, mode: str, policy: str) -> Path:
    return Path(out) / RUNS_DIR / f"{backend}-{mode}-{policy}.run.gz"


def write_qrels(qrels: dict[str, dict[str, int]], path: Path) -> Path:
    lines = [f"{qid} 0 {eid} {grade}\n" for qid, judged in qrels.items() for eid, grade in judged.items() if grade >= 1]
    write_private_text(path, "".join(lines))
    return path


def write_runs(per_query: pd.DataFrame, out: str | Path, limit: int) -> list[Path]:
    """One run file per backend × mode × named policy of ``per_query`` (its ``ranking``
    column holds each query's hits in order)."""
    written = []
    private_dir(Path(out) / RUNS_DIR)
    for (backend, mode, policy), group in per_query.groupby(["backend", "mode", "policy"], sort=False):
        tag = f"pc-{backend}-{mode}-{policy}"
        lines = [f"{qid} Q0 {eid} {rank} {limit + 1 - rank} {tag}\n"
                 for qid, ranking in zip(group["query_id"], group["ranking"])
                 for rank, eid in enumerate(ranking, start=1)]
        path = run_path(out, backend, mode, policy)
        with private_file(path) as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
            gz.write("".join(lines).encode("utf-8"))  # mtime 0: the same run gives the same bytes
        written.append(path)
    return written


def ours(per_query: pd.DataFrame) -> pd.DataFrame:
    """The rows of the harness's own policies (not the external runs it was given)."""
    return per_query[~per_query["policy"].astype(str).str.startswith("external:")]


def write(result: Any, out: str | Path) -> list[Path]:
    """The qrels and every named policy's run of a SweepResult (an external run is
    already a file: it is not written again)."""
    out = Path(out)
    write_qrels(result.collected.qrels, out / QRELS_NAME)
    return write_runs(ours(result.per_query), out, result.objective.limit)
