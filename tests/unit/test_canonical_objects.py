"""canonical.objects_text: the template path for plain string objects must give the
encoder's own text, and anything else must go through the encoder."""

import pytest
from hypothesis import example, given, settings, strategies as st

from powercontext import canonical
from powercontext.model import MemoryManifestEntry

KEYS = ("entry_content_hash", "entry_id", "entry_version_id", "state")
# Mostly printable ASCII (the template path), with the characters that must not take
# it: quote, backslash, control characters, DEL, non-ASCII, and text NFC changes.
TEXT = st.lists(st.one_of(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
    st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "e\u0301", "\u2028", "\U0001F600"]),
), max_size=12).map("".join)


def encoder(objects):
    return canonical.canonical_text(list(objects))[1:-1]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.fixed_dictionaries({k: st.one_of(TEXT, st.none()) for k in KEYS}), max_size=6))
@example([{k: "a" for k in KEYS}])
@example([{k: 'a"' for k in KEYS}])
@example([{k: "a\\" for k in KEYS}])
@example([{k: "%(state)s" for k in KEYS}])
@example([dict(zip(KEYS, ["a", None, "b", None])), dict(zip(KEYS, [None, "a", None, "b"]))])
def test_objects_text_is_the_encoders_text(objects):
    assert canonical.objects_text(objects) == encoder(objects)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "c_d", "B", "é"]),
                                st.one_of(TEXT, st.none(), st.integers(-2**53 + 1, 2**53 - 1), st.booleans()), max_size=3),
                max_size=4))
def test_objects_of_other_shapes_and_values_take_the_encoder(objects):
    assert canonical.objects_text(objects) == encoder(objects)


def test_manifest_entries_take_the_template_and_match_the_encoder(monkeypatch):
    entries = [MemoryManifestEntry(f"mem_ent_{i:04d}", f"mem_ver_{i:04d}", f"{i:064x}", "active") for i in range(50)]
    objects = [e.to_canonical() for e in entries]
    expected = encoder(objects)

    def refuse(value):  # the template path never calls the encoder per object
        raise AssertionError("encoder called")
    monkeypatch.setattr(canonical, "canonical_text", refuse)
    canonical._object_format.cache_clear()
    with pytest.raises(AssertionError):
        canonical.objects_text(objects)  # the template itself is made by the encoder
    monkeypatch.undo()
    canonical.objects_text(objects[:1])  # template cached
    monkeypatch.setattr(canonical, "canonical_text", refuse)
    assert canonical.objects_text(objects) == expected


def test_a_non_canonical_value_is_not_templated():
    (plain,) = [{"a": "x"}]
    assert canonical.objects_text([plain, {"a": "e\u0301"}]) == '{"a":"x"},{"a":"\u00e9"}'  # NFC, via the encoder
    assert canonical.objects_text([{"a": 'q"'}]) == '{"a":"q\\""}'
    assert canonical.objects_text([]) == ""
    assert canonical.objects_text([{"a": None, "b": "x"}, {"b": None, "a": "y"}]) == '{"a":null,"b":"x"},{"a":"y","b":null}'



def test_a_change_list_is_the_encoders_text():
    from powercontext.backends import manifest_chunks as mc
    from powercontext.model import MemoryChange
    changes = [
        MemoryChange("add", "mem_ent_1", None, "mem_ver_1"),
        MemoryChange("update", "mem_ent_2", "mem_ver_2", "mem_ver_3", reason="fixed the port"),
        MemoryChange("deactivate", "mem_ent_3", "mem_ver_4", None, reason='said "never" — café\n'),
    ]
    for part in (changes[:2], changes):  # templated, then through the encoder (the reason)
        expected = '{"changes":' + canonical.canonical_text([c.to_canonical() for c in part])
        assert mc._head(part) == expected + ',"manifest":{"entries":['
