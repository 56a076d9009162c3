"""Server limits (issue 15): statements that bind per-entry values are chunked under
the database's variable limit, and a statement larger than OceanBase's
``max_allowed_packet`` is refused with a typed error naming the limit, before anything
is written. The chunk size and the packet limit are forced small here so a few entries
prove what 100k entries would hit."""

from __future__ import annotations

import contextlib
import uuid

import pytest

import powercontext as pc
from powercontext.backends.oceanbase import limits as oceanbase_limits
from powercontext.backends.seekdb.urls import database_url, drop_database

from ..support import RecordingCursor, sql

E = pc.MemoryEntryInput


async def test_per_entry_statements_are_chunked(svc, monkeypatch):
    backend = svc.backend
    monkeypatch.setattr(backend, "in_list_size", 3)
    bound = []
    real = backend._rows

    def counting(tx, statement, params=()):
        bound.append(len(params))
        return real(tx, statement, params)

    monkeypatch.setattr(backend, "_rows", counting)
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(20)))
    rev = await svc.remember(rev, entries=tuple(E("fact", f"later fact {i} about the cache") for i in range(7)))
    assert len(await svc.entries(rev)) == 27
    retrieval, used, _ = await svc.retrieve("build cache", memories=(rev,), limit=8, mode="fts")
    assert len(retrieval.channels["fts"]) == min(27, svc.policy.pool_size(8))
    assert bound and max(bound) <= 4, max(bound)  # 3 values, plus at most one other parameter


async def test_a_commit_writes_its_projection_a_batch_at_a_time(svc, monkeypatch):
    """A commit's version rows go in one batched insert, and its head rows (new,
    replaced or gone) one in-list at a time. A 10k-entry remember() on OceanBase was
    ~30,000 statements: an UPDATE and an INSERT per head row, an INSERT per version."""
    backend = svc.backend
    monkeypatch.setattr(backend, "in_list_size", 4)
    puts, gone, versions = [], [], []
    for name, log in (("_put_projections", puts), ("_delete_projections", gone), ("_insert_versions", versions)):
        real = getattr(backend, name)
        monkeypatch.setattr(backend, name, lambda tx, *args, _real=real, _log=log, **options:
                            _log.append(len(args[-1])) or _real(tx, *args, **options))
    names = "alpha bravo charlie delta echo foxtrot golf hotel india juliet".split()
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {name} about the build cache") for name in names))
    assert (puts, versions) == ([4, 4, 2], [10])
    first = sorted(await svc.entries(rev), key=lambda e: e.text)
    rev = await svc.forget(rev, first[:5])
    assert gone == [4, 1]
    rev = await svc.reactivate(rev, first[:3])  # versions the commit did not write: read back
    assert puts[3:] == [3] and versions == [10]
    renamed = first[7].text.replace("about the", "about a renamed")
    rev = await svc.patch(rev, first[7], "about the", "about a renamed")  # its head row is replaced
    assert puts[4:] == [1] and versions == [10, 1]
    active = {e.text for e in await svc.entries(rev)}
    assert active == {e.text for e in first[:3] + first[5:7] + first[8:]} | {renamed}
    hits = (await svc.search("renamed", memories=(rev,), mode="fts", limit=10)).hits
    assert [h.text for h in hits] == [renamed]
    hits = (await svc.search("build cache", memories=(rev,), mode="fts", limit=10)).hits
    assert {h.text for h in hits} == active
    for name in names:  # each full-text row is its own entry's, inserted, reactivated or replaced
        hits = (await svc.search(name, memories=(rev,), mode="fts", limit=10)).hits
        assert [h.text for h in hits] == [t for t in active if f" {name} " in t]
    assert (await svc.verify(rev)).ok


