"""One description of every ``AdmissionPolicy`` field, for every surface that tunes one.

``%pcmem search``'s options, the ``%config PcMem`` session defaults, the
AdmissionInspector's controls and the ThresholdTuner's sliders are all generated from
``FIELDS`` (issue 45: they were three hand-kept lists, and the thresholds that decided a
hybrid search had no control anywhere). A field added to ``AdmissionPolicy`` needs one
entry in ``DESCRIBED`` — its range, step, modes and help — and appears on all of them;
without one, building ``FIELDS`` fails at import, naming the field.

What the dataclass already says is derived, not repeated: the type (int, float, a word,
or a word or a number), whether None is allowed, the default, and whether the field is
a family's switch (``FAMILIES_OFF``: the value that turns the family off).

Which fields decide a search depends on the mode and on the policy itself, by the same
rules ``admission`` applies:

* a channel's field decides only when the mode retrieves that channel (``modes``);
* a family's field decides only while its family is on (``used``);
* in hybrid mode a ``hybrid_*`` floor that is set replaces its fts-mode counterpart
  (``AdmissionPolicy.fts_floors``), so the counterpart does not decide there;
* the whole-query gate reads the channel of its ``gate_signal``;
* a raw cosine floor of −1 beside the centred cosine is "no raw floor" (the policy's
  docstring): it decides nothing and no reason cites it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import MISSING, dataclass, fields
from typing import Any, Iterable, Mapping

from ..errors import InvalidMemoryRequestError
from .admission import FAMILIES_OFF, GATE_SIGNALS, AdmissionPolicy

__all__ = ["PolicyField", "DESCRIBED", "field_description", "FIELDS", "TUNABLE", "MODES", "by_name", "build",
           "mode_channels", "deciding", "why_not", "reachable", "SWITCHES", "switched", "parse_value", "NO_VALUE"]

#: The modes a search runs in once ``auto`` is resolved, and the channels each retrieves.
MODES = ("fts", "vector", "hybrid")
_CHANNELS = {"fts": frozenset({"fts"}), "vector": frozenset({"vector"}), "hybrid": frozenset({"fts", "vector"})}
#: How a user writes "None" for a field that allows it (the family off, or no floor).
NO_VALUE = "off"
#: Fields whose value moves other fields to another channel: ``gate_signal`` points the
#: whole-query gate (and so ``gate_min``) at the vector pool or at the full-text one.
SWITCHES = ("gate_signal",)


@dataclass(frozen=True)
class PolicyField:
    """One field: ``kind`` is ``int``, ``float``, ``choice`` (one of ``choices``) or
    ``choice|float`` (a word of ``choices`` or a number within the range); ``role`` is
    ``admission`` (decides which candidates pass), ``fusion`` (ranks them), ``pool``
    (how many are retrieved) or ``meta`` (not a threshold: never a control)."""

    name: str
    kind: str
    nullable: bool
    default: Any
    low: float | None
    high: float | None
    step: float | None
    choices: tuple[str, ...]
    channel: str | None  # the channel whose candidates it judges; None: any (fusion, pool, the gate)
    modes: tuple[str, ...]
    role: str
    family: str | None  # the part of ``AdmissionPolicy.family`` it switches on, None: always on
    off: Any  # the value that switches its family off (``FAMILIES_OFF``), or None
    replaces: str | None  # in hybrid mode, the fts-mode field this one stands in for when set
    help: str

    @property
    def option(self) -> str:
        """The command-line option: ``--hybrid-fts-min-terms``."""
        return "--" + self.name.replace("_", "-")

    @property
    def tunable(self) -> bool:
        return self.role != "meta"

    @property
    def integer(self) -> bool:
        return self.kind == "int"

    def used(self, policy: Any) -> bool:
        """Whether the policy's family uses the field (its family is on)."""
        if self.name == "gate_signal":
            return policy.gate_min is not None
        return self.family is None or getattr(policy, self.name) != self.off

    def channel_of(self, policy: Any) -> str | None:
        """The channel it judges; the gate's is its signal's pool (a gate whose channel
        was not retrieved does not apply)."""
        if self.family == "gate":
            return "fts" if policy.gate_signal == "coverage" else "vector"
        return self.channel

    def describe(self) -> str:
        """``int 1..10`` / ``float 0..1 or off`` / ``admit|refuse or -2..2``: what a value may be."""
        number = "" if self.low is None else f"{self.low:g}..{self.high:g}"
        words = "|".join(self.choices)
        text = {"int": f"int {number}", "float": f"float {number}", "choice": words,
                "choice|float": f"{words} or {number}"}[self.kind]
        return text + (f" or {NO_VALUE}" if self.nullable else "")


