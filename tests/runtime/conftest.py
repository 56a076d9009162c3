"""Fixtures for the Runtime tests: every test that takes ``target`` runs on both
storage profiles — a SQLite file, and a database on the session's real OceanBase
server (seekdb). OceanBase tests share one database (creating a schema there costs
seconds); each test works in scopes of its own, so they stay isolated. Tests that need
a database nobody else touches (probes, independent stores, a scheduled processor that
must see only its own scopes) ask for ``fresh_target``."""

from __future__ import annotations

import uuid

import pytest

from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.runtime import PowerContextRuntime

from ..magics.conftest import shell  # noqa: F401  (the same IPython shell fixture as the magics tests)


PROFILES = ["sqlite", "oceanbase"]


@pytest.fixture(params=PROFILES)
def profile(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def shared_database(oceanbase_url):
    """One OceanBase database for every Runtime test that works in scopes of its own
    (requested only by OceanBase tests; dropped at the end of the session)."""
    name = "pcrt_" + uuid.uuid4().hex[:12]
    yield database_url(oceanbase_url, name)
    drop_database(oceanbase_url, name)


@pytest.fixture
def target(profile, tmp_path, request) -> str:
    """Where the Runtime lives: a fresh SQLite file, or the shared OceanBase database
    (tests use scopes of their own there)."""
    return str(tmp_path / "runtime.db") if profile == "sqlite" else request.getfixturevalue("shared_database")


@pytest.fixture
def fresh_target(profile, tmp_path, request):
    """A database no other test uses (for scheduling and startup probes)."""
    if profile == "sqlite":
        yield str(tmp_path / "fresh.db")
        return
    server = request.getfixturevalue("oceanbase_url")
    name = "pcrt_" + uuid.uuid4().hex[:12]
    yield database_url(server, name)
    drop_database(server, name)


@pytest.fixture
def scope(request) -> str:
    """A scope of this test alone (the OceanBase database is shared by the tests)."""
    return f"project:{request.node.name}:{uuid.uuid4().hex[:8]}"


@pytest.fixture
async def open_runtime(tmp_path):
    """``await open_runtime(target, **options)``; every Runtime is closed at teardown.
    Scheduled Runtimes get a sidecar in tmp_path unless the test names one."""
    opened = []

    async def factory(target, **options):
        if options.get("schedule_seconds") is not None:
            options.setdefault("scheduler_path", tmp_path / f"scheduler-{len(opened)}.sqlite")
        runtime = await PowerContextRuntime.open(target, **options)
        opened.append(runtime)
        return runtime

    yield factory
    for runtime in opened:
        await runtime.close()

