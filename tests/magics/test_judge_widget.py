"""The judge widget in-process (issue 44 item 3): `%pcmem judge FOLDER`, blind order,
clicks saved at once, keys, "nothing here answers it", resume after a restart (a new
widget over the same file), channels only once judged, a second judge, the judge lock."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from powercontext.eval.judging.judgments import JudgingError, read_judgments, read_pool
from powercontext.magics.widgets import JudgeWidget
from powercontext.magics.widgets.judge import candidate_order

from ..judge_pool import write_pool
from .helpers import fail, run


@pytest.fixture
def folder(tmp_path):
    return write_pool(tmp_path / "pool")


def saved(folder, judge="default"):
    path = folder / "judgments" / f"{judge}.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def css(widget):
    """Every CSS class in the widget tree: what a browser test clicks."""
    found, stack = set(), [widget]
    while stack:
        w = stack.pop()
        found |= set(getattr(w, "_dom_classes", ()))
        stack.extend(getattr(w, "children", ()))
    return found


def buttons(widget, cls):
    out, stack = [], [widget]
    while stack:
        w = stack.pop(0)
        if cls in getattr(w, "_dom_classes", ()):
            out.append(w)
        stack.extend(getattr(w, "children", ()))
    return out


def test_the_order_is_shuffled_per_judge_and_question_never_rank_order_and_stable(folder):
    pool = read_pool(folder)
    ranked = [c.entry_id for c in pool.candidates["q-build"]]
    orders = {j: [c.entry_id for c in candidate_order(pool.candidates["q-build"], j, "q-build")] for j in ("a", "b", "c", "d")}
    assert all(sorted(o) == sorted(ranked) for o in orders.values())
    assert len({tuple(o) for o in orders.values()}) > 1          # seeded by the judge
    assert any(o != ranked for o in orders.values())
    again = [c.entry_id for c in candidate_order(tuple(reversed(pool.candidates["q-build"])), "a", "q-build")]
    assert again == orders["a"]                                  # independent of pool.jsonl order


def test_magic_clicks_are_saved_at_once_and_a_restart_resumes(shell, folder):
    w = run(shell, f"%pcmem judge {folder} --order file")
    assert isinstance(w, JudgeWidget) and w.query_id == "q-build"
    assert {"pcmem-judge-grade", "pcmem-judge-grade-0", "pcmem-judge-grade-1", "pcmem-judge-grade-2",
            "pcmem-judge-unanswerable", "pcmem-judge-skip", "pcmem-judge-note", "pcmem-judge-note-save",
            "pcmem-judge-progress", "pcmem-judge-keys", "pcmem-judge-next", "pcmem-judge-prev"} <= css(w)
    assert "0 / 3 questions judged" in w.progress.value and "left: q-build, q-deploy, q-weather" in w.progress.value
    assert "found by" not in w.fallback_html() and "best_rank" not in w.fallback_html()   # blind
    first = w.order[0].entry_id
    buttons(w, "pcmem-judge-grade-2")[0].click()                 # a real button click
    assert saved(folder)[-1] | {"at": None} == {"query_id": "q-build", "entry_id": first, "grade": 2,
                                                "outcome": "graded", "note": None, "judge": "default", "at": None}
    w.press("0")                                                 # keys: the mark moved to the 2nd candidate
    assert saved(folder)[-1]["entry_id"] == w.order[1].entry_id and saved(folder)[-1]["grade"] == 0
    w.note.value = "deploy notes are elsewhere"
    buttons(w, "pcmem-judge-note-save")[0].click()
    assert saved(folder)[-1]["outcome"] == "note" and saved(folder)[-1]["entry_id"] is None
    # the kernel restarts: the widget is gone, the lock with it; a new one resumes at q-build
    w.close()
    w2 = run(shell, f"%pcmem judge {folder} --order file")
    assert w2.query_id == "q-build" and w2.note.value == "deploy notes are elsewhere"
    assert w2.judgments.states["q-build"].grades == {first: 2, w2.order[1].entry_id: 0}
    w2.press("1")                                                # the third candidate: q-build judged → next
    assert w2.query_id == "q-deploy" and "1 / 3 questions judged" in w2.progress.value
    buttons(w2, "pcmem-judge-unanswerable")[0].click()
    assert saved(folder)[-1]["outcome"] == "unanswerable" and w2.query_id == "q-weather"
    buttons(w2, "pcmem-judge-skip")[0].click()
    assert saved(folder)[-1] | {"at": None} == {"query_id": "q-weather", "entry_id": None, "grade": None,
                                                "outcome": "skip", "note": None, "judge": "default", "at": None}
    log = read_judgments(read_pool(folder))
    assert log.judged_ids == ["q-build", "q-deploy"] and log.unanswerable("q-deploy") and log.left == ["q-weather"]
    w2.close()


def test_rerunning_the_cell_in_the_same_kernel_replaces_the_widget(shell, folder):
    w = run(shell, f"%pcmem judge {folder} --judge ann")
    w2 = run(shell, f"%pcmem judge {folder} --judge ann")        # not refused by our own lock
    w2.grade(0, 1)
    assert not w.writer.is_open and saved(folder, "ann")[-1]["grade"] == 1
    w2.close()


def test_channels_only_after_the_question_is_judged(folder):
    w = JudgeWidget(folder, judge="chan", show_channels=True, order="file")
    assert "found by" not in w.fallback_html()
    for i in range(len(w.order)):
        w.grade(i, 0)
    assert w.query_id == "q-build"                               # stays, revealed
    html = w.fallback_html()
    assert "found by fts@minilm-l6-v2, hybrid@minilm-l6-v2 · best rank 1" in html
    w.next()
    assert w.query_id == "q-deploy" and "found by" not in w.fallback_html()
    w.close()


def test_cjk_and_rtl_text_shown_whole_and_direction_aware(folder):
    w = JudgeWidget(folder, judge="script")
    w.go("q-deploy")
    html = w.fallback_html()
    assert "部署之前必须运行数据库迁移脚本。" in html and "لا تعدّل ملفات المجلد site يدويًا." in html
    assert html.count("dir='auto'") >= 3 and "white-space:pre-wrap" in html
    assert "decision" in html and "Memory <code>repoA</code>" in html
    w.close()


def test_a_second_judge_judges_independently(folder):
    a = JudgeWidget(folder, judge="a", order="file")
    b = JudgeWidget(folder, judge="b", order="file")
    a.grade(0, 2)
    assert b.judgments.states == {} and saved(folder, "b") == []
    b.nothing_answers()
    assert read_judgments(read_pool(folder), "a").unanswerable("q-build") is False
    assert [x["outcome"] for x in saved(folder, "b")] == ["unanswerable"]
    a.close(), b.close()


LOCKER = textwrap.dedent("""
    import sys, time
    from powercontext.magics.widgets import JudgeWidget
    w = JudgeWidget(sys.argv[1], judge="same")
    print("open", flush=True)
    time.sleep(120)
