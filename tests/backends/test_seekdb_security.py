"""The local server is safe by default (issue 13, defect 6): a random root password
from the first start, kept in a 0600 file of a 0700 directory; no password-less login
is ever reachable over TCP; only loopback clients are invited; telemetry is off."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql
import pytest

from powercontext.backends.seekdb.server import PASSWORD_FILE, SeekdbServer
from powercontext.backends.seekdb.system import free_port


@pytest.fixture
def server_dir(tmp_path):
    path = tmp_path / "seekdb"
    yield path
    leftover = SeekdbServer.attach(path)
    if leftover is not None:
        leftover.stop()
    shutil.rmtree(path, ignore_errors=True)


def test_no_password_less_tcp_login_during_a_fresh_start(server_dir):
    """A prober hammers the port with root + empty password from before the launch
    until after start() returned: it must never get in."""
    port = free_port()
    server = SeekdbServer(server_dir, port=port)
    logins, answers, done = [], [], threading.Event()

    def probe():
        while not done.is_set():
            try:
                pymysql.connect(host="127.0.0.1", port=port, user="root", password="", connect_timeout=0.5).close()
                logins.append(time.monotonic())
            except pymysql.err.OperationalError as exc:
                if exc.args[0] != 2003:  # something answered (not "connection refused")
                    answers.append(exc.args[0])
            time.sleep(0.003)

    prober = threading.Thread(target=probe)
    prober.start()
    try:
        server.start()
        time.sleep(0.3)
    finally:
        done.set()
        prober.join()
    try:
        assert logins == []
        assert answers and set(answers) == {1045}  # the port was probed while open: access denied
        assert server.lockdown == "namespace" and server.exposure_seconds == 0.0

        # What the server exposes afterwards.
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("SELECT user, host FROM mysql.user")
            assert cur.fetchall() == (("root", "%"),)
            cur.execute("SHOW GLOBAL VARIABLES LIKE 'ob_tcp_invited_nodes'")
            assert cur.fetchone() == ("ob_tcp_invited_nodes", "127.0.0.1")
        conn.close()
        for kwargs in ({"host": "127.0.0.1", "port": port}, {"unix_socket": str(server_dir / "run/sql.sock")}):
            with pytest.raises(pymysql.err.OperationalError) as info:
                pymysql.connect(user="root", password="", connect_timeout=2, **kwargs)
            assert info.value.args[0] == 1045

        # File modes: nothing in the base dir is readable by group or others.
        assert stat.S_IMODE(server_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE((server_dir / PASSWORD_FILE).stat().st_mode) == 0o600
        loose, seen = [], 0
        for root, dirs, files in os.walk(server_dir):
            for name in dirs + files:
                path = Path(root, name)
                try:
                    info = path.lstat()
                except FileNotFoundError:  # the running server removed it since the listing (its WAL files)
                    continue
                seen += 1
                if not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) & 0o077:
                    loose.append(f"{path.relative_to(server_dir)} {oct(stat.S_IMODE(info.st_mode))}")
        assert seen > 10 and not loose, (seen, loose)

        # The password is in the URL (for the owner) and nowhere in the logs.
        password = (server_dir / PASSWORD_FILE).read_text().strip()
        assert password in server.url
        for log in [server_dir / "seekdb.console.log", *sorted((server_dir / "log").glob("*.log"))]:
            with log.open("rb") as fh:
                assert password.encode() not in fh.read(), log

        # A restart keeps the password and the allow-list; the new start needs no lockdown.
        server.stop()
        server.start()
        assert server.lockdown is None
        conn = server.connect()
        with conn.cursor() as cur:
            cur.execute("SHOW GLOBAL VARIABLES LIKE 'ob_tcp_invited_nodes'")
            assert cur.fetchone()[1] == "127.0.0.1"
        conn.close()
    finally:
        server.stop()


STRACED_START = """
import sys
from powercontext.backends.seekdb.server import SeekdbServer
server = SeekdbServer(sys.argv[1]).start()
environ = open(f"/proc/{server.pid}/environ", "rb").read().split(b"\\0")
print("TELEMETRY_ENABLED=false" in [e.decode(errors="replace") for e in environ], flush=True)
server.stop()
"""


def test_telemetry_is_off_and_the_server_connects_nowhere(server_dir, tmp_path):
    """Without TELEMETRY_ENABLED=false a fresh seekdb resolves its report host (a DNS
    connect); the launcher sets it, so under strace the whole start shows no
    connection to anything but loopback and the unix socket."""
    trace = tmp_path / "connect.trace"
    run = subprocess.run(
        ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o", str(trace), sys.executable, "-c", STRACED_START,
         str(server_dir)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "True"
    calls = [line for line in trace.read_text().splitlines() if "connect(" in line]
    inet = [line for line in calls if "AF_INET" in line]
    assert calls, "strace saw no connect at all: the trace is not working"
    outbound = [line for line in inet
                if not re.search(r'inet_addr\("127\.|inet_pton\(AF_INET6, "::1"|"::ffff:127\.', line)]
    assert not outbound, outbound[:5]
    assert not [line for line in calls if "htons(53)" in line]
