"""Issue 45 §1 in a real browser: `%pcmem inspect admission "the question" --mode hybrid`
opens the AdmissionInspector on that query (JupyterLab, headless chromium, a SQLite
file embedded with the real all-MiniLM-L6-v2), and moving its ``hybrid_fts_min_terms``
control — a hybrid-only floor that had no control before — admits the full-text
candidate the default floor of 4 terms rejected.
"""

from __future__ import annotations

import re

CHECKLIST = "The staging release checklist: run make test, then tag the build."
OTHER = "Nightly backups of the production database run at 02:00 UTC."
#: Six terms, three of them in CHECKLIST: ⌈0.34 × 6⌉ = 3, so the terms floor decides (4, then 3).
QUERY = "release checklist staging deploys rollbacks hotfixes"

CELLS = [
    "%load_ext powercontext.magics\n%pcmem open inspector.db --embedding minilm",
    f"%%pcmem remember --kind fact\n{CHECKLIST}\n\n{OTHER}\n",
    f'%pcmem inspect admission "{QUERY}" --mode hybrid -o inspector',
]


def _fts_row(widget, page, caption: str):
    table = widget.locator("table.pcmem-table", has=page.locator("caption", has_text=caption))
    return table.locator("tbody tr", has_text=CHECKLIST).filter(has=page.locator("td", has_text=re.compile(r"^fts$")))


def test_inspector_opens_on_the_query_and_its_hybrid_floor_control_admits(open_lab):
    lab = open_lab()
    page = lab.page
    lab.notebook("inspector_controls.ipynb", CELLS)
    lab.open("inspector_controls.ipynb")
    lab.run_all()
    widget = lab.widget(2)
    assert widget.locator("input[placeholder='query…']").input_value() == QUERY

    # the default MiniLM policy: the full-text candidate needs 4 terms beside the vector channel
    rejected = _fts_row(widget, page, "rejected candidates")
    rejected.wait_for(state="visible")
    assert "hybrid_fts_min_terms=4" in rejected.inner_text()
    status = widget.locator(".pcmem-status")
    assert "hybrid_fts_min_terms=4" in status.inner_text()
    # fts mode's floor has no control in hybrid mode (display: none), the hybrid one has
    labels = widget.locator(".widget-slider .widget-label")
    visible = {labels.nth(i).inner_text() for i in range(labels.count()) if labels.nth(i).is_visible()}
    assert "hybrid_fts_min_terms" in visible and "fts_min_terms" not in visible, visible

    slider = widget.locator(".widget-slider", has=page.locator(".widget-label", has_text="hybrid_fts_min_terms"))
    readout = slider.locator(".widget-readout")
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("3")
    page.keyboard.press("Enter")

    _fts_row(widget, page, "admitted candidates").wait_for(state="visible")
    assert _fts_row(widget, page, "rejected candidates").count() == 0
    assert "hybrid_fts_min_terms=3" in status.inner_text()
    assert "no database round trip" in status.inner_text()
