"""Which seekdb store a checkout uses by default and which other checkouts use it
(``seekdb reset`` is in ``reset``: it asks the server, which asks this module).

One store per user (``~/.cache/powercontext/seekdb``) made two clones share one server
without a word: one clone's ``maintain()`` froze the other's benchmark, and ``seekdb
start`` answered "already running" for a server the other clone had started (issue
45). The default store is now per project folder — the nearest folder at or above the
working directory holding ``pyproject.toml`` or ``.git`` — under
``~/.cache/powercontext/seekdb-stores/<folder name>-<hash8>``, unless the user names one
(``--dir``/``--seekdb-dir``, or ``POWERCONTEXT_SEEKDB_DIR``). A store records the
checkouts that used it (``checkouts``), so a second one using a named store is told in
one line. The old per-user folder is left as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from ...errors import BackendUnavailableError
from .system import pid_alive, write_private

__all__ = ["ENV_DIR", "RUNS", "STORES", "StoreInUseError", "default_store", "lease_live", "leases", "note_checkout",
           "live_leases", "other_checkouts", "process_start_time", "project_folder", "record_address",
           "stalled_message", "store_at"]

#: Names the store every process of a checkout uses (the CLI, the harness, the magics).
ENV_DIR = "POWERCONTEXT_SEEKDB_DIR"
STORES = Path("~/.cache/powercontext/seekdb-stores")
CHECKOUTS = "checkouts"  # JSON list of the project folders that used the store
RUNS = "runs"  # the harness runs' leases (eval/running/store_runs.py)
_MARKERS = ("pyproject.toml", ".git")


class StoreInUseError(BackendUnavailableError):
    """``seekdb reset`` was refused: a process of ours (a harness run's lease, or the
    store's server while a run uses it) still holds the store. Nothing was removed."""


#: (host, port) → store of the seekdb servers this process started or attached, so that
#: an error about a stalled server can name its store.
_ADDRESSES: dict[tuple[str, int], Path] = {}


def record_address(host: str, port: int, store: Path) -> None:
    _ADDRESSES[(host, int(port))] = Path(store)


def store_at(host: str, port: int) -> Path | None:
    """The local seekdb store serving ``host:port``: one this process started or
    attached, else this checkout's default store when its port file says so."""
    if (host, int(port)) in _ADDRESSES:
        return _ADDRESSES[(host, int(port))]
    store = default_store()
    try:
        if int((store / "seekdb.port").read_text().strip()) == int(port):
            return store
    except (OSError, ValueError):
        pass
    return None


def stalled_message(host: str, port: int, bound: float) -> tuple[str, str | None]:
    """(message, store) of a ServerStalledError for the server at ``host:port``."""
    store = store_at(host, port)
    where = f"the seekdb store {store}" if store else f"OceanBase at {host}:{port}"
    way_out = (f"stop what uses it, then `python -m powercontext.backends.seekdb stop --dir {store}` and "
               f"`... reset --dir {store}` (reset removes the store's databases)" if store else
               "restart the server (a local seekdb store: `python -m powercontext.backends.seekdb stop`, then `reset`)")
    return (f"{where} did not answer a statement within {bound:g} s (past its own ob_query_timeout): it is "
            f"stalled, e.g. wedged by killed runs. A write's outcome is unknown. Way out: {way_out}"), \
        (str(store) if store else None)


def project_folder(start: str | os.PathLike[str] | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) with a
    ``pyproject.toml`` or ``.git``; ``start`` itself when there is none."""
    here = Path(start or os.getcwd()).expanduser().resolve()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in _MARKERS):
            return folder
    return here


def default_store(start: str | os.PathLike[str] | None = None) -> Path:
    """``POWERCONTEXT_SEEKDB_DIR`` if set, else this project folder's own store."""
    named = os.environ.get(ENV_DIR, "").strip()
    if named:
        return Path(named).expanduser().resolve()
    project = project_folder(start)
    digest = hashlib.sha256(str(project).encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", project.name) or "root"
    return (STORES / f"{name}-{digest}").expanduser()


def _recorded(store: Path) -> list[str]:
    try:
        found = json.loads((store / CHECKOUTS).read_text())
    except (OSError, ValueError):
        return []
    return [p for p in found if isinstance(p, str)] if isinstance(found, list) else []


def other_checkouts(store: str | os.PathLike[str], start: str | os.PathLike[str] | None = None) -> list[str]:
    """The other project folders recorded in ``store`` that still exist."""
    me = str(project_folder(start))
    return [p for p in _recorded(Path(store).expanduser()) if p != me and Path(p).exists()]


def note_checkout(store: str | os.PathLike[str], start: str | os.PathLike[str] | None = None) -> str | None:
    """Record this project folder as a user of ``store`` (which must exist); a one-line
    notice when other checkouts use it too, else None."""
    store = Path(store).expanduser()
    me = str(project_folder(start))
    recorded = _recorded(store)
    if me not in recorded:
        write_private(store / CHECKOUTS, json.dumps([*recorded, me]))
    others = other_checkouts(store, start)
    if not others:
        return None
    return (f"note: the seekdb store {store} is also used by {', '.join(others)}: one server, so their "
            f"runs and maintain() slow yours; give this checkout its own by unsetting {ENV_DIR} or --dir")


def leases(store: str | os.PathLike[str]) -> list[tuple[Path, dict]]:
    """(path, record) of every run lease in ``<store>/runs`` (eval/running/store_runs.py writes
    them); a record that cannot be read (half-written by a killed run) is ``{}``."""
    found = []
    for path in sorted((Path(store) / RUNS).glob("*.json")):
        try:
            record = json.loads(path.read_text())
            found.append((path, record if isinstance(record, dict) else {}))
        except (OSError, ValueError):
            found.append((path, {}))
    return found


def lease_live(record: dict) -> bool:
    """Whether the run of a lease record still runs: its pid, with the start time it
    recorded (so a recycled pid does not pass for the run)."""
    pid = record.get("pid")
    return isinstance(pid, int) and pid_alive(pid) and process_start_time(pid) == record.get("started")


def live_leases(store: Path) -> list[int]:
    return [record["pid"] for _, record in leases(store) if lease_live(record)]


def process_start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22):
    with the pid, it names one process for good."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
