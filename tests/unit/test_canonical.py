import hashlib
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from powercontext import canonical
from powercontext.model import ArtifactRef, SourceRef, entry_content


def test_jcs_orders_keys_and_normalizes_nfc():
    assert canonical.canonical_bytes({"b": 1, "a": "e\u0301"}) == '{"a":"\u00e9","b":1}'.encode()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_are_refused(bad):
    with pytest.raises(ValueError):
        canonical.canonical_bytes({"x": bad})


def test_entry_hash_has_domain_prefix():
    content = entry_content("fact", "t", (), ())
    expected = hashlib.sha256(b"powercontext:entry-content:v1\0" + canonical.canonical_bytes(content)).hexdigest()
    assert canonical.entry_content_hash(content) == expected
    assert canonical.is_sha256_hex(expected)


def test_entry_content_sorts_and_dedupes_references():
    a, b = SourceRef("src_b", "1" * 64), SourceRef("src_a", "2" * 64)
    one = entry_content("fact", "t", (a, b, a), (ArtifactRef("x", 2), ArtifactRef("x", 1)))
    two = entry_content("fact", "t", (b, a), (ArtifactRef("x", 1), ArtifactRef("x", 2)))
    assert one == two
    assert [s["name"] for s in one["sources"]] == ["src_a", "src_b"]


def test_hash_covers_kind_text_and_references_only():
    base = canonical.entry_content_hash(entry_content("fact", "t", (), ()))
    assert base != canonical.entry_content_hash(entry_content("decision", "t", (), ()))
    assert base != canonical.entry_content_hash(entry_content("fact", "u", (), ()))
    assert base != canonical.entry_content_hash(entry_content("fact", "t", (SourceRef("s", "0" * 64),), ()))


def test_minted_ids_are_ascii_bounded_and_unique():
    ids = canonical.IdMinter()
    minted = {ids.entry_id() for _ in range(1000)}
    assert len(minted) == 1000
    assert all(canonical.is_valid_id(i) and i.startswith("mem_ent_") for i in minted)
    assert canonical.is_valid_id(ids.artifact_id()) and ids.entry_version_id().startswith("mem_ver_")
    assert not canonical.is_valid_id("has space") and not canonical.is_valid_id("x" * 129) and not canonical.is_valid_id("é")


_column_values = st.lists(
    st.one_of(
        st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x80), max_size=130),
        st.text(alphabet="0123456789abcdefA\n", min_size=62, max_size=66),
        st.integers(),
    ),
    max_size=6,
)


@given(_column_values)
def test_column_checks_agree_with_the_per_value_checks(values):
    # A commit checks a manifest's ids and hashes as whole columns; the verdict must be
    # exactly that of checking each value (a newline inside a value must not pass as a
    # separator, a non-string must not pass at all).
    assert canonical.all_valid_ids(values) == all(canonical.is_valid_id(v) for v in values)
    assert canonical.all_sha256_hex(values) == all(canonical.is_sha256_hex(v) for v in values)


def test_column_checks_on_edge_values():
    good = "a" * canonical.MAX_ID_LENGTH
    assert canonical.all_valid_ids([good, "mem_ent_1"])
    assert not canonical.all_valid_ids([good + "a"])
    assert not canonical.all_valid_ids(["a\nb"])  # one value holding the separator
    assert not canonical.all_valid_ids(["a", ""])
    assert not canonical.all_sha256_hex(["0" * 63 + "\n", "0" * 64])
    assert canonical.all_sha256_hex([]) and canonical.all_valid_ids([])


def test_the_embedding_hasher_of_a_profile_is_embedding_content_hash():
    """The per-profile hasher (encodes the profile once, splices each entry hash in)
    gives exactly embedding_content_hash, for any profile and any input."""
    profiles = [{"profile_id": "minilm", "model": "all-MiniLM-L6-v2", "dimension": 384},
                {"profile_id": "0" * 64, "model": "e\u0301 \"q\" \\", "dimension": 3, "scripts": ["latin"]}]
    rng = random.Random(7)
    for profile in profiles:
        hasher = canonical.embedding_content_hasher(profile)
        for value in ["%064x" % rng.getrandbits(256) for _ in range(200)] + ["0" * 64, "f" * 64]:
            assert hasher(value) == canonical.embedding_content_hash(profile, value)
        for odd in ["ABCDEF" * 10 + "ABCD", "0" * 63, "g" * 64, "é", ""]:
            assert hasher(odd) == canonical.embedding_content_hash(profile, odd)


# Strings with what an encoder may escape or keep: quote, backslash, every control
# character, DEL, the JS line separators, non-ASCII, astral and NFC-changing text.
_TEXT = st.lists(st.one_of(
    st.characters(min_codepoint=0x00, max_codepoint=0x7F),
    st.sampled_from(["é", "e\u0301", "\u2028", "\u2029", "\ufeff", "中", "\U0001F600", "\U00010000"]),
), max_size=16).map("".join)
_JSON_VALUES = st.recursive(
    st.one_of(_TEXT, st.none(), st.booleans(), st.integers(-2**60, 2**60), st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(st.sampled_from(["a", "B", "c_d", "z9", "é", "\U0001F600", "\uff21"]),
                                                      _TEXT), inner, max_size=4)),
    max_leaves=12)


@given(_JSON_VALUES)
def test_the_standard_encoder_path_writes_what_rfc8785_writes(value):
    import rfc8785
    try:
        expected = rfc8785.dumps(canonical._normalize(value))
    except ValueError:  # two keys equal after NFC: refused either way
        with pytest.raises(ValueError):
            canonical.canonical_bytes(value)
        return
    assert canonical.canonical_bytes(value) == expected


def test_entry_contents_take_the_standard_encoder(monkeypatch):
    import rfc8785
    content = entry_content("fact", 'say "hi"\\ \n\t\x00 é 中 \U0001F600', (SourceRef("src_a", "0" * 64),),
                            (ArtifactRef("mem_art_x", 3),))
    expected = rfc8785.dumps(canonical._normalize(content))

    def refuse(value):
        raise AssertionError("rfc8785 called")
    monkeypatch.setattr(canonical.rfc8785, "dumps", refuse)
    assert canonical.canonical_bytes(content) == expected
    with pytest.raises(AssertionError):  # a float is written by rfc8785
        canonical.canonical_bytes({"x": 0.5})


def _ulid_digits(value: int) -> str:
    """The id's 26 Crockford digits written out one by one (the spec of mint_id)."""
    return "".join("0123456789ABCDEFGHJKMNPQRSTVWXYZ"[(value >> (5 * i)) & 31] for i in reversed(range(26)))


@pytest.mark.parametrize("millis, tail", [(0, bytes(10)), (2**48 - 1, b"\xff" * 10),
                                          (1_765_000_000_123, bytes(range(10))), (1, b"\x80" + bytes(9))])
def test_mint_id_writes_the_clock_and_random_bits_as_26_crockford_digits(monkeypatch, millis, tail):
    monkeypatch.setattr(canonical.time, "time", lambda: millis / 1000 + 1e-7)
    monkeypatch.setattr(canonical.os, "urandom", lambda n: tail[:n])
    expected = _ulid_digits((millis << 80) | int.from_bytes(tail, "big"))
    assert canonical.mint_id("mem_ent_") == "mem_ent_" + expected
    assert expected[:10] == _ulid_digits(millis << 80)[:10]  # the clock leads: ids sort by time
