"""An embedding migration and a real second process writing at the same time (issue 43,
items 1 and 9), on both databases, with the real MiniLM and E5 models.

Item 1: a commit that ran inside the migration's write transaction on OceanBase passed
its CAS and its profile check (the migration read the heads without locking them) and
left a MiniLM vector among the E5 ones; verify() said the database was fine while
vector search refused. The child here commits exactly then: the parent opens the
gate from inside the migration's transaction (its last statement) and gives the child
3 s to finish. It must be refused (EmbeddingProfileMismatchError) and every stored
vector must be E5's. ``PC_MIGRATION_RACES`` repeats it (``make soak``: 10).

Item 9: with a writer committing every ``period`` seconds, a migration failed with
RevisionConflictError after the whole embedding pass. It now catches up.

The same race, left from issue 43, in the analyzer migration and the rebuild of one
Memory (both read the heads without locking them): a child commits from inside their
write transactions on a full-text database, and must wait for them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds
from powercontext.memory.admission import NO_ADMISSION

from ..support import sql
from .test_migration import _two_memories, reopen  # noqa: F401  (fixture)
from .test_profiles import same
from .test_vectors import DOCS

E = pc.MemoryEntryInput
ROOT = Path(__file__).resolve().parents[2]
RACES = int(os.environ.get("PC_MIGRATION_RACES", "1"))
TRIES = int(os.environ.get("PC_MIGRATION_WRITER_TRIES", "1"))
PERIOD = float(os.environ.get("PC_MIGRATION_WRITER_PERIOD", "0.5"))  # the issue's probe: 2.5
CORPUS = [f"Service {name}-{i} listens on port {8000 + i}, logs to /var/log/{name}{i}.log and is owned by team {team}."
          for i, (name, team) in enumerate((n, t) for n in ("billing", "search", "ingest")
                                           for t in ("red", "blue", "green", "amber", "violet", "teal", "grey",
                                                     "gold", "jade", "rust", "sand", "navy", "plum", "mint", "ruby",
                                                     "onyx", "opal", "iris", "sage", "coal"))]


def _target(svc, backend_name):
    return str(svc.backend.path) if backend_name == "sqlite" else svc.backend.url


def _writer(target, mode, artifact_id, go, out, period=2.5, embedding="minilm"):
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.conformance.migration_writer", target, mode, artifact_id, str(go), str(out),
         str(period)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PC_WRITER_EMBEDDING": embedding},
    )
    line = child.stdout.readline()
    assert line.strip() == "ready", child.stderr.read()
    return child


def _finish(child, out, timeout=60):
    try:
        child.wait(timeout=timeout)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, child.stderr.read()
    return Path(out).read_text()


async def _all_vectors_are(svc, model):
    """Every active head entry of every Memory holds ``model``'s document vector."""
    checked = 0
    for ref in await svc.memories():
        for entry in await svc.entries(ref):
            (document,) = model.encode([entry.text], "document")
            assert same(svc.backend.stored_vector(entry.entry_version_id), document), entry.text
            checked += 1
    return checked


async def _verified(svc):
    for ref in await svc.memories():
        report = await svc.verify(ref.artifact_id)
        assert report.ok, report.issues


async def _searchable_and_verified(svc):
    refs = await svc.memories()
    res = await svc.search("who has to approve schema changes", memories=refs, mode="vector", policy=NO_ADMISSION)
    assert res.hits  # no "missing or stale vectors" refusal
    await _verified(svc)


def _gate_once(backend, name, go, out, monkeypatch):
    """The first call of ``backend.<name>`` opens the child's gate from inside the
    caller's write transaction and gives the child 3 s to finish (a child that waits
    for this transaction's locks does not)."""
    original, opened = getattr(backend, name), []

    def gate(*args):
        if not opened:
            opened.append(True)
            go.touch()
            deadline = time.monotonic() + 3.0
            while not out.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
        return original(*args)

    monkeypatch.setattr(backend, name, gate)


@pytest.mark.parametrize("mode", ["append", "create"])
@pytest.mark.fresh_database  # a writer process that a kill may leave holding locks
async def test_a_commit_inside_the_migrations_write_transaction_is_refused(
        open_service, backend_name, minilm, e5, tmp_path, monkeypatch, mode):
    outcomes = []
    for race in range(RACES):
        svc = await open_service(embedding=minilm, ids=SequentialIds())
        one, _ = await _two_memories(svc)
        go, out = tmp_path / f"go{race}", tmp_path / f"out{race}"
        child = _writer(_target(svc, backend_name), mode, one.ref.artifact_id, go, out)
        try:
            # the migration's last write: the child commits then, while this transaction is open
            _gate_once(svc.backend, "_bump_projection_generation", go, out, monkeypatch)
            await svc.migrate_embedding(e5, progress=False)
            monkeypatch.undo()
            outcome = _finish(child, out)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        outcomes.append(outcome)
        if outcome == "EmbeddingProfileMismatchError":  # else a mix: counted, asserted below
            assert await _all_vectors_are(svc, e5) == 6
            await _searchable_and_verified(svc)
    mixes = [o for o in outcomes if o != "EmbeddingProfileMismatchError"]
    print(f"\nmigration race ({backend_name}, {mode}): {len(outcomes)} tries, {len(mixes)} mixes")
    assert not mixes, f"the child's commit inside the migration's transaction: {outcomes}"


