"""``seekdb reset``: remove a store wedged by killed runs, refused while a process of
ours holds it. Its own module because it asks both the store's leases
(``store``) and its server (``server``), and the server imports the
store: arrows one way."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .server import SeekdbServer
from .store import StoreInUseError, live_leases

__all__ = ["reset_store"]


def reset_store(store: str | os.PathLike[str]) -> list[str]:
    """Remove ``store`` — its server's databases with it: the way out of a store wedged
    by killed runs. Refused (StoreInUseError, nothing removed) while a process of ours
    holds it: a live harness run's lease, its server, or a seekdb an interrupted start
    left (``seekdb stop`` ends those). Returns what was done, one line each."""
    store = Path(store).expanduser().resolve()
    if not store.exists():
        return [f"nothing to reset: {store} does not exist"]
    holders = live_leases(store)
    if holders:
        raise StoreInUseError(
            f"seekdb store {store} is in use by run pid {', '.join(map(str, holders))}: let it finish or stop it, "
            "then reset")
    server = SeekdbServer.attach(store)
    running = ([server.pid] if server is not None else []) + [pid for pid, _, _ in SeekdbServer.strays(store)]
    if running:
        raise StoreInUseError(
            f"seekdb store {store} is held by seekdb pid {', '.join(map(str, running))}: stop it first with "
            f"`python -m powercontext.backends.seekdb stop --dir {store}`, then reset")
    shutil.rmtree(store)
    return [f"removed {store} (its server's databases with it)"]
