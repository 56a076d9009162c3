"""The opt-in search log (issue 44, item 1), on both databases: what a record holds,
that it is built from the search's own decisions, that it touches no Memory, the cap,
reading/clearing by time, and that a failing append never fails a search."""

from __future__ import annotations

import asyncio
import logging
import os
from datetime import datetime, timedelta, timezone

import pytest

import powercontext as pc
from powercontext.backends.search_log_table import TABLE
from powercontext.canonical import SequentialIds
from powercontext.errors import InvalidMemoryRequestError
from powercontext.memory import search_log
from powercontext.memory.search_log import SearchLogRecord

TEXTS = (
    "The test suite runs with uv run pytest from the repository root",
    "Deploys go through the staging cluster before production",
    "The API server listens on port 8080 in development",
    "Database migrations are written with alembic and reviewed by two people",
    "The integration suite runs nightly on CI",
)
QUESTION = "how do we run the test suite with pytest"


async def _memory(svc):
    return await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in TEXTS), mode="append")


async def test_a_record_holds_the_question_the_hits_and_every_rejection_with_its_reason(open_service):
    svc = await open_service(ids=SequentialIds(), search_log=True)
    rev = await _memory(svc)
    result = await svc.search(QUESTION, memories=(rev,), limit=3, explain=True)
    assert result.hits, "the question must admit something for this test to mean anything"
    (record,) = await svc.search_log()
    assert isinstance(record, SearchLogRecord) and record.id is not None
    assert record.question == QUESTION
    assert [(m.artifact_id, m.revision) for m in record.memories] == [(rev.artifact_id, rev.revision)]
    assert (record.requested_mode, record.mode, record.limit) == ("auto", result.mode, 3)
    assert record.policy == svc.policy.to_dict()
    assert record.embedding_profile is None  # opened full-text only
    # the hits are the search's own, in its order
    assert [(h.entry_id, h.entry_version_id, h.rank, h.channels) for h in record.hits] == [
        (h.entry_id, h.entry_version_id, i, tuple(h.matched_by)) for i, h in enumerate(result.hits, 1)]
    # every rejected candidate of the pool, with explain's own reason
    refused = [(d.candidate.entry_version_id, d.reason) for d in result.decisions if not d.admitted]
    assert refused, "the pool must hold a rejected candidate for this test to mean anything"
    assert [(r.entry_version_id, r.reason) for r in record.rejected] == refused
    assert all(r.reason and r.query_terms > 0 for r in record.rejected)
    # full text only: no profile, no calibration, so no probability anywhere
    assert all(r.probability is None and r.calibration_cell is None for r in record.rejected)
    assert all(h.probability is None and h.calibration_cell is None for h in record.hits)
    assert abs(record.logged_at - datetime.now(timezone.utc)) < timedelta(minutes=1)


async def test_every_logged_candidate_carries_its_calibrated_probability_and_cell(open_service, minilm):
    """Issue 46: a profile with a calibration (MiniLM ships one) logs each candidate's
    probability and the cell it was read from — a rejection its own, a hit one per
    channel that admitted it — the very values the search's explain carried."""
    svc = await open_service(ids=SequentialIds(), search_log=True, embedding=minilm)
    rev = await _memory(svc)
    for question in (QUESTION, "which port does the API listen on", "数据库迁移由谁审批？"):
        await svc.search(question, memories=(rev,), mode="hybrid", limit=3)
    records = await svc.search_log()
    results = [await svc.search(r.question, memories=(rev,), mode="hybrid", limit=3, explain=True) for r in records]
    channels_seen, cells = set(), set()
    for record, result in zip(records, results):
        assert record.embedding_profile == minilm.profile.profile_id
        refused = [(d.candidate.channel, d.candidate.entry_version_id, d.candidate.probability,
                    d.candidate.calibration_cell) for d in result.decisions if not d.admitted]
        assert [(r.channel, r.entry_version_id, r.probability, r.calibration_cell) for r in record.rejected] == refused
        admitted = {}
        for d in result.decisions:
            if d.admitted:
                admitted.setdefault(d.candidate.entry_version_id, {})[d.candidate.channel] = (
                    d.candidate.probability, d.candidate.calibration_cell)
        for hit in record.hits:
            want = admitted[hit.entry_version_id]
            assert hit.probability == {ch: p for ch, (p, _) in want.items()}
            assert hit.calibration_cell == {ch: cell for ch, (_, cell) in want.items()}
            channels_seen |= set(hit.probability)
        for r in record.rejected:
            # hybrid: the stacked cell names both channels' own cells (issue 46 item 1)
            assert 0.0 <= r.probability <= 1.0 and r.calibration_cell.startswith("hybrid stacked (")
            assert r.channel in r.calibration_cell
            cells.add(r.calibration_cell)
        channels_seen |= {r.channel for r in record.rejected}
    assert channels_seen == {"fts", "vector"}
    # the language pair is there: the Chinese question's vector candidates are cjk>latin
    assert any("by vector centred cjk>latin" in cell for cell in cells)


