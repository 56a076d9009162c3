"""A cold ``entries(head)`` after a reopen (issue 15) does each piece of work once.

* It verifies the head once. It reads the older Revisions that created the head's
  versions; at 20k entries each is ~19 MB in the 64 MB revision cache, and by plain LRU
  they evicted the head — which created versions too, so the same call read it again
  and verified it a second time. The head is pinned for the pass (base.py, caches.py):
  the older ones evict each other, and the budget still holds.
* It decodes each version row once: the chains re-read the rows ``_hashed_versions``
  decoded, and at 20k versions the version cache cannot bridge the two reads."""

from __future__ import annotations

import powercontext as pc

from .test_proven_chunks import N, _history, _target


def _count_verifications(backend) -> list[int]:
    verified: list[int] = []
    real = backend._verify_revision

    def verify(tx, ref, row):
        verified.append(ref.revision)
        return real(tx, ref, row)

    backend._verify_revision = verify
    return verified


async def test_a_cold_entries_verifies_the_head_once_when_older_revisions_fill_the_cache(svc):
    r1, head = await _history(svc)  # 1 adds N entries, 2 revises one, 3 and 4 add one each
    async with await pc.open(_target(svc)) as probe:
        await probe.revision(head.ref)
        size = probe.backend.revision_cache.get(head.ref).nbytes
    async with await pc.open(_target(svc)) as fresh:
        cache = fresh.backend.revision_cache
        cache.max_bytes = int(2.5 * size)  # the head and one older Revision (all ~N entries)
        verified = _count_verifications(fresh.backend)
        entries = await fresh.entries(head)
        assert len(entries) == N + 2 and entries[-1].created_in_revision == head.revision
        # the head first, then its versions' creators: each read once and verified once
        # (was [4, 1, 2, 3, 4]: Revisions 1 and 2 pushed the head out before 4 was read
        # again for the version it created)
        assert sorted(verified) == [1, 2, 3, 4] and verified[0] == head.revision, verified
        assert cache.get(head.ref) is not None and cache.nbytes <= cache.max_bytes
        assert cache.get(r1.ref) is None  # the older Revisions did not all fit: they evicted each other
        # out of the pass the head is an ordinary item again: the budget still rules
        for number in (1, 2, 3):
            await fresh.revision(pc.ArtifactRef(head.artifact_id, number))
        assert cache.get(head.ref) is None and cache.nbytes <= cache.max_bytes


async def test_a_cold_entries_decodes_each_version_row_once(svc):
    r1, head = await _history(svc)
    async with await pc.open(_target(svc)) as fresh:
        decoded: list[str] = []
        real = fresh.backend._version_from_row
        fresh.backend._version_from_row = lambda row: decoded.append(row[2]) or real(row)
        assert len(await fresh.entries(head)) == N + 2
    # the head's N + 2 versions, and version 1 of the revised entry (read in its chain);
    # was 2N + 5: every chain row decoded again
    assert len(decoded) == len(set(decoded)) == N + 3, len(decoded)
