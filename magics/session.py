"""The database the magics have open: one MemoryService on the private loop, the
local seekdb server if ``open --seekdb`` started it, and the current Memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, TypeVar
from urllib.parse import urlparse, urlunparse

import powercontext as pc
from powercontext.errors import EmbeddingUnavailableError
from powercontext.loop import LoopRunner, default_runner
from powercontext.redaction import redact

from .errors import PcMemUserError

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
        # The current Memory (an artifact id): where `remember` without --memory writes,
        # and what `manifest`/`changes`/`verify` read without REF. Per open database.
        self.current: str | None = None
        self.open_line = "%pcmem open …"  # how to open the same database again (widgets say it once it is closed)

    def run(self, awaitable: Awaitable[T]) -> T:
        return self.runner.run(awaitable)

    @property
    def service(self) -> pc.MemoryService:
        if self.svc is None:
            raise PcMemUserError("no database is open: run `%pcmem open memory.db` (or an oceanbase:// URL, or --seekdb) first")
        return self.svc

    # ------------------------------------------------------------------ open / close

    def open(self, target: str, embedding: str | None = None, search_log: bool = False) -> pc.MemoryService:
        """Open ``target`` (SQLite path or URL), then close what was open before (a
        failed open leaves the previous database open)."""
        svc = self.run(pc.open(target, embedding=embedding, search_log=search_log))
        self.close_service()
        self.svc, self.target = svc, target
        return svc

    def open_seekdb(self, base_dir: str | Path, database: str, embedding: str | None = None,
                    search_log: bool = False) -> pc.MemoryService:
        """Attach to the seekdb server running on ``base_dir`` or start one there
        (``POWERCONTEXT_OCEANBASE_URL`` wins if set), then open ``database`` on it."""
        from powercontext.backends.seekdb.server import ensure_server

        if self.server is None or not self.server.running:
            url, server = ensure_server(Path(base_dir).expanduser())
            self.server, self.server_url = server, url
        return self.open(with_database(self.server_url, database), embedding, search_log)

    def close_service(self) -> bool:
        svc, self.svc, self.target, self.current = self.svc, None, None, None
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

    # ------------------------------------------------------------------ the current Memory

    def write_target(self, new: bool = False) -> tuple[str | None, str | None]:
        """Where `remember` without --memory writes: ``(artifact id or None to create
        one, the note to print)``. The current Memory if there is one; else the
        database's only Memory (adopted); else a new Memory when there is none.
        Several Memories and none current is refused: guessing would scatter entries."""
        if new or self.current is not None:
            return (None if new else self.current), None
        refs = self.run(self.service.memories())
        if not refs:
            return None, None
        if len(refs) == 1:
            self.current = refs[0].artifact_id
            return self.current, f"writing to {self.current}, the only Memory here (now current; `%pcmem use REF` to switch)"
        raise PcMemUserError(
            f"this database has {len(refs)} Memories and none is current: `%pcmem use REF` picks one "
            "(`%pcmem memories` lists them), `--memory REF` writes to one, `--new` creates another"
        )

    def current_ref(self, ref: Any, what: str) -> Any:
        """``ref`` as given, else the current Memory (its head), else a one-line error."""
        if ref is not None:
            return ref
        if self.current is None:
            raise PcMemUserError(f"{what}: give a Memory REF (`%pcmem memories` lists them) or pick one with `%pcmem use REF`")
        return self.current

    def warm_model(self) -> None:
        """Load the embedding model before the first call that needs it, and say so:
        the first load costs ~10 s, which silently looks like a hang."""
        model = getattr(self.svc, "embedding", None)
        if model is None or getattr(model, "loaded", True) or self.svc.backend.embedding_profile is None:
            return
        print(f"loading {getattr(model, 'name', 'the embedding model')} …", flush=True)
        try:
            model.load()
        except EmbeddingUnavailableError:
            pass  # the write commits full-text only and the service logs why

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
            "current": self._current_line(),
            "server": f"seekdb pid {self.server.pid} port {self.server.port}" if self.server is not None else "",
        }

    def _current_line(self) -> str:
        if self.current is None:
            return "none (the first `%pcmem remember` creates one; `%pcmem use REF` picks one)"
        head = self.run(self.service.head(self.current))
        m = head.manifest
        return f"{head.ref} · {len(m.active)} active · {len(m.inactive)} inactive"
