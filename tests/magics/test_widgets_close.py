"""Widgets never fail silently (issue 36): every action ends in a status line — what it
did, or why it could not — including after the service or Runtime behind the widget was
closed, when the line says how to reopen it. Each widget is driven through close."""

from __future__ import annotations

import pandas as pd

from powercontext.magics.widgets import ThresholdTuner

from .helpers import run

PUSH = "Run make test before every push."
SITE = "site/ is generated output: never edit it."


def closed_line(widget, reopen: str) -> None:
    assert widget.status_line == f"service closed — reopen with {reopen}", widget.status_line
    assert "data-kind='error'" in widget.status.value
    assert widget.status_line in widget._repr_mimebundle_()["text/html"].replace("&#x27;", "'").replace("&quot;", '"')


def test_memory_inspectors_say_what_they_did_and_that_the_service_closed(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    mid = run(shell, f'%pcmem remember --kind preference "{PUSH}"').artifact_id
    run(shell, f'%pcmem remember --kind constraint "{SITE}"')
    manifest = run(shell, f"%pcmem inspect manifest {mid}")
    lineage = run(shell, f"%pcmem inspect lineage {mid}")
    admission = run(shell, f"%pcmem inspect admission {mid}")
    tuner = ThresholdTuner(pd.DataFrame([dict(backend="sqlite", mode="fts", corpus="all", split="dev", fts_min_terms=t,
                                              fts_min_coverage=0.0, vector_min_cosine=float("nan"), limit=8,
                                              **{"ndcg@10": t / 4, "false_admission": 0.1}) for t in (1, 2)]))

    # outcomes while open
    assert manifest.status_line == "Revision 2: 2 entries"
    manifest.state.value = "inactive"  # a filter that matches nothing says so, under the header
    assert "no inactive entries in Revision 2" in manifest.table.value and "<th>entry_id</th>" in manifest.table.value
    manifest.reload_button.click()
    assert manifest.status_line == "reloaded: the head is Revision 2 (no new Revisions)"
    run(shell, f'%pcmem remember --kind fact "The API listens on port 8080."')
    manifest.reload_button.click()
    assert manifest.status_line == "reloaded: the head is Revision 3 (1 new; move the slider to see it)"
    assert lineage.status_line.startswith("the timeline of mem_ent_")
    assert admission.status_line == "" and admission.summary_line == "type a query"
    admission.query.value = "make test push deploy"
    assert admission.status_line.startswith("retrieved 1 candidate from the database (round trip 1)")
    admission.fts_min_terms.value = 4
    assert admission.status_line.startswith("replayed admission over 1 cached candidate at fts_min_terms=4")
    assert admission.hits.empty and "no hits: nothing was admitted" in admission.hits_table.value

    run(shell, "%pcmem close")
    reopen = f"`%pcmem open {sqlite_target}`, then `%pcmem inspect {{}} {mid}`"
    manifest.reload_button.click()
    closed_line(manifest, reopen.format("manifest"))
    manifest.revision.value = 3  # never loaded: needs the database
    closed_line(manifest, reopen.format("manifest"))
    lineage.entry.value = lineage.entry.options[-1][1]
    closed_line(lineage, reopen.format("lineage"))
    admission.retrieve_button.click()
    closed_line(admission, reopen.format("admission"))
    assert admission.summary_line.startswith("service closed")  # and the headline says it too
    admission.fts_min_terms.value = 1  # nothing cached any more after "Retrieve again"
    closed_line(admission, reopen.format("admission"))
    admission.query.value = "another question"
    closed_line(admission, reopen.format("admission"))
    tuner.fts_min_terms.value = 2  # reads the sweep only: unaffected by close
    assert tuner.point["ndcg@10"] == 0.5


def test_journal_inspector_flush_and_refresh_say_what_happened_and_that_the_runtime_closed(shell, tmp_path):
    db = tmp_path / "rt.db"
    run(shell, f"%pcmem runtime open {db} --pipeline default --scope project:demo")
    widget = run(shell, "%pcmem runtime inspect")
    assert "no Sources captured in this scope yet" in widget.journal.value or widget.scope.value is None
    assert widget.flush_button.layout.width == "auto"  # the label is not cut to "Flush next win…"
    run(shell, '%pcmem runtime capture t1 "notes" --entry "decision:Use SQLite for the Runtime."')
    widget.refresh_button.click()
    assert widget.status_line == "refreshed: 1 Sources, cursor 0 of 1, 1 pending"
    widget.flush_button.click()
    assert widget.status_line.startswith("flush project:demo: committed window (0, 1] → mem_art_")
    assert widget.status_line.endswith("@1; cursor 0 → 1 of 1") and widget.error is None
    widget.flush_button.click()  # nothing pending: the idle outcome is said too
    assert widget.status_line.startswith("flush project:demo: ") and "cursor 1 → 1 of 1" in widget.status_line

    run(shell, "%pcmem runtime close")
    reopen = f"`%pcmem runtime open {db} --pipeline default --scope project:demo`, then `%pcmem runtime inspect --scope project:demo`"
    widget.flush_button.click()
    closed_line(widget, reopen)
    widget.refresh_button.click()
    closed_line(widget, reopen)
