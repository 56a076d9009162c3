"""The vector channel returns the nearest rows of exactly the searched Memories, whatever
share of the database they hold (OceanBase reads its HNSW index unfiltered and drops
other Memories' rows, reading deeper or exactly when the share is small: every path is
exercised here), with the real model."""

import json
from pathlib import Path

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds

from ..support import RecordingCursor

E = pc.MemoryEntryInput
DATASETS = Path(__file__).resolve().parents[2] / "datasets"
QUERIES = [
    "how are dependencies installed",
    "who reviews database migrations",
    "what happens when a release is tagged",
]


def texts() -> list[str]:
    out = []
    for folder in sorted(p for p in DATASETS.iterdir() if (p / "memories.jsonl").exists()):
        out += [json.loads(line)["text"] for line in (folder / "memories.jsonl").open()]
    return list(dict.fromkeys(out))


@pytest.fixture
async def three(open_service, minilm):
    """A database of three Memories holding 150, 60 and 3 of its 213 rows."""
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    corpus = texts()
    sizes = {"big": 150, "mid": 60, "tiny": 3}
    memories, start = {}, 0
    for name, size in sizes.items():
        memories[name] = await svc.remember(None, entries=tuple(E("fact", t) for t in corpus[start:start + size]))
        start += size
    stored = corpus[:start]
    vectors = dict(zip(stored, (await minilm.embed(tuple(stored))).vectors))
    return svc, memories, vectors


def nearest(vectors, entries, query_vector, k):
    """Exact top-k of ``entries`` by L2 distance, computed here from the model's vectors."""
    def distance(entry):
        return sum((a - b) ** 2 for a, b in zip(vectors[entry.text], query_vector))
    return {e.entry_version_id for e in sorted(entries, key=distance)[:k]}


def recorded(svc, log):
    backend = svc.backend
    real = backend._transaction

    def recording(write):
        context = real(write)

        class Wrapped:
            def __enter__(self):
                return RecordingCursor(context.__enter__(), log)

            def __exit__(self, *exc):
                return context.__exit__(*exc)
        return Wrapped()
    return recording


SELECTIONS = [("big", "mid", "tiny"), ("big",), ("mid",), ("tiny",), ("big", "tiny")]


async def test_the_vector_channel_holds_the_nearest_rows_of_exactly_the_searched_memories(
        three, minilm, backend_name, monkeypatch):
    svc, memories, vectors = three
    pool = svc.policy.pool_size(8)
    query_vectors = dict(zip(QUERIES, (await minilm.embed(tuple(QUERIES))).vectors))
    for selection in SELECTIONS:
        refs = tuple(memories[name] for name in selection)
        entries = [e for ref in refs for e in await svc.entries(ref)]
        log = []
        monkeypatch.setattr(svc.backend, "_transaction", recorded(svc, log))
        for query in QUERIES:
            retrieval, used, _ = await svc.retrieve(query, memories=refs, mode="vector", limit=8)
            candidates = retrieval.channels["vector"]
            assert used == "vector" and len(candidates) == min(pool, len(entries))
            assert {c.memory_ref for c in candidates} <= {r.ref for r in refs}
            assert {c.entry_version_id for c in candidates} == nearest(vectors, entries, query_vectors[query], pool)
            assert [c.cosine for c in candidates] == sorted((c.cosine for c in candidates), reverse=True)
        monkeypatch.undo()
        if backend_name == "oceanbase":
            statements = [s for s, _, _ in log if "l2_distance" in s]
            unfiltered = [s for s in statements if "APPROXIMATE" in s and "WHERE" not in s]
            exact = [s for s in statements if "INDEX(memory_entry_heads uk_memory_entry_heads_entry)" in s]
            assert len(unfiltered) + len(exact) == len(statements)  # never the pre-filtered scan of every row
            if selection == ("big", "mid", "tiny"):  # every row is theirs: one read of the index
                assert len(unfiltered) == len(QUERIES) and not exact
            elif selection == ("tiny",):  # 3 of 213 rows: searched exactly through the Memory's index
                assert len(exact) == len(QUERIES)
            elif selection == ("big",):  # 70 %: a deeper read of the index, never the exact scan
                assert len(unfiltered) > len(QUERIES) and not exact
