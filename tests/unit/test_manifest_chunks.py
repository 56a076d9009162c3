"""Chunked manifest storage (issue 15), pure: the chunks reassemble the exact canonical
bytes the RFC hashes, a one-entry change stores one group's worth of new chunks, and an
altered chunk is refused. Small chunk sizes are forced so a few hundred entries span
many chunks and index chunks."""

from __future__ import annotations

import random

import pytest

from powercontext.backends import manifest_chunks as mc
from powercontext.errors import InvalidCitationError
from powercontext.model import MemoryChange, MemoryContent, MemoryManifest, MemoryManifestEntry

SMALL = dict(leaf_target=4, leaf_cap=9, index_target=3, index_cap=5)


def content(n: int, seed: int = 1, reason: str = "moved to ~/.cache — \"quoted\", \u00e9") -> MemoryContent:
    rng = random.Random(seed)
    entries = tuple(
        MemoryManifestEntry(f"mem_ent_{i:06d}", f"mem_ver_{rng.getrandbits(40):010x}",
                            f"{rng.getrandbits(256):064x}", rng.choice(("active", "inactive")))
        for i in range(n)
    )
    changes = (MemoryChange("revise", "mem_ent_000001", "mem_ver_a", "mem_ver_b", reason),
               MemoryChange("add", "mem_ent_000002", None, "mem_ver_c"))
    return MemoryContent(MemoryManifest(entries), changes)


def served(encoded):
    return lambda keys: {k: encoded.chunks[k] for k in keys if k in encoded.chunks}


@pytest.mark.parametrize("n", [0, 1, 7, 300])
@pytest.mark.parametrize("sizes", [SMALL, {}])
def test_chunks_reassemble_the_exact_canonical_bytes(n, sizes):
    c = content(n)
    encoded = mc.encode(c, **sizes)
    assert (encoded.text, encoded.content_hash) == c.canonical()
    text, layout = mc.decode(encoded.root, served(encoded), "Revision x@1")
    assert text == encoded.text
    assert [e for g in layout.groups for e in g.entries] == list(c.manifest.entries)
    assert mc.read_changes(encoded.root, served(encoded), "Revision x@1") == c.changes
    if n == 300 and sizes:
        assert len(layout.groups) > 30 and len(encoded.root.split(" ")) > 4  # many leaves, several index chunks


def test_a_one_entry_change_reuses_every_other_group():
    base = mc.encode(content(300), **SMALL)
    entries = list(content(300).manifest.entries)
    entries[150] = MemoryManifestEntry(entries[150].entry_id, "mem_ver_new", "0" * 64, "active")
    entries.insert(40, MemoryManifestEntry("mem_ent_000039x", "mem_ver_ins", "1" * 64, "active"))
    changed = MemoryContent(MemoryManifest(tuple(entries)), ())
    encoded = mc.encode(changed, base.layout, **SMALL)
    assert (encoded.text, encoded.content_hash) == changed.canonical()
    new_groups = [g for g in encoded.layout.groups if g.key not in base.chunks]
    assert 1 <= len(new_groups) <= 3  # the revised group, the insert's group (maybe split)
    new_bytes = sum(len(t) for k, t in encoded.chunks.items() if k not in base.chunks)
    assert new_bytes < len(encoded.text) / 5


@pytest.mark.parametrize("victim", ["group", "index", "head"])
def test_an_altered_or_missing_chunk_is_refused(victim):
    encoded = mc.encode(content(60), **SMALL)
    head_key, tail_key, first_index, *_ = encoded.root[len(mc.ROOT_PREFIX):].split(" ")
    key = {"head": head_key, "index": first_index,
           "group": encoded.layout.groups[3].key}[victim]
    forged = dict(encoded.chunks)
    forged[key] = forged[key].replace('"active"', '"inactive"').replace("0", "1")
    with pytest.raises(InvalidCitationError, match="does not hash to its key"):
        mc.decode(encoded.root, lambda keys: {k: forged[k] for k in keys}, "Revision x@1")
    del forged[key]
    with pytest.raises(InvalidCitationError, match="missing"):
        mc.decode(encoded.root, lambda keys: {k: forged[k] for k in keys if k in forged}, "Revision x@1")


def test_a_malformed_root_is_refused():
    with pytest.raises(InvalidCitationError, match="malformed"):
        mc.decode(mc.ROOT_PREFIX + "abc", lambda keys: {}, "Revision x@1")


def test_a_long_change_list_is_stored_in_pieces():
    """A head (change list) longer than ``head_piece`` characters is cut into pieces, so
    a 100k-entry commit's 16 MB change list is never one value over a server's packet
    limit; the pieces reassemble the exact bytes and each is checked against its key."""
    changes = tuple(MemoryChange("add", f"mem_ent_{i:06d}", None, f"mem_ver_{i:06d}") for i in range(40))
    c = MemoryContent(content(30).manifest, changes)
    encoded = mc.encode(c, **SMALL, head_piece=500)
    head_token = encoded.root[len(mc.ROOT_PREFIX):].split(" ")[0]
    pieces = head_token.split("+")
    assert len(pieces) == -(-len(encoded.head) // 500) > 1
    assert all(len(encoded.chunks[k]) <= 500 for k in pieces)
    assert "".join(encoded.chunks[k] for k in pieces) == encoded.head
    assert (encoded.text, encoded.content_hash) == c.canonical()
    text, _ = mc.decode(encoded.root, served(encoded), "Revision x@1")
    assert text == encoded.text
    assert mc.read_changes(encoded.root, served(encoded), "Revision x@1") == changes
    assert mc.head_keys(encoded.root) == pieces
    # a short head keeps the single-key root (rows stored before pieces read the same)
    short = mc.encode(content(30), **SMALL, head_piece=500)
    assert "+" not in short.root and len(mc.head_keys(short.root)) == 1
    # every piece is checked: altered, missing, or the root's list tampered with
    forged = dict(encoded.chunks)
    forged[pieces[1]] = forged[pieces[1]].replace('"add"', '"revise"')
    with pytest.raises(InvalidCitationError, match="does not hash to its key"):
        mc.read_changes(encoded.root, lambda keys: {k: forged[k] for k in keys}, "Revision x@1")
    del forged[pieces[1]]
    with pytest.raises(InvalidCitationError, match="missing"):
        mc.decode(encoded.root, lambda keys: {k: forged[k] for k in keys if k in forged}, "Revision x@1")
    swapped = encoded.root.replace(head_token, "+".join([pieces[1], pieces[0], *pieces[2:]]))
    with pytest.raises(InvalidCitationError):
        mc.read_changes(swapped, served(encoded), "Revision x@1")
    for bad in (head_token + "+", "+" + head_token, head_token.replace("+", "++", 1)):
        with pytest.raises(InvalidCitationError, match="malformed"):
            mc.decode(encoded.root.replace(head_token, bad), served(encoded), "Revision x@1")
    # a one-entry commit on that base stores only its own (short) head, not the old pieces
    again = mc.encode(MemoryContent(c.manifest, changes[:1]), encoded.layout, **SMALL, head_piece=500)
    assert set(again.new_chunks(encoded.layout)).isdisjoint(pieces)
