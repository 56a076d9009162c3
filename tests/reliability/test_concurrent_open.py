"""Two processes opening one new SQLite file at the same moment (a CI failure of
test_tampered_state: both Runtimes were refused with ``database is locked`` and no job
was scheduled). SQLite refuses the switch into WAL at once, busy timeout or not, when
another connection is switching the same file; and the loser of that race used to delete
the file it believed it had created while the winner was writing to it (``disk I/O
error`` in the winner). The two race tests run many rounds in two long-lived processes,
each round a new file both open at one instant: the old code failed about one round in
five. The third keeps the rule's other side: alone, a refused open still removes its file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 16
GAP = 0.25  # seconds between rounds: one open of a new file takes ~20-60 ms here

# A profile fixes the vector schema only; nothing is embedded, so no model is needed.
OPENER = """
import asyncio, sys, time
from powercontext.backends.sqlite.backend import SQLiteMemoryBackend
from powercontext.errors import PowerContextError
from powercontext.model import EmbeddingProfile

folder, rounds, gap, dimension = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
profile = EmbeddingProfile(f"race-{dimension}", "race/schema-only", dimension)
print("READY", flush=True)
start = float(sys.stdin.readline())
for i in range(rounds):
    while time.time() < start + i * gap:
        time.sleep(0.0005)
    try:
        backend = SQLiteMemoryBackend(f"{folder}/race-{i}.db", profile)
    except PowerContextError as exc:
        print(f"TYPED {i} {type(exc).__name__}: {exc}", flush=True)
        continue
    except Exception as exc:
        print(f"RAW {i} {type(exc).__name__}: {exc}", flush=True)
        continue
    asyncio.run(backend.close())
    print(f"OPENED {i}", flush=True)
"""


def _race(folder: Path, *dimensions: int) -> list[list[str]]:
    """Each process's outcome lines, one per round (``OPENED i`` / ``TYPED i …`` / ``RAW i …``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", OPENER, str(folder), str(ROUNDS), str(GAP), str(d)],
                              cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for d in dimensions]
    for proc in procs:  # both imported before the clock starts
        assert proc.stdout.readline().strip() == "READY", proc.stderr.read()[-2000:]
    start = time.time() + 0.2
    for proc in procs:
        proc.stdin.write(f"{start}\n")
        proc.stdin.flush()
    outcomes = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        outcomes.append(out.splitlines())
    return outcomes


def _stored_dimension(path: Path) -> int:
    con = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        ((profile,),) = con.execute("SELECT value FROM powercontext_schema WHERE key = 'embedding_profile'")
    finally:
        con.close()
    return int(json.loads(profile)["dimension"])


def test_two_processes_opening_one_new_file_at_once_both_open(tmp_path):
    first, second = _race(tmp_path, 4, 4)
    assert first == second == [f"OPENED {i}" for i in range(ROUNDS)], (first, second)
    for i in range(ROUNDS):
        assert _stored_dimension(tmp_path / f"race-{i}.db") == 4


def test_the_loser_of_a_race_for_a_new_file_leaves_the_winners_file_in_place(tmp_path):
    """Two profiles: in every round exactly one process opens; the other is refused with the
    profile mismatch (typed), and the file keeps the winner's schema — nothing deleted it."""
    first, second = _race(tmp_path, 4, 8)
    assert not [line for line in first + second if not line.startswith(("OPENED", "TYPED"))], (first, second)
    for i in range(ROUNDS):
        winners = [d for d, lines in ((4, first), (8, second)) if f"OPENED {i}" in lines]
        assert len(winners) == 1, (i, first, second)
        (loser,) = [line for line in first + second if line.startswith(f"TYPED {i} ")]
        assert "BackendUnavailableError" in loser and "profile" in loser, loser
        assert _stored_dimension(tmp_path / f"race-{i}.db") == winners[0]


def test_a_new_file_refused_during_its_first_open_is_still_removed(tmp_path, monkeypatch):
    """The other side of the rule above: alone, a refused open of a file it created leaves
    nothing behind, even after the switch into WAL wrote its header page. (A refused
    capability probe is planted: a real SQLite build without whole-token FTS5 is not
    available here.)"""
    import powercontext.backends.sqlite.backend as sqlite_backend
    from powercontext.errors import BackendUnavailableError

    probe = sqlite_backend.SQLiteMemoryBackend._probe_fts

    def refused(self, tx):
        probe(self, tx)
        raise apsw.SQLError("planted: the FTS5 probe is refused")

    monkeypatch.setattr(sqlite_backend.SQLiteMemoryBackend, "_probe_fts", refused)
    with pytest.raises(BackendUnavailableError, match="planted"):
        sqlite_backend.SQLiteMemoryBackend(tmp_path / "new.db")
    assert os.listdir(tmp_path) == []
