"""Issue 45 §1: one description of the admission policy's fields (policy_fields), from
which the search options, the AdmissionInspector and the ThresholdTuner are generated.
Pure: no database; the candidates are hand-built ChannelCandidates."""

from __future__ import annotations

import dataclasses
import itertools
import re

import pytest

from powercontext.errors import InvalidMemoryRequestError
from powercontext.memory import admission, policy_fields
from powercontext.memory.admission import FAMILIES_OFF, AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

REF = ArtifactRef("mem_art_A", 1)
POLICIES = {
    "minilm": AdmissionPolicy.default_for("minilm"), "e5": AdmissionPolicy.default_for("e5"),
    "none": AdmissionPolicy.default_for(None), "rfc": AdmissionPolicy.rfc_initial(),
    "gate": AdmissionPolicy(gate_min=0.2, vector_min_support=0.3, fts_min_support=0.2),
    "coverage-gate": AdmissionPolicy.floors(gate_signal="coverage", gate_min=0.5),
}


def test_every_field_of_the_dataclass_is_described_in_its_order():
    assert [f.name for f in policy_fields.FIELDS] == [f.name for f in dataclasses.fields(AdmissionPolicy)]


def test_a_field_without_a_description_is_refused_by_name():
    @dataclasses.dataclass(frozen=True)
    class Extended(AdmissionPolicy):
        min_answer_margin: float | None = None

    with pytest.raises(TypeError, match=r"AdmissionPolicy\.min_answer_margin has no description"):
        policy_fields.build(Extended)


def test_type_nullability_and_default_are_derived_from_the_dataclass():
    f = policy_fields.by_name()
    assert (f["fts_min_terms"].kind, f["fts_min_terms"].nullable, f["fts_min_terms"].default) == ("int", False, 3)
    assert (f["vector_min_centred"].kind, f["vector_min_centred"].nullable) == ("float", True)
    assert (f["vector_uncovered"].kind, f["vector_uncovered"].choices) == ("choice|float", ("admit", "refuse"))
    assert f["gate_signal"].kind == "choice" and set(f["gate_signal"].choices) == set(admission.GATE_SIGNALS)
    assert not f["profile"].tunable and f["profile"] not in policy_fields.TUNABLE
    # a family's switch is what FAMILIES_OFF says (plus the gate's signal, read only with a gate)
    assert {x.name for x in policy_fields.FIELDS if x.family} == set(FAMILIES_OFF) | {"gate_signal"}
    assert all(x.off == FAMILIES_OFF[x.name] for x in policy_fields.FIELDS if x.name in FAMILIES_OFF)


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_ranges_hold_every_shipped_default(name):
    policy = POLICIES[name]
    for f in policy_fields.TUNABLE:
        value = getattr(policy, f.name)
        if value is None or isinstance(value, str):
            assert value is None or value in f.choices, (f.name, value)
            continue
        assert f.low <= value <= f.high, (name, f.name, value, f.low, f.high)


@pytest.mark.parametrize("field", [f for f in policy_fields.TUNABLE if f.low is not None], ids=lambda f: f.name)
def test_range_ends_are_accepted_and_a_step_below_is_refused(field):
    for end in (field.low, field.high):
        AdmissionPolicy(**{field.name: end})
    with pytest.raises(InvalidMemoryRequestError, match=field.name):
        AdmissionPolicy(**{field.name: field.low - field.step})
    if field.kind != "int":  # the float ranges are the policy's own bounds
        with pytest.raises(InvalidMemoryRequestError, match=field.name):
            AdmissionPolicy(**{field.name: field.high + field.step})


def test_why_not_names_the_field_that_applies():
    f, minilm, rfc = policy_fields.by_name(), POLICIES["minilm"], POLICIES["rfc"]
    # the issue: --fts-min-terms in hybrid mode was silently ignored beside hybrid_fts_min_terms=4
    assert "this policy's hybrid floor is hybrid_fts_min_terms=4" in policy_fields.why_not(f["fts_min_terms"], minilm, "hybrid")
    assert policy_fields.why_not(f["fts_min_terms"], rfc, "hybrid") is None  # no hybrid floor: fts_min_terms decides
    reason = policy_fields.why_not(f["vector_min_cosine"], minilm, "fts")
    assert reason.startswith("vector_min_cosine judges vector candidates, which fts mode does not retrieve")
    assert reason.endswith("fts mode is decided by fts_min_terms, fts_min_coverage, short_query_terms, "
                           "cross_script_min_terms")
    assert "hybrid mode only; fts mode's is fts_min_terms" in policy_fields.why_not(f["hybrid_fts_min_terms"], minilm, "fts")
    off = policy_fields.why_not(f["vector_min_centred"], POLICIES["e5"], "hybrid")
    assert "vector_min_cosine decides instead" in off and "%config PcMem.vector_min_centred" in off
    assert policy_fields.why_not(f["gate_min"], POLICIES["coverage-gate"], "fts") is None  # coverage gate: fts pool
    assert "vector mode does not retrieve" in policy_fields.why_not(f["gate_min"], POLICIES["coverage-gate"], "vector")


