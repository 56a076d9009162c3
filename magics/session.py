"""The database the magics have open: one MemoryService on the private loop, plus the
local seekdb server if ``open --seekdb`` started it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, TypeVar
from urllib.parse import urlparse, urlunparse

import powercontext as pc

from .errors import PcMemUserError
from powercontext.loop import LoopRunner, default_runner
from powercontext.redaction import redact

__all__ = ["Session", "redact", "with_database"]

T = TypeVar("T")


def with_database(server_url: str, database: str) -> str:
    """``oceanbase://root@host:port/`` + ``db`` → ``oceanbase://root@host:port/db``."""
    return urlunparse(urlparse(server_url)._replace(path="/" + database))


class Session:
    """What ``%pcmem open`` opened. ``run`` executes a coroutine on the private loop."""

    def __init__(self, runner: LoopRunner | None = None) -> None:
        self.runner = runner or default_runner()
        self.svc: pc.MemoryService | None = None
        self.target: str | None = None
        self.server: Any = None  # a SeekdbServer this session started (stopped on close)
        self.server_url: str | None = None

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.runner.run(awaitable)

    @property
    def service(self) -> pc.MemoryService:
        if self.svc is None:
            raise PcMemUserError("no database is open: run `%pcmem open memory.db` (or an oceanbase:// URL, or --seekdb) first")
        return self.svc

    # ------------------------------------------------------------------ open / close

    def open(self, target: str, embedding: str | None = None) -> pc.MemoryService:
        """Open ``target`` (SQLite path or URL), then close what was open before (a
        failed open leaves the previous database open)."""
        svc = self.run(pc.open(target, embedding=embedding))
        self.close_service()
        self.svc, self.target = svc, target
        return svc

    def open_seekdb(self, base_dir: str | Path, database: str, embedding: str | None = None) -> pc.MemoryService:
        """Attach to the seekdb server running on ``base_dir`` or start one there
        (``POWERCONTEXT_OCEANBASE_URL`` wins if set), then open ``database`` on it."""
        from powercontext.backends.seekdb import ensure_server

        if self.server is None or not self.server.running:
            url, server = ensure_server(Path(base_dir).expanduser())
            self.server, self.server_url = server, url
        return self.open(with_database(self.server_url, database), embedding)

    def close_service(self) -> bool:
        svc, self.svc, self.target = self.svc, None, None
        if svc is None:
            return False
        self.run(svc.close())
        return True

    def close(self) -> bool:
        """Close the service and stop a server this session started."""
        closed = self.close_service()
        if self.server is not None:
            self.server.stop()
            closed = True
        self.server = self.server_url = None
        return closed

    # ------------------------------------------------------------------ facts

    def describe(self) -> dict[str, Any]:
        """Backend, capabilities, embedding profile, Memories and server, as a dict."""
        svc = self.service
        caps = self.run(svc.capabilities())
        profile = caps.embedding_profile
        heads = self.run(svc.memories())
        return {
            "target": redact(self.target or ""),
            "backend": svc.backend.name,
            "fts": caps.fts,
            "vector": caps.vector,
            "hybrid": caps.hybrid,
            "embedding": f"{profile.profile_id} ({profile.model}, {profile.dimension} dims)" if profile else "none",
            "memories": len(heads),
            "server": f"seekdb pid {self.server.pid} port {self.server.port}" if self.server is not None else "",
        }
