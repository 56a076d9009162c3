"""A sweep without a run folder does not build the tables only the report reads.

``breakdown`` (bootstrap CIs of every tag × policy), ``stats`` (the paired tests) and
``sensitivity`` were over half of a small sweep's analyse time, built for every
``harness.sweep`` whether or not anything read them. They are now built on first read:
``write=False`` (``fit``, ``summary``, a notebook reading the summary) skips them; a
written run folder and a reader of the attribute get the same tables as before.
The tiny corpus on a real SQLite file, fts only (no model needed)."""

from __future__ import annotations

import pandas as pd
import pytest

from powercontext.eval import harness
from powercontext.eval.errors import EvalError
from powercontext.eval.scoring.recommend import sensitivity
from powercontext.eval.scoring.sweep import Grid
from powercontext.eval.scoring.tables import breakdown_frame, stats_frame

from .fakes import write_corpus

GRID = Grid((1, 2), (0.0, 0.5), (0.3,), (1, 8, 10))
DEFERRED = ("breakdown", "stats", "sensitivity")


@pytest.fixture(scope="module")
def unwritten(tmp_path_factory):
    folder = write_corpus(tmp_path_factory.mktemp("deferred") / "tiny")
    return harness.sweep(folder, modes=("fts",), grid=GRID, out=tmp_path_factory.mktemp("deferred-run"),
                         progress=False, write=False)


def test_an_unwritten_sweep_builds_none_of_the_report_only_tables(unwritten):
    assert sorted(unwritten.deferred) == sorted(DEFERRED)
    assert all(callable(unwritten.deferred[name]) for name in DEFERRED), unwritten.deferred
    # and its stages say no report was written (the row used to re-time the analyse)
    assert "report" not in set(unwritten.stages["stage"]), unwritten.stages


def test_a_deferred_table_read_is_the_table_an_eager_sweep_built(unwritten):
    pd.testing.assert_frame_equal(unwritten.breakdown, breakdown_frame(unwritten.per_query))
    pd.testing.assert_frame_equal(unwritten.stats, stats_frame(unwritten.per_query, unwritten.collected.qrels))
    assert len(unwritten.breakdown) and len(unwritten.stats) and len(unwritten.sensitivity)
    assert set(unwritten.sensitivity["mode"]) == {"fts", "joint"}
    first = unwritten.breakdown
    assert unwritten.breakdown is first  # built once, then kept
    assert isinstance(unwritten.deferred["breakdown"], pd.DataFrame)


def test_the_sensitivity_read_later_is_the_one_on_the_decision_table(unwritten):
    # the deferred builder reads the same grid table the recommendation chose on
    again = harness.analyse(unwritten.collected, GRID, full_grid=True)
    pd.testing.assert_frame_equal(unwritten.sensitivity, sensitivity(again.sweep, ["fts"], again.objective))


def test_a_written_run_folder_still_has_every_table(tiny_run):
    run = harness.load(tiny_run.out)
    for name in ("breakdown", "stats", "bound_sensitivity"):
        assert len(getattr(run, name)), name
    pd.testing.assert_frame_equal(run.breakdown.reset_index(drop=True), tiny_run.breakdown.reset_index(drop=True),
                                  check_dtype=False)
    assert "report" in set(tiny_run.stages["stage"])


def test_a_compared_copy_keeps_the_tables_it_no_longer_can_build(unwritten):
    slim = unwritten.compared()
    assert all(isinstance(slim.deferred[name], pd.DataFrame) for name in DEFERRED)
    assert len(slim.sensitivity) and len(slim.breakdown)


def test_a_bad_metric_is_still_refused_by_the_sweep_not_at_first_read(unwritten):
    with pytest.raises(EvalError, match="metric"):
        harness.analyse(unwritten.collected, GRID, metrics=["ndcg@11"])
