"""Bad input at the public boundary gets the library's typed error, on both databases,
and leaves nothing written (issue 13, defects 4, 5, 7, 8, 9)."""

from __future__ import annotations

import os
import uuid

import pytest

import powercontext as pc
from powercontext.backends.driver import database_identifier
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.memory.arguments import MAX_QUERY_BYTES, MAX_QUERY_TERMS
from powercontext.redaction import redact, redact_text
from tests.support import counts

E = pc.MemoryEntryInput


def _deep(n: int) -> dict:
    root = cur = {}
    for _ in range(n):
        cur["a"] = {}
        cur = cur["a"]
    return root


async def _typed(awaitable_or_call, error=pc.InvalidMemoryRequestError):
    with pytest.raises(error) as info:
        result = awaitable_or_call()
        if hasattr(result, "__await__"):
            await result
    assert len(str(info.value).splitlines()) == 1
    return info.value


async def test_untyped_errors_of_the_probe_are_typed_now(svc):
    rev = await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))
    before = await counts(svc)
    aid = rev.artifact_id
    cases = [
        lambda: svc.remember(rev, entries=(E("fact", "lone \ud800 surrogate"),)),
        lambda: svc.remember(rev, entries=(E("fact", "ok", reason="bad \udfff"),)),
        lambda: svc.remember(rev, entries=None),
        lambda: svc.remember(rev, entries=(E("fact", "x", sources=None),)),
        lambda: svc.search("cache", memories=None),
        lambda: svc.search("cache \udc80", memories=(rev,)),
        lambda: svc.forget(rev, entries=None),
        lambda: svc.sources.persist(pc.ContentSource("src_meta", "c", metadata=[1, 2])),
        lambda: svc.sources.persist(pc.ContentSource("src_deep", "c", metadata=_deep(5000))),
        lambda: svc.sources.persist(pc.ContentSource("src_sur", "c\ud800")),
        lambda: svc.sources.persist(pc.ContentSource("src_key", "c", metadata={1: "x"})),
        lambda: svc.cite(rev, 5, "v"),
        lambda: pc.ArtifactRef(aid, 2**64),
        lambda: pc.ArtifactRef(["x"], 1),
        lambda: pc.ArtifactRef(aid, "1"),
        lambda: pc.ArtifactRef(aid, 1.0),
        lambda: pc.ArtifactRef(aid, True),
        lambda: pc.ArtifactRef(aid, -1),
    ]
    for case in cases:
        await _typed(case)
    assert await counts(svc) == before  # nothing half-written


async def test_query_work_is_capped_with_a_typed_error(svc):
    rev = await svc.remember(None, entries=(E("fact", "alpha beta"),))
    error = await _typed(lambda: svc.search("alpha " * 200_000, memories=(rev,)))
    assert f"limit is {MAX_QUERY_BYTES}" in str(error)
    many = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS + 1))
    error = await _typed(lambda: svc.search(many, memories=(rev,)))
    assert f"limit is {MAX_QUERY_TERMS}" in str(error)
    # At the limits a query still works.
    ok = " ".join(["alpha"] + [f"w{i}" for i in range(MAX_QUERY_TERMS - 1)])
    result = await svc.search(ok, memories=(rev,), mode="fts", explain=True)
    assert [d.candidate.text for d in result.decisions] == ["alpha beta"]


async def test_a_moved_head_gives_one_error_type_wherever_it_is_noticed(svc, monkeypatch):
    rev = await svc.remember(None, entries=(E("fact", "the build cache"),))
    await svc.remember(rev, entries=(E("fact", "another"),))
    # A search notices it in its read transaction (its only head check) …
    with pytest.raises(pc.NotHeadError) as info:
        await svc.search("build", memories=(rev,))
    # … and callers that catch either RFC error keep working.
    assert isinstance(info.value, pc.CapabilityNotSupportedError) and isinstance(info.value, pc.RevisionConflictError)
    # A write notices it when it reads its base …
    with pytest.raises(pc.RevisionConflictError, match="is not the head"):
        await svc.remember(rev, entries=(E("fact", "late"),))
    # … and in its commit, when the head moved after the base was read.
    async def stale_base(artifact_id, check="all", expected=None):
        return expected, await svc.backend.load_revision(pc.ArtifactRef(artifact_id, expected), check)
    monkeypatch.setattr(svc.backend, "load_head", stale_base)
    with pytest.raises(pc.RevisionConflictError, match="reread the head and retry the operation"):
        await svc.remember(rev, entries=(E("fact", "late"),))
    monkeypatch.undo()
    head = await svc.head(rev.artifact_id)  # neither late write left anything
    assert head.revision == 2 and sorted(e.text for e in await svc.entries(head)) == ["another", "the build cache"]


