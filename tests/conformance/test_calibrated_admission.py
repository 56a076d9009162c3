"""Admission in probability units on real databases (issue 46): the service annotates
every retrieved candidate with its calibrated probability and language-pair cell from
the package's artefact for the database's profile; ``min_probability`` admits by it
and explain says so; a database with no calibration keeps its raw thresholds and says
that; another profile's artefact is refused. The newcomer's memory of the issue (ten
entries, three in Chinese) on the real multilingual-e5-small."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

import powercontext as pc
from powercontext.bundled import E5_PROFILE, MINILM_PROFILE
from powercontext.memory.admission import AdmissionPolicy
from powercontext.memory.calibration import (
    HYBRID_FALLBACK, NO_CALIBRATION, Calibration, InvalidCalibrationError, calibration_for,
)

E = pc.MemoryEntryInput
NEWCOMER = [
    "生产数据库每天凌晨三点自动备份到 S3。",
    "代码评审至少需要一位同事批准后才能合并。",
    "前端使用 React 18 和 TypeScript 编写。",
    "Use structlog for all application logging.",
    "In the dev environment the API listens on port 8080.",
    "Deploys to production happen on Tuesdays and Thursdays.",
    "Run the test suite with make test before pushing.",
    "Secrets live in Vault, never in the repository.",
    "The staging database is reset every Sunday night.",
    "Feature flags are managed in LaunchDarkly.",
]
QUESTIONS = ["How often is the production database backed up?", "Which logging library should I use?",
             "开发环境里 API 监听哪个端口？", "数据库迁移由谁审批？"]


async def test_explain_shows_each_candidates_probability_and_cell_and_admits_by_it(open_service, e5):
    svc = await open_service(embedding=e5)
    assert svc.calibration is calibration_for(E5_PROFILE)
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in NEWCOMER))
    policy = dataclasses.replace(AdmissionPolicy.default_for("e5"), min_probability=0.5)
    pairs = set()
    for question in QUESTIONS:
        result = await svc.search(question, rev, mode="hybrid", policy=policy, explain=True)
        assert result.decisions
        for d in result.decisions:
            c = d.candidate
            assert c.probability is not None and 0.0 <= c.probability <= 1.0
            assert d.reason.startswith(f"probability {c.probability:.3f} ")
            assert c.calibration_cell in d.reason and d.admitted == (c.probability >= 0.5)
            # hybrid: one stacked probability per entry, from both channels' cells (issue 46 item 1)
            assert c.calibration_cell.startswith("hybrid stacked (")
            pairs.update(re.findall(r"vector (?:cosine|centred) (\w+>\w+)", c.calibration_cell))
        admitted = {d.candidate.entry_id for d in result.decisions if d.admitted}
        assert {h.entry_id for h in result.hits} == admitted
    # the cross-lingual pairs of this memory are read from their own cells
    assert {"latin>cjk", "cjk>latin", "cjk>cjk", "latin>latin"} <= pairs
    # with the rule off, today's raw reasons and hits, the signal still there to read
    today = await svc.search(QUESTIONS[0], rev, mode="hybrid", explain=True)
    assert today.policy.min_probability is None
    assert not any(d.reason.startswith("probability") for d in today.decisions)
    assert all(d.candidate.probability is not None for d in today.decisions)


async def test_a_database_without_a_calibration_keeps_its_raw_thresholds_and_says_so(open_service):
    svc = await open_service()  # full text only: no embedding profile, no calibration
    assert svc.calibration is None
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in NEWCOMER))
    raw = AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.2)
    calibrated = dataclasses.replace(raw, min_probability=0.99)
    for question in ("Where do secrets live?", "Which database is reset every Sunday?"):
        before = await svc.search(question, rev, mode="fts", policy=raw, explain=True)
        after = await svc.search(question, rev, mode="fts", policy=calibrated, explain=True)
        assert after.hits == before.hits and before.hits
        assert [d.reason for d in after.decisions] == [f"{NO_CALIBRATION}; {d.reason}" for d in before.decisions]


async def test_another_profiles_calibration_is_refused_naming_both(open_service, e5):
    svc = await open_service(embedding=e5)
    with pytest.raises(InvalidCalibrationError) as info:
        svc.calibration = calibration_for(MINILM_PROFILE)
    assert MINILM_PROFILE.profile_id in str(info.value) and E5_PROFILE.profile_id in str(info.value)
    assert svc.calibration is calibration_for(E5_PROFILE)  # unchanged
    with pytest.raises(InvalidCalibrationError, match="calibration must be a Calibration or None"):
        svc.calibration = {"profile": E5_PROFILE.profile_id}
    svc.calibration = None  # switched off: raw thresholds
    rev = await svc.remember(None, entries=(E("fact", NEWCOMER[3]),))
    result = await svc.search(QUESTIONS[1], rev, mode="vector", policy=AdmissionPolicy(min_probability=0.5),
                              explain=True)
    assert all(d.reason.startswith(NO_CALIBRATION) for d in result.decisions)


async def test_a_v1_artefact_still_loads_and_explain_names_its_hybrid_fallback(open_service, e5, tmp_path):
    """An artefact written before the hybrid cell (format v1) loads from its file; a
    hybrid candidate then takes the larger of its channels' probabilities, one per
    entry, and explain says which rule gave it."""
    data = calibration_for(E5_PROFILE).to_dict()
    data.pop("hybrid")
    data["format"] = "powercontext.calibration.v1"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    svc = await open_service(embedding=e5)
    svc.calibration = Calibration.load(path)
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in NEWCOMER))
    policy = dataclasses.replace(AdmissionPolicy.default_for("e5"), min_probability=0.05)
    result = await svc.search(QUESTIONS[1], rev, mode="hybrid", policy=policy, explain=True)
    by_entry: dict[str, set] = {}
    for d in result.decisions:
        c = d.candidate
        assert HYBRID_FALLBACK in c.calibration_cell and HYBRID_FALLBACK in d.reason
        own = re.findall(r"(\d\.\d{3}) by (?:vector|fts) ", c.calibration_cell)
        assert own and f"{c.probability:.3f}" == max(own)  # the per-channel max
        by_entry.setdefault(c.entry_id, set()).add(c.probability)
    assert all(len(ps) == 1 for ps in by_entry.values())  # one probability per entry, both channels
    assert {h.entry_id for h in result.hits} == {d.candidate.entry_id for d in result.decisions if d.admitted}
