"""Captured Sources and explicit Memory writes: two independent paths, idempotent
capture, isolated scopes, exact entry operations (RFC 001 acceptance criteria)."""

from __future__ import annotations

import pytest

from powercontext.errors import (
    ArtifactNotFoundError,
    InvalidRuntimeRequestError,
    MemoryEntryNotFoundError,
    RevisionConflictError,
    SourceConflictError,
)
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import ContentCapture, EntryAnchor, MemoryEntryInput, RememberMemoryRequest

from .pipelines import CountingPipeline, structured


async def test_explicit_writes_and_captured_sources_remain_independent(target, open_runtime, scope):
    pipeline = CountingPipeline()
    runtime = await open_runtime(target, candidate_pipeline=pipeline)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)

    receipt = await sources.capture(structured("task-1", ("decision", "Use SQLite for the local Runtime profile.")))
    assert receipt.sequence == 1 and receipt.created
    assert await memory.head() is None, "capturing a Source must not create Memory"
    assert pipeline.calls == 0

    revision = await memory.remember(RememberMemoryRequest(
        entries=(MemoryEntryInput(kind="decision", text="Run make test before every push."),), expected_revision=None,
    ))
    assert revision.revision == 1 and [c.op for c in revision.changes] == ["add"]
    assert revision.lineage.sources == (), "an explicit write fabricates no Source"
    assert pipeline.calls == 0, "an explicit write runs no candidate pipeline"
    assert len(await sources.journal()) == 1, "an explicit write journals nothing"
    assert await memory.cursor() == 0, "an explicit write does not consume the journal"

    flush = await memory.flush(limit=100)
    assert flush.status == "committed" and flush.revision.revision == 2 and pipeline.calls == 1
    texts = sorted(e.text for e in await memory.entries())
    assert texts == ["Run make test before every push.", "Use SQLite for the local Runtime profile."]


async def test_an_explicit_write_without_material_change_returns_the_same_revision(target, open_runtime, scope):
    runtime = await open_runtime(target)
    memory = runtime.memory.for_scope(scope)
    request = RememberMemoryRequest(entries=(MemoryEntryInput(kind="fact", text="The API listens on port 8080."),))
    first = await memory.remember(request)
    again = await memory.remember(request)
    assert again.ref == first.ref and len(again.manifest.entries) == 1


async def test_expected_revision_detects_stale_writes(target, open_runtime, scope):
    runtime = await open_runtime(target)
    memory = runtime.memory.for_scope(scope)
    entry = (MemoryEntryInput(kind="fact", text="CI runs on GitHub Actions."),)
    first = await memory.remember(RememberMemoryRequest(entries=entry, expected_revision=0))
    with pytest.raises(RevisionConflictError):
        await memory.remember(RememberMemoryRequest(entries=entry, expected_revision=0))
    second = await memory.remember(RememberMemoryRequest(
        entries=(MemoryEntryInput(kind="fact", text="The nightly job rebuilds the docs."),), expected_revision=first.ref))
    assert second.revision == 2
    with pytest.raises(RevisionConflictError):
        await memory.remember(RememberMemoryRequest(entries=entry, expected_revision=first.ref))
    assert (await memory.head()).ref == second.ref


