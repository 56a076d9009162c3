"""svc.patch on every database: one unique match revises, everything else refuses
and leaves the database byte-identical (decision record 004, P2)."""

import asyncio

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds
from powercontext.memory.patching import parse_patch_reason

from ..support import counts
from .scenario import ENTRY_02B, revision_one


async def test_a_unique_match_revises_the_entry_keeping_its_identity_and_evidence(svc):
    sc = await revision_one(svc)
    note = await svc.sources.persist(pc.ContentSource("src_user_note", "Prefer make docs-test for docs-only edits."))
    rev2 = await svc.patch(sc.r1, sc.e02b, "; run make check", "; prefer make docs-test for documentation-only changes; run make check",
                           reason="user_correction", sources=(note,))
    assert rev2.ref == pc.ArtifactRef(sc.r1.artifact_id, 2)
    (change,) = rev2.changes
    offset = ENTRY_02B.index("; run make check")
    assert (change.op, change.entry_id, change.from_entry_version_id) == ("revise", sc.e02b.entry_id, sc.e02b.entry_version_id)
    assert change.reason == f"patch offset={offset} length=16 delta=+54: user_correction"
    note_ = parse_patch_reason(change.reason)
    assert (note_.offset, note_.length, note_.delta, note_.reason) == (offset, 16, 54, "user_correction")
    new = await svc.entry(rev2, sc.e02b.entry_id)
    assert new.text == ("Validation convention: run make test for routine code changes; prefer make docs-test for "
                        "documentation-only changes; run make check before review.")
    assert len(new.text) - len(ENTRY_02B) == 54
    assert (new.version, new.previous_version_id, new.entry_version_id) == (2, sc.e02b.entry_version_id, change.to_entry_version_id)
    assert [s.name for s in new.sources] == ["src_agents_md", "src_makefile", "src_user_note"]
    assert rev2.lineage.sources == (note.ref,)
    # the other entries are untouched, and the old version is still citable
    assert {e.entry_id: e.entry_version_id for e in await svc.entries(rev2) if e.entry_id != sc.e02b.entry_id} == {
        sc.e01a.entry_id: sc.e01a.entry_version_id, sc.e03c.entry_id: sc.e03c.entry_version_id}
    assert (await svc.expand((await svc.cite(sc.r1, sc.e02b.entry_id, sc.e02b.entry_version_id),)))[0].text == ENTRY_02B
    # the entry id is enough: the version is read from the head the CAS guards
    rev3 = await svc.patch(rev2, sc.e02b.entry_id, "before review", "before asking for review")
    assert rev3.changes[0].reason == f"patch offset={len(new.text) - len('before review.')} length=13 delta=+11"
    assert [v.version for v in await svc.lineage(rev3, sc.e02b.entry_id)] == [1, 2, 3]


