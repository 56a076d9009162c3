"""``records`` / ``records_by`` (eval/running/retrieval.py), the per-column conversion the
harness uses instead of ``DataFrame.to_dict("records")`` per group: the same dicts of
plain values, grouped in ``groupby(sort=False)``'s order, over the column kinds a
candidate cache holds after ``read_cache`` (categoricals made objects, tuples, NaN)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from powercontext.eval.running.retrieval import channels_of, records, records_by


def cached_like() -> pd.DataFrame:
    frame = pd.DataFrame({
        "backend": ["sqlite", "oceanbase", "sqlite", "sqlite", "oceanbase"],
        "mode": ["hybrid", "hybrid", "fts", "hybrid", "hybrid"],
        "query_id": ["q2", "q2", "q1", "q2", "q1"],
        "channel": ["fts", "vector", "fts", "vector", "fts"],
        "rank": np.array([1, 1, 1, 1, 1], dtype=np.int64),
        "matched_terms": [("a", "b"), (), ("c",), (), ("a",)],
        "cosine": [math.nan, 0.5, math.nan, 0.25, math.nan],
        "pool_rank": [0.0, math.nan, 0.0, math.nan, 0.0],
        "script": pd.Series(["latin", None, "latin", "cjk", "latin"], dtype="category").astype(object),
        "covered": [None, True, None, False, None],
    })
    return frame


def same(a: dict, b: dict) -> bool:
    """Equal, with NaN equal to NaN, and of the same Python types (no numpy scalars)."""
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
            continue
        if x != y or type(x) is not type(y):
            return False
    return True


def test_records_are_to_dict_records_with_plain_values():
    frame = cached_like()
    ours, theirs = records(frame), frame.to_dict("records")
    assert len(ours) == len(theirs) == 5
    assert all(same(a, b) for a, b in zip(ours, theirs))
    assert type(ours[0]["rank"]) is int and type(ours[1]["cosine"]) is float
    assert records(frame.iloc[0:0]) == []


def test_records_by_keeps_groupby_order_and_row_order():
    frame = cached_like()
    keys = ["backend", "mode", "query_id"]
    ours = records_by(frame, keys)
    theirs = {k: g.to_dict("records") for k, g in frame.groupby(keys, sort=False)}
    assert list(ours) == list(theirs) == [("sqlite", "hybrid", "q2"), ("oceanbase", "hybrid", "q2"),
                                          ("sqlite", "fts", "q1"), ("oceanbase", "hybrid", "q1")]
    for key in ours:
        assert len(ours[key]) == len(theirs[key])
        assert all(same(a, b) for a, b in zip(ours[key], theirs[key]))


def test_channels_of_a_frame_and_of_its_records_are_the_same_candidates():
    full = pd.DataFrame([dict(
        backend="sqlite", corpus="c", mode="hybrid", query_id="q", channel=channel, rank=rank, memory="m",
        memory_artifact_id="mem_art_1", memory_revision=3, entry_id=f"mem_ent_{channel}{rank}",
        entry_version_id=f"mem_ver_{channel}{rank}", entry_content_hash="sha256:" + "0" * 64, kind="fact",
        text=f"text {channel} {rank}", corpus_entry=f"e{channel}{rank}",
        matched_terms=("a",) if channel == "fts" else (), matched=1 if channel == "fts" else 0,
        query_term_count=2, coverage=0.5 if channel == "fts" else 0.0,
        cosine=math.nan if channel == "fts" else 0.9 - rank / 10, centred=math.nan, script="latin",
        query_script="latin", covered=None if channel == "fts" else True,
        pool_rank=float(rank - 1) if channel == "fts" else math.nan,
    ) for channel in ("vector", "fts") for rank in (2, 1)])
    from_frame = channels_of(full, "hybrid")
    from_records = channels_of(records(full), "hybrid")
    assert from_frame == from_records
    assert [c.rank for c in from_frame["fts"]] == [1, 2]  # sorted by rank within the channel
    assert from_frame["vector"][0].cosine == 0.8 and from_frame["fts"][0].cosine is None
    assert from_frame["fts"][1].pool_rank == 1 and from_frame["vector"][0].covered is True