async def test_verify_reports_a_vector_of_another_profile(open_service, backend_name, minilm, e5):
    """What the race used to leave: one head row whose vector carries the old model's
    embedding hash after the migration recorded E5. verify() must say so."""
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, _ = await _two_memories(svc)
    await svc.migrate_embedding(e5, progress=False)
    assert (await svc.verify(one.ref.artifact_id)).ok
    entry = (await svc.entries(one))[0]
    table = "memory_entry_vector_metadata" if backend_name == "sqlite" else "memory_entry_heads"
    await sql(svc, f"UPDATE {table} SET embedding_content_hash = ? WHERE entry_version_id = ?",
              (svc.backend.expected_embedding_hash(entry.entry_content_hash, minilm.profile), entry.entry_version_id))
    report = await svc.verify(one.ref.artifact_id)
    assert not report.ok
    assert any("1 head vector(s) were not embedded for the recorded profile" in i and e5.profile.profile_id in i
               for i in report.issues), report.issues


@pytest.mark.fresh_database  # a writer process that a kill may leave holding locks
async def test_a_migration_finishes_while_another_process_keeps_writing(
        open_service, backend_name, minilm, e5, tmp_path):
    """Issue 43 item 9: a real writer process commits every PERIOD s (0.5 here, the
    probe's 2.5 with PC_MIGRATION_WRITER_PERIOD) during the whole migration of 60
    entries with E5 (a pass of several seconds). The migration must finish, every
    entry the writer committed before it must hold E5's vector, and the writer's next
    commit must be refused (its handle embeds with MiniLM)."""
    results = []
    for attempt in range(TRIES):
        svc = await open_service(embedding=minilm)
        first = await svc.remember(None, entries=tuple(E("fact", t) for t in CORPUS[:30]))
        await svc.remember(None, entries=tuple(E("fact", t) for t in CORPUS[30:]))
        go, out = tmp_path / f"go{attempt}", tmp_path / f"out{attempt}"
        child = _writer(_target(svc, backend_name), "loop", first.artifact_id, go, out, PERIOD)
        try:
            await asyncio.sleep(PERIOD)  # the writer is committing before the pass begins
            try:
                report = await svc.migrate_embedding(e5, progress=False)
                outcome = "migrated"
            except pc.RevisionConflictError as exc:
                report, outcome = None, type(exc).__name__
                go.touch()  # a migrated database stops the writer itself: its next commit is refused
            writes = dict(line.split() for line in _finish(child, out).splitlines())
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        results.append((outcome, report, writes))
        if report is not None:
            assert await _all_vectors_are(svc, e5) == len(CORPUS) + int(writes.get("committed", 0))
            await _searchable_and_verified(svc)
            assert writes.get("EmbeddingProfileMismatchError") == "1", writes  # refused after, never mixed in
    for outcome, report, writes in results:
        print(f"\nmigration under writes ({backend_name}, one commit every {PERIOD} s): {outcome}; "
              f"{report if report else ''}; writer: {writes}")
    failures = [r for r in results if r[0] != "migrated"]
    print(f"migration under writes ({backend_name}): {len(results)} tries, {len(failures)} failures")
    assert not failures
    assert all(int(w.get("committed", 0)) >= 2 for _, _, w in results)  # it really wrote meanwhile
    assert any(r.catch_ups >= 1 for _, r, _ in results)


CHILD_TEXT = "Written during the migration's write transaction."  # what migration_writer's append commits


async def _race(svc, backend_name, one, tmp_path, monkeypatch, gated: str, work) -> str:
    """A model-free child appends to ``one`` when ``backend.<gated>`` is first called
    inside ``work()``'s write transaction; the child's outcome."""
    go, out = tmp_path / "go", tmp_path / "out"
    child = _writer(_target(svc, backend_name), "append", one.ref.artifact_id, go, out, embedding="none")
    try:
        _gate_once(svc.backend, gated, go, out, monkeypatch)
        await work()
        monkeypatch.undo()
        return _finish(child, out)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.fresh_database  # a writer process that a kill may leave holding locks
async def test_a_commit_inside_the_analyzer_migration_is_refused(open_service, backend_name, tmp_path, monkeypatch):
    """Stop 51's leftover of issue 43 item 1: the analyzer migration read the head rows
    without locking the heads, so on OceanBase a commit inside its transaction (here:
    while it reads the rows' texts) kept the old analyzer's text under the new record.
    The commit must wait for the migration and then be refused. A full-text database
    and a child without a model: the race is about heads and rows, not vectors."""
    svc = await open_service(ids=SequentialIds())
    one, _ = await _two_memories(svc)
    outcome = await _race(svc, backend_name, one, tmp_path, monkeypatch, "_versions",
                          lambda: svc.rebuild_projections(analyzer="v1"))
    assert outcome == "AnalyzerMismatchError", outcome
    assert [r.revision for r in await svc.memories()] == [one.ref.revision, 1]  # nothing of the child's landed
    await _verified(svc)


@pytest.mark.fresh_database  # a writer process that a kill may leave holding locks
async def test_a_commit_during_a_rebuild_waits_for_it_and_keeps_its_rows(open_service, backend_name, tmp_path,
                                                                        monkeypatch):
    """The same leftover for the rebuild of one Memory: it read the head without a lock,
    so on OceanBase a commit that landed before the rebuild read the Memory's rows had
    its new row deleted as a stray of the older head. The commit must wait, then land
    whole: its entry searchable and the Memory verified (full text, as above)."""
    svc = await open_service(ids=SequentialIds())
    one, _ = await _two_memories(svc)
    outcome = await _race(svc, backend_name, one, tmp_path, monkeypatch, "_read_projection",
                          lambda: svc.rebuild_projections(one))
    assert outcome == "committed", outcome
    head = await svc.head(one.ref.artifact_id)
    assert head.revision == one.ref.revision + 1
    found = await svc.search("written during the migration's write transaction", memories=[head], mode="fts",
                             policy=NO_ADMISSION)
    assert CHILD_TEXT in [h.text for h in found.hits]
    await _verified(svc)
