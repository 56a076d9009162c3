"""A real, local OceanBase-kernel endpoint from the ``pylibseekdb`` wheel.

The wheel ships a ``seekdb`` server binary (OceanBase 4.3.5.x kernel, MySQL protocol)
next to its Python bindings. This module starts and stops that binary so tests,
notebooks and the evaluation harness all get an OceanBase endpoint the same way:

    with SeekdbServer(tmp_path / "seekdb") as server:     # ~1-1.5 s to ready
        svc = await pc.open(server.url_for("pc_test"))

    url, server = ensure_server(dir)   # honours POWERCONTEXT_OCEANBASE_URL first

    python -m powercontext.backends.seekdb start|status|stop [--dir D] [--port P]

Facts this code relies on (measured with seekdb 1.4.0.0 / ob_version() 4.3.5.3):

* Flags: ``--nodaemon --port P --base-dir D --parameter datafile_size=1G
  --parameter log_disk_size=2G --parameter memory_budget=2G``. ``log_disk_size`` below
  2G fails; ``memory_budget`` defaults to 80 % of RAM, so we always pass it. The data
  file is allocated up front: a base dir costs ~1.3 GB of disk.
* There is NO flag or parameter to choose the listen address: the server always listens
  on 0.0.0.0:P (``--parameter local_ip=…`` is silently ignored; the ``bind_address``
  variable only mirrors MySQL and shows ``*``). What does work is the tenant variable
  ``ob_tcp_invited_nodes`` (a client-IP allow-list); ``--variable
  ob_tcp_invited_nodes=…`` is overwritten during bootstrap, so we ``SET GLOBAL`` it
  right after the server accepts its first connection. Remote clients are therefore
  refused from then on, but can reach the password-less root account during the ~1 s
  between the listen socket opening and that statement.
* SIGTERM makes seekdb log the signal and then kill itself with SIGKILL (exit status
  -9 within ~0.1 s). That is its normal stop; committed rows survive via redo replay.
* An invalid ``--parameter`` value (e.g. ``memory_budget=abc`` or ``=100M``) makes the
  binary exit with status 1 within ~0.1 s and write nothing to its logs, so the start
  error quotes the command line.
* If the port is taken, seekdb still allocates its 1 GB data file before failing
  (~1 s, "fail to start net frame"), so we check the port ourselves first.

pymysql is imported inside functions only: importing powercontext must stay cheap and
must work without the ``oceanbase`` extra installed.
"""

from __future__ import annotations

import argparse
import atexit
import ipaddress
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_URL",
    "DEFAULT_DIR",
    "SeekdbStartError",
    "SeekdbServer",
    "seekdb_binary",
    "oceanbase_url",
    "oceanbase_url_from_env",
    "database_url",
    "drop_database",
    "ensure_server",
    "main",
]

#: Set this to an ``oceanbase://user@host:port/`` URL to use an existing server
#: instead of starting one (CI with a shared server, a developer's long-lived server).
ENV_URL = "POWERCONTEXT_OCEANBASE_URL"
#: Where the CLI keeps its server when ``--dir`` is not given.
DEFAULT_DIR = Path("~/.cache/powercontext/seekdb")

PID_FILE = "seekdb.pid"
PORT_FILE = "seekdb.port"
CONSOLE_LOG = "seekdb.console.log"  # the binary's stdout/stderr; its real log is log/seekdb.log

# Fixed sizes from NOTES.md: smaller log disks are rejected, and these keep a test
# server at ~1.3 GB of disk.
_FIXED_PARAMETERS = {"datafile_size": "1G", "log_disk_size": "2G"}
_LOG_LINES = 30


class SeekdbStartError(RuntimeError):
    """The seekdb server did not become ready: it exited, timed out or could not launch.

    The message carries the command line and the last log lines; ``log_tail`` holds the
    same lines for programmatic use.
    """

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message + (f"\n--- last log lines ---\n{log_tail}" if log_tail else ""))
        self.log_tail = log_tail


# --------------------------------------------------------------------------- helpers


