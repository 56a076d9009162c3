"""The grid options of ``%pcmem eval``, named as ``python -m powercontext.eval sweep``
names them (``--quick``, ``--families``, ``--limits``, ``--modes``), so a researcher in a
notebook can sweep a small grid instead of the full default one (a minute and a half on
a loaded machine for one bundled corpus). A bad value is refused with the magic's
one-line error before anything is loaded."""

from __future__ import annotations

import argparse
from typing import Any

from .errors import PcMemUserError

__all__ = ["add_arguments", "sweep_options"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options, in a group of their own; values are parsed by ``sweep_options`` so
    a bad one gets the magic's one-line message, not argparse's."""
    group = parser.add_argument_group("grid (as `python -m powercontext.eval sweep` names them)")
    group.add_argument("--quick", action="store_true",
                       help="the families of `sweep --quick` (make eval-quick): floors and "
                            "centred+cross-script+coverage instead of every family")
    group.add_argument("--families", default=None, metavar="F1,F2",
                       help="comma-separated admission families to sweep (default: every family of the grid)")
    group.add_argument("--limits", default=None, metavar="N1,N2", help="comma-separated limit grid (default 1,3,5,8,10)")
    group.add_argument("--modes", default=None, metavar="M1,M2",
                       help="comma-separated search modes: fts,vector,hybrid (default: every mode installed)")


def _list(option: str, text: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise PcMemUserError(f"eval: {option} needs at least one value, got {text!r}")
    return items


def _limits(text: str) -> tuple[int, ...]:
    values = []
    for item in _list("--limits", text):
        try:
            value = int(item)
        except ValueError:
            raise PcMemUserError(f"eval: --limits takes whole numbers ≥ 1, got {item!r}") from None
        if value < 1:
            raise PcMemUserError(f"eval: --limits takes whole numbers ≥ 1, got {value}")
        values.append(value)
    return tuple(sorted(set(values)))


def sweep_options(args: Any) -> dict[str, Any]:
    """The ``harness.summary`` keywords the options ask for: ``grid`` (the default grid
    with the families and limits given) and ``modes``; {} when none is given."""
    from dataclasses import replace

    from powercontext.eval.scoring.grid import QUICK_FAMILIES
    from powercontext.eval.scoring.sweep import MODES, Grid

    if args.quick and args.families is not None:
        raise PcMemUserError("eval: --quick sets the families itself; drop --families")
    options: dict[str, Any] = {}
    changes: dict[str, Any] = {}
    if args.quick:
        changes["families"] = QUICK_FAMILIES
    if args.families is not None:
        changes["families"] = tuple(_list("--families", args.families))
    if args.limits is not None:
        changes["limits"] = _limits(args.limits)
    if changes:
        try:  # Grid checks each family's name
            options["grid"] = replace(Grid(), **changes)
        except ValueError as exc:
            raise PcMemUserError(f"eval: {exc}") from None
    if args.modes is not None:
        modes = _list("--modes", args.modes)
        unknown = [m for m in modes if m not in MODES]
        if unknown:
            raise PcMemUserError(f"eval: unknown mode {unknown[0]!r}; choose from {', '.join(MODES)}")
        options["modes"] = tuple(dict.fromkeys(modes))
    return options
