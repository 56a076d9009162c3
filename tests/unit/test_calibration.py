"""Admission in probability units (issue 46): the calibration artefact (schema, profile
tie, cells and their fallback), the probability signal, and ``min_probability`` in
admission and explain. Pure functions: hand-made candidates, no database."""

import json

import pytest

from powercontext.bundled import E5_PROFILE, MINILM_PROFILE
from powercontext.errors import InvalidMemoryRequestError, PowerContextError
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy
from powercontext.memory.calibration import (
    HYBRID_FALLBACK, NO_CALIBRATION, Calibration, InvalidCalibrationError, annotate, calibration_for, query_bucket,
)
from powercontext.model import ArtifactRef, ChannelCandidate

REF = ArtifactRef("mem_art_A", 1)


def vec(entry, cosine, script="latin", query_script="latin", centred=None):
    return ChannelCandidate("vector", 1, REF, entry, f"v_{entry}", "0" * 64, "fact", entry, cosine=cosine,
                            centred=centred, script=script, query_script=query_script, covered=True)


def fts(entry, matched, n):
    return ChannelCandidate("fts", 1, REF, entry, f"v_{entry}", "0" * 64, "fact", entry,
                            matched_terms=tuple(f"t{i}" for i in range(matched)), query_term_count=n,
                            script="latin", query_script="latin")


def artefact(**override):
    data = {
        "format": "powercontext.calibration.v1", "profile": E5_PROFILE.profile_id, "min_cell_n": 30,
        "vector": {"signal": "cosine",
                   "pooled": {"n": 500, "positives": 100, "x": [0.8, 1.0], "p": [0.0, 0.8]},
                   "cells": {"latin>cjk": {"n": 40, "positives": 12, "x": [0.75, 0.80, 0.85], "p": [0.1, 0.6, 0.9]},
                             "cjk>cjk": {"n": 12, "positives": 1, "x": [0.8, 0.95], "p": [0.0, 0.2]}}},
        "fts": {"signal": "coverage", "pooled": {"n": 300, "positives": 90, "x": [0.0, 1.0], "p": [0.0, 1.0]},
                "cells": {"3-5": {"n": 60, "positives": 20, "x": [0.2, 0.6], "p": [0.1, 0.7]}}},
    }
    data.update(override)
    return data


def test_a_cell_map_interpolates_between_its_points_and_clamps_at_the_ends():
    cal = Calibration.from_dict(artefact())
    cell = cal.vector.cells["latin>cjk"]
    assert cell(0.70) == 0.1 and cell(0.99) == 0.9
    assert cell(0.775) == pytest.approx(0.35)  # halfway between (0.75, 0.1) and (0.80, 0.6)
    assert cell(0.80) == pytest.approx(0.6)


def test_each_language_pair_has_its_own_map_and_an_unseen_or_thin_pair_falls_back_to_the_pooled_one():
    cal = Calibration.from_dict(artefact())
    p, cell = cal.probability(vec("a", 0.80, script="cjk", query_script="latin"))
    assert p == pytest.approx(0.6) and cell == "vector cosine latin>cjk (n=40)"
    # a Latin pair reads the pooled map (no latin>latin cell)
    p, cell = cal.probability(vec("b", 0.90))
    assert p == pytest.approx(0.4) and cell == "vector cosine latin>latin not seen → pooled (n=500)"
    # a cell under min_cell_n: the pooled map, and the label says why
    p, cell = cal.probability(vec("c", 0.90, script="cjk", query_script="cjk"))
    assert p == pytest.approx(0.4) and cell == "vector cosine cjk>cjk n=12 < 30 → pooled (n=500)"
    # full text: coverage per query-length bucket
    p, cell = cal.probability(fts("d", 2, 5))
    assert p == pytest.approx(0.4) and cell == "fts coverage 3-5 (n=60)"  # 0.1 + 0.6 × (0.4 − 0.2) / 0.4
    assert cal.probability(fts("e", 0, 0)) == (None, None)
    assert [query_bucket(n) for n in (1, 2, 3, 5, 6, 9, 10, 40)] == ["1-2", "1-2", "3-5", "3-5", "6-9", "6-9",
                                                                      "10+", "10+"]


def test_min_probability_replaces_the_raw_floors_where_a_probability_exists():
    cal = Calibration.from_dict(artefact())
    channels = annotate({"vector": (vec("answer", 0.80, script="cjk", query_script="latin"),
                                    vec("stranger", 0.88, script="cjk", query_script="cjk"))}, cal)
    raw = AdmissionPolicy(vector_min_cosine=0.86, vector_min_centred=None)  # E5's raw floor
    assert [c.entry_id for c in admission.admit(channels, raw)["vector"]] == ["stranger"]
    calibrated = AdmissionPolicy(vector_min_cosine=0.86, vector_min_centred=None, min_probability=0.5)
    assert [c.entry_id for c in admission.admit(channels, calibrated)["vector"]] == ["answer"]
    reasons = [d.reason for d in admission.explain(channels, calibrated)]
    assert reasons[0] == "probability 0.600 ≥ min_probability=0.5 (vector cosine latin>cjk (n=40))"
    assert reasons[1].startswith("probability 0.") and "< min_probability=0.5" in reasons[1]
    assert "cjk>cjk n=12 < 30 → pooled" in reasons[1]


