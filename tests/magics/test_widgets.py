"""Widget behaviour through widget state: move a control, assert what is shown (and
what a static renderer shows: the display bundle's text/plain and text/html).
ThresholdTuner: test_tuner.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

import powercontext as pc
from powercontext.magics import current_runner, current_service
from powercontext.magics.widgets import AdmissionInspector, LineageExplorer, ManifestInspector

from .helpers import run

PUSH = "Run make test before every push."
SITE = "site/ is generated output: never edit it."
PORT = "The dev server listens on port 5173."
QUERY = "make test site dev server port"


@pytest.fixture
def history(shell, sqlite_target):
    """A Memory with 3 Revisions: add PUSH; add SITE + PORT; forget PORT."""
    run(shell, f"%pcmem open {sqlite_target}")
    rev = run(shell, f'%pcmem remember --kind preference "{PUSH}"')
    mid = rev.artifact_id
    run(shell, f"%%pcmem remember --memory {mid} --kind constraint\n{SITE}\n\n{PORT}\n")
    manifest = run(shell, f"%pcmem manifest {mid}")
    port = manifest.loc[manifest.text == PORT, "entry_id"].item()
    run(shell, f"%pcmem forget {port} --reason user_requested")
    return current_service(shell), current_runner(shell), mid, port


def test_manifest_inspector_slider_and_state_filter(history):
    svc, runner, mid, port = history
    w = ManifestInspector(svc, mid, runner=runner)
    assert (w.revision.min, w.revision.max, w.revision.value) == (1, 3, 3)
    assert dict(zip(w.frame.entry_id, w.frame.change, strict=True))[port] == "deactivated"
    assert w.table.value.count("data-label=") == 1 and 'data-label="deactivated"' in w.table.value

    w.revision.value = 2
    assert sorted(w.frame.change) == ["", "added", "added"] and w.table.value.count('data-label="added"') == 2
    assert "changed since Revision 1" in w.title.value and f"{mid}@2" in w.title.value

    w.revision.value = 1
    assert w.frame.text.tolist() == [PUSH] and w.frame.change.tolist() == ["added"]

    w.revision.value = 3
    w.state.value = "inactive"
    assert w.frame.entry_id.tolist() == [port] and w.frame.state.tolist() == ["inactive"]


def test_manifest_inspector_reload_picks_up_new_revisions(history, shell):
    svc, runner, mid, port = history
    w = ManifestInspector(svc, f"{mid}@2", runner=runner)
    assert (w.revision.value, w.revision.max) == (2, 3)
    run(shell, f"%pcmem reactivate {port} --reason oops")
    w.reload()
    w.revision.value = 4
    assert w.frame.loc[w.frame.entry_id == port, "change"].item() == "reactivated"


def test_lineage_explorer_shows_the_picked_entry_timeline(history):
    svc, runner, mid, port = history
    w = LineageExplorer(svc, mid, runner=runner)
    assert len(w.entry.options) == 3
    w.entry.value = port
    assert w.frame[["revision", "op", "state", "reason"]].values.tolist() == [
        [2, "add", "active", ""], [3, "deactivate", "inactive", "user_requested"],
    ]
    assert "user_requested" in w.timeline.value and 'data-label="deactivated"' in w.timeline.value
    other = next(value for _, value in w.entry.options if value != port)
    w.entry.value = other
    assert w.frame.op.tolist() == ["add"] and port not in w.timeline.value


def test_admission_inspector_replays_thresholds_without_retrieving_again(history):
    svc, runner, mid, port = history
    run_ = runner.run
    run_(svc.reactivate(run_(svc.head(mid)), [run_(svc.entry(run_(svc.head(mid)), port))], reason="back"))
    w = AdmissionInspector(svc, [mid], runner=runner, query=QUERY)
    assert w.retrievals == 1 and w.error is None
    assert sorted(w.admitted.text) == sorted([PUSH, PORT]) and w.rejected.text.tolist() == [SITE]
    assert "matched 1/6 terms, needs 2" in w.rejected.reason[0] and "rejected candidates" in w.rejected_table.value

    w.fts_min_terms.value = 1
    w.fts_min_coverage.value = 0.0
    assert len(w.admitted) == 3 and w.rejected.empty and len(w.hits) == 3
    w.fts_min_terms.value = 3
    assert w.admitted.text.tolist() == [PORT] and w.hits.text.tolist() == [PORT]
    assert w.retrievals == 1  # every slider move replayed admission over the cached candidates

    online = run_(svc.search(QUERY, memories=(run_(svc.head(mid)),), policy=w.policy))
    assert [h.entry_id for h in online] == w.hits.entry_id.tolist()
    assert [round(h.score, 6) for h in online] == w.hits.score.tolist()

    w.mode.value = "fts"
    assert w.retrievals == 2 and w.result.mode == "fts"
    w.query.value = "dev server"
    assert w.retrievals == 3 and w.hits.text.tolist() == [PORT]


def test_admission_inspector_reports_a_missing_capability_in_its_status(history):
    svc, runner, mid, _ = history
    w = AdmissionInspector(svc, [mid], runner=runner, query=QUERY)
    w.mode.value = "vector"
    assert w.error.startswith("not supported: vector search is unavailable")
    assert "not supported" in w.status.value and w.hits.empty and w.admitted_table.value == ""
    w.mode.value = "auto"
    assert w.error is None and w.hits.text.tolist() == [PUSH]  # PORT is forgotten
    assert w.status_line.startswith("replayed admission over 2 cached candidates")  # auto was retrieved first
    assert "data-kind='done'" in w.status.value


def test_widgets_accept_revisions_and_default_to_the_magics_runner(history):
    svc, runner, mid, _ = history
    head = runner.run(svc.head(mid))
    w = ManifestInspector(svc, head)  # no runner given: the shared private loop
    assert w.runner is runner and w.revision.value == 3
    old = runner.run(svc.revision(pc.ArtifactRef(mid, 1)))
    a = AdmissionInspector(svc, [old], query="make test push")  # always searches the current head
    assert a.error is None and a.hits.memory.tolist() == [f"{mid}@3"]


class Cells(HTMLParser):
    """Every <td>/<th> of an HTML fragment: its attributes and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.cells: list[tuple[dict, str]] = []
        self._open: dict | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag in ("td", "th"):
            self._open = dict(attrs)
            self.cells.append((self._open, ""))

    def handle_data(self, data):
        if self._open is not None:
            attrs, text = self.cells[-1]
            self.cells[-1] = (attrs, text + data)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._open = None


