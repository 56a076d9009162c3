"""Every rule of RFC 000 "MemoryEntryInput" and "remember()", forget/reactivate and
organize, including each refusal and proof that a refused call wrote nothing."""

import dataclasses

import pytest

import powercontext as pc
from powercontext.errors import InvalidMemoryRequestError

from ..support import counts
from .scenario import ENTRY_01A, ENTRY_02B, revision_one

E = pc.MemoryEntryInput


async def refused(svc, exc, coro):
    """Assert ``coro`` raises ``exc`` and leaves every table exactly as it was."""
    before = await counts(svc)
    with pytest.raises(exc) as info:
        await coro
    assert await counts(svc) == before
    return info.value


async def test_new_memory_with_duplicates_keeps_the_first(svc):
    s = await svc.sources.persist(pc.ContentSource("src_a", "a"))
    r1 = await svc.remember(None, sources=(s,), entries=(E("fact", " same \n", sources=(s,)), E("fact", "same", sources=(s,)), E("fact", "other")))
    assert len(r1.manifest.entries) == 2
    assert sorted(e.text for e in await svc.entries(r1)) == ["other", "same"]


async def test_text_is_nfc_and_stripped(svc):
    r1 = await svc.remember(None, entries=(E("fact", "  Cafe\u0301 rule  "),))
    (entry,) = await svc.entries(r1)
    assert entry.text == "Caf\u00e9 rule"


async def test_identical_content_is_a_noop_returning_the_current_revision(svc):
    sc = await revision_one(svc)
    before = await counts(svc)
    evidence = (sc.sources["src_agents_md"], sc.sources["src_pyproject"])
    same = await svc.remember(sc.r1, sources=evidence, entries=(E("fact", ENTRY_01A, sources=evidence),), mode="append")
    assert same.ref == sc.r1.ref  # no empty Revision
    # a revision to identical content is a no-op too
    again = await svc.remember(sc.r1, entries=(E(sc.e02b.kind, ENTRY_02B, entry=sc.e02b),))
    assert again.ref == sc.r1.ref
    assert await counts(svc) == before


async def test_duplicate_of_an_active_entry_is_not_added(svc):
    sc = await revision_one(svc)
    same = await svc.remember(sc.r1, entries=(E("preference", ENTRY_02B, sources=(sc.sources["src_agents_md"], sc.sources["src_makefile"])),),
                              sources=(sc.sources["src_agents_md"], sc.sources["src_makefile"]))
    assert same.ref == sc.r1.ref


async def test_stale_base_is_a_conflict(svc):
    sc = await revision_one(svc)
    await svc.remember(sc.r1, entries=(E("fact", "new fact"),))
    await refused(svc, pc.RevisionConflictError, svc.remember(sc.r1, entries=(E("fact", "another"),)))
    await refused(svc, pc.RevisionConflictError, svc.forget(sc.r1, entries=(sc.e01a,)))


async def test_unknown_memory(svc):
    await refused(svc, pc.ArtifactNotFoundError, svc.remember(pc.ArtifactRef("mem_art_missing", 1), entries=(E("fact", "x"),)))


@pytest.mark.parametrize(
    "entry, message",
    [
        (E("fact", "   "), "empty"),
        (E("fact", "x" * 8193), "8193 UTF-8 bytes"),
        (E("fact", "é" * 4097), "8194 UTF-8 bytes"),
        (E("", "text"), "kind"),
        (E("has space", "text"), "kind"),
        (E("fact", "text", reason="r" * 513), "513 code points"),
        (E("fact", 42), "string"),
    ],
)
async def test_bad_entry_input_is_refused(svc, entry, message):
    sc = await revision_one(svc)
    error = await refused(svc, InvalidMemoryRequestError, svc.remember(sc.r1, entries=(entry,)))
    assert message in str(error)


async def test_text_at_the_byte_limit_is_accepted(svc):
    r1 = await svc.remember(None, entries=(E("fact", "é" * 4096),))
    assert r1.revision == 1


async def test_reason_is_normalized_and_copied_into_the_change(svc):
    r1 = await svc.remember(None, entries=(E("fact", "x", reason="  user said so  "),))
    assert r1.changes[0].reason == "user said so"
    r1b = await svc.remember(None, entries=(E("fact", "y", reason="r" * 512),))
    assert len(r1b.changes[0].reason) == 512


