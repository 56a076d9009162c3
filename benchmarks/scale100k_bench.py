"""A 100,000-entry Memory on both databases (issue 15): does every public operation of
the MemoryService work, and how long does each take?

    .venv/bin/python benchmarks/scale100k_bench.py [--n 100000] [--backends oceanbase,sqlite]
        [--batch 20000] [--no-one-call] [--timeout 3600] [--no-migrate]

Per backend:

1. The N entries (perf_bench's corpus texts and seeded recombinations, with perf_bench's
   seeded pseudo-random vectors: not a model) are remembered in ONE ``remember()`` call.
   If that is refused, the error's type and message are printed and the Memory is built
   in batches of ``--batch`` instead.
2. Every public operation of the service is run once on that Memory (searches a few
   times: the first, cold call and the median of the rest are printed): reads (head,
   revision, memories, capabilities, entries, entry, lineage, changes), searches (fts,
   vector, hybrid, auto, explain, retrieve), citations (expand, cite, render_context),
   Sources (persist, get), writes of one entry (append, revise, patch, forget,
   reactivate), organize, a cold reopen, verify, rebuild_projections and, last, the
   analyzer migration (``rebuild_projections(analyzer="v2")``).

Each operation is reported as ``ok``, a typed ``PowerContextError`` or a raw error,
with its wall seconds, and the peak RSS of this process and of the seekdb server after
it. Prints figures; asserts nothing. ``make scale100k`` runs it (not part of ``make
test`` or ``make bench``: the OceanBase build alone takes tens of minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dirs  # noqa: E402
import powercontext as pc  # noqa: E402
from perf_bench import SeededVectors, corpus_texts, load, machine, peak_rss_mb, synthesize  # noqa: E402
from powercontext.backends.seekdb.urls import drop_database  # noqa: E402
from powercontext.errors import PowerContextError  # noqa: E402


def server_peak_rss_mb(pid: int | None) -> float:
    """The seekdb process's peak resident set (VmHWM), or nan when it is not known."""
    if pid is None:
        return float("nan")
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def outcome(exc: BaseException | None) -> str:
    if exc is None:
        return "ok"
    kind = "typed" if isinstance(exc, PowerContextError) else "RAW"
    return f"{kind} {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


class Recorder:
    def __init__(self, backend: str, server_pid: int | None, timeout: float) -> None:
        self.backend = backend
        self.server_pid = server_pid
        self.timeout = timeout
        self.rows: list[tuple[str, str, float, str]] = []

    async def run(self, name: str, make, detail=None):
        """Run ``make()`` (a coroutine factory) once; record its outcome and seconds.
        Returns its result, or None when it failed."""
        start = time.perf_counter()
        result, exc = None, None
        try:
            result = await asyncio.wait_for(make(), self.timeout)
        except asyncio.TimeoutError as e:  # the worker thread may still be busy
            exc = TimeoutError(f"no answer after {self.timeout:.0f} s")
            exc.__cause__ = e
        except Exception as e:  # noqa: BLE001 - the benchmark reports what happened
            exc = e
        seconds = time.perf_counter() - start
        note = ""
        if exc is None and detail is not None:
            try:
                note = detail(result)
            except Exception as e:  # noqa: BLE001
                note = f"(detail failed: {e!r})"
        self.rows.append((name, outcome(exc), seconds, note))
        print(f"  {self.backend:<9} {name:<34} {outcome(exc)[:160]:<12} {seconds:9.3f} s  {note}"
              f"  | RSS peak {peak_rss_mb():6.0f} MB, seekdb {server_peak_rss_mb(self.server_pid):6.0f} MB",
              flush=True)
        return result

    async def repeated(self, name: str, make, times: int, detail=None):
        """The first (cold) call recorded as ``name``, then the median of ``times`` more."""
        first = await self.run(name + " (first)", make, detail)
        if first is None:
            return None
        durations = []
        for _ in range(times):
            start = time.perf_counter()
            try:
                await make()
            except Exception as e:  # noqa: BLE001
                self.rows.append((name + " (repeat)", outcome(e), time.perf_counter() - start, ""))
                return first
            durations.append(time.perf_counter() - start)
        self.rows.append((name + f" (p50 of {times})", "ok", statistics.median(durations), ""))
        print(f"  {self.backend:<9} {name + f' (p50 of {times})':<34} ok           {statistics.median(durations):9.3f} s", flush=True)
        return first


async def build(rec: Recorder, target: str, texts: list[str], model, batch: int, one_call: bool):
    """The N-entry Memory: one remember() call, else batches. Returns (svc, head)."""
    if one_call:
        svc = await pc.open(target, embedding=model)
        entries = tuple(pc.MemoryEntryInput("fact", t) for t in texts)
        rev = await rec.run(f"remember() of {len(texts):,} in ONE call",
                            lambda: svc.remember(None, entries=entries),
                            lambda r: f"Revision {r.revision}, {len(r.manifest.entries):,} entries")
        if rev is not None:
            return svc, rev
        await svc.close()

    async def batched():
        return await load(target, texts, model, batch)
    built = await rec.run(f"remember() of {len(texts):,} in batches of {batch:,}", batched,
                          lambda r: f"Revision {r[1].revision}, {r[2]:.0f} s")
    if built is None:
        return None, None
    return built[0], built[1]


