"""``powercontext.open(target, embedding=None)``: one call to a ready MemoryService."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .analyzer import get as get_analyzer
from .profiles import resolve as resolve_embedding
from .backends.rules import require_utf8
from .errors import InvalidMemoryRequestError, shown
from .memory.service import MemoryService
from .redaction import redact
from .suggest import unknown_keyword


def _target(target: Any) -> str:
    """A path or URL as text; anything else is refused before a file is created (str()
    of None, 1.5, True or [] made database files called "None", "1.5", "True", "[]")."""
    if isinstance(target, os.PathLike):
        target = os.fspath(target)
    if not isinstance(target, str) or not target.strip():
        raise InvalidMemoryRequestError(
            f"pc.open() takes a SQLite path, sqlite:///path.db, :memory: or an oceanbase:// URL, got {shown(target)}"
        )
    require_utf8(target, "the database path or URL")
    if "\x00" in target:
        raise InvalidMemoryRequestError("the database path or URL contains a NUL character")
    return target


def _sqlite_path(target: str) -> str | None:
    if target == ":memory:":
        return target
    if target.startswith("sqlite:///"):
        return target[len("sqlite:///"):] or ":memory:"
    if target.startswith("sqlite://"):
        raise InvalidMemoryRequestError("use sqlite:///relative.db or sqlite:////absolute/path.db")
    if "://" not in target:
        return target
    return None


async def open(target: Any, embedding: Any = None, analyzer: str | None = None,  # noqa: A001
               **service_options: Any) -> MemoryService:
    """Open (creating if needed) a Memory database.

    ``target``: a SQLite path, ``sqlite:///path.db``, ``:memory:``, or
    ``oceanbase://user:password@host:port/database``. ``embedding``: None (full-text
    only), ``"minilm"`` (the bundled all-MiniLM-L6-v2), or an EmbeddingModel.

    A SQLite file is created 0600 in an existing directory (a missing directory is
    refused). A server URL without a database (``…:port/``) uses and creates the
    database ``pc``; ``svc.backend.default_database`` is then ``"pc"`` (else None) and an INFO log line
    says so. Errors never show the URL's password.

    ``analyzer``: the analyzer a NEW database is created with (``"v2"``, the default
    ``analyzer.ANALYZER_VERSION``: v1 + Snowball English stemming; or ``"v1"``). An
    existing database keeps the one it records (a file created as v1 opens as v1
    without ``analyzer=``); naming another raises
    AnalyzerMismatchError (migrate with ``svc.rebuild_projections(analyzer=...)``).
    """
    target = _target(target)
    if analyzer is not None:
        get_analyzer(analyzer)  # an unknown name is refused before any file or database is created
    for name in service_options:
        if name not in MemoryService.OPTIONS:
            raise InvalidMemoryRequestError(unknown_keyword("pc.open()", name, ("embedding", "analyzer", *MemoryService.OPTIONS)))
    MemoryService.check_options(**service_options)
    model = resolve_embedding(embedding)
    profile = None if model is None else model.profile
    path = _sqlite_path(target)
    if path is not None:
        from .backends.sqlite.backend import SQLiteMemoryBackend

        backend = await asyncio.to_thread(SQLiteMemoryBackend, path, profile, analyzer)
        return MemoryService(backend, embedding=model, **service_options)
    scheme = target.split("://", 1)[0].lower()  # urlparse would raise on a malformed host
    if scheme in ("oceanbase", "mysql"):
        from .backends.oceanbase.backend import OceanBaseMemoryBackend

        backend = await asyncio.to_thread(lambda: OceanBaseMemoryBackend(target, profile, analyzer=analyzer))
        return MemoryService(backend, embedding=model, **service_options)
    raise InvalidMemoryRequestError(
        f"cannot open {redact(target)!r}: use a SQLite path, sqlite:///path.db, :memory: or oceanbase://user@host:port/db"
    )