async def test_a_one_entry_append_reads_its_base_once_and_its_commit_reads_head_and_base_together(svc, monkeypatch):
    """Every statement is a round trip on OceanBase: remember() reads its base (head and
    Revision row) in one statement of one read transaction, where it was two of each,
    and the commit re-reads both in one statement. A stale base is still a conflict."""
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(20)))
    backend = svc.backend
    real = backend._transaction
    transactions = []

    @contextlib.contextmanager
    def recording(write):
        log = []
        transactions.append((write, log))
        with real(write) as tx:
            yield RecordingCursor(tx, log)

    monkeypatch.setattr(backend, "_transaction", recording)
    rev = await svc.remember(rev, entries=(E("fact", "one more fact about the build cache"),))
    assert [write for write, _ in transactions] == [False, True]
    (_, base_read), (_, commit) = transactions
    assert len(base_read) == 1 and "artifact_heads" in base_read[0][0] and "artifact_revisions" in base_read[0][0]
    head_reads = [s for s, _, _ in commit if s.lstrip().upper().startswith("SELECT") and "artifact_heads" in s]
    assert len(head_reads) == 1 and "artifact_revisions" in head_reads[0], head_reads
    assert not [s for s, _, _ in commit if s.lstrip().upper().startswith("SELECT") and "FROM artifact_revisions" in s
                and "artifact_heads" not in s]
    assert (await svc.head(rev.artifact_id)).ref == rev.ref and transactions[-1][0] is False
    stale = pc.ArtifactRef(rev.artifact_id, rev.revision - 1)
    with pytest.raises(pc.RevisionConflictError, match=f"not the head \\(Revision {rev.revision}\\)"):
        await svc.remember(stale, entries=(E("fact", "late"),))
    with pytest.raises(pc.ArtifactNotFoundError):
        await svc.remember(pc.ArtifactRef("mem_art_missing", 1), entries=(E("fact", "x"),))
    monkeypatch.undo()
    assert (await svc.verify(rev)).ok and len(await svc.entries(rev)) == 21


async def test_a_statement_over_max_allowed_packet_is_refused_naming_it(oceanbase_url):
    database = "pc_" + uuid.uuid4().hex[:16]
    svc = await pc.open(database_url(oceanbase_url, database))
    try:
        server_limit = svc.backend.max_allowed_packet
        assert server_limit >= 1 << 20  # read from the server
        svc.backend.max_allowed_packet = 40_000
        with pytest.raises(pc.ServerLimitError, match="max_allowed_packet") as info:
            await svc.sources.persist(pc.ContentSource("src_big", "x" * 50_000))
        assert info.value.limit == "max_allowed_packet" and info.value.value == 40_000
        assert len(str(info.value).splitlines()) == 1
        with pytest.raises(pc.SourceNotFoundError):
            await svc.sources.get("src_big")
        svc.backend.max_allowed_packet = 12_000  # the row of one 8 KB entry is over it
        with pytest.raises(pc.ServerLimitError, match="max_allowed_packet"):
            await svc.remember(None, entries=(E("fact", "short"), E("fact", "y " * 4000)))
        svc.backend.max_allowed_packet = server_limit
        assert await svc.memories() == ()  # the whole commit rolled back
    finally:
        await svc.close()
        drop_database(oceanbase_url, database)


async def test_a_long_change_list_is_stored_in_pieces_under_the_packet_limit(svc):
    """A Revision's change list is one stored value per ``head_piece`` characters, not
    one value for the whole batch: a 100k-entry remember() has a 16 MB change list,
    which OceanBase's 16 MB max_allowed_packet refused. Here the pieces are forced small
    and (on OceanBase) the packet limit is lowered below the whole change list."""
    backend = svc.backend
    backend.chunk_sizes = dict(head_piece=2_000)
    entries = tuple(E("fact", f"fact {i} about the release checklist") for i in range(150))
    if backend.name == "oceanbase":
        server_limit = backend.max_allowed_packet
        backend.max_allowed_packet = 20_000  # the change list of 150 entries is ~25 KB
    try:
        rev = await svc.remember(None, entries=entries)
    finally:
        if backend.name == "oceanbase":
            backend.max_allowed_packet = server_limit
    (root,) = (await sql(svc, "SELECT content FROM artifact_revisions"))[0]
    assert root.count("+") >= len(rev.content.canonical_text().split(',"manifest"')[0]) // 2_000
    target = backend.path if backend.name == "sqlite" else backend.url
    async with await pc.open(target) as fresh:  # no cache: reassembled from the pieces
        again = await fresh.revision(rev.ref)
        assert again.content == rev.content and again.content_hash == rev.content_hash
        assert [len(c.changes) for c in await fresh.changes(rev, since_revision=0)] == [150]
        assert len(await fresh.entries(rev)) == 150
        assert (await fresh.verify(rev)).ok


