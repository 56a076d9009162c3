"""A child searcher for the crash loop: searches the first Memory again and again with
the search log on (a small cap, so the log is trimmed often too) and prints
``ack N`` after each search returned.

    python -m tests.reliability.crash_searcher TARGET

The parent SIGKILLs this process at a random moment: mid-search, mid-append or mid-trim
of the log included. The log's appends run in the background, so an acknowledged search
may or may not be logged; what must hold is that the database stays whole.
"""

from __future__ import annotations

import asyncio
import sys

import powercontext as pc
from powercontext.errors import RevisionConflictError

CAP = 20
QUESTIONS = ("crash loop entry", "which note was written", "entry 1 note 0", "nothing like this at all")


async def main(target: str) -> None:
    svc = await pc.open(target, search_log=True, search_log_cap=CAP)
    print("ready", flush=True)
    n = 0
    while True:
        memories = await svc.memories()
        if not memories:
            await asyncio.sleep(0.01)
            continue
        head = await svc.head(memories[0].artifact_id)
        try:
            await svc.search(QUESTIONS[n % len(QUESTIONS)], memories=(head,), limit=4)
        except RevisionConflictError:  # the writer moved the head meanwhile: search the new one
            continue
        print(f"ack {n}", flush=True)
        n += 1


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
