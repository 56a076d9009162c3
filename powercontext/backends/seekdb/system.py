"""The operating-system side of the seekdb launcher: free ports, process identity,
owner-only files, a private network namespace, generated passwords.

Kept apart from ``server.py`` so the launcher reads as the server's life cycle
(start, wait, stop, attach) while these are the Linux facts it relies on.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

__all__ = [
    "free_port", "port_in_use", "is_loopback", "pid_alive", "is_our_seekdb", "seekdb_processes", "in_own_network",
    "listen_port", "terminate", "private_files", "private_files_and_death_signal", "namespace_prefix",
    "new_password", "write_private",
]


def free_port() -> int:
    # Bind the wildcard address: seekdb listens on 0.0.0.0, so the port must be free there.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("0.0.0.0", 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR ignores TIME_WAIT leftovers (seekdb sets it too) but still fails
        # on a listening socket.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return True
        return False


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        return False


def pid_alive(pid: int) -> bool:
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


def is_our_seekdb(pid: int, base_dir: Path) -> bool:
    """Guard against a stale pid file whose pid now belongs to another program."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return pid_alive(pid)  # no /proc: trust the pid file
    args = [a.decode(errors="replace") for a in argv]
    return bool(args) and args[0].endswith("seekdb") and str(base_dir) in args


def _argv(pid: int) -> list[str]:
    try:
        return [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return []


def _base_dir_of(argv: list[str]) -> str | None:
    """The ``--base-dir`` of a seekdb command line (also behind the ``unshare … sh -c``
    wrapper of the private-namespace start), or None if it is not one."""
    if "--base-dir" not in argv or not any(a.endswith("/seekdb") for a in argv):
        return None
    i = argv.index("--base-dir")
    return argv[i + 1] if i + 1 < len(argv) else None


def seekdb_processes(base_dir: Path) -> list[int]:
    """Every live seekdb process of this user whose ``--base-dir`` is ``base_dir``: what
    holds the directory, with or without a pid file (an interrupted start leaves none)."""
    found, proc, me = [], Path("/proc"), os.getuid()
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            if entry.stat().st_uid != me:
                continue
        except OSError:
            continue
        if _base_dir_of(_argv(pid)) == str(base_dir) and pid_alive(pid):
            found.append(pid)
    return sorted(found)


def listen_port(pid: int) -> int | None:
    """The ``--port`` a seekdb process was launched with."""
    argv = _argv(pid)
    try:
        return int(argv[argv.index("--port") + 1])
    except (ValueError, IndexError):
        return None


def in_own_network(pid: int) -> bool:
    """True if ``pid`` shares this process's network namespace (False: it runs in a
    private one, reachable by nobody)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net")
    except OSError:
        return True


def terminate(pid: int, timeout: float = 15) -> bool:
    """SIGTERM, then SIGKILL after ``timeout`` s; True once ``pid`` is gone."""
    import time

    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return True
            time.sleep(0.05)
    return not pid_alive(pid)


def _set_parent_death_signal() -> None:
    """Runs in the child between fork and exec: ask Linux to SIGKILL seekdb if the
    thread that started it dies (covers a test process killed with SIGKILL, where
    atexit never runs)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def private_files() -> None:
    """In the child: everything seekdb creates (data, logs, socket) is owner-only."""
    os.umask(0o077)


def private_files_and_death_signal() -> None:
    private_files()
    _set_parent_death_signal()


# A network namespace of its own with a veth pair (seekdb refuses to start when the
# only interface is lo); both ends stay inside, so nothing can reach the server or be
# reached from it. 198.51.100.0/24 is TEST-NET-2 (documentation addresses).
_NAMESPACE_SETUP = ("ip link set lo up && ip link add pc0 type veth peer name pc1 && "
                    "ip addr add 198.51.100.7/32 dev pc0 && ip link set pc0 up && ip link set pc1 up")
_namespace_prefix_cache: list[list[str] | None] = []


def namespace_prefix() -> list[str] | None:
    """The argv prefix that runs a command in a private network namespace, or None if
    this machine does not allow one (probed once per process)."""
    if _namespace_prefix_cache:
        return _namespace_prefix_cache[0]
    import shutil

    found = None
    if sys.platform.startswith("linux") and shutil.which("unshare") and shutil.which("ip"):
        candidates = [["unshare", "--net"]] if os.geteuid() == 0 else []
        candidates.append(["unshare", "--user", "--map-root-user", "--net"])
        for prefix in candidates:
            try:
                probe = subprocess.run([*prefix, "sh", "-c", _NAMESPACE_SETUP], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if probe.returncode == 0:
                found = [*prefix, "sh", "-c", _NAMESPACE_SETUP + ' && exec "$@"', "seekdb-netns"]
                break
    _namespace_prefix_cache.append(found)
    return found


def new_password() -> str:
    import secrets

    return secrets.token_urlsafe(24)  # 32 characters of [A-Za-z0-9_-]: URL-safe as is


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new 0600 file, atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)
