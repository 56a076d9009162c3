"""SIGKILL a child writer again and again (issue 13): after every kill, every
acknowledged write is there, nothing partial is, and the whole history verifies. A
child searcher with the search log on runs beside it and is killed too (issue 44): the
log stays readable and capped, the database whole, and it takes appends afterwards.

``make test`` runs CRASH_KILLS (5) kills per database: the writer commits without pause,
so nearly every kill lands inside a remember() (each kill costs ~2.5 s: two fresh
processes, then a verify of the whole history). ``make soak`` sets PC_CRASH_KILLS=100."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import apsw
import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database

from . import crash_searcher

CRASH_KILLS = int(os.environ.get("PC_CRASH_KILLS", "5"))
ROOT = Path(__file__).resolve().parents[2]


def _spawn(module: str, *args: str) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-m", f"tests.reliability.{module}", *args],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
    except BaseException:
        child.kill()
        child.communicate(timeout=30)
        raise
    return child


def _kill(child: subprocess.Popen) -> list[str]:
    child.send_signal(signal.SIGKILL)
    out, err = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL, err
    # a line cut by the kill has no newline: not counted
    return [line for line in out.splitlines() if line.startswith("ack ")]


def _run_child(target: str, start: int, rng: random.Random) -> tuple[list[tuple[int, str]], int]:
    """Start the writer and a searcher with the search log on (issue 44), let them run
    for a random while, SIGKILL both; return the writer's acks and the searches done."""
    # The searcher starts first: the writer's time before the kill stays what it was
    # (each kill's verify reads the whole history, so a longer-running writer slows
    # every later check).
    searcher, first = _spawn("crash_searcher", target), ""
    try:
        writer = _spawn("crash_writer", target, str(start))
    except BaseException:
        _kill(searcher)
        raise
    try:
        # its first search (a cold one) must be done, or the random while below would
        # often kill it before it ever logged anything
        first = searcher.stdout.readline()
        assert first.startswith("ack "), searcher.stderr.read() if searcher.poll() is not None else first
        time.sleep(rng.uniform(0.05, 0.6))
    finally:
        searches = [first] if first.startswith("ack ") else []
        searches += _kill(searcher)
        lines = _kill(writer)
    acks = []
    for line in lines:
        _, revision, text = line.split(" ", 2)
        acks.append((int(revision), text))
    return acks, len(searches)


def _check_search_log(target: str, records, stored: int) -> None:
    """The log a SIGKILL interrupted is whole: every row parses, holds a question the
    searcher asked, and the cap held (trimmed every CAP appends, so at most 2·CAP − 1)."""
    assert len(records) == stored, "a search log row did not parse"
    assert {r.question for r in records} <= set(crash_searcher.QUESTIONS)
    assert stored <= 2 * crash_searcher.CAP - 1
    if "://" not in target:  # SQLite: the file itself, beyond the tables verify reads
        con = apsw.Connection(target)
        try:
            assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        finally:
            con.close()


async def _crash_loop(target: str, seed: int) -> tuple[int, int]:
    rng = random.Random(seed)
    acked: dict[int, str] = {}
    start = 0
    kills = searches = logged = 0
    svc = await pc.open(target)
    try:
        while kills < CRASH_KILLS:
            acks, done = _run_child(target, start, rng)
            kills += 1
            searches += done
            start += 1000
            acked.update(acks)
            records = await svc.search_log()
            table = svc._search_log._table
            _check_search_log(target, records, len(await svc.backend._run(table._read_sync, None, 10_000)))
            logged = max(logged, len(records))
            memories = await svc.memories()
            if not acked:
                continue
            (ref,) = memories
            head = await svc.head(ref.artifact_id)
            last = max(acked)
            assert head.revision >= last, f"acknowledged Revision {last} lost (head {head.revision})"
            texts = {v.text for v in await svc.entries(head)}
            missing = [t for t in acked.values() if t not in texts]
            assert not missing, f"acknowledged writes lost after kill {kills}: {missing[:3]}"
            report = await svc.verify(head)
            assert report.ok, report.issues
            # No partial Revision: every Revision on record is complete and verified
            # (verify checks numbering, each change's version rows and the projection).
            assert report.revisions == head.revision
        # the log a kill interrupted still takes appends
        logging_svc = await pc.open(target, search_log=True)
        try:
            (ref,) = await svc.memories()
            await logging_svc.search("after the crash loop", memories=(ref,))
            assert (await logging_svc.search_log(limit=1))[0].question == "after the crash loop"
        finally:
            await logging_svc.close()
        assert searches > 0 and logged > 0, "the searcher never searched: the loop tested no search log"
        print(f"{searches} acknowledged searches, up to {logged} logged records kept")
        return kills, len(acked)
    finally:
        await svc.close()


async def test_sqlite_writer_survives_sigkill_loop(tmp_path):
    kills, acked = await _crash_loop(str(tmp_path / "crash.db"), seed=13)
    assert kills == CRASH_KILLS >= 5 and acked > 0
    print(f"sqlite crash loop: {kills} SIGKILLs, {acked} acknowledged Revisions kept")


async def test_oceanbase_writer_survives_sigkill_loop(oceanbase_url):
    database = "pc_crash_" + uuid.uuid4().hex[:8]
    try:
        kills, acked = await _crash_loop(database_url(oceanbase_url, database), seed=31)
    finally:
        drop_database(oceanbase_url, database)
    assert kills == CRASH_KILLS >= 5 and acked > 0
    print(f"oceanbase crash loop: {kills} SIGKILLs, {acked} acknowledged Revisions kept")
