"""Threads that read a hybrid search's vector channel beside its full-text statement.

Both databases read the two channels of a hybrid search at once: the full-text
statement on the search's own connection, the vector statement on a connection of a
channel thread (OceanBase: the server runs them on two cores; SQLite: apsw releases the
GIL while SQLite steps, so the two scans overlap). A backend keeps one such connection
per channel thread. Rows read there are held to the search's own checks (the heads
re-read, every candidate against the verified manifest: retrieval.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from ..errors import ServiceClosedError


class ChannelPool:
    """Mixin of a database backend: the channel threads, created on first use and shut
    down by ``_close_channel_executor`` (close())."""

    _channel_pool: ThreadPoolExecutor | None = None
    _channel_pool_lock = threading.Lock()
    _channel_pool_closed = False
    # False: a hybrid search reads its channels one after the other on one connection
    # (a machine with one core gains nothing from two statements at once); benchmarks
    # switch it to measure the difference.
    concurrent_channels: bool = True

    def _channel_executor(self) -> ThreadPoolExecutor:
        """Threads for the vector statements of concurrent searches, one connection each
        (as many as the backend's workers, so no search waits for another's)."""
        with self._channel_pool_lock:
            if self._channel_pool_closed:  # a search racing close(): no new connection after it
                raise ServiceClosedError(f"{self.name} backend is closed: open the database again")
            if self._channel_pool is None:
                self._channel_pool = ThreadPoolExecutor(max_workers=self.max_workers,
                                                        thread_name_prefix=f"pc-{self.name}-vector")
            return self._channel_pool

    def _close_channel_executor(self) -> None:
        """No new channel read after this; returns once the running ones have ended."""
        with self._channel_pool_lock:
            pool, self._channel_pool, self._channel_pool_closed = self._channel_pool, None, True
        if pool is not None:
            pool.shutdown(wait=True)
