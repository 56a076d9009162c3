"""One seekdb store per checkout, a line when another checkout shares one, ``seekdb
reset``, and a typed error when a statement waits on a stalled server (issue 45).

Against the real binary: each server costs ~1.3 GB of disk, so a test starts at most
one, always stops it, and deletes its directory."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import powercontext as pc
from powercontext.backends.seekdb.server import SeekdbServer
from powercontext.backends.seekdb.urls import database_url
from powercontext.backends.seekdb.store import process_start_time

CLI = [sys.executable, "-m", "powercontext.backends.seekdb"]


@pytest.fixture
def server_dir(tmp_path):
    path = tmp_path / "seekdb"
    yield path
    leftover = SeekdbServer.attach(path)
    if leftover is not None:
        os.kill(leftover.pid, signal.SIGCONT)  # a stall test may have stopped it
        leftover.stop()
    shutil.rmtree(path, ignore_errors=True)


def _checkout(root: Path, name: str) -> Path:
    folder = root / name
    (folder / "src").mkdir(parents=True)
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return folder


def _cli(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("POWERCONTEXT_SEEKDB_DIR", "POWERCONTEXT_OCEANBASE_URL")}
    return subprocess.run([*CLI, *args], cwd=cwd, env={**env, "HOME": str(home)}, capture_output=True, text=True,
                          timeout=120)


def test_each_checkout_gets_its_own_default_store(tmp_path):
    """Two clones shared ``~/.cache/powercontext/seekdb`` without a word."""
    home = tmp_path / "home"
    a, b = _checkout(tmp_path, "clone"), _checkout(tmp_path / "other", "clone")  # same name, other folder
    seen = []
    for cwd in (a, a / "src", b):
        done = _cli("status", cwd=cwd, home=home)
        assert done.returncode == 3, done.stderr
        seen.append(done.stdout.strip().removeprefix("stopped dir="))
    stores = home / ".cache" / "powercontext" / "seekdb-stores"
    assert seen[0] == seen[1] and seen[0] != seen[2]  # a subfolder is its checkout's; another clone is not
    assert all(Path(s).parent == stores and Path(s).name.startswith("clone-") for s in seen)
    env = _cli("status", cwd=a, home=home)
    named = subprocess.run([*CLI, "status"], cwd=a, capture_output=True, text=True, timeout=120,
                           env={**os.environ, "HOME": str(home), "POWERCONTEXT_SEEKDB_DIR": str(tmp_path / "mine")})
    assert env.stdout == f"stopped dir={seen[0]}\n" and named.stdout == f"stopped dir={tmp_path / 'mine'}\n"


def test_a_second_checkout_on_a_store_is_told_in_one_line_and_reset_refuses_while_held(tmp_path, server_dir):
    home = tmp_path / "home"
    a, b = _checkout(tmp_path, "first"), _checkout(tmp_path, "second")
    started = _cli("start", "--dir", str(server_dir), cwd=a, home=home)
    assert started.returncode == 0, started.stderr
    assert "also used by" not in started.stdout
    again = _cli("start", "--dir", str(server_dir), cwd=b, home=home)
    assert again.returncode == 0, again.stderr
    notes = [line for line in again.stdout.splitlines() if "also used by" in line]
    assert notes == [notes[0]] and str(a) in notes[0] and str(server_dir) in notes[0]
    assert "seekdb already running" in again.stdout

    refused = _cli("reset", "--dir", str(server_dir), cwd=b, home=home)
    assert refused.returncode == 1 and "stop it first" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert (server_dir / "root.password").exists()  # nothing removed
    assert _cli("stop", "--dir", str(server_dir), cwd=b, home=home).returncode == 0

    (server_dir / "runs").mkdir()  # a live harness run's lease (this test process)
    lease = server_dir / "runs" / f"{os.getpid()}-ab12cd34.json"
    lease.write_text(json.dumps({"pid": os.getpid(), "started": process_start_time(os.getpid()), "databases": []}))
    refused = _cli("reset", "--dir", str(server_dir), cwd=b, home=home)
    assert refused.returncode == 1 and f"run pid {os.getpid()}" in refused.stderr
    lease.unlink()
    reset = _cli("reset", "--dir", str(server_dir), cwd=b, home=home)
    assert reset.returncode == 0, reset.stderr
    assert not server_dir.exists() and "removed" in reset.stdout


async def test_a_statement_on_a_stalled_server_raises_a_typed_error_naming_the_store(server_dir, monkeypatch):
    """A sweep waited forever on a statement of a wedged store: now the client waits the
    session's ob_query_timeout plus a margin (1 s + 5 s here), then raises."""
    monkeypatch.setenv("POWERCONTEXT_OB_QUERY_TIMEOUT_S", "1")
    server = SeekdbServer(server_dir).start()
    svc = await pc.open(database_url(server.url, "pc_stall"))
    try:
        rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the release checklist needs care"),))
        os.kill(server.pid, signal.SIGSTOP)  # the server answers nothing, like a wedged one
        began = time.monotonic()
        try:
            with pytest.raises(pc.ServerStalledError) as info:
                await svc.search("release checklist", (rev,), mode="fts")
        finally:
            os.kill(server.pid, signal.SIGCONT)
        assert time.monotonic() - began < 30
        message = str(info.value)
        assert str(server_dir) in message and "reset" in message and "\n" not in message
        assert info.value.store == str(server_dir) and isinstance(info.value, pc.PowerContextError)
        assert server.password not in message
        assert (await svc.search("release checklist", (rev,), mode="fts")).hits  # fine once it answers again
    finally:
        await svc.close()
        server.stop()
