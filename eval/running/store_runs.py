"""Runs sharing one seekdb store: a lease per live run, kept in the store folder.

Two sweeps on the default store used to share one server that only the first had
started: when it finished it stopped the server under the second (issue 43). Now:

* every run holds a lease file ``<store>/runs/<pid>-<token>.json`` (its pid, the
  process's start time — so a recycled pid does not pass for the run — and the
  ``pc_eval_*`` databases it claims, written before each is created);
* a server a run starts is detached (it must outlive its starter when another run still
  uses it) and recorded in ``<store>/runs/server.started``; the last run to leave — no
  other live lease — stops it. A server someone else started (the CLI) is never stopped;
* the check-and-start and the check-and-stop happen under an ``fcntl`` lock on
  ``<store>/runs.lock``, so two runs never both start, or one stops while another joins;
* a run killed with SIGKILL leaves its lease and databases (and, if it was the last, the
  server): the next run drops the databases of dead leases when it begins, and
  ``python -m powercontext.eval cleanup`` drops them too — plus any ``pc_eval_*``
  database no live run claims (runs older than the leases) — and stops a run-started
  server no live run uses.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from powercontext.backends.seekdb.server import SeekdbServer
from powercontext.backends.seekdb.urls import drop_database
from powercontext.backends.seekdb.system import write_private
from powercontext.backends.seekdb.store import RUNS, lease_live as _live, leases as _leases, note_checkout
from powercontext.backends.seekdb.store import process_start_time as _start_time

__all__ = ["Cleaned", "StoreRun", "cleanup", "EVAL_PREFIX"]

log = logging.getLogger(__name__)

EVAL_PREFIX = "pc_eval_"
LOCK = "runs.lock"
STARTED = "server.started"
#: Databases a run kept on purpose (``--keep-databases``): no lease claims them any more,
#: and cleanup leaves them unless asked (``--kept``).
KEPT = "kept.databases"  # JSON, but not *.json: that is a lease


def peak_rss_mib(pid: int | None) -> float | None:
    """A process's peak resident set size (Linux ``VmHWM``), or None where unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


