"""RFC 000 "Coding Agent scenario", end to end, on every backend."""

import pytest

import powercontext as pc

from .scenario import ENTRY_02B_V2, ENTRY_03C, revision_one, user_correction


async def test_revision_one_has_three_entries_from_four_sources(svc):
    sc = await revision_one(svc)
    assert sc.r1.revision == 1
    assert [e.state for e in sc.r1.manifest.entries] == ["active"] * 3
    assert [c.op for c in sc.r1.changes] == ["add"] * 3
    assert [s.name for s in sc.r1.lineage.sources] == ["src_agents_md", "src_makefile", "src_pyproject", "src_task_outcome_001"]
    assert [s.name for s in sc.e01a.sources] == ["src_agents_md", "src_pyproject"]
    assert (sc.e02b.version, sc.e02b.previous_version_id, sc.e02b.created_in_revision) == (1, None, 1)


async def test_full_scenario(svc):
    sc = await revision_one(svc)
    r2 = await user_correction(svc, sc)
    assert r2.revision == 2
    (change,) = r2.changes
    assert (change.op, change.entry_id, change.from_entry_version_id) == ("revise", sc.e02b.entry_id, sc.e02b.entry_version_id)
    v2 = await svc.entry(r2, sc.e02b.entry_id)
    assert (v2.version, v2.previous_version_id, v2.text) == (2, sc.e02b.entry_version_id, ENTRY_02B_V2)
    # predecessor evidence is kept and unioned with the correction's evidence
    assert [s.name for s in v2.sources] == ["src_agents_md", "src_makefile", "src_user_note"]
    assert [s.name for s in r2.lineage.sources] == ["src_user_note"]
    # only mem_ent_02B's version changed in the manifest
    before, after = sc.r1.manifest.by_id(), r2.manifest.by_id()
    assert {k for k in after if after[k] != before[k]} == {sc.e02b.entry_id}

    # Revision 3: the site/ rule is forgotten and no longer searchable
    hits = await svc.search("site generated output", memories=(r2,), mode="fts")
    assert [h.entry_id for h in hits] == [sc.e03c.entry_id]
    r3 = await svc.forget(r2, entries=(sc.e03c,), reason="user_requested")
    assert r3.manifest.get(sc.e03c.entry_id).state == "inactive"
    assert r3.manifest.get(sc.e03c.entry_id).entry_version_id == sc.e03c.entry_version_id
    assert (await svc.search("site generated output", memories=(r3,), mode="fts")).hits == ()
    res = await svc.search("make docs-test documentation", memories=(r3,), limit=8, mode="fts")
    assert res.mode == "fts" and [h.entry_id for h in res] == [sc.e02b.entry_id]
    # The RFC's own scenario query: under Analyzer v2 (the default of new databases)
    # "conventions" meets "convention", 3 of its 10 terms match, and the default fts
    # floors (3 / 0.30) admit the revised validation convention.
    assert svc.backend.analyzer.version == "v2"
    rfc = await svc.search("Which build and verification conventions should I know before editing documentation?",
                           memories=(r3,), mode="fts")
    assert rfc.mode == "fts" and [(h.entry_id, h.entry_version_id) for h in rfc] == [(sc.e02b.entry_id,
                                                                                      v2.entry_version_id)]
    assert v2.version == 2

    # a Handoff citation of Revision 2 keeps validating after Revision 3
    citation = await svc.cite(r2.ref, sc.e02b.entry_id, v2.entry_version_id)
    (expanded,) = await svc.expand((citation,))
    assert expanded == v2
    (hit,) = res.hits
    assert (await svc.expand((hit,)))[0] == v2

    # reactivate restores the same version and its search projection
    r4 = await svc.reactivate(r3, entries=(sc.e03c,), reason="user_restored")
    item = r4.manifest.get(sc.e03c.entry_id)
    assert (item.state, item.entry_version_id) == ("active", sc.e03c.entry_version_id)
    assert [c.op for c in r4.changes] == ["reactivate"]
    assert [h.text for h in await svc.search("site generated output", memories=(r4,))] == [ENTRY_03C]
    assert [len(await svc.lineage(r4, e)) for e in (sc.e01a.entry_id, sc.e02b.entry_id, sc.e03c.entry_id)] == [1, 2, 1]


async def test_changes_reads_compact_history(svc):
    sc = await revision_one(svc)
    r2 = await user_correction(svc, sc)
    r3 = await svc.forget(r2, entries=(sc.e03c,), reason="user_requested")
    full = await svc.changes(r3, since_revision=0)
    assert [c.memory_ref.revision for c in full] == [1, 2, 3]
    assert [[ch.op for ch in c.changes] for c in full] == [["add"] * 3, ["revise"], ["deactivate"]]
    assert full[2].changes[0].reason == "user_requested"
    assert [c.memory_ref.revision for c in await svc.changes(r3, since_revision=1)] == [2, 3]
    assert [c.memory_ref.revision for c in await svc.changes(r3)] == [3]
    assert await svc.changes(r3, since_revision=3) == ()
    assert [c.memory_ref.revision for c in await svc.changes(r2.ref, since_revision=0)] == [1, 2]
    with pytest.raises(ValueError):
        await svc.changes(r3, since_revision=-1)
    with pytest.raises(ValueError):
        await svc.changes(r2, since_revision=3)
    with pytest.raises(pc.ArtifactNotFoundError):
        await svc.changes(pc.ArtifactRef(r3.artifact_id, 9), since_revision=0)
    with pytest.raises(pc.ArtifactNotFoundError):
        await svc.changes(pc.ArtifactRef("mem_art_nope", 1), since_revision=0)