async def operations(rec: Recorder, svc, head, target: str, model, queries: list[str], migrate: bool):
    aid = head.artifact_id
    await rec.run("head()", lambda: svc.head(aid), lambda r: f"Revision {r.revision}")
    await rec.run("revision(ref)", lambda: svc.revision(head.ref))
    await rec.run("memories()", svc.memories, lambda r: f"{len(r)} Memories")
    await rec.run("capabilities()", svc.capabilities, lambda r: f"vector={r.vector}")
    active = await rec.run("entries() active", lambda: svc.entries(head), lambda r: f"{len(r):,} versions")
    await rec.run("entries(state='all')", lambda: svc.entries(head, state="all"), lambda r: f"{len(r):,} versions")
    some = active[len(active) // 2] if active else None
    if some is not None:
        await rec.run("entry(id)", lambda: svc.entry(head, some.entry_id))
        await rec.run("lineage(id)", lambda: svc.lineage(head, some.entry_id), lambda r: f"{len(r)} versions")
    await rec.run("changes(since_revision=0)", lambda: svc.changes(head, since_revision=0),
                  lambda r: f"{len(r)} Revisions, {sum(len(c.changes) for c in r):,} changes")
    await rec.run("changes() of the head", lambda: svc.changes(head))

    q = iter(queries * 4)
    results = {}
    for mode in ("fts", "vector", "hybrid", "auto"):
        results[mode] = await rec.repeated(
            f"search mode={mode}", lambda mode=mode: svc.search(next(q), memories=(head,), mode=mode, limit=8), 5,
            lambda r: f"{len(r.hits)} hits, mode {r.mode}")
    await rec.run("search hybrid explain=True",
                  lambda: svc.search(queries[0], memories=(head,), mode="hybrid", explain=True),
                  lambda r: f"{len(r.hits)} hits, {len(r.decisions)} decisions")
    await rec.run("retrieve() hybrid", lambda: svc.retrieve(queries[1], memories=(head,), mode="hybrid"),
                  lambda r: ", ".join(f"{k}: {len(v)}" for k, v in dict(r[0].channels).items())
                  if hasattr(r[0], "channels") else "")
    hits = next((r.hits for r in results.values() if r is not None and r.hits), ())
    if hits:
        await rec.run("expand(hits)", lambda: svc.expand(hits), lambda r: f"{len(r)} versions")
        await rec.run("cite(hit)", lambda: svc.cite(head, hits[0].entry_id, hits[0].entry_version_id))
        await rec.run("render_context(hits)", lambda: svc.render_context(hits), lambda r: f"{len(r):,} chars")
    else:
        print(f"  {rec.backend}: no search returned hits; expand/cite/render_context not run")

    source = await rec.run("sources.persist()", lambda: svc.sources.persist(
        pc.ContentSource(name="src_scale100k", content="release checklist notes for the 100k benchmark")))
    await rec.run("sources.get()", lambda: svc.sources.get("src_scale100k"))

    cur = head
    new = await rec.run("remember() one entry (append)", lambda: svc.remember(
        cur, sources=(source,) if source else (), entries=(pc.MemoryEntryInput(
            "fact", "appended fact about the release checklist", sources=(source,) if source else ()),)),
        lambda r: f"Revision {r.revision}")
    cur = new or await svc.head(aid)
    if some is not None:
        target_version = await svc.entry(cur, some.entry_id)
        new = await rec.run("remember() revise one entry", lambda: svc.remember(cur, entries=(pc.MemoryEntryInput(
            "fact", target_version.text + " (revised)", entry=target_version),)), lambda r: f"Revision {r.revision}")
        cur = new or await svc.head(aid)
        # a word that upper-casing changes: a no-op patch is refused (typed), which is not what is timed here
        words = (await svc.entry(cur, some.entry_id)).text.split()
        word = next((w for w in words if w != w.upper()), words[0])
        new = await rec.run("patch() one entry", lambda: svc.patch(cur, some.entry_id, word, word.upper()),
                            lambda r: f"Revision {r.revision}")
        cur = new or await svc.head(aid)
        victim = active[len(active) // 3]
        victim = await svc.entry(cur, victim.entry_id)
        new = await rec.run("forget() one entry", lambda: svc.forget(cur, (victim,), reason="scale test"),
                            lambda r: f"Revision {r.revision}")
        cur = new or await svc.head(aid)
        new = await rec.run("reactivate() one entry", lambda: svc.reactivate(cur, (victim,)),
                            lambda r: f"Revision {r.revision}")
        cur = new or await svc.head(aid)
    new = await rec.run("organize()", lambda: svc.organize(cur), lambda r: f"Revision {r.revision}")
    cur = new or await svc.head(aid)
    await rec.run("changes(since_revision=0) after writes", lambda: svc.changes(cur, since_revision=0),
                  lambda r: f"{len(r)} Revisions")

    await svc.close()
    svc = await rec.run("reopen (pc.open)", lambda: pc.open(target, embedding=model))
    if svc is None:
        return None
    cur = await rec.run("head() cold, after reopen", lambda: svc.head(aid), lambda r: f"Revision {r.revision}")
    await rec.run("entries() cold, after reopen", lambda: svc.entries(cur), lambda r: f"{len(r):,} versions")
    await rec.run("search hybrid cold, after reopen",
                  lambda: svc.search(queries[2], memories=(cur,), mode="hybrid"), lambda r: f"{len(r.hits)} hits")
    await rec.run("remember() one entry after reopen", lambda: svc.remember(cur, entries=(pc.MemoryEntryInput(
        "fact", "one more appended fact after reopening"),)), lambda r: f"Revision {r.revision}")
    cur = await svc.head(aid)
    await rec.run("verify(memory)", lambda: svc.verify(aid),
                  lambda r: f"{r.revisions} Revisions, {r.versions:,} versions, {len(r.issues)} issues")
    await rec.run("rebuild_projections(memory)", lambda: svc.rebuild_projections(cur),
                  lambda r: ", ".join(f"{v:,} rows" for v in r.values()))
    await rec.repeated("search hybrid after rebuild",
                       lambda: svc.search(queries[3], memories=(cur,), mode="hybrid"), 3, lambda r: f"{len(r.hits)} hits")
    if migrate:
        await rec.run("rebuild_projections(analyzer='v2')", lambda: svc.rebuild_projections(analyzer="v2"),
                      lambda r: ", ".join(f"{v:,} rows" for v in r.values()))
        await rec.run("search fts after migration",
                      lambda: svc.search(queries[4], memories=(cur,), mode="fts"), lambda r: f"{len(r.hits)} hits")
    await rec.run("verify(memory) at the end", lambda: svc.verify(aid),
                  lambda r: f"{r.revisions} Revisions, {len(r.issues)} issues")
    return svc


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=int(os.environ.get("SCALE_N", "100000")))
    ap.add_argument("--backends", default="oceanbase,sqlite")
    ap.add_argument("--batch", type=int, default=20_000)
    ap.add_argument("--no-one-call", dest="one_call", action="store_false")
    ap.add_argument("--no-migrate", dest="migrate", action="store_false")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds before an operation counts as hung")
    ap.add_argument("--memory-budget", default="2G", help="the seekdb server's memory budget")
    args = ap.parse_args()
    base, all_queries = corpus_texts()
    queries = random.Random(1).sample(all_queries, 8)
    texts = synthesize(base, args.n)
    model = SeededVectors()
    print(f"machine: {machine()}")
    print(f"load average at start: {os.getloadavg()}")
    print(f"vectors: seeded pseudo-random unit vectors, not a model; {args.n:,} entries\n", flush=True)
    dirs = contextlib.ExitStack()  # closed last to first: the server stops, then its store goes
    work = dirs.enter_context(bench_dirs.scratch("pc-scale100k-"))
    tables = []
    url = server = None
    try:
        for backend in args.backends.split(","):
            pid = None
            if backend == "sqlite":
                target = str(work / "scale.db")
            else:
                if url is None:
                    url, server = dirs.enter_context(bench_dirs.oceanbase(work, memory_budget=args.memory_budget))
                    pid = server.pid if server is not None else None
                database = f"scale100k_{os.getpid()}"
                target = url.rstrip("/") + f"/{database}"
            rec = Recorder(backend, pid if backend == "oceanbase" else None, args.timeout)
            print(f"--- {backend}: {args.n:,} entries (load average {os.getloadavg()[0]:.1f})", flush=True)
            svc, head = await build(rec, target, texts, model, args.batch, args.one_call)
            if svc is not None:
                svc = await operations(rec, svc, head, target, model, queries, args.migrate)
                if svc is not None:
                    await svc.close()
            tables.append((backend, rec.rows, server_peak_rss_mb(rec.server_pid)))
            if backend == "oceanbase":
                drop_database(url, database)
    finally:
        dirs.close()

    print(f"\nload average at end: {os.getloadavg()}")
    for backend, rows, server_mb in tables:
        print(f"\n{backend}, {args.n:,} entries | peak RSS: this process {peak_rss_mb():.0f} MB"
              + (f", seekdb {server_mb:.0f} MB" if backend == "oceanbase" else ""))
        print("| operation | outcome | seconds | detail |\n|---|---|---:|---|")
        for name, result, seconds, note in rows:
            print(f"| {name} | {result} | {seconds:.3f} | {note} |")


if __name__ == "__main__":
    asyncio.run(main())
