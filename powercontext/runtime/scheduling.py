"""Scheduled activation: APScheduler 3.x in a SQLite sidecar (RFC 001 "Scheduled
processing").

The persisted interval job names a stable, module-level async dispatcher
(``powercontext.runtime.scheduling:dispatch_source_window``) and carries one argument:
the normalized Runtime database key. The dispatcher finds the live processor for that
key in an in-process registry, so no Runtime, pipeline, connection or bound method is
ever written to the job store. Moving the dispatcher breaks persisted jobs: it is a
local on-disk ABI.

APScheduler unpickles job state. The sidecar is therefore created by the Runtime with
mode 0600 and checked before APScheduler opens it: a regular file owned by this user,
writable by nobody else, not the Runtime database, holding only the one job this module
writes, decoded with an unpickler that can build nothing but an interval trigger and
datetimes. Anything else raises ``SchedulerStoreError`` and nothing is loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import io
import logging
import os
import pickle
import sqlite3
import stat
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

from ..errors import InvalidRuntimeRequestError, shown
from .errors import RuntimeOwnershipError, SchedulerStoreError

log = logging.getLogger(__name__)

DISPATCHER = "powercontext.runtime.scheduling:dispatch_source_window"
JOB_ID = "powercontext.source_window"
JOB_NAME = "PowerContext source windows"
JOBSTORE = "runtime"
JOB_TABLE = "apscheduler_jobs"
MIN_INTERVAL_SECONDS = 0.1
MAX_INTERVAL_SECONDS = 366 * 24 * 3600
_SIDECAR_TABLES = {JOB_TABLE}
_JOB_STATE_KEYS = {"version", "id", "func", "trigger", "executor", "args", "kwargs", "name", "misfire_grace_time",
                   "coalesce", "max_instances", "next_run_time"}
#: The settings this module gives its job; anything else found in a sidecar is repaired.
_JOB_SETTINGS = {"executor": "default", "name": JOB_NAME, "coalesce": True, "max_instances": 1,
                 "misfire_grace_time": None}
SIDECAR_LOCK_SECONDS = 30.0
_ALLOWED_GLOBALS = {
    ("apscheduler.triggers.interval", "IntervalTrigger"),
    ("datetime", "datetime"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
}

# ------------------------------------------------------------------ registry and dispatcher

_PROCESSORS: dict[str, Any] = {}
_PROCESSORS_LOCK = threading.Lock()


def register_processor(key: str, processor: Any) -> None:
    """Claim ``key`` for this process's scheduled Runtime; a second one is refused."""
    with _PROCESSORS_LOCK:
        if key in _PROCESSORS and _PROCESSORS[key] is not processor:
            raise RuntimeOwnershipError(
                f"a scheduled Runtime on {key} is already open in this process; close it before opening another"
            )
        _PROCESSORS[key] = processor


def unregister_processor(key: str, processor: Any) -> None:
    with _PROCESSORS_LOCK:
        if _PROCESSORS.get(key) is processor:
            del _PROCESSORS[key]


def is_registered(key: str) -> bool:
    with _PROCESSORS_LOCK:
        return key in _PROCESSORS


async def dispatch_source_window(database_key: str) -> None:
    """The persisted job's callable: run the registered processor of ``database_key``.
    Shielded, so that APScheduler shutting down never cancels an admitted window."""
    with _PROCESSORS_LOCK:
        processor = _PROCESSORS.get(database_key)
    if processor is None:
        log.warning("no scheduled Runtime is registered for %s in this process; skipping", database_key)
        return
    try:
        await asyncio.shield(processor.run())
    except asyncio.CancelledError:
        if not processor.closing:
            raise
        # APScheduler cancels its job tasks when the Runtime shuts it down; the shielded
        # run finishes on its own, and close() waited for it before the shutdown.


# ------------------------------------------------------------------ configuration


def validate_interval(seconds: object) -> float:
    """An interval in MIN_INTERVAL_SECONDS..MAX_INTERVAL_SECONDS (a larger one overflowed
    APScheduler's timedelta arithmetic)."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) \
            or not MIN_INTERVAL_SECONDS <= seconds <= MAX_INTERVAL_SECONDS:
        raise InvalidRuntimeRequestError(
            f"schedule_seconds must be a number in {MIN_INTERVAL_SECONDS:g}..{MAX_INTERVAL_SECONDS} "
            f"(one year), got {shown(seconds)}"
        )
    return float(seconds)


def default_sidecar_path(key: str, database_path: str | None) -> Path:
    """Next to a SQLite Runtime database (``<db>.scheduler.sqlite``); for a server
    database, in the user's cache directory under a name derived from the key."""
    if database_path is not None:
        return Path(database_path + ".scheduler.sqlite")
    import hashlib

    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return Path("~/.cache/powercontext/scheduler").expanduser() / f"{key.rsplit('/', 1)[-1]}-{digest}.sqlite"


