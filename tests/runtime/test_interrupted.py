"""Real SIGKILLs in the middle of a window and of a capture (issue 35, defects 1 and 2),
on both storage profiles.

1. A process commits a window's Revision and is killed before it saves the cursor; the
   user then retires one of the window's entries and revises the other. The replay of
   that window must be a no-op: the retired entry stays retired, the revised entry's old
   text does not come back beside the new one.
2. A process is killed right after the first (or the second) durable write of
   ``capture()``. Whatever was left, ``get()`` and a new ``capture()`` agree: either the
   Source is journaled (the same payload acknowledges it, another one conflicts) or it
   is not (any payload captures), and the next flush commits what the journal holds."""

from __future__ import annotations

import signal

import pytest

from powercontext.errors import SourceConflictError, SourceNotFoundError
from powercontext.memory.candidates import DefaultCandidatePipeline

from .child import capture_payload
from .processes import TIMEOUT, read, spawn


def _killed(proc) -> None:
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(TIMEOUT) == -signal.SIGKILL


async def test_a_replayed_window_never_undoes_the_users_edits(target, scope, open_runtime):
    proc = spawn("window", target, scope)
    ref, after, through = read(proc, "COMMITTED").split()
    assert (after, through) == ("0", "1") and ref.endswith("@1")
    _killed(proc)

    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    memory = runtime.memory.for_scope(scope)
    assert await memory.cursor() == 0, "the kill came before the cursor save"
    head = await memory.head()
    cache, deploys = sorted(await memory.entries(), key=lambda e: e.kind)[::-1]
    assert cache.text == "The cache directory is /var/cache/atlas." and deploys.kind == "decision"
    retired = await memory.retire([(head.ref, deploys.entry_id)], reason="no longer true")
    revised = await memory.revise((retired.ref, cache.entry_id), "The cache directory is ~/.cache/atlas.")

    replay = await memory.flush()
    assert replay.status == "no_change" and str(replay.window) == "(0, 1]" and replay.cursor == 1, replay
    assert replay.revision.ref == head.ref, "the replay names the Revision the window committed"
    head = await memory.head()
    assert head.ref == revised.ref, "the replay wrote no Revision"
    active = sorted(e.text for e in await memory.entries())
    assert active == ["The cache directory is ~/.cache/atlas."], active
    inactive = [e.text for e in await memory.entries("inactive")]
    assert inactive == ["Deploys run on Fridays only."]
    assert (await memory.flush()).status == "idle"
    windows = await runtime.storage.open_scope(scope).windows("source_window")
    assert [w.outcome for w in windows] == ["no_change"], "the start log is settled with the window"
    assert (await runtime.memory_service.verify(head)).ok


@pytest.mark.parametrize("point", ["first", "second"])
async def test_a_killed_capture_leaves_its_source_id_usable(target, scope, open_runtime, point):
    proc = spawn("capture", target, scope, point)
    read(proc, "READY")
    where = read(proc, "AT")
    _killed(proc)

    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    try:
        journaled = await sources.get("poisoned-1")
    except SourceNotFoundError:
        journaled = None
    if journaled is None:
        receipt = await sources.capture(capture_payload("second"))
        assert receipt.created and receipt.sequence == 1, f"killed after the {where} write: {receipt}"
        expected = "The second payload was captured."
    else:
        assert journaled.source.content == "Finding first."
        again = await sources.capture(capture_payload("first"))
        assert (again.sequence, again.created) == (journaled.sequence, False), f"killed after the {where} write"
        with pytest.raises(SourceConflictError):
            await sources.capture(capture_payload("second"))
        expected = "The first payload was captured."
    flush = await memory.flush()
    assert flush.status == "committed", flush
    assert [e.text for e in await memory.entries()] == [expected]
    assert (await runtime.memory_service.verify(await memory.head())).ok
