"""Issue 44 item 6: why a query failed, from the run folder alone. A real sweep of the
tiny corpus on SQLite and OceanBase (the deterministic hashed embedder of the harness
tests), read back with ``harness.load`` and no database: ``per_query`` carries each
question's text, and ``run.explain(query_id, policy=…)`` gives every candidate's
signals, verdict, place among the hits and the reason in ``admission.explain``'s own
words."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from powercontext.errors import PowerContextError
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy

from powercontext.eval import harness
from powercontext.eval.scoring.explain import EXPLAINED, ExplainError, Explanation
from powercontext.eval.running.retrieval import channels_of, read_cache
from powercontext.eval.scoring.sweep import Grid

from .fakes import QRELS, QUERIES, HashEmbedding, write_corpus

BACKENDS = ("sqlite", "oceanbase")
GRID = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8), families=("floors", "centred+cross-script+coverage"),
            vector_min_centred=(0.05, 0.15, 0.25))


@pytest.fixture(scope="module")
def run(tmp_path_factory, oceanbase_url):
    root = tmp_path_factory.mktemp("explain")
    mp = pytest.MonkeyPatch()
    mp.setenv("POWERCONTEXT_OCEANBASE_URL", oceanbase_url)
    try:
        result = harness.sweep(write_corpus(root / "tiny"), backends=BACKENDS, modes=("fts", "hybrid"), grid=GRID,
                               out=root / "run", embedding=HashEmbedding(), embedding_cache=root / "emb",
                               progress=False)
    finally:
        mp.undo()
    return result, root / "run"


def test_per_query_carries_each_questions_text(run):
    _, out = run
    per_query = harness.load(out).per_query
    texts = dict(zip(per_query["query_id"], per_query["text"]))
    assert texts == {q["id"]: q["text"] for q in QUERIES}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("policy", EXPLAINED)
def test_explain_reads_the_folder_alone_and_agrees_with_the_replay_and_admission(run, backend, policy):
    result, out = run
    folder = harness.load(out)
    cached, _, _ = read_cache(out)  # the candidates as retrieved: the independent path to the reasons
    named = {"default": result.collected.default_policy, "recommended": result.recommended("hybrid")}[policy]
    per_query = folder.per_query
    for q in QUERIES:
        why = folder.explain(q["id"], policy=policy, backend=backend)
        assert isinstance(why, Explanation) and isinstance(why, pd.DataFrame)
        assert list(why.columns) == ["channel", "rank", "entry", "grade", "admitted", "hit", "signals", "reason"]
        # the hits are exactly the ranking per_query recorded for that policy, in order
        row = per_query[(per_query["query_id"] == q["id"]) & (per_query["backend"] == backend)
                        & (per_query["mode"] == "hybrid") & (per_query["policy"] == policy)].iloc[0]
        hits = why[why["hit"] > 0].drop_duplicates("entry").sort_values("hit")
        assert tuple(hits["entry"]) == tuple(row["ranking"]), q["id"]
        # each reason is admission.explain's, on the candidates the database returned
        rows = cached[(cached["backend"] == backend) & (cached["mode"] == "hybrid") & (cached["query_id"] == q["id"])]
        channels = {c: admission.within_pool(cands, named.pool_size(8)) for c, cands in channels_of(rows, "hybrid").items()}
        words = {(d.candidate.channel, d.candidate.rank): (d.admitted, d.reason) for d in admission.explain(channels, named)}
        assert len(why) == len(words), q["id"]
        for r in why.itertuples():
            assert words[(r.channel, r.rank)][1] == r.reason
            gate = admission.gate(channels, named)
            assert r.admitted == (words[(r.channel, r.rank)][0] and gate is None)
        # the grade is the corpus's judgement of that entry
        assert set(why.loc[why["grade"] > 0, "entry"]) <= {e for qid, e, _ in QRELS if qid == q["id"]}
        text = repr(why)
        assert text.splitlines()[0] == f"{q['id']}: {q['text']}"
        assert ("unanswerable" in text.splitlines()[1]) == (not bool(row["positive"]))


def test_the_explain_table_is_small_and_a_failure_is_worded(run):
    result, out = run
    size = (out / "explain.parquet").stat().st_size
    assert len(result.explain) > 100 and size < 40 * len(result.explain) + 16_000, size
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<section id='failures'>" in page and "harness.load(folder).explain(query_id" in page
    folder = harness.load(out)
    # tny-q009 has no answer: the default either admits nothing or the report lists it as a false admission
    why = folder.explain("tny-q009", mode="fts")
    assert why["grade"].eq(0).all()
    if (why["hit"] > 0).any():
        assert "false admission" in repr(why) and "tny-q009" in page
    else:
        assert "correctly no hit" in repr(why)


def test_bad_names_get_the_typed_error_with_did_you_mean(run):
    _, out = run
    folder = harness.load(out)
    cases = [(dict(query_id="tny_q009"), "unknown query id 'tny_q009' — did you mean 'tny-q009'?"),
             (dict(query_id="tny-q005", policy="defualt"), "unknown policy 'defualt' — did you mean 'default'?"),
             (dict(query_id="tny-q005", backend="sqlit"), "unknown database 'sqlit' — did you mean 'sqlite'?"),
             (dict(query_id="tny-q005", mode="vectr"), "unknown mode 'vectr'")]
    for kwargs, said in cases:
        with pytest.raises(ExplainError) as caught:
            folder.explain(**kwargs)
        assert isinstance(caught.value, PowerContextError) and said in str(caught.value)
        assert "\n" not in str(caught.value)


def test_a_folder_without_the_explain_table_says_how_to_get_it(run, tmp_path):
    _, out = run
    copy = tmp_path / "old"
    shutil.copytree(out, copy)
    (copy / "explain.parquet").unlink()
    with pytest.raises(ExplainError, match="no explain table.*rerun the sweep"):
        harness.load(copy).explain("tny-q001")


def test_policies_are_read_from_the_folder_not_from_the_library(run):
    """The run's default is stored with the run: a later change of the library's
    default must not re-word an old run's verdicts."""
    result, out = run
    stored = harness.load(out).explain_policies
    for mode in ("fts", "hybrid"):
        row = stored[(stored["mode"] == mode) & (stored["policy"] == "default")].iloc[0]
        assert AdmissionPolicy.from_dict(json.loads(row["json"])) == result.collected.default_policy
        assert int(row["limit"]) == result.objective.limit
