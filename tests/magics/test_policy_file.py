"""``%config PcMem.policy_file``: searches use a policy saved as JSON (e.g. one fitted
with ``harness.fit``); a bad file is one UsageError line and the session keeps the
policy that worked."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError

from powercontext import AdmissionPolicy


def _svc(shell):
    return shell.magics_manager.registry["PcMem"].session.svc


def test_searches_use_the_policy_file_and_thresholds_still_override_it(shell, sqlite_target, tmp_path):
    shell.run_line_magic("pcmem", f"open {sqlite_target}")
    assert _svc(shell).policy == AdmissionPolicy.rfc_initial()  # the fixture's pinned file
    fitted = AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.5, gate_min=0.2)
    shell.run_line_magic("config", f"PcMem.policy_file = {str(fitted.save(tmp_path / 'fitted.json'))!r}")
    assert _svc(shell).policy == fitted
    shell.run_line_magic("pcmem", 'remember "We deploy with make release on Fridays."')
    hits = shell.run_line_magic("pcmem", 'search "deploy release Fridays" --mode fts')
    assert len(hits) == 1  # 3 of 4 terms ≥ coverage 0.5 under the fitted policy
    shell.run_line_magic("config", "PcMem.fts_min_coverage = 1.0")
    assert _svc(shell).policy == AdmissionPolicy(fts_min_terms=1, fts_min_coverage=1.0, gate_min=0.2)
    assert len(shell.run_line_magic("pcmem", 'search "deploy release Fridays nightly" --mode fts')) == 0


@pytest.mark.parametrize("content, message", [
    (None, "PcMem.policy_file: no admission policy file"),
    ("{not json", "is not a readable JSON policy"),
    (json.dumps({"format": "powercontext.admission-policy.v1", "fts_min_terms": 0}), "fts_min_terms must be"),
    (json.dumps({"fts_min_terms": 2}), "admission policy format must be"),
])
def test_a_bad_policy_file_is_one_usage_error_line_and_the_old_policy_stays(shell, sqlite_target, tmp_path,
                                                                            content, message):
    shell.run_line_magic("pcmem", f"open {sqlite_target}")
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    magics = shell.magics_manager.registry["PcMem"]
    with pytest.raises(UsageError, match=message) as info:
        magics.policy_file = str(path)
    assert "\n" not in str(info.value)
    assert _svc(shell).policy == AdmissionPolicy.rfc_initial() and magics.policy_file.endswith("rfc_initial_policy.json")
