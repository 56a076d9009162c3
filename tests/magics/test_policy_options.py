"""Issue 45 §1: ``%pcmem search`` has one option per admission policy field (generated
from policy_fields), and an option that cannot decide the search asked for is refused
with a one-line reason naming the field that does — never silently ignored. On both
databases; the hybrid searches embed with the real all-MiniLM-L6-v2."""

from __future__ import annotations

import dataclasses

import pytest
from IPython.core.error import UsageError

from powercontext import AdmissionPolicy
from powercontext.magics import current_service
from powercontext.magics.magic import PcMem
from powercontext.memory import policy_fields

from .helpers import fail, run

CHECKLIST = "The staging release checklist: run make test, then tag the build."
OTHER = "Nightly backups of the production database run at 02:00 UTC."
#: Many terms, three of them in CHECKLIST: short of MiniLM's hybrid floor of 4 terms.
QUERY = "what is on the release checklist for staging deploys rollbacks and hotfixes"


def _default_policy(shell) -> None:
    """The fixture pins the RFC's floors; these tests need the shipped MiniLM default."""
    shell.run_line_magic("config", "PcMem.policy_file = None")


def _fts_row(frame, text):
    rows = frame[(frame.channel == "fts") & (frame.text == text)]
    assert len(rows) == 1, frame[["channel", "text", "reason"]]
    return rows.iloc[0]


def test_every_policy_field_is_a_search_option():
    options = {s for a in PcMem._search.parser._actions for s in a.option_strings}
    assert {f.option for f in policy_fields.TUNABLE} <= options
    assert "--profile" not in options  # not a threshold
    assert all(f.option in PcMem.pcmem.__doc__ or f.name in PcMem.pcmem.__doc__ for f in policy_fields.TUNABLE)


def test_the_issue_hybrid_search_refuses_fts_min_terms_and_obeys_hybrid_fts_min_terms(shell, target, capsys):
    """Before: ``--mode hybrid --fts-min-terms 1`` still rejected the full-text candidate
    with "needs 4 (hybrid_fts_min_terms=4)"; there was no option for the hybrid floor."""
    run(shell, f"%pcmem open {target} --embedding minilm")
    _default_policy(shell)
    run(shell, f'%%pcmem remember --kind fact\n{CHECKLIST}\n\n{OTHER}\n')
    frame = run(shell, f'%pcmem search "{QUERY}" --mode hybrid --explain')
    assert not _fts_row(frame, CHECKLIST).admitted
    assert "hybrid_fts_min_terms=4" in _fts_row(frame, CHECKLIST).reason

    line = fail(shell, capsys, f'%pcmem search "{QUERY}" --mode hybrid --fts-min-terms 1 --explain')
    assert line == ("UsageError: --fts-min-terms does not apply to this hybrid search: fts_min_terms does not apply "
                    "in hybrid mode: this policy's hybrid floor is hybrid_fts_min_terms=4")
    frame = run(shell, f'%pcmem search "{QUERY}" --mode hybrid --hybrid-fts-min-terms 1 '
                       '--hybrid-fts-min-coverage 0 --explain')
    row = _fts_row(frame, CHECKLIST)
    assert row.admitted and "hybrid_fts_min_terms=1" in row.reason
    # the same option in fts mode is another mode's floor: refused, naming fts mode's own
    line = fail(shell, capsys, f'%pcmem search "{QUERY}" --mode fts --hybrid-fts-min-terms 1')
    assert line.endswith("hybrid_fts_min_terms applies in hybrid mode only; fts mode's is fts_min_terms")
    assert run(shell, f'%pcmem search "{QUERY}" --mode fts --fts-min-terms 1 --fts-min-coverage 0').text.tolist() \
        == [CHECKLIST]


def test_an_option_of_the_other_channel_or_an_unused_family_is_refused(shell, target, capsys):
    run(shell, f"%pcmem open {target}")
    run(shell, f'%pcmem remember --kind fact "{CHECKLIST}"')
    line = fail(shell, capsys, '%pcmem search "release checklist" --mode fts --vector-min-cosine 0.5')
    assert line == ("UsageError: --vector-min-cosine does not apply to this fts search: vector_min_cosine judges "
                    "vector candidates, which fts mode does not retrieve; fts mode is decided by fts_min_terms, "
                    "fts_min_coverage, short_query_terms")
    # auto without an embedding model searches fts: the same refusal
    assert "which fts mode does not retrieve" in fail(shell, capsys, '%pcmem search "release" --vector-min-centred 0.3')
    # the fixture's RFC floors use no centred cosine: the option cannot tune it
    line = fail(shell, capsys, '%pcmem search "release" --mode hybrid --vector-min-centred 0.3')
    assert "vector_min_centred is off in this policy" in line and "vector_min_cosine decides instead" in line
    line = fail(shell, capsys, '%pcmem search "release" --mode fts --gate-min 0.5 --gate-signal coverage')
    assert "the whole-query gate, which is off in this policy (gate_min=None)" in line
    assert "fts_min_terms takes int 1..10, got 'x'" in fail(shell, capsys, '%pcmem search "release" --fts-min-terms x')
    assert "fts_min_terms must be an integer" in fail(shell, capsys, '%pcmem search "release" --fts-min-terms 0')
    # switched on for the session, the family's option tunes it
    shell.run_line_magic("config", "PcMem.gate_signal = 'coverage'")
    shell.run_line_magic("config", "PcMem.gate_min = 0.9")
    assert current_service().policy.gate_min == 0.9
    gated = '%pcmem search "release checklist payroll invoices" --mode fts'  # best coverage 2/4
    assert run(shell, gated).empty  # the gate refuses the whole query
    assert run(shell, gated + " --gate-min 0.5").text.tolist() == [CHECKLIST]
    shell.run_line_magic("config", "PcMem.gate_min = 'off'")
    assert current_service().policy.gate_min is None


def test_every_tunable_field_is_a_session_default(shell, sqlite_target):
    run(shell, f"%pcmem open {sqlite_target}")
    magics = shell.magics_manager.registry["PcMem"]
    assert {f.name for f in policy_fields.TUNABLE} <= set(magics.trait_names(config=True))
    shell.run_line_magic("config", "PcMem.hybrid_fts_min_terms = 3")
    shell.run_line_magic("config", "PcMem.vector_uncovered = 'refuse'")
    assert current_service().policy == dataclasses.replace(AdmissionPolicy.rfc_initial(), hybrid_fts_min_terms=3,
                                                           vector_uncovered="refuse")
    with pytest.raises(UsageError, match=r"PcMem.fts_min_terms: fts_min_terms must be an integer ≥ 1"):
        magics.fts_min_terms = 0  # (%config logs the same one line)
    assert magics.fts_min_terms is None and current_service().policy.fts_min_terms == 2  # the old value stays
