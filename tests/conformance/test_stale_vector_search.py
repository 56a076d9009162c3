"""Issue 43, item 4: a vector or hybrid search on a Revision that is no longer its
Memory's head raises NotHeadError, as a full-text search does, not a
CapabilityNotSupportedError advising rebuild_projections() (which is wrong advice, and
which code retrying on NotHeadError would not retry). Checked once directly and once
under churn from a real writer process, on both databases."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import time
from collections import Counter

import pytest

import powercontext as pc

E = pc.MemoryEntryInput

# A second process that keeps committing to one Memory (its own model, its own
# connection) until its stdin closes; it prints each new head so the searcher knows
# when it has moved on.
WRITER = """
import asyncio, sys
import powercontext as pc

async def main(target, artifact_id):
    svc = await pc.open(target, embedding="minilm")
    head = await svc.head(artifact_id)
    await svc.search("warm the model up", memories=(head,), mode="hybrid")
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        head = await svc.remember(head, entries=(pc.MemoryEntryInput("fact", f"churn note {n} about the build cache"),))
        print(head.revision, flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def target_of(svc, backend_name):
    return str(svc.backend.path) if backend_name == "sqlite" else svc.backend.url


@pytest.mark.parametrize("mode", ["vector", "hybrid", "auto"])
async def test_a_vector_search_of_a_former_head_is_not_head(open_service, minilm, mode):
    svc = await open_service(embedding=minilm)
    first = await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))
    await svc.search("build cache", memories=(first,), mode=mode)  # first is complete while it is the head
    await svc.remember(first, entries=(E("fact", "the release train leaves on Thursdays"),))
    for _ in range(2):  # the second time from what the handle has cached about ``first``
        with pytest.raises(pc.NotHeadError, match="not the head") as info:
            await svc.search("build cache", memories=(first,), mode=mode)
        assert "rebuild_projections" not in str(info.value)


async def test_a_never_searched_former_head_is_not_head(open_service, minilm):
    """A Revision this handle never knew as a head (committed by another handle)."""
    svc = await open_service(embedding=minilm)
    first = await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))
    await svc.remember(first, entries=(E("fact", "the release train leaves on Thursdays"),))
    svc.backend._completeness.clear()
    with pytest.raises(pc.NotHeadError):
        await svc.search("build cache", memories=(first,), mode="hybrid")
    with pytest.raises(pc.ArtifactNotFoundError):
        await svc.search("build cache", memories=(pc.ArtifactRef("mem_art_nowhere", 1),), mode="vector")


@pytest.mark.fresh_database  # a writer process that a kill may leave holding locks
async def test_searches_under_a_writer_process_fail_only_as_not_head(open_service, backend_name, minilm):
    """Searchers here, a real writer process committing to the same Memory: every
    search either answers or raises NotHeadError, never another error."""
    svc = await open_service(embedding=minilm)
    head = await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))
    writer = subprocess.Popen([sys.executable, "-c", WRITER, target_of(svc, backend_name), head.artifact_id],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outcomes: Counter[str] = Counter()
    try:
        assert writer.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                head = await svc.head(head.artifact_id)
                # an agent does some work between reading the head and searching it
                await asyncio.sleep(random.uniform(0, 0.3))
                for mode in ("vector", "hybrid", "auto"):
                    await svc.search("build cache", memories=(head,), mode=mode)
                    outcomes["ok"] += 1
            except pc.NotHeadError:
                outcomes["NotHeadError"] += 1
            except pc.PowerContextError as exc:
                outcomes[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
    finally:
        writer.kill()
        _, errors = writer.communicate(timeout=30)
    final = await svc.head(head.artifact_id)
    print(backend_name, dict(outcomes), "revisions", final.revision, errors[-2000:])
    assert outcomes["NotHeadError"] > 0, outcomes  # the race was really exercised
    assert set(outcomes) <= {"ok", "NotHeadError"}, outcomes
