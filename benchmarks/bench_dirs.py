"""Where a benchmark keeps its databases: a new scratch directory, removed when the
benchmark ends, and (for OceanBase) a seekdb started on a new store inside it.

Every run used to leave its files in /tmp: a 100k-entry SQLite Memory is ~400 MB, and
the seekdb stores in the fixed /tmp/pc-bench-seekdb and /tmp/pc-scale100k-seekdb grew
to 3.8 and 4.6 GB over a few dozen runs (a new store takes ~1.2 GB at start; dropped
databases did not give the space back). A store of its own also means that no run
searches a server still busy with an earlier run's data. Starting seekdb takes ~3 s
either way. To bench a server of your own, set POWERCONTEXT_OCEANBASE_URL: nothing is
then started, and each benchmark drops the databases it made.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from powercontext.backends.seekdb.server import SeekdbServer, ensure_server


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A new temporary directory, removed with everything in it when the block ends."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def oceanbase(work: Path, **server_options) -> Iterator[tuple[str, SeekdbServer | None]]:
    """(URL, the server started, or None): POWERCONTEXT_OCEANBASE_URL if set, else a
    seekdb started on a new store in ``work`` (``server_options`` go to SeekdbServer)
    and stopped when the block ends; the store goes with ``work``."""
    url, server = ensure_server(work / "seekdb", **server_options)
    try:
        yield url, server
    finally:
        if server is not None:
            server.stop()


@contextlib.contextmanager
def workspace(prefix: str, with_oceanbase: bool = True) -> Iterator[tuple[Path, str | None]]:
    """(a scratch directory, the URL of a seekdb on a new store inside it, or None when
    ``with_oceanbase`` is false). The server stops before its store is removed."""
    with scratch(prefix) as work:
        if not with_oceanbase:
            yield work, None
            return
        with oceanbase(work) as (url, _server):
            yield work, url

