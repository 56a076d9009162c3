"""PowerContextRuntime: the local Runtime (RFC 001).

``PowerContextRuntime.open(path_or_url, …)`` builds the built-in profiles — SQLite (the
journal, bindings and cursors in the Runtime database file) or OceanBase (the same
tables in the same OceanBase database) — and hands them to ``assemble(storage,
memory_service, candidate_pipeline, scheduler)``, which accepts any ``RuntimeStorage``.
The Runtime is a client of the public MemoryService API and of that protocol only.

It owns process-level resources: the storage, the MemoryService, the lifecycle gate,
the per-scope locks, the processor and, when scheduling is on, an AsyncIOScheduler
whose job store is a SQLite sidecar. It never picks a candidate pipeline: without one,
explicit writes and search work, a non-empty window reports extraction unavailable, and
scheduling is refused.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import opening
from ..profiles import resolve as resolve_embedding
from ..errors import BackendUnavailableError, InvalidRuntimeRequestError, PowerContextError, shown
from ..memory.service import MemoryService
from .ids import bind_minter
from .lifecycle import LifecycleGate, ScopeLocks
from .processor import ScheduledSourceProcessor
from .scheduling import (
    SidecarScheduler,
    is_registered,
    job_count,
    register_processor,
    sidecar_path,
    unregister_processor,
    validate_interval,
)
from .composition import PowerContext, compose
from .scoped import ScopedRuntime
from .scopes import validate_scope
from .sqlite_storage import MEMORY, SQLiteRuntimeStorage, runtime_target, sqlite_database_path
from .storage import RuntimeStorage
from .trigger import SourceWindowTrigger, window_limit

DEFAULT_WINDOW_LIMIT = 100


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    """Scheduled processing: an interval in seconds and the sidecar file for the job
    store (default: next to a SQLite database, or in the user's cache directory)."""

    seconds: float
    sidecar_path: str | os.PathLike[str] | None = None


class _Selector:
    """``runtime.sources`` / ``runtime.memory``: ``.for_scope(scope)``."""

    def __init__(self, runtime: "PowerContextRuntime", kind: str) -> None:
        self._runtime, self._kind = runtime, kind

    def for_scope(self, scope: str):
        context = self._runtime.context(scope)
        return context.sources if self._kind == "sources" else context.artifacts.memory

    def __repr__(self) -> str:
        return f"<runtime.{self._kind}: use .for_scope(scope)>"


def _check_pipeline(pipeline: Any) -> None:
    if pipeline is not None and not asyncio.iscoroutinefunction(getattr(pipeline, "extract", None)):
        raise InvalidRuntimeRequestError(
            "candidate_pipeline must have `async def extract(sources, artifacts, current)` (the CandidatePipeline "
            f"protocol); got {type(pipeline).__name__}"
        )


def _is_server_url(target: str) -> bool:
    return target.split("://", 1)[0] in ("oceanbase", "mysql") if "://" in target else False


async def _open_memory(target: str, key: str, **options: Any) -> MemoryService:
    """The MemoryService on the Runtime database; a raw driver error (a file that is
    not a database, a server that is not OceanBase) becomes BackendUnavailableError."""
    try:
        return await opening.open(target, **options)
    except PowerContextError:
        raise
    except Exception as exc:  # noqa: BLE001 - typed at the Runtime boundary
        raise BackendUnavailableError(f"cannot open the Memory database {key}: {type(exc).__name__}: {exc}") from exc


class PowerContextRuntime:
    """Use ``await PowerContextRuntime.open(...)`` or ``await PowerContextRuntime.assemble(...)``."""

    def __init__(self, storage: RuntimeStorage, memory_service: MemoryService, candidate_pipeline: Any,
                 scheduler: SchedulerConfig | None, source_window_limit: int, database_path: str | None) -> None:
        self.storage = storage
        self.memory_service = memory_service
        self.candidate_pipeline = candidate_pipeline
        self.source_window_limit = source_window_limit
        self.schedule = scheduler
        self.trigger = SourceWindowTrigger()
        self._gate = LifecycleGate(storage.key)
        self.processor = ScheduledSourceProcessor(self._gate, storage, self.trigger.name,
                                                  lambda scope: self.memory.for_scope(scope).flush())
        self.sources = _Selector(self, "sources")
        self.memory = _Selector(self, "memory")
        self.probes: dict[str, str] = {}
        self.sidecar: Path | None = None
        self._database_path = database_path
        self._scope_locks = ScopeLocks()
        self._contexts: dict[str, PowerContext] = {}
        self._scheduler: SidecarScheduler | None = None
        self._close_task: asyncio.Future | None = None

    def __repr__(self) -> str:
        state = "closed" if self._gate.closing else "open"
        sched = f", every {self.schedule.seconds:g} s" if self.schedule else ""
        return f"PowerContextRuntime({self.storage.key!r}, {state}{sched})"

    @property
    def key(self) -> str:
        return self.storage.key

    @property
    def closed(self) -> bool:
        return self._gate.closing

    # ------------------------------------------------------------------ construction

    @classmethod
    async def open(
        cls,
        target: Any,
        *,
        candidate_pipeline: Any = None,
        source_window_limit: int = DEFAULT_WINDOW_LIMIT,
        schedule_seconds: float | None = None,
        scheduler_path: str | os.PathLike[str] | None = None,
        embedding: Any = None,
        **service_options: Any,
    ) -> "PowerContextRuntime":
        """Open (creating if needed) a Runtime database: a SQLite path (relative paths
        are made absolute now), ``sqlite:///path.db``, ``:memory:`` (no scheduling), or
        ``oceanbase://user[:password]@host:port/database``.

        Returns only after the Runtime tables, the Memory schema, full-text search and
        — with ``embedding`` — the vector projection answered their probes. Invalid
        window, scheduler, pipeline or embedding configuration is refused before any
        storage opens. ``service_options`` go to the MemoryService (``ids``, ``policy``,
        ``search_log``: scoped searches are then logged, see ``svc.search_log()``)."""
        limit = window_limit(source_window_limit)
        _check_pipeline(candidate_pipeline)
        if "pipeline" in service_options:
            raise InvalidRuntimeRequestError("pass the candidate pipeline as candidate_pipeline=, not pipeline=")
        target = runtime_target(target)
        server = _is_server_url(target)
        if server:
            from .oceanbase_storage import oceanbase_database_key

            key, database_path = oceanbase_database_key(target)[0], None
        else:
            database_path = sqlite_database_path(target)
            key = f"sqlite:{database_path}"
        schedule = None
        if schedule_seconds is not None:
            schedule = cls._check_schedule(SchedulerConfig(schedule_seconds, scheduler_path), candidate_pipeline, key,
                                           database_path)
        elif scheduler_path is not None:
            raise InvalidRuntimeRequestError("scheduler_path needs schedule_seconds")
        try:
            model = resolve_embedding(embedding)
        except (TypeError, ValueError) as exc:
            raise InvalidRuntimeRequestError(f"invalid embedding configuration: {exc}") from None

        svc = storage = None
        try:
            svc = await _open_memory(target if server else database_path, key, embedding=model,
                                     pipeline=candidate_pipeline, **service_options)
            if server:
                from .oceanbase_storage import OceanBaseRuntimeStorage

                storage = await OceanBaseRuntimeStorage.open(target)
            else:
                storage = await SQLiteRuntimeStorage.open(database_path)
            return await cls._assemble(storage, svc, candidate_pipeline, schedule, limit, database_path)
        except BaseException:
            if storage is not None:
                await storage.close()
            if svc is not None:
                await svc.close()
            raise

    @classmethod
    async def assemble(
        cls,
        storage: RuntimeStorage,
        memory_service: MemoryService,
        candidate_pipeline: Any = None,
        scheduler: SchedulerConfig | None = None,
        *,
        source_window_limit: int = DEFAULT_WINDOW_LIMIT,
    ) -> "PowerContextRuntime":
        """A Runtime over any ``RuntimeStorage`` and a MemoryService on the same
        database. ``candidate_pipeline`` must be the service's own pipeline (build the
        service with ``MemoryService(backend, pipeline=candidate_pipeline)``); None
        means no extraction. The Runtime takes ownership: ``close()`` closes both.
        It wraps ``memory_service.ids`` so a scope's first Revision takes its bound id."""
        limit = window_limit(source_window_limit)
        _check_pipeline(candidate_pipeline)
        missing = [name for name in ("profile", "key", "open_scope", "pending_scopes", "progress", "bindings", "probe",
                                     "close") if not hasattr(storage, name)]
        if missing:
            raise InvalidRuntimeRequestError(f"storage does not implement RuntimeStorage: missing {', '.join(missing)}")
        if not isinstance(memory_service, MemoryService):
            raise InvalidRuntimeRequestError(f"memory_service must be a MemoryService, got {type(memory_service).__name__}")
        database_path = getattr(storage, "path", None)
        if scheduler is not None:
            scheduler = cls._check_schedule(scheduler, candidate_pipeline, storage.key, database_path)
        return await cls._assemble(storage, memory_service, candidate_pipeline, scheduler, limit, database_path)

    @staticmethod
    def _check_schedule(config: SchedulerConfig, pipeline: Any, key: str, database_path: str | None) -> SchedulerConfig:
        if not isinstance(config, SchedulerConfig):
            raise InvalidRuntimeRequestError(f"scheduler must be a SchedulerConfig(seconds, sidecar_path), got {shown(config)}")
        seconds = validate_interval(config.seconds)
        if pipeline is None:
            raise InvalidRuntimeRequestError(
                "scheduled Source processing needs a candidate_pipeline: the Runtime does not pick one for you"
            )
        if database_path == MEMORY:
            raise InvalidRuntimeRequestError(
                "a scheduled Runtime needs a file-backed database: ':memory:' has no stable sidecar or processor key"
            )
        if is_registered(key):
            from .errors import RuntimeOwnershipError

            raise RuntimeOwnershipError(f"a scheduled Runtime on {key} is already open in this process; close it first")
        return SchedulerConfig(seconds, sidecar_path(config.sidecar_path, key, database_path))

    @classmethod
    async def _assemble(cls, storage, svc, pipeline, schedule, limit, database_path) -> "PowerContextRuntime":
        if pipeline is not None and svc.pipeline is not pipeline:
            raise InvalidRuntimeRequestError(
                "memory_service runs another candidate pipeline than candidate_pipeline; build it with "
                "MemoryService(backend, pipeline=candidate_pipeline)"
            )
        bind_minter(svc)
        runtime = cls(storage, svc, pipeline, schedule, limit, database_path)
        await runtime._probe()
        if schedule is not None:
            await runtime._start_scheduler()
        return runtime

    async def _probe(self) -> None:
        """Startup probes: the Runtime tables, the Memory schema, full-text search and,
        when an embedding model is configured, the vector projection."""
        probes = dict(await self.storage.probe())
        await self.memory_service.memories()  # the Memory schema answers a read
        probes["memory_schema"] = "ok"
        caps = await self.memory_service.capabilities()
        if not caps.fts:
            raise BackendUnavailableError("the Memory backend reports no full-text search")
        probes["fts"] = "ok"
        if self.memory_service.embedding is not None:
            if not caps.vector:
                raise BackendUnavailableError(
                    "an embedding model is configured but the database has no usable vector projection for its profile"
                )
            probes["vector"] = f"ok ({caps.embedding_profile.profile_id}, {caps.embedding_profile.dimension} dims)"
        else:
            probes["vector"] = "not configured"
        self.probes = probes

    async def _start_scheduler(self) -> None:
        """Register the processor for the database key, then start the scheduler
        paused, restore or reconcile the fixed job, and resume."""
        register_processor(self.key, self.processor)
        scheduler = SidecarScheduler(Path(self.schedule.sidecar_path), self.key, self.schedule.seconds)
        try:
            await scheduler.start()
        except BaseException:
            unregister_processor(self.key, self.processor)
            raise
        self._scheduler, self.sidecar = scheduler, scheduler.path

    # ------------------------------------------------------------------ scopes

    def context(self, scope: str) -> PowerContext:
        """The scope's PowerContext composition root (built once per scope)."""
        self._gate.check()
        context = self._contexts.get(scope) if isinstance(scope, str) else None
        if context is None:
            scope = validate_scope(scope)
            context = self._contexts[scope] = compose(ScopedRuntime(
                scope, store=self.storage.open_scope(scope), service=self.memory_service, gate=self._gate,
                lock=self._scope_locks(scope), trigger=self.trigger, candidate_pipeline=self.candidate_pipeline,
                source_window_limit=self.source_window_limit,
            ))
        return context

    async def bindings(self):
        """Every scope → Memory binding of this database."""
        async with self._gate.admit():
            return await self.storage.bindings()

    async def progress(self):
        """Every known scope with its journal high watermark and cursor."""
        async with self._gate.admit():
            return await self.storage.progress(self.trigger.name)

    async def status(self) -> dict[str, Any]:
        """What the Runtime is and how far every scope is (for magics and widgets)."""
        async with self._gate.admit():
            progress = await self.storage.progress(self.trigger.name)
        scheduler = self._scheduler
        return {
            "database": self.storage.key,
            "profile": self.storage.profile,
            "candidate_pipeline": type(self.candidate_pipeline).__name__ if self.candidate_pipeline else "none",
            "source_window_limit": self.source_window_limit,
            "schedule": f"every {self.schedule.seconds:g} s" if self.schedule else "off",
            "scheduler_sidecar": str(self.sidecar) if self.sidecar else "",
            "scheduler_jobs": job_count(self.sidecar) if self.sidecar else 0,
            "next_run": str(scheduler.next_run_time()) if scheduler else "",
            "processor_runs": self.processor.runs,
            "scopes": len(progress),
            "pending_sources": sum(p.pending for p in progress),
            # hand-edited state the Runtime refuses to build on, and sidecar job settings it repaired
            "problems": "; ".join(p.problem for p in progress if p.problem) or "none",
            "scheduler_repairs": "; ".join(scheduler.repairs) if scheduler and scheduler.repairs else "none",
            **{f"probe:{k}": v for k, v in self.probes.items()},
        }

    # ------------------------------------------------------------------ lifecycle

    async def close(self) -> None:
        """Pause scheduling, refuse new operations, wait for admitted operations and an
        active scheduled window, then stop the scheduler and close the Memory and
        Runtime storage. Idempotent; if the awaiting caller is cancelled, the shutdown
        carries on and a later ``close()`` waits for it to finish."""
        if self._close_task is None:
            self._close_task = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._close_task)

    async def _shutdown(self) -> None:
        if self._scheduler is not None:
            self._scheduler.pause()
        self._gate.close()
        await self._gate.drained()
        async with self.processor.lock:  # an active scheduled run finishes its window first
            pass
        if self._scheduler is not None:
            await self._scheduler.shutdown()
            unregister_processor(self.key, self.processor)
        try:
            await self.memory_service.close()
        finally:
            await self.storage.close()

    async def __aenter__(self) -> "PowerContextRuntime":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