async def test_refusals_write_nothing(svc):
    """condition → typed error, the database unchanged (the refusal table)."""
    sc = await revision_one(svc)
    big = await svc.remember(sc.r1, entries=(pc.MemoryEntryInput("fact", "Z" * 8000 + " tail marker"),))
    big_entry = next(e for e in await svc.entries(big) if e.text.startswith("ZZZ"))
    rev3 = await svc.forget(big, entries=(sc.e03c,))
    head = rev3
    cases = [
        ("absent", (sc.e02b.entry_id, "make docs-test", "x"), pc.PatchMatchError, "does not occur"),
        ("ambiguous", (sc.e02b.entry_id, "make ", "gmake "), pc.PatchMatchError, "occurs 2 times"),
        ("overlapping", (big_entry.entry_id, "ZZ", "Y"), pc.PatchMatchError, "occurs 7999 times"),
        ("empty old_string", (sc.e02b.entry_id, "", "x"), pc.InvalidMemoryRequestError, "old_string is empty"),
        ("identical strings", (sc.e02b.entry_id, "make test", "make test"), pc.InvalidMemoryRequestError, "identical"),
        ("not a string", (sc.e02b.entry_id, "make test", None), pc.InvalidMemoryRequestError, "new_string must be a string"),
        ("patched text over 8192 bytes", (big_entry.entry_id, "tail marker", "t" * 200), pc.InvalidMemoryRequestError, "would be 8201 UTF-8 bytes"),
        ("patch empties the entry", (sc.e01a.entry_id, sc.e01a.text, "  "), pc.InvalidMemoryRequestError, "forget()"),
        ("normalizes to the same text", (sc.e01a.entry_id, "build.", "build.   "), pc.InvalidMemoryRequestError, "changes nothing"),
        ("inactive entry", (sc.e03c.entry_id, "site/", "docs/"), pc.InvalidMemoryRequestError, "reactivate() it first"),
        ("unknown entry", ("mem_ent_nope", "a", "b"), pc.MemoryEntryNotFoundError, "not in"),
        ("wrong entry type", (42, "a", "b"), pc.InvalidMemoryRequestError, "entry id or a MemoryEntryVersion"),
    ]
    before = await counts(svc)
    for label, (entry, old, new), error, words in cases:
        with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")) as caught:
            await svc.patch(head, entry, old, new)
        if error is pc.PatchMatchError:
            assert caught.value.count == {"absent": 0, "ambiguous": 2, "overlapping": 7999}[label], label
        assert await counts(svc) == before, label
    assert (await svc.head(head.artifact_id)).ref == head.ref
    # the limit is on the patched text, not the fragment: a growth that fits passes
    fits = await svc.patch(head, big_entry.entry_id, "tail marker", "t" * 190)
    assert len((await svc.entry(fits, big_entry.entry_id)).text.encode()) == 8191
    # an exact but stale MemoryEntryVersion object is refused, on the new head too
    moved = await svc.patch(fits, sc.e02b.entry_id, "make check", "make lint")
    before = await counts(svc)
    with pytest.raises(pc.InvalidMemoryRequestError, match="is stale"):
        await svc.patch(moved, sc.e02b, "make test", "make tests")
    # a reason that does not fit next to the patch record is refused, not cut
    with pytest.raises(pc.InvalidMemoryRequestError, match="at most 4[0-9]{2}"):
        await svc.patch(moved, sc.e01a.entry_id, "uv", "pip", reason="r" * 500)
    assert await counts(svc) == before


async def test_a_stale_memory_is_a_revision_conflict(svc):
    sc = await revision_one(svc)
    rev2 = await svc.patch(sc.r1, sc.e01a.entry_id, "uv", "pixi")
    before = await counts(svc)
    with pytest.raises(pc.RevisionConflictError, match="not the head"):
        await svc.patch(sc.r1, sc.e02b.entry_id, "make check", "make lint")
    assert await counts(svc) == before
    assert (await svc.head(sc.r1.artifact_id)).ref == rev2.ref


async def test_concurrent_patches_of_one_head_one_wins(open_service):
    """Two writers patch the same head through two services on one database: the head
    compare-and-swap lets exactly one commit; the other gets RevisionConflictError."""
    first = await open_service(ids=SequentialIds())
    sc = await revision_one(first)
    target = first.backend.path if first.backend.name == "sqlite" else first.backend.url
    second = await pc.open(target, ids=SequentialIds(tag="two"))
    try:
        results = await asyncio.gather(
            first.patch(sc.r1, sc.e01a.entry_id, "uv", "pixi"),
            second.patch(sc.r1, sc.e01a.entry_id, "Hatchling", "setuptools"),
            return_exceptions=True,
        )
    finally:
        await second.close()
    won = [r for r in results if isinstance(r, pc.MemoryRevision)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1 and isinstance(lost[0], pc.RevisionConflictError), results
    head = await first.head(sc.r1.artifact_id)
    assert head.revision == 2 and len(await first.lineage(head, sc.e01a.entry_id)) == 2


async def test_a_patch_re_embeds_the_stored_vector(open_service, minilm):
    """Search would find the patched words through FTS even if re-embedding were
    skipped (decision record 004), so check the STORED vector itself."""
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    sc = await revision_one(svc)
    old_vector = svc.backend.stored_vector(sc.e01a.entry_version_id)
    rev2 = await svc.patch(sc.r1, sc.e01a, "uses uv to manage dependencies", "uses Poetry to manage dependencies")
    new = await svc.entry(rev2, sc.e01a.entry_id)
    stored = svc.backend.stored_vector(new.entry_version_id)
    expected = minilm.encode([new.text])[0]
    assert old_vector is not None and stored is not None
    assert max(abs(a - b) for a, b in zip(stored, expected)) < 1e-5
    assert sum(a * b for a, b in zip(stored, old_vector)) < 0.999  # it really moved
    assert svc.backend.stored_vector(sc.e01a.entry_version_id) is None  # no stale vector survives
    assert await svc.backend.vector_complete((rev2.ref,))
