"""The admission policy's fields as ``%pcmem search`` options and ``%config PcMem``
session defaults, generated from ``powercontext.memory.policy_fields`` (one option and
one config trait per tunable field: ``--hybrid-fts-min-terms``, ``--vector-min-centred``,
``--vector-uncovered admit|refuse`` …), so a field added to the policy appears here with
no further code.

An option that cannot decide the search asked for is refused with the reason
(``policy_fields.why_not``), never silently ignored: ``--fts-min-terms`` in hybrid mode
when the policy's hybrid floor is ``hybrid_fts_min_terms``, ``--vector-min-cosine`` in
fts mode, ``--vector-min-centred`` when the policy's family has no centred cosine. The
session defaults are not refused by mode (they serve every mode) and may switch a family
on: that is how a user tries one.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Iterable, Mapping

from traitlets import Enum, Float, HasTraits, Int, Union

from powercontext import AdmissionPolicy
from powercontext.memory import policy_fields
from powercontext.memory.policy_fields import PolicyField

from .errors import PcMemUserError

__all__ = ["add_arguments", "options_help", "given", "refusals", "checked_policy", "resolved_mode", "config_traits",
           "PolicyTraits", "config_overrides", "CONFIG_NAMES"]

GROUP = "admission policy (one option per AdmissionPolicy field; refused where it cannot decide the search)"


def _tunable(fields: Iterable[PolicyField] | None) -> tuple[PolicyField, ...]:
    return tuple(f for f in (policy_fields.FIELDS if fields is None else fields) if f.tunable)


def _metavar(field: PolicyField) -> str:
    if field.choices:
        return "|".join(field.choices) + ("|X" if field.kind == "choice|float" else "")
    return "N" if field.integer else "X"


def add_arguments(parser: argparse.ArgumentParser, fields: Iterable[PolicyField] | None = None) -> None:
    """One option per tunable field, in an argument group of its own (values are
    parsed later by ``policy_fields.parse_value``, so a bad one gets the library's
    one-line message, not argparse's)."""
    group = parser.add_argument_group(GROUP)
    for field in _tunable(fields):
        group.add_argument(field.option, dest=field.name, default=None, metavar=_metavar(field),
                           help=f"{field.help} [{field.describe()}; modes: {', '.join(field.modes)}]")


def options_help(fields: Iterable[PolicyField] | None = None) -> str:
    """The search's policy options, one per line, for the magics' docstring."""
    lines = [f"Admission policy options of ``search`` ({GROUP.split('(', 1)[1].rstrip(')')}):", ""]
    lines += [f"* ``{f.option} {_metavar(f)}`` — {f.help} [{f.describe()}]" for f in _tunable(fields)]
    return "\n".join(lines)


def given(args: argparse.Namespace, fields: Iterable[PolicyField] | None = None) -> dict[PolicyField, Any]:
    """The policy options the user gave, parsed to their values."""
    out = {}
    for field in _tunable(fields):
        text = getattr(args, field.name, None)
        if text is not None:
            try:
                out[field] = policy_fields.parse_value(field, text)
            except ValueError as exc:  # InvalidMemoryRequestError
                raise PcMemUserError(f"{field.option}: {exc}") from None
    return out


def resolved_mode(mode: str, svc: Any) -> str:
    """The mode a search will run in: ``auto`` is hybrid with an embedding model, else fts
    (a search that falls back anyway is checked again against the mode it used)."""
    if mode != "auto":
        return mode
    return "fts" if getattr(svc, "embedding", None) is None else "hybrid"


def refusals(options: Mapping[PolicyField, Any], base: AdmissionPolicy, mode: str,
             fields: Iterable[PolicyField] | None = None) -> list[str]:
    """Why each given option cannot decide a ``mode`` search under ``base``: whether a
    family is on is the base policy's (an option tunes a rule, it does not switch one
    on), which channel the gate reads is the given ``gate_signal``'s."""
    judged = policy_fields.switched(base, {f.name: v for f, v in options.items()})
    out = []
    for field in options:
        reason = policy_fields.why_not(field, judged, mode, fields)
        if reason is not None:
            out.append(f"{field.option} does not apply to this {mode} search: {reason}")
    return out


def checked_policy(options: Mapping[PolicyField, Any], base: AdmissionPolicy, mode: str,
                   fields: Iterable[PolicyField] | None = None) -> AdmissionPolicy | None:
    """``base`` with the given options, each checked to decide a ``mode`` search; None
    when no option was given (the session's policy)."""
    if not options:
        return None
    refused = refusals(options, base, mode, fields)
    if refused:
        raise PcMemUserError(refused[0])
    try:
        return dataclasses.replace(base, **{f.name: v for f, v in options.items()})
    except ValueError as exc:  # InvalidMemoryRequestError: out of range
        raise PcMemUserError(f"bad admission threshold: {exc}") from None


def for_search(args: argparse.Namespace, mode: str, svc: Any) -> tuple[dict[PolicyField, Any], str, AdmissionPolicy | None]:
    """What ``%pcmem search`` and ``%pcmem runtime search`` do with their policy options
    before searching ``svc``: (the options given, the mode planned, the policy to search
    with — None for the service's own), each option checked to decide that mode."""
    options = given(args)
    planned = resolved_mode(mode, svc)
    return options, planned, checked_policy(options, svc.policy, planned)


def fallback_notes(options: Mapping[PolicyField, Any], base: AdmissionPolicy, planned: str,
                   used: str) -> list[str]:
    """A note per given option the search could not use, when ``auto`` fell back from the
    planned mode to ``used``; none when it ran as planned."""
    return [] if used == planned else [f"note: {line}" for line in refusals(options, base, used)]


# ---------------------------------------------------------------------- %config PcMem


def _trait(field: PolicyField) -> Any:
    """A config trait for one field: None (the default) means "the policy's own value";
    ``off`` means None where the field allows it (its family switched off). Ranges are
    the policy's to check (``PcMem`` builds one when a value is set)."""
    options = dict(default_value=None, allow_none=True,
                   help=f"session default {field.name}: {field.help} [{field.describe()}]")
    number = Int if field.integer else Float
    kinds = {"int": [number()], "float": [number()], "choice": [Enum(list(field.choices))],
             "choice|float": [Enum(list(field.choices)), Float()]}[field.kind]
    if field.nullable:
        kinds.append(Enum([policy_fields.NO_VALUE]))
    if len(kinds) == 1:
        single = {"int": Int, "float": Float}.get(field.kind)
        trait = single(**options) if single else Enum(list(field.choices), **options)
    else:
        trait = Union(kinds, **options)
    return trait.tag(config=True)


def config_traits(fields: Iterable[PolicyField] | None = None) -> dict[str, Any]:
    return {field.name: _trait(field) for field in _tunable(fields)}


#: The traits ``PcMem`` inherits: ``%config PcMem.<field> = value`` for every tunable field.
PolicyTraits = type("PolicyTraits", (HasTraits,), config_traits())
CONFIG_NAMES: tuple[str, ...] = tuple(f.name for f in _tunable(None))


def config_overrides(owner: Any, fields: Iterable[PolicyField] | None = None) -> dict[str, Any]:
    """The session defaults that are set, as policy values (``off`` → None)."""
    out = {}
    for field in _tunable(fields):
        value = getattr(owner, field.name, None)
        if value is not None:
            out[field.name] = None if value == policy_fields.NO_VALUE else value
    return out
