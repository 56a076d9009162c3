"""Judging a pool folder without a widget (issue 44 item 3): the append-only judgments
file, a hand-edited folder, two writers under one judge name (two real processes), the
qrels import and the agreement of two judges."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from sklearn.metrics import cohen_kappa_score

from powercontext.errors import PowerContextError
from powercontext.eval.__main__ import main
from powercontext.eval.judging.agreement import agreement, folder_agreement
from powercontext.eval.judging.judgments import (
    JudgeLockedError, JudgeWriter, JudgingError, read_judgments, read_pool,
)
from powercontext.eval.judging.qrels_import import import_qrels

from ..judge_pool import write_pool


@pytest.fixture
def pool(tmp_path):
    return read_pool(write_pool(tmp_path / "pool"))


def lines(pool, judge="default"):
    return (pool.folder / "judgments" / f"{judge}.jsonl").read_bytes().decode().splitlines()


def test_every_click_is_one_line_latest_wins_and_progress(pool):
    with JudgeWriter(pool) as w:
        w.record("q-build", "graded", entry_id="e-build", grade=1)
        w.record("q-build", "graded", entry_id="e-build", grade=2)   # changed his mind
        w.record("q-build", "graded", entry_id="e-test", grade=0)
        w.record("q-build", "note", entry_id="e-test", note="about tests, not builds")
        assert len(lines(pool)) == 4  # on disk at once, before the session closes
        w.record("q-build", "graded", entry_id="e-port", grade=0)
        w.record("q-weather", "unanswerable")
        w.record("q-deploy", "skip")
    log = read_judgments(pool)
    assert log.states["q-build"].grades == {"e-build": 2, "e-test": 0, "e-port": 0}
    assert log.states["q-build"].notes == {"e-test": "about tests, not builds"}
    assert log.judged_ids == ["q-build", "q-weather"] and log.left == ["q-deploy"]
    assert log.unanswerable("q-weather") and not log.unanswerable("q-build")
    assert log.skipped("q-deploy")
    first = json.loads(lines(pool)[0])
    assert set(first) == {"query_id", "entry_id", "grade", "outcome", "note", "judge", "at"} and first["judge"] == "default"


def test_a_relevant_grade_after_nothing_answers_reopens_and_all_zero_is_unanswerable(pool):
    with JudgeWriter(pool) as w:
        w.record("q-deploy", "unanswerable")
        w.record("q-deploy", "graded", entry_id="e-cjk", grade=2)
        for e in ("e-other", "e-port"):
            w.record("q-weather", "graded", entry_id=e, grade=0)
    log = read_judgments(pool)
    assert not log.unanswerable("q-deploy") and not log.judged("q-deploy")  # e-rtl still ungraded
    assert log.unanswerable("q-weather") and log.judged("q-weather")


def test_a_truncated_last_line_is_reported_ignored_and_cut_before_the_next_click(pool):
    with JudgeWriter(pool) as w:
        w.record("q-build", "graded", entry_id="e-build", grade=2)
    path = pool.folder / "judgments" / "default.jsonl"
    with open(path, "ab") as f:
        f.write(b'{"query_id": "q-build", "entry_id": "e-te')   # a crash mid-line
    log = read_judgments(pool)
    assert log.truncated and "default.jsonl:2: truncated last line ignored" in log.truncated
    assert log.states["q-build"].grades == {"e-build": 2}
    with JudgeWriter(pool) as w:
        assert w.dropped == log.truncated
        w.record("q-build", "graded", entry_id="e-test", grade=1)
    again = read_judgments(pool)
    assert again.truncated is None and again.states["q-build"].grades == {"e-build": 2, "e-test": 1}


@pytest.mark.parametrize("edit, message", [
    ({"grade": 3}, "default.jsonl:2: grade 3 is not 0, 1 or 2"),
    ({"entry_id": "e-nowhere"}, "default.jsonl:2: entry 'e-nowhere' is not in the snapshot"),
    ({"query_id": "q-nowhere"}, "default.jsonl:2: question 'q-nowhere' is not in the pool"),
    ({"grade": "2"}, "default.jsonl:2: grade"),
    ({"extra": 1}, "default.jsonl:2: extra"),
])
def test_a_hand_edited_judgments_file_is_refused_with_file_and_line(pool, edit, message):
    with JudgeWriter(pool) as w:
        w.record("q-build", "graded", entry_id="e-build", grade=2)
        w.record("q-build", "graded", entry_id="e-test", grade=0)
    path = pool.folder / "judgments" / "default.jsonl"
    first, second = path.read_text().splitlines()
    path.write_text(first + "\n" + json.dumps({**json.loads(second), **edit}) + "\n")
    with pytest.raises(JudgingError) as info:
        read_judgments(pool)
    assert isinstance(info.value, PowerContextError) and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_bad_click_is_refused_and_writes_nothing(pool):
    with JudgeWriter(pool) as w:
        with pytest.raises(JudgingError, match="grade 3 is not 0, 1 or 2"):
            w.record("q-build", "graded", entry_id="e-build", grade=3)
        with pytest.raises(JudgingError, match="not in the snapshot"):
            w.record("q-build", "graded", entry_id="e-nowhere", grade=1)
    assert lines(pool) == []
    with pytest.raises(JudgingError, match="bad judge name"):
        JudgeWriter(pool, "../etc")


HOLDER = textwrap.dedent("""
    import sys, time
    from powercontext.eval.judging.judgments import JudgeWriter, read_pool
    w = JudgeWriter(read_pool(sys.argv[1]), sys.argv[2]).open()
    w.record("q-build", "graded", entry_id="e-build", grade=2)
    print("holding", flush=True)
    time.sleep(120)
