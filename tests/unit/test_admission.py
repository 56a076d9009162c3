import pytest

from powercontext.memory import admission, fusion
from powercontext.memory.admission import AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

REF = ArtifactRef("mem_art_A", 1)


def fts(entry, rank, matched, n):
    return ChannelCandidate("fts", rank, REF, entry, f"v_{entry}", "0" * 64, "fact", entry,
                            matched_terms=tuple(f"t{i}" for i in range(matched)), query_term_count=n)


def vec(entry, rank, cosine, ref=REF):
    return ChannelCandidate("vector", rank, ref, entry, f"v_{entry}", "0" * 64, "fact", entry, cosine=cosine)


@pytest.mark.parametrize(
    "n, need",
    [(1, 1), (2, 1), (3, 2), (4, 2), (8, 2), (9, 3), (12, 3), (13, 4)],
)
def test_required_terms_follow_min_terms_and_coverage(n, need):
    assert admission.INITIAL_POLICY.required_terms(n) == need


@pytest.mark.parametrize("n, need, hybrid_need", [(1, 1, 1), (2, 1, 1), (3, 3, 3), (9, 3, 4), (10, 3, 4),
                                                  (11, 4, 4), (12, 4, 5)])
def test_calibrated_defaults(n, need, hybrid_need):
    """The default chosen leave-one-corpus-out (reports/admission_study): fts-only floors
    3 / 0.30, beside the vector channel 4 / 0.34; vector admission on the centred
    cosine ≥ 0.31 with no raw floor, cross-script ≥ 2 terms, uncovered scripts refused."""
    p = AdmissionPolicy()
    assert p.required_terms(n) == need
    assert p.required_terms(n, hybrid=True) == hybrid_need
    assert (p.vector_min_cosine, p.vector_min_centred, p.cross_script_min_terms, p.vector_uncovered) == (
        -1.0, 0.31, 2, "refuse")


def test_coverage_boundary_is_inclusive_despite_float_error():
    # 0.3 × 10 = 3.0000000000000004 in binary floating point: still 3 terms.
    assert AdmissionPolicy.floors(fts_min_coverage=0.3).required_terms(10) == 3


def test_required_terms_never_exceed_the_query():
    assert AdmissionPolicy.floors(fts_min_terms=5).required_terms(3) == 3


def test_fts_admission_boundaries():
    policy = admission.INITIAL_POLICY
    admitted = admission.admit({"fts": [fts("a", 1, 1, 5), fts("b", 2, 2, 5), fts("c", 3, 1, 2)]}, policy)
    assert [c.entry_id for c in admitted["fts"]] == ["b", "c"]


def test_vector_admission_boundary_is_inclusive():
    policy = AdmissionPolicy.floors(vector_min_cosine=0.3)
    admitted = admission.admit({"vector": [vec("a", 1, 0.3), vec("b", 2, 0.2999)]}, policy)
    assert [c.entry_id for c in admitted["vector"]] == ["a"]


def test_rrf_scores_are_hand_computed():
    hits = fusion.rrf({"fts": [fts("a", 1, 2, 2), fts("b", 2, 2, 2)], "vector": [vec("b", 1, 0.9), vec("a", 2, 0.8)]}, limit=8)
    assert [h.entry_id for h in hits] == ["a", "b"]  # equal scores: tie-break by entry_id
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert hits[1].score == pytest.approx(1 / 62 + 1 / 61)
    assert hits[0].matched_by == ("fts", "vector")


def test_rank_counts_only_admitted_candidates():
    policy = admission.INITIAL_POLICY
    hits = admission.fuse({"fts": [fts("rejected", 1, 1, 8), fts("kept", 2, 3, 8)]}, policy, limit=8)
    assert [(h.entry_id, h.score) for h in hits] == [("kept", pytest.approx(1 / 61))]


def test_single_channel_contribution_and_matched_by():
    hits = fusion.rrf({"fts": [fts("a", 1, 2, 2)], "vector": [vec("b", 1, 0.9), vec("a", 2, 0.5)]}, limit=8)
    by_id = {h.entry_id: h for h in hits}
    assert by_id["b"].score == pytest.approx(1 / 61) and by_id["b"].matched_by == ("vector",)
    assert by_id["a"].score == pytest.approx(1 / 61 + 1 / 62)


def test_tie_break_orders_memory_then_entry_then_version_as_utf8_bytes():
    other = ArtifactRef("mem_art_B", 1)
    hits = fusion.rrf({"vector": [vec("z", 1, 0.9, other)], "fts": [fts("é", 1, 2, 2)]}, limit=8)
    # both score 1/61; mem_art_A < mem_art_B decides before entry ids are compared
    assert [h.memory_ref.artifact_id for h in hits] == ["mem_art_A", "mem_art_B"]
    assert fusion.tie_break_key(("m", "Z", "v")) < fusion.tie_break_key(("m", "a", "v"))


def test_limit_truncates_after_fusion_and_rejected_never_fill():
    policy = AdmissionPolicy.floors(vector_min_cosine=0.5)
    cands = {"vector": [vec(f"e{i}", i + 1, 0.9 if i < 2 else 0.1) for i in range(10)]}
    assert len(admission.fuse(cands, policy, limit=8)) == 2
    assert len(admission.fuse(cands, policy, limit=1)) == 1


def test_pool_size():
    assert AdmissionPolicy().pool_size(8) == 32
    assert AdmissionPolicy().pool_size(10) == 40


def test_decisions_say_which_threshold():
    (d,) = admission.explain({"fts": [fts("a", 1, 1, 8)]}, admission.INITIAL_POLICY)
    assert not d.admitted and "needs 2" in d.reason and "fts_min_terms=2" in d.reason


@pytest.mark.parametrize("bad", [dict(fts_min_terms=0), dict(fts_min_coverage=1.5), dict(vector_min_cosine=2.0), dict(rrf_k=-1)])
def test_policy_refuses_nonsense(bad):
    with pytest.raises(ValueError):
        AdmissionPolicy(**bad)


def test_vector_candidate_without_cosine_is_rejected_not_crashing():
    (d,) = admission.explain({"vector": [vec("a", 1, None)]}, AdmissionPolicy.floors())
    assert not d.admitted and "no cosine" in d.reason
