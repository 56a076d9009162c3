"""Sweeps sharing one seekdb store (issue 43, item 2), as real processes: the first run
to finish must not stop the server under the second, and the databases of a SIGKILLed
sweep are dropped by the next run or by ``python -m powercontext.eval cleanup``.

Each test starts from a stopped store and leaves it stopped. ``PC_STORE_ROUNDS`` (make
soak) repeats the two-sweep race."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from powercontext.backends.seekdb.server import SeekdbServer

from .fakes import write_corpus

SMALL = ["--terms", "1,2", "--coverages", "0,0.5", "--cosines", "0.5", "--limits", "1,8"]
ROUNDS = int(os.environ.get("PC_STORE_ROUNDS", "1"))
TIMEOUT = 180


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "seekdb"
    yield path
    server = SeekdbServer.attach(path)
    if server is not None:
        server.stop()
    SeekdbServer.end_strays(path)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("datasets") / "tiny")


def _env():
    env = dict(os.environ)
    env.pop("POWERCONTEXT_OCEANBASE_URL", None)  # the store's own server, not a configured one
    return env


def _run(args, log):
    return subprocess.Popen([sys.executable, "-m", "powercontext.eval", *args], env=_env(),
                            stdout=log.open("wb"), stderr=subprocess.STDOUT)


def _sweep(tiny, store, out):
    out.mkdir(parents=True, exist_ok=True)
    return _run(["sweep", "--dataset", str(tiny), "--backends", "oceanbase", "--modes", "fts", "--seekdb-dir",
                 str(store), "--out", str(out / "run"), "--no-progress", *SMALL], out / "log.txt")


def _eval_databases(server) -> set[str]:
    con = server.connect(connect_timeout=2)
    try:
        with con.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE 'pc\\_eval\\_%'")
            return {row[0] for row in cur.fetchall()}
    finally:
        con.close()


def _wait_new_database(store, seen: set[str], procs) -> str:
    """The next pc_eval_* database to appear on the store's server (a sweep created it)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for proc in procs:
            assert proc.poll() is None, f"a sweep ended before it created its database (status {proc.returncode})"
        server = SeekdbServer.attach(store)
        if server is not None:
            try:
                new = _eval_databases(server) - seen
            except Exception:  # noqa: BLE001 - the server is still starting
                new = set()
            if new:
                return new.pop()
        time.sleep(0.1)
    raise AssertionError("no sweep database appeared")


def _left_on_disk(store) -> set[str]:
    """The pc_eval_* databases the store keeps (started for the look when stopped)."""
    server = SeekdbServer.attach(store)
    if server is not None:
        return _eval_databases(server)
    with SeekdbServer(store) as server:
        return _eval_databases(server)


def _finished(proc, out):
    proc.wait(TIMEOUT)
    log = (out / "log.txt").read_text()
    assert proc.returncode == 0, log[-3000:]
    return log


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_the_first_sweep_to_finish_does_not_stop_the_server_under_the_second(tiny, store, tmp_path, round_):
    a = _sweep(tiny, store, tmp_path / "a")
    b = None
    try:
        first = _wait_new_database(store, set(), [a])
        os.kill(a.pid, signal.SIGSTOP)  # A holds its database; B joins the server A started
        b = _sweep(tiny, store, tmp_path / "b")
        _wait_new_database(store, {first}, [b])
        os.kill(b.pid, signal.SIGSTOP)
        os.kill(a.pid, signal.SIGCONT)
        _finished(a, tmp_path / "a")  # the first to finish, while B still uses the server
        server = SeekdbServer.attach(store)
        assert server is not None and server.running, "the first sweep to finish stopped the server under the second"
        os.kill(b.pid, signal.SIGCONT)
        _finished(b, tmp_path / "b")
    finally:
        for proc in (a, b):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGCONT)
                proc.kill()
                proc.wait()
    assert SeekdbServer.attach(store) is None, "the last sweep out left the server it started running"
    assert not list((store / "runs").glob("*.json")), "a finished sweep left its lease"
    assert _left_on_disk(store) == set()


def _kill_mid_sweep(tiny, store, out) -> str:
    proc = _sweep(tiny, store, out)
    try:
        database = _wait_new_database(store, set(), [proc])
    finally:
        proc.kill()  # SIGKILL: no atexit, no finally, no drop
        proc.wait()
    return database


def test_the_next_sweep_drops_the_database_a_killed_sweep_left(tiny, store, tmp_path):
    killed = _kill_mid_sweep(tiny, store, tmp_path / "killed")
    log = _finished(_sweep(tiny, store, tmp_path / "next"), tmp_path / "next")
    assert killed in log  # it says what it dropped
    assert SeekdbServer.attach(store) is None
    assert _left_on_disk(store) == set()


def test_cleanup_drops_a_killed_sweeps_database_and_unclaimed_ones(tiny, store, tmp_path):
    killed = _kill_mid_sweep(tiny, store, tmp_path / "killed")
    # a database no lease names: what a sweep killed before leases existed left
    legacy = "pc_eval_tiny_0a0b0c"
    server = SeekdbServer.attach(store)
    started = server is None
    if started:
        server = SeekdbServer(store).start()
    con = server.connect()
    with con.cursor() as cur:
        cur.execute(f"CREATE DATABASE {legacy}")
    con.close()
    if started:
        server.stop()
    proc = _run(["cleanup", "--store", str(store)], tmp_path / "cleanup.txt")
    proc.wait(TIMEOUT)
    printed = (tmp_path / "cleanup.txt").read_text()
    assert proc.returncode == 0, printed
    assert f"dropped {killed} (its run was killed)" in printed
    assert f"dropped {legacy} (no live run claims it)" in printed
    assert SeekdbServer.attach(store) is None  # no live run uses the server the killed run started
    assert _left_on_disk(store) == set()
    again = _run(["cleanup", "--store", str(store)], tmp_path / "again.txt")
    again.wait(TIMEOUT)
    assert again.returncode == 0 and "nothing to clean" in (tmp_path / "again.txt").read_text()


def test_cleanup_keeps_what_a_sweep_kept_on_purpose_unless_told(tiny, store, tmp_path):
    out = tmp_path / "kept"
    out.mkdir()
    proc = _run(["sweep", "--dataset", str(tiny), "--backends", "oceanbase", "--modes", "fts", "--seekdb-dir",
                 str(store), "--out", str(out / "run"), "--no-progress", "--keep-databases", *SMALL], out / "log.txt")
    _finished(proc, out)
    (kept,) = _left_on_disk(store)
    first = _run(["cleanup", "--store", str(store)], tmp_path / "first.txt")
    first.wait(TIMEOUT)
    printed = (tmp_path / "first.txt").read_text()
    assert first.returncode == 0 and kept in printed and "--keep-databases" in printed, printed
    assert _left_on_disk(store) == {kept}
    second = _run(["cleanup", "--store", str(store), "--kept"], tmp_path / "second.txt")
    second.wait(TIMEOUT)
    printed = (tmp_path / "second.txt").read_text()
    assert second.returncode == 0 and f"dropped {kept} (no live run claims it)" in printed, printed
    assert SeekdbServer.attach(store) is None
    assert _left_on_disk(store) == set()