def _fts(entry, matched, n, script="latin", support=None):
    return ChannelCandidate("fts", 1, REF, entry, f"v_{entry}", "0" * 64, "fact", entry,
                            matched_terms=tuple(f"t{i}" for i in range(matched)), query_term_count=n,
                            script=script, query_script="latin", support=support)


def _vec(entry, cosine, centred, covered=True, support=None):
    return ChannelCandidate("vector", 1, REF, entry, f"v_{entry}", "0" * 64, "fact", entry, cosine=cosine,
                            centred=centred, covered=covered, script="latin", query_script="latin", support=support)


def _candidates():
    fts = [_fts(f"f{m}_{n}_{s}", m, n, s, sup) for m, n, s, sup in
           itertools.product((0, 1, 2, 3, 5), (2, 6, 12), ("latin", "han"), (None, 0.1, 0.6))]
    vec = [_vec(f"v{c}_{z}_{cov}", c, z, cov, sup) for c, z, cov, sup in
           itertools.product((0.2, 0.5, 0.9), (0.1, 0.4), (True, False), (None, 0.1, 0.8))]
    return fts, vec


@pytest.mark.parametrize("name", sorted(POLICIES))
@pytest.mark.parametrize("mode", policy_fields.MODES)
def test_every_field_a_reason_cites_is_one_that_decides(name, mode):
    """What the AdmissionInspector's status line names (``deciding``) covers every field a
    rejection reason cites, and each of those fields applies to the mode: so each has a
    control there."""
    policy, (fts, vec) = POLICIES[name], _candidates()
    if mode == "vector":  # support needs the full-text rows' document frequencies: retrieval leaves it None
        vec = [dataclasses.replace(c, support=None) for c in vec]
    channels = {"fts": {"fts": fts}, "vector": {"vector": vec}, "hybrid": {"fts": fts, "vector": vec}}[mode]
    names = "|".join(f.name for f in policy_fields.TUNABLE)
    cited = {m for d in admission.explain(channels, policy) for m in re.findall(rf"\b({names})\b", d.reason)}
    deciding = set(policy_fields.deciding(policy, mode))
    assert cited <= deciding, (cited - deciding)
    assert all(policy_fields.why_not(policy_fields.by_name()[n], policy, mode) is None for n in deciding)


def test_a_hybrid_reason_cites_the_field_that_set_each_floor():
    """A hybrid floor left None falls back to its fts one; the reason cited the hybrid
    name for both as soon as either differed (a field the policy did not set)."""
    p = AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.3, hybrid_fts_min_terms=4)
    (d,) = admission.explain({"fts": [_fts("a", 3, 10)], "vector": []}, p)
    assert d.reason == "matched 3/10 terms, needs 4 (hybrid_fts_min_terms=4, fts_min_coverage=0.3)"
    same = AdmissionPolicy.floors(fts_min_terms=4, fts_min_coverage=0.34, hybrid_fts_min_terms=4,
                                  hybrid_fts_min_coverage=0.34)
    (d,) = admission.explain({"fts": [_fts("a", 3, 10)], "vector": []}, same)
    assert d.reason.endswith("(hybrid_fts_min_terms=4, hybrid_fts_min_coverage=0.34)")


def test_parse_value_reads_numbers_words_and_off():
    f = policy_fields.by_name()
    assert policy_fields.parse_value(f["hybrid_fts_min_terms"], "3") == 3
    assert policy_fields.parse_value(f["hybrid_fts_min_terms"], "off") is None
    assert policy_fields.parse_value(f["vector_uncovered"], "admit") == "admit"
    assert policy_fields.parse_value(f["vector_uncovered"], "0.4") == 0.4
    with pytest.raises(InvalidMemoryRequestError, match="fts_min_terms takes int 1..10, got 'three'"):
        policy_fields.parse_value(f["fts_min_terms"], "three")
    with pytest.raises(InvalidMemoryRequestError, match="gate_signal must be one of"):
        policy_fields.parse_value(f["gate_signal"], "loud")
    with pytest.raises(InvalidMemoryRequestError):
        policy_fields.parse_value(f["fts_min_terms"], "off")  # not nullable
    with pytest.raises(InvalidMemoryRequestError):
        policy_fields.parse_value(f["vector_min_cosine"], "nan")
