"""The RFC's coding-agent scenario, as a reusable builder for conformance tests."""

from __future__ import annotations

from dataclasses import dataclass

import powercontext as pc

ENTRY_01A = "powercontext uses uv to manage dependencies and Hatchling to build."
ENTRY_02B = "Validation convention: run make test for routine code changes; run make check before review."
ENTRY_02B_V2 = (
    "Validation convention: run make test for routine code changes; prefer make docs-test for "
    "documentation-only changes; run make check before review."
)
ENTRY_03C = "site/ is generated output and must not be modified as source material."


@dataclass
class Scenario:
    r1: pc.MemoryRevision
    sources: dict
    e01a: pc.MemoryEntryVersion
    e02b: pc.MemoryEntryVersion
    e03c: pc.MemoryEntryVersion


async def persist_sources(svc) -> dict:
    names = {
        "src_task_outcome_001": "Task done: conventions confirmed by running make test and make check.",
        "src_agents_md": "AGENTS.md — use uv; validate with make test / make check; never edit site/.",
        "src_pyproject": "[build-system]\nrequires = ['hatchling']\nbuild-backend = 'hatchling.build'",
        "src_makefile": "test:\n\tuv run pytest\ncheck: test\n\tuv run ruff check .",
    }
    return {n: await svc.sources.persist(pc.ContentSource(n, c)) for n, c in names.items()}


async def revision_one(svc) -> Scenario:
    s = await persist_sources(svc)
    r1 = await svc.remember(
        memory=None,
        sources=(s["src_task_outcome_001"], s["src_agents_md"], s["src_pyproject"], s["src_makefile"]),
        entries=(
            pc.MemoryEntryInput(kind="fact", text=ENTRY_01A, sources=(s["src_agents_md"], s["src_pyproject"])),
            pc.MemoryEntryInput(kind="preference", text=ENTRY_02B, sources=(s["src_agents_md"], s["src_makefile"])),
            pc.MemoryEntryInput(kind="constraint", text=ENTRY_03C, sources=(s["src_agents_md"],)),
        ),
        mode="append",
    )
    by_text = {e.text: e for e in await svc.entries(r1)}
    return Scenario(r1, s, by_text[ENTRY_01A], by_text[ENTRY_02B], by_text[ENTRY_03C])


async def user_correction(svc, sc: Scenario) -> pc.MemoryRevision:
    note = await svc.sources.persist(pc.ContentSource(
        "src_user_note",
        "You do not need to run the full make test when editing documentation; prefer make docs-test.",
    ))
    sc.sources["src_user_note"] = note
    return await svc.remember(
        memory=sc.r1,
        sources=(note,),
        entries=(pc.MemoryEntryInput(kind="preference", text=ENTRY_02B_V2, sources=(note,), entry=sc.e02b),),
        mode="append",
    )