async def test_mode_rules(svc):
    svc.pipeline = None  # no candidate provider configured
    sc = await revision_one(svc)
    s = sc.sources["src_agents_md"]
    await refused(svc, ValueError, svc.remember(sc.r1, mode="append"))
    await refused(svc, ValueError, svc.remember(sc.r1, mode="auto"))
    await refused(svc, ValueError, svc.remember(sc.r1, sources=(s,), entries=(E("fact", "x"),), mode="extract"))
    await refused(svc, pc.CapabilityNotSupportedError, svc.remember(sc.r1, sources=(s,), mode="extract"))
    await refused(svc, pc.CapabilityNotSupportedError, svc.remember(sc.r1, sources=(s,)))  # auto → extract
    await refused(svc, ValueError, svc.remember(sc.r1, entries=(E("fact", "x"),), mode="merge"))


async def test_evidence_must_be_part_of_the_operation(svc):
    sc = await revision_one(svc)
    s = sc.sources
    # a new entry citing a Source that the operation did not supply
    await refused(svc, InvalidMemoryRequestError, svc.remember(
        sc.r1, sources=(s["src_makefile"],), entries=(E("fact", "new", sources=(s["src_pyproject"],)),)))
    # an unpersisted Source
    await refused(svc, InvalidMemoryRequestError, svc.remember(
        sc.r1, sources=(pc.ContentSource("src_x", "x"),), entries=(E("fact", "new"),)))
    # a forged Source object: right name, different payload/hash
    forged = dataclasses.replace(s["src_makefile"], content="forged", content_hash="f" * 64)
    await refused(svc, InvalidMemoryRequestError, svc.remember(
        sc.r1, sources=(forged,), entries=(E("fact", "new", sources=(forged,)),)))
    # a revision may cite its predecessor's evidence without the operation supplying it
    r2 = await svc.remember(sc.r1, entries=(E("fact", ENTRY_01A + " Always.", sources=(s["src_pyproject"],), entry=sc.e01a),))
    assert [x.name for x in (await svc.entry(r2, sc.e01a.entry_id)).sources] == ["src_agents_md", "src_pyproject"]


async def test_artifact_evidence_must_exist(svc):
    sc = await revision_one(svc)
    r2 = await svc.remember(sc.r1, artifacts=(sc.r1.ref,), entries=(E("decision", "d", artifacts=(sc.r1.ref,)),))
    (added,) = [c for c in r2.changes]
    assert (await svc.entry(r2, added.entry_id)).artifacts == (sc.r1.ref,)
    ghost = pc.ArtifactRef("mem_art_ghost", 1)
    await refused(svc, InvalidMemoryRequestError, svc.remember(r2, artifacts=(ghost,), entries=(E("decision", "e", artifacts=(ghost,)),)))


async def test_revision_targets_must_be_exact_current_active_versions(svc):
    sc = await revision_one(svc)
    r2 = await svc.remember(sc.r1, entries=(E("fact", "v2", entry=sc.e01a),))
    # stale version object (the head points at v2 now)
    await refused(svc, InvalidMemoryRequestError, svc.remember(r2, entries=(E("fact", "v3", entry=sc.e01a),)))
    # the same entry twice in one batch
    v2 = await svc.entry(r2, sc.e01a.entry_id)
    await refused(svc, InvalidMemoryRequestError, svc.remember(r2, entries=(E("fact", "a", entry=v2), E("fact", "b", entry=v2))))
    # an object from another Memory
    other = await svc.remember(None, entries=(E("fact", "elsewhere"),))
    (foreign,) = await svc.entries(other)
    await refused(svc, InvalidMemoryRequestError, svc.remember(r2, entries=(E("fact", "x", entry=foreign),)))
    # a tampered object (right ids, different content)
    fake = dataclasses.replace(v2, text="tampered")
    await refused(svc, InvalidMemoryRequestError, svc.remember(r2, entries=(E("fact", "x", entry=fake),)))
    # an inactive entry must be reactivated first
    r3 = await svc.forget(r2, entries=(sc.e02b,))
    await refused(svc, InvalidMemoryRequestError, svc.remember(r3, entries=(E("preference", "x", entry=sc.e02b),)))
    r4 = await svc.reactivate(r3, entries=(sc.e02b,))
    r5 = await svc.remember(r4, entries=(E("preference", "revised after reactivation", entry=sc.e02b),))
    assert (await svc.entry(r5, sc.e02b.entry_id)).version == 2


