"""ThresholdTuner — PLACEHOLDER until the evaluation harness exists.

Planned (issue 7): ``ThresholdTuner(sweep_result)`` shows sliders over the thresholds
of a harness sweep (fts_min_terms, fts_min_coverage, vector_min_cosine), updates the
metrics of the nearest sweep point live, and draws the metric-vs-threshold plot with
the chosen point marked.

It is deliberately not implemented here: the sweep result's data format belongs to the
harness (``powercontext.eval``), which is being written in parallel, and this module
must not invent it. The lead finishes it once ``powercontext.eval.harness`` publishes
its sweep result type. Until then constructing it raises NotImplementedError with that
explanation, so nothing silently shows made-up numbers.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ThresholdTuner"]


class ThresholdTuner:
    """Placeholder: see the module docstring."""

    def __init__(self, sweep_result: Any, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            "ThresholdTuner needs the sweep result of powercontext.eval.harness, which is not available yet"
        )
