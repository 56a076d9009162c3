"""Real processes, real SIGKILLs (RFC 001 "Failure semantics"; "The scheduler job
persists, and restart does not create a duplicate fixed job").

Each child process owns a scheduled Runtime and is killed between the Memory commit and
the cursor save; the next process opens the same database, replays that window — which
must end as a no-op with the cursor advanced, never a duplicate entry — and the
scheduler sidecar must still hold exactly one job. ``RUNTIME_KILLS`` sets the number of
kills per storage profile (``make soak-runtime`` runs many more)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from powercontext.runtime.scheduling import job_count

from .processes import TIMEOUT, read, spawn

KILLS = int(os.environ.get("RUNTIME_KILLS", "3"))


def step(target: str, scope: str, n: int, sidecar: Path) -> subprocess.Popen:
    return spawn("step", target, scope, n, sidecar)


def check_replay(state: dict, n: int) -> None:
    """The window (n-1, n] that process n committed but did not record."""
    assert state["status"] == "no_change", state
    assert state["window"] == [n - 1, n] and state["cursor_before"] == n - 1 and state["cursor"] == n, state
    assert state["revision"] == n and state["revisions"] == list(range(1, n + 1)), "the replay created no Revision"
    assert state["entries"] == n and state["duplicates"] == 0, state


def test_sigkill_between_memory_commit_and_cursor_save_replays_as_a_no_op(profile, target, scope, tmp_path):
    sidecar = tmp_path / "scheduler.sqlite"
    replays = duplicates = 0
    jobs = []
    for n in range(1, KILLS + 1):
        proc = step(target, scope, n, sidecar)
        if n > 1:
            state = json.loads(read(proc, "REPLAY"))
            check_replay(state, n - 1)
            replays, duplicates = replays + 1, duplicates + state["duplicates"]
        ref, after, through = read(proc, "COMMITTED").split()
        assert (int(after), int(through)) == (n - 1, n) and ref.endswith(f"@{n}")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(TIMEOUT) == -signal.SIGKILL
        jobs.append(job_count(sidecar))

    final = step(target, scope, 0, sidecar)
    state = json.loads(read(final, "REPLAY"))
    check_replay(state, KILLS)
    replays, duplicates = replays + 1, duplicates + state["duplicates"]
    then = json.loads(read(final, "THEN"))
    assert then["status"] == "idle" and then["cursor"] == KILLS and then["revision"] == KILLS
    assert final.wait(TIMEOUT) == 0
    jobs.append(job_count(sidecar))
    assert jobs == [1] * (KILLS + 1), f"scheduler job rows after each restart: {jobs}"
    assert (replays, duplicates) == (KILLS, 0)
    print(f"\n[{profile}] restart replay: kills={KILLS} replays={replays} duplicates={duplicates} "
          f"scheduler jobs after each restart={jobs}")
