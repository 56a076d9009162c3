"""Reads never return tampered rows (issue 13, defect 3). Rows are edited directly in
the database, as an attacker or a broken tool would; every read path that returns
authoritative content then refuses with InvalidCitationError, and ``svc.verify``
lists every mismatch at once."""

from __future__ import annotations

import pytest

import powercontext as pc

from ..support import sql

E = pc.MemoryEntryInput


async def _history(svc):
    src = await svc.sources.persist(pc.ContentSource("src_notes", "the cache moved to ~/.cache/atlas"))
    r1 = await svc.remember(None, sources=(src,), entries=(E("fact", "the build cache lives in /tmp/atlas", sources=(src,)),))
    (v1,) = await svc.entries(r1)
    r2 = await svc.remember(r1, sources=(src,), entries=(E("fact", "the build cache lives in ~/.cache/atlas", entry=v1),))
    (v2,) = await svc.entries(r2)
    return src, r1, r2, v1, v2


async def _refused(awaitable, match=None):
    with pytest.raises(pc.InvalidCitationError, match=match) as info:
        await awaitable
    assert len(str(info.value).splitlines()) == 1


async def test_untampered_history_reads_and_verifies(svc):
    src, r1, r2, v1, v2 = await _history(svc)
    assert [v.text for v in await svc.lineage(r2, v2.entry_id)] == [v1.text, v2.text]
    assert (await svc.sources.get("src_notes")).content == src.content
    assert (await svc.revision(r1.ref)).lineage.sources == (src.ref,)
    report = await svc.verify(r2)
    assert report.ok and (report.revisions, report.versions, report.sources) == (2, 2, 1), report.issues


async def test_lineage_refuses_a_forged_old_version(svc):
    src, r1, r2, v1, v2 = await _history(svc)
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?",
              ("the build cache may be deleted", v1.entry_version_id))
    await _refused(svc.lineage(r2, v2.entry_id), "altered")
    assert any("altered" in i for i in (await svc.verify(r2)).issues)


async def test_sources_get_rehashes_the_payload(svc):
    await _history(svc)
    await sql(svc, "UPDATE sources SET payload = REPLACE(payload, 'atlas', 'evil') WHERE name = ?", ("src_notes",))
    await _refused(svc.sources.get("src_notes"), "altered")


async def test_a_revisions_lineage_is_covered_by_a_hash(svc):
    src, r1, r2, v1, v2 = await _history(svc)
    await sql(svc, "UPDATE artifact_revisions SET lineage = ? WHERE artifact_id = ? AND revision = 1",
              ('{"artifacts":[],"sources":[]}', r1.artifact_id))
    await _refused(svc.revision(r1.ref), "lineage")
    report = await svc.verify(r2)
    assert any("lineage" in i for i in report.issues)


@pytest.mark.parametrize("column, value", [
    ("version", 99),
    ("previous_version_id", None),
    ("created_in_revision", 1),
])
async def test_identity_fields_are_checked_by_expand_cite_and_entry(svc, column, value):
    src, r1, r2, v1, v2 = await _history(svc)
    good = await svc.cite(r2, v2.entry_id, v2.entry_version_id)
    await sql(svc, f"UPDATE memory_entry_versions SET {column} = ? WHERE entry_version_id = ?",
              (value, v2.entry_version_id))
    await _refused(svc.expand((good,)))
    await _refused(svc.cite(r2, v2.entry_id, v2.entry_version_id))
    await _refused(svc.entry(r2, v2.entry_id))
    await _refused(svc.entries(r2))
    await _refused(svc.lineage(r2, v2.entry_id))
    assert not (await svc.verify(r2)).ok


async def test_unparseable_rows_are_integrity_errors_not_decoder_errors(svc):
    src, r1, r2, v1, v2 = await _history(svc)
    await sql(svc, "UPDATE memory_entry_versions SET source_refs = ? WHERE entry_version_id = ?",
              ("[{\"name\": 1", v2.entry_version_id))
    await _refused(svc.entry(r2, v2.entry_id))
    await sql(svc, "UPDATE sources SET payload = ? WHERE name = ?", ("{}", "src_notes"))
    await _refused(svc.sources.get("src_notes"))
    await sql(svc, "UPDATE artifact_revisions SET content = ? WHERE artifact_id = ? AND revision = 2",
              ('{"schema": 1}', r2.artifact_id))
    await _refused(svc.head(r2.artifact_id))
    await _refused(svc.changes(r2, since_revision=0))


async def test_verify_lists_every_mismatch(svc):
    src, r1, r2, v1, v2 = await _history(svc)
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?", ("forged", v1.entry_version_id))
    await sql(svc, "UPDATE memory_entry_versions SET version = 7 WHERE entry_version_id = ?", (v2.entry_version_id,))
    await sql(svc, "UPDATE sources SET payload = REPLACE(payload, 'atlas', 'evil')")
    await sql(svc, "DELETE FROM memory_entry_heads WHERE entry_version_id = ?", (v2.entry_version_id,))
    report = await svc.verify(r2.artifact_id)
    assert not report.ok
    text = "\n".join(report.issues)
    assert v1.entry_version_id in text and "version number 7" in text
    assert "src_notes" in text and "projection" in text
    assert len(report.issues) >= 4


