"""svc.maintain(): the server's own upkeep after a bulk load, searches timed before and
after until they settle, and a typed refusal where the account may not compact."""

from __future__ import annotations

import asyncio
import statistics
import uuid
from urllib.parse import quote, urlparse, urlunparse

import pytest

import powercontext as pc
from powercontext.backends.maintenance import Settling, settle_window
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.canonical import SequentialIds

from ..support import sql

E = pc.MemoryEntryInput
TOPICS = ("the release checklist", "the build cache", "flaky integration tests", "database migrations")


async def _major_frozen_scn(svc) -> int:
    return int((await sql(svc, "SELECT FROZEN_SCN FROM oceanbase.DBA_OB_MAJOR_COMPACTION"))[0][0])


async def _a_compaction_the_server_began(svc) -> int:
    """Start a major compaction as the server may by itself (a bulk load's dumps reach
    major_compact_trigger) and wait until it shows (~a second): its FROZEN_SCN."""
    before = await _major_frozen_scn(svc)
    await sql(svc, "ALTER SYSTEM MAJOR FREEZE")
    theirs = before
    for _ in range(100):
        theirs = await _major_frozen_scn(svc)
        if theirs > before:
            break
        await asyncio.sleep(0.1)
    assert theirs > before
    return theirs


async def test_maintain_runs_the_upkeep_and_times_searches_until_they_settle(open_service, backend_name):
    """On OceanBase, maintain() is asked while a compaction the server began by itself is
    running: a MAJOR FREEZE asked then is merged into it, and maintain() waited for a newer
    freeze until its timeout. It must wait for the running one to end, then compact: its own
    compaction is seen to end, after the server's. (This was a test of its own, paying a
    third compaction of ~30 s for the same maintain() steps.)"""
    svc = await open_service(ids=SequentialIds())
    rev = None
    for part in range(4):  # several commits: several full-text segments on SQLite
        rev = await svc.remember(rev, entries=tuple(
            E("fact", f"note {part}-{i}: {TOPICS[i % 4]} needs care on day {i % 17}") for i in range(60)))
    query = dict(query="release checklist", memories=(rev,), mode="fts", limit=10)
    before = [(h.entry_id, h.score) for h in (await svc.search(**query)).hits]
    theirs = await _a_compaction_the_server_began(svc) if backend_name == "oceanbase" else None
    report = await svc.maintain(timeout=600, settle=5)
    names = [step.name for step in report.steps]
    if backend_name == "sqlite":
        assert names == ["full-text index segments merged", "WAL checkpointed", "PRAGMA optimize"]
        assert len(report.probes) == 1  # nothing goes on after the statements return: probed once
    else:
        assert names == ["minor freeze, frozen memtables dumped", "major freeze, compaction done", "searches settle"]
        assert [step.detail for step in report.steps[:2]] == ["", ""], str(report)  # the dump and the compaction's end were seen
        assert await _major_frozen_scn(svc) > theirs  # the server did compact, after its own compaction
        assert len(report.probes) >= 2 and report.probes[-1][0] - report.probes[0][0] >= 5
        window = [ms for at, ms in report.probes if at >= report.probes[-1][0] - 5]
        assert report.probe_ms_after == statistics.median(window)  # the settled rounds' median
    assert report.settled and report.database == backend_name
    assert report.probe_ms_before > 0 and report.probe_ms_after > 0
    assert report.seconds >= sum(step.seconds for step in report.steps) > 0
    assert "search probe" in str(report)
    assert [(h.entry_id, h.score) for h in (await svc.search(**query)).hits] == before
    assert (await svc.verify(rev)).ok


def test_the_settle_window_scales_with_the_rows():
    assert settle_window(0) == settle_window(2) == 3.0  # a few rounds, never a minute
    assert settle_window(5_000) == 30.0 and settle_window(10_000) == settle_window(100_000) == 60.0


async def test_maintain_of_a_small_memory_settles_in_seconds(open_service, backend_name):
    """A two-entry OceanBase Memory took 88 s, 65 of them "searches settle" (issue 45):
    the settle window is scaled to the database's size unless one is asked."""
    svc = await open_service()
    rev = await svc.remember(None, entries=(E("fact", "the release checklist needs care"),
                                            E("fact", "the build cache is shared")))
    report = await svc.maintain()
    assert report.settled, str(report)
    if backend_name == "oceanbase":
        (step,) = [s for s in report.steps if s.name == "searches settle"]
        assert "a 3 s window for 2 rows" in step.detail
        assert step.seconds < 15, str(report)  # a 3 s window, probed every 0.75 s
    assert (await svc.search("release checklist", (rev,), mode="fts")).hits


async def test_maintain_refuses_bad_waits_before_anything_runs(open_service):
    svc = await open_service()
    for kwargs in (dict(timeout=-1), dict(settle="soon"), dict(timeout=10, settle=60), dict(timeout=True)):
        with pytest.raises(pc.InvalidMemoryRequestError, match="timeout|settle"):
            await svc.maintain(**kwargs)


async def test_an_account_that_may_not_compact_is_refused_with_a_typed_error(oceanbase_url):
    database = "pc_" + uuid.uuid4().hex[:16]
    user, password = "pc_" + uuid.uuid4().hex[:8], uuid.uuid4().hex
    async with await pc.open(database_url(oceanbase_url, database)) as admin:
        await sql(admin, f"CREATE USER '{user}'@'%%' IDENTIFIED BY '{password}'")
        await sql(admin, f"GRANT ALL PRIVILEGES ON {database}.* TO '{user}'@'%%'")
        frozen = await _major_frozen_scn(admin)
        try:
            parsed = urlparse(database_url(oceanbase_url, database))
            limited = urlunparse(parsed._replace(netloc=f"{user}:{quote(password)}@{parsed.hostname}:{parsed.port}"))
            async with await pc.open(limited) as svc:
                rev = await svc.remember(None, entries=(E("fact", "the release checklist needs care"),))
                with pytest.raises(pc.MaintenanceNotPermittedError, match="may not compact") as info:
                    await svc.maintain(timeout=60, settle=0)
                assert isinstance(info.value, pc.CapabilityNotSupportedError)
                assert user in str(info.value) and password not in str(info.value)
                assert (await svc.search("release checklist", (rev,), mode="fts")).hits  # still searchable
            assert await _major_frozen_scn(admin) == frozen  # nothing was started
        finally:
            await sql(admin, f"DROP USER '{user}'@'%%'")
            drop_database(oceanbase_url, database)


def test_searches_settle_when_the_probes_stop_getting_faster():
    settling = Settling(window=30, improvement=0.10)
    for at, ms in [(0, 50.0), (10, 48.0), (20, 30.0), (35, 20.0)]:  # still getting faster
        settling.add(at, ms)
        assert not settling.settled()
    settling.add(50, 19.0)  # since 20 s: 19 ms, far better than the 48 ms before
    assert not settling.settled()
    settling.add(70, 19.5)
    assert settling.settled()  # 19.0–19.5 ms since 40 s against 20 ms before
    settling.add(80, 26.0)  # a round slowed by the server's background work
    assert settling.settled() and settling.window_ms() == 19.5  # the window's median, not the last round