def test_without_a_calibration_the_raw_thresholds_decide_and_explain_says_so():
    channels = annotate({"vector": (vec("a", 0.90), vec("b", 0.50))}, None)
    policy = AdmissionPolicy(vector_min_cosine=0.86, vector_min_centred=None, min_probability=0.99)
    assert [c.entry_id for c in admission.admit(channels, policy)["vector"]] == ["a"]
    decisions = admission.explain(channels, policy)
    assert all(d.reason.startswith(NO_CALIBRATION + "; cosine") for d in decisions)
    assert NO_CALIBRATION == "no calibration for this profile: raw thresholds"
    # the rule switched off: today's reasons, word for word
    off = admission.explain(channels, AdmissionPolicy(vector_min_cosine=0.86, vector_min_centred=None))
    assert [d.reason for d in off] == ["cosine 0.900 ≥ vector_min_cosine=0.86", "cosine 0.500 < vector_min_cosine=0.86"]


def test_min_probability_is_checked_and_round_trips_through_policy_json(tmp_path):
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(InvalidMemoryRequestError, match="min_probability must be None or within"):
            AdmissionPolicy(min_probability=bad)
    policy = AdmissionPolicy(min_probability=0.42)
    assert AdmissionPolicy.load(policy.save(tmp_path / "p.json")) == policy
    assert "probability" in policy.family and "min_probability=0.42" in repr(policy)
    assert "min_probability" not in repr(AdmissionPolicy())


def test_another_profiles_artefact_is_refused_naming_both_profile_ids():
    cal = Calibration.from_dict(artefact())
    cal.check_profile(E5_PROFILE)
    cal.check_profile(None)  # a full-text-only database: nothing to refuse
    with pytest.raises(InvalidCalibrationError) as info:
        cal.check_profile(MINILM_PROFILE)
    assert E5_PROFILE.profile_id in str(info.value) and MINILM_PROFILE.profile_id in str(info.value)
    assert isinstance(info.value, PowerContextError)


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["vector"]["cells"]["latin>cjk"].update(p=[0.9, 0.6, 0.1]), "vector.cells.latin>cjk"),
    (lambda d: d["vector"]["pooled"].update(x=[0.9, 0.7]), "vector.pooled"),
    (lambda d: d["fts"]["pooled"].update(p=[0.0, 1.2]), "fts.pooled"),
    (lambda d: d["vector"]["cells"].update({"klingon>latin": d["vector"]["pooled"]}), "vector"),
    (lambda d: d["fts"]["cells"].update({"7": d["fts"]["pooled"]}), "fts"),
    (lambda d: d.update(format="powercontext.calibration.v0"), "format"),
    (lambda d: d.update(profile=""), "profile"),
    (lambda d: d.update(thresholds=0.5), "thresholds"),
    (lambda d: d["vector"]["pooled"].update(n="many"), "vector.pooled.n"),
    (lambda d: d["vector"]["pooled"].update(positives=900), "vector.pooled"),
])
def test_a_hand_edited_artefact_is_refused_with_the_field_named(tmp_path, edit, field):
    data = artefact()
    edit(data)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidCalibrationError) as info:
        Calibration.load(path)
    message = str(info.value)
    assert f"field {field}" in message and "\n" not in message, message


def test_a_corrupt_or_missing_file_is_a_typed_error(tmp_path):
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidCalibrationError, match="not a readable JSON calibration"):
        Calibration.load(tmp_path / "bad.json")
    with pytest.raises(InvalidCalibrationError, match="no calibration file"):
        Calibration.load(tmp_path / "none.json")
    (tmp_path / "list.json").write_text("[]", encoding="utf-8")
    with pytest.raises(InvalidCalibrationError, match="a calibration is a JSON object"):
        Calibration.load(tmp_path / "list.json")


def test_the_package_ships_one_artefact_per_bundled_profile_tied_to_it(tmp_path):
    for name, profile in (("minilm", MINILM_PROFILE), ("e5", E5_PROFILE)):
        cal = calibration_for(name)
        assert cal is not None and cal.profile == profile.profile_id and calibration_for(profile) == cal
        assert cal.vector is not None and cal.fts is not None
        assert cal.format == "powercontext.calibration.v2" and cal.hybrid is not None  # the hybrid cell, refitted
        assert min(cal.hybrid.vector, cal.hybrid.fts, cal.hybrid.both) >= 0 and cal.hybrid.n > 10_000
        assert len(cal.fitted_on) == 4  # the bundled corpora
        assert Calibration.load(cal.save(tmp_path / f"{name}.json")) == cal
    assert calibration_for(None) is None
    assert calibration_for("some-other-model") is None


