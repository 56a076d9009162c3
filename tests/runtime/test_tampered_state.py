"""Hand-edited Runtime rows and sidecars, and two processes opening one Runtime at once
(issue 35, defect 8): each gives a typed error or is repaired, says so in ``status()``,
and never silently skips captures."""

from __future__ import annotations

import pickle
import time

import pytest

from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import PowerContextRuntime, RuntimeStateError, SchedulerStoreError
from powercontext.runtime.scheduling import job_count

from .pipelines import structured
from .processes import TIMEOUT, read, spawn
from .rows import runtime_sql
from .test_scheduler import _forge, sidecar_jobs, wait_for

CURSOR = "UPDATE runtime_trigger_cursors SET sequence = ? WHERE scope = ?"


@pytest.mark.parametrize("forged, words", [(100, "past its journal"), (1, "not where its last completed window")])
async def test_a_hand_edited_cursor_is_refused_not_trusted(target, open_runtime, scope, forged, words):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    for i in range(2):
        await sources.capture(structured(f"t{i}", ("fact", f"Service {i} listens on port 80{i}0.")))
    assert (await memory.flush()).cursor == 2
    await runtime_sql(runtime, CURSOR, (forged, scope))
    for i in range(2, 5):  # captures after the edit: none may be skipped silently
        await sources.capture(structured(f"t{i}", ("fact", f"Service {i} listens on port 80{i}0.")))
        refused = await memory.flush()
        assert refused.status == "failed" and words in refused.error and "set it back to 2" in refused.error, refused
        assert isinstance(refused.errors[0], RuntimeStateError)
    assert words in (await runtime.status())["problems"]
    assert len(await memory.entries()) == 2, "nothing was processed on top of the edited cursor"
    await runtime_sql(runtime, CURSOR, (2, scope))
    repaired = await memory.flush()
    assert repaired.status == "committed" and str(repaired.window) == "(2, 5]"
    assert len(await memory.entries()) == 5 and (await runtime.status())["problems"] == "none"


async def test_text_in_an_integer_journal_column_gives_a_typed_error(tmp_path, open_runtime, scope):
    """SQLite only: OceanBase refuses text in an integer column itself."""
    runtime = await open_runtime(str(tmp_path / "runtime.db"), candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    await sources.capture(structured("t1", ("fact", "The API listens on port 8080.")))
    await runtime_sql(runtime, "UPDATE runtime_source_journal SET sequence = 'one' WHERE scope = ?", (scope,))
    calls = {"status": runtime.status, "flush": memory.flush, "progress": runtime.progress,
             "capture": lambda: sources.capture(structured("t2", ("fact", "Another fact.")))}
    for name, call in calls.items():
        with pytest.raises(RuntimeStateError, match="never writes"):
            await call()


async def _scheduled(target, sidecar):
    return await PowerContextRuntime.open(target, candidate_pipeline=DefaultCandidatePipeline(), schedule_seconds=0.2,
                                          scheduler_path=sidecar)


@pytest.mark.parametrize("edit", [{"version": 2}, {"drop": "coalesce"}, {"drop": "next_run_time"}])
async def test_job_state_this_runtime_never_writes_is_refused_with_a_typed_error(fresh_target, tmp_path, edit):
    sidecar = tmp_path / "scheduler.sqlite"
    await (await _scheduled(fresh_target, sidecar)).close()
    ((_, state),) = sidecar_jobs(sidecar)
    if "drop" in edit:
        del state[edit["drop"]]
    else:
        state.update(edit)
    _forge(sidecar, pickle.dumps(state))
    with pytest.raises(SchedulerStoreError, match="not the job this Runtime writes"):
        await _scheduled(fresh_target, sidecar)


@pytest.mark.parametrize("edit, words", [
    ({"executor": "nope"}, "executor 'nope' → 'default'"),
    ({"max_instances": 0}, "max_instances 0 → 1"),
    ({"next_run_time": None}, "paused"),
])
async def test_job_settings_that_would_never_run_are_repaired_and_reported(fresh_target, tmp_path, scope, edit, words):
    sidecar = tmp_path / "scheduler.sqlite"
    await (await _scheduled(fresh_target, sidecar)).close()
    ((_, state),) = sidecar_jobs(sidecar)
    _forge(sidecar, pickle.dumps({**state, **edit}))
    runtime = await _scheduled(fresh_target, sidecar)
    try:
        assert words in (await runtime.status())["scheduler_repairs"]
        ((_, repaired),) = sidecar_jobs(sidecar)
        assert (repaired["executor"], repaired["max_instances"]) == ("default", 1) and repaired["next_run_time"]
        await runtime.sources.for_scope(scope).capture(structured("t1", ("fact", "Scheduled after the repair.")))
        memory = runtime.memory.for_scope(scope)

        async def processed():
            return await memory.cursor() == 1

        assert await wait_for(processed), "the repaired job runs"
    finally:
        await runtime.close()
    again = await _scheduled(fresh_target, sidecar)
    assert (await again.status())["scheduler_repairs"] == "none"
    await again.close()


ROUNDS = 6


def test_two_processes_opening_one_runtime_at_once_get_no_raw_error(tmp_path):
    outcomes = []
    for round_ in range(ROUNDS):
        target, sidecar = tmp_path / f"runtime-{round_}.db", tmp_path / f"scheduler-{round_}.sqlite"
        procs = [spawn("open", target, sidecar) for _ in range(2)]
        for proc in procs:  # both imported and waiting (a fixed 4 s head start cost 24 s a run)
            read(proc, "READY")
        start_at = time.time() + 0.2
        for proc in procs:
            proc.stdin.write(f"{start_at}\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=TIMEOUT)
            outcomes.append(out.strip() or err.strip().splitlines()[-1])
        assert job_count(sidecar) == 1, outcomes[-2:]  # one of the two opened and scheduled the job
    raw = [o for o in outcomes if not o.startswith(("OPENED", "TYPED"))]
    assert not raw, raw
    assert outcomes.count("OPENED") >= ROUNDS, outcomes
