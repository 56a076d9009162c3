"""Scheduled processing: APScheduler 3.x with a SQLAlchemyJobStore in a SQLite sidecar
(RFC 001 "Scheduled processing")."""

from __future__ import annotations

import asyncio
import os
import pickle
import sqlite3
import time

import pytest

from powercontext.errors import InvalidRuntimeRequestError
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import DISPATCHER, JOB_ID, PowerContextRuntime, RuntimeOwnershipError, SchedulerStoreError
from powercontext.runtime.scheduling import job_count

from .pipelines import structured
from .rows import runtime_sql

RESTARTS = 10


def sidecar_jobs(path) -> list[tuple[str, dict]]:
    con = sqlite3.connect(path)
    try:
        return [(job_id, pickle.loads(state)) for job_id, state in con.execute("SELECT id, job_state FROM apscheduler_jobs")]
    finally:
        con.close()


async def wait_for(predicate, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_the_scheduler_job_persists_and_restarts_create_no_duplicate(profile, target, tmp_path):
    sidecar = tmp_path / "scheduler.sqlite"
    pipeline = DefaultCandidatePipeline()
    counts = []
    for i in range(RESTARTS + 1):
        runtime = await PowerContextRuntime.open(target, candidate_pipeline=pipeline, schedule_seconds=30,
                                                 scheduler_path=sidecar)
        counts.append(job_count(sidecar))
        await runtime.close()
    assert counts == [1] * (RESTARTS + 1), f"job rows after each of {RESTARTS} restarts: {counts}"
    ((job_id, state),) = sidecar_jobs(sidecar)
    assert job_id == JOB_ID and state["func"] == DISPATCHER and state["args"] == (runtime.key,)
    assert state["trigger"].interval.total_seconds() == 30 and state["next_run_time"] is not None
    runtime = await PowerContextRuntime.open(target, candidate_pipeline=pipeline, schedule_seconds=45,
                                             scheduler_path=sidecar)
    await runtime.close()
    ((_, state),) = sidecar_jobs(sidecar)
    assert state["trigger"].interval.total_seconds() == 45, "a changed interval is reconciled, not duplicated"
    print(f"\n[{profile}] scheduler job rows after {RESTARTS} restarts: {counts[-1]}")


async def test_the_scheduler_job_store_is_isolated_from_the_runtime_database(profile, target, tmp_path):
    sidecar = tmp_path / "scheduler.sqlite"
    runtime = await PowerContextRuntime.open(target, candidate_pipeline=DefaultCandidatePipeline(),
                                             schedule_seconds=30, scheduler_path=sidecar)
    try:
        con = sqlite3.connect(sidecar)
        assert {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"apscheduler_jobs"}
        con.close()
        assert oct(os.stat(sidecar).st_mode & 0o777) == "0o600"
        if profile == "sqlite":
            tables = await runtime_sql(runtime, "SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            tables = await runtime_sql(runtime, "SHOW TABLES")
        names = {t[0] for t in tables}
        assert "runtime_source_journal" in names and not any("apscheduler" in n for n in names)
    finally:
        await runtime.close()
    if profile == "sqlite":
        for inside in (target, target + "-wal"):
            with pytest.raises(SchedulerStoreError, match="Runtime database"):
                await PowerContextRuntime.open(target, candidate_pipeline=DefaultCandidatePipeline(),
                                               schedule_seconds=30, scheduler_path=inside)
        copy = tmp_path / "copy.sqlite"  # another name for a file that holds Runtime tables
        copy.write_bytes(open(target, "rb").read())
        with pytest.raises(SchedulerStoreError, match="not a sidecar"):
            await PowerContextRuntime.open(target, candidate_pipeline=DefaultCandidatePipeline(),
                                           schedule_seconds=30, scheduler_path=copy)


def _forge(sidecar, state_bytes) -> None:
    con = sqlite3.connect(sidecar)
    con.execute("UPDATE apscheduler_jobs SET job_state = ?", (state_bytes,))
    con.commit()
    con.close()


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


async def test_an_untrusted_sidecar_is_never_loaded(profile, target, tmp_path):
    sidecar = tmp_path / "scheduler.sqlite"
    options = dict(candidate_pipeline=DefaultCandidatePipeline(), schedule_seconds=30, scheduler_path=sidecar)
    await (await PowerContextRuntime.open(target, **options)).close()
    ((_, state),) = sidecar_jobs(sidecar)
    marker = tmp_path / "pwned"
    forgeries = [
        pickle.dumps({**state, "trigger": _Exploit(marker)}),         # code that runs when unpickled
        pickle.dumps({**state, "func": "os:system", "args": (f"touch {marker}",)}),  # another callable
        pickle.dumps({**state, "kwargs": {"command": "x"}}),
        b"not a pickle",
    ]
    for forged in forgeries:
        _forge(sidecar, forged)
        with pytest.raises(SchedulerStoreError):
            await PowerContextRuntime.open(target, **options)
        assert not marker.exists(), "the forged job state was never executed"
    os.chmod(sidecar, 0o666)
    with pytest.raises(SchedulerStoreError, match="writable by other users"):
        await PowerContextRuntime.open(target, **options)


async def test_apscheduler_activates_a_pending_scope_in_practice(profile, target, open_runtime, scope):
    # Captured before the scheduled Runtime opens: a wake-up between two captures
    # (0.2 s apart on a loaded machine) would otherwise split them into two windows.
    unscheduled = await open_runtime(target)
    await unscheduled.sources.for_scope(scope).capture(structured("task-1", ("decision", "Windows run on a schedule.")))
    await unscheduled.sources.for_scope(scope).capture(structured("task-2", ("fact", "The interval is persisted.")))
    await unscheduled.close()
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline(), schedule_seconds=0.2)
    memory = runtime.memory.for_scope(scope)
    assert await wait_for(lambda: _cursor_is(memory, 2)), "the scheduled job never processed the pending scope"
    head = await memory.head()
    assert head.revision == 1 and len(head.manifest.active) == 2
    assert await wait_for(lambda: _processor_ran(runtime)), "the processor run never completed"
    windows = await runtime.storage.open_scope(scope).windows("source_window")
    assert [(w.outcome, w.after, w.through) for w in windows] == [("committed", 0, 2)], "one scheduled window, no manual flush"
    status = await runtime.status()
    assert status["scheduler_jobs"] == 1 and status["pending_sources"] == 0


async def _processor_ran(runtime) -> bool:
    return runtime.processor.runs >= 1 and runtime.processor.last_run is not None


async def _cursor_is(memory, value) -> bool:
    return await memory.cursor() == value


async def test_the_scheduled_processor_continues_after_one_scope_fails(profile, target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline(), schedule_seconds=60)
    bad, good = scope + ":bad", scope + ":good"
    await runtime.sources.for_scope(bad).capture(structured("t1", ("fact", "Tampered later.")))
    await runtime.sources.for_scope(good).capture(structured("t1", ("fact", "Processed anyway.")))
    await runtime_sql(runtime, "UPDATE runtime_source_journal SET payload = ? WHERE scope = ?", ("{}", bad))
    run = await runtime.processor.run()
    outcome = {r.scope: r.status for r in run.results if r.scope in (bad, good)}
    assert outcome == {bad: "failed", good: "committed"}
    assert await runtime.memory.for_scope(good).cursor() == 1 and await runtime.memory.for_scope(bad).cursor() == 0


async def test_a_scheduled_runtime_rejects_an_in_memory_database(profile, fresh_target, tmp_path):
    pipeline = DefaultCandidatePipeline()
    if profile == "sqlite":
        for target in (":memory:", "sqlite:///:memory:"):
            with pytest.raises(InvalidRuntimeRequestError, match="memory"):
                await PowerContextRuntime.open(target, candidate_pipeline=pipeline, schedule_seconds=1)
        unscheduled = await PowerContextRuntime.open(":memory:")  # fine without scheduling
        await unscheduled.close()
    with pytest.raises(InvalidRuntimeRequestError, match="file path"):
        await PowerContextRuntime.open(fresh_target, candidate_pipeline=pipeline, schedule_seconds=1, scheduler_path=":memory:")


async def test_a_second_scheduled_runtime_on_the_same_database_is_refused(profile, target, open_runtime, tmp_path):
    pipeline = DefaultCandidatePipeline()
    first = await open_runtime(target, candidate_pipeline=pipeline, schedule_seconds=60)
    other_spelling = target.replace("oceanbase://", "mysql://") if profile == "oceanbase" else "sqlite:///" + target
    with pytest.raises(RuntimeOwnershipError):
        await PowerContextRuntime.open(other_spelling, candidate_pipeline=pipeline, schedule_seconds=60,
                                       scheduler_path=tmp_path / "other.sqlite")
    unscheduled = await open_runtime(other_spelling)  # an unscheduled Runtime is not refused
    assert unscheduled.key == first.key
    await first.close()
    again = await open_runtime(target, candidate_pipeline=pipeline, schedule_seconds=60)
    assert again.key == first.key