def seekdb_binary() -> Path:
    """Path of the ``seekdb`` binary inside the installed ``pylibseekdb`` package.

    ``find_spec`` locates the package without importing it (the import would load the
    embedded client library, which we do not need to run a server).
    """
    import importlib.util

    spec = importlib.util.find_spec("pylibseekdb")
    if spec is None or not spec.submodule_search_locations:
        raise SeekdbStartError(
            "pylibseekdb is not installed; install the extra: pip install 'powercontext[oceanbase]'"
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "seekdb"
    if not binary.is_file():
        raise SeekdbStartError(f"pylibseekdb is installed but has no server binary at {binary}")
    return binary


def oceanbase_url(host: str, port: int, database: str = "") -> str:
    """``oceanbase://root@HOST:PORT/DATABASE`` (database may be empty)."""
    return f"oceanbase://root@{host}:{port}/{database}"


def database_url(server_url: str, database: str) -> str:
    """``server_url`` (any path) pointed at ``database``."""
    from urllib.parse import urlparse, urlunparse

    return urlunparse(urlparse(server_url)._replace(path="/" + database))


def drop_database(server_url: str, database: str) -> None:
    """``DROP DATABASE IF EXISTS`` on the server of ``server_url`` (tests and the
    harness create one database per run and clean up after themselves)."""
    from urllib.parse import unquote, urlparse

    from .driver import connect, database_identifier

    statement = f"DROP DATABASE IF EXISTS {database_identifier(database)}"  # validated before connecting
    p = urlparse(server_url)
    con = connect(host=p.hostname, port=p.port or 2881, user=unquote(p.username or "root"),
                  password=unquote(p.password or ""), autocommit=True, connect_timeout=5)
    try:
        with con.cursor() as cur:
            cur.execute(statement)
    finally:
        con.close()


def oceanbase_url_from_env() -> str | None:
    """The URL in ``POWERCONTEXT_OCEANBASE_URL``, or None when it is unset or empty."""
    value = os.environ.get(ENV_URL, "").strip()
    return value or None


def _free_port() -> int:
    # Bind the wildcard address: seekdb listens on 0.0.0.0, so the port must be free there.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("0.0.0.0", 0))
        return sock.getsockname()[1]


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR ignores TIME_WAIT leftovers (seekdb sets it too) but still fails
        # on a listening socket.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return True
        return False


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def _pid_alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie (an orphaned, unreaped seekdb counts as
    stopped: containers often run a PID 1 that never reaps)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _is_our_seekdb(pid: int, base_dir: Path) -> bool:
    """Guard against a stale pid file whose pid now belongs to another program."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _pid_alive(pid)  # no /proc: trust the pid file
    args = [a.decode(errors="replace") for a in argv]
    return bool(args) and args[0].endswith("seekdb") and str(base_dir) in args


def _tail(path: Path, lines: int, max_bytes: int = 256 * 1024) -> list[str]:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    return data.decode(errors="replace").splitlines()[-lines:]


def _log_tail(base_dir: Path) -> str:
    """Console output plus the last errors of seekdb's own log (the console only says
    where the log is; the reason for a failure is in ``log/seekdb.log``)."""
    parts = _tail(base_dir / CONSOLE_LOG, _LOG_LINES)
    errors: deque[str] = deque(maxlen=8)
    for line in _tail(base_dir / "log" / "seekdb.log", 4000, max_bytes=2 * 1024 * 1024):
        # Bootstrap always logs a few harmless submit_log_with_lock_ EDIAGs; skip them.
        if (" ERROR " in line or " EDIAG " in line) and "submit_log_with_lock_" not in line:
            errors.append(line[:400])
    if errors:
        parts += [f"--- errors from {base_dir / 'log' / 'seekdb.log'} ---", *errors]
    return "\n".join(parts)


def _set_parent_death_signal() -> None:
    """Runs in the child between fork and exec: ask Linux to SIGKILL seekdb if the
    thread that started it dies (covers a test process killed with SIGKILL, where
    atexit never runs)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# Servers this process started (not detached). A strong set, so a server whose object
# was dropped without stop() is still stopped when the interpreter exits.
_OWNED: set["SeekdbServer"] = set()
_OWNED_LOCK = threading.Lock()


@atexit.register
def _stop_owned_servers() -> None:
    with _OWNED_LOCK:
        servers = list(_OWNED)
    for server in servers:
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


# --------------------------------------------------------------------------- server


