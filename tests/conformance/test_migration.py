"""Moving a Memory database to another embedding model (issue 33), on both databases,
with the two real bundled models. Decision record 004: the test asserts on the stored
vectors themselves — after the migration each equals the new model's document form of
its entry's text — not on search results that might pass either way."""

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url
from powercontext.canonical import SequentialIds
from powercontext.errors import (
    BackendUnavailableError,
    EmbeddingProfileMismatchError,
    EmbeddingUnavailableError,
    InvalidMemoryRequestError,
    MigrationOvertakenError,
    RevisionConflictError,
)
from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from .test_profiles import dot, same
from .test_vectors import DOCS

E = pc.MemoryEntryInput
MIXED = ["部署前先运行 make check，它会检查 migrations/ 目录下的 SQL 文件。",
         "Релизные сборки подписываются аппаратным ключом команды."]


@pytest.fixture
async def reopen(request, backend_name):
    """Open the database of ``svc`` again with another handle (``embedding`` given)."""
    opened = []

    async def again(svc, embedding):
        if backend_name == "sqlite":
            target = str(svc.backend.path)
        else:
            target = database_url(request.getfixturevalue("oceanbase_url"), svc.backend._params["database"])
        other = await pc.open(target, embedding=embedding)
        opened.append(other)
        return other

    yield again
    for svc in opened:
        await svc.close()


async def _two_memories(svc):
    one = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS[:3] + MIXED))
    one = await svc.forget(one, entries=(await svc.entries(one))[:1], reason="user_requested")
    two = await svc.remember(None, entries=tuple(E("preference", d) for d in DOCS[3:]))
    return one, two


def _stored(svc, entries):
    return {e.entry_version_id: svc.backend.stored_vector(e.entry_version_id) for e in entries}


async def test_a_migration_stores_the_new_models_document_vectors_and_records_its_profile(
        open_service, reopen, minilm, e5):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, two = await _two_memories(svc)
    active = [*await svc.entries(one), *await svc.entries(two)]
    assert len(active) == 6
    before = _stored(svc, active)
    assert all(same(before[e.entry_version_id], minilm.encode([e.text], "document")[0]) for e in active)

    report = await svc.migrate_embedding("e5", progress=False)

    assert report.from_profile == minilm.profile.profile_id and report.to_profile == e5.profile.profile_id
    assert report.memories == {one.ref.artifact_id: 4, two.ref.artifact_id: 2} and report.rows_written == 6
    for entry in active:
        vector = svc.backend.stored_vector(entry.entry_version_id)
        (document,), (query_form,) = e5.encode([entry.text], "document"), e5.encode([entry.text], "query")
        assert same(vector, document) and not same(vector, query_form)
        assert not same(vector, before[entry.entry_version_id])
    forgotten = (await svc.entries(one, state="inactive"))[0]
    assert svc.backend.stored_vector(forgotten.entry_version_id) is None  # head rows only
    assert svc.backend.embedding_profile == e5.profile
    assert svc.policy == AdmissionPolicy.default_for(e5.profile)  # the old model's default followed the model
    # The same handle searches with the new model's query form.
    res = await svc.search("who has to approve schema changes", memories=(one, two), mode="vector", policy=NO_ADMISSION, explain=True)
    (query,) = e5.encode(["who has to approve schema changes"], "query")
    stored = {e.entry_id: svc.backend.stored_vector(e.entry_version_id) for e in active}
    assert res.decisions and all(abs(d.candidate.cosine - dot(query, stored[d.candidate.entry_id])) < 1e-4
                                 for d in res.decisions)
    for memory in (one, two):
        assert (await svc.verify(memory.ref.artifact_id)).ok
    # The database now opens with E5 only.
    again = await reopen(svc, "e5")
    assert again.backend.embedding_profile == e5.profile
    hit = await again.search("数据库迁移", memories=(one,), mode="hybrid")
    assert hit.hits and hit.hits[0].text == MIXED[0]
    with pytest.raises(BackendUnavailableError, match="holds vectors of embedding profile"):
        await reopen(svc, "minilm")
    # A second migration to the same model finds every row equal and writes none.
    assert (await svc.migrate_embedding(e5, progress=False)).rows_written == 0


async def test_a_handle_opened_before_the_migration_neither_searches_nor_writes(open_service, reopen, minilm, e5):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, _ = await _two_memories(svc)
    stale = await reopen(svc, minilm)
    assert (await stale.search("is the staging cluster wiped every Sunday", memories=(one,), mode="hybrid")).hits
    await svc.migrate_embedding(e5, progress=False)
    head = await svc.head(one.ref.artifact_id)
    for mode in ("hybrid", "vector", "fts"):
        with pytest.raises(EmbeddingProfileMismatchError, match="reopen it with the new embedding"):
            await stale.search("is the staging cluster wiped every Sunday", memories=(head,), mode=mode)
    with pytest.raises(EmbeddingProfileMismatchError):
        await stale.remember(head, entries=(E("fact", "Old vectors must not enter the new projection."),))
    assert (await svc.head(one.ref.artifact_id)).ref == head.ref  # nothing was written