def test_a_record_written_before_the_probability_fields_still_loads():
    """Rows of records written before issue 46 hold nine signal columns and hits no
    probability: they read back with None there."""
    now = search_log.record_fields(
        question="q", memories=(), requested_mode="fts", mode="fts", fallback_reason=None, embedding_profile=None,
        policy=pc.AdmissionPolicy(), limit=3, channels={}, hits=())
    old_row = ["fts", 2, 0, "mem_ent_1", "mem_ver_1", 0, 1, 4, None, None, 0.3, "latin", "latin", None, 5]
    now["memories"] = [{"artifact_id": "mem_art_1", "revision": 1}]
    now["rejected"] = {"memories": [["mem_art_1", 1]], "reasons": ["matched 1/4 terms, needs 2"], "rows": [old_row]}
    now["hits"] = [{"memory_artifact_id": "mem_art_1", "revision": 1, "entry_id": "mem_ent_2",
                    "entry_version_id": "mem_ver_2", "rank": 1, "score": 0.5, "channels": ["fts"]}]
    record = SearchLogRecord.model_validate_json(search_log.pydantic_core.to_json(now))
    (rejected,) = record.rejected
    assert (rejected.support, rejected.pool_rank, rejected.probability, rejected.calibration_cell) == (0.3, 5, None, None)
    assert (record.hits[0].probability, record.hits[0].calibration_cell) == (None, None)


async def test_the_log_is_off_by_default(open_service):
    svc = await open_service()
    rev = await _memory(svc)
    await svc.search(QUESTION, memories=(rev,))
    assert await svc.search_log() == []
    assert await svc.clear_search_log() == 0
    # nothing was logged, and reading or clearing the log created nothing either
    assert not await _log_table_exists(svc)


async def _log_table_exists(svc) -> bool:
    table = svc._search_log._table

    def exists():
        with svc.backend._transaction(write=False) as tx:
            return table._exists(tx)
    return await svc.backend._run(exists)


async def test_logging_changes_no_revision_hash_or_verify(open_service):
    svc = await open_service(search_log=True)
    rev = await _memory(svc)
    before = await svc.verify(rev)
    for q in (QUESTION, "staging deploys", "port 8080"):
        await svc.search(q, memories=(rev,))
    assert len(await svc.search_log()) == 3
    head = await svc.head(rev.artifact_id)
    assert (head.revision, head.content_hash) == (rev.revision, rev.content_hash)
    after = await svc.verify(rev)
    assert after.ok and after.issues == before.issues == ()
    assert await svc.clear_search_log() == 3
    assert await svc.search_log() == []
    assert (await svc.verify(rev)).ok


async def test_oldest_records_are_dropped_beyond_the_cap(open_service):
    svc = await open_service(search_log=True, search_log_cap=5)
    rev = await _memory(svc)
    for i in range(12):
        await svc.search(f"run the test suite {i}", memories=(rev,))
    records = await svc.search_log(limit=100)
    assert [r.question for r in records] == [f"run the test suite {i}" for i in range(7, 12)]
    assert [r.logged_at for r in records] == sorted(r.logged_at for r in records)
    # stored rows: trimmed back to the cap every 5 appends (so at most cap + 4 between trims)
    table = svc._search_log._table
    rows = await svc.backend._run(lambda: table._read_sync(None, 1000))
    assert 5 <= len(rows) <= 9


async def test_since_limit_and_clear_before(open_service):
    svc = await open_service(search_log=True)
    rev = await _memory(svc)
    await svc.search("first question", memories=(rev,))
    await svc.search_log()  # waits for the append: the next one is logged strictly later
    middle = datetime.now(timezone.utc)
    await svc.search("second question", memories=(rev,))
    await svc.search("third question", memories=(rev,))
    assert [r.question for r in await svc.search_log(since=middle)] == ["second question", "third question"]
    assert [r.question for r in await svc.search_log(limit=1)] == ["third question"]
    frame = await svc.search_log_frame()
    assert list(frame["question"]) == ["first question", "second question", "third question"]
    assert {"hits", "rejected", "n_hits", "n_rejected", "logged_at"} <= set(frame.columns)
    assert await svc.clear_search_log(before=middle) == 1
    assert [r.question for r in await svc.search_log()] == ["second question", "third question"]


async def test_a_failing_append_never_fails_the_search(open_service, caplog):
    svc = await open_service(search_log=True)
    rev = await _memory(svc)
    expected = await svc.search(QUESTION, memories=(rev,))
    assert len(await svc.search_log()) == 1
    # A real database error: the log table replaced by one the insert cannot write.
    def break_table():
        with svc.backend._transaction(write=True) as tx:
            tx.execute(f"DROP TABLE {TABLE}")
            tx.execute(f"CREATE TABLE {TABLE} (id INTEGER PRIMARY KEY)")
    await svc.backend._run(break_table)
    with caplog.at_level(logging.WARNING, logger="powercontext.memory.search_log"):
        for _ in range(3):
            result = await svc.search(QUESTION, memories=(rev,))
            assert result.hits == expected.hits
        await svc._search_log.drain()
    assert svc.search_log_failures == 3
    warnings = [r for r in caplog.records if r.name == "powercontext.memory.search_log"]
    assert len(warnings) == 1 and "search log" in warnings[0].getMessage()
    assert (await svc.verify(rev)).ok