@contextlib.contextmanager
def _locked(store: Path) -> Iterator[None]:
    fd = os.open(store / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _databases(server: SeekdbServer) -> list[str]:
    con = server.connect()
    try:
        with con.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE 'pc\\_eval\\_%'")
            return sorted(row[0] for row in cur.fetchall())
    finally:
        con.close()


def _kept(store: Path) -> list[str]:
    try:
        return [d for d in json.loads((store / RUNS / KEPT).read_text()) if isinstance(d, str)]
    except (OSError, ValueError, TypeError):
        return []


def _started_pid(store: Path) -> int | None:
    try:
        return int((store / RUNS / STARTED).read_text().strip())
    except (OSError, ValueError):
        return None


def _stop_if_unused(store: Path, server: SeekdbServer | None) -> float | None:
    """Stop ``server`` if a run started it and no live lease remains (caller holds the
    lock); its peak RSS in MiB when stopped, else None."""
    if server is None or server.pid != _started_pid(store):
        return None
    if any(_live(record) for _, record in _leases(store)):
        return None
    peak = peak_rss_mib(server.pid)
    server.stop()
    (store / RUNS / STARTED).unlink(missing_ok=True)
    return peak if peak is not None else 0.0


def _drop_dead(store: Path, url: str) -> list[str]:
    """Drop the databases of dead leases and remove those leases (caller holds the lock)."""
    dropped = []
    for path, record in _leases(store):
        if _live(record):
            continue
        for database in record.get("databases", ()):
            if isinstance(database, str) and database.startswith(EVAL_PREFIX):
                drop_database(url, database)
                dropped.append(database)
        path.unlink(missing_ok=True)
    return dropped


class StoreRun:
    """One run's lease on the seekdb store ``store``: ``begin`` (start or join the
    server), ``claim`` each database before creating it, ``finish`` when done."""

    def __init__(self, store: str | os.PathLike[str]) -> None:
        self.store = Path(store).expanduser().resolve()
        self.path = self.store / RUNS / f"{os.getpid()}-{secrets.token_hex(4)}.json"
        self.record = {"pid": os.getpid(), "started": _start_time(os.getpid()), "databases": []}
        #: Databases of killed runs this run dropped when it began.
        self.leftovers: list[str] = []
        self.url: str | None = None

    def begin(self) -> str:
        """The server's URL: the running one, or one started now (detached)."""
        self.store.mkdir(mode=0o700, parents=True, exist_ok=True)
        (self.store / RUNS).mkdir(mode=0o700, exist_ok=True)
        with _locked(self.store):
            notice = note_checkout(self.store)  # another clone on this store shares its server: say so
            if notice:
                log.warning(notice)
            server = SeekdbServer.attach(self.store)
            if server is None:
                server = SeekdbServer(self.store, detach=True).start()
                write_private(self.store / RUNS / STARTED, f"{server.pid}\n")
            self.url = server.url
            write_private(self.path, json.dumps(self.record))
            self.leftovers = _drop_dead(self.store, self.url)
        if self.leftovers:
            log.warning("dropped %d database(s) left by killed runs: %s", len(self.leftovers), ", ".join(self.leftovers))
        return self.url

    def claim(self, database: str) -> None:
        """Record ``database`` in the lease (before it is created: a kill in between
        leaves a claim on nothing, which cleanup drops with IF EXISTS)."""
        with _locked(self.store):
            self.record["databases"].append(database)
            write_private(self.path, json.dumps(self.record))

    def finish(self, kept: list[str] = ()) -> float | None:
        """Give the lease back (recording the databases ``kept`` on purpose); stop the
        server if a run started it and this was the last live run. Returns the stopped
        server's peak RSS (MiB), or None if it still runs."""
        with _locked(self.store):
            if kept:
                write_private(self.store / RUNS / KEPT, json.dumps(sorted({*_kept(self.store), *kept})))
            self.path.unlink(missing_ok=True)
            return _stop_if_unused(self.store, SeekdbServer.attach(self.store))


@dataclass
class Cleaned:
    """What ``cleanup`` did."""

    killed: list[str] = field(default_factory=list)  # databases of dead leases
    unclaimed: list[str] = field(default_factory=list)  # pc_eval_* no lease names
    kept: list[str] = field(default_factory=list)  # databases of live runs
    kept_on_purpose: list[str] = field(default_factory=list)  # --keep-databases; dropped only with kept=True
    stopped: bool = False  # a run-started server no live run used was stopped

    def lines(self) -> list[str]:
        out = [f"dropped {d} (its run was killed)" for d in self.killed]
        out += [f"dropped {d} (no live run claims it)" for d in self.unclaimed]
        if self.kept:
            out.append(f"kept {len(self.kept)} database(s) of live runs: {', '.join(self.kept)}")
        if self.kept_on_purpose:
            out.append(f"kept {len(self.kept_on_purpose)} database(s) a run kept (--keep-databases; drop them with "
                       f"--kept): {', '.join(self.kept_on_purpose)}")
        if self.stopped:
            out.append("stopped the seekdb server runs had started (no live run uses it)")
        return out or ["nothing to clean"]


def cleanup(store: str | os.PathLike[str], kept: bool = False) -> Cleaned:
    """Drop every ``pc_eval_*`` database of ``store``'s server that no live run claims
    (and that no run kept with ``--keep-databases``, unless ``kept``), remove dead
    leases, and stop a run-started server that no live run uses. A stopped server is
    started for the drop (its databases are on disk) and stopped again."""
    store = Path(store).expanduser().resolve()
    done = Cleaned()
    if not (store / "root.locked").exists():
        return done  # no server was ever set up here: no databases either
    (store / RUNS).mkdir(mode=0o700, exist_ok=True)
    with _locked(store):
        server = SeekdbServer.attach(store)
        temporary = server is None
        if temporary:
            server = SeekdbServer(store).start()
        try:
            existing = set(_databases(server))
            done.killed = [d for d in _drop_dead(store, server.url) if d in existing]
            claimed = {d for _, record in _leases(store) for d in record.get("databases", ())}
            on_purpose = set() if kept else set(_kept(store))
            for database in _databases(server):
                if database in claimed:
                    done.kept.append(database)
                elif database in on_purpose:
                    done.kept_on_purpose.append(database)
                else:
                    drop_database(server.url, database)
                    done.unclaimed.append(database)
            if kept:
                (store / RUNS / KEPT).unlink(missing_ok=True)
        finally:
            if temporary:
                server.stop()
                (store / RUNS / STARTED).unlink(missing_ok=True)
        if not temporary:
            done.stopped = _stop_if_unused(store, server) is not None
    return done
