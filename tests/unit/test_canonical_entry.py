"""An entry's canonical bytes without references take a fixed frame (issue 48: a 50k-entry
load hashed each entry twice through the general encoder): the same bytes, and so the
same hash, as the general RFC 8785 path for any kind and text."""


import pytest
from hypothesis import example, given, strategies as st

from powercontext import canonical
from powercontext.model import ArtifactRef, SourceRef, entry_content

from .calls import python_calls


@given(st.text(max_size=12), st.text(max_size=200))
@example("fact", 'quote " backslash \\ newline \n tab \t nul \x00 del \x7f')
@example("fact", "e\u0301 Å ﬁ 中文 \u2028 \u2029 \U0001f600")  # not NFC, line separators, astral
def test_the_frame_writes_what_the_general_path_writes(kind, text):
    content = entry_content(kind, text, (), ())
    assert canonical._entry_content_bytes(content) == canonical.canonical_bytes(content)
    assert canonical.entry_content_hash(content) == canonical.sha256_hex(
        canonical.ENTRY_CONTENT_DOMAIN, canonical.canonical_bytes(content))


def test_references_and_other_shapes_take_the_general_path():
    refs = entry_content("fact", "x", (SourceRef("src_a", "0" * 64),), (ArtifactRef("mem_art_a", 1),))
    assert canonical._entry_content_bytes(refs) == canonical.canonical_bytes(refs)
    other = {"artifacts": [], "kind": "fact", "sources": [], "text": "x", "extra": 1.5}
    assert canonical._entry_content_bytes(other) == canonical.canonical_bytes(other)


def test_a_lone_surrogate_is_refused_as_before():
    content = entry_content("fact", "bad \ud800", (), ())
    with pytest.raises(Exception) as general:
        canonical.canonical_bytes(content)
    with pytest.raises(type(general.value)):
        canonical.entry_content_hash(content)


def test_an_entry_without_references_is_hashed_without_walking_it():
    content = entry_content("fact", "a plain entry text", (), ())
    assert python_calls(canonical.entry_content_hash, content) <= 5  # the hash, the frame, nfc twice, sha256_hex; the general path walked and encoded (~15)
