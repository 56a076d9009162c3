"""A commit plan built by any caller passes the backend's rules or writes nothing,
whether the commit takes the incremental path (a base this backend committed, still
cached: only the changed entries are checked, encoded and projected — issue 15) or the
full path (a base read back from storage). The same refusals, the same acceptances and
the same content hash either way."""

from __future__ import annotations

import pytest

import powercontext as pc
from powercontext import canonical
from powercontext.backends.plans import CommitPlan
from powercontext.errors import InvalidMemoryRequestError
from powercontext.model import (
    ArtifactRef, MemoryChange, MemoryContent, MemoryEntryVersion, MemoryManifest, MemoryManifestEntry,
    RevisionLineage, entry_content,
)

from ..support import count_head_id_reads, counts

PATHS = ["incremental", "full"]


async def base_of(svc, path: str):
    """A Memory of 40 entries and its head; for the full path the revision cache is
    emptied, so the commit's base is re-read and verified from storage."""
    head = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", f"fact number {i}") for i in range(40)))
    head = await svc.remember(head, entries=(pc.MemoryEntryInput("fact", "one more fact"),))
    if path == "full":
        svc.backend.revision_cache.clear()
        head = await svc.head(head.artifact_id)
    cached = svc.backend.revision_cache.get(head.ref)
    assert cached is not None and cached.validated is (path == "incremental")
    return head


def new_version(head, entry_id: str, text: str) -> MemoryEntryVersion:
    content_hash = canonical.entry_content_hash(entry_content("fact", text, (), ()))
    return MemoryEntryVersion(head.artifact_id, entry_id, "mem_ver_plan_" + canonical.sha256_hex(b"", entry_id.encode())[:12], 1, None, "fact", text,
                              (), (), content_hash, head.revision + 1)


def plan(head, entries, changes, versions=()) -> CommitPlan:
    return CommitPlan(head.artifact_id, head.revision, MemoryContent(MemoryManifest(tuple(entries)), tuple(changes)),
                      RevisionLineage(), tuple(versions))


def add_plan(head, entry_id="mem_ent_zz_000001", text="added by hand"):
    v = new_version(head, entry_id, text)
    item = MemoryManifestEntry(entry_id, v.entry_version_id, v.entry_content_hash, "active")
    entries = sorted(head.manifest.entries + (item,), key=lambda e: e.entry_id)
    return entries, [MemoryChange("add", entry_id, None, v.entry_version_id)], [v]


def undeclared_state_change(head):
    entries, changes, versions = add_plan(head)
    i = 5
    e = entries[i]
    entries[i] = MemoryManifestEntry(e.entry_id, e.entry_version_id, e.entry_content_hash, "inactive")
    return entries, changes, versions


def dropped_entry(head):
    entries, changes, versions = add_plan(head)
    del entries[3]
    return entries, changes, versions


def invalid_new_id(head):
    return add_plan(head, entry_id="mem_ent bad id")


def out_of_order(head):
    entries, changes, versions = add_plan(head, entry_id="mem_ent_00000")  # sorts first
    entries.append(entries.pop(0))
    return entries, changes, versions


def stray_change(head):
    entries, changes, versions = add_plan(head)
    changes.append(MemoryChange("deactivate", "mem_ent_zz_999999", "mem_ver_x", None))
    return entries, changes, versions


def altered_hash_of_unchanged(head):
    entries, changes, versions = add_plan(head)
    e = entries[7]
    entries[7] = MemoryManifestEntry(e.entry_id, e.entry_version_id, "0" * 64, e.state)
    return entries, changes, versions


def unreferenced_version(head):
    entries, changes, versions = add_plan(head)
    versions.append(new_version(head, "mem_ent_zz_000002", "never in the manifest"))
    return entries, changes, versions


BAD = [undeclared_state_change, dropped_entry, invalid_new_id, out_of_order, stray_change,
       altered_hash_of_unchanged, unreferenced_version]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("build", BAD, ids=lambda f: f.__name__)
async def test_a_bad_plan_is_refused_on_either_path(svc, path, build):
    head = await base_of(svc, path)
    before = await counts(svc)
    with pytest.raises(InvalidMemoryRequestError):
        await svc.backend.commit(plan(head, *build(head)))
    assert await counts(svc) == before
    assert await svc.backend.head(head.artifact_id) == head.revision


@pytest.mark.parametrize("path", PATHS)
async def test_a_good_plan_of_fresh_objects_commits_with_the_canonical_hash(svc, path):
    """Equal (not identical) items: every unchanged item rebuilt from scratch."""
    head = await base_of(svc, path)
    entries, changes, versions = add_plan(head)
    entries = [MemoryManifestEntry(e.entry_id, e.entry_version_id, e.entry_content_hash, e.state) for e in entries]
    committed = await svc.backend.commit(plan(head, entries, changes, versions))
    content = MemoryContent(MemoryManifest(tuple(entries)), tuple(changes))
    assert committed.content_hash == canonical.artifact_content_hash(content.to_canonical())
    svc.backend.revision_cache.clear()
    reread = await svc.head(head.artifact_id)  # verified from its stored chunks
    assert reread.content_hash == committed.content_hash and reread.manifest == content.manifest
    hits = await svc.search("added by hand", memories=(reread,), mode="fts")
    assert [h.entry_id for h in hits] == ["mem_ent_zz_000001"]
    assert (await svc.verify(reread)).ok


@pytest.mark.parametrize("path", PATHS)
async def test_forget_and_revise_through_the_service_on_either_path(svc, path):
    head = await base_of(svc, path)
    entries = await svc.entries(head)
    head = await svc.forget(head, entries[2:4], reason="obsolete")
    head = await svc.remember(head, entries=(pc.MemoryEntryInput("fact", "fact number 10, revised", entry=entries[10]),))
    head = await svc.reactivate(head, entries[2:3])
    svc.backend.revision_cache.clear()
    reread = await svc.head(head.artifact_id)
    assert reread.content_hash == head.content_hash == head.content.canonical()[1]
    assert [e.state for e in reread.manifest.entries[2:5]] == ["active", "inactive", "active"]
    assert (await svc.verify(reread)).ok
    assert ArtifactRef(head.artifact_id, head.revision) == reread.ref


async def test_a_new_memory_inserts_its_head_rows_without_asking_which_are_there(svc):
    """Head rows are written only in the transaction that writes their Memory's head, so
    a new Memory's commit inserts them all (asking cost a 100k-entry load on OceanBase
    10.1 s); a commit onto an existing Memory asks, so a row already there is rewritten
    in place."""
    asked = count_head_id_reads(svc.backend)
    head = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", f"fact number {i}") for i in range(30)))
    assert asked[0] == 0
    head = await svc.remember(head, entries=(pc.MemoryEntryInput("fact", "one more fact"),))
    assert asked[0] == 1
    assert (await counts(svc))["memory_entry_heads"] == 31 and (await svc.verify(head)).ok
    assert [h.text for h in (await svc.search("one more fact", (head,), mode="fts")).hits][:1] == ["one more fact"]