LONG = ("Always run make test and the notebook checks before pushing to main, and never push when "
        "any test is red.")


def test_admission_inspector_wraps_the_reason_and_text_and_keeps_the_other_cells_on_one_line(history, shell):
    """Issue 36: the reason — the "why rejected" — was cut to 40 characters (whole only
    on hover) and the tables ran past the right edge."""
    svc, runner, mid, _ = history
    run(shell, f'%pcmem remember --memory {mid} --kind preference "{LONG}"')
    w = AdmissionInspector(svc, [mid], runner=runner, query="make test push main red")
    assert len(w.rejected) + len(w.admitted) >= 2
    for frame, table in ((w.hits, w.hits_table.value), (w.admitted, w.admitted_table.value),
                         (w.rejected, w.rejected_table.value)):
        assert re.match(r"<div class='pcmem-scroll' style='overflow-x:auto;max-width:100%'><table", table)
        header = Cells(table).cells[:len(frame.columns)]
        assert all("white-space:nowrap" in attrs.get("style", "") for attrs, _ in header)
    for frame, table in ((w.admitted, w.admitted_table.value), (w.rejected, w.rejected_table.value)):
        body = Cells(table).cells[len(frame.columns):]
        rows = [body[i:i + len(frame.columns)] for i in range(0, len(body), len(frame.columns))]
        for row, reason in zip(rows, frame.reason):
            cells = dict(zip(frame.columns, row))
            assert cells["reason"][1] == reason  # whole, not cut
            wrapped = ("reason", "cell", "text", "memory", "entry_id")  # cell: the calibration cell, words
            for name in wrapped:
                assert "white-space:normal" in cells[name][0]["style"] and "overflow-wrap:anywhere" in cells[name][0]["style"]
            assert all("white-space:nowrap" in cells[c][0]["style"] for c in frame.columns if c not in wrapped)
    assert any(text.startswith(LONG[:60]) for _, text in Cells(w.admitted_table.value + w.hits_table.value).cells)


def test_inspectors_display_their_table_without_a_live_kernel(history):
    svc, runner, mid, port = history
    m = ManifestInspector(svc, mid, runner=runner)
    m.revision.value = 2
    bundle = m._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # the live view stays
    text, html = bundle["text/plain"], bundle["text/html"]
    assert text.splitlines()[0] == f"ManifestInspector({mid}@2 · 3 active · 0 inactive · 2 changed since Revision 1)"
    assert repr(m) == text.splitlines()[0] and "children=" not in text
    assert all(t in text for t in (PUSH, SITE, PORT)) and text.count("added") == 2
    assert "<table class='pcmem-table'>" in html and html.count('data-label="added"') == 2 and esc_in(SITE, html)
    m.state.value = "inactive"
    assert m._repr_mimebundle_()["text/plain"].endswith("(no rows)")

    lineage = LineageExplorer(svc, mid, runner=runner)
    lineage.entry.value = port
    bundle = lineage._repr_mimebundle_()
    assert bundle["text/plain"].splitlines()[0] == f"LineageExplorer({mid}@3 · {port}: 1 versions, 2 changes)"
    assert "user_requested" in bundle["text/plain"] and 'data-label="deactivated"' in bundle["text/html"]

    a = AdmissionInspector(svc, [mid], runner=runner, query=QUERY)
    bundle = a._repr_mimebundle_()
    text, html = bundle["text/plain"], bundle["text/html"]
    assert text.splitlines()[0] == repr(a) and repr(a).startswith(f"AdmissionInspector(1 hit for {QUERY!r} · mode ")
    assert "rejected candidates:" in text and "matched 1/6 terms, needs 2" in text
    assert SITE in text and "rejected candidates" in html
    a.mode.value = "vector"
    assert "not supported: vector search is unavailable" in a._repr_mimebundle_()["text/html"]
    assert repr(a).startswith("AdmissionInspector(not supported: vector search")


def esc_in(text: str, html: str) -> bool:
    import html as html_lib

    return html_lib.escape(text, quote=True) in html