async def test_versions_of_one_big_revision_are_checked_against_it_once(svc, monkeypatch):
    # A 100k-entry remember() creates 100k versions in one Revision; reading them
    # checked each against that Revision separately, and a Revision larger than the
    # revision cache was re-verified once per version (quadratic: entries() of 100k
    # never finished). Here the cache holds nothing, so every read is a verification.
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact number {i} about the nightly build") for i in range(6)))
    rev2 = await svc.remember(rev, entries=(E("fact", "the release branch is cut on Mondays"),))
    monkeypatch.setattr(svc.backend.revision_cache, "max_bytes", 0)
    verified = []
    real = svc.backend._verify_revision

    def counting(tx, ref, row):
        verified.append(ref.revision)
        return real(tx, ref, row)

    monkeypatch.setattr(svc.backend, "_verify_revision", counting)
    svc.backend._identity_cache.clear()
    assert len(await svc.entries(rev2)) == 7
    assert verified.count(1) == 1  # Revision 1 once for the six versions it created (was 6)
    # and the shared read still catches an altered identity among the six
    victim = next(e for e in await svc.entries(rev2) if e.text.startswith("fact number 3"))
    svc.backend._identity_cache.clear()
    await sql(svc, "UPDATE memory_entry_versions SET created_in_revision = 2 WHERE entry_version_id = ?",
              (victim.entry_version_id,))
    await _refused(svc.entries(rev2), match="does not record creating it")
    await sql(svc, "UPDATE memory_entry_versions SET created_in_revision = 1, version = 2 WHERE entry_version_id = ?",
              (victim.entry_version_id,))
    svc.backend._identity_cache.clear()
    await _refused(svc.entries(rev2), match="stored version number 2")


async def test_search_serves_verified_versions_and_never_a_forged_row(svc, monkeypatch):
    # A search takes a version it verified before from the cache instead of reading its
    # row again (issue 15: a round trip of ~64 rows per search); like the manifest chunks,
    # what it returns must still hash to the verified head manifest.
    src, r1, r2, v1, v2 = await _history(svc)

    async def texts():
        retrieval, _, _ = await svc.retrieve("where does the build cache live", (r2,), 4, "fts")
        return [c.text for c in retrieval.channels["fts"]]

    assert await texts() == [v2.text]
    reads = []
    real = svc.backend._read_versions
    monkeypatch.setattr(svc.backend, "_read_versions", lambda tx, ids: reads.append(ids) or real(tx, ids))
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?", ("forged", v2.entry_version_id))
    assert await texts() == [v2.text]  # the verified version, not the forged row
    assert reads == []
    await _refused(svc.entry(r2, v2.entry_id))  # reads that return the row re-read it and refuse
    assert await texts() == []  # now cached as read: its hash is not the manifest's, so dropped
    svc.backend.version_cache.max_bytes = 0
    assert await texts() == [] and reads  # cold: read again, and still dropped
    assert not (await svc.verify(r2)).ok


async def _search_ids(svc, query, rev):
    res = await svc.search(query, memories=(rev,), limit=8, mode="fts",
                           policy=pc.AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.0))
    return [h.entry_id for h in res]


@pytest.mark.parametrize("edit", ["plant a word", "hide the entry"])
async def test_verify_notices_edited_search_text(svc, edit):
    # issue 35, defect 5: the row's searchable_text and its full-text row edited together
    src, r1, r2, v1, v2 = await _history(svc)
    other = await svc.remember(r2, entries=(E("fact", "deploys run on fridays only"),))
    assert (await svc.verify(other)).ok
    planted = svc.backend.analyzer.searchable_text(v2.text + " kubernetes")
    forged = planted if edit == "plant a word" else "nothing here"
    await sql(svc, "UPDATE memory_entry_heads SET searchable_text = ? WHERE entry_version_id = ?",
              (forged, v2.entry_version_id))
    if svc.backend.name == "sqlite":  # FTS5 indexes the head rows' text: re-index it, as a careful forger would
        await sql(svc, "INSERT INTO memory_entry_search_fts (memory_entry_search_fts) VALUES ('rebuild')")
    if edit == "plant a word":
        assert await _search_ids(svc, "kubernetes", other) == [v2.entry_id], "the forgery works on search"
    else:
        assert v2.entry_id not in await _search_ids(svc, "build cache", other), "the forgery works on search"
    report = await svc.verify(other)
    assert not report.ok and any(v2.entry_id in i and "search text" in i for i in report.issues), report.issues
    await svc.rebuild_projections((other,))
    assert (await svc.verify(other)).ok
    assert await _search_ids(svc, "kubernetes", other) == []


async def test_verify_notices_a_full_text_row_that_differs_from_its_search_text(tmp_path):
    # SQLite only: OceanBase indexes the column itself, there is no second copy to edit
    svc = await pc.open(str(tmp_path / "memory.db"))
    src, r1, r2, v1, v2 = await _history(svc)
    (pid,) = (await sql(svc, "SELECT projection_id FROM memory_entry_heads WHERE entry_version_id = ?",
                        (v2.entry_version_id,)))[0]
    await sql(svc, "UPDATE memory_entry_search_fts SET searchable_text = 'kubernetes' WHERE rowid = ?", (pid,))
    report = await svc.verify(r2)
    assert any("full-text index row" in i for i in report.issues), report.issues
    await svc.rebuild_projections((r2,))  # the index is rebuilt from the head rows' text
    assert (await svc.verify(r2)).ok
    assert await _search_ids(svc, "kubernetes", r2) == []
    await svc.close()
