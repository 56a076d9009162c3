"""Fixtures for the magics tests: an IPython shell with the extension loaded, and the
target (SQLite file or a fresh database on the session's local OceanBase server)."""

from __future__ import annotations

import uuid

import pytest
from IPython.core.interactiveshell import InteractiveShell

from powercontext.backends.seekdb import database_url, drop_database

EXTENSION = "powercontext.magics"
PINNED = ("fts_min_terms = 2", "fts_min_coverage = 0.25", "vector_min_cosine = 0.3")


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """The (singleton) InteractiveShell with powercontext.magics freshly loaded; the
    extension is unloaded (closing the database) and its config reset afterwards."""
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension(EXTENSION)
    # These tests were written against the RFC's initial thresholds; pin them here so
    # the calibrated library defaults can move without rewriting every expectation.
    for option in PINNED:
        ip.run_line_magic("config", f"PcMem.{option}")
    before = set(ip.user_ns)
    yield ip
    ip.extension_manager.unload_extension(EXTENSION)
    ip.config.pop("PcMem", None)
    for name in set(ip.user_ns) - before:
        ip.user_ns.pop(name, None)


@pytest.fixture(params=["sqlite", "oceanbase"])
def target(request, tmp_path):
    """What `%pcmem open` gets: a SQLite file, or a new database on the local server."""
    if request.param == "sqlite":
        yield str(tmp_path / "memory.db")
        return
    server = request.getfixturevalue("oceanbase_url")
    database = "pcm_" + uuid.uuid4().hex[:12]
    yield database_url(server, database)
    drop_database(server, database)


@pytest.fixture
def sqlite_target(tmp_path):
    return str(tmp_path / "memory.db")
