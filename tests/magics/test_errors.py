"""Every class of user mistake prints ONE `UsageError: …` line, never a traceback."""

from __future__ import annotations

import pytest

import powercontext as pc
from powercontext.magics.errors import user_message

from .helpers import fail, run

PUSH = "Run make test before every push."


@pytest.fixture
def opened(shell, sqlite_target):
    """An open database with one Memory at Revision 2; returns (shell, memory id)."""
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, f'%pcmem remember --kind preference "{PUSH}"')
    run(shell, f'%pcmem remember --memory {rev.artifact_id} --kind fact "The dev server listens on port 5173."')
    return shell, rev.artifact_id


CASES = [
    # (cell, expected fragment); {mid} is the Memory id, {entry} its first entry
    ("%pcmem frobnicate", "unknown subcommand 'frobnicate'"),
    ('%pcmem search "make test" --bogus', "unrecognized arguments: --bogus"),
    ('%pcmem search "make test" --mode fuzzy', "invalid choice: 'fuzzy'"),
    ('%pcmem search "make test', "No closing quotation"),
    ("%pcmem eval", "the following arguments are required: --dataset"),
    ("%pcmem manifest mem_art_nope", "unknown memory 'mem_art_nope'"),
    ("%pcmem manifest {mid}@0", "bad Memory ref"),
    ("%pcmem manifest {mid}@9", "has no Revision 9 (head is 2)"),
    ("%pcmem lineage mem_ent_nope", "unknown entry 'mem_ent_nope'"),
    ("%pcmem forget {entry} --memory {mid}@1", "stale revision: "),
    ('%pcmem remember --memory {mid}@1 --kind fact "late write"', "stale revision: "),
    ('%pcmem search "make test" --mode vector', "not supported: vector search is unavailable"),
    ('%pcmem search "make test" --mode hybrid', "not supported: hybrid search is unavailable"),
    ('%pcmem search "make test" --memory {mid}@1', "stale revision: "),
    ('%pcmem search "make test" --fts-min-coverage 2', "bad admission threshold: fts_min_coverage"),
    ("%pcmem remember --kind fact", "nothing to remember"),
    ('%pcmem remember --kind "two words" "text"', "invalid request: kind must be"),
    ('%pcmem remember --kind fact --source missing "text"', "unknown source 'missing'"),
    ("%%pcmem memories\nbody", "has no cell form"),
    ("%pcmem open ftp://example.org/x", "invalid request: cannot open"),
    ("%pcmem open", "open what?"),
    ("%pcmem inspect manifest", "takes exactly one Memory REF"),
    ("%pcmem open memory.db --embedding bert", "invalid request: unknown embedding 'bert': use 'minilm'"),
    ("%pcmem open /nonexistent_dir/x.db", "directory '/nonexistent_dir' does not exist"),
    ('%pcmem search "make test" --limit 0', "invalid request: limit must be an integer in 1..1000"),
    ('%pcmem search "make test" --limit -3', "invalid request: limit must be an integer in 1..1000"),
    ("%%pcmem search\nmake test", "%%pcmem search has no cell form (only %%pcmem remember, %%pcmem runtime have one)"),
    # from the test's temporary directory: the README's relative path is not there, bare names are offered
    ("%pcmem eval --dataset datasets/atlas-etl", "bundled corpora by name: atlas-etl, harbor-web, lantern-relay, tidewater-cli"),
    ("%pcmem eval --dataset no-such-corpus", "eval: no-such-corpus: no such dataset folder"),
    ("%pcmem use {mid}@1", "`%pcmem use` takes a Memory, not a Revision: drop @1"),
    ('%pcmem remember --new --memory {mid} "text"', "--new creates a Memory"),
]


@pytest.mark.parametrize("cell, expected", CASES, ids=[c[0].split("\n")[0][:40] for c in CASES])
def test_user_error_is_one_line(opened, capsys, cell, expected):
    shell, mid = opened
    entry = run(shell, f"%pcmem manifest {mid}").entry_id[0]
    line = fail(shell, capsys, cell.format(mid=mid, entry=entry))
    assert expected in line


def test_ambiguous_prefix_asks_for_more(opened, capsys):
    shell, mid = opened
    run(shell, '%pcmem remember --new --kind fact "A second Memory."')
    assert "ambiguous memory prefix 'mem_art_'" in fail(shell, capsys, "%pcmem manifest mem_art_")


def test_no_database_open(shell, capsys):
    assert "no database is open" in fail(shell, capsys, "%pcmem status")


def test_reads_without_ref_need_a_current_memory(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    for cell in ("%pcmem manifest", "%pcmem changes", "%pcmem verify"):
        assert "give a Memory REF (`%pcmem memories` lists them) or pick one with `%pcmem use REF`" in fail(shell, capsys, cell)


def test_several_memories_and_none_current_is_refused(shell, sqlite_target, capsys):
    run(shell, f"%pcmem open {sqlite_target}")
    run(shell, '%pcmem remember "one"')
    run(shell, '%pcmem remember --new "two"')
    run(shell, f"%pcmem open {sqlite_target}")  # reopening forgets the current Memory
    line = fail(shell, capsys, '%pcmem remember "three"')
    assert "this database has 2 Memories and none is current" in line and "--new" in line


def test_bugs_are_not_disguised_as_user_errors():
    assert user_message(ZeroDivisionError("boom")) is None
    assert user_message(pc.RevisionConflictError("x@1 is not the head\nmore")) == "stale revision: x@1 is not the head"


def test_failed_open_keeps_the_open_database(opened, capsys):
    shell, mid = opened
    fail(shell, capsys, "%pcmem open ftp://example.org/x")
    assert run(shell, "%pcmem memories").memory.tolist() == [mid]


def test_open_in_a_missing_directory_creates_nothing(shell, tmp_path, capsys):
    target = tmp_path / "missing" / "x.db"
    before = sorted(tmp_path.iterdir())  # the shell fixture keeps its policy file here
    line = fail(shell, capsys, f"%pcmem open {target}")
    assert f"directory '{target.parent}' does not exist" in line
    assert not target.parent.exists() and sorted(tmp_path.iterdir()) == before
