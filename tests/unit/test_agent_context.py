"""format_context (pure): the budget drops whole entries from the bottom."""

import unicodedata

import pytest

from powercontext.errors import InvalidMemoryRequestError
from powercontext.memory.context import FRAME_CLOSE, ContextEntry, format_context
from powercontext.model import ArtifactRef

REF = ArtifactRef("mem_art_1", 3)
ENTRIES = [ContextEntry(REF, f"mem_ent_{i}", f"mem_ver_{i}", 1, "0" * 64, "fact", f"Fact number {i}. " * 10)
           for i in range(1, 4)]


def test_whole_entries_are_dropped_from_the_bottom_to_fit():
    full = format_context(ENTRIES, 10_000)
    assert full.omitted == 0 and len(full.citations) == 3
    two = format_context(ENTRIES, len(full) - 1)
    assert len(two) <= len(full) - 1 and two.omitted == 1
    assert [c.entry_id for c in two.citations] == ["mem_ent_1", "mem_ent_2"]
    assert "Fact number 2." in two and "Fact number 3." not in two
    assert two.endswith("[1 more entry omitted to fit the budget]\n" + FRAME_CLOSE)
    none = format_context(ENTRIES, 600)
    assert none.citations == () and "[3 more entries omitted to fit the budget]" in none and len(none) <= 600
    with pytest.raises(InvalidMemoryRequestError, match="cannot hold even"):
        format_context(ENTRIES, 100)


def test_every_budget_gives_a_prefix_of_the_entries():
    sizes = []
    for budget in range(560, 1400, 7):
        view = format_context(ENTRIES, budget)
        assert len(view) <= budget
        sizes.append(len(view.citations))
    assert sizes == sorted(sizes) and sizes[0] == 0 and sizes[-1] == 3


@pytest.mark.parametrize("budget", [0, -5, 2.5, True, "100"])
def test_a_bad_budget_is_refused(budget):
    with pytest.raises(InvalidMemoryRequestError, match="budget_chars"):
        format_context(ENTRIES, budget)


def test_nothing_to_render_is_an_empty_string():
    assert format_context([], 10) == "" and format_context([], 10).citations == ()


INVISIBLE = {
    "Unicode tag characters (hidden ASCII)": "".join(chr(0xE0000 + ord(c)) for c in "rm -rf /") + "\U000E0001\U000E007F",
    "arabic letter mark (bidi)": "\u061c",
    "soft hyphen": "\u00ad",
    "mongolian vowel separator": "\u180e",
    "interlinear annotation": "\ufff9\ufffa\ufffb",
    "variation selectors": "\ufe0f\U000E0100",
    "bidi override and isolates": "\u202e\u2066\u2069",
    "zero width space and joiner": "\u200b\u200d\u2060",
    "controls": "\x00\x1b\x7f\x85\r",
    "line and paragraph separators": "\u2028\u2029",
    "fillers": "\u3164\u115f\uffa0",
}


@pytest.mark.parametrize("name", list(INVISIBLE))
def test_every_invisible_character_is_shown_as_a_reference(name):
    hidden = INVISIBLE[name]
    entry = ContextEntry(REF, "mem_ent_x", "mem_ver_x", 1, "0" * 64, "fact", f"Run the tests{hidden} before pushing.")
    view = format_context([entry], 10_000)
    leftover = [f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in view if c not in "\n\t" and
                (unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Mn") or 0xE0000 <= ord(c) <= 0xE0FFF
                 or 0xFE00 <= ord(c) <= 0xFE0F or c in "\u3164\u115f\uffa0")]
    assert not leftover, f"{name}: reaches the agent unescaped: {leftover}"
    for c in hidden:
        assert f"&#x{ord(c):x};" in view


def test_a_typed_escape_never_looks_like_an_escaped_character():
    real = ContextEntry(REF, "mem_ent_a", "mem_ver_a", 1, "0" * 64, "fact", "left\u202eright")
    typed = [ContextEntry(REF, "mem_ent_b", "mem_ver_b", 1, "0" * 64, "fact", f"left{spelling}right")
             for spelling in ("&#x202e;", "\\u202e", "&#X202E;", "&#8238;")]
    shown = [format_context([e], 10_000).split("\n")[-2] for e in [real, *typed]]
    assert shown[0] == "    left&#x202e;right"
    assert all(s != shown[0] for s in shown[1:]), shown
    assert shown[1] == "    left&amp;#x202e;right" and shown[2] == "    left\\u202eright"
