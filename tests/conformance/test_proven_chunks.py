"""Proven manifest groups (issue 15, a cold ``entries()``): a verification does not
parse or re-canonicalize a stored group holding exactly the text of a group this
process has already seen ``encode`` produce — so reading the older Revisions that
created the head's versions costs their changes, not their manifests — and it detects
every altered row exactly as before: chunk rows, Revision rows and version rows,
whether the chunk involved was proven before the alteration or not (revision_store.py
states the guarantee)."""

from __future__ import annotations

import json

import pytest

import powercontext as pc
from powercontext import canonical
from powercontext.backends import manifest_chunks as mc

from ..support import sql

E = pc.MemoryEntryInput
N = 200  # entries of the first Revision: ~13 groups at the default sizes


async def _history(svc):
    """Revision 1 adds N entries; 2 revises entry 77; 3 and 4 add one entry each."""
    r1 = await svc.remember(None, entries=tuple(E("fact", f"fact number {i} about the nightly build") for i in range(N)))
    victim = (await svc.entries(r1))[77]
    rev = await svc.remember(r1, entries=(E("fact", "fact number 77, revised", entry=victim),))
    for i in range(2):
        rev = await svc.remember(rev, entries=(E("fact", f"appended fact {i}"),))
    return r1, rev


def _target(svc) -> str:
    return svc.backend.path if svc.backend.name == "sqlite" else svc.backend.url


def _count_canonicalized(monkeypatch, backend, parsed: dict[int, int] | None = None) -> dict[int, int]:
    """Groups ``encode`` canonicalized, per Revision number verified by ``backend``
    (and, into ``parsed``, group chunks ``decode`` parsed)."""
    per: dict[int, int] = {}
    parsed = {} if parsed is None else parsed
    current: list[int] = []
    real_group, real_verify = mc._group, backend._verify_revision

    def group(entries):
        if current:
            per[current[-1]] += 1
        return real_group(entries)

    class CountingJson:
        @staticmethod
        def loads(text):
            if current:
                parsed[current[-1]] += 1
            return json.loads(text)

    def verify(tx, ref, row):
        per.setdefault(ref.revision, 0)
        parsed.setdefault(ref.revision, 0)
        current.append(ref.revision)
        try:
            return real_verify(tx, ref, row)
        finally:
            current.pop()

    monkeypatch.setattr(mc, "_group", group)
    monkeypatch.setattr(mc, "json", CountingJson)
    monkeypatch.setattr(backend, "_verify_revision", verify)
    return per


async def _refused(awaitable, match=None):
    with pytest.raises(pc.InvalidCitationError, match=match):
        await awaitable


async def test_after_a_reopen_older_revisions_reuse_the_groups_the_head_proved(svc, monkeypatch):
    r1, head = await _history(svc)
    parsed: dict[int, int] = {}
    async with await pc.open(_target(svc)) as fresh:
        per = _count_canonicalized(monkeypatch, fresh.backend, parsed)
        assert len(await fresh.entries(head)) == N + 2
        groups = len(fresh.backend.revision_cache.get(head.ref).layout.groups)
    assert groups >= 8
    # the head is verified first, every group parsed and canonicalized; then the
    # Revisions that created its versions (1, 2, 3), which share all but the group
    # their change fell in
    assert per.pop(head.revision) == parsed.pop(head.revision) == groups
    assert sorted(per) == sorted(parsed) == [1, 2, 3]
    assert all(n <= 2 for n in per.values()), per  # was `groups` each: the whole manifest
    assert all(n <= 2 for n in parsed.values()), parsed  # likewise (and it was parsed twice)


async def test_groups_a_commit_canonicalized_are_not_canonicalized_again(svc, monkeypatch):
    r1, head = await _history(svc)
    svc.backend.revision_cache.max_bytes = 0  # every read verifies its Revision again
    svc.backend._identity_cache.clear()
    parsed: dict[int, int] = {}
    per = _count_canonicalized(monkeypatch, svc.backend, parsed)
    assert len(await svc.entries(head)) == N + 2
    assert sorted(per) == [1, 2, 3, 4] and sum(per.values()) == sum(parsed.values()) == 0, (per, parsed)


async def test_a_cold_entries_hashes_each_version_once(svc, monkeypatch):
    # the hash of a version's content was computed on reading its row, again against
    # the head manifest and a third time against its creating Revision's
    from powercontext.backends import verification, version_rows

    r1, head = await _history(svc)
    hashed = []
    real = version_rows.version_content_hash
    for module in (verification, version_rows):
        monkeypatch.setattr(module, "version_content_hash", lambda v: hashed.append(v.entry_version_id) or real(v))
    async with await pc.open(_target(svc)) as fresh:
        assert len(await fresh.entries(head)) == N + 2
    # the head's N + 2 versions, and version 1 of entry 77 (checked in its chain)
    assert len(hashed) == len(set(hashed)) == N + 3