def field_description(low: float | None, high: float | None, step: float | None, help_: str, *,
                      channel: str | None = None, modes: tuple[str, ...] | None = None, role: str = "admission",
                      family: str | None = None, replaces: str | None = None,
                      choices: tuple[str, ...] = ()) -> dict[str, Any]:
    """One hand-written description: ``channel`` the channel whose candidates it judges
    (None: any), ``modes`` the modes it applies in (default: those retrieving ``channel``)."""
    if modes is None:
        modes = tuple(m for m in MODES if channel is None or channel in _CHANNELS[m])
    return dict(low=low, high=high, step=step, help=help_, channel=channel, modes=modes, role=role, family=family,
                replaces=replaces, choices=choices)


_d = field_description

# Ranges are what the controls span; ``AdmissionPolicy`` validates a value (a test checks
# that each range's ends are accepted and a step below its low end refused).
DESCRIBED: dict[str, dict[str, Any]] = {
    "fts_min_terms": _d(1, 10, 1, "matched distinct query terms a full-text candidate needs (in hybrid mode too, "
                                  "unless hybrid_fts_min_terms is set)", channel="fts"),
    "fts_min_coverage": _d(0.0, 1.0, 0.01, "share of the query's terms a full-text candidate must match (in hybrid "
                                           "mode too, unless hybrid_fts_min_coverage is set)", channel="fts"),
    "vector_min_cosine": _d(-1.0, 1.0, 0.01, "raw cosine floor of a vector candidate (-1: none)", channel="vector"),
    "rrf_k": _d(0, 200, 1, "reciprocal rank fusion constant k: score = sum of 1/(k + rank)", role="fusion"),
    "short_query_terms": _d(0, 10, 1, "a query of at most this many terms needs one matched term", channel="fts"),
    "min_pool": _d(1, 256, 1, "candidates each channel retrieves at least", role="pool"),
    "pool_factor": _d(1, 16, 1, "each channel retrieves limit x this (at least min_pool)", role="pool"),
    "vector_min_centred": _d(-2.0, 2.0, 0.01, "centred cosine (cos - q.c) a vector candidate needs (off: the raw "
                                              "cosine floor alone)", channel="vector", family="centred"),
    "cross_script_min_terms": _d(1, 10, 1, "matched terms that admit a full-text candidate in another script than "
                                           "the query", channel="fts", family="cross-script"),
    "gate_signal": _d(None, None, None, "what the whole-query gate reads: centred, cosine, spread (vector pool) or "
                                        "coverage (fts pool)", family="gate", choices=GATE_SIGNALS),
    "gate_min": _d(-2.0, 2.0, 0.01, "whole-query gate: nothing is admitted when the pool's best gate_signal is "
                                    "below this", family="gate"),
    "vector_uncovered": _d(-2.0, 2.0, 0.01, "a vector candidate outside the embedding profile's scripts: admit, "
                                            "refuse, or judged by this threshold", channel="vector",
                           family="coverage", choices=("admit", "refuse")),
    "hybrid_fts_min_terms": _d(1, 10, 1, "matched distinct query terms a full-text candidate needs beside the "
                                         "vector channel (hybrid)", channel="fts", modes=("hybrid",),
                               family="hybrid-floors", replaces="fts_min_terms"),
    "hybrid_fts_min_coverage": _d(0.0, 1.0, 0.01, "share of the query's terms a full-text candidate must match "
                                                  "beside the vector channel (hybrid)", channel="fts",
                                  modes=("hybrid",), family="hybrid-floors", replaces="fts_min_coverage"),
    "profile": _d(None, None, None, "the embedding profile the policy was tuned for (not a threshold)",
                  modes=(), role="meta"),
    "vector_min_support": _d(0.0, 1.0, 0.01, "IDF-weighted share of the query's terms a vector candidate holding "
                                             "some of them needs (hybrid)", channel="vector", modes=("hybrid",),
                             family="support"),
    "fts_min_support": _d(0.0, 1.0, 0.01, "IDF-weighted share of the query's terms a full-text candidate needs "
                                          "besides its term floor", channel="fts", family="support"),
    "min_probability": _d(0.0, 1.0, 0.01, "calibrated probability of answering a candidate needs where the profile "
                                          "has a calibration (it replaces that channel's raw floors; off: raw "
                                          "floors)", family="probability"),
}