async def test_replaying_the_same_source_is_idempotent_and_different_content_conflicts(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources = runtime.sources.for_scope(scope)
    capture = ContentCapture(source_id="task-2026-07-24", content="The Runtime uses a persisted APScheduler interval job.",
                             metadata={"origin": "integration"})
    first = await sources.capture(capture)
    again = await sources.capture(ContentCapture(source_id="task-2026-07-24",
                                                 content="The Runtime uses a persisted APScheduler interval job.",
                                                 metadata={"origin": "integration"}))
    assert (first.sequence, first.created) == (1, True)
    assert (again.sequence, again.created) == (1, False) and again.source == first.source
    with pytest.raises(SourceConflictError):
        await sources.capture(ContentCapture(source_id="task-2026-07-24", content="Something else entirely."))
    with pytest.raises(SourceConflictError):
        await sources.capture(ContentCapture(source_id="task-2026-07-24", content=capture.content,
                                             metadata={"origin": "elsewhere"}))
    journal = await sources.journal()
    assert [(c.sequence, c.source_id, c.source.content) for c in journal] == [(1, "task-2026-07-24", capture.content)]
    nxt = await sources.capture(ContentCapture(source_id="task-2", content="Next."))
    assert nxt.sequence == 2, "a conflict must not consume a sequence"


async def test_capture_snapshots_metadata_and_returns_the_canonical_source(target, open_runtime, scope):
    runtime = await open_runtime(target)
    paths = ["a.py"]
    capture = ContentCapture(source_id="note", content="Cafe\u0301", metadata={"paths": paths})
    paths.append("b.py")
    assert capture.metadata == {"paths": ["a.py"]}
    receipt = await runtime.sources.for_scope(scope).capture(capture)
    capture.metadata["paths"].append("c.py")
    assert receipt.source.metadata == {"paths": ["a.py"]}, "the returned Source shares no caller container"
    assert receipt.source.content == "Café" and receipt.source.name == "note" and receipt.source.source_type == "content"
    stored = await runtime.sources.for_scope(scope).get("note")
    assert stored.source == receipt.source


async def test_sources_cursors_and_memory_heads_are_isolated_across_scopes(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    a, b = scope + ":a", scope + ":b"
    await runtime.sources.for_scope(a).capture(structured("shared-id", ("fact", "Scope A uses Postgres.")))
    await runtime.sources.for_scope(a).capture(structured("a-only", ("fact", "Scope A deploys on Fridays.")))
    receipt_b = await runtime.sources.for_scope(b).capture(structured("shared-id", ("fact", "Scope B uses MySQL.")))
    assert receipt_b.sequence == 1, "each scope has its own journal sequence"

    flush_a = await runtime.memory.for_scope(a).flush(limit=1)
    assert flush_a.status == "committed" and flush_a.cursor == 1
    assert await runtime.memory.for_scope(b).cursor() == 0, "flushing scope A leaves B's cursor alone"
    assert await runtime.memory.for_scope(b).head() is None
    flush_b = await runtime.memory.for_scope(b).flush()
    head_a, head_b = await runtime.memory.for_scope(a).head(), await runtime.memory.for_scope(b).head()
    assert head_a.artifact_id != head_b.artifact_id and flush_b.revision.ref == head_b.ref
    assert [e.text for e in await runtime.memory.for_scope(b).entries()] == ["Scope B uses MySQL."]
    hits = await runtime.memory.for_scope(b).search("Postgres")
    assert len(hits) == 0, "search never crosses into another scope's Memory"
    with pytest.raises(InvalidRuntimeRequestError):  # evidence of scope A cannot support scope B's Memory
        await runtime.memory.for_scope(b).remember(RememberMemoryRequest(entries=(MemoryEntryInput(
            kind="fact", text="x y z", sources=({"scope": a, "source_type": "content", "source_id": "a-only"},)),)))
    await runtime.memory.for_scope(a).flush()
    assert (await runtime.memory.for_scope(a).cursor(), await runtime.memory.for_scope(b).cursor()) == (2, 1)


async def test_explicit_writes_cite_captured_sources_as_evidence(target, open_runtime, scope):
    runtime = await open_runtime(target)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    receipt = await sources.capture(ContentCapture(source_id="agents-md", content="Never edit site/: it is generated."))
    revision = await memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(
        kind="constraint", text="site/ is generated output: never edit it.", sources=(receipt,)),)))
    (entry,) = await memory.entries()
    (captured,) = await memory.evidence(entry)
    assert (captured.scope, captured.sequence, captured.source_id) == (scope, 1, "agents-md")
    assert revision.lineage.sources[0].name == captured.memory_source_name
    for reference in (receipt.evidence(), '{"scope": %s, "source_type": "content", "source_id": "agents-md"}'
                      % __import__("json").dumps(scope), receipt.source):
        again = await memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(
            kind="constraint", text="site/ is generated output: never edit it.", sources=(reference,)),)))
        assert again.ref == revision.ref, "the same evidence resolves to the same Source: no change"


