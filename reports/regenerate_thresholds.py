"""Regenerate reports/thresholds/ with the code that ships: the sweep its summary.json
records (corpora, databases, modes, grid, objective), as notebook 04 reproduces it, into
a fresh run folder, then the files that folder keeps copied over the old ones. (It
lives beside the folder, not in it: notebook 04 lists the folder.)

    .venv/bin/python reports/regenerate_thresholds.py results/thresholds-regenerated
    .venv/bin/python reports/regenerate_thresholds.py --copy results/thresholds-regenerated  # copy only

A test (tests/eval/test_committed_reports.py) holds every committed report's first
screen to ``AdmissionPolicy.default_for`` of its profile: when the default moves, run
this (about ten minutes on a 2-core machine) and commit the result."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from powercontext.eval import harness
from powercontext.eval.corpora.datasets import bundled
from powercontext.eval.errors import EvalError
from powercontext.eval.scoring.recommend import Objective
from powercontext.eval.scoring.sweep import Grid

HERE = Path(__file__).resolve().parent / "thresholds"
ROOT = HERE.parents[1]
#: The run-folder files this folder keeps (the rest of a run folder is ~100 MB).
KEPT = ("abstention.csv", "bound_sensitivity.csv", "breakdown.csv", "cross_backend_admitted.csv",
        "cross_backend_deltas.csv", "cross_backend_spot_check.csv", "cross_backend_vector_recall.csv",
        "leave_one_out.csv", "loads.csv", "recommendations.csv", "report.html", "stats.csv", "summary.csv",
        "summary.json", "timings.csv")


def main(out: str) -> None:
    report = json.loads((HERE / "summary.json").read_text(encoding="utf-8"))
    grid = Grid(**{key: tuple(values) for key, values in report["grid"].items() if key != "points"})
    objective = Objective(**{key: value for key, value in report["objective"].items() if key != "statement"})
    result = harness.sweep(corpora(report), backends=report["backends"],
                           modes=report["modes"], grid=grid, objective=objective, out=out,
                           analyzer=report.get("analyzer") or "v2", progress=True,
                           reuse=True)  # a run folder of an earlier try: its candidates, no database
    copy_kept(Path(out))
    print(f"{len(KEPT)} files copied from {out}; recommended (joint): {result.recommended('joint')!r}")


def corpora(report: dict) -> list[Path]:
    """The recorded sweep's corpora, by name, from this checkout's bundled folders:
    summary.json keeps the absolute path the run that wrote it read them from (another
    clone's), and ``ROOT / <absolute path>`` is that path, not one under ROOT."""
    paths = [bundled(d["name"]) for d in report["datasets"]]
    missing = [d["name"] for d, p in zip(report["datasets"], paths) if p is None]
    if missing:
        raise EvalError(f"reports/thresholds/summary.json names corpora this checkout does not bundle: {', '.join(missing)}")
    return paths


def copy_kept(out: Path) -> None:
    """Copy the KEPT files of run folder ``out`` here; a table a sweep writes only as
    Parquet (more than ``runfolder.CSV_ROWS`` rows) is written here as CSV from it."""
    from powercontext.eval.runfolder import read_table, write_csv

    for name in KEPT:
        source = out / name
        if source.is_file():
            shutil.copyfile(source, HERE / name)
        else:
            write_csv(read_table(source.with_suffix(".parquet")), HERE / name)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--copy"]:  # the sweep already ran: copy its files only
        copy_kept(Path(sys.argv[2]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "results/thresholds-regenerated")
