"""The seekdb server's life cycle: start (with the root lockdown), wait, attach, stop,
and recovery from an interrupted start. ``__main__.py`` is the command line (``python -m``);
the facts this code relies on are listed there.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

from ...errors import BackendUnavailableError
from .system import (
    free_port,
    in_own_network,
    is_loopback,
    is_our_seekdb,
    listen_port,
    namespace_prefix,
    new_password,
    pid_alive,
    port_in_use,
    private_files,
    private_files_and_death_signal,
    seekdb_processes,
    terminate,
    write_private,
)
from .store import record_address
from .urls import oceanbase_url, oceanbase_url_from_env

__all__ = ["DEFAULT_DIR", "SeekdbServer", "SeekdbStartError", "ensure_server", "seekdb_binary"]

#: The one per-user store of earlier versions, shared by every checkout (issue 45). The
#: default is now per checkout: ``store.default_store()``. Kept for old callers.
DEFAULT_DIR = Path("~/.cache/powercontext/seekdb")

PID_FILE = "seekdb.pid"
PORT_FILE = "seekdb.port"
PASSWORD_FILE = "root.password"  # 0600; the URL the CLI prints carries it, nothing else does
#: Written once root has its password and the allow-list (the lockdown is done). A
#: directory with a password but without this went through an interrupted first start.
LOCKED_FILE = "root.locked"
CONSOLE_LOG = "seekdb.console.log"  # the binary's stdout/stderr; its real log is log/seekdb.log
SOCKET = "run/sql.sock"
#: Environment of every server this module starts.
SERVER_ENV = {"TELEMETRY_ENABLED": "false"}
#: The database the CLI's URL names (pc.open creates it on first use).
CLI_DATABASE = "pc"

# Fixed sizes from NOTES.md: smaller log disks are rejected, and these keep a test
# server at ~1.3 GB of disk.
_FIXED_PARAMETERS = {"datafile_size": "1G", "log_disk_size": "2G"}
_LOG_LINES = 30


class SeekdbStartError(BackendUnavailableError, RuntimeError):
    """The seekdb server did not become ready: it exited, timed out or could not launch.

    A ``PowerContextError`` like every refusal of the library (and still a RuntimeError
    for callers written against the launcher's first version).

    The message carries the command line and the last log lines; ``log_tail`` holds the
    same lines for programmatic use.
    """

    max_message_chars = None  # the command line and the log lines are what to read

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


#: What a new seekdb takes on disk: its 1G data file and its logs.
_NEEDS_GIB = 1.3


def _out_of_disk(base_dir: Path, tail: str) -> str:
    """A first line saying so when seekdb stopped for want of disk (its own code,
    OB_SERVER_OUTOF_DISK_SPACE, is otherwise the fifth of eight log lines). The free
    space is read as well as the log: under load, a make test once got the exit of a
    server on a full disk with no such line in the log it read (seekdb writes its log
    from a thread of its own), and the message said only "exited with status 1"."""
    try:
        free = shutil.disk_usage(base_dir).free / 2**30
    except OSError:
        free = None
    if "OB_SERVER_OUTOF_DISK_SPACE" not in tail and (free is None or free >= _NEEDS_GIB):
        return ""
    shown = "" if free is None else f": {free:.1f} GiB free"
    return (f"out of disk space on {base_dir}{shown}, and a new seekdb needs about "
            f"{_NEEDS_GIB} GiB (its {_FIXED_PARAMETERS['datafile_size']} data file and logs); free some space "
            f"or choose a base directory on another disk.\n")


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
        allow: str | None = None,
        isolate_bootstrap: bool | None = None,
    ) -> None:
        self.base_dir = Path(base_dir).expanduser().resolve()
        self.port = port
        self.memory_budget = str(memory_budget)
        self.host = host
        self.detach = detach
        #: Client IPs the server accepts (``ob_tcp_invited_nodes``): loopback, plus
        #: ``host`` when it is not loopback, unless given.
        self.allow = allow
        #: First start inside a private network namespace: None = when available.
        self.isolate_bootstrap = isolate_bootstrap
        self.startup_seconds: float | None = None  # wall time of the last start()
        #: How the root account was locked down by this object ("namespace": never
        #: reachable without password; "socket": through run/sql.sock as soon as the
        #: server accepted), None if it already had its password.
        self.lockdown: str | None = None
        #: Seconds root had no password while TCP was open (0.0 for "namespace").
        self.exposure_seconds: float | None = None
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
        return self._pid is not None and pid_alive(self._pid)

    @property
    def url(self) -> str:
        """``oceanbase://root:PASSWORD@HOST:PORT/``; add a database with :meth:`url_for`.
        It carries the root password: show it only to the server's owner."""
        if self.port is None:
            raise RuntimeError("the server has no port yet; call start() first")
        return oceanbase_url(self.host, self.port, password=self.password)

    def url_for(self, database: str) -> str:
        return oceanbase_url(self.host, self._require_port(), database, password=self.password)

    @property
    def password_file(self) -> Path:
        return self.base_dir / PASSWORD_FILE

    @property
    def password(self) -> str:
        """The root password generated at the first start ('' for a directory that
        has none yet)."""
        try:
            return self.password_file.read_text().strip()
        except OSError:
            return ""

    def allow_list(self) -> str:
        if self.allow:
            return self.allow
        nodes = ["127.0.0.1"]
        if not is_loopback(self.host):
            nodes.append(socket.gethostbyname(self.host))
        return ",".join(nodes)

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
        from ..driver import connect

        kwargs.setdefault("autocommit", True)
        return connect(host=self.host, port=self._require_port(), user="root",
                       password=self.password, database=database, **kwargs)

    def _socket_connect(self, password: str, timeout: float = 2):
        """Root over ``run/sql.sock``: reachable only by the owner of the 0700 dir."""
        from ..driver import connect

        return connect(unix_socket=str(self.base_dir / SOCKET), user="root", password=password,
                       autocommit=True, connect_timeout=timeout)

    def _require_port(self) -> int:
        if self.port is None:
            raise RuntimeError("the server has no port yet; call start() first")
        return self.port

    # -- lifecycle -------------------------------------------------------------------

    @classmethod
    def attach(cls, base_dir: str | os.PathLike[str], host: str = "127.0.0.1") -> "SeekdbServer | None":
        """The server already running on ``base_dir`` (from its pid/port files, on the
        host network), or None.

        The returned object can report status and ``stop()`` it, e.g. a server started
        by the CLI in another process.
        """
        base = Path(base_dir).expanduser().resolve()
        try:
            pid = int((base / PID_FILE).read_text().strip())
            port = int((base / PORT_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        if not (pid_alive(pid) and is_our_seekdb(pid, base) and in_own_network(pid)):
            return None
        server = cls(base, port=port, host=host, detach=True)
        server._pid = pid
        record_address(host, port, base)  # a stalled statement's error names this store
        return server

    @staticmethod
    def strays(base_dir: str | os.PathLike[str]) -> list[tuple[int, int | None, bool]]:
        """(pid, port, in a private network namespace) of every seekdb process holding
        ``base_dir`` that is not its attached server: what an interrupted start left."""
        base = Path(base_dir).expanduser().resolve()
        attached = SeekdbServer.attach(base)
        return [(pid, listen_port(pid), not in_own_network(pid)) for pid in seekdb_processes(base)
                if attached is None or pid != attached.pid]

    @staticmethod
    def end_strays(base_dir: str | os.PathLike[str], timeout: float = 15) -> list[int]:
        """Stop every stray seekdb holding ``base_dir`` (see ``strays``); their pids."""
        ended = [pid for pid, _, _ in SeekdbServer.strays(base_dir)]
        for pid in ended:
            terminate(pid, timeout)
        return ended

    @property
    def locked(self) -> bool:
        """True once this directory's root has its password and allow-list for sure."""
        return (self.base_dir / LOCKED_FILE).exists() and bool(self.password)

    def start(self, timeout: float = 60) -> "SeekdbServer":
        """Launch seekdb and wait until root can log in with its password. Returns self.

        The first start of a directory — and any start after a first start that was
        interrupted — generates or reuses the root password and locks the server down
        before any network client can reach it (module docstring). A seekdb left on the
        directory by an interrupted start is stopped first. If this call is interrupted
        (an exception, or SystemExit from the CLI's SIGTERM handler), whatever it
        launched is stopped. Raises SeekdbStartError (with the last log lines) if the
        port is busy, the directory already has a running server, the process exits, or
        ``timeout`` seconds pass.
        """
        if self.running:
            return self
        self.base_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.base_dir, 0o700)
        other = SeekdbServer.attach(self.base_dir)
        if other is not None:
            raise SeekdbStartError(
                f"a seekdb server (pid {other.pid}, port {other.port}) already runs on "
                f"{self.base_dir}; use SeekdbServer.attach() or stop it first"
            )
        SeekdbServer.end_strays(self.base_dir)  # they hold the directory: seekdb would refuse to start
        if self.port is None:
            self.port = free_port()
        elif port_in_use(self.port):
            raise SeekdbStartError(f"port {self.port} is already in use; pass another port or port=None")

        began = time.monotonic()
        deadline = began + timeout
        self._timeout = timeout
        self.lockdown = self.exposure_seconds = None
        try:
            if not self.locked:
                self._lock_down(deadline)
            self._launch([])
            # Right away, not once ready: a kill from here on leaves a server that
            # status reports and stop ends (it is locked down already).
            write_private(self.base_dir / PID_FILE, f"{self._proc.pid}\n")
            write_private(self.base_dir / PORT_FILE, f"{self.port}\n")
            self._wait_ready(deadline, isolated=False)
        except BaseException:
            self.stop()
            raise
        if not self.locked:  # the socket lockdown of a machine without namespaces
            write_private(self.base_dir / LOCKED_FILE, "root has its password and allow-list\n")
        record_address(self.host, self.port, self.base_dir)  # a stalled statement's error names this store
        self.startup_seconds = time.monotonic() - began
        return self

    def _lock_down(self, deadline: float) -> None:
        """Give root its password (a new one, or the one an interrupted first start had
        already written) inside a private network namespace, then record it."""
        if not self.password:
            write_private(self.password_file, new_password() + "\n")
        prefix = namespace_prefix() if self.isolate_bootstrap in (None, True) else None
        if self.isolate_bootstrap and prefix is None:
            raise SeekdbStartError("isolate_bootstrap=True, but this machine cannot create a network namespace")
        if prefix is None:
            return  # the host start locks down through the socket (exposure_seconds says how long)
        self._launch(prefix, die_with_parent=True)
        try:
            self._wait_ready(deadline, isolated=True)
        finally:
            self.stop()
        write_private(self.base_dir / LOCKED_FILE, "root has its password and allow-list\n")
        self.lockdown, self.exposure_seconds = "namespace", 0.0

    def _launch(self, prefix: list[str], die_with_parent: bool = False) -> None:
        """Start the binary (in ``prefix``, e.g. the private namespace). The server dies
        with this process unless it is detached — and the private-namespace server of a
        lockdown always does: it must never outlive the start that runs it."""
        argv = self.command()
        log_fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(log_fd, "ab") as log:
            where = " (private network namespace)" if prefix else ""
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')}{where} {' '.join(argv)}\n".encode())
            log.flush()
            use_pdeathsig = (
                (die_with_parent or not self.detach)
                and sys.platform.startswith("linux")
                # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so only
                # arm it from the main thread (an executor thread may end any time).
                and threading.current_thread() is threading.main_thread()
            )
            try:
                self._proc = subprocess.Popen(
                    [*prefix, *argv],
                    cwd=self.base_dir,
                    env={**os.environ, **SERVER_ENV},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # own process group: terminal/kernel SIGINT stays with us
                    preexec_fn=private_files_and_death_signal if use_pdeathsig else private_files,
                )
            except OSError as exc:
                raise SeekdbStartError(f"could not launch {argv[0]}: {exc}") from exc
        if not self.detach:
            with _OWNED_LOCK:
                _OWNED.add(self)

    def _wait_ready(self, deadline: float, *, isolated: bool) -> None:
        """Poll the unix socket until root logs in with its password (setting the
        password first if root has none), apply the allow-list, then — on the host
        network — confirm a TCP login like a client's."""
        import pymysql

        password = self.password
        locked_at = opened_at = None
        while True:
            code = self._proc.poll()
            if code is not None:
                self._forget()
                tail = _log_tail(self.base_dir)
                raise SeekdbStartError(
                    f"{_out_of_disk(self.base_dir, tail)}seekdb exited with status {code} before "
                    f"accepting connections on {self.host}:{self.port}\ncommand: {' '.join(self.command())}",
                    tail,
                )
            conn = None
            try:
                conn = self._socket_connect(password)
            except pymysql.err.OperationalError as exc:
                if exc.args and exc.args[0] == 1045:  # root has no password yet
                    try:
                        conn = self._socket_connect("")
                        opened_at = time.monotonic()
                        with conn.cursor() as cur:
                            cur.execute("ALTER USER root IDENTIFIED BY %s", (password,))
                        locked_at = time.monotonic()
                    except pymysql.err.MySQLError:
                        conn = None
            except (pymysql.err.MySQLError, OSError):
                conn = None
            if conn is not None:
                break
            if time.monotonic() > deadline:
                tail = _log_tail(self.base_dir)
                self.stop()
                raise SeekdbStartError(
                    f"seekdb did not accept connections on {self.host}:{self.port} within "
                    f"{self._timeout:g} s (stopped it)\ncommand: {' '.join(self.command())}",
                    tail,
                )
            time.sleep(0.02)
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW GLOBAL VARIABLES LIKE 'ob_tcp_invited_nodes'")
                row = cur.fetchone()
                if row is None or row[1] != self.allow_list():
                    cur.execute("SET GLOBAL ob_tcp_invited_nodes = %s", (self.allow_list(),))
        finally:
            conn.close()
        if locked_at is not None and not isolated:
            self.lockdown, self.exposure_seconds = "socket", locked_at - opened_at
        if isolated:
            return
        while True:  # a client's view: TCP, with the password, and a transaction
            try:
                self._confirm_transactions(self.connect(connect_timeout=2))
                return
            except pymysql.err.MySQLError as exc:
                if time.monotonic() > deadline or self._proc.poll() is not None:
                    tail = _log_tail(self.base_dir)
                    self.stop()
                    raise SeekdbStartError(
                        f"seekdb accepted root on its unix socket but not a transaction over TCP on "
                        f"{self.host}:{self.port} ({exc})",
                        tail,
                    ) from None
                time.sleep(0.05)

    @staticmethod
    def _confirm_transactions(con) -> None:
        """Begin and commit one transaction on ``con``, then close it. After a restart
        the server accepts logins before its transaction service has recovered: a
        BEGIN then fails with 4383 "transaction id is not ready" (seen under load in
        CI), so a login alone does not make the server ready for a client."""
        try:
            con.begin()
            with con.cursor() as cur:
                cur.execute("SELECT 1 FROM DUAL")
                cur.fetchall()
            con.commit()
        finally:
            con.close()

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
