"""The bound sensitivity table (``recommend.sensitivity``): the choice under other
false-admission bounds. The bound only decides which policies are feasible, so each mode's
table of policies is built once per objective, not once per bound (it was 7 of every
tiny sweep's ~46 s under load)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from powercontext.eval.scoring import recommend
from powercontext.eval.scoring.recommend import Objective, choose, choose_joint


def _from_scratch(sweep, modes, objective, bounds):
    """What sensitivity must equal: every choice made again from the sweep."""
    rows = []
    for mode in [*modes, "joint"]:
        pick = (lambda o: choose_joint(sweep, modes, o)) if mode == "joint" else (lambda o: choose(sweep, mode, o))
        for bound in bounds:
            o = replace(objective, bound=bound)
            rows.append(dict(mode=mode, rule=f"max {o.metric} s.t. {o.constraint} ≤ {bound:g}", **recommend._brief(pick(o))))
        o = replace(objective, metric="set_f1", bound=1.0, secondary=objective.metric)
        rows.append(dict(mode=mode, rule="max set_f1 (no bound)", **recommend._brief(pick(o))))
    return pd.DataFrame(rows)


def test_sensitivity_builds_each_table_once_per_objective_and_chooses_as_from_scratch(tiny_run, monkeypatch):
    sweep, objective, bounds = tiny_run.sweep, Objective(), (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
    expected = _from_scratch(sweep, ["fts"], objective, bounds)
    assert expected["label"].nunique() > 1  # the bounds do move the choice: the comparison can fail
    built = []
    real = recommend._per_policy
    monkeypatch.setattr(recommend, "_per_policy", lambda *a, **k: built.append(1) or real(*a, **k))
    read = recommend._read_by(sweep, objective)  # the rows sensitivity reads (families absent there build nothing)
    choose(read, "fts", objective), choose_joint(read, ["fts"], objective)
    per_objective = len(built)  # fts's table, and the joint choice's one per mode (and one per family a mode lacks)
    table = recommend.sensitivity(sweep, ["fts"], objective, bounds)
    pd.testing.assert_frame_equal(table, expected)
    # two objectives (the bounded metric, then set_f1), not seven (each bound, then set_f1)
    assert len(built) - per_objective == 2 * per_objective, (len(built) - per_objective, per_objective)
