"""A current Memory per session: the first `remember` creates it, later ones append to
it, `use` switches, `status` shows it, reads without REF default to it; a no-op write
shows the head it left alone instead of a Revision whose change list is old news."""

from __future__ import annotations

import re

from .helpers import run


def out_of(capsys) -> str:
    """What the magic printed, without the shell's display of the returned value."""
    return capsys.readouterr().out.split("Out[", 1)[0]


def test_remember_creates_then_appends_and_use_switches(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    out_of(capsys)
    first = run(shell, '%pcmem remember --kind preference "Run make test before every push."')
    assert out_of(capsys) == f"created {first.artifact_id} (now current; `%pcmem use REF` to switch)\n"
    second = run(shell, '%pcmem remember "The dev server listens on port 5173."')
    assert second.artifact_id == first.artifact_id and second.revision == 2 and out_of(capsys) == ""
    assert run(shell, "%pcmem status").loc["current", "value"] == f"{first.artifact_id}@2 · 2 active · 0 inactive"
    assert len(run(shell, "%pcmem manifest")) == 2  # REF defaults to the current Memory's head
    assert run(shell, "%pcmem changes").revision.tolist() == [2]

    out_of(capsys)
    other = run(shell, '%pcmem remember --new "A second Memory."')
    assert other.artifact_id != first.artifact_id and "now current" in out_of(capsys)
    assert run(shell, "%pcmem manifest").text.tolist() == ["A second Memory."]

    out_of(capsys)
    assert run(shell, f"%pcmem use {first.artifact_id}") is None
    assert out_of(capsys) == f"current Memory: {first.artifact_id}@2 · 2 active · 0 inactive\n"
    third = run(shell, '%pcmem remember "site/ is generated output: never edit it."')
    assert third.artifact_id == first.artifact_id and third.revision == 3
    out_of(capsys)
    run(shell, "%pcmem use")
    assert out_of(capsys) == f"current Memory: {first.artifact_id}@3 · 3 active · 0 inactive\n"
    assert sorted(run(shell, "%pcmem memories")["head"].tolist()) == [1, 3]


def test_reopening_a_database_with_one_memory_adopts_it(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    mid = run(shell, '%pcmem remember "one"').artifact_id
    run(shell, f"%pcmem open {sqlite_target}")
    assert run(shell, "%pcmem status").loc["current", "value"].startswith("none")
    out_of(capsys)
    rev = run(shell, '%pcmem remember "two"')
    assert rev.artifact_id == mid and rev.revision == 2
    assert out_of(capsys) == f"writing to {mid}, the only Memory here (now current; `%pcmem use REF` to switch)\n"


def test_reactivating_an_active_entry_shows_the_head_not_old_changes(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, '%pcmem remember "Run make test before every push."')
    entry = rev.manifest.entries[0].entry_id
    run(shell, f"%pcmem forget {entry}")
    run(shell, f"%pcmem reactivate {entry}")
    out_of(capsys)
    assert run(shell, f"%pcmem reactivate {entry} -o head") is None  # no Revision display (its changes say "reactivate")
    assert out_of(capsys) == (f"unchanged: the entry is already active; no new Revision — the head stays "
                              f"{rev.artifact_id}@3 · 1 active · 0 inactive\n")
    assert shell.user_ns["head"].revision == 3


def test_first_embedded_write_says_it_loads_the_model_once_and_nothing_else(shell, sqlite_target, capfd):
    """One line before the first embedded write, none before the next, and no
    third-party "Loading weights" bar (the model instance is new, so it really loads)."""
    run(shell, f"%pcmem open {sqlite_target} --embedding minilm")
    capfd.readouterr()
    run(shell, '%pcmem remember "Run make test before every push."')
    first = capfd.readouterr()
    run(shell, '%pcmem remember "Never edit site/."')
    run(shell, '%pcmem search "make test" --mode hybrid')
    later = capfd.readouterr()
    assert first.out.startswith("loading all-MiniLM-L6-v2 …\ncreated mem_art_")
    assert "loading" not in later.out
    assert "Loading weights" not in first.err + later.err
    assert not re.search(r"\d+%\|", first.err + later.err), first.err  # no progress bar at all