@pytest.mark.parametrize("options, words", [
    ({"search_log": "yes"}, "search_log must be True or False"),
    ({"search_log": True, "search_log_cap": 0}, "search_log_cap must be an integer"),
    ({"search_log": True, "search_log_cap": True}, "search_log_cap must be an integer"),
])
async def test_bad_options_are_refused_before_anything_is_created(tmp_path, options, words):
    path = tmp_path / "refused.db"
    with pytest.raises(InvalidMemoryRequestError, match=words):
        await pc.open(str(path), **options)
    assert not os.path.exists(path)


async def test_bad_reads_are_refused_with_the_library_error(open_service):
    svc = await open_service(search_log=True)
    with pytest.raises(InvalidMemoryRequestError, match="timezone-aware datetime"):
        await svc.search_log(since=datetime.now())
    with pytest.raises(InvalidMemoryRequestError, match="timezone-aware datetime"):
        await svc.clear_search_log(before="yesterday")
    with pytest.raises(InvalidMemoryRequestError, match="positive integer"):
        await svc.search_log(limit=0)


async def test_concurrent_first_searches_all_land_in_a_new_log(open_service):
    """The log's table is created by the first append; concurrent first appends (four
    workers on OceanBase) must not race its creation and drop records."""
    svc = await open_service(search_log=True)
    rev = await _memory(svc)
    questions = [f"run the test suite {i}" for i in range(12)]
    await asyncio.gather(*(svc.search(q, memories=(rev,)) for q in questions))
    assert sorted(r.question for r in await svc.search_log()) == sorted(questions)
    assert svc.search_log_failures == 0


async def _stored(svc) -> list[str]:
    """The questions of the rows in the table now, without draining what is waiting."""
    table = svc._search_log._table
    return [SearchLogRecord.model_validate_json(text).question
            for _, text in await svc.backend._run(table._read_sync, None, 1000)]


async def _until_stored(svc, count: int, seconds: float = 10.0) -> list[str]:
    deadline = asyncio.get_running_loop().time() + seconds
    while len(stored := await _stored(svc)) < count and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return stored


async def test_searches_are_written_in_batches_off_the_callers_path_and_read_back_in_order(
        open_service, monkeypatch):
    """The caller builds no record and runs no statement: after the first search (written
    at once) the records wait in memory and are written as one batch — by size, by time,
    or before the log is read — and ``search_log()`` sees every search made before it."""
    svc = await open_service(search_log=True)
    rev = await _memory(svc)
    await svc.search("question 0", memories=(rev,))
    assert await _until_stored(svc, 1) == ["question 0"]
    for i in range(1, 6):
        await svc.search(f"question {i}", memories=(rev,))
    assert await _stored(svc) == ["question 0"], "a search wrote its record on the caller's path"
    # read-your-writes: the waiting records are written before the read
    assert [r.question for r in await svc.search_log()] == [f"question {i}" for i in range(6)]
    assert len(await _stored(svc)) == 6
    # by time: FLUSH_AFTER_S after the oldest waiting record, without any read
    await svc.search("question 6", memories=(rev,))
    await asyncio.sleep(search_log.FLUSH_AFTER_S + 0.05)
    assert (await _until_stored(svc, 7))[-1] == "question 6"
    # by size: FLUSH_EVERY waiting records are written as one batch at once. The timer is
    # pushed out to a minute, so a write seen within ten seconds was the size's, however
    # loaded the machine (a window of FLUSH_AFTER_S / 2 missed at load 19).
    monkeypatch.setattr(search_log, "FLUSH_AFTER_S", 60.0)
    for i in range(7, 7 + search_log.FLUSH_EVERY):
        await svc.search(f"question {i}", memories=(rev,))
    stored = await _until_stored(svc, 7 + search_log.FLUSH_EVERY, seconds=10.0)
    assert len(stored) == 7 + search_log.FLUSH_EVERY
    assert svc.search_log_failures == 0


async def test_close_writes_the_records_still_waiting(open_service):
    reader = await open_service()
    target = getattr(reader.backend, "path", None) or reader.backend.url
    rev = await _memory(reader)
    svc = await pc.open(target, search_log=True)
    try:
        for i in range(5):
            await svc.search(f"question {i}", memories=(rev,))
    finally:
        await svc.close()
    logging_again = await pc.open(target, search_log=True)
    try:
        assert [r.question for r in await logging_again.search_log()] == [f"question {i}" for i in range(5)]
    finally:
        await logging_again.close()