""")


def test_two_processes_under_one_judge_name_are_refused_never_interleaved(pool):
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(pool.folder), "alice"], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "holding"
        with pytest.raises(JudgeLockedError, match=f"judge 'alice' is already judging .* \\(process {child.pid}\\)"):
            JudgeWriter(pool, "alice").open()
        with pytest.raises(JudgeLockedError):   # the qrels import takes the same lock
            import_qrels(pool, _qrels(pool, "q-build 0 e-test 1\n"), "alice")
        with JudgeWriter(pool, "bob") as w:     # another name judges the same folder independently
            w.record("q-build", "graded", entry_id="e-build", grade=1)
    finally:
        os.kill(child.pid, signal.SIGKILL)      # a kernel that dies releases its judge name
        child.wait()
    with JudgeWriter(pool, "alice") as w:
        w.record("q-build", "graded", entry_id="e-test", grade=0)
    assert [json.loads(x)["entry_id"] for x in lines(pool, "alice")] == ["e-build", "e-test"]


def _qrels(pool, text):
    path = pool.folder.parent / "judge.qrels"
    path.write_text(text)
    return path


def test_qrels_import_keeps_outside_pool_apart_and_marks_all_zero_unanswerable(pool, capsys):
    qrels = _qrels(pool, "q-build 0 e-build 2\nq-build 0 e-other 1\n"
                         "q-weather 0 e-other 0\nq-weather 0 e-port 0\n")
    assert main(["judge", str(pool.folder), "--import", str(qrels), "--judge", "carol"]) == 0
    out = capsys.readouterr().out
    assert "judge carol: imported 4 grades for 2 questions (1 outside the pool, kept apart); 1 questions unanswerable" in out
    assert "judge carol: 1 / 3 questions judged; left: q-build, q-deploy" in out
    log = read_judgments(pool, "carol")
    assert log.outside_pool("q-build") == {"e-other": 1}
    assert log.unanswerable("q-weather") and not log.unanswerable("q-build")


@pytest.mark.parametrize("text, message", [
    ("q-build 0 e-build 2\nq-ghost 0 e-build 1\n", "1 questions are not in the pool (q-ghost); nothing imported"),
    ("q-build 0 e-build 3\n", "judge.qrels:1: grade 3 is not 0, 1 or 2"),
    ("q-build 0 e-build 1\nq-build 0 e-ghost 1\n", "judge.qrels:2: entry 'e-ghost' is not in the snapshot"),
    ("q-build 0 e-build\n", "judge.qrels:1: expected 'QUERY 0 ENTRY GRADE', got 3 fields"),
    ("q-build 0 e-build 1\nq-build 0 e-build 2\n", "judge.qrels:2: q-build e-build is graded twice"),
])
def test_a_bad_qrels_file_is_refused_whole(pool, capsys, text, message):
    qrels = _qrels(pool, text)
    assert main(["judge", str(pool.folder), "--import", str(qrels)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err
    assert not (pool.folder / "judgments" / "default.jsonl").exists()


def test_a_qrels_path_that_cannot_be_read_is_one_short_line(pool, capsys):
    assert main(["judge", str(pool.folder), "--import", str(pool.folder / "nowhere.qrels")]) == 2
    assert "nowhere.qrels: no such qrels file" in capsys.readouterr().err
    assert main(["judge", str(pool.folder), "--import", "q" * 5000]) == 2
    err = capsys.readouterr().err
    assert "(5000 characters): cannot read (File name too long)" in err and len(err) < 300


def test_agreement_kappa_unanswerable_and_disagreements(pool, capsys):
    # pairs both graded: (2,2) (0,1) (0,0) (1,1) (0,0); q-weather: a says unanswerable, b grades e-other 2
    with JudgeWriter(pool, "a") as a:
        for e, g in (("e-build", 2), ("e-test", 0), ("e-port", 0)):
            a.record("q-build", "graded", entry_id=e, grade=g)
        a.record("q-deploy", "graded", entry_id="e-cjk", grade=1)
        a.record("q-deploy", "graded", entry_id="e-rtl", grade=0)
        a.record("q-weather", "unanswerable")
    with JudgeWriter(pool, "b") as b:
        for e, g in (("e-build", 2), ("e-test", 1), ("e-port", 0)):
            b.record("q-build", "graded", entry_id=e, grade=g)
        b.record("q-deploy", "graded", entry_id="e-cjk", grade=1)
        b.record("q-deploy", "graded", entry_id="e-rtl", grade=0)
        b.record("q-weather", "graded", entry_id="e-other", grade=2)
        b.record("q-weather", "graded", entry_id="e-port", grade=0)
    result = agreement(pool, "a", "b")
    expected = cohen_kappa_score([2, 0, 0, 1, 0], [2, 1, 0, 1, 0])
    assert result.pairs == 5 and result.kappa == pytest.approx(expected) and 0 < result.kappa < 1
    assert result.questions == 3 and result.unanswerable_agreement == pytest.approx(2 / 3)
    assert [(d.query_id, d.entry_id, d.a, d.b) for d in result.disagreements] == [
        ("q-build", "e-test", 0, 1), ("q-weather", None, "unanswerable", "answerable")]
    assert main(["agreement", str(pool.folder)]) == 0
    out = capsys.readouterr().out
    assert f"a vs b: Cohen's kappa {expected:.3f} on 5 pairs graded by both" in out
    assert "q-weather (question): a=unanswerable b=answerable" in out


def test_agreement_needs_two_judges(pool, capsys):
    with pytest.raises(JudgingError, match="agreement needs two judges; found 0"):
        folder_agreement(pool)
    assert main(["agreement", str(pool.folder)]) == 2
    assert "agreement needs two judges" in capsys.readouterr().err


def test_a_pool_folder_that_is_not_one_is_refused(tmp_path, pool):
    with pytest.raises(JudgingError, match="no such pool folder"):
        read_pool(tmp_path / "nowhere")
    with pytest.raises(JudgingError, match=r"\(100\d+ characters\): not a pool folder \(File name too long\)"):
        read_pool(tmp_path / ("x" * 100_000))
    (pool.folder / "queries.jsonl").write_bytes(b'{"id": "q\xff"}\n')
    with pytest.raises(JudgingError, match="queries.jsonl: not UTF-8"):
        read_pool(pool.folder)