@pytest.mark.parametrize("cached", [True, False])
async def test_a_chunk_altered_after_it_was_proven_is_refused(svc, cached):
    r1, head = await _history(svc)
    entries = await svc.entries(head)  # proves every group and caches the Revisions
    victim = entries[30]
    assert victim.created_in_revision == 1
    (key,) = [k for (k,) in await sql(svc, "SELECT chunk_key FROM artifact_manifest_chunks WHERE content LIKE ?",
                                       (f'%"entry_version_id":"{victim.entry_version_id}"%',))]
    assert svc.backend.proven_chunks.get(key) is not None  # the case in question: proven
    await sql(svc, "UPDATE artifact_manifest_chunks SET content = REPLACE(content, '\"active\"', '\"inactive\"') "
              "WHERE chunk_key = ?", (key,))
    if not cached:
        svc.backend.revision_cache.clear()  # the proven keys stay
    await _refused(svc.entries(head), "altered")
    await _refused(svc.revision(r1.ref), "altered")
    assert svc.backend.proven_chunks.get(key) is not None
    async with await pc.open(_target(svc)) as fresh:
        await _refused(fresh.entries(head), "altered")
        assert not (await fresh.verify(head)).ok


async def test_non_canonical_bytes_under_a_new_key_are_refused_though_their_entries_were_proven(svc):
    # An attacker who re-hashes everything: rev 1's first group rewritten with a space
    # (the same entries, not canonical bytes), stored under its own key, the index and
    # root rewritten to name it and the content hash recomputed over the new text. The
    # original group is proven; the new key never is, so the group is canonicalized
    # again and the text does not compare.
    r1, head = await _history(svc)
    await svc.entries(head)
    chunks = dict(await sql(svc, "SELECT chunk_key, content FROM artifact_manifest_chunks"))
    ((root,),) = await sql(svc, "SELECT content FROM artifact_revisions WHERE artifact_id = ? AND revision = 1",
                           (r1.artifact_id,))
    text, layout = mc.decode(root, lambda keys: {k: chunks[k] for k in keys}, "test")
    group = layout.groups[0]
    assert svc.backend.proven_chunks.get(group.key) is not None
    forged = group.text.replace('{"', '{ "', 1)
    assert json.loads("[" + forged + "]") == json.loads("[" + group.text + "]")
    index_key, index = next((k, t) for k, t in layout.others if group.key in t.split(" "))
    new_index = index.replace(group.key, mc.chunk_key(forged))
    new_text = text.replace(group.text, forged, 1)
    assert len(new_text) == len(text) + 1
    for key, content in ((mc.chunk_key(forged), forged), (mc.chunk_key(new_index), new_index)):
        await sql(svc, "INSERT INTO artifact_manifest_chunks (chunk_key, content) VALUES (?, ?)", (key, content))
    await sql(svc, "UPDATE artifact_revisions SET content = ?, content_hash = ? WHERE artifact_id = ? AND revision = 1",
              (root.replace(index_key, mc.chunk_key(new_index)),
               canonical.sha256_hex(canonical.ARTIFACT_CONTENT_DOMAIN, new_text.encode("utf-8")), r1.artifact_id))
    svc.backend.revision_cache.clear()
    await _refused(svc.revision(r1.ref), "content hash")
    async with await pc.open(_target(svc)) as fresh:
        await fresh.revision(head.ref)  # proves the genuine groups in this handle
        assert fresh.backend.proven_chunks.get(group.key) is not None
        await _refused(fresh.revision(r1.ref), "content hash")


async def test_an_older_revision_pointed_at_another_revisions_proven_chunks_is_refused(svc):
    r1, head = await _history(svc)
    await svc.entries(head)  # every chunk of the head is proven
    ((head_root,),) = await sql(svc, "SELECT content FROM artifact_revisions WHERE artifact_id = ? AND revision = ?",
                                (head.artifact_id, head.revision))
    await sql(svc, "UPDATE artifact_revisions SET content = ? WHERE artifact_id = ? AND revision = 1",
              (head_root, r1.artifact_id))
    svc.backend.revision_cache.clear()
    await _refused(svc.revision(r1.ref), "content hash")
    async with await pc.open(_target(svc)) as fresh:
        await fresh.revision(head.ref)  # proves the head's chunks in this handle
        # entries() reads Revision 1: it created most of the head's versions
        await _refused(fresh.entries(head), "content hash")


async def test_altered_version_rows_of_older_revisions_are_refused_after_a_reopen(svc):
    r1, head = await _history(svc)
    first = await svc.entries(r1)
    await svc.entries(head)
    older, current = first[30], first[77]  # 77 was revised in Revision 2: its version 1 is history
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?",
              ("forged", current.entry_version_id))
    async with await pc.open(_target(svc)) as fresh:
        # a predecessor's hash is its own: not taken from the head version checked beside it
        await _refused(fresh.entries(head), "altered")
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?",
              (current.text, current.entry_version_id))
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?",
              ("forged", older.entry_version_id))
    await _refused(svc.entries(head), "altered")
    async with await pc.open(_target(svc)) as fresh:
        await _refused(fresh.entries(head), "altered")
        assert not (await fresh.verify(head)).ok
