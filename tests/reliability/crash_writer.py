"""A child writer for the crash loop: appends one entry per Revision to a Memory and
prints ``ack REVISION TEXT`` only after remember() returned (the write is acknowledged).

    python -m tests.reliability.crash_writer TARGET START

TARGET is a SQLite path or an OceanBase URL; START numbers the entries of this run.
The parent SIGKILLs this process at a random moment, mid-commit included.
"""

from __future__ import annotations

import asyncio
import sys

import powercontext as pc


async def main(target: str, start: int) -> None:
    svc = await pc.open(target)
    memories = await svc.memories()
    head = await svc.head(memories[0].artifact_id) if memories else None
    print("ready", flush=True)
    n = start
    while True:
        text = f"crash loop entry {n}"
        batch = (pc.MemoryEntryInput("fact", text),) + tuple(
            pc.MemoryEntryInput("working_note", f"{text} note {i}") for i in range(n % 3)
        )
        head = await svc.remember(head, entries=batch)
        print(f"ack {head.revision} {text}", flush=True)
        n += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
