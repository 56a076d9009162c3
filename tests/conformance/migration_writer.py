"""A second process that writes while an embedding migration runs (issue 43).

    python -m tests.conformance.migration_writer TARGET MODE ARTIFACT_ID GO OUT [PERIOD]

Opens TARGET with MiniLM (the model the database is migrated away from; with
``PC_WRITER_EMBEDDING=none``, no model: a full-text database), warms the model, prints
``ready``, then:

* MODE ``append`` / ``create``: waits for the file GO (the parent creates it from
  inside the migration's write transaction), commits one entry to ARTIFACT_ID (or
  creates a new Memory), and writes the outcome to OUT: ``committed`` or the name of
  the library error that refused it.
* MODE ``loop``: commits one entry to ARTIFACT_ID every PERIOD seconds until GO
  exists or the database refuses it (a migration committed), and writes to OUT the
  counts of commits and of each refusal, one ``name count`` a line.
"""

from __future__ import annotations

import asyncio
import collections
import os
import sys
import time

import powercontext as pc

E = pc.MemoryEntryInput


def _write(path: str, text: str) -> None:
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)  # the parent never reads half a file


async def main(target: str, mode: str, artifact_id: str, go: str, out: str, period: float) -> None:
    embedding = os.environ.get("PC_WRITER_EMBEDDING", "minilm")  # "none": a full-text database
    svc = await pc.open(target, embedding=None if embedding == "none" else embedding)
    if svc.embedding is not None:
        await svc.embedding.embed(["warm up"])  # the first call loads the model: not inside the race
    print("ready", flush=True)
    if mode == "loop":
        outcomes: collections.Counter = collections.Counter()
        n = 0
        while not os.path.exists(go):
            started = time.monotonic()
            try:
                head = await svc.head(artifact_id)
                await svc.remember(head, entries=(E("fact", f"Written by the concurrent writer, number {n}."),))
                outcomes["committed"] += 1
            except pc.EmbeddingProfileMismatchError:
                outcomes["EmbeddingProfileMismatchError"] += 1
                break  # migrated: this handle must reopen with the new model
            except pc.PowerContextError as exc:
                outcomes[type(exc).__name__] += 1
            n += 1
            await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))
        _write(out, "".join(f"{k} {v}\n" for k, v in sorted(outcomes.items())))
        await svc.close()
        return
    while not os.path.exists(go):
        await asyncio.sleep(0.01)
    try:
        if mode == "append":
            head = await svc.head(artifact_id)
            await svc.remember(head, entries=(E("fact", "Written during the migration's write transaction."),))
        else:
            await svc.remember(None, entries=(E("fact", "A Memory created during the migration's write transaction."),))
        outcome = "committed"
    except pc.PowerContextError as exc:
        outcome = type(exc).__name__
    _write(out, outcome)
    await svc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6], float(sys.argv[6]) if len(sys.argv) > 6 else 2.5))
