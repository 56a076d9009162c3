"""``%pcmem runtime …`` and the JournalInspector widget, on both storage profiles."""

from __future__ import annotations

from powercontext.magics.widgets import JournalInspector

from ..magics.helpers import fail, run
from .pipelines import FailingPipeline



def test_runtime_magics_walk_capture_flush_journal_bindings_status(shell, target, scope, capsys, tmp_path):
    run(shell, f"%pcmem runtime open {target} --pipeline default --scope {scope}")
    assert "pipeline DefaultCandidatePipeline" in capsys.readouterr().out
    run(shell, '%pcmem runtime capture agents-md "AGENTS.md: never edit site/." '
               '--entry "constraint:site/ is generated output: never edit it."')
    run(shell, "%%pcmem runtime capture task-1 --type task_outcome\nFixed the flaky sync test; make test passed.\n")
    out = capsys.readouterr().out
    assert f"captured: agents-md is #1 in scope {scope}" in out and "task-1 is #2" in out

    flush = run(shell, "%pcmem runtime flush")
    assert flush.loc[0, "status"] == "committed" and flush.loc[0, "window"] == "(0, 2]"
    assert flush.loc[0, "revision"].endswith("@1") and flush.loc[0, "sources"] == "agents-md, task-1"

    journal = run(shell, "%pcmem runtime journal -o journal")
    assert list(journal.index) == [1, 2] and set(journal.position) == {"consumed"}
    assert list(journal.window) == ["(0, 2]", "(0, 2]"] and set(journal.outcome) == {"committed"}
    assert shell.user_ns["journal"] is journal

    bindings = run(shell, "%pcmem runtime bindings")
    row = bindings.set_index("scope").loc[scope]
    assert row["head"] == 1 and row["cursor"] == 2 and row["pending"] == 0 and row["memory"].startswith("mem_art_")
    status = run(shell, "%pcmem runtime status")
    assert status.loc["probe:fts", "value"] == "ok" and status.loc["schedule", "value"] == "off"

    run(shell, '%pcmem runtime capture agents-md "AGENTS.md: never edit site/." '
               '--entry "constraint:site/ is generated output: never edit it."')
    assert "already captured" in capsys.readouterr().out
    line = fail(shell, capsys, '%pcmem runtime capture agents-md "another payload"')
    assert "source conflict" in line
    run(shell, "%pcmem runtime close")
    assert "closed the Runtime" in capsys.readouterr().out


def test_runtime_magic_user_errors_are_one_line(shell, capsys, tmp_path):
    assert "no Runtime is open" in fail(shell, capsys, "%pcmem runtime flush --scope s")
    assert "unknown runtime action 'frobnicate'" in fail(shell, capsys, "%pcmem runtime frobnicate")
    run(shell, f"%pcmem runtime open {tmp_path / 'rt.db'}")
    assert "which scope" in fail(shell, capsys, "%pcmem runtime flush")
    assert "KIND:TEXT" in fail(shell, capsys, '%pcmem runtime capture x "c" --scope s --entry nonsense')
    assert "not JSON" in fail(shell, capsys, '%pcmem runtime capture x "c" --scope s --metadata "{oops"')
    assert "a variable of this notebook" in fail(shell, capsys, f"%pcmem runtime open {tmp_path / 'rt.db'} --pipeline nosuch")
    assert "candidate_pipeline" in fail(shell, capsys, f"%pcmem runtime open {tmp_path / 'rt.db'} --schedule 5")
    run(shell, '%pcmem runtime capture x "c" --scope s')
    flush = run(shell, "%pcmem runtime flush --scope s")
    assert flush.loc[0, "status"] == "unavailable", "the magics pick no pipeline unless told to"


def test_journal_inspector_shows_windows_failures_and_flushes(shell, target, scope):
    shell.user_ns["flaky"] = pipeline = FailingPipeline()
    run(shell, f"%pcmem runtime open {target} --pipeline flaky --scope {scope}")
    run(shell, '%pcmem runtime capture t1 "one" --entry "fact:The API listens on port 8080."')
    run(shell, "%pcmem runtime flush")
    widget = run(shell, "%pcmem runtime inspect")
    assert isinstance(widget, JournalInspector) and widget.scope.value == scope
    assert list(widget.journal_frame.outcome) == ["failed"] and list(widget.journal_frame.position) == ["pending"]
    assert "the extractor is down" in widget.journal_frame.reason[0]
    assert 'data-label="failed"' in widget.windows.value and "cursor 0 of 1" in widget.summary.value

    pipeline.healed = True
    widget.flush_button.click()
    assert widget.last_flush.status == "committed" and widget.error is None
    assert list(widget.journal_frame.outcome) == ["committed"] and list(widget.journal_frame.position) == ["consumed"]
    assert widget.journal_frame.revision[0].endswith("@1")
    assert list(widget.windows_frame.outcome) == ["committed", "failed"] and "cursor 1 of 1" in widget.summary.value
    assert repr(widget) == f"JournalInspector({scope!r}: 1 Sources, cursor 1 of 1, 2 windows)"
    bundle = widget._repr_mimebundle_()  # what a static renderer shows: the tables, not the widget tree
    text = bundle["text/plain"]
    assert text.splitlines()[0] == repr(widget) and "children=" not in text
    rows = [line.split() for line in text.splitlines()[3:4]]
    assert rows == [["1", "t1", "consumed", "(0,", "1]", "committed", widget.journal_frame.revision[0], "one"]], text
    assert "the extractor is down" in text  # the failed window's detail
    assert "finished_at" not in text + bundle["text/html"]  # varies per run: nbval compares these
    assert bundle["text/html"].count('data-label="committed"') == 2 and 'data-label="failed"' in bundle["text/html"]
    widget.flush_button.click()
    assert widget.last_flush.status == "idle"


def test_runtime_entries_and_search_read_the_scopes_memory(shell, capsys, tmp_path):
    """Issue 36: the runtime magics had no entries/search, so a user reopened the
    database with `%pcmem open`; a search that admits nothing says how to see why."""
    run(shell, f"%pcmem runtime open {tmp_path / 'rt.db'} --pipeline default --scope project:demo")
    assert run(shell, "%pcmem runtime entries").empty
    assert "scope project:demo has no active entries yet" in capsys.readouterr().out
    run(shell, '%pcmem runtime capture t1 "notes" --entry "constraint:site/ is generated output: never edit it." '
               '--entry "preference:Run make test before every push."')
    run(shell, "%pcmem runtime flush")
    entries = run(shell, "%pcmem runtime entries -o kept")
    assert sorted(entries.kind) == ["constraint", "preference"] and shell.user_ns["kept"] is entries
    assert entries.evidence.str.startswith("source:").all()
    capsys.readouterr()
    hits = run(shell, '%pcmem runtime search "what must I run before every push?" --mode fts')
    assert list(hits.text) == ["Run make test before every push."]
    assert "1 hit for" in capsys.readouterr().out
    nothing = run(shell, '%pcmem runtime search "who approves schema migrations?" --mode fts')
    out = capsys.readouterr().out
    assert nothing.empty and "nothing admitted: `%pcmem runtime search 'who approves schema migrations?' --explain`" in out
    explained = run(shell, '%pcmem runtime search "generated output edit" --mode fts --explain')
    assert "candidates" in capsys.readouterr().out and "reason" in explained.columns and len(explained) >= 1
    assert "which scope" in fail(shell, capsys, "%pcmem runtime close\n%pcmem runtime open "
                                 f"{tmp_path / 'rt.db'}\n%pcmem runtime entries")