# ---------------------------------------------------------------------- the hybrid cell (v2)

HYBRID = {"n": 900, "positives": 60, "intercept": -1.0, "vector": 0.8, "fts": 0.5, "both": 0.7}


def hybrid_channels():
    """An entry both channels found, one only the vector channel found, one only full text."""
    return {"fts": (fts("both", 3, 5), fts("text_only", 4, 5)),
            "vector": (vec("both", 0.80, script="cjk", query_script="latin"),
                       vec("vector_only", 0.82, script="cjk", query_script="latin"))}


def test_a_hybrid_candidate_gets_one_stacked_probability_from_both_channels():
    cal = Calibration.from_dict(artefact(format="powercontext.calibration.v2", hybrid=HYBRID))
    channels = annotate(hybrid_channels(), cal)
    by = {(c.channel, c.entry_id): c for cands in channels.values() for c in cands}
    # the same entry has the same probability in both channels: admitted in both or neither
    assert by["fts", "both"].probability == by["vector", "both"].probability
    pv, pf = cal.probability(vec("x", 0.80, script="cjk", query_script="latin"))[0], cal.probability(fts("x", 3, 5))[0]
    assert by["vector", "both"].probability == pytest.approx(cal.hybrid(pv, pf))
    assert by["vector", "vector_only"].probability == pytest.approx(cal.hybrid(cal.probability(
        vec("x", 0.82, script="cjk", query_script="latin"))[0], None))
    cell = by["vector", "both"].calibration_cell
    assert cell.startswith("hybrid stacked (") and "latin>cjk" in cell and "fts coverage 3-5" in cell
    assert "fts not retrieved" in by["vector", "vector_only"].calibration_cell
    policy = AdmissionPolicy(min_probability=by["fts", "both"].probability)
    admitted = admission.admit(channels, policy)
    assert [c.entry_id for c in admitted["fts"]] == ["both"] and "both" in [c.entry_id for c in admitted["vector"]]
    reasons = {d.candidate.entry_id: d.reason for d in admission.explain(channels, policy)}
    assert "hybrid stacked" in reasons["both"] and "min_probability" in reasons["both"]
    # a copy with another weight reads that weight (the fast path caches plain floats)
    flat = cal.hybrid.model_copy(update={"vector": 0.0})
    assert flat(0.9, 0.5) == flat(0.1, 0.5) < cal.hybrid(0.9, 0.5)
    # one channel alone (fts or vector mode): its own map, no stacking
    alone = annotate({"vector": hybrid_channels()["vector"]}, cal)["vector"][0]
    assert alone.probability == pytest.approx(pv) and alone.calibration_cell.startswith("vector ")


def test_a_v1_artefact_still_loads_and_its_hybrid_candidates_take_the_per_channel_max_said_in_explain():
    cal = Calibration.from_dict(artefact())  # format v1: no hybrid section
    assert cal.format == "powercontext.calibration.v1" and cal.hybrid is None
    channels = annotate(hybrid_channels(), cal)
    by = {(c.channel, c.entry_id): c for cands in channels.values() for c in cands}
    pv = cal.probability(vec("x", 0.80, script="cjk", query_script="latin"))[0]
    pf = cal.probability(fts("x", 3, 5))[0]
    assert by["fts", "both"].probability == by["vector", "both"].probability == pytest.approx(max(pv, pf))
    assert HYBRID_FALLBACK in by["fts", "both"].calibration_cell
    decisions = admission.explain(channels, AdmissionPolicy(min_probability=0.05))
    assert all(HYBRID_FALLBACK in d.reason for d in decisions)


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["hybrid"].update(vector=-0.2), "hybrid.vector"),
    (lambda d: d["hybrid"].update(both=float("nan")), "hybrid"),
    (lambda d: d["hybrid"].update(intercept="high"), "hybrid.intercept"),
    (lambda d: d["hybrid"].pop("fts"), "hybrid.fts"),
    (lambda d: d["hybrid"].update(extra=1), "hybrid.extra"),
    (lambda d: d["hybrid"].update(positives=10_000), "hybrid"),
    (lambda d: d["hybrid"].update(method="mean"), "hybrid.method"),
    (lambda d: d.update(format="powercontext.calibration.v1"), "hybrid"),  # a v1 artefact cannot carry one
])
def test_a_corrupt_hybrid_section_is_refused_with_the_field_named(tmp_path, edit, field):
    data = artefact(format="powercontext.calibration.v2", hybrid=dict(HYBRID))
    edit(data)
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidCalibrationError) as info:
        Calibration.load(path)
    message = str(info.value)
    assert f"field {field}" in message and "\n" not in message, message
    assert isinstance(info.value, PowerContextError)