def _kind(hint: Any) -> tuple[str, bool]:
    """(kind, nullable) from a field's resolved type hint."""
    args = set(typing.get_args(hint)) if isinstance(hint, types.UnionType) else {hint}
    nullable = type(None) in args
    args.discard(type(None))
    if args == {int}:
        return "int", nullable
    if args == {float}:
        return "float", nullable
    if args == {str, float}:
        return "choice|float", nullable
    if args == {str}:
        return "choice", nullable
    raise TypeError(f"AdmissionPolicy field type {hint!r} has no kind in policy_fields")


def build(policy_class: type = AdmissionPolicy, described: Mapping[str, tuple] = DESCRIBED) -> tuple[PolicyField, ...]:
    """The description of every field of ``policy_class``, in its order. A field with
    no entry in ``described`` is refused by name (a field nobody can tune is a bug)."""
    out, hints = [], typing.get_type_hints(policy_class)
    for f in fields(policy_class):
        if f.name not in described:
            raise TypeError(f"AdmissionPolicy.{f.name} has no description in powercontext/memory/policy_fields.py "
                            "(DESCRIBED): give its range, step, modes and help")
        kind, nullable = _kind(hints[f.name])
        out.append(PolicyField(name=f.name, kind=kind, nullable=nullable,
                               default=None if f.default is MISSING else f.default,
                               off=FAMILIES_OFF.get(f.name), **described[f.name]))
    return tuple(out)


FIELDS: tuple[PolicyField, ...] = build()
TUNABLE: tuple[PolicyField, ...] = tuple(f for f in FIELDS if f.tunable)


def by_name(fields_: Iterable[PolicyField] | None = None) -> dict[str, PolicyField]:
    return {f.name: f for f in (FIELDS if fields_ is None else fields_)}


def mode_channels(mode: str) -> frozenset[str]:
    return _CHANNELS[mode]


def _replacement(field: PolicyField, policy: Any, known: Mapping[str, PolicyField]) -> PolicyField | None:
    """The hybrid floor that stands in for ``field`` in hybrid mode, when it is set."""
    for other in known.values():
        if other.replaces == field.name and other.used(policy):
            return other
    return None


