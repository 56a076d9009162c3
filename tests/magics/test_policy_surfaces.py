"""Issue 45 §1: the AdmissionInspector takes its query on the command line and has a
control for every field that decides the search in view (its status line names exactly
those); the ThresholdTuner's sliders come from the same description; and a field added
to the policy later appears on the search options, the inspector and the tuner with
no further code."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
from IPython.core.magic_arguments import MagicArgumentParser

from powercontext import AdmissionPolicy
from powercontext.magics import current_runner, current_service, policy_options
from powercontext.magics.usage import help_text
from powercontext.magics.widgets import AdmissionInspector, ThresholdTuner
from powercontext.memory import policy_fields

from .helpers import run

CHECKLIST = "The staging release checklist: run make test, then tag the build."
OTHER = "Nightly backups of the production database run at 02:00 UTC."
QUERY = "what is on the release checklist for staging deploys rollbacks and hotfixes"
NAMES = "|".join(f.name for f in policy_fields.TUNABLE)


def _cited(inspector) -> set[str]:
    return {m for reason in inspector.rejected.reason for m in re.findall(rf"\b({NAMES})\b", reason)}


def _status_fields(inspector) -> list[str]:
    at = inspector.status_line.split(" at ", 1)[1].split(" (no database")[0]
    return [part.split("=")[0] for part in at.split(", ")]


def _fts_admitted(inspector, text) -> bool:
    frame = inspector.admitted
    return bool(((frame.channel == "fts") & (frame.text == text)).any())


def test_the_inspector_takes_the_query_and_offers_the_hybrid_floors(shell, target):
    """Before: sliders for fts_min_terms, fts_min_coverage and vector_min_cosine only, a
    status line naming those three while the reasons cited hybrid_fts_min_terms=4 and
    vector_min_centred=0.31, and no query argument."""
    run(shell, f"%pcmem open {target} --embedding minilm")
    shell.run_line_magic("config", "PcMem.policy_file = None")  # the shipped MiniLM default
    run(shell, f'%%pcmem remember --kind fact\n{CHECKLIST}\n\n{OTHER}\n')
    w = run(shell, f'%pcmem inspect admission "{QUERY}" --mode hybrid')
    assert isinstance(w, AdmissionInspector) and w.query.value == QUERY and w.result.mode == "hybrid"
    assert set(policy_fields.deciding(w.policy, "hybrid")) | {"rrf_k", "min_pool", "pool_factor"} <= set(w.shown)
    assert {"hybrid_fts_min_terms", "hybrid_fts_min_coverage", "vector_min_centred", "cross_script_min_terms"} \
        <= set(w.shown)
    assert "fts_min_terms" not in w.shown and "gate_min" not in w.shown
    assert w.controls["fts_min_terms"].layout.display == "none" and w.controls["hybrid_fts_min_terms"].layout.display is None
    assert _status_fields(w) == policy_fields.deciding(w.policy, "hybrid")
    assert "hybrid_fts_min_terms=4" in w.status_line and "vector_min_centred=0.31" in w.status_line
    assert _cited(w) <= set(_status_fields(w)) <= set(w.shown)  # every cited field has a control
    assert not _fts_admitted(w, CHECKLIST)

    w.hybrid_fts_min_terms.value = 1
    w.hybrid_fts_min_coverage.value = 0.0
    assert _fts_admitted(w, CHECKLIST) and w.retrievals == 1
    assert "hybrid_fts_min_terms=1, hybrid_fts_min_coverage=0" in w.status_line
    runner, svc = current_runner(shell), current_service(shell)
    heads = runner.run(svc.memories())
    online = runner.run(svc.search(QUERY, memories=[runner.run(svc.head(r.artifact_id)) for r in heads],
                                   mode="hybrid", policy=w.policy))
    assert [h.entry_id for h in online] == w.hits.entry_id.tolist()

    w.mode.value = "fts"
    assert w.result.mode == "fts" and "fts_min_terms" in w.shown and "hybrid_fts_min_terms" not in w.shown
    assert "vector_min_centred" not in w.shown and _status_fields(w) == policy_fields.deciding(w.policy, "fts")
    # a hidden control keeps its value but does not enter the policy (a placeholder must not switch a family on)
    assert w.hybrid_fts_min_terms.value == 1 and w.policy.hybrid_fts_min_terms == 4


def _extended():
    """A field a later issue adds (hypothetical: issue 46's min_probability landed the same way), described once."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Extended(AdmissionPolicy):
        min_answer_margin: float | None = 0.5

    described = {**policy_fields.DESCRIBED, "min_answer_margin": policy_fields.field_description(
        0.0, 1.0, 0.05, "a hypothetical later field")}
    return Extended, policy_fields.build(Extended, described)


def test_a_new_policy_field_appears_on_every_surface_with_no_further_code(shell, sqlite_target):
    Extended, fields = _extended()
    assert fields[-1].name == "min_answer_margin" and fields[-1].nullable and fields[-1].kind == "float"

    # %pcmem search: an option, listed in the help, parsed and applied
    parser = MagicArgumentParser(prog="pcmem search")
    policy_options.add_arguments(parser, fields)
    assert "--min-answer-margin X" in help_text(parser)
    options = policy_options.given(parser.parse_args(["--min-answer-margin", "0.7"]), fields)
    assert policy_options.checked_policy(options, Extended(), "fts", fields).min_answer_margin == 0.7
    assert "min_answer_margin" in policy_options.config_traits(fields)
    assert "--min-answer-margin" in policy_options.options_help(fields)

    # the AdmissionInspector: a control that enters the replayed policy and the status line
    run(shell, f"%pcmem open {sqlite_target}")
    run(shell, f'%pcmem remember --kind fact "{CHECKLIST}"')
    svc = current_service(shell)
    svc.policy = Extended(**{k: v for k, v in dataclasses.asdict(svc.policy).items()})
    w = AdmissionInspector(svc, runner=current_runner(shell), query="release checklist", fields=fields)
    assert "min_answer_margin" in w.shown and w.min_answer_margin.value == 0.5
    w.min_answer_margin.value = 0.8
    assert w.policy.min_answer_margin == 0.8 and "min_answer_margin=0.8" in w.status_line

    # the ThresholdTuner: a slider for the swept column
    sweep = pd.DataFrame([dict(backend="sqlite", mode="fts", corpus="all", split="dev", limit=8, fts_min_terms=2,
                               fts_min_coverage=0.3, min_answer_margin=p, **{"ndcg@10": p, "false_admission": 1 - p})
                          for p in (0.2, 0.5, 0.8)])
    t = ThresholdTuner(sweep, fields=fields)
    assert "min_answer_margin" in t.sliders and "min_answer_margin" in t.relevant
    t.sliders["min_answer_margin"].value = 0.8
    assert t.point["ndcg@10"] == 0.8 and "min_answer_margin=0.8" in repr(t)


def test_the_tuner_offers_every_swept_policy_field():
    nan = float("nan")
    sweep = pd.DataFrame([dict(backend="sqlite", mode="hybrid", corpus="all", split="dev", limit=8,
                               fts_min_terms=nan, hybrid_fts_min_terms=t, vector_min_support=s,
                               fts_min_support=0.2, **{"ndcg@10": t / 10 + s, "false_admission": 0.1})
                          for t in (3, 4) for s in (0.2, 0.4)])
    t = ThresholdTuner(sweep)
    # before: support fields had no slider at all
    assert {"hybrid_fts_min_terms", "vector_min_support", "fts_min_support"} <= set(t.sliders)
    assert set(t.relevant) == {"hybrid_fts_min_terms", "vector_min_support", "fts_min_support"}
    t.sliders["vector_min_support"].value = 0.4
    t.sliders["hybrid_fts_min_terms"].value = 3
    assert t.point["ndcg@10"] == 0.3 + 0.4
