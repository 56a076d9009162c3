"""The run folder's tables on disk (``runfolder``): Parquet read back as written."""

from __future__ import annotations

import numpy as np
import pandas as pd

from powercontext.eval.runfolder import CSV_ROWS, load, read_table, write_table
from powercontext.eval.scoring.metrics import METRIC_NAMES


def test_a_table_reads_back_as_written(tmp_path):
    frame = pd.DataFrame({
        "mode": ["hybrid", "fts", "vector"],
        "vector_uncovered": ["refuse", 0.25, None],  # a word, a threshold, not used
        "ranking": [("a", "b"), (), ("c",)],
        "ndcg@10": [0.123456789, 0.5, 1 / 3],
        "fts_min_coverage": [0.1 + 0.2, 0.25, np.nan],  # thresholds keep float64
        "limit": [8, 8, 10],
    })
    path = write_table(frame, tmp_path, "t", sort=("mode", "limit"), float32=METRIC_NAMES)
    assert path.name == "t.parquet" and (tmp_path / "t.csv").is_file()
    back = read_table(path)
    expected = frame.sort_values(["mode", "limit"]).reset_index(drop=True)
    assert back["vector_uncovered"].tolist()[:2] == [0.25, "refuse"] and pd.isna(back["vector_uncovered"][2])
    assert back["ranking"].tolist() == expected["ranking"].tolist()
    assert back["ndcg@10"].dtype == np.float32 and back["ndcg@10"].tolist() == list(expected["ndcg@10"].astype(np.float32))
    assert back["fts_min_coverage"][1] == 0.1 + 0.2 and back["limit"].dtype == np.int64
    assert pd.read_csv(tmp_path / "t.csv")["ranking"].fillna("").tolist() == ["", "a b", "c"]


def test_only_small_tables_get_a_csv_twin_and_load_reads_every_table(tmp_path):
    write_table(pd.DataFrame({"x": range(CSV_ROWS + 1)}), tmp_path, "big")
    write_table(pd.DataFrame({"x": [1]}), tmp_path, "small")
    assert not (tmp_path / "big.csv").exists() and (tmp_path / "small.csv").is_file()
    run = load(tmp_path)
    assert sorted(run.tables) == ["big", "small"] and len(run.big) == CSV_ROWS + 1 and run.info == {}
