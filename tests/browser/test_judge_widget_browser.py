"""Issue 44 item 8: the judge widget driven in JupyterLab in headless chromium — grades
clicked, "Nothing here answers it" clicked, the page reloaded and `%pcmem judge` run
again, which resumes at the first question left — then the judgments file checked line by
line and read back with the library's reader."""

from __future__ import annotations

import json

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from powercontext.eval.judging.judgments import read_judgments, read_pool

from ..judge_pool import write_pool

NOTEBOOK = "judge.ipynb"
CELLS = ["%load_ext powercontext.magics\n%pcmem judge pool --order file -o judge"]


def card(widget, entry_id: str):
    """The card (text + its grade buttons) of one candidate."""
    return widget.locator(f".widget-vbox:has(> .widget-html .pcmem-judge-card[data-entry-id='{entry_id}'])")


def question(widget, query_id: str) -> None:
    """Wait until the widget shows ``query_id`` (a click's round trip to the kernel; 30 s
    is generous even on a loaded machine), else fail naming the question it shows."""
    try:
        widget.locator(f".pcmem-judge-question [data-query-id='{query_id}']").wait_for(state="visible", timeout=30_000)
    except PlaywrightTimeout:
        shown = widget.locator(".pcmem-judge-question [data-query-id]").first.get_attribute("data-query-id")
        raise AssertionError(f"the judge widget shows question {shown!r}, not {query_id!r}") from None


def grade(widget, entry_id: str, g: int) -> None:
    card(widget, entry_id).locator(f".pcmem-judge-grade-{g}").click()


def test_click_grades_and_nothing_answers_reload_and_resume(open_lab):
    lab = open_lab()
    folder = write_pool(lab.dir / "pool")
    lab.notebook(NOTEBOOK, CELLS)
    lab.open(NOTEBOOK)
    lab.run_all()
    widget = lab.widget(0)

    question(widget, "q-build")
    shown = widget.locator(".pcmem-judge-card").evaluate_all("cards => cards.map(c => c.dataset.entryId)")
    assert sorted(shown) == ["e-build", "e-port", "e-test"]
    assert widget.locator(".pcmem-judge-channels").count() == 0  # blind: no channel before judging
    grade(widget, "e-build", 2)
    card(widget, "e-build").locator(".pcmem-judge-card[data-grade='2']").wait_for(state="attached")
    grade(widget, "e-test", 1)
    card(widget, "e-test").locator(".pcmem-judge-card[data-grade='1']").wait_for(state="attached")
    grade(widget, "e-port", 0)
    question(widget, "q-deploy")  # every candidate graded: on to the next question
    grade(widget, "e-cjk", 2)     # q-deploy half judged when the page goes away
    card(widget, "e-cjk").locator(".pcmem-judge-card[data-grade='2']").wait_for(state="attached")

    lab.save()
    lab.reload(NOTEBOOK)
    lab.run_all()  # the same kernel: `%pcmem judge` again replaces the widget and reads the file
    widget = lab.widget(0)
    question(widget, "q-deploy")  # resumed at the first question left, its grade kept
    assert widget.locator(".pcmem-judge-count").inner_text() == "1 / 3 questions judged"
    card(widget, "e-cjk").locator(".pcmem-judge-card[data-grade='2']").wait_for(state="attached")
    grade(widget, "e-rtl", 0)
    question(widget, "q-weather")
    widget.locator(".pcmem-judge-unanswerable").click()
    widget.locator(".pcmem-judge-count").filter(has_text="3 / 3 questions judged").wait_for(state="visible")

    lines = [json.loads(x) for x in (folder / "judgments" / "default.jsonl").read_text().splitlines()]
    assert [(x["query_id"], x["outcome"], x.get("entry_id"), x.get("grade")) for x in lines] == [
        ("q-build", "graded", "e-build", 2), ("q-build", "graded", "e-test", 1), ("q-build", "graded", "e-port", 0),
        ("q-deploy", "graded", "e-cjk", 2), ("q-deploy", "graded", "e-rtl", 0),
        ("q-weather", "unanswerable", None, None),
    ]
    log = read_judgments(read_pool(folder))
    assert log.judged_ids == ["q-build", "q-deploy", "q-weather"] and log.left == []
    assert log.unanswerable("q-weather") and not log.unanswerable("q-deploy")
    assert log.states["q-build"].grades == {"e-build": 2, "e-test": 1, "e-port": 0}
