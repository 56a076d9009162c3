"""A private asyncio event loop on a daemon thread, for calling the async service
from synchronous code (magics, widget callbacks, the harness's sync API).

Inside Jupyter the kernel thread already runs an event loop, so ``asyncio.run`` (or
``loop.run_until_complete``) there fails with "event loop is already running". The
runner instead submits each coroutine to its own loop with
``asyncio.run_coroutine_threadsafe`` and blocks the caller until the result is ready:

    runner = default_runner()
    svc = runner.run(pc.open("memory.db"))
    heads = runner.run(svc.memories())

One loop serves every service the process opens, so a service opened by the magics can
be handed to a widget (or back) without crossing loops.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Awaitable, TypeVar

__all__ = ["LoopRunner", "default_runner"]

T = TypeVar("T")


class LoopRunner:
    """Runs coroutines on one private event loop living in a daemon thread."""

    def __init__(self, name: str = "powercontext-loop") -> None:
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The private loop, started on first use."""
        with self._lock:
            if self._loop is None or self._loop.is_closed() or not self._thread.is_alive():  # type: ignore[union-attr]
                ready = threading.Event()
                loop = asyncio.new_event_loop()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name=self.name, daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def run(self, awaitable: Awaitable[T], timeout: float | None = None) -> T:
        """Run ``awaitable`` on the private loop and return its result (or raise its
        exception) in the calling thread. An interrupt cancels the coroutine."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("LoopRunner.run() called from its own loop thread: await the coroutine instead")
        future = asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), self.loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop and its thread (a later ``run`` starts a fresh one)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(5)
            if not loop.is_running():
                loop.close()


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


_DEFAULT = LoopRunner()


def default_runner() -> LoopRunner:
    """The process-wide runner shared by the magics, the widgets and the harness."""
    return _DEFAULT
