"""Admission families beyond the RFC's floors: centred cosine, the cross-script FTS
rule, the whole-query gate, language-aware vector admission, and policy JSON."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import powercontext as pc
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

REF = ArtifactRef("mem_art_A", 1)
FLOORS_OFF = dict(fts_min_terms=1, fts_min_coverage=0.0, vector_min_cosine=-1.0)


def fts(entry, rank, matched, n, script="latin", query_script="latin"):
    return ChannelCandidate("fts", rank, REF, entry, f"v_{entry}", "0" * 64, "fact", entry,
                            matched_terms=tuple(f"t{i}" for i in range(matched)), query_term_count=n,
                            script=script, query_script=query_script)


def vec(entry, rank, cosine, centred=None, covered=None, script="latin", query_script="latin"):
    return ChannelCandidate("vector", rank, REF, entry, f"v_{entry}", "0" * 64, "fact", entry, cosine=cosine,
                            centred=centred, covered=covered, script=script, query_script=query_script)


def ids(admitted, channel):
    return [c.entry_id for c in admitted[channel]]


# ------------------------------------------------------------------- defaults


def test_the_default_is_the_transferring_family_and_floors_turns_every_family_off():
    p = AdmissionPolicy()
    assert (p.vector_min_centred, p.cross_script_min_terms, p.gate_min, p.vector_uncovered) == (0.31, 2, None, "refuse")
    assert p.family == "centred+cross-script+coverage+hybrid-floors"
    f = AdmissionPolicy.floors()
    assert (f.vector_min_centred, f.cross_script_min_terms, f.gate_min, f.vector_uncovered) == (None, None, None, "admit")
    assert (f.fts_min_terms, f.fts_min_coverage, f.vector_min_cosine, f.family) == (3, 0.30, 0.50, "floors")
    assert f.fts_floors(hybrid=True) == f.fts_floors() == (3, 0.30)
    assert admission.INITIAL_POLICY.family == admission.NO_ADMISSION.family == "floors"
    assert AdmissionPolicy.rfc_initial() == admission.INITIAL_POLICY
    r = AdmissionPolicy.rfc_initial()
    assert (r.fts_min_terms, r.fts_min_coverage, r.vector_min_cosine) == (2, 0.25, 0.30)


def test_family_names_the_rules_that_are_on():
    p = AdmissionPolicy.floors(vector_min_centred=0.2, cross_script_min_terms=2, gate_min=0.1, vector_uncovered="refuse")
    assert p.family == "centred+cross-script+gate+coverage"


# ------------------------------------------------------------------- centred cosine


def test_centred_threshold_is_inclusive_and_conjunctive_with_the_raw_floor():
    p = AdmissionPolicy.floors(vector_min_cosine=0.3, vector_min_centred=0.25)
    got = admission.admit({"vector": [vec("a", 1, 0.6, 0.25), vec("b", 2, 0.6, 0.2499), vec("c", 3, 0.29, 0.5)]}, p)
    assert ids(got, "vector") == ["a"]


def test_centred_rule_rejects_a_candidate_without_the_signal():
    (d,) = admission.explain({"vector": [vec("a", 1, 0.9, None)]}, AdmissionPolicy.floors(vector_min_centred=0.1))
    assert not d.admitted and "no centred signal" in d.reason


def test_centred_reason_names_both_signals():
    (d,) = admission.explain({"vector": [vec("a", 1, 0.42, 0.31)]}, AdmissionPolicy.floors(vector_min_cosine=-1, vector_min_centred=0.3))
    assert d.admitted and d.reason == "centred 0.310 ≥ vector_min_centred=0.3"
    (d,) = admission.explain({"vector": [vec("a", 1, 0.42, 0.31)]}, AdmissionPolicy.floors(vector_min_cosine=0.5, vector_min_centred=0.3))
    assert not d.admitted and d.reason == "cosine 0.420 < vector_min_cosine=0.5, centred 0.310 ≥ vector_min_centred=0.3"


def test_repr_shows_the_rfc_parameters_and_only_the_families_that_are_on():
    assert repr(AdmissionPolicy.floors()) == ("AdmissionPolicy(fts_min_terms=3, fts_min_coverage=0.3, vector_min_cosine=0.5, "
                                              "rrf_k=60, short_query_terms=2, min_pool=32, pool_factor=4)")
    assert repr(AdmissionPolicy()).endswith(
        "pool_factor=4, vector_min_centred=0.31, cross_script_min_terms=2, vector_uncovered='refuse', "
        "hybrid_fts_min_terms=4, hybrid_fts_min_coverage=0.34)")
    assert repr(AdmissionPolicy.floors(vector_min_centred=0.3, vector_uncovered="refuse")).endswith(
        "pool_factor=4, vector_min_centred=0.3, vector_uncovered='refuse')")


# ------------------------------------------------------------------- cross-script FTS


def test_cross_script_rule_admits_on_matched_terms_whatever_the_coverage():
    p = AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.3, cross_script_min_terms=2)
    cands = [
        fts("zh2", 1, 2, 10, script="cjk"),          # 2/10, other script: admitted
        fts("zh1", 2, 1, 10, script="cjk"),          # 1/10: still too few
        fts("en2", 3, 2, 10),                        # same script: the floors apply
        fts("en3", 4, 3, 10),
    ]
    got = admission.admit({"fts": cands}, p)
    assert ids(got, "fts") == ["zh2", "en3"]
    decisions = {d.candidate.entry_id: d for d in admission.explain({"fts": cands}, p)}
    assert "cjk entry for a latin query needs 2" in decisions["zh2"].reason


def test_cross_script_needs_both_scripts_known_and_letterful():
    p = AdmissionPolicy.floors(cross_script_min_terms=1)
    cands = [fts("a", 1, 1, 10, script=None), fts("b", 2, 1, 10, script="none", query_script="cjk"),
             fts("c", 3, 1, 10, script="latin", query_script="cjk")]
    assert ids(admission.admit({"fts": cands}, p), "fts") == ["c"]


# ------------------------------------------------------------------- whole-query gate


def test_gate_refuses_the_whole_query_when_the_best_signal_is_low():
    p = AdmissionPolicy.floors(**FLOORS_OFF, gate_signal="centred", gate_min=0.2)
    low = {"fts": [fts("a", 1, 5, 5)], "vector": [vec("a", 1, 0.9, 0.19), vec("b", 2, 0.8, 0.1)]}
    assert admission.admit(low, p) == {"fts": (), "vector": ()}
    assert admission.fuse(low, p, limit=8) == ()
    reasons = {d.reason for d in admission.explain(low, p)}
    assert reasons == {"whole-query gate: best centred 0.190 < gate_min=0.2"}
    high = {"fts": [fts("a", 1, 5, 5)], "vector": [vec("a", 1, 0.9, 0.2), vec("b", 2, 0.8, 0.1)]}
    assert ids(admission.admit(high, p), "vector") == ["a", "b"]


def test_gate_without_its_channel_does_not_apply_and_an_empty_pool_fails_it():
    p = AdmissionPolicy.floors(**FLOORS_OFF, gate_signal="centred", gate_min=0.2)
    assert ids(admission.admit({"fts": [fts("a", 1, 1, 1)]}, p), "fts") == ["a"]
    assert admission.gate_value({"vector": ()}, "centred") == -math.inf
    cov = AdmissionPolicy.floors(**FLOORS_OFF, gate_signal="coverage", gate_min=0.5)
    assert admission.admit({"fts": [fts("a", 1, 2, 5), fts("b", 2, 1, 5)]}, cov) == {"fts": ()}
    assert ids(admission.admit({"fts": [fts("a", 1, 3, 5), fts("b", 2, 1, 5)]}, cov), "fts") == ["a", "b"]


# ------------------------------------------------------------------- language coverage


def test_uncovered_vector_candidates_follow_vector_uncovered():
    cands = {"vector": [vec("en", 1, 0.7, 0.3, covered=True), vec("zh", 2, 0.9, 0.5, covered=False, script="cjk",
                                                                   query_script="cjk")]}
    assert ids(admission.admit(cands, AdmissionPolicy.floors(vector_min_cosine=0.5)), "vector") == ["en", "zh"]
    refuse = AdmissionPolicy.floors(vector_min_cosine=0.5, vector_uncovered="refuse")
    assert ids(admission.admit(cands, refuse), "vector") == ["en"]
    (_, d) = admission.explain(cands, refuse)
    assert "does not cover this cjk query / cjk entry" in d.reason
    # a number re-thresholds the signal in use: raw cosine here, centred below
    assert ids(admission.admit(cands, AdmissionPolicy.floors(vector_min_cosine=0.5, vector_uncovered=0.95)), "vector") == ["en"]
    assert ids(admission.admit(cands, AdmissionPolicy.floors(vector_min_cosine=0.5, vector_uncovered=0.9)), "vector") == ["en", "zh"]
    centred = AdmissionPolicy.floors(vector_min_cosine=-1, vector_min_centred=0.2, vector_uncovered=0.6)
    assert ids(admission.admit(cands, centred), "vector") == ["en"]


def test_unknown_coverage_is_covered():
    cands = {"vector": [vec("a", 1, 0.7, covered=None)]}
    assert ids(admission.admit(cands, AdmissionPolicy.floors(vector_uncovered="refuse")), "vector") == ["a"]


def test_embedding_profile_declares_its_scripts_outside_equality_and_canonical_form():
    from powercontext.embedding import MINILM_PROFILE

    assert MINILM_PROFILE.scripts == ("latin",)
    assert MINILM_PROFILE.covers("latin") and not MINILM_PROFILE.covers("cjk") and MINILM_PROFILE.covers("none")
    undeclared = pc.EmbeddingProfile(**MINILM_PROFILE.to_canonical())
    assert undeclared == MINILM_PROFILE and undeclared.covers("cjk")
    assert "scripts" not in MINILM_PROFILE.to_canonical()


# ------------------------------------------------------------------- validation and JSON


@pytest.mark.parametrize("bad", [
    dict(vector_min_centred=3.0), dict(vector_min_centred=math.nan), dict(cross_script_min_terms=0),
    dict(gate_signal="bm25"), dict(gate_min=5.0), dict(vector_uncovered="ignore"), dict(vector_uncovered=True),
    dict(fts_min_terms=True), dict(fts_min_coverage=math.inf), dict(min_pool=0),
])
def test_policy_refuses_nonsense_with_a_typed_error(bad):
    with pytest.raises(pc.InvalidMemoryRequestError, match=next(iter(bad))):
        AdmissionPolicy(**bad)


def test_policy_round_trips_through_a_json_file(tmp_path):
    p = AdmissionPolicy.floors(fts_min_terms=2, fts_min_coverage=0.25, vector_min_cosine=-1.0, vector_min_centred=0.28,
                        cross_script_min_terms=2, gate_signal="cosine", gate_min=0.3, vector_uncovered="refuse")
    path = p.save(tmp_path / "policy.json")
    data = json.loads(path.read_text())
    assert data["format"] == "powercontext.admission-policy.v1" and data["vector_min_centred"] == 0.28
    assert pc.AdmissionPolicy.load(path) == p
    assert AdmissionPolicy.load(AdmissionPolicy.floors(vector_uncovered=0.7).save(tmp_path / "t.json")).vector_uncovered == 0.7


@pytest.mark.parametrize("content, message", [
    ("{", "not a readable JSON policy"),
    ("[]", "an admission policy is a JSON object"),
    ('{"format": "other"}', "policy format must be"),
    ('{"format": "powercontext.admission-policy.v1", "vector_min_cosin": 0.4}', "unknown admission policy field(s) vector_min_cosin"),
    ('{"format": "powercontext.admission-policy.v1", "gate_min": "high"}', "gate_min must be"),
])
def test_loading_a_bad_policy_file_says_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(pc.InvalidMemoryRequestError) as info:
        AdmissionPolicy.load(path)
    assert message in str(info.value)
    with pytest.raises(pc.InvalidMemoryRequestError, match="no admission policy file"):
        AdmissionPolicy.load(tmp_path / "missing.json")


# ------------------------------------------------------------------- old behaviour kept


signals = st.floats(-1, 1, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), signals, signals), min_size=1, max_size=12),
       st.integers(1, 4), st.floats(0, 1), signals)
def test_floors_family_decides_exactly_as_the_rfc_floors(rows, terms, coverage, cosine):
    """With every new rule off, admission is the RFC rule, whatever new signals say."""
    p = AdmissionPolicy.floors(terms, coverage, cosine)
    f = [fts(f"f{i}", i + 1, min(m, 6), 6, script="cjk") for i, (m, _, _) in enumerate(rows)]
    v = [vec(f"v{i}", i + 1, c, centred=z, covered=False) for i, (_, c, z) in enumerate(rows)]
    got = admission.admit({"fts": f, "vector": v}, p)
    assert ids(got, "fts") == [c.entry_id for c in f if len(c.matched_terms) >= p.required_terms(6)]
    assert ids(got, "vector") == [c.entry_id for c in v if c.cosine >= cosine]


# ------------------------------------------------------------------- mode-aware FTS floors


def test_hybrid_fts_floors_apply_only_beside_the_vector_channel():
    p = AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.3, hybrid_fts_min_terms=4, hybrid_fts_min_coverage=0.34)
    assert (p.required_terms(10), p.required_terms(10, hybrid=True)) == (3, 4)
    three = fts("a", 1, 3, 10)
    assert ids(admission.admit({"fts": [three]}, p), "fts") == ["a"]
    assert ids(admission.admit({"fts": [three], "vector": []}, p), "fts") == []
    (d,) = admission.explain({"fts": [three], "vector": []}, p)
    assert d.reason == "matched 3/10 terms, needs 4 (hybrid_fts_min_terms=4, hybrid_fts_min_coverage=0.34)"
    assert p.family == "floors+hybrid-floors"
    unset = AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.3)
    assert unset.required_terms(10, hybrid=True) == unset.required_terms(10) == 3


def test_the_fts_reason_says_which_floor_set_the_terms_needed():
    """Issue 36: with fts_min_terms=1 a reason read "needs 2 (fts_min_terms=1, …)"."""
    low = AdmissionPolicy.floors(fts_min_terms=1, fts_min_coverage=0.34)
    (d,) = admission.explain({"fts": [fts("a", 1, 4, 4)]}, low)
    assert d.admitted and d.reason == "matched 4/4 terms, needs 2 (⌈fts_min_coverage=0.34 × 4 terms⌉ > fts_min_terms=1)"
    high = AdmissionPolicy.floors(fts_min_terms=5, fts_min_coverage=0.2)
    (d,) = admission.explain({"fts": [fts("a", 1, 3, 4)]}, high)
    assert not d.admitted and d.reason == "matched 3/4 terms, needs 4 (all 4: fts_min_terms=5 exceeds the query's terms)"
    (d,) = admission.explain({"fts": [fts("a", 1, 3, 10)]}, AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.3))
    assert d.reason == "matched 3/10 terms, needs 3 (fts_min_terms=3, fts_min_coverage=0.3)"


# ------------------------------------------------------------------- the verdict without words

maybe = st.one_of(st.none(), signals)
scripts = st.sampled_from(["latin", "cjk", "other", "none", None])


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 8), st.integers(0, 8), maybe, maybe, st.one_of(st.none(), st.booleans()), maybe, scripts, scripts,
       st.sampled_from([None, 0.31]), st.sampled_from([None, 2]), st.sampled_from(["admit", "refuse", 0.4]),
       st.sampled_from([None, 0.2]), st.sampled_from([None, 0.3]), st.booleans())
def test_admitted_is_decide_without_the_reason(matched, n, cosine, centred, covered, support, script, query_script,
                                               min_centred, cross, uncovered, fts_support, vector_support, hybrid):
    """Search and the harness ask ``admitted`` (no reason worded); explain asks
    ``decide``. One rule: the two agree for every family and every signal."""
    p = AdmissionPolicy(vector_min_centred=min_centred, cross_script_min_terms=cross, vector_uncovered=uncovered,
                        fts_min_support=fts_support, vector_min_support=vector_support)
    f = ChannelCandidate("fts", 1, REF, "f", "v_f", "0" * 64, "fact", "f",
                         matched_terms=tuple(f"t{i}" for i in range(min(matched, n))), query_term_count=n,
                         script=script, query_script=query_script, support=None if support is None else abs(support))
    v = ChannelCandidate("vector", 1, REF, "v", "v_v", "0" * 64, "fact", "v", cosine=cosine, centred=centred,
                         covered=covered, script=script, query_script=query_script,
                         support=None if support is None else abs(support))
    for c in (f, v):
        assert admission.admitted(c, p, hybrid) == admission.decide(c, p, hybrid).admitted
