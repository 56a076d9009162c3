"""SIGKILL a capturing, flushing process again and again (issue 35): after every kill,
every acknowledged capture is in the journal exactly once (none lost, no duplicate), a
capture that was cut off can be retried, and the Memory holds each captured finding
once. CAPTURE_KILLS sets the kills per database (``make soak-runtime`` raises it)."""

from __future__ import annotations

import os
import random
import signal
import time

from powercontext.memory.candidates import DefaultCandidatePipeline

from .child import capture
from .processes import TIMEOUT, read, spawn

KILLS = int(os.environ.get("CAPTURE_KILLS", "3"))


async def test_acknowledged_captures_survive_sigkills(target, scope, open_runtime):
    rng = random.Random(35)
    acked: dict[str, int] = {}
    start = 0
    for kill in range(KILLS):
        proc = spawn("capture-loop", target, scope, start)
        read(proc, "READY")
        time.sleep(rng.uniform(0.2, 1.5))
        proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == -signal.SIGKILL
        for line in out.splitlines():
            if line.startswith("ack ") and len(line.split()) == 3:  # a line cut by the kill is not an ack
                _, source_id, sequence = line.split()
                acked[source_id] = int(sequence)
        start += 1000

    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    journal = await sources.journal(after=0, limit=100_000)
    ids = [c.source_id for c in journal]
    lost = sorted(set(acked) - set(ids))
    duplicates = len(ids) - len(set(ids))
    moved = {s: q for s, q in acked.items() if s in ids and journal[ids.index(s)].sequence != q}
    assert not lost and duplicates == 0 and not moved, (lost[:5], duplicates, moved)
    assert [c.sequence for c in journal] == list(range(1, len(journal) + 1)), "the journal has no gap"
    for c in journal:  # a capture cut off by a kill is acknowledged when retried with its payload
        n = int(c.source_id.split("-")[1])
        again = await sources.capture(capture(n))
        assert (again.sequence, again.created) == (c.sequence, False)
    while (result := await memory.flush(limit=50)).status in ("committed", "no_change"):
        pass
    assert result.status == "idle", result
    texts = [e.text for e in await memory.entries()]
    assert len(texts) == len(set(texts)) == len(journal), (len(texts), len(set(texts)), len(journal))
    assert (await runtime.memory_service.verify(await memory.head())).ok
    print(f"\ncapture crash loop: {KILLS} SIGKILLs, {len(acked)} acknowledged captures, {len(journal)} journaled, "
          f"lost {len(lost)}, duplicates {duplicates}")
