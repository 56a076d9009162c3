"""After a migration, every refusal names the model the database holds now and the
way to move it (issue 45: reopening without a model advised ``embedding='minilm'``
on an E5 database; opening with the old model never named ``migrate_embedding``)."""

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds

from .test_migration import _two_memories, reopen  # noqa: F401  (reopen is a fixture)


async def test_refusals_after_a_migration_name_the_profile_the_database_holds(open_service, reopen, minilm, e5):  # noqa: F811
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    one, _ = await _two_memories(svc)
    with pytest.raises(pc.BackendUnavailableError, match=r"Open it with embedding='minilm'.*svc.migrate_embedding\('e5'\).*%pcmem migrate --embedding e5"):
        await reopen(svc, e5)
    await svc.migrate_embedding(e5, progress=False)
    head = await svc.head(one.ref.artifact_id)

    plain = await reopen(svc, None)
    res = await plain.search("who approves schema changes", memories=(head,), mode="auto")
    assert res.mode == "fts" and "open with embedding='e5'" in res.fallback_reason
    assert "minilm" not in res.fallback_reason
    with pytest.raises(pc.CapabilityNotSupportedError, match=r"holds 'multilingual-e5-small-q4' vectors: open with embedding='e5'"):
        await plain.search("who approves schema changes", memories=(head,), mode="vector")

    with pytest.raises(pc.BackendUnavailableError, match=r"holds vectors of embedding profile 'multilingual-e5-small-q4'.*"
                                                         r"Open it with embedding='e5', or move it.*svc.migrate_embedding\('minilm'\)"):
        await reopen(svc, minilm)
