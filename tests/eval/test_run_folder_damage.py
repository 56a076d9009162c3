"""A damaged run folder read back (issue 43, item 6): each bad file is a typed error
naming it and what to do, and the other tables still read."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from powercontext.errors import PowerContextError
from powercontext.eval import harness
from powercontext.eval.runfolder import RunFolderError, load, write_table


def _truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_a_damaged_table_and_summary_fail_alone_in_a_swept_folder(tiny_run, tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(tiny_run.out, folder)
    _truncate(folder / "sweep.parquet")
    (folder / "summary.json").write_text('{"recommendations": [', encoding="utf-8")
    run = harness.load(folder)  # loads: nothing is read yet
    assert "sweep" in run.tables and "per_query" in run.tables
    pd.testing.assert_frame_equal(run.per_query, harness.load(tiny_run.out).per_query)
    assert len(run.summary) and len(run.tables["recommendations"])  # the other tables read
    with pytest.raises(RunFolderError) as bad_table:
        run.sweep
    message = str(bad_table.value)
    assert str(folder / "sweep.parquet") in message and "not a readable Parquet table" in message
    assert "rerun the sweep" in message and "\n" not in message and isinstance(bad_table.value, PowerContextError)
    with pytest.raises(RunFolderError, match=r"summary\.json: not readable JSON \(JSONDecodeError"):
        run.info
    assert len(run.stats)  # still readable after the failures


@pytest.mark.parametrize("damage", [
    lambda p: _truncate(p),
    lambda p: p.write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1"),
    lambda p: p.write_bytes(b""),
    lambda p: p.write_text("backend,mode\nsqlite,fts\n"),  # a CSV saved under the Parquet name
])
def test_every_kind_of_damaged_parquet_is_the_same_typed_error(tmp_path, damage):
    write_table(pd.DataFrame({"x": range(100)}), tmp_path, "bad")
    write_table(pd.DataFrame({"x": [1, 2]}), tmp_path, "good")
    damage(tmp_path / "bad.parquet")
    run = load(tmp_path)
    assert run.good["x"].tolist() == [1, 2] and run.info == {}
    with pytest.raises(RunFolderError, match=r"bad\.parquet: not a readable Parquet table"):
        run.tables["bad"]


def test_a_summary_that_is_not_an_object_and_a_missing_folder_are_typed(tmp_path):
    write_table(pd.DataFrame({"x": [1]}), tmp_path, "t")
    (tmp_path / "summary.json").write_text("[1, 2]")
    with pytest.raises(RunFolderError, match="holds a JSON list, not the summary object"):
        load(tmp_path).info
    (tmp_path / "summary.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(RunFolderError, match="not readable JSON"):
        load(tmp_path).info
    with pytest.raises(RunFolderError, match="no such run folder"):
        load(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunFolderError, match=r"no run tables \(\*\.parquet\) here"):
        load(tmp_path / "empty")
