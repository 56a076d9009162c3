"""Task-outcome and agent-turn Sources, structured decisions, and the optional model
extractor, through remember(mode="extract") on every database."""

import pytest

import powercontext as pc
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.memory.extractor import ModelProposal

HEAD = "0123456789abcdef0123456789abcdef01234567"


async def test_a_task_outcome_becomes_one_working_note_assembled_from_what_was_supplied(svc):
    outcome = await svc.sources.persist(pc.TaskOutcomeSource(
        name="src_task_outcome_001", report="Renamed the docs target;\n  docs build is green.",
        changed_paths=("Makefile", "./docs/index.md"), head_commit=HEAD, task="T-17",
        verification=(pc.Verification(command="make test", outcome="passed"),
                      pc.Verification(command="make docs-test", outcome="failed", detail="1 broken link")),
    ))
    assert pc.TaskOutcomeSource.from_source(outcome).changed_paths == ("Makefile", "docs/index.md")
    rev = await svc.remember(None, sources=(outcome,), mode="extract")
    (note,) = await svc.entries(rev)
    assert note.kind == "working_note" and [s.name for s in note.sources] == ["src_task_outcome_001"]
    assert note.text == ("Task outcome: Renamed the docs target; docs build is green. Verification: make test passed; "
                         "make docs-test failed (1 broken link). Changed at 0123456789ab: Makefile, docs/index.md.")


async def test_an_agent_turn_is_a_report_not_a_completed_task(svc):
    turn = await svc.sources.persist(pc.AgentTurnSource(
        name="src_turn_42", final_message="I started splitting the parser; tests not run yet.", session="s1", turn=42))
    rev = await svc.remember(None, sources=(turn,), mode="extract")
    (note,) = await svc.entries(rev)
    assert note.text == "Agent turn report: I started splitting the parser; tests not run yet."
    assert "Task outcome" not in note.text and "Verification" not in note.text


async def test_nothing_useful_is_a_noop(svc):
    empty = await svc.sources.persist(pc.AgentTurnSource(name="src_turn_0", final_message="   "))
    assert await svc.remember(None, sources=(empty,), mode="extract") is None


async def test_structured_decisions_add_and_revise_by_entry_id(svc):
    adr = await svc.sources.persist(pc.StructuredSource(name="src_adr_7", statement="ADR 7: UTC only; no naive datetimes.", entries=(
        pc.StructuredEntry(kind="decision", text="We store timestamps in UTC only."),
        pc.StructuredEntry(kind="constraint", text="Never create naive datetimes.", reason="adr-7"),
    )))
    rev1 = await svc.remember(None, sources=(adr,))
    by_kind = {e.kind: e for e in await svc.entries(rev1)}
    fix = await svc.sources.persist(pc.StructuredSource(name="src_user_note_8", statement="Use UTC, and say so in APIs.", entries=(
        pc.StructuredEntry(kind="decision", text="We store and expose timestamps in UTC only.",
                           revises=by_kind["decision"].entry_id, reason="user_correction"),
        pc.StructuredEntry(kind="fact", text="The API documents every timestamp as UTC.", revises="mem_ent_gone"),
    )))
    rev2 = await svc.remember(rev1, sources=(fix,))
    assert sorted((c.op, c.reason) for c in rev2.changes) == [("add", None), ("revise", "user_correction")]
    revised = await svc.entry(rev2, by_kind["decision"].entry_id)
    assert revised.version == 2 and [s.name for s in revised.sources] == ["src_adr_7", "src_user_note_8"]
    with pytest.raises(pc.InvalidMemoryRequestError, match="kind"):
        pc.StructuredEntry(kind=None, text="x")


class ScriptedExtractor:
    """Test double for a model: returns fixed proposals (no model, no network)."""

    def __init__(self, proposals=(), error=None):
        self.proposals, self.error, self.calls = proposals, error, 0

    async def propose(self, evidence, current):
        self.calls += 1
        if self.error:
            raise self.error
        return self.proposals


async def test_model_proposals_are_untrusted_candidates(svc):
    note = await svc.sources.persist(pc.ContentSource("src_user_note", "We deploy on Fridays only after 10:00."))
    other = await svc.sources.persist(pc.ContentSource("src_elsewhere", "unrelated"))
    extractor = ScriptedExtractor([
        ModelProposal("constraint", "Deploy on Fridays only after 10:00.", ("src_user_note",)),
        ModelProposal("fact", "Cites only what this operation did not supply.", ("src_elsewhere",)),
        ModelProposal("decision", "Revises an entry that does not exist.", ("src_user_note",), revises="mem_ent_x"),
        ModelProposal("not a kind!", "Dropped: invalid kind.", ("src_user_note",)),
    ])
    svc.pipeline = DefaultCandidatePipeline(sources=svc.sources, extractor=extractor)
    rev = await svc.remember(None, sources=(note,), mode="extract")
    entries = await svc.entries(rev)
    assert sorted((e.kind, e.text) for e in entries) == [
        ("constraint", "Deploy on Fridays only after 10:00."),
        ("decision", "Revises an entry that does not exist."),  # became a new entry
    ]
    assert all([s.name for s in e.sources] == ["src_user_note"] for e in entries)
    assert other.name not in {s.name for s in rev.lineage.sources}


async def test_an_unavailable_model_falls_back_to_the_working_note(svc):
    extractor = ScriptedExtractor(error=pc.CapabilityNotSupportedError("model endpoint down (simulated)"))
    svc.pipeline = DefaultCandidatePipeline(sources=svc.sources, extractor=extractor)
    outcome = await svc.sources.persist(pc.TaskOutcomeSource(name="src_outcome", report="Fixed the flaky test."))
    rev = await svc.remember(None, sources=(outcome,), mode="extract")
    assert extractor.calls == 1 and [e.text for e in await svc.entries(rev)] == ["Task outcome: Fixed the flaky test."]
