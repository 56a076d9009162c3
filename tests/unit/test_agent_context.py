"""format_context (pure): the budget drops whole entries from the bottom."""

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
