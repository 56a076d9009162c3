"""An OceanBase MemoryService survives a server restart (issue 13, defect 1): a real
seekdb is SIGKILLed under a live service; during the outage every call raises a typed,
retryable error; once the server is back on the same dir and port, the next call of
every kind succeeds on the same ``svc``."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time

import pymysql
import pytest

import powercontext as pc
from powercontext.backends.driver import RECOVERY_PAUSE_S
from powercontext.backends.seekdb.server import SeekdbServer

E = pc.MemoryEntryInput


@pytest.fixture
def own_server(tmp_path):
    server = SeekdbServer(tmp_path / "seekdb", memory_budget="1G")
    yield server
    server.stop()
    shutil.rmtree(tmp_path / "seekdb", ignore_errors=True)


async def _service_with_a_memory(server: SeekdbServer, database: str, text: str):
    """A MemoryService on ``database`` of the (started) server, and a first Revision."""
    svc = await pc.open(server.start().url_for(database))
    return svc, await svc.remember(None, entries=(E("fact", text),))


def _kill(server: SeekdbServer) -> None:
    os.kill(server.pid, signal.SIGKILL)
    server._wait(15)
    assert not server.running


async def test_a_live_service_recovers_after_the_server_restarts(own_server):
    server = own_server
    svc, rev = await _service_with_a_memory(server, "pc_restart", "the build cache lives in ~/.cache/atlas")
    try:
        assert [h.text for h in await svc.search("build cache", memories=(rev,))]

        _kill(server)
        calls = {
            "head": lambda: svc.head(rev.artifact_id),
            "search": lambda: svc.search("build cache", memories=(rev,)),
            "remember": lambda: svc.remember(rev, entries=(E("fact", "written during the outage"),)),
        }
        for name, call in calls.items():
            with pytest.raises(pc.BackendUnavailableError) as info:
                await call()
            assert info.value.retryable, name

        port = server.port
        server.start()
        assert server.port == port
        # The very next call of each kind succeeds on the same service object.
        assert (await svc.head(rev.artifact_id)).ref == rev.ref  # the outage write never landed
        assert [h.text for h in await svc.search("build cache", memories=(rev,))] == [
            "the build cache lives in ~/.cache/atlas"
        ]
        rev2 = await svc.remember(rev, entries=(E("fact", "written after the restart"),))
        assert rev2.revision == 2 and len(await svc.entries(rev2)) == 2
    finally:
        await svc.close()


async def test_a_commit_whose_connection_dies_is_re_read_not_assumed(own_server, monkeypatch):
    """The connection dies right after COMMIT was sent: the service re-reads and
    reports the Revision that landed (or, had it not, a retryable 'not committed')."""
    svc, rev = await _service_with_a_memory(own_server, "pc_commit", "first")
    try:
        backend = svc.backend
        real_transaction = backend._transaction

        @contextlib.contextmanager
        def commit_then_lose(write):
            with real_transaction(write) as tx:
                yield tx
            if write:  # committed; the reply "never arrived"
                raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")

        monkeypatch.setattr(backend, "_transaction", commit_then_lose)
        rev2 = await svc.remember(rev, entries=(E("fact", "second"),))
        monkeypatch.undo()
        assert rev2.revision == 2 and (await svc.head(rev.artifact_id)).ref == rev2.ref

        @contextlib.contextmanager
        def lose_before_commit(write):
            with real_transaction(write) as tx:
                if write:
                    raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
                yield tx

        monkeypatch.setattr(backend, "_transaction", lose_before_commit)
        with pytest.raises(pc.ConnectionLostError, match="NOT committed") as info:
            await svc.remember(rev2, entries=(E("fact", "third"),))
        assert info.value.retryable
        monkeypatch.undo()
        assert (await svc.head(rev.artifact_id)).ref == rev2.ref

        # The re-read itself is refused (not a lost connection): the outcome is unknown,
        # said with the library's error, not the driver's.
        lost = {"write": False}

        @contextlib.contextmanager
        def lose_then_refuse_the_reread(write):
            if lost["write"] and not write:
                raise pymysql.err.OperationalError(1317, "Query execution was interrupted")
            with real_transaction(write) as tx:
                if write:
                    lost["write"] = True
                    raise pymysql.err.OperationalError(2013, "Lost connection to MySQL server during query")
                yield tx

        monkeypatch.setattr(backend, "_transaction", lose_then_refuse_the_reread)
        with pytest.raises(pc.CommitOutcomeUnknownError, match="Query execution was interrupted") as info:
            await svc.remember(rev2, entries=(E("fact", "fourth"),))
        assert f"reread svc.head({rev.artifact_id!r})" in str(info.value)
        monkeypatch.undo()
        assert (await svc.head(rev.artifact_id)).ref == rev2.ref
    finally:
        await svc.close()


async def test_a_server_still_recovering_is_waited_for_then_retried(own_server, monkeypatch):
    """After a restart seekdb may accept logins before its transaction service is back:
    BEGIN answers 4383 "transaction id is not ready" (seen in CI under load). A read
    pauses and retries on a new connection; a server that stays so gives a typed,
    retryable error; a commit that met it re-reads its outcome after the pause."""
    svc, rev = await _service_with_a_memory(own_server, "pc_recovering", "the build cache lives in ~/.cache/atlas")
    try:
        backend = svc.backend
        real_transaction = backend._transaction
        refusals = {"left": 1, "writes_only": False}

        @contextlib.contextmanager
        def not_ready(write):
            if refusals["left"] and (write or not refusals["writes_only"]):
                refusals["left"] -= 1
                raise pymysql.err.OperationalError(4383, "transaction id is not ready")
            with real_transaction(write) as tx:
                yield tx

        monkeypatch.setattr(backend, "_transaction", not_ready)
        began = time.monotonic()
        assert (await svc.head(rev.artifact_id)).ref == rev.ref
        assert time.monotonic() - began >= RECOVERY_PAUSE_S and refusals["left"] == 0

        refusals["left"] = 2  # refused again on the retry
        with pytest.raises(pc.ConnectionLostError, match="transaction id is not ready") as info:
            await svc.search("build cache", memories=(rev,))
        assert info.value.retryable

        refusals.update(left=1, writes_only=True)  # the commit is refused; its outcome is re-read
        with pytest.raises(pc.ConnectionLostError, match="NOT committed") as info:
            await svc.remember(rev, entries=(E("fact", "refused while recovering"),))
        assert info.value.retryable
        monkeypatch.undo()
        assert (await svc.head(rev.artifact_id)).ref == rev.ref
        rev2 = await svc.remember(rev, entries=(E("fact", "written once recovered"),))
        assert rev2.revision == 2
    finally:
        await svc.close()
