"""Fresh databases for a run: one per (backend, corpus), opened through ``pc.open``.

SQLite databases are files in the run folder (``<out>/db/<corpus>.sqlite.db``);
OceanBase databases are ``pc_eval_<corpus>_<token>`` on the server given by
``POWERCONTEXT_OCEANBASE_URL`` or on a seekdb the harness starts itself
(``ensure_server``), dropped when the run ends unless ``keep`` is set. Runs sharing
a seekdb store hold leases in it (``store_runs``): the last one out stops the server,
and the databases of a killed run are dropped by the next run or ``cleanup``.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.errors import BackendUnavailableError
from powercontext.suggest import unknown_name

from ..errors import EvalError
from .private import private_dir

__all__ = ["BACKENDS", "Databases", "check_names"]

BACKENDS = ("sqlite", "oceanbase")


def check_names(what: str, names: Any, known: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` as a tuple, or an EvalError naming the first unknown one (with "did you
    mean …"): called before any database, model or progress bar starts."""
    names = tuple(names)
    for name in names:
        if name not in known:
            raise EvalError(unknown_name(what, name, known))
    if not names:
        raise EvalError(f"no {what}s given: use {', '.join(known)}")
    return names


class Databases:
    """Opens fresh databases and cleans up what it created (use as a context manager
    or call ``close``)."""

    def __init__(self, folder: str | Path, seekdb_dir: str | Path | None = None, keep: bool = False,
                 oceanbase_url: str | None = None) -> None:
        self.folder = Path(folder)
        self.seekdb_dir = seekdb_dir
        self.keep = keep
        self.token = secrets.token_hex(3)
        self._server_url = oceanbase_url
        self._lease = None  # our StoreRun on the seekdb store, when we use one
        self._created: list[str] = []
        self._files: list[Path] = []  # the SQLite databases created
        self.server_peak_mib: float | None = None  # peak RSS of the seekdb we started, read before stopping it

    # ------------------------------------------------------------------ oceanbase server

    def server_url(self) -> str:
        """The OceanBase server URL, starting seekdb if nothing is configured."""
        if self._server_url is None:
            from powercontext.backends.seekdb.server import SeekdbStartError
            from powercontext.backends.seekdb.store import default_store
            from powercontext.backends.seekdb.urls import oceanbase_url_from_env

            from .store_runs import StoreRun

            try:
                self._server_url = oceanbase_url_from_env()
                if self._server_url is None:  # the local store, shared with other runs through leases
                    self._lease = StoreRun(self.seekdb_dir or default_store())
                    self._server_url = self._lease.begin()
            except SeekdbStartError as exc:
                raise EvalError(f"could not start a local OceanBase (seekdb) server: {exc}") from exc
        self._check_reachable(self._server_url)
        return self._server_url

    @staticmethod
    def _check_reachable(url: str) -> None:
        import pymysql

        p = urlparse(url)
        try:
            con = pymysql.connect(host=p.hostname, port=p.port or 2881, user=p.username or "root",
                                  password=p.password or "", connect_timeout=5)
        except pymysql.MySQLError as exc:
            raise EvalError(
                f"cannot reach the OceanBase server at {p.hostname}:{p.port} ({exc}). Start one with "
                "`python -m powercontext.backends.seekdb start`, fix or unset POWERCONTEXT_OCEANBASE_URL, "
                "or run with --backends sqlite"
            ) from exc
        con.close()

    def _drop(self, database: str) -> None:
        drop_database(self.server_url(), database)

    # ------------------------------------------------------------------ databases

    def target(self, backend: str, corpus: str) -> str:
        slug = re.sub(r"[^a-z0-9]+", "_", corpus.lower()).strip("_")
        if backend == "sqlite":
            path = self.folder / "db" / f"{slug}.sqlite.db"
            private_dir(path.parent)  # the databases are 0600 already; their folder is the run folder's
            self._remove_sqlite(path)
            self._files.append(path)
            return str(path)
        if backend == "oceanbase":
            database = f"pc_eval_{slug}_{self.token}"[:64]
            url = self.server_url()
            if self._lease is not None:
                self._lease.claim(database)  # before it exists: a kill from here on leaves it claimed
            self._drop(database)
            self._created.append(database)
            return database_url(url, database)
        raise EvalError(f"unknown backend {backend!r}: use {', '.join(BACKENDS)}")

    async def open(self, backend: str, corpus: str, embedding: Any = None, ids: Any = None,
                   analyzer: str | None = None):
        """A MemoryService on a new, empty database of ``backend`` for ``corpus``, created
        with ``analyzer`` (default: a new database's)."""
        target = self.target(backend, corpus)
        try:
            return await pc.open(target, embedding=embedding, ids=ids, analyzer=analyzer)
        except BackendUnavailableError as exc:
            raise EvalError(f"cannot open the {backend} database for {corpus}: {exc}") from exc

    @staticmethod
    def _remove_sqlite(path: Path) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        """Drop the OceanBase databases and remove the SQLite files of the run (unless
        ``keep``): the run folder keeps what was measured, not the databases."""
        kept = list(self._created) if self.keep else []
        if not self.keep:
            for database in self._created:
                try:
                    self._drop(database)
                except Exception:  # best effort: the server may already be gone
                    pass
            for path in self._files:
                self._remove_sqlite(path)
            if self._files and not any((self.folder / "db").iterdir()):
                (self.folder / "db").rmdir()
        self._created.clear()
        self._files.clear()
        if self._lease is not None:
            # stops the server only if no other run uses it; kept databases are not cleanup's
            self.server_peak_mib = self._lease.finish(kept)
            self._lease = None

    def __enter__(self) -> "Databases":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
