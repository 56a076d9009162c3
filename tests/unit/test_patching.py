"""The pure patch function: offsets, overlapping matches, normalization, the reason
code that records the edit."""

import pytest

from powercontext.errors import InvalidMemoryRequestError, PatchMatchError
from powercontext.memory.patching import TextPatch, apply_patch, occurrences, parse_patch_reason, patch_reason


def test_offset_length_and_delta_are_code_points_of_the_normalized_texts():
    patch = apply_patch("Der Server hört auf Port 5173.", "5173", "51730")
    assert patch == TextPatch("Der Server hört auf Port 51730.", 25, 4, 1)
    assert patch.reason_code() == "patch offset=25 length=4 delta=+1"


def test_overlapping_occurrences_count_and_make_a_patch_ambiguous():
    assert occurrences("aaa", "aa") == [0, 1]
    with pytest.raises(PatchMatchError) as caught:
        apply_patch("aaa", "aa", "b")
    assert caught.value.count == 2 and "occurs 2 times" in str(caught.value)


def test_fragments_are_nfc_normalized_like_stored_text():
    # "é" typed as e + combining acute still matches the stored (NFC) text
    assert apply_patch("café au lait", "cafe\u0301", "thé").text == "thé au lait"


def test_surrounding_whitespace_is_stripped_and_counted_in_the_delta():
    patch = apply_patch("Use pnpm.", "Use", "   Prefer")
    assert (patch.text, patch.offset, patch.length, patch.delta) == ("Prefer pnpm.", 0, 3, 3)


@pytest.mark.parametrize("reason, expected", [
    (None, "patch offset=3 length=2 delta=-1"),
    ("  moved  ", "patch offset=3 length=2 delta=-1: moved"),
    ("", "patch offset=3 length=2 delta=-1"),
])
def test_reason_code_then_the_callers_reason(reason, expected):
    assert patch_reason(TextPatch("abcd", 3, 2, -1), reason) == expected


def test_parse_patch_reason_round_trips_and_ignores_other_reasons():
    note = parse_patch_reason("patch offset=7 length=0 delta=+12: adds: colons survive")
    assert (note.offset, note.length, note.delta, note.reason) == (7, 0, 12, "adds: colons survive")
    assert note.describe() == "at 7: 0 → 12 chars · adds: colons survive"
    assert parse_patch_reason("patch offset=7 length=3 delta=-3").describe() == "at 7: 3 → 0 chars"
    for other in (None, "", "normalize", "user_requested", "patch offset=x length=1 delta=+1"):
        assert parse_patch_reason(other) is None


def test_a_reason_too_long_for_the_record_is_refused():
    with pytest.raises(InvalidMemoryRequestError, match="at most 478"):
        patch_reason(TextPatch("x", 0, 1, 0), "r" * 479)
    assert len(patch_reason(TextPatch("x", 0, 1, 0), "r" * 478)) == 512


@pytest.mark.parametrize("old, new", [("port", "\ud800"), ("\udfff", "x"), ("port", "a\udc80b")])
def test_a_fragment_with_a_lone_surrogate_is_refused_with_a_typed_error(old, new):
    with pytest.raises(InvalidMemoryRequestError, match="lone surrogate"):
        apply_patch("The API listens on port 8080.", old, new)


@pytest.mark.parametrize("text, old, new, shown", [
    ("ae", "e", "\u0301", "at 0: 2 → 1 chars"),             # the accent recombines with the "a" before it
    ("Ce\u0301 x", " x", "\u0301", "at 2: 2 → 1 chars"),    # no recombination: the plain match
    ("a b", "a", " ", "at 0: 2 → 0 chars"),                 # the replacement is stripped away with the space
])
def test_when_normalization_reaches_past_the_match_the_audit_spans_what_changed(text, old, new, shown):
    from powercontext import canonical

    text = canonical.nfc(text)
    patch = apply_patch(text, old, new)
    note = parse_patch_reason(patch.reason_code())
    assert note.describe() == shown
    # the record is exact: the original with its span replaced by the new span is the patched text
    assert text[:patch.offset] + patch.text[patch.offset:patch.offset + patch.length + patch.delta] \
        + text[patch.offset + patch.length:] == patch.text
