"""Widget behaviour through widget state: move a control, assert what is shown."""

from __future__ import annotations

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
    assert w.error is None and w.status.value == "" and w.hits.text.tolist() == [PUSH]  # PORT is forgotten


def test_widgets_accept_revisions_and_default_to_the_magics_runner(history):
    svc, runner, mid, _ = history
    head = runner.run(svc.head(mid))
    w = ManifestInspector(svc, head)  # no runner given: the shared private loop
    assert w.runner is runner and w.revision.value == 3
    old = runner.run(svc.revision(pc.ArtifactRef(mid, 1)))
    a = AdmissionInspector(svc, [old], query="make test push")  # always searches the current head
    assert a.error is None and a.hits.memory.tolist() == [f"{mid}@3"]


def test_threshold_tuner_follows_its_sliders():
    import pandas as pd

    from powercontext.magics.widgets import ThresholdTuner

    rows = []
    for cov in (0.0, 0.25, 0.5):
        for terms in (1, 2):
            for limit in (3, 8):
                rows.append(dict(backend="sqlite", mode="fts", corpus="all", split="dev", fts_min_terms=terms,
                                 fts_min_coverage=cov, vector_min_cosine=float("nan"), limit=limit,
                                 **{"ndcg@10": 0.5 - cov / 2 + terms / 100 + limit / 1000, "false_admission": 1 - cov}))
    for cos in (0.3, 0.5):
        rows.append(dict(backend="sqlite", mode="vector", corpus="all", split="dev", fts_min_terms=float("nan"),
                         fts_min_coverage=float("nan"), vector_min_cosine=cos, limit=8,
                         **{"ndcg@10": 0.7 - cos, "false_admission": 0.9 - cos}))
    sweep = pd.DataFrame(rows)
    rec = pd.DataFrame([dict(mode="fts", fts_min_terms=2, fts_min_coverage=0.25, vector_min_cosine=0.3)])

    class Result:  # the shape harness.sweep returns
        pass

    result = Result()
    result.sweep, result.recommendations = sweep, rec
    t = ThresholdTuner(result)
    # starts at the recommendation
    assert (t.point.fts_min_terms, t.point.fts_min_coverage, t.point.limit) == (2, 0.25, 8)
    assert t.point["ndcg@10"] == pytest.approx(0.5 - 0.125 + 0.02 + 0.008)
    t.fts_min_coverage.value = 0.5
    assert t.point["false_admission"] == pytest.approx(0.5) and "0.500" in t.table.value
    assert list(t.curve.fts_min_coverage) == [0.0, 0.25, 0.5] and set(t.curve.fts_min_terms) == {2}
    t.limit.value = 3
    assert t.point.limit == 3 and set(t.curve.limit) == {3}
    t.mode.value = "vector"
    assert t.fts_min_terms.disabled and not t.vector_min_cosine.disabled
    assert list(t.curve.vector_min_cosine) == [0.3, 0.5] and t.point.limit == 8
    t.vector_min_cosine.value = 0.5
    assert t.point["ndcg@10"] == pytest.approx(0.2) and "vector_min_cosine=0.5" in repr(t)
    with pytest.raises(TypeError):
        ThresholdTuner(pd.DataFrame({"x": [1]}))


def test_threshold_tuner_redraws_its_plot_as_png():
    import pandas as pd

    from powercontext.magics.widgets import ThresholdTuner

    sweep = pd.DataFrame([dict(backend="sqlite", mode="vector", corpus="all", split="dev", fts_min_terms=float("nan"),
                               fts_min_coverage=float("nan"), vector_min_cosine=c, limit=8,
                               **{"ndcg@10": 1 - c, "false_admission": 1 - c}) for c in (0.2, 0.4)])
    t = ThresholdTuner(sweep)
    first = bytes(t.plot.value)
    assert first.startswith(b"\x89PNG")
    t.vector_min_cosine.value = 0.2 if t.point.vector_min_cosine == 0.4 else 0.4
    assert bytes(t.plot.value).startswith(b"\x89PNG") and bytes(t.plot.value) != first
