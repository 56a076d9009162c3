"""ScheduledSourceProcessor: what one scheduled activation does (RFC 001 "Scheduled
processing").

It asks the storage for pending scopes (journal high watermark past the cursor) and
runs each scope's ordinary ``flush()``; one failing scope never stops the others.
APScheduler only wakes it up: it chooses no window and stores no cursor. The processor
lock keeps a run and Runtime shutdown from racing: close() waits for it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Awaitable, Callable

from .errors import RuntimeClosedError
from .lifecycle import LifecycleGate
from .requests import MemoryFlushResult
from .storage import RuntimeStorage

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ProcessorRun:
    started_at: str
    results: tuple[MemoryFlushResult, ...] = ()
    errors: tuple[str, ...] = field(default=())

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(r.scope for r in self.results)


class ScheduledSourceProcessor:
    """``flush`` is the scope's ordinary ``runtime.memory.for_scope(scope).flush``: the
    processor is handed what it uses, not the Runtime that owns it."""

    def __init__(self, gate: LifecycleGate, storage: RuntimeStorage, trigger_name: str,
                 flush: Callable[[str], Awaitable[MemoryFlushResult]]) -> None:
        self._gate, self._storage, self._trigger_name, self._flush = gate, storage, trigger_name, flush
        self.lock = asyncio.Lock()
        self.runs = 0
        self.last_run: ProcessorRun | None = None

    @property
    def closing(self) -> bool:
        return self._gate.closing

    async def run(self) -> ProcessorRun:
        started = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        async with self.lock:
            if self._gate.closing:
                return ProcessorRun(started)
            results, errors = [], []
            try:
                pending = await self._storage.pending_scopes(self._trigger_name)
            except RuntimeClosedError:
                return ProcessorRun(started)
            except Exception as exc:  # noqa: BLE001 - a scheduled wake-up must not die on a transient error
                log.warning("scheduled processing could not list pending scopes: %s", exc)
                pending, errors = [], [f"pending scopes: {type(exc).__name__}: {exc}"]
            for progress in pending:
                if self._gate.closing:
                    break
                try:
                    results.append(await self._flush(progress.scope))
                except RuntimeClosedError:
                    break
                except Exception as exc:  # noqa: BLE001 - continue with the other scopes
                    log.warning("scheduled flush of scope %r failed: %s", progress.scope, exc)
                    errors.append(f"{progress.scope}: {type(exc).__name__}: {exc}")
            self.runs += 1
            self.last_run = ProcessorRun(started, tuple(results), tuple(errors))
            return self.last_run
