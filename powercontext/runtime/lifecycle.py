"""Local synchronization of one Runtime object graph (RFC 001 "Concurrency and
lifecycle").

* ``LifecycleGate`` admits application operations until shutdown begins, then refuses
  new ones (``RuntimeClosedError``) and lets the admitted ones finish.
* ``ScopeLocks`` serialize remember, revise, retire and flush within one scope.
* The processor lock (in ``processor.py``) keeps the scheduled processor from racing
  shutdown; each storage and backend serializes its own connection on its worker.

These locks coordinate one process. Durable monotonic state never depends on them:
the storage advances cursors with a conditional update in the database.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

from .errors import RuntimeClosedError


class LifecycleGate:
    def __init__(self, name: str) -> None:
        self.name = name
        self._active = 0
        self._closing = False
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def closing(self) -> bool:
        return self._closing

    @property
    def active(self) -> int:
        return self._active

    def check(self) -> None:
        if self._closing:
            raise RuntimeClosedError(f"the Runtime on {self.name} is closed; open a new one")

    @contextlib.asynccontextmanager
    async def admit(self) -> AsyncIterator[None]:
        self.check()
        self._active += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._active -= 1
            if self._active == 0:
                self._idle.set()

    def close(self) -> None:
        """Refuse new operations from now on (idempotent)."""
        self._closing = True

    async def drained(self) -> None:
        """Wait until every admitted operation has finished."""
        await self._idle.wait()


class ScopeLocks:
    """One asyncio.Lock per scope, created on first use."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def __call__(self, scope: str) -> asyncio.Lock:
        lock = self._locks.get(scope)
        if lock is None:
            lock = self._locks[scope] = asyncio.Lock()
        return lock