def test_database_names_are_validated_once_for_every_ddl_path():
    assert database_identifier("pc_01") == "`pc_01`"
    for bad in ("a` ; DROP DATABASE `victim_db", "", "a-b", "x" * 65, None, "a b", "é"):
        with pytest.raises(pc.InvalidMemoryRequestError):
            database_identifier(bad)


def test_drop_database_injection_drops_nothing(oceanbase_url):
    victim = "victim_" + uuid.uuid4().hex[:8]
    svc_url = database_url(oceanbase_url, victim)
    import asyncio

    async def make():
        svc = await pc.open(svc_url)
        await svc.close()

    asyncio.run(make())
    try:
        with pytest.raises(pc.InvalidMemoryRequestError):
            drop_database(oceanbase_url, f"a` ; DROP DATABASE `{victim}")
        from powercontext.backends.oceanbase.backend import parse_url
        from powercontext.backends.driver import connect

        p = parse_url(database_url(oceanbase_url, "x"))
        con = connect(host=p["host"], port=p["port"], user=p["user"], password=p["password"], autocommit=True)
        try:
            with con.cursor() as cur:
                cur.execute("SHOW DATABASES")
                assert victim in {r[0] for r in cur.fetchall()}
                # Multi-statements are off on every connection the library opens.
                with pytest.raises(Exception) as info:
                    cur.execute(f"SELECT 1 ; DROP DATABASE `{victim}`")
                assert info.value.args[0] == 1149
                cur.execute("SHOW DATABASES")
                assert victim in {r[0] for r in cur.fetchall()}
        finally:
            con.close()
    finally:
        drop_database(oceanbase_url, victim)


BAD_URLS = [
    "oceanbase://root:S3cretPW@127.0.0.1:1/bad-name",
    "oceanbase://root:S3cretPW@127.0.0.1:1/pc",
    "oceanbase://root:S3cretPW@127.0.0.1:99999/pc",
    "oceanbase://root:S3cretPW@[::1/pc",
    "mysql://root:S3cretPW@127.0.0.1:1/a;b",
    "postgres://root:S3cretPW@127.0.0.1/x",
]


@pytest.mark.parametrize("url", BAD_URLS)
async def test_passwords_never_appear_in_errors(url):
    with pytest.raises(pc.PowerContextError) as info:
        await pc.open(url)
    text = str(info.value) + repr(info.value)
    assert "S3cretPW" not in text and len(str(info.value).splitlines()) == 1


async def test_password_is_redacted_in_reprs_and_the_message_of_any_library_error(oceanbase_url):
    assert redact("oceanbase://root:S3cretPW@h:1/db") == "oceanbase://root:***@h:1/db"
    assert redact("oceanbase://root@h:1/db") == "oceanbase://root@h:1/db"
    assert "S3cret" not in redact_text("see 'mysql://u:S3cret@h/x' and oceanbase://r:S3cret@h:2/")
    assert "S3cretPW" not in str(pc.BackendUnavailableError("at oceanbase://root:S3cretPW@h:1/x"))
    svc = await pc.open(database_url(oceanbase_url, "pc_repr_" + uuid.uuid4().hex[:6]))
    try:
        password = svc.backend._params["password"]
        if password:
            assert password not in repr(svc.backend)
    finally:
        await svc.close()
        drop_database(oceanbase_url, svc.backend.database)


async def test_open_refuses_a_missing_directory_and_creates_private_files(tmp_path):
    error = await _typed(lambda: pc.open("/nonexistent_dir/x.db"), pc.BackendUnavailableError)
    assert "does not exist" in str(error)
    assert not os.path.exists("/nonexistent_dir")
    svc = await pc.open(tmp_path / "m.db")
    await svc.remember(None, entries=(E("fact", "private"),))
    modes = {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()}
    await svc.close()
    assert modes["m.db"] == 0o600 and all(m == 0o600 for m in modes.values()), modes


async def test_a_server_url_without_database_uses_the_default_one(oceanbase_url, caplog):
    from powercontext.backends.oceanbase.backend import DEFAULT_DATABASE

    caplog.set_level("INFO", logger="powercontext.backends.oceanbase.backend")
    svc = await pc.open(database_url(oceanbase_url, ""))
    try:
        assert svc.backend.default_database == svc.backend.database == DEFAULT_DATABASE
        assert f"using database {DEFAULT_DATABASE!r}" in caplog.text and "S3cret" not in caplog.text
        rev = await svc.remember(None, entries=(E("fact", "in the default database"),))
        assert (await svc.head(rev.artifact_id)).ref == rev.ref
    finally:
        await svc.close()
        drop_database(oceanbase_url, DEFAULT_DATABASE)