async def test_the_packet_estimate_counts_escaped_characters(oceanbase_url):
    """pymysql sends a string quoted and escaped: a JSON change list is ~12 % quotes,
    each sent as two bytes. An estimate of the raw length let a 100k-entry commit past
    the check, and the server refused it with a raw 'packet bigger than
    max_allowed_packet'. The estimate is checked against the exact bytes pymysql
    builds, and a statement that is only over the limit once escaped is refused."""
    database = "pc_" + uuid.uuid4().hex[:16]
    svc = await pc.open(database_url(oceanbase_url, database))
    try:
        backend = svc.backend
        values = ['{"a":"b","c":null}' * 50, "it's a \\path\\ \n\r\x00\x1a", "é ü 漢字 " * 30, b"\x00\xff" * 40, 7, None]
        sql_text = "SELECT %s, %s, %s, %s, %s, %s"

        def exact():
            with backend._transaction(write=False) as tx:
                return len(tx.mogrify(sql_text, values).encode("utf-8"))

        wire = backend._executor.submit(exact).result()
        checked = []
        backend.max_allowed_packet = 10**9
        real = oceanbase_limits.PACKET_MARGIN
        try:
            oceanbase_limits.PACKET_MARGIN = 0
            for limit in range(wire - 40, wire + 100):
                backend.max_allowed_packet = limit
                try:
                    backend._check_packet(sql_text, values)
                    checked.append(limit)
                except pc.ServerLimitError:
                    pass
        finally:
            oceanbase_limits.PACKET_MARGIN = real
        assert checked and min(checked) >= wire  # never lets through what the server would refuse
        assert min(checked) - wire <= 64  # and close to it (placeholders, numbers and NULL are estimated)
        # a Source under the limit by its length but over it once its quotes are escaped
        backend.max_allowed_packet = 40_000
        with pytest.raises(pc.ServerLimitError, match="max_allowed_packet"):
            await svc.sources.persist(pc.ContentSource("src_quotes", '"' * 20_000))
        with pytest.raises(pc.SourceNotFoundError):
            await svc.sources.get("src_quotes")
    finally:
        await svc.close()
        drop_database(oceanbase_url, database)


async def test_verify_reads_each_revision_once_not_once_per_version(svc, monkeypatch):
    """verify() checked each version's link by re-reading the Revision that created it
    and scanning its change list: for 100k versions of one remember(), 100k reads of a
    100k-entry Revision and 5·10⁹ comparisons. Each Revision is now read once and its
    changes indexed; an unchanged manifest item is hashed once, not once per Revision."""
    from powercontext.backends import verification

    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the cache") for i in range(40)))
    for i in range(3):
        rev = await svc.remember(rev, entries=(E("fact", f"later fact {i}"),))
    backend = svc.backend
    reads, hashes = [], []
    real_revision, real_hash = backend._revision, verification.version_content_hash
    monkeypatch.setattr(backend, "_revision", lambda tx, ref, check="all": reads.append(ref) or real_revision(tx, ref, check))
    monkeypatch.setattr(verification, "version_content_hash", lambda v: hashes.append(v) or real_hash(v))
    backend._identity_cache.clear()
    result = await svc.verify(rev)
    assert result.ok and result.versions == 43 and result.revisions == 4
    assert sorted(r.revision for r in reads) == [1, 2, 3, 4]
    assert len(hashes) <= 2 * 43, len(hashes)  # one per link, one per distinct manifest item


async def test_the_analyzer_migration_reads_versions_by_in_list(open_service, monkeypatch):
    """The analyzer migration read each head row's version with its own statement: 100k
    round trips for a 100k-entry Memory. It reads them one in-list at a time."""
    svc = await open_service(analyzer="v1")
    rev = await svc.remember(None, entries=tuple(E("fact", f"caching builds {i} times") for i in range(10)))
    backend = svc.backend
    monkeypatch.setattr(backend, "in_list_size", 3)
    reads = []
    real = backend._read_versions
    monkeypatch.setattr(backend, "_read_versions", lambda tx, ids: reads.append(len(ids)) or real(tx, ids))
    assert await svc.rebuild_projections(analyzer="v2") == {rev.artifact_id: 10}
    assert reads == [3, 3, 3, 1]
    hits = (await svc.search("cached build", memories=(rev,), mode="fts")).hits  # v2 stems both
    assert len(hits) == 8 and (await svc.verify(rev)).ok


