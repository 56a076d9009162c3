"""Issue 45's last gap: ``sweep --all --backends sqlite`` wrote an 11.2 MB run folder
(sweep.parquet 4.35 MB, cache/ 3.10 MB, explain.parquet 1.43 MB, report.html 1.16 MB);
the bound is 8 MB, the cache included. What each step saves is pinned here on small
real parts (a real matplotlib figure, real Parquet files, a real SQLite sweep of two
tiny corpora with ``HashEmbedding``, the deterministic test embedder)."""

from __future__ import annotations

import io
import struct

import numpy as np
from matplotlib.figure import Figure

from powercontext.eval.presenting.plots import DPI, png


def _png_bytes(uri: str) -> bytes:
    import base64

    return base64.b64decode(uri.split(",", 1)[1])


def test_report_figures_are_palette_pngs_a_third_of_truecolour():
    """The report's nine figures were 0.93 MB of base64 as RGBA PNGs."""
    fig = Figure(figsize=(7.2, 4.2), layout="constrained")
    ax = fig.add_subplot()
    rng = np.random.default_rng(0)
    for i in range(4):
        ax.plot(np.linspace(0, 1, 40), np.cumsum(rng.normal(size=40)), marker="o", label=f"line {i}")
    ax.legend()
    ax.set_title("a figure like the report's")
    truecolour = io.BytesIO()
    fig.savefig(truecolour, format="png", dpi=DPI, bbox_inches="tight")
    data = _png_bytes(png(fig).uri)
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert colour == 3, colour  # an indexed (palette) PNG
    assert len(data) < 0.5 * len(truecolour.getvalue()), (len(data), len(truecolour.getvalue()))
    from PIL import Image

    assert Image.open(io.BytesIO(data)).size == (width, height) and width > 800


# ------------------------------------------------------------- a real run folder

import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

from powercontext.eval import harness  # noqa: E402
from powercontext.eval.runfolder import read_table  # noqa: E402
from powercontext.eval.scoring import metrics as M  # noqa: E402
from powercontext.eval.scoring.sweep import Grid  # noqa: E402

from .fakes import HashEmbedding, write_corpus  # noqa: E402
from .test_transfer_fit import renamed  # noqa: E402

GRID = Grid((1, 2, 3), (0.0, 0.34, 0.75), (0.2, 0.4, 0.6), (1, 3, 8, 10),
            families=("floors", "centred+cross-script+coverage+support"), vector_min_centred=(0.05, 0.15, 0.25))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("size")
    a = write_corpus(root / "datasets" / "tiny")
    b = write_corpus(root / "datasets" / "twin", *renamed("twn"))
    result = harness.sweep([a, b], backends=("sqlite",), modes=("fts", "vector", "hybrid"), grid=GRID,
                           out=root / "run", embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False,
                           folds=0)
    return result, root / "run"


def _encodings(path, column: str) -> set[str]:
    meta = pq.ParquetFile(path).metadata
    return {e for i in range(meta.num_row_groups) for j in range(meta.num_columns)
            if meta.row_group(i).column(j).path_in_schema.split(".")[0] == column
            for e in meta.row_group(i).column(j).encodings}


def test_the_sweeps_metrics_are_byte_stream_split_and_read_back_exactly(swept):
    result, out = swept
    for metric in ("ndcg@10", "false_admission", "set_f1"):
        assert "BYTE_STREAM_SPLIT" in _encodings(out / "sweep.parquet", metric), metric
    assert "BYTE_STREAM_SPLIT" not in _encodings(out / "sweep.parquet", "vector_min_centred")  # few values: a dictionary
    back = read_table(out / "sweep.parquet")
    keys = [c for c in back.columns if c not in M.METRIC_NAMES]
    mine = result.sweep.sort_values(keys, kind="stable").reset_index(drop=True)
    back = back.sort_values(keys, kind="stable").reset_index(drop=True)
    for metric in (c for c in M.METRIC_NAMES if c in back.columns):  # float32 as before, bit for bit
        assert (back[metric].to_numpy() == mine[metric].to_numpy().astype("float32")).all(), metric


def test_the_exact_top_lists_cosines_are_float32_and_their_ids_exact(swept):
    result, out = swept
    schema = pq.read_schema(out / "cache" / "exact.parquet")
    assert str(schema.field("exact_cosine").type.value_type) == "float"
    back = read_table(out / "cache" / "exact.parquet")
    assert list(back["exact"]) == list(result.collected.exact["exact"])
    for have, want in zip(back["exact_cosine"], result.collected.exact["exact_cosine"]):
        assert len(have) == len(want) and all(abs(h - w) < 1e-6 for h, w in zip(have, want))