""")


def test_a_second_kernel_under_the_same_name_is_refused_in_one_line(shell, capsys, folder):
    other = subprocess.Popen([sys.executable, "-c", LOCKER, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "open"
        line = fail(shell, capsys, f"%pcmem judge {folder} --judge same")
        assert f"judge 'same' is already judging {folder} (process {other.pid})" in line
        assert saved(folder, "same") == []
    finally:
        other.kill()
        other.wait()


def test_bad_folder_and_bad_judge_name_are_one_line(shell, capsys, tmp_path, folder):
    assert "no such pool folder" in fail(shell, capsys, f"%pcmem judge {tmp_path / 'nowhere'}")
    assert "bad judge name" in fail(shell, capsys, f"%pcmem judge {folder} --judge 'a b'")


def test_a_truncated_last_line_is_shown_and_ignored(folder):
    w = JudgeWidget(folder, judge="t")
    w.grade(0, 2)
    w.close()
    with open(folder / "judgments" / "t.jsonl", "ab") as f:
        f.write(b'{"query_id": "q-bu')
    w = JudgeWidget(folder, judge="t")
    assert "t.jsonl:2: truncated last line ignored" in w.status_line
    assert len(w.judgments.states["q-build"].grades) == 1
    w.grade(1, 0)
    assert [x["grade"] for x in saved(folder, "t")] == [2, 0]
    w.close()



def test_questions_come_in_a_seeded_sample_order_or_most_uncertain_first_or_as_filed(shell, capsys, folder):
    from powercontext.eval.judging.order import sample_order

    w = run(shell, f"%pcmem judge {folder} --judge one")
    sample = sample_order(["q-build", "q-deploy", "q-weather"])
    assert w.questions == sample and w.query_id == sample[0]    # the default: the same for every judge
    w.close()
    w = run(shell, f"%pcmem judge {folder} --judge two")
    assert w.questions == sample
    w.close()
    assert sample_order(reversed(sample)) == sample and sample_order(["a", "b", "c", "d", "e"]) != list("abcde")
    rows = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines()]
    rows[2]["meta"]["log_count"] = 7  # q-weather: asked most often, no stored signals to weigh against it
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    w = run(shell, f"%pcmem judge {folder} --judge ordered --order uncertainty")
    assert w.query_id == "q-weather" and w.questions == ["q-weather", "q-build", "q-deploy"]
    assert "left: q-weather, q-build, q-deploy" in w.progress.value
    w.press("n")                                                 # judged: on to the next in this order
    assert w.query_id == "q-build"
    w.close()
    w = run(shell, f"%pcmem judge {folder} --judge filed --order file")
    assert w.query_id == "q-build" and w.questions == ["q-build", "q-deploy", "q-weather"]
    w.close()
    with pytest.raises(JudgingError, match="order must be one of sample, uncertainty, file"):
        JudgeWidget(folder, judge="bad", order="random")
    assert "invalid choice" in fail(shell, capsys, f"%pcmem judge {folder} --order random")


def test_redrawn_cards_are_closed_so_a_long_session_does_not_pile_up_widgets(folder):
    from ipywidgets.widgets.widget import _instances  # every live widget model (Widget.widgets, deprecated)

    w = JudgeWidget(folder, judge="long", order="file")
    w.go("q-build")
    live = len(_instances)
    for _ in range(5):
        w.grade(0, 1)
        w.go("q-build")
    assert len(_instances) == live
    w.close()
