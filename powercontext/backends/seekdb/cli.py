"""The seekdb launcher's command line: ``python -m powercontext.backends.seekdb``."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from ...errors import PowerContextError
from .server import CLI_DATABASE, SeekdbServer, SeekdbStartError
from .reset import reset_store
from .store import ENV_DIR, default_store, note_checkout

__all__ = ["run"]


def run(argv: list[str] | None = None) -> int:
    """``python -m powercontext.backends.seekdb start|stop|status|reset``.

    The store (``--dir``) defaults to this checkout's own (``store.default_store``);
    ``start`` and ``status`` add a line when other checkouts use it too. ``reset`` stops
    the store's server and removes the store, databases and all — the way out of one
    wedged by killed runs — and refuses while a harness run holds it.

    ``start`` leaves the server running after the CLI exits (no atexit, no parent-death
    signal) and prints, like Jupyter's token URL, a URL to paste into ``pc.open`` as
    is: ``oceanbase://root:PASSWORD@127.0.0.1:PORT/pc`` (the password is the one in
    ``DIR/root.password``, shown only on this terminal). ``status`` prints the same two
    lines (the URL alone on the second) and exits 0 if running, 3 if stopped — or if
    an interrupted start left a seekdb holding the directory, which it names; ``stop``
    ends that one too, and ``start`` replaces it. A SIGTERM during ``start`` (as
    ``timeout`` sends) stops what the start launched.
    """
    parser = argparse.ArgumentParser(prog="python -m powercontext.backends.seekdb",
                                     description="Run a local seekdb (OceanBase kernel) server.")
    parser.add_argument("command", choices=("start", "stop", "status", "reset"))
    parser.add_argument("--dir", default=None,
                        help=f"base directory (default: ${ENV_DIR}, else this checkout's own store, {default_store()})")
    parser.add_argument("--port", type=int, default=None, help="MySQL port (default: a free one)")
    parser.add_argument("--memory-budget", default="2G", help="seekdb memory_budget (default 2G)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for start/stop")
    args = parser.parse_args(argv)

    base = Path(args.dir).expanduser().resolve() if args.dir else default_store().resolve()
    if args.command == "reset":
        try:
            print("\n".join(reset_store(base)))
        except PowerContextError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if args.command == "start":
        base.mkdir(mode=0o700, parents=True, exist_ok=True)  # so the checkout is recorded before it starts
    notice = note_checkout(base) if base.is_dir() else None
    if notice:
        print(notice)
    running = SeekdbServer.attach(base)
    if args.command == "status":
        if running is None:
            strays = SeekdbServer.strays(base)
            for pid, port, private in strays:
                where = "in its private network namespace" if private else f"on port {port}"
                print(f"not running: an interrupted start left seekdb pid {pid} {where} holding dir={base}; "
                      "`stop` ends it, `start` replaces it")
            if not strays:
                print(f"stopped dir={base}")
            return 3
        # the URL alone on its own line, as `start` prints it: a line to paste into pc.open
        print(f"seekdb running: pid {running.pid}, port {running.port}, dir {base}")
        print(running.url_for(CLI_DATABASE))
        return 0
    if args.command == "stop":
        if running is not None:
            running.stop(timeout=args.timeout)
        ended = SeekdbServer.end_strays(base, timeout=args.timeout)
        print(f"stopped dir={base}" + (f" (ended the interrupted start's pid {', '.join(map(str, ended))})" if ended else ""))
        return 0
    if running is not None:
        print(f"seekdb already running: pid {running.pid}, dir {base}")
        print(running.url_for(CLI_DATABASE))
        return 0
    server = SeekdbServer(base, port=args.port, memory_budget=args.memory_budget, detach=True)
    previous = signal.signal(signal.SIGTERM, _terminated)  # start() stops what it launched on the way out
    try:
        server.start(timeout=args.timeout)
    except SeekdbStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    how = {"namespace": ", locked down before any network client could connect",
           "socket": f", root had no password for {server.exposure_seconds or 0:.3f} s"}.get(server.lockdown or "", "")
    print(f"seekdb running: pid {server.pid}, port {server.port}, dir {base}{how}")
    print(server.url_for(CLI_DATABASE))
    return 0


def _terminated(signum, frame) -> None:
    raise SystemExit(128 + signum)