class SeekdbServer:
    """One seekdb server process on one base directory.

    ``start()`` launches the binary in its own session (so Ctrl-C / a notebook interrupt
    aimed at the caller does not kill it mid-write), waits until root can log in over
    the MySQL protocol, and records ``seekdb.pid``/``seekdb.port`` in ``base_dir``.
    Unless ``detach=True`` (used by the CLI), the server is stopped when this Python
    process exits: by ``atexit``, and by a parent-death signal if the process is killed.
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        port: int | None = None,
        memory_budget: str = "2G",
        host: str = "127.0.0.1",
        *,
        detach: bool = False,
    ) -> None:
        self.base_dir = Path(base_dir).expanduser().resolve()
        self.port = port
        self.memory_budget = str(memory_budget)
        self.host = host
        self.detach = detach
        self.startup_seconds: float | None = None  # wall time of the last start()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid: int | None = None  # set for attached (not started-by-us) servers too

    # -- introspection ---------------------------------------------------------------

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"SeekdbServer({str(self.base_dir)!r}, port={self.port}, pid={self.pid}, {state})"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else self._pid

    @property
    def running(self) -> bool:
        if self._proc is not None:
            return self._proc.poll() is None
        return self._pid is not None and _pid_alive(self._pid)

    @property
    def url(self) -> str:
        """``oceanbase://root@HOST:PORT/``; add a database with :meth:`url_for`."""
        if self.port is None:
            raise RuntimeError("the server has no port yet; call start() first")
        return oceanbase_url(self.host, self.port)

    def url_for(self, database: str) -> str:
        return oceanbase_url(self.host, self._require_port(), database)

    @property
    def log_path(self) -> Path:
        return self.base_dir / CONSOLE_LOG

    def command(self) -> list[str]:
        """The exact argv used to launch the server."""
        argv = [str(seekdb_binary()), "--nodaemon", "--port", str(self._require_port()),
                "--base-dir", str(self.base_dir)]
        for key, value in {**_FIXED_PARAMETERS, "memory_budget": self.memory_budget}.items():
            argv += ["--parameter", f"{key}={value}"]
        return argv

    def connect(self, database: str | None = None, **kwargs: Any):
        """A new ``pymysql`` connection as root (autocommit on unless overridden)."""
        import pymysql

        kwargs.setdefault("autocommit", True)
        return pymysql.connect(host=self.host, port=self._require_port(), user="root",
                               password="", database=database, **kwargs)

    def _require_port(self) -> int:
        if self.port is None:
            raise RuntimeError("the server has no port yet; call start() first")
        return self.port

    # -- lifecycle -------------------------------------------------------------------

    @classmethod
    def attach(cls, base_dir: str | os.PathLike[str], host: str = "127.0.0.1") -> "SeekdbServer | None":
        """The server already running on ``base_dir`` (from its pid/port files), or None.

        The returned object can report status and ``stop()`` it, e.g. a server started
        by the CLI in another process.
        """
        base = Path(base_dir).expanduser().resolve()
        try:
            pid = int((base / PID_FILE).read_text().strip())
            port = int((base / PORT_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        if not (_pid_alive(pid) and _is_our_seekdb(pid, base)):
            return None
        server = cls(base, port=port, host=host, detach=True)
        server._pid = pid
        return server

    def start(self, timeout: float = 60) -> "SeekdbServer":
        """Launch seekdb and wait until it accepts ``root`` logins. Returns self.

        Raises SeekdbStartError (with the last log lines) if the port is busy, the
        directory already has a running server, the process exits, or ``timeout``
        seconds pass.
        """
        import pymysql

        if self.running:
            return self
        self.base_dir.mkdir(parents=True, exist_ok=True)
        other = SeekdbServer.attach(self.base_dir)
        if other is not None:
            raise SeekdbStartError(
                f"a seekdb server (pid {other.pid}, port {other.port}) already runs on "
                f"{self.base_dir}; use SeekdbServer.attach() or stop it first"
            )
        if self.port is None:
            self.port = _free_port()
        elif _port_in_use(self.port):
            raise SeekdbStartError(f"port {self.port} is already in use; pass another port or port=None")

        argv = self.command()
        began = time.monotonic()
        with self.log_path.open("ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(argv)}\n".encode())
            log.flush()
            use_pdeathsig = (
                not self.detach
                and sys.platform.startswith("linux")
                # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so only
                # arm it from the main thread (an executor thread may end any time).
                and threading.current_thread() is threading.main_thread()
            )
            try:
                self._proc = subprocess.Popen(
                    argv,
                    cwd=self.base_dir,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # own process group: terminal/kernel SIGINT stays with us
                    preexec_fn=_set_parent_death_signal if use_pdeathsig else None,
                )
            except OSError as exc:
                raise SeekdbStartError(f"could not launch {argv[0]}: {exc}") from exc
        if not self.detach:
            with _OWNED_LOCK:
                _OWNED.add(self)

        deadline = began + timeout
        while True:
            code = self._proc.poll()
            if code is not None:
                self._forget()
                raise SeekdbStartError(
                    f"seekdb exited with status {code} before accepting connections on "
                    f"{self.host}:{self.port}\ncommand: {' '.join(argv)}",
                    _log_tail(self.base_dir),
                )
            try:
                conn = pymysql.connect(host=self.host, port=self.port, user="root",
                                       password="", connect_timeout=2)
            except pymysql.err.MySQLError:
                conn = None
            if conn is not None:
                break
            if time.monotonic() > deadline:
                tail = _log_tail(self.base_dir)
                self.stop()
                raise SeekdbStartError(
                    f"seekdb did not accept connections on {self.host}:{self.port} within "
                    f"{timeout:g} s (stopped it)\ncommand: {' '.join(argv)}",
                    tail,
                )
            time.sleep(0.1)
        try:
            if _is_loopback(self.host):
                # The only way to keep remote clients out (see module docstring).
                with conn.cursor() as cur:
                    cur.execute("SET GLOBAL ob_tcp_invited_nodes = '127.0.0.1'")
        finally:
            conn.close()
        self.startup_seconds = time.monotonic() - began
        (self.base_dir / PID_FILE).write_text(f"{self._proc.pid}\n")
        (self.base_dir / PORT_FILE).write_text(f"{self.port}\n")
        return self

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM, wait up to ``timeout`` s, then SIGKILL. Idempotent."""
        pid = self.pid
        if pid is not None and self.running:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            if not self._wait(timeout):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self._wait(5)
        if pid is not None and not self.running:
            try:
                ours = (self.base_dir / PID_FILE).read_text().strip() == str(pid)
            except OSError:
                ours = False
            if ours:  # never delete the files of a different server on this dir
                for name in (PID_FILE, PORT_FILE):
                    (self.base_dir / name).unlink(missing_ok=True)
        self._forget()

    def _wait(self, timeout: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running:
                return True
            time.sleep(0.05)
        return not self.running

    def _forget(self) -> None:
        with _OWNED_LOCK:
            _OWNED.discard(self)

    def __enter__(self) -> "SeekdbServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ensure_server(base_dir: str | os.PathLike[str], **kwargs: Any) -> tuple[str, SeekdbServer | None]:
    """An OceanBase URL to use, and the server to stop afterwards (None if not ours).

    1. ``POWERCONTEXT_OCEANBASE_URL`` if set: nothing is started.
    2. A server already running on ``base_dir`` (e.g. from the CLI): reused, not owned.
    3. Otherwise a new SeekdbServer on ``base_dir`` (kwargs go to its constructor).
    """
    url = oceanbase_url_from_env()
    if url is not None:
        return url, None
    running = SeekdbServer.attach(base_dir, host=kwargs.get("host", "127.0.0.1"))
    if running is not None:
        return running.url, None
    server = SeekdbServer(base_dir, **kwargs).start()
    return server.url, server


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """``python -m powercontext.backends.seekdb start|stop|status``.

    ``start`` leaves the server running after the CLI exits (no atexit, no parent-death
    signal) and prints its URL; ``status`` exits 0 if running, 3 if stopped.
    """
    parser = argparse.ArgumentParser(prog="python -m powercontext.backends.seekdb",
                                     description="Run a local seekdb (OceanBase kernel) server.")
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--dir", default=str(DEFAULT_DIR), help=f"base directory (default {DEFAULT_DIR})")
    parser.add_argument("--port", type=int, default=None, help="MySQL port (default: a free one)")
    parser.add_argument("--memory-budget", default="2G", help="seekdb memory_budget (default 2G)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds to wait for start/stop")
    args = parser.parse_args(argv)

    base = Path(args.dir).expanduser().resolve()
    running = SeekdbServer.attach(base)
    if args.command == "status":
        if running is None:
            print(f"stopped dir={base}")
            return 3
        print(f"running {running.url} pid={running.pid} dir={base}")
        return 0
    if args.command == "stop":
        if running is not None:
            running.stop(timeout=args.timeout)
        print(f"stopped dir={base}")
        return 0
    if running is not None:
        print(f"already running {running.url} pid={running.pid} dir={base}")
        return 0
    server = SeekdbServer(base, port=args.port, memory_budget=args.memory_budget, detach=True)
    try:
        server.start(timeout=args.timeout)
    except SeekdbStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(server.url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