class FailingAfter:
    """The real E5 model, made to fail after ``n`` embedding calls (a model crash in
    the middle of the migration's batches)."""

    def __init__(self, model, n):
        self.model, self.n, self.profile = model, n, model.profile

    async def embed(self, texts, role="document"):
        self.n -= 1
        if self.n < 0:
            raise EmbeddingUnavailableError("model process died")
        return await self.model.embed(texts, role=role)


class WritingMeanwhile:
    """The real E5 model; while it embeds, another writer commits to the database (on
    each of the first ``times`` embedding calls: the pass, then each catch-up)."""

    def __init__(self, model, writer, memory, times=1):
        self.model, self.profile, self.writer, self.memory, self.times = model, model.profile, writer, memory, times
        self.written = []

    async def embed(self, texts, role="document"):
        if len(self.written) < self.times:
            text = f"Written mid-migration, number {len(self.written)}."
            await self.writer.remember(await self.writer.head(self.memory), entries=(E("fact", text),))
            self.written.append(text)
        return await self.model.embed(texts, role=role)


async def test_a_failed_or_overtaken_migration_leaves_the_old_models_vectors(open_service, reopen, minilm, e5):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, two = await _two_memories(svc)
    active = [*await svc.entries(one), *await svc.entries(two)]
    before = _stored(svc, active)

    def unchanged():
        assert _stored(svc, active) == before
        assert svc.backend.embedding_profile == minilm.profile
        assert svc.policy == AdmissionPolicy.default_for(minilm.profile)

    with pytest.raises(EmbeddingUnavailableError):
        await svc.migrate_embedding(FailingAfter(e5, 1), batch_size=2, progress=False)
    unchanged()
    other = await reopen(svc, minilm)
    # A writer that commits again during every catch-up: after MAX_CATCH_UPS retries the
    # migration gives up with a typed error, having written nothing.
    relentless = WritingMeanwhile(e5, other, one.ref.artifact_id, times=99)
    with pytest.raises(MigrationOvertakenError, match="caught up 5 times and was overtaken again"):
        await svc.migrate_embedding(relentless, progress=False)
    assert issubclass(MigrationOvertakenError, RevisionConflictError) and len(relentless.written) == 6
    unchanged()
    # Inside the transaction: the second Memory's vectors miss one entry, refused after
    # the first Memory's rows were rewritten; the rollback keeps every old vector.
    refs = [(await svc.head(m.ref.artifact_id)).ref for m in (two, one)]
    entries = {ref: await svc.entries(ref) for ref in refs}
    vectors = {ref: {e.entry_version_id: (svc.backend.expected_embedding_hash(e.entry_content_hash, e5.profile),
                                          e5.encode([e.text], "document")[0]) for e in entries[ref]}
               for ref in refs}
    del vectors[refs[1]][entries[refs[1]][0].entry_version_id]
    with pytest.raises(InvalidMemoryRequestError, match="needs a vector for every active entry"):
        await svc.backend.migrate_embedding(e5.profile, vectors)
    everything = [e for ref in refs for e in entries[ref]]
    assert len(everything) == 12  # 4 + 2, and the relentless writer's 6
    assert all(same(svc.backend.stored_vector(e.entry_version_id), minilm.encode([e.text], "document")[0])
               for e in everything)
    assert svc.backend.embedding_profile == minilm.profile
    assert (await svc.search("is the staging cluster wiped every Sunday", memories=refs, mode="hybrid")).hits  # still searchable, old model


async def test_a_migration_catches_up_with_what_a_writer_committed_during_the_pass(open_service, reopen, minilm, e5):
    """Issue 43 item 9: a commit during the embedding pass used to fail the whole
    migration at its end. The migration now re-embeds only what changed and retries."""
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, two = await _two_memories(svc)
    writer = WritingMeanwhile(e5, await reopen(svc, minilm), one.ref.artifact_id)
    report = await svc.migrate_embedding(writer, progress=False)
    assert (report.catch_ups, report.caught_up_texts) == (1, 1) and "caught up 1×" in str(report)
    heads = [await svc.head(m.ref.artifact_id) for m in (one, two)]
    active = [e for h in heads for e in await svc.entries(h)]
    assert writer.written[0] in {e.text for e in active} and len(active) == 7
    for entry in active:  # the writer's entry too holds E5's vector, not MiniLM's
        assert same(svc.backend.stored_vector(entry.entry_version_id), e5.encode([entry.text], "document")[0])
    assert report.memories == {one.ref.artifact_id: 5, two.ref.artifact_id: 2}
    for head in heads:
        assert (await svc.verify(head.ref.artifact_id)).ok


async def test_bad_migrations_are_refused_before_any_embedding(open_service, minilm):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    await _two_memories(svc)
    for bad, message in ((None, "the model to move to"), ("nonexistent-model", "unknown embedding"),
                         (5, "embedding must be")):
        with pytest.raises(InvalidMemoryRequestError, match=message):
            await svc.migrate_embedding(bad, progress=False)
    for size in (0, -1, 10**9, 2.5, True, "64"):
        with pytest.raises(InvalidMemoryRequestError, match="batch_size"):
            await svc.migrate_embedding("e5", batch_size=size, progress=False)
    plain = await open_service(ids=SequentialIds())  # full text only: nothing to migrate
    with pytest.raises(pc.CapabilityNotSupportedError, match="no vector projection"):
        await plain.migrate_embedding("e5", progress=False)
