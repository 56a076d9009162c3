"""The hybrid cell of a calibration artefact (issue 46 item 1): one probability for a
candidate of a hybrid search from what BOTH channels say about it.

A hybrid search retrieves an entry by full text, by vector, or by both. Each channel's
own map gives a probability (``Calibration.probability``); the hybrid cell stacks them
Platt-style — a logistic regression (scikit-learn, fitted in
``powercontext.eval.scoring.calibrate``) on

* ``logit(p_vector)`` — the vector probability, ``EPS`` when the vector channel did
  not retrieve the entry,
* ``logit(p_fts)`` — the full-text probability, ``EPS`` when full text did not,
* ``both`` — 1 when both channels retrieved it,

so ``p = σ(intercept + w_v·logit(p_v) + w_f·logit(p_f) + w_b·both)``. Every weight is
≥ 0 (schema-checked): more evidence from either channel never lowers the
probability, which is what makes one ``min_probability`` threshold meaningful.

Applied here with the standard library only (search needs no scikit-learn).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

__all__ = ["EPS", "HybridCalibration", "logit"]

#: Probabilities are clipped to [EPS, 1 − EPS] before the logit; a channel that did not
#: retrieve the entry contributes logit(EPS).
EPS = 1e-3


def logit(p: float, eps: float = EPS) -> float:
    p = min(max(p, eps), 1.0 - eps)
    return math.log(p / (1.0 - p))


class HybridCalibration(BaseModel):
    """Platt stacking of the two channels' calibrated probabilities and the found-by-both flag."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str = Field(default="platt-stacking", pattern="^platt-stacking$")
    n: int = Field(ge=0, description="labelled (question, entry) pairs of hybrid pools it was fitted on")
    positives: int = Field(ge=0, description="of which relevant")
    eps: float = Field(default=EPS, gt=0.0, lt=0.5)
    intercept: float
    vector: float = Field(ge=0.0, description="weight of logit(vector probability); ≥ 0 keeps the map monotone")
    fts: float = Field(ge=0.0, description="weight of logit(full-text probability); ≥ 0 keeps the map monotone")
    both: float = Field(ge=0.0, description="weight of the found-by-both flag; ≥ 0 keeps the map monotone")
    # the fields as plain floats, read per candidate of every hybrid search (pydantic's
    # attribute route cost more than the arithmetic; the 0.2 ms budget of issue 46)
    _fast: tuple = PrivateAttr(default=())

    @model_validator(mode="after")
    def _finite(self) -> "HybridCalibration":
        for name in ("intercept", "vector", "fts", "both"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be a finite number")
        if self.positives > self.n:
            raise ValueError(f"positives ({self.positives}) cannot exceed n ({self.n})")
        return self

    def model_post_init(self, context: object) -> None:
        self._fast = (self.intercept, self.vector, self.fts, self.both, self.eps, 1.0 - self.eps,
                      logit(0.0, self.eps))

    def model_copy(self, *, update=None, deep: bool = False) -> "HybridCalibration":
        copy = super().model_copy(update=update, deep=deep)
        copy.model_post_init(None)  # an updated weight must not read the old plain floats
        return copy

    def __call__(self, p_vector: float | None, p_fts: float | None) -> float:
        """The hybrid probability; None = the channel did not retrieve the entry."""
        b, wv, wf, wb, low, high, floor = self.__pydantic_private__["_fast"]
        z = b
        if p_vector is None:
            z += wv * floor
        else:
            p = low if p_vector < low else high if p_vector > high else p_vector
            z += wv * math.log(p / (1.0 - p))
        if p_fts is None:
            z += wf * floor
        else:
            p = low if p_fts < low else high if p_fts > high else p_fts
            z += wf * math.log(p / (1.0 - p))
            if p_vector is not None:
                z += wb
        # σ(z) without overflow for large |z|
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)
