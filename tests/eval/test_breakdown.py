"""Per-tag and per-language results with CIs: ``breakdown_frame`` on a hand-made table
of a tiny corpus equals the hand computation (counts, means, the answered share, the
bootstrap CIs, the few-queries flags), the batched bootstrap equals the one-row
bootstrap, and a real sweep's ``by_tag()`` and report section carry them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from powercontext.eval.scoring import metrics as M
from powercontext.eval.presenting.report import breakdown_table, render_html
from powercontext.eval.scoring.tables import MIN_QUERIES, breakdown_frame

# A tiny corpus of six queries: three answerable, three not; per query the metrics two
# policies scored (only the columns breakdown_frame reads).
QUERIES = [  # query_id, corpus, lang, split, tags, positive
    ("q1", "c", "en", "test", ("paraphrase",), True),
    ("q2", "c", "zh", "test", ("paraphrase", "cross-lingual"), True),
    ("q3", "c", "en", "dev", ("lexical",), True),
    ("q4", "c", "en", "test", ("near-miss",), False),
    ("q5", "c", "zh", "test", ("near-miss", "cross-lingual"), False),
    ("q6", "c", "ja", "dev", ("negative",), False),
]
SCORES = {  # policy: {query: (ndcg@10, hits)}
    "default": {"q1": (1.0, 1), "q2": (0.0, 0), "q3": (0.5, 2), "q4": (0.0, 1), "q5": (0.0, 0), "q6": (0.0, 0)},
    "recommended": {"q1": (1.0, 2), "q2": (0.6, 1), "q3": (0.5, 2), "q4": (0.0, 1), "q5": (0.0, 1), "q6": (0.0, 1)},
}


def per_query() -> pd.DataFrame:
    rows = []
    for policy, scores in SCORES.items():
        for qid, corpus, lang, split, tags, positive in QUERIES:
            ndcg, hits = scores[qid]
            row = {m: 0.0 for m in M.METRIC_NAMES}
            row.update({"ndcg@10": ndcg if positive else 0.0, "hits": float(hits),
                        "false_admission": float(hits > 0), "empty_answer": float(hits == 0)})
            rows.append(dict(backend="sqlite", mode="hybrid", policy=policy, query_id=qid, corpus=corpus, lang=lang,
                             split=split, tags=tags, positive=positive, **row))
    return pd.DataFrame(rows)


def row(b: pd.DataFrame, policy: str, facet: str, value: str, split: str = "all") -> pd.Series:
    r = b[(b.policy == policy) & (b.facet == facet) & (b.value == value) & (b.split == split)]
    assert len(r) == 1
    return r.iloc[0]


def test_breakdown_by_tag_and_language_equals_the_hand_computation():
    b = breakdown_frame(per_query())
    # paraphrase: q1 and q2, both answerable. default: nDCG (1 + 0)/2, answered 1 of 2
    p = row(b, "default", "tag", "paraphrase")
    assert (p.queries, p.positive, p["empty"]) == (2, 2, 0)
    assert p["ndcg@10"] == pytest.approx(0.5) and p["answered"] == pytest.approx(0.5)
    assert np.isnan(p["false_admission"]) and np.isnan(p["false_admission_lo"])
    # two values 0 and 1: a resampled mean is 0, ½ or 1 with odds ¼ ½ ¼, so the 2.5 % and
    # 97.5 % quantiles of 2,000 resamples are 0 and 1
    assert (p["ndcg@10_lo"], p["ndcg@10_hi"]) == (0.0, 1.0) and (p["answered_lo"], p["answered_hi"]) == (0.0, 1.0)
    # near-miss: q4 and q5, unanswerable. default admitted something for q4 only
    n = row(b, "default", "tag", "near-miss")
    assert (n.queries, n.positive, n["empty"]) == (2, 0, 2) and n["false_admission"] == pytest.approx(0.5)
    assert (n["false_admission_lo"], n["false_admission_hi"]) == (0.0, 1.0) and np.isnan(n["answered"])
    # recommended admitted something for both: 1 [1, 1]
    r = row(b, "recommended", "tag", "near-miss")
    assert (r["false_admission"], r["false_admission_lo"], r["false_admission_hi"]) == (1.0, 1.0, 1.0)
    # cross-lingual: q2 (answerable) and q5 (not); a query counts under each of its tags
    x = row(b, "recommended", "tag", "cross-lingual")
    assert (x.queries, x.positive, x["empty"], x["ndcg@10"], x["answered"], x["false_admission"]) == (2, 1, 1, 0.6, 1.0, 1.0)
    assert (x["ndcg@10_lo"], x["ndcg@10_hi"]) == (0.6, 0.6)  # one query: the interval is the point
    # by language: zh = q2, q5; en = q1, q3, q4
    zh = row(b, "default", "lang", "zh")
    assert (zh.positive, zh["empty"], zh["ndcg@10"], zh["answered"], zh["false_admission"]) == (1, 1, 0.0, 0.0, 0.0)
    en = row(b, "default", "lang", "en")
    assert (en.positive, en["empty"]) == (2, 1) and en["ndcg@10"] == pytest.approx(0.75)
    assert en["answered"] == 1.0 and en["false_admission"] == 1.0
    # the split cuts: on test, en holds q1 and q4 only
    en_test = row(b, "default", "lang", "en", "test")
    assert (en_test.queries, en_test["ndcg@10"], en_test["false_admission"]) == (2, 1.0, 1.0)
    # every rate here rests on fewer than MIN_QUERIES queries
    assert b["few_positive"].all() and b["few_empty"].all() and MIN_QUERIES == 20


def test_breakdown_cis_are_the_summary_bootstrap_and_few_flags_clear_at_twenty():
    rng = np.random.default_rng(7)
    big = []
    for i in range(30):  # 25 answerable, 5 not, one tag
        positive = i < 25
        for policy in ("default", "recommended"):
            hits = int(rng.integers(0, 3))
            row_ = {m: 0.0 for m in M.METRIC_NAMES}
            row_.update({"ndcg@10": float(rng.random()) if positive else 0.0, "hits": float(hits),
                         "false_admission": float(hits > 0), "empty_answer": float(hits == 0)})
            big.append(dict(backend="sqlite", mode="fts", policy=policy, query_id=f"q{i:02d}", corpus="c", lang="en",
                            split="test", tags=("near-miss",), positive=positive, **row_))
    pq = pd.DataFrame(big)
    b = breakdown_frame(pq)
    for policy in ("default", "recommended"):
        r = row(b, policy, "tag", "near-miss")
        mine = pq[(pq.policy == policy)].sort_values("query_id")
        pos, neg = mine[mine.positive], mine[~mine.positive]
        assert (r["ndcg@10_lo"], r["ndcg@10_hi"]) == pytest.approx(M.bootstrap_ci(pos["ndcg@10"].to_numpy()), abs=1e-12)
        assert (r["answered_lo"], r["answered_hi"]) == pytest.approx(
            M.bootstrap_ci(1 - pos["empty_answer"].to_numpy()), abs=1e-12)
        assert (r["false_admission_lo"], r["false_admission_hi"]) == pytest.approx(
            M.bootstrap_ci(neg["false_admission"].to_numpy()), abs=1e-12)
        assert not r["few_positive"] and r["few_empty"]


def test_batched_bootstrap_equals_the_one_row_bootstrap():
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 60):
        x = rng.random((4, n))
        lo, hi = M.bootstrap_ci_rows(x)
        for i in range(4):
            assert (lo[i], hi[i]) == pytest.approx(M.bootstrap_ci(x[i]), abs=1e-12)
    lo, hi = M.bootstrap_ci_rows(np.empty((3, 0)))
    assert np.isnan(lo).all() and np.isnan(hi).all()


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from powercontext.eval import harness
    from powercontext.eval.scoring.sweep import Grid

    from .fakes import HashEmbedding, write_corpus

    root = tmp_path_factory.mktemp("bytag")
    corpus = write_corpus(root / "datasets" / "tiny")
    return harness.sweep(corpus, backends=("sqlite",), modes=("fts", "vector", "hybrid"),
                         grid=Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8, 10)), out=root / "run",
                         embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=False)


def test_by_tag_of_a_sweep_matches_its_per_query_table(swept):
    t = swept.by_tag(mode="hybrid")  # the tiny corpus is cross-validated: all queries
    assert set(t["policy"]) == {"default", "recommended"} and set(t["backend"]) == {"sqlite"}
    assert {"paraphrase", "lexical", "negative", "forgotten", "cjk"} <= set(t["tag"])
    pq = swept.per_query
    for _, r in t.iterrows():
        mine = pq[(pq["mode"] == "hybrid") & (pq.policy == r.policy) & pq.tags.map(lambda tags: r.tag in tags)]
        pos, neg = mine[mine.positive], mine[~mine.positive]
        assert (r.positive, r["empty"]) == (len(pos), len(neg))
        if len(pos):
            assert r["ndcg@10"] == pytest.approx(pos["ndcg@10"].mean())
            assert r["answered"] == pytest.approx((pos["hits"] > 0).mean())
            assert r["ndcg@10_lo"] <= r["ndcg@10"] <= r["ndcg@10_hi"]
        if len(neg):
            assert r["false_admission"] == pytest.approx((neg["hits"] > 0).mean())
    langs = swept.by_tag("lang", policies=("default",), mode="vector")
    assert set(langs["lang"]) == {"en", "zh"} and langs["queries"].sum() == 16


def test_the_report_section_shows_cis_and_marks_thin_rates(swept):
    table = breakdown_table(swept, "sqlite", "hybrid", "all")
    paraphrase = table[(table.facet == "tag") & (table.value == "paraphrase")].iloc[0]
    r = swept.by_tag(mode="hybrid", policies=("default",)).set_index("tag").loc["paraphrase"]
    assert paraphrase["default: nDCG@10"] == f"{r['ndcg@10']:.3f} [{r['ndcg@10_lo']:.3f}, {r['ndcg@10_hi']:.3f}] ⚠"
    assert paraphrase["default: false adm."] == "—"  # no unanswerable paraphrase
    assert list(table.facet.unique()) == ["tag", "lang", "corpus"]
    page = render_html(swept)
    section = page[page.index("id='breakdown'"):]
    assert "Which questions fail" in section and "answered" in section and "fewer than 20 queries" in section
