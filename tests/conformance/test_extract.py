"""remember(mode="extract") through the model-free DefaultCandidatePipeline."""

import powercontext as pc

PYPROJECT = """[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "demo"
requires-python = ">=3.11"
"""


async def test_structured_entries_become_candidates_citing_their_source(svc):
    src = await svc.sources.persist(pc.ContentSource("src_decision_7", "ADR 7", metadata={
        "type": "structured", "entries": [{"kind": "decision", "text": "We store timestamps in UTC only."}]}))
    rev = await svc.remember(None, sources=(src,))  # auto → extract
    (entry,) = await svc.entries(rev)
    assert (entry.kind, entry.text, [s.name for s in entry.sources]) == ("decision", "We store timestamps in UTC only.", ["src_decision_7"])


async def test_pyproject_adapter_revises_its_own_entry(svc):
    v1 = await svc.sources.persist(pc.ContentSource("src_pyproject_v1", PYPROJECT, metadata={"path": "pyproject.toml"}))
    rev1 = await svc.remember(None, sources=(v1,), mode="extract")
    assert sorted(e.text for e in await svc.entries(rev1)) == [
        "Build backend: hatchling.build (from pyproject.toml).",
        "Supported Python: >=3.11 (requires-python in pyproject.toml).",
    ]
    v2 = await svc.sources.persist(pc.ContentSource("src_pyproject_v2", PYPROJECT.replace(">=3.11", ">=3.12"), metadata={"type": "pyproject"}))
    rev2 = await svc.remember(rev1, sources=(v2,), mode="extract")
    assert [(c.op, c.reason) for c in rev2.changes] == [("revise", None)]
    (revised,) = [e for e in await svc.entries(rev2) if e.text.startswith("Supported Python")]
    assert revised.version == 2 and [s.name for s in revised.sources] == ["src_pyproject_v1", "src_pyproject_v2"]
    # the same evidence again changes nothing: no empty Revision
    assert (await svc.remember(rev2, sources=(v2,), mode="extract")).ref == rev2.ref


async def test_task_outcome_falls_back_to_one_working_note(svc):
    outcome = await svc.sources.persist(pc.ContentSource("src_task_outcome_9", "Migrated the CLI to clap 4; two flags renamed.",
                                                         metadata={"type": "task_outcome", "verification": "cargo test passed"}))
    change = await svc.sources.persist(pc.ContentSource("src_git_9", "diff …", metadata={
        "type": "git_change", "head": "abc1234", "paths": [f"src/cmd{i}.rs" for i in range(10)]}))
    rev = await svc.remember(None, sources=(outcome, change), mode="extract")
    (note,) = await svc.entries(rev)
    assert note.kind == "working_note"
    assert note.text.startswith("Task outcome: Migrated the CLI to clap 4; two flags renamed. Verification: cargo test passed.")
    assert "Changed at abc1234:" in note.text and "and 2 more" in note.text


async def test_nothing_worth_saving_is_a_noop(svc):
    readme = await svc.sources.persist(pc.ContentSource("src_readme", "Just a readme."))
    assert await svc.remember(None, sources=(readme,), mode="extract") is None
    assert await svc.memories() == ()
