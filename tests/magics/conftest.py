"""Fixtures for the magics tests: an IPython shell with the extension loaded, and the
target (SQLite file or a fresh database on the session's local OceanBase server)."""

from __future__ import annotations

import uuid

import pytest
from IPython.core.interactiveshell import InteractiveShell

from powercontext import AdmissionPolicy
from powercontext.backends.seekdb.urls import database_url, drop_database

EXTENSION = "powercontext.magics"


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """The (singleton) InteractiveShell with powercontext.magics freshly loaded; the
    extension is unloaded (closing the database) and its config reset afterwards."""
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    ip.extension_manager.load_extension(EXTENSION)
    # These tests were written against the RFC's initial policy (floors 2 / 0.25 /
    # cosine 0.30, no family); pin it through a policy file, as a user pins a fitted
    # one, so the library default can move without rewriting every expectation.
    rfc = AdmissionPolicy.rfc_initial().save(tmp_path / "rfc_initial_policy.json")
    ip.run_line_magic("config", f"PcMem.policy_file = {str(rfc)!r}")
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
