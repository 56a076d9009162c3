"""`make test` hands out the longest test files first (tests/conftest.py LONGEST_FIRST):
the list must name files that exist (a renamed file would silently drop back to the
end), and the Makefile must keep xdist from re-sorting files by their test count."""

from __future__ import annotations

from pathlib import Path

from .conftest import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_named_longest_first_exists_once():
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"LONGEST_FIRST names files that are gone: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)


def test_make_test_keeps_the_collection_order():
    recipe = (ROOT / "Makefile").read_text().split("\ntest:")[1].split("\n\n")[0]
    assert "--dist loadfile" in recipe and "--no-loadscope-reorder" in recipe


def test_the_collection_starts_with_the_longest_files(request):
    files = list(dict.fromkeys(item.nodeid.split("::")[0] for item in request.session.items))
    named = [path for path in files if path in LONGEST_FIRST]
    assert files[:len(named)] == named == sorted(named, key=LONGEST_FIRST.index)
