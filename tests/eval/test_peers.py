"""Peers' defaults on the frontier of a real sweep (a tiny corpus on SQLite, the hashed
test embedder in unit tests only): each reference is replayed in exactly its modes, at
its own top-k; a no-cutoff peer equals the sweep's own no-admission point at that
limit, the RFC constants equal the summary's ``initial``; a mapped policy replayed
equals the same policy evaluated through ``admission.fuse`` itself; the report, the
comparison of embedding profiles and the tuner show them."""

from __future__ import annotations

import pandas as pd
import pytest

from powercontext.eval import harness
from powercontext.eval.scoring.peers import peers_side_by_side, peers_table
from powercontext.eval.scoring.references import REFERENCES, reference
from powercontext.eval.presenting.report import SECTIONS, render_html, section_peers
from powercontext.eval.scoring.sweep import Grid

from .fakes import HashEmbedding, write_corpus

GRID = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8, 10))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("peers") / "datasets" / "tiny")


@pytest.fixture(scope="module")
def swept(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("peers-run")
    return harness.sweep(corpus, backends=("sqlite",), modes=("fts", "vector", "hybrid"), grid=GRID, out=root / "run",
                         embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=False)


def pooled(peers: pd.DataFrame, mode: str, name: str, split: str = "all") -> pd.Series:
    r = peers[(peers["mode"] == mode) & (peers.reference == name) & (peers.corpus == "all") & (peers.split == split)]
    assert len(r) == 1
    return r.iloc[0]


def test_each_reference_is_replayed_in_its_modes_at_its_own_top_k(swept):
    p = swept.peers
    for mode in ("fts", "vector", "hybrid"):
        shown = set(p[(p["mode"] == mode) & (p.kind == "peer")].reference)
        assert shown == {r.name for r in REFERENCES if mode in r.modes}
        assert set(p[(p["mode"] == mode) & (p.kind == "this project")].reference) == {"default", "recommended"}
    assert set(p.corpus) == {"all", "tiny"} and set(p.split) == {"all", "dev", "test"}
    mem0 = pooled(p, "vector", "mem0")
    assert (mem0.library_limit, mem0.limit_used) == (20, 10)  # candidates were retrieved for limit 10
    assert pooled(p, "vector", "llamaindex").limit_used == 2 and pooled(p, "vector", "rfc-initial").limit_used == 8
    for _, r in p[p.positive > 0].iterrows():
        assert r["ndcg@10_lo"] - 1e-12 <= r["ndcg@10"] <= r["ndcg@10_hi"] + 1e-12
    assert pooled(p, "vector", "chroma").label == "cos: no cutoff"


def test_peers_land_where_the_sweep_and_summary_put_the_same_policy(swept):
    p, s = swept.peers, swept.sweep
    # a no-cutoff library at k = 10 is the sweep's no-admission point at limit 10
    point = s[(s["mode"] == "vector") & (s.family == "floors") & (s.vector_min_cosine == -1.0) & (s.limit == 10)
              & (s.corpus == "all") & (s.split == "all")].iloc[0]
    for name in ("chroma", "letta", "langmem", "haystack", "cognee"):
        r = pooled(p, "vector", name)
        assert (r["ndcg@10"], r["false_admission"], r["hits"]) == pytest.approx(
            (point["ndcg@10"], point["false_admission"], point["hits"]))
    # the RFC's constants at the run's limit are the summary's "initial"
    summary = swept.summary
    for mode in ("fts", "vector", "hybrid"):
        initial = summary[(summary["mode"] == mode) & (summary.policy == "initial") & (summary.split == "all")].iloc[0]
        r = pooled(p, mode, "rfc-initial")
        assert (r["ndcg@10"], r["false_admission"], r["empty_answer"]) == pytest.approx(
            (initial["ndcg@10"], initial["false_admission"], initial["empty_answer"]))
        default = summary[(summary["mode"] == mode) & (summary.policy == "default") & (summary.split == "all")].iloc[0]
        assert pooled(p, mode, "default")["ndcg@10"] == pytest.approx(default["ndcg@10"])
    # a high cosine cutoff tuned for another model answers nothing here
    assert pooled(p, "vector", "langchain-threshold")["empty_answer"] == 1.0


@pytest.mark.parametrize("name, mode", [("graphiti", "hybrid"), ("mem0", "vector"), ("llamaindex", "vector")])
def test_a_mapped_policy_replayed_equals_admission_fuse(swept, corpus, tmp_path, name, mode):
    """harness.run evaluates one policy through admission.fuse on freshly retrieved
    candidates (no array replay): the peer's row must be the same figures."""
    ref = reference(name)
    limit = min(ref.limit, 10)
    _, summary = harness.run(corpus, policy=ref.policy, modes=(mode,), limit=limit, embedding=HashEmbedding(),
                             embedding_cache=tmp_path / "emb", progress=False)
    online = summary[summary.split == "all"].iloc[0]
    r = pooled(swept.peers, mode, name)
    assert (r["ndcg@10"], r["false_admission"], r["empty_answer"], r["hits"]) == pytest.approx(
        (online["ndcg@10"], online["false_admission"], online["empty_answer"], online["hits"]))


def test_the_report_places_every_peer_and_cites_its_source(swept):
    assert section_peers in SECTIONS
    page = render_html(swept)
    section = page[page.index("id='peers'"):page.index("</section>", page.index("id='peers'"))]
    for ref in REFERENCES:
        assert f">{ref.name}<" in section
        assert ref.source.split(" ")[0].split(";")[0] in section  # the cited source
    assert section.count("<img") == 2 and "model-specific" in section and "test-hash-64" in section
    table = peers_table(swept.peers, "all", mode="vector")
    assert list(table.columns[:5]) == ["backend", "mode", "reference", "k", "policy"] and "pooled" in table.columns
    mem0 = table[table.reference == "mem0"].iloc[0]
    assert mem0.k == "20 (replayed at 10)" and mem0.pooled.count(" / ") == 1


def test_no_peers_no_section_and_profiles_side_by_side(swept):
    class Bare:
        peers = pd.DataFrame()

    assert section_peers(Bare()) is None
    side = peers_side_by_side({"a": swept, "b": swept})
    assert list(side.columns) == ["backend", "mode", "reference", "k", "nDCG / FA a", "nDCG / FA b"]
    r = side[(side["mode"] == "vector") & (side.reference == "chroma")].iloc[0]
    expected = pooled(swept.peers, "vector", "chroma")
    assert r["nDCG / FA a"] == f"{expected['ndcg@10']:.3f} / {expected['false_admission']:.3f}" and r.k == 10
