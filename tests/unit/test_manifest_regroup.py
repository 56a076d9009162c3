"""The incremental commit path computes what the full path computes (issue 15).

A commit proves the shape of its change against the base manifest
(``manifest_diff.diff``) and cuts and encodes only the chunks around the change
(``manifest_chunks._regroup``). Each is compared here, under hypothesis, with what it
replaces: the items the commit changed, and ``encode`` without a base. The
content hash must be the RFC's (SHA-256 over the complete canonical text) byte for byte.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings, strategies as st

from powercontext import canonical
from powercontext.backends import manifest_chunks as mc
from powercontext.backends.manifest_diff import diff
from powercontext.model import MemoryChange, MemoryContent, MemoryManifest, MemoryManifestEntry

from .test_manifest_views import commits, item


@settings(max_examples=300, deadline=None)
@given(commits())
def test_diff_places_exactly_the_changed_items(commit):
    base, changed = commit
    new = base.with_items(changed.values())
    d = diff(base.entries, new.entries, sorted(changed))
    assert d is not None
    old = {e.entry_id: e for e in base.entries}
    assert [(new.entries[p.position], p.old) for p in d.placed] == [(changed[k], old.get(k)) for k in sorted(changed)]
    for e in new.entries:
        assert d.item(e.entry_id) is e


@settings(max_examples=300, deadline=None)
@given(commits())
def test_the_splice_with_items_records_is_the_diff_the_comparison_proves(commit):
    base, changed = commit
    new = base.with_items(changed.values())
    compared = diff(base.entries, new.entries, sorted(changed))
    recorded = diff(base.entries, new.entries, sorted(changed), new)
    assert recorded == compared
    assert new._splice.base is base.entries
    assert new._splice.placed == tuple((p.position, p.old, p.new) for p in compared.placed)
    # the record is taken only for the very base and the very ids it was made from
    equal_copy = tuple(list(base.entries))
    if base.entries and changed:
        assert equal_copy is not base.entries
        assert diff(equal_copy, new.entries, sorted(changed), new) == compared  # compared again, same answer
    if len(changed) > 1:
        assert diff(base.entries, new.entries, sorted(changed)[1:], new) is None  # an undeclared change


@settings(max_examples=300, deadline=None)
@given(commits(), st.data())
def test_diff_refuses_a_manifest_that_is_not_the_base_plus_the_change(commit, data):
    base, changed = commit
    entries = list(base.with_items(changed.values()).entries)
    if not entries:
        return
    i = data.draw(st.integers(0, len(entries) - 1))
    how = data.draw(st.sampled_from(["drop", "alter", "swap", "undeclared"]))
    declared = sorted(changed)
    if how == "drop":
        entries.pop(i)
    elif how == "alter":
        e = entries[i]
        entries[i] = MemoryManifestEntry(e.entry_id, e.entry_version_id + "!", e.entry_content_hash, e.state)
    elif how == "swap" and len(entries) > 1:
        j = (i + 1) % len(entries)
        entries[i], entries[j] = entries[j], entries[i]
    elif how == "undeclared" and declared:
        declared.remove(data.draw(st.sampled_from(declared)))
    else:
        return
    d = diff(base.entries, tuple(entries), declared)
    if d is not None:  # only if the tampering happened to leave the shape intact
        assert how == "alter" and entries[i].entry_id in changed


SIZES = st.fixed_dictionaries({"leaf_target": st.integers(1, 5), "leaf_cap": st.integers(1, 7),
                               "index_target": st.integers(1, 4), "index_cap": st.integers(1, 5)})


@settings(max_examples=400, deadline=None)
@given(commits(), SIZES)
def test_regrouped_encoding_is_byte_identical_to_the_full_encoding(commit, sizes):
    base, changed = commit
    changes = tuple(MemoryChange("add", k, None, v.entry_version_id) for k, v in sorted(changed.items()))
    base_encoded = mc.encode(MemoryContent(base, ()), **sizes)
    new = MemoryContent(base.with_items(changed.values()), changes)
    d = diff(base.entries, new.manifest.entries, sorted(changed))
    fast = mc.encode(new, base_encoded.layout, diff=d, **sizes)
    full = mc.encode(new, **sizes)
    assert [g.entries for g in fast.layout.groups] == [g.entries for g in full.layout.groups]
    assert fast.layout.starts == list(itertools.accumulate((len(g.entries) for g in fast.layout.groups), initial=0))
    assert (fast.root, fast.content_hash, dict(fast.chunks)) == (full.root, full.content_hash, dict(full.chunks))
    # what a commit on the base stores: every chunk the base does not hold, and no other text
    added = fast.new_chunks(base_encoded.layout)
    assert set(full.chunks) - set(base_encoded.chunks) <= set(added) <= set(full.chunks)
    assert all(added[k] == full.chunks[k] for k in added)
    # the RFC's hash: SHA-256 over the complete canonical bytes, computed the plain way
    assert fast.content_hash == canonical.artifact_content_hash(new.to_canonical()) == new.canonical()[1]
    assert fast.text == full.text == new.canonical_text()
    # and a chain of commits keeps regrouping from regrouped layouts
    again = MemoryContent(new.manifest.with_items([item("mem_ent_0500y", "v", 1, "active")]), changes)
    d2 = diff(new.manifest.entries, again.manifest.entries, ["mem_ent_0500y"])
    assert mc.encode(again, fast.layout, diff=d2, **sizes).root == mc.encode(again, **sizes).root


def test_a_layout_cut_with_other_sizes_is_not_regrouped():
    base = MemoryManifest(tuple(item(f"mem_ent_{i:04d}", "v", i, "active") for i in range(200)))
    small = dict(leaf_target=3, leaf_cap=5)
    layout = mc.encode(MemoryContent(base, ()), **small).layout
    new = MemoryContent(base.with_items([item("mem_ent_0100x", "v", 1, "active")]), ())
    d = diff(base.entries, new.manifest.entries, ["mem_ent_0100x"])
    assert mc.encode(new, layout, diff=d).root == mc.encode(new).root


def index_by_loop(keys, target, cap):
    """The index cut as first written: one key at a time."""
    out, current = [], []
    for k in keys:
        current.append(k)
        if len(current) >= cap or int(k[:8], 16) % target == 0:
            out.append(current)
            current = []
    if current:
        out.append(current)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 2**256 - 1).map(lambda v: f"{v:064x}"), max_size=80),
       st.integers(1, 6), st.integers(1, 9))
def test_index_runs_equal_the_key_by_key_cut(keys, target, cap):
    groups = [mc.Group((), "", k) for k in keys]
    runs, fresh = mc._runs(groups, None, None, target, cap)
    assert [[g.key for g in run.groups] for run in runs] == index_by_loop(keys, target, cap)
    assert fresh == runs  # with no base, every run is cut here
