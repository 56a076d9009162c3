"""A Runtime opened with ``search_log=True`` logs its scoped searches through its
MemoryService (issue 44, item 1), on both storage profiles."""

from __future__ import annotations

from powercontext.runtime import MemoryEntryInput, RememberMemoryRequest


async def test_scoped_searches_are_logged_when_the_runtime_opens_with_the_log(fresh_target, open_runtime, scope):
    runtime = await open_runtime(fresh_target, search_log=True)
    memory = runtime.memory.for_scope(scope)
    head = await memory.remember(RememberMemoryRequest(entries=(
        MemoryEntryInput(kind="fact", text="The API server listens on port 8080 in development."),
        MemoryEntryInput(kind="fact", text="The staging server is rebuilt every night."),
    )))
    result = await memory.search("which port does the API server listen on")
    assert result.hits
    (record,) = await runtime.memory_service.search_log()
    assert record.question == "which port does the API server listen on"
    assert [(m.artifact_id, m.revision) for m in record.memories] == [(head.artifact_id, head.revision)]
    assert [h.entry_version_id for h in record.hits] == [h.entry_version_id for h in result.hits]


async def test_a_runtime_logs_nothing_by_default(fresh_target, open_runtime, scope):
    runtime = await open_runtime(fresh_target)
    memory = runtime.memory.for_scope(scope)
    await memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(kind="fact", text="CI runs on GitHub."),)))
    await memory.search("where does CI run")
    assert await runtime.memory_service.search_log() == []
