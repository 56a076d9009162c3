"""The AdmissionInspector's threshold controls, one per admission policy field,
generated from ``powercontext.memory.policy_fields`` (issue 45: the inspector had
sliders for three fields while the reasons cited others).

A control is shown only where its field decides the search in view — the mode the
search ran in, the family the inspector's base policy uses (``policy_fields.why_not``),
the pool the gate reads as its switch (``gate_signal``) says now — and only shown
controls enter the replayed policy: a hidden one keeps the base policy's value, so a
placeholder never switches a family on. A switch stays shown wherever one of its
values would apply (``policy_fields.reachable``).
"""

from __future__ import annotations

from typing import Any, Iterable

import ipywidgets as widgets

from powercontext.memory import policy_fields
from powercontext.memory.policy_fields import PolicyField

__all__ = ["make_control", "control_value", "applicable", "policy_text"]

STYLE = {"description_width": "initial"}


def make_control(field: PolicyField, value: Any) -> widgets.Widget:
    """A slider for a number (its range widened to hold ``value``), a dropdown for a word;
    ``vector_uncovered`` (a word or a threshold) offers the words and the value it has."""
    tip = f"{field.help} [{field.describe()}]"
    common = dict(description=field.name, style=STYLE, tooltip=tip, continuous_update=False)
    if field.kind in ("int", "float"):
        start = field.default if value is None else value  # hidden until its family is on: any value
        if start is None:
            start = field.low
        low, high = min(field.low, start), max(field.high, start)
        if field.integer:
            return widgets.IntSlider(value=int(start), min=int(low), max=int(high), step=int(field.step), **common)
        return widgets.FloatSlider(value=float(start), min=low, max=high, step=field.step, readout_format=".2f",
                                   **common)
    options = list(field.choices)
    if value is not None and value not in options:
        options.append(value)
    common.pop("continuous_update")
    return widgets.Dropdown(options=options, value=value if value is not None else options[0], **common)


def control_value(field: PolicyField, control: widgets.Widget) -> Any:
    value = control.value
    if field.integer:
        return int(value)
    if field.kind == "float":
        return float(value)
    return value


def applicable(policy: Any, mode: str, fields: Iterable[PolicyField]) -> list[PolicyField]:
    """The tunable fields that can decide a ``mode`` search under ``policy``'s family,
    and the switches that could make one decide (``policy_fields.reachable``)."""
    fields = tuple(fields)
    return [f for f in fields if f.tunable and policy_fields.reachable(f, policy, mode, fields)]


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, str) else f"{value:g}"


def policy_text(policy: Any, mode: str, fields: Iterable[PolicyField] | None = None) -> str:
    """The fields that decide a ``mode`` search, with their values:
    ``hybrid_fts_min_terms=4, hybrid_fts_min_coverage=0.34, vector_min_centred=0.31``."""
    names = policy_fields.deciding(policy, mode, None if fields is None else tuple(fields))
    return ", ".join(f"{n}={_shown(getattr(policy, n))}" for n in names) or "no threshold"