async def test_exact_entry_operations_distinguish_identity_revision_and_anchor(target, open_runtime, scope):
    runtime = await open_runtime(target)
    memory, other = runtime.memory.for_scope(scope), runtime.memory.for_scope(scope + ":other")
    r1 = await memory.remember(RememberMemoryRequest(entries=(
        MemoryEntryInput(kind="preference", text="Run make test for routine changes."),
        MemoryEntryInput(kind="constraint", text="site/ must not be modified."),
    )))
    o1 = await other.remember(RememberMemoryRequest(entries=(MemoryEntryInput(kind="fact", text="Other scope."),)))
    pref = next(e for e in await memory.entries() if e.kind == "preference")
    r2 = await memory.revise(EntryAnchor(r1.ref, pref.entry_id),
                             "Run make test for routine changes; prefer make docs-test for docs.", reason="user_correction")
    assert r2.revision == 2 and r2.changes[0].op == "revise"

    with pytest.raises(ArtifactNotFoundError):   # another scope's Memory
        await memory.revise(EntryAnchor(o1.ref, pref.entry_id), "x")
    with pytest.raises(RevisionConflictError):   # an older Revision of the right Memory
        await memory.revise(EntryAnchor(r1.ref, pref.entry_id), "x")
    with pytest.raises(MemoryEntryNotFoundError):  # an anchor missing from the cited manifest
        await memory.revise(EntryAnchor(r2.ref, "mem_ent_missing"), "x")
    with pytest.raises(ArtifactNotFoundError):
        await memory.retire([EntryAnchor(o1.ref, pref.entry_id)])
    with pytest.raises(RevisionConflictError):
        await memory.retire([EntryAnchor(r1.ref, pref.entry_id)])
    with pytest.raises(MemoryEntryNotFoundError):
        await memory.retire([EntryAnchor(r2.ref, "mem_ent_missing")])
    with pytest.raises(InvalidRuntimeRequestError):  # a changes request newer than the head
        await memory.changes(since_revision=3)
    assert (await memory.head()).ref == r2.ref, "refused operations wrote nothing"

    hit = (await memory.search("site modified"))[0]
    r3 = await memory.retire([hit], reason="user_requested")
    assert [c.op for c in r3.changes] == ["deactivate"]
    assert [c.memory_ref.revision for c in await memory.changes(since_revision=0)] == [1, 2, 3]
    assert (await memory.entry(EntryAnchor(r1.ref, pref.entry_id))).text == "Run make test for routine changes."
    citation = await memory.cite(EntryAnchor(r1.ref, pref.entry_id))
    assert citation.memory_ref == r1.ref
    with pytest.raises(ArtifactNotFoundError):
        await other.entry(EntryAnchor(r1.ref, pref.entry_id))


async def test_scope_rules(target, open_runtime, scope):
    runtime = await open_runtime(target)
    for bad in ("", "x" * 257, 42, None, "a\x00b", "\ud800"):
        with pytest.raises(InvalidRuntimeRequestError):
            runtime.sources.for_scope(bad)
    longest, unicode = "s" * 256, scope + " · 中文 Ä"
    for s in (longest, unicode, unicode.upper()):
        await runtime.sources.for_scope(s).capture(ContentCapture(source_id="x", content=s))
    assert (await runtime.sources.for_scope(unicode).get("x")).source.content == unicode
    assert (await runtime.sources.for_scope(unicode.upper()).get("x")).source.content == unicode.upper(), \
        "scopes are opaque: case is not folded"
