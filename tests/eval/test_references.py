"""The peers' reference policies: every one records where its value comes from and
what it thresholds, and maps onto a valid AdmissionPolicy that survives a JSON round
trip; the conversions the mappings rely on hold numerically."""

from __future__ import annotations

import math

import numpy as np
import pytest

from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy
from powercontext.eval.scoring.references import BASES, REFERENCES, Reference, reference, references_frame
from powercontext.eval.scoring.sweep import MODES


@pytest.mark.parametrize("ref", REFERENCES, ids=[r.name for r in REFERENCES])
def test_each_reference_records_its_source_and_value_and_maps_to_a_valid_policy(ref: Reference):
    assert ref.source and ref.version and ref.library and ref.thresholds and ref.note
    assert ref.source.startswith("https://") or ref.name == "rfc-initial"
    assert ref.basis in BASES and ref.mapping in ("exact", "approximate")
    assert set(ref.modes) <= set(MODES) and ref.modes
    assert ref.limit is None or ref.limit >= 1
    # a valid policy: its own validation passed, and it round-trips through the saved form
    assert isinstance(ref.policy, AdmissionPolicy)
    assert AdmissionPolicy.from_dict(ref.policy.to_dict()) == ref.policy
    if "no cutoff" in ref.thresholds.lower() or ref.thresholds.startswith("nothing"):
        assert ref.policy == NO_ADMISSION  # a library that only cuts at top-k admits everything it retrieves
    else:
        assert ref.policy != NO_ADMISSION
    # the documented value is in the text the report cites
    if ref.policy.vector_min_cosine > -1 and ref.name not in ("graphiti", "rfc-initial", "txtai"):
        assert f"{ref.policy.vector_min_cosine:g}" in ref.default


def test_the_documented_values_map_as_stated():
    # mem0: threshold=0.1 on Qdrant's cosine score, top_k=20
    assert (reference("mem0").policy.vector_min_cosine, reference("mem0").limit) == (0.1, 20)
    # Graphiti on Neo4j: vector.similarity.cosine = (1 + cos) / 2 > 0.6  <=>  cos > 0.2; RRF 1/(i + 1), i from 0
    g = reference("graphiti")
    assert math.isclose((1 + g.policy.vector_min_cosine) / 2, 0.6)
    assert g.policy.rrf_k == 0 and g.policy.required_terms(5, hybrid=True) == 1 and "hybrid" in g.modes
    # LangChain's example threshold on a cosine store; on langchain-chroma's squared L2 it is a higher cosine
    lc = reference("langchain-threshold")
    assert lc.policy.vector_min_cosine == 0.8 and lc.limit == 4
    v = np.array([1.0, 0.0])
    for cos in (0.5, 0.859, 0.9):
        u = np.array([cos, math.sqrt(1 - cos * cos)])
        squared_l2 = float(((u - v) ** 2).sum())  # Chroma's "l2" space
        assert math.isclose(squared_l2, 2 - 2 * cos, abs_tol=1e-12)
        relevance = 1 - squared_l2 / math.sqrt(2)  # langchain's _euclidean_relevance_score_fn
        assert (relevance >= 0.8) == (cos >= 0.8586)
    assert "0.859" in lc.note
    # top-k only: the library's k
    assert {r.name: r.limit for r in REFERENCES if r.policy == NO_ADMISSION} == {
        "chroma": 10, "cognee": 10, "haystack": 10, "langchain": 4, "langmem": 10, "letta": 10, "llamaindex": 2}
    assert reference("rfc-initial").policy == AdmissionPolicy.rfc_initial() and reference("rfc-initial").limit_in(8) == 8
    assert reference("llamaindex").limit_in(8) == 2


def test_lookup_and_the_peers_table():
    with pytest.raises(KeyError, match="known: rfc-initial"):
        reference("nope")
    frame = references_frame()
    assert list(frame["name"]) == [r.name for r in REFERENCES] and len(set(frame["name"])) == len(REFERENCES)
    assert frame["source"].str.len().min() > 20 and (frame["policy"].str.startswith("AdmissionPolicy(")).all()


def test_a_reference_refuses_an_incomplete_record():
    good = REFERENCES[1]
    fields = {f: getattr(good, f) for f in good.__dataclass_fields__}
    with pytest.raises(ValueError, match="modes"):
        Reference(**{**fields, "modes": ("bm25",)})
    with pytest.raises(ValueError, match="descriptive"):
        Reference(**{**fields, "source": ""})
    with pytest.raises(TypeError):
        Reference(**{**fields, "policy": {"vector_min_cosine": 0.3}})
