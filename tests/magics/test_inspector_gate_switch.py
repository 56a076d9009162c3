"""The AdmissionInspector's gate-signal switch (issue 45 §1 leftovers): ``gate_signal``
chooses which pool the whole-query gate reads — the vector pool (centred, cosine,
spread) or the full-text one (coverage) — so switching it changes whether ``gate_min``
decides the search in view. The controls must follow the switch: ``gate_min`` shown
exactly where the gate applies under the signal picked now, the switch itself shown
wherever some signal could apply. Tested on the widget's Python model, both databases,
the real MiniLM model."""

from __future__ import annotations

import dataclasses

from powercontext.magics import current_runner, current_service
from powercontext.magics.widgets import AdmissionInspector
from powercontext.memory import admission, policy_fields

from .helpers import run

ENTRIES = ("The staging release checklist: run make test, then tag the build.",
           "Nightly backups of the production database run at 02:00 UTC.")
QUERY = "what is on the release checklist"


def _visible(w) -> set[str]:
    return {name for name, control in w.controls.items() if control.layout.display != "none"}


def _inspector(shell, target, mode, **gate):
    run(shell, f"%pcmem open {target} --embedding minilm")
    run(shell, "%%pcmem remember --kind fact\n" + "\n\n".join(ENTRIES) + "\n")
    svc = current_service(shell)
    svc.policy = dataclasses.replace(svc.policy, **gate)
    return AdmissionInspector(svc, runner=current_runner(shell), query=QUERY, mode=mode)


def _replayed_equals_online(shell, w):
    runner, svc = current_runner(shell), current_service(shell)
    heads = [runner.run(svc.head(r.artifact_id)) for r in runner.run(svc.memories())]
    online = runner.run(svc.search(QUERY, memories=heads, mode=w.result.mode, policy=w.policy, explain=True))
    assert [h.entry_id for h in online] == list(w.hits.entry_id)
    replayed = [(r.channel, r.entry_id, r.admitted, r.reason) for f in (w.admitted, w.rejected) for r in f.itertuples()]
    assert sorted((d.candidate.channel, d.candidate.entry_id, d.admitted, d.reason) for d in online.decisions) == \
        sorted(replayed)


def test_switching_the_gate_signal_rechecks_the_gate_controls(shell, target):
    # vector mode, the gate on the vector pool: its threshold decides, and has a control
    w = _inspector(shell, target, "vector", gate_min=0.22, gate_signal="centred")
    assert {"gate_signal", "gate_min"} <= _visible(w) and "gate_min=0.22" in w.status_line

    # switched to the full-text pool, which vector mode does not retrieve: gate_min decides
    # nothing any more, so its control goes (before: it stayed, a slider that did nothing)
    w.gate_signal.value = "coverage"
    assert w.policy.gate_signal == "coverage"
    assert "gate_min" not in _visible(w) and "gate_min" not in w.shown and "gate_signal" in _visible(w)
    assert "gate_min" not in w.status_line
    assert policy_fields.why_not(policy_fields.by_name()["gate_min"], w.policy, "vector") is not None
    _replayed_equals_online(shell, w)

    # and back: the control returns and decides again
    w.gate_signal.value = "spread"
    assert "gate_min" in _visible(w) and "gate_min=0.22" in w.status_line
    w.gate_min.value = 2.0  # no pool's spread reaches 2: the gate shuts
    assert w.result.hits == () and w.policy.gate_min == 2.0
    _replayed_equals_online(shell, w)


def test_a_gate_on_the_other_pool_can_be_switched_to_this_modes_pool(shell, target):
    # fts mode with the gate on the vector pool: the gate does not apply — but the switch
    # must stay reachable, or the user cannot point the gate at the pool fts retrieves
    # (before: gate_signal and gate_min were both hidden, the gate out of reach)
    w = _inspector(shell, target, "fts", gate_min=0.5, gate_signal="centred")
    assert "gate_signal" in _visible(w) and "gate_min" not in _visible(w)
    assert "gate_min" not in w.status_line
    w.gate_signal.value = "coverage"
    assert "gate_min" in _visible(w) and "gate_min=0.5" in w.status_line
    w.gate_min.value = 1.5  # no coverage reaches 1.5: the gate shuts
    assert w.result.hits == ()
    _replayed_equals_online(shell, w)
    # the mode switched with the new signal in force: hybrid reads both pools, the gate applies there too
    w.mode.value = "hybrid"
    assert {"gate_signal", "gate_min"} <= _visible(w) and w.policy.gate_signal == "coverage"
    assert admission.GATE_SIGNALS == tuple(w.gate_signal.options)