async def test_forget_and_reactivate_are_idempotent(svc):
    sc = await revision_one(svc)
    r2 = await svc.forget(sc.r1, entries=(sc.e01a, sc.e02b), reason="user_requested")
    assert [c.op for c in r2.changes] == ["deactivate", "deactivate"]
    before = await counts(svc)
    assert (await svc.forget(r2, entries=(sc.e01a,))).ref == r2.ref
    r3 = await svc.forget(r2, entries=(sc.e01a, sc.e03c))  # one already inactive, one not
    assert [c.entry_id for c in r3.changes] == [sc.e03c.entry_id]
    assert (await svc.reactivate(sc.r1.__class__(r3.ref, r3.content, r3.content_hash, r3.lineage), entries=())).ref == r3.ref
    r4 = await svc.reactivate(r3, entries=(sc.e01a,))
    assert (await svc.reactivate(r4, entries=(sc.e01a,))).ref == r4.ref
    assert (await counts(svc))["artifact_revisions"] == before["artifact_revisions"] + 2
    await refused(svc, InvalidMemoryRequestError, svc.forget(r4, entries=(sc.e01a, sc.e01a)))
    await refused(svc, InvalidMemoryRequestError, svc.forget(r4, entries=("mem_ent_01A",)))


async def test_organize_dedupes_exact_duplicates_keeping_smallest_id(svc):
    # Two entries with identical content can exist when one was revised into the other.
    r1 = await svc.remember(None, entries=(E("fact", "alpha"), E("fact", "beta")))
    alpha, beta = await svc.entries(r1)
    r2 = await svc.remember(r1, entries=(E("fact", "alpha", entry=beta),))
    assert len(r2.manifest.active) == 2
    r3 = await svc.organize(r2)
    assert [(c.op, c.entry_id, c.reason) for c in r3.changes] == [("deactivate", beta.entry_id, "dedupe")]
    assert (await svc.organize(r3)).ref == r3.ref


async def test_memory_none_with_nothing_worth_saving_returns_none(svc):
    class EmptyPipeline:
        async def extract(self, sources, artifacts, current):
            return ()

    svc.pipeline = EmptyPipeline()
    s = await svc.sources.persist(pc.ContentSource("src_a", "nothing durable"))
    assert await svc.remember(None, sources=(s,), mode="extract") is None
    assert (await counts(svc))["artifact_revisions"] == 0


async def test_sources_are_immutable_and_idempotent(svc):
    a = await svc.sources.persist(pc.ContentSource("src_a", "one", description="d", metadata={"k": [1, 2]}))
    assert await svc.sources.persist(pc.ContentSource("src_a", "one", description="d", metadata={"k": [1, 2]})) == a
    await refused(svc, pc.SourceConflictError, svc.sources.persist(pc.ContentSource("src_a", "two")))
    await refused(svc, ValueError, svc.sources.persist(pc.ContentSource("bad name", "x")))
    await refused(svc, ValueError, svc.sources.persist(pc.ContentSource("src_nan", "x", metadata={"v": float("nan")})))
    assert (await svc.sources.get("src_a")).metadata == {"k": [1, 2]}


async def test_case_variant_ids_are_distinct(open_service):
    from powercontext.canonical import SequentialIds

    svc = await open_service(ids=SequentialIds())
    upper = await svc.sources.persist(pc.ContentSource("src_Alpha", "upper"))
    lower = await svc.sources.persist(pc.ContentSource("src_alpha", "lower"))
    assert upper.content_hash != lower.content_hash

    class CaseIds(SequentialIds):
        names = iter(["mem_ent_Alpha", "mem_ent_alpha"])

        def entry_id(self):
            return next(self.names)

    svc.ids = CaseIds()
    r1 = await svc.remember(None, sources=(upper, lower), entries=(E("fact", "upper", sources=(upper,)), E("fact", "lower", sources=(lower,))))
    assert [e.entry_id for e in r1.manifest.entries] == ["mem_ent_Alpha", "mem_ent_alpha"]
    assert {e.text for e in await svc.entries(r1)} == {"upper", "lower"}
