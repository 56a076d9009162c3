"""MemoryManifest.with_items and the views a manifest keeps (issue 15): the service
derives the next manifest from the base at the changed positions instead of re-sorting
every entry, and answers lookups and dedupe from views kept per manifest object. Both
are compared here with the full computation they replace."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings, strategies as st

from powercontext import canonical
from powercontext.model import MemoryManifest, MemoryManifestEntry

HASHES = [f"{i:064x}" for i in range(6)]


def item(entry_id: str, version: str, h: int, state: str) -> MemoryManifestEntry:
    return MemoryManifestEntry(entry_id, version, HASHES[h % len(HASHES)], state)


@st.composite
def commits(draw):
    """A sorted base manifest and the items one commit changes: revisions and state
    flips of existing entries, and new entries anywhere (before, between, after)."""
    n = draw(st.integers(0, 60))
    base_ids = sorted(draw(st.sets(st.integers(0, 999), min_size=n, max_size=n)))
    base = MemoryManifest(tuple(
        item(f"mem_ent_{i:04d}", f"mem_ver_{i}", draw(st.integers(0, 9)), draw(st.sampled_from(["active", "inactive"])))
        for i in base_ids))
    changed = {}
    for i in draw(st.lists(st.sampled_from(base_ids), max_size=6)) if base_ids else []:
        changed[f"mem_ent_{i:04d}"] = item(f"mem_ent_{i:04d}", f"mem_ver_{i}_r", draw(st.integers(0, 9)),
                                           draw(st.sampled_from(["active", "inactive"])))
    for i in draw(st.lists(st.integers(0, 1000), max_size=6)):
        entry_id = f"mem_ent_{i:04d}x"  # sorts right after mem_ent_{i:04d}, never equal to a base id
        changed[entry_id] = item(entry_id, f"mem_ver_{i}_n", draw(st.integers(0, 9)), "active")
    return base, changed


def rebuilt(base: MemoryManifest, changed) -> tuple[MemoryManifestEntry, ...]:
    merged = {e.entry_id: e for e in base.entries}
    merged.update(changed)
    return tuple(merged[k] for k in sorted(merged, key=canonical.utf8_key))


@settings(max_examples=300, deadline=None)
@given(commits())
def test_with_items_is_the_sorted_rebuild_and_keeps_its_views_exact(commit):
    base, changed = commit
    new = base.with_items(changed.values())
    assert new.entries == rebuilt(base, changed)
    fresh = MemoryManifest(new.entries)  # views computed from scratch
    assert new._derived() == fresh._derived()
    assert new._derived().active_hashes.as_dict() == Counter(e.entry_content_hash for e in new.entries if e.state == "active")
    for e in base.entries + tuple(changed.values()):
        assert new.get(e.entry_id) == fresh.get(e.entry_id) == {x.entry_id: x for x in new.entries}[e.entry_id]
    assert new.get("mem_ent_9999") is None and new.get("") is None



def test_an_unsorted_manifest_is_looked_up_and_extended_in_full():
    unsorted = MemoryManifest((item("b", "v1", 1, "active"), item("a", "v2", 2, "inactive")))
    assert unsorted.get("a") == item("a", "v2", 2, "inactive") and unsorted.get("c") is None
    assert unsorted.has_active_hash(canonical.sha256_hex(b"", b"")) is False
    assert unsorted.with_items([item("c", "v3", 3, "active")]).entries == (
        item("a", "v2", 2, "inactive"), item("b", "v1", 1, "active"), item("c", "v3", 3, "active"))
    assert MemoryManifest().get(42) is None  # not a string: no entry has it


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 9), st.sampled_from(["active", "inactive"])),
                min_size=1, max_size=100))
def test_counts_stay_exact_along_a_chain_of_commits_longer_than_the_flattening_limit(steps):
    # each commit changes one entry; the counts chain grows by one link a commit and is
    # flattened every CHAIN_LIMIT links (commits beyond it take that path)
    manifest = MemoryManifest()
    for n, (i, h, state) in enumerate(steps):
        manifest = manifest.with_items([item(f"mem_ent_{i:04d}", f"mem_ver_{i}_{n}", h, state)])
        want = Counter(e.entry_content_hash for e in manifest.entries if e.state == "active")
        assert manifest._derived().active_hashes.as_dict() == want
        for x in HASHES:
            assert manifest.has_active_hash(x) == (want[x] > 0)
    assert manifest._derived().active_hashes._depth < manifest._derived().active_hashes.CHAIN_LIMIT