async def test_a_head_larger_than_the_revision_cache_is_still_served_from_it(svc, monkeypatch):
    """A 100k-entry head Revision (~95 MB) is over the 64 MB cache budget: it was never
    kept, so every head(), commit and search re-verified the whole manifest (11 s each
    on OceanBase at 100k). The budget is forced below one 50-entry Revision here."""
    backend = svc.backend
    monkeypatch.setattr(backend.revision_cache, "max_bytes", 1_000)
    verified = []
    real = backend._verify_revision
    monkeypatch.setattr(backend, "_verify_revision", lambda tx, ref, row: verified.append(ref.revision) or real(tx, ref, row))
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(50)))
    rev = await svc.remember(rev, entries=(E("fact", "one more fact about the build cache"),))
    for _ in range(2):
        assert (await svc.head(rev.artifact_id)).ref == rev.ref
        assert (await svc.search("build cache", memories=(rev,), mode="fts")).hits
    rev = await svc.remember(rev, entries=(E("fact", "and another"),))
    assert verified == []  # every commit's base and every read of the head: from the cache
    assert len(await svc.entries(rev)) == 52  # reads Revisions 1 and 2 (their versions' creators)
    assert (await svc.search("build cache", memories=(rev,), mode="fts")).hits
    assert (await svc.head(rev.artifact_id)).ref == rev.ref
    assert sorted(verified) == [1, 2]  # the older ones did not push the head out
    assert backend.revision_cache.nbytes <= 1_000 and backend.revision_cache.oversize_bytes > 1_000


async def test_entries_reads_the_version_chains_by_in_list(svc, monkeypatch):
    """The first entries() of a Memory verified each version's chain with one statement
    per entry: 100k round trips (125 s on OceanBase) for a 100k-entry Memory."""
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the cache") for i in range(10)))
    rev = await svc.remember(rev, entries=(E("fact", "one more fact about the cache"),))
    (revised,) = [e for e in await svc.entries(rev) if e.text == "fact 3 about the cache"]
    rev = await svc.patch(rev, revised, "fact 3 about", "fact 3, revised, about")
    backend = svc.backend
    monkeypatch.setattr(backend, "in_list_size", 3)
    one, chains = [], []
    real_one, real_rows = backend._read_entry_versions, backend._rows
    monkeypatch.setattr(backend, "_read_entry_versions", lambda tx, a, e: one.append(e) or real_one(tx, a, e))

    def rows(tx, statement, params=()):
        found = real_rows(tx, statement, params)
        if "FROM memory_entry_versions WHERE memory_artifact_id = ? AND entry_id IN" in statement:
            chains.append((len(params) - 1, len(found)))
        return found

    monkeypatch.setattr(backend, "_rows", rows)
    backend._identity_cache.clear()
    active = await svc.entries(rev)
    assert len(active) == 11 and "fact 3, revised, about the cache" in {e.text for e in active}
    assert one == []  # no statement per entry
    # 11 entries in in-lists of 3; the revised entry's chain has 2 rows
    assert sorted(chains) == [(2, 2), (3, 3), (3, 3), (3, 4)], chains


async def test_the_vector_completeness_check_encodes_the_profile_once_not_per_row(open_service, minilm, monkeypatch):
    """The first vector or hybrid search after a reopen checks the embedding hash of
    every head row; it encoded the profile as canonical JSON once or twice per row:
    98 % of that search (4.4 s at 20k entries on SQLite, ~10 s at 100k on OceanBase)."""
    from powercontext import canonical
    from powercontext.backends import validation

    svc = await open_service(embedding=minilm)
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(30)))
    backend = svc.backend
    backend._invalidate_completeness(rev.artifact_id)
    for cached in (getattr(validation, name, None) for name in ("_embedding_hasher", "_embedding_hash")):
        if cached is not None:
            cached.cache_clear()  # as in a new process
    encoded = []
    real = canonical.canonical_bytes
    monkeypatch.setattr(canonical, "canonical_bytes", lambda value: encoded.append(value) or real(value))
    assert await backend.vector_complete((rev.ref,))
    assert len(encoded) <= 2, len(encoded)  # the profile's template and its one check
    retrieval, _, _ = await svc.retrieve("build cache", memories=(rev,), limit=8, mode="vector")
    assert len(retrieval.channels["vector"]) == 30