def why_not(field: PolicyField, policy: Any, mode: str, fields_: Iterable[PolicyField] | None = None,
            *, _list: bool = True) -> str | None:
    """Why ``field`` does not decide a ``mode`` search under ``policy`` — naming the field
    that does, or how to switch its family on — or None when it applies. One line."""
    known = by_name(fields_)
    if not field.tunable:
        return f"{field.name} is {field.help}"
    channel = field.channel_of(policy)
    if channel is not None and channel not in _CHANNELS[mode]:
        deciding_here = (", ".join(deciding(policy, mode, fields_)) or "nothing") if _list else ""
        return (f"{field.name} judges {channel} candidates, which {mode} mode does not retrieve; "
                f"{mode} mode is decided by {deciding_here}")
    if mode not in field.modes:
        instead = known.get(field.replaces) if field.replaces else None
        return (f"{field.name} applies in {' and '.join(field.modes)} mode only"
                + (f"; {mode} mode's is {instead.name}" if instead else ""))
    if mode == "hybrid":
        replacement = _replacement(field, policy, known)
        if replacement is not None:
            return (f"{field.name} does not apply in hybrid mode: this policy's hybrid floor is "
                    f"{replacement.name}={getattr(policy, replacement.name)!r}")
    if not field.used(policy):
        if field.name == "gate_signal":
            return "gate_signal is read only by the whole-query gate, which is off in this policy (gate_min=None)"
        instead = known.get(field.replaces) if field.replaces else None
        if field.name == "vector_min_centred":
            instead = known.get("vector_min_cosine")
        return (f"{field.name} is off in this policy ({field.name}={field.off!r}: the {field.family} family is not "
                f"used{f'; {instead.name} decides instead' if instead else ''}); switch it on with "
                f"%config PcMem.{field.name} or a policy file")
    return None


def switched(policy: Any, values: Mapping[str, Any]) -> Any:
    """``policy`` with the switches among ``values`` (``SWITCHES``) set: what decides which
    other fields apply — a given ``gate_signal`` moves ``gate_min`` to its pool, while
    whether a family is on stays the policy's (a value tunes a rule, it does not switch
    one on)."""
    chosen = {name: values[name] for name in SWITCHES if name in values}
    return dataclasses.replace(policy, **chosen) if chosen else policy


def reachable(field: PolicyField, policy: Any, mode: str, fields_: Iterable[PolicyField] | None = None) -> bool:
    """Whether a control for ``field`` belongs on a ``mode`` surface under ``policy``: it
    decides there, or it is a switch (``SWITCHES``) one of whose values would make it
    decide — so a gate pointed at the pool this mode does not retrieve can be pointed
    at the one it does (a switch hidden with its gate would leave the gate out of reach)."""
    if why_not(field, policy, mode, fields_) is None:
        return True
    if field.name not in SWITCHES:
        return False
    return any(why_not(field, dataclasses.replace(policy, **{field.name: value}), mode, fields_) is None
               for value in field.choices)


def deciding(policy: Any, mode: str, fields_: Iterable[PolicyField] | None = None) -> list[str]:
    """The admission fields that decide a ``mode`` search under ``policy``: what the
    AdmissionInspector's status line names, a superset of what any reason cites."""
    out = []
    for field in (TUNABLE if fields_ is None else fields_):
        if field.role != "admission" or why_not(field, policy, mode, fields_, _list=False) is not None:
            continue
        no_raw_floor = policy.vector_min_centred is not None and policy.vector_min_cosine <= -1
        if field.name == "vector_min_cosine" and no_raw_floor:
            continue  # -1 beside the centred cosine: no raw floor, never checked
        out.append(field.name)
    return out


def parse_value(field: PolicyField, text: Any) -> Any:
    """A field's value from a word a user typed (an option, a %config string): a number of
    its kind, one of its words, or ``off`` (None) where the field allows it."""
    if isinstance(text, str):
        word = text.strip()
        if field.nullable and word.lower() in (NO_VALUE, "none"):
            return None
        if word in field.choices:
            return word
        if field.kind == "choice":
            raise InvalidMemoryRequestError(f"{field.name} must be one of {', '.join(field.choices)}"
                                            f"{' or ' + NO_VALUE if field.nullable else ''}, got {word[:40]!r}")
        try:
            value = int(word) if field.integer else float(word)
        except ValueError:
            raise InvalidMemoryRequestError(f"{field.name} takes {field.describe()}, got {word[:40]!r}") from None
    else:
        value = text
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidMemoryRequestError(f"{field.name} takes {field.describe()}, got {value!r}")
    return value
