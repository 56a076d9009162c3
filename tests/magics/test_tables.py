"""The pure DataFrame builders, against hand-built value objects."""

from __future__ import annotations

from powercontext import ArtifactRef, MemoryHit
from powercontext.magics import tables
from powercontext.memory.admission import INITIAL_POLICY, explain
from powercontext.model import ChannelCandidate, MemoryManifest, MemoryManifestEntry

REF = ArtifactRef("mem_art_a", 3)


def item(entry_id, version_id, state="active"):
    return MemoryManifestEntry(entry_id, version_id, "h" * 64, state)


def test_preview_collapses_whitespace_and_cuts_with_an_ellipsis():
    assert tables.preview("a  b\n c", 80) == "a b c"
    assert tables.preview("abcdefghij", 5) == "abcd…"
    assert tables.preview("abcdefghij", 0) == "abcdefghij"


def test_manifest_changes_labels_every_kind_of_change():
    before = MemoryManifest((item("e1", "v1"), item("e2", "v2"), item("e3", "v3", "inactive"), item("e4", "v4")))
    after = MemoryManifest((
        item("e1", "v1b"), item("e2", "v2", "inactive"), item("e3", "v3"), item("e4", "v4"), item("e5", "v5"),
    ))
    assert tables.manifest_changes(before, after) == {
        "e1": "revised", "e2": "deactivated", "e3": "reactivated", "e5": "added",
    }
    assert tables.manifest_changes(None, before) == {e: "added" for e in ("e1", "e2", "e3", "e4")}


def candidate(channel, rank, entry, matched=(), n=0, cosine=None):
    return ChannelCandidate(channel, rank, REF, entry, entry + "_v", "h" * 64, "fact", f"text of {entry}",
                            matched_terms=matched, query_term_count=n, cosine=cosine)


def test_decisions_frame_shows_signals_not_tokens():
    channels = {
        "fts": (candidate("fts", 1, "e1", ("u_8fde", "b_8fde_63a5", "make"), 4),
                candidate("fts", 2, "e2", ("make",), 4)),
        "vector": (candidate("vector", 1, "e2", cosine=0.8125), candidate("vector", 2, "e3", cosine=0.125)),
    }
    decisions = explain(channels, INITIAL_POLICY)
    hits = (MemoryHit(REF, "e1", "e1_v", "text of e1", 1 / 61, ("fts",)),)
    frame = tables.decisions_frame(decisions, hits)
    columns = ["channel", "channel_rank", "entry_id", "admitted", "matched", "query_terms", "coverage", "cosine", "hit_rank"]
    rows = frame[columns]
    assert rows.astype(object).where(rows.notna(), None).values.tolist() == [
        ["fts", 1, "e1", True, 3, 4, 0.75, None, 1],
        ["fts", 2, "e2", False, 1, 4, 0.25, None, None],
        ["vector", 1, "e2", True, None, None, None, 0.8125, None],
        ["vector", 2, "e3", False, None, None, None, 0.125, None],
    ]
    assert frame.reason[1] == "matched 1/4 terms, needs 2 (fts_min_terms=2, fts_min_coverage=0.25)"
    assert "u_8fde" not in frame.to_string() and "b_8fde_63a5" not in frame.to_string()