def test_explain_refers_to_the_caches_signals_and_reads_back_whole(swept, tmp_path):
    """explain.parquet held every candidate's signals again (1.3 of its 1.4 MB): in a
    folder with the run's cache/ it keeps the verdicts, and harness.load, the report's
    failures and run.explain read the same table as the run had in memory."""
    import shutil

    from powercontext.eval.presenting.report import write_run
    from powercontext.eval.runfolder import RunFolderError
    from powercontext.eval.scoring.explain import EXPLAIN_COLUMNS, SIGNALS, failures

    result, out = swept
    stored = pq.read_schema(out / "explain.parquet").names
    assert not {"cosine", "centred", "coverage", "matched_terms", "support", "corpus_entry"} & set(stored), stored
    elsewhere = write_run(result, tmp_path / "elsewhere")  # no cache there: the table keeps its signals
    assert set(SIGNALS) <= set(pq.read_schema(elsewhere / "explain.parquet").names)
    assert (out / "explain.parquet").stat().st_size < 0.5 * (elsewhere / "explain.parquet").stat().st_size
    # the CSV copy is read by people, not joined back: it keeps the signals, as elsewhere
    assert (out / "explain.csv").read_text() == (elsewhere / "explain.csv").read_text()

    loaded, whole = harness.load(out), harness.load(elsewhere)
    table = loaded.tables["explain"]
    assert list(table.columns) == EXPLAIN_COLUMNS
    pd.testing.assert_frame_equal(table, whole.tables["explain"])
    mine = result.explain.sort_values(["backend", "mode", "query_id", "channel", "rank"], kind="stable")
    pd.testing.assert_frame_equal(table, mine.reset_index(drop=True), check_dtype=False)
    for policy in ("default", "recommended"):  # the report's section and the reader, word for word
        for mode in ("fts", "vector", "hybrid"):
            pd.testing.assert_frame_equal(
                failures(table, loaded.explain_policies, loaded.per_query, "sqlite", mode, policy=policy),
                failures(result.explain, result.explain_policies, result.per_query, "sqlite", mode, policy=policy))
        for qid in list(dict.fromkeys(result.per_query["query_id"]))[:6]:
            pd.testing.assert_frame_equal(loaded.explain(qid, policy=policy), whole.explain(qid, policy=policy))

    bare = tmp_path / "bare"  # the cache deleted: one typed line naming what is missing, the rest still reads
    shutil.copytree(out, bare)
    shutil.rmtree(bare / "cache")
    with pytest.raises(RunFolderError, match=r"cache/candidates.parquet, which is missing; rerun the sweep") as caught:
        harness.load(bare).explain("tny-q001")
    assert "\n" not in str(caught.value)
    assert len(harness.load(bare).sweep) == len(result.sweep)


def test_the_cache_stores_each_entry_once_and_reads_back_exactly(swept):
    """The cache's ids, content hash and text were repeated on every candidate row (0.95
    of its 2.5 MB); now once per entry, and read_cache gives back the very candidates
    the run replayed, float64 signals bit for bit (test_online_equivalence replays the
    cache against online searches on both databases)."""
    from powercontext.eval.running.retrieval import CANDIDATE_COLUMNS, ENTRY_COLUMNS, read_cache

    result, out = swept
    rows = pq.read_schema(out / "cache" / "candidates.parquet").names
    assert not set(ENTRY_COLUMNS) & set(rows) and "entry" in rows
    entries = read_table(out / "cache" / "entries.parquet")
    assert not entries.duplicated().any() and len(entries) < len(result.collected.candidates) / 3
    candidates, _, _ = read_cache(out)
    assert list(candidates.columns) == CANDIDATE_COLUMNS
    pd.testing.assert_frame_equal(candidates, result.collected.candidates)
    for signal in ("cosine", "centred", "support", "coverage", "probability"):
        have, want = candidates[signal].to_numpy("float64"), result.collected.candidates[signal].to_numpy("float64")
        assert have.tobytes() == want.tobytes(), signal


def test_the_default_run_folder_cache_included_stays_under_the_bounds_share(swept, tmp_path):
    """``sweep --all --backends sqlite``: 11.16 MB → 7.30 MB (the bound: 8 MB). This
    sweep's folder was 1.46 MB, cache included; it stays under 8/11.16 of that, the
    share the big folder had to lose. And the slim folder still works: harness.load,
    the tuner and ``--reuse`` (the cache replayed with no database)."""
    from powercontext.magics.widgets import ThresholdTuner

    result, out = swept
    files = [p for p in out.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert any("cache" in p.relative_to(out).parts for p in files)
    assert total < 8 / 11.16 * 1_463_058, sorted((p.stat().st_size, str(p.relative_to(out))) for p in files)[-6:]
    run = harness.load(out)
    assert len(run.sweep) == len(result.sweep) and len(run.tables["explain"]) == len(result.explain)
    tuner = ThresholdTuner(run)
    assert tuner.point is not None and len(tuner.curve) > 1
    again = harness.sweep([c.path for c in result.collected.corpora], backends=("sqlite",),
                          modes=("fts", "vector", "hybrid"), grid=GRID, out=out, embedding=HashEmbedding(),
                          embedding_cache=out.parent / "emb", progress=False, folds=0, reuse=True)
    pd.testing.assert_frame_equal(again.recommendations, result.recommendations)
    pd.testing.assert_frame_equal(again.collected.candidates, result.collected.candidates)
    pd.testing.assert_frame_equal(harness.load(out).tables["explain"], run.tables["explain"])
