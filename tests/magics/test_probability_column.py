"""Issue 46 §4 on the notebook surfaces: ``%pcmem search --explain`` and the
AdmissionInspector's candidate tables show each candidate's calibrated probability and
the calibration cell it was read from (the language pair of a vector candidate) beside
its raw signals — on both databases, with the real MiniLM model (the profile ships a
calibration); a full-text-only database shows none."""

from __future__ import annotations

import math

from powercontext.magics import current_runner, current_service
from powercontext.magics.widgets import AdmissionInspector

from .helpers import run

ENTRIES = ("The staging release checklist: run make test, then tag the build.",
           "Nightly backups of the production database run at 02:00 UTC.",
           "生产数据库每天凌晨三点自动备份到 S3。")
QUERY = "when is the production database backed up"


def _candidates(shell, query):
    """(channel, entry_id) → (probability, cell) as the service annotated them."""
    runner, svc = current_runner(shell), current_service(shell)
    heads = [runner.run(svc.head(r.artifact_id)) for r in runner.run(svc.memories())]
    retrieval, _, _ = runner.run(svc.retrieve(query, heads, 8, "hybrid"))
    return {(c.channel, c.entry_id): (c.probability, c.calibration_cell)
            for cands in retrieval.channels.values() for c in cands}


def _rows(frame):
    return {(r.channel, r.entry_id): (r.probability, r.cell) for r in frame.itertuples()}


def _same(rows, expected):
    assert rows.keys() == expected.keys() and rows
    for key, (p, cell) in rows.items():
        want_p, want_cell = expected[key]
        assert math.isclose(p, round(want_p, 4)) and cell == want_cell, key


def test_explain_and_the_inspector_show_the_probability_and_its_language_pair(shell, target):
    run(shell, f"%pcmem open {target} --embedding minilm")
    run(shell, "%%pcmem remember --kind fact\n" + "\n\n".join(ENTRIES) + "\n")
    expected = _candidates(shell, QUERY)
    assert all(p is not None and 0.0 <= p <= 1.0 and cell for p, cell in expected.values())

    frame = run(shell, f'%pcmem search "{QUERY}" --mode hybrid --explain')
    columns = list(frame.columns)
    # beside the raw signals
    assert columns[columns.index("cosine") + 1: columns.index("cosine") + 3] == ["probability", "cell"]
    _same(_rows(frame), expected)
    vector_cells = {cell for channel, cell in zip(frame.channel, frame.cell) if channel == "vector"}
    assert any("latin>cjk" in c for c in vector_cells) and any("latin>latin" in c for c in vector_cells)
    # hybrid: one stacked probability per entry, its cell naming both channels' own
    assert all(c.startswith("hybrid stacked (") and ("fts coverage" in c or "fts not retrieved" in c)
               for c in frame.cell)

    w = run(shell, f'%pcmem inspect admission "{QUERY}" --mode hybrid')
    assert isinstance(w, AdmissionInspector) and w.result.mode == "hybrid"
    for table in (w.admitted, w.rejected):
        assert {"probability", "cell"} <= set(table.columns)
    _same({**_rows(w.admitted), **_rows(w.rejected)}, expected)
    # the HTML table the widget shows and its plain-text fallback carry them too
    assert ">probability</th>" in w.rejected_table.value and ">cell</th>" in w.rejected_table.value
    assert "latin&gt;cjk" in w.admitted_table.value + w.rejected_table.value
    assert "probability" in w.fallback_text()


def test_a_database_without_a_calibration_shows_no_probability(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    run(shell, "%%pcmem remember --kind fact\n" + "\n\n".join(ENTRIES) + "\n")
    frame = run(shell, '%pcmem search "production database backups" --explain')
    assert len(frame) and frame.probability.isna().all() and frame.cell.isna().all()
