"""flat-v1 stores the whole manifest in every Revision, so storage grows with
entries × edits. Prints bytes of artifact_revisions and commit latency as a Memory
of N entries takes one-entry edits.

    .venv/bin/python benchmarks/manifest_growth.py [--entries 1000] [--edits 200]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

import powercontext as pc


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--entries", type=int, default=1000)
    ap.add_argument("--edits", type=int, default=200)
    args = ap.parse_args()
    svc = await pc.open(tempfile.mktemp(suffix=".db"))
    rev = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", f"fact number {i}") for i in range(args.entries)))
    entries = list(await svc.entries(rev))

    def revision_bytes():
        with svc.backend._transaction(write=False) as tx:
            return tx.execute("SELECT COUNT(*), SUM(LENGTH(content)) FROM artifact_revisions").fetchone()

    print(f"{'revisions':>9} {'manifest bytes (sum)':>21} {'bytes/revision':>15} {'commit ms':>10}")
    start = time.perf_counter()
    for i in range(args.edits):
        entry = entries[i % len(entries)]
        t = time.perf_counter()
        rev = await svc.remember(rev, entries=(pc.MemoryEntryInput("fact", entry.text + f" (edit {i})", entry=entry),))
        commit_ms = (time.perf_counter() - t) * 1000
        entries[i % len(entries)] = await svc.entry(rev, entry.entry_id)
        if (i + 1) % max(1, args.edits // 5) == 0:
            count, total = svc.backend._executor.submit(revision_bytes).result()
            print(f"{count:>9} {total:>21,} {total // count:>15,} {commit_ms:>10.1f}")
    print(f"{args.edits} edits in {time.perf_counter() - start:.1f} s")
    await svc.close()


if __name__ == "__main__":
    asyncio.run(main())
