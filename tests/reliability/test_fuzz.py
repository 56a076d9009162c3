"""Random public calls on both databases (issue 13): any exception that is not one of
the library's typed errors fails. Bounded (``max_examples``) to stay within the time
budget of ``make test``; ``make soak`` raises PC_FUZZ_EXAMPLES."""

from __future__ import annotations

import asyncio
import os
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database

EXAMPLES = int(os.environ.get("PC_FUZZ_EXAMPLES", "120"))

NASTY_TEXT = [
    "", " ", "\x00", "\ud800", "a\udfffb", "é", "中文检索", "🙂" * 3, "OR", "AND NOT", '"', "*", "NEAR(a b)",
    "a' OR 1=1 --", "`; DROP DATABASE x; --", "%s %s", "?", "\\", "x" * 9000, "word " * 2000,
    " ".join(f"t{i}" for i in range(300)), "build cache", "the", "\u0300\u0301", "a\u200bb",
]
text = st.one_of(st.sampled_from(NASTY_TEXT), st.text(max_size=40))
junk = st.one_of(st.none(), st.integers(), st.floats(allow_nan=True), st.binary(max_size=4),
                 st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
maybe_text = st.one_of(text, junk)

kind = st.one_of(st.sampled_from(["fact", "decision", "working_note"]), maybe_text)

# What the calls may name: the live head, a stale Revision, a made-up ref, or junk.
memory = st.sampled_from(["head", "stale", "ghost", "none", "junk", "revision-zero"])
entry_pick = st.sampled_from(["current", "stale", "forged", "junk"])

op = st.one_of(
    st.tuples(st.just("search"), maybe_text, st.lists(memory, max_size=3), st.one_of(st.integers(-1, 2000), junk),
              st.sampled_from(["fts", "auto", "vector", "hybrid", "bogus", None])),
    st.tuples(st.just("remember"), memory, st.lists(st.tuples(kind, maybe_text, st.booleans()), max_size=3),
              st.sampled_from(["append", "auto", "extract", "nope"])),
    st.tuples(st.just("forget"), memory, st.lists(entry_pick, max_size=2), maybe_text),
    st.tuples(st.just("cite"), memory, st.one_of(entry_pick, maybe_text), maybe_text),
    st.tuples(st.just("source"), maybe_text, maybe_text, st.one_of(junk, st.dictionaries(st.text(max_size=5), text, max_size=3))),
)


class World:
    def __init__(self, svc, loop):
        self.svc, self.loop = svc, loop
        self.first = loop.run_until_complete(svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas"),)))
        self.source = loop.run_until_complete(svc.sources.persist(pc.ContentSource("src_fuzz", "evidence")))

    async def head(self):
        return await self.svc.head(self.first.artifact_id)

    async def memory(self, pick):
        return {
            "head": await self.head(), "stale": self.first.ref, "ghost": pc.ArtifactRef("mem_art_ghost", 1),
            "none": None, "junk": 42, "revision-zero": pc.ArtifactRef(self.first.artifact_id, 0),
        }[pick]

    async def entry(self, pick):
        head = await self.head()
        if pick == "junk":
            return "mem_ent_junk"
        versions = await self.svc.entries(head, state="all")
        if pick == "current":
            return versions[0]
        if pick == "stale":
            return (await self.svc.entries(self.first, state="all"))[0]
        import dataclasses

        return dataclasses.replace(versions[0], entry_version_id="mem_ver_forged")

    async def apply(self, call):
        name = call[0]
        svc = self.svc
        if name == "search":
            _, query, picks, limit, mode = call
            return await svc.search(query, memories=[await self.memory(p) for p in picks], limit=limit, mode=mode)
        if name == "remember":
            _, pick, entries, mode = call
            inputs = [pc.MemoryEntryInput(kind, body, sources=(self.source,) if cited else ()) for kind, body, cited in entries]
            return await svc.remember(await self.memory(pick), sources=(self.source,), entries=inputs, mode=mode)
        if name == "forget":
            _, pick, entries, reason = call
            return await svc.forget(await self.memory(pick), [await self.entry(e) for e in entries], reason=reason)
        if name == "cite":
            _, pick, entry, version = call
            entry_id = (await self.entry(entry)).entry_id if entry in ("current", "stale", "forged") else entry
            return await svc.cite(await self.memory(pick), entry_id, version)
        _, name_, content, metadata = call
        return await svc.sources.persist(pc.ContentSource(name_, content, metadata=metadata))


def _fuzz(target: str) -> None:
    loop = asyncio.new_event_loop()
    svc = loop.run_until_complete(pc.open(target))
    try:
        world = World(svc, loop)

        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(op, min_size=1, max_size=4))
        def calls_raise_only_typed_errors(calls):
            for call in calls:
                try:
                    loop.run_until_complete(world.apply(call))
                    outcomes["ok"] += 1
                except pc.PowerContextError as exc:
                    outcomes["typed"] += 1
                    assert "\n" not in str(exc).strip() or len(str(exc)) < 2000
            report = loop.run_until_complete(svc.verify(world.first.artifact_id))
            assert report.ok, report.issues

        outcomes = {"ok": 0, "typed": 0}
        calls_raise_only_typed_errors()
        # Both paths were exercised: valid calls that worked, invalid ones refused.
        assert outcomes["ok"] > 10 and outcomes["typed"] > 10, outcomes
        head = loop.run_until_complete(world.head())
        assert head.revision > 1
    finally:
        loop.run_until_complete(svc.close())
        loop.close()


def test_fuzz_sqlite(tmp_path):
    _fuzz(str(tmp_path / "fuzz.db"))


def test_fuzz_oceanbase(oceanbase_url):
    database = "pc_fuzz_" + uuid.uuid4().hex[:8]
    try:
        _fuzz(database_url(oceanbase_url, database))
    finally:
        drop_database(oceanbase_url, database)