def sidecar_path(path: Any, key: str, database_path: str | None) -> Path:
    """The absolute sidecar path; refused when it could be the Runtime database."""
    if path is None:
        path = default_sidecar_path(key, database_path)
    text = os.fspath(path)
    if text == ":memory:" or text.startswith("file:") or "://" in text:
        raise InvalidRuntimeRequestError(f"the scheduler sidecar must be a file path, got {shown(text)}")
    resolved = Path(os.path.realpath(os.path.abspath(os.path.expanduser(text))))
    if database_path is not None and str(resolved) in {database_path + suffix for suffix in ("", "-wal", "-shm", "-journal")}:
        raise SchedulerStoreError(f"the scheduler sidecar {resolved} would be the Runtime database itself; use its own file")
    return resolved


def _check_file(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
        raise SchedulerStoreError(f"scheduler sidecar {path} is not a regular file (a symlink or a directory)")
    if info.st_uid != os.getuid():
        raise SchedulerStoreError(f"scheduler sidecar {path} belongs to another user (uid {info.st_uid})")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise SchedulerStoreError(f"scheduler sidecar {path} is writable by other users (mode {stat.filemode(info.st_mode)})")


class _JobStateUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED_GLOBALS:
            raise SchedulerStoreError(f"job state references {module}.{name}, which this Runtime never writes")
        return super().find_class(module, name)


def _verified_states(path: Path) -> list[dict]:
    """Decode every job row with the restricted unpickler and check it is the job this
    module writes. The file is opened read-only with the standard library."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    try:
        con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise SchedulerStoreError(f"scheduler sidecar {path} cannot be opened: {exc}") from None
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables <= _SIDECAR_TABLES:
            raise SchedulerStoreError(
                f"scheduler sidecar {path} holds tables {sorted(tables - _SIDECAR_TABLES)}: it is not a sidecar "
                "(perhaps the Runtime database itself); give the scheduler its own file"
            )
        rows = con.execute(f"SELECT id, job_state FROM {JOB_TABLE}").fetchall() if tables else []
    except sqlite3.DatabaseError as exc:
        raise SchedulerStoreError(f"scheduler sidecar {path} is not a SQLite database: {exc}") from None
    finally:
        con.close()
    states = []
    for job_id, blob in rows:
        try:
            state = _JobStateUnpickler(io.BytesIO(blob)).load()
        except SchedulerStoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - any decoding failure means "not ours"
            raise SchedulerStoreError(f"scheduler sidecar {path}: job {job_id!r} does not decode ({exc})") from None
        if not _is_our_job(job_id, state):
            raise SchedulerStoreError(f"scheduler sidecar {path}: job {job_id!r} is not the job this Runtime writes")
        states.append(state)
    return states


def _is_our_job(job_id: object, state: object) -> bool:
    """The job state APScheduler 3 (state version 1) writes for this module's job:
    every key present, the dispatcher with one string argument, an interval trigger.
    Settings of the right types but the wrong values are loadable; SidecarScheduler
    repairs them (and says so in ``status``)."""
    from apscheduler.triggers.interval import IntervalTrigger

    if not (isinstance(state, dict) and set(state) == _JOB_STATE_KEYS):
        return False
    args = state["args"]
    return (
        job_id == JOB_ID and state["version"] == 1 and state["id"] == JOB_ID and state["func"] == DISPATCHER
        and isinstance(args, tuple) and len(args) == 1 and isinstance(args[0], str) and state["kwargs"] == {}
        and isinstance(state["trigger"], IntervalTrigger)
        and (state["next_run_time"] is None or isinstance(state["next_run_time"], datetime))
        and isinstance(state["executor"], str) and isinstance(state["name"], str)
        and isinstance(state["coalesce"], bool)
        and isinstance(state["max_instances"], int) and not isinstance(state["max_instances"], bool)
        and (state["misfire_grace_time"] is None or isinstance(state["misfire_grace_time"], int))
    )


def prepare_sidecar(path: Path) -> None:
    """Create the sidecar 0600 (its directory 0700 if new) or check the existing one."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_file(path)
    if not path.exists():
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            _check_file(path)
    _verified_states(path)


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """An advisory lock (flock) on the sidecar's directory for as long as the block
    runs: no extra file, and no interference with SQLite's own (POSIX) locks on the
    sidecar. Refused with SchedulerStoreError after SIDECAR_LOCK_SECONDS."""
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + SIDECAR_LOCK_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SchedulerStoreError(
                        f"the directory of scheduler sidecar {path} stayed locked by another process for "
                        f"{SIDECAR_LOCK_SECONDS:g} s"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


# ------------------------------------------------------------------ the scheduler


class _OverlapFilter(logging.Filter):
    """A wake-up while the previous activation still runs is expected (max_instances=1
    and coalesce keep it to one run): APScheduler's warning about it is noise here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "maximum number of running instances reached" not in record.getMessage()


_SCHEDULER_LOG = logging.getLogger("powercontext.runtime.apscheduler")
_SCHEDULER_LOG.addFilter(_OverlapFilter())


class SidecarScheduler:
    """An AsyncIOScheduler whose only job store is the sidecar and whose only job is
    the fixed source-window job of one Runtime database."""

    def __init__(self, path: Path, key: str, seconds: float) -> None:
        self.path = path
        self.key = key
        self.seconds = seconds
        self.scheduler: Any = None
        self.repairs: tuple[str, ...] = ()  # job settings found wrong in the sidecar and rewritten

    def _trigger(self):
        from apscheduler.triggers.interval import IntervalTrigger

        return IntervalTrigger(seconds=self.seconds, timezone=timezone.utc)

    async def start(self) -> None:
        """Start paused, restore or reconcile the fixed job, then resume."""
        from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
        from apscheduler.schedulers.asyncio import AsyncIOScheduler

        from sqlalchemy.exc import SQLAlchemyError

        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Two processes opening one Runtime at once would both create APScheduler's table
        # ("table apscheduler_jobs already exists") and both add the job: one at a time.
        with _exclusive(self.path):
            prepare_sidecar(self.path)
            self.scheduler = AsyncIOScheduler(
                jobstores={JOBSTORE: SQLAlchemyJobStore(url=f"sqlite:///{self.path}")}, timezone=timezone.utc,
                logger=_SCHEDULER_LOG,
            )
            try:
                self.scheduler.start(paused=True)
                self._reconcile()
            except BaseException as exc:
                await self.shutdown()
                if isinstance(exc, SQLAlchemyError):
                    raise SchedulerStoreError(f"scheduler sidecar {self.path} cannot be used: {exc}") from None
                raise
        self.scheduler.resume()

    def _add_job(self) -> None:
        self.scheduler.add_job(DISPATCHER, self._trigger(), id=JOB_ID, args=(self.key,), jobstore=JOBSTORE,
                               replace_existing=True, **_JOB_SETTINGS)

    def _reconcile(self) -> None:
        job = self.scheduler.get_job(JOB_ID, JOBSTORE)
        if job is None:
            self._add_job()
            return
        wrong = [f"{name} {getattr(job, name)!r} → {value!r}" for name, value in _JOB_SETTINGS.items()
                 if getattr(job, name) != value or type(getattr(job, name)) is not type(value)]
        if job.next_run_time is None:
            wrong.append("paused (no next run time) → scheduled")
        if wrong:
            # A job that names no executor, allows no instance or has no next run time
            # would show "every N s" and never run: written again as this module writes it.
            log.warning("scheduler sidecar %s: repaired the job (%s)", self.path, "; ".join(wrong))
            self.repairs = tuple(wrong)
            self._add_job()
            return
        if tuple(job.args) != (self.key,):  # the database moved with its sidecar
            self.scheduler.modify_job(JOB_ID, JOBSTORE, args=(self.key,))
        if getattr(job.trigger, "interval", None) != timedelta(seconds=self.seconds):
            # The configuration wins: the next run is recalculated from the new interval.
            self.scheduler.reschedule_job(JOB_ID, JOBSTORE, trigger=self._trigger())

    def pause(self) -> None:
        if self.scheduler is not None and self.scheduler.running:
            self.scheduler.pause()

    async def shutdown(self) -> None:
        scheduler, self.scheduler = self.scheduler, None
        if scheduler is None or not scheduler.running:
            return
        scheduler.shutdown(wait=False)  # runs on the loop's next iteration
        for _ in range(1000):
            if not scheduler.running:
                break
            await asyncio.sleep(0)

    def next_run_time(self):
        if self.scheduler is None:
            return None
        job = self.scheduler.get_job(JOB_ID, JOBSTORE)
        return None if job is None else job.next_run_time


def job_count(path: Path) -> int:
    """Rows in a sidecar's job table (read-only; for status and tests)."""
    if not Path(path).exists():
        return 0
    con = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)
    try:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (JOB_TABLE,)).fetchone():
            return 0
        return con.execute(f"SELECT COUNT(*) FROM {JOB_TABLE}").fetchone()[0]
    finally:
        con.close()
