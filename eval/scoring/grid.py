"""The policy grid of a sweep: admission families and their threshold axes.

A family is a set of admission rules that are on (``AdmissionPolicy.family`` without
its ``hybrid-floors`` part): ``floors`` (the RFC's per-channel floors), ``centred``
(vector admission on the centred cosine instead of the raw one), ``+cross-script``
(the cross-script FTS rule), ``+coverage`` (no vector admission outside the embedding
profile's scripts), ``+gate`` (the whole-query gate on the best centred cosine),
``+probability`` (the calibrated probability of answering decides every candidate
that has one, issue 46: its one axis is ``min_probability``; swept when asked). The
harness sweeps every family of the grid with the same replay and judges them
leave-one-corpus-out (``transfer``).

Each mode varies only the thresholds it reads. ``floors`` keeps the RFC's single FTS
rule for fts and hybrid; every other family is mode-aware: its hybrid points vary
``hybrid_fts_min_terms`` / ``hybrid_fts_min_coverage`` (the FTS floors beside the
vector channel) and its fts points the fts-only floors, so one policy can hold the
best of both. A point's parameters are the columns of ``POINT_COLUMNS``, NaN where
the mode does not read them.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from powercontext.memory.admission import FAMILIES_OFF, INITIAL_POLICY, NO_ADMISSION, AdmissionPolicy

__all__ = [
    "DEFAULT_FAMILIES", "FAMILY_PARTS", "Grid", "MODES", "MODE_CHANNELS", "NAMED_POLICIES", "PARAMS", "POINT_COLUMNS",
    "QUICK_FAMILIES", "family_base", "family_of", "point_values", "policy_fields", "policy_from", "policy_from_fields", "policy_label",
]

MODES = ("fts", "vector", "hybrid")
MODE_CHANNELS = {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}
NAMED_POLICIES = {"initial": INITIAL_POLICY, "no-admission": NO_ADMISSION}
FAMILY_PARTS = ("cross-script", "gate", "nqc", "coverage", "support", "probability")  # after the base, in AdmissionPolicy.family's order
#: The families a default sweep compares: the RFC's floors, the centred cosine alone,
#: with the cross-script rule, with the coverage refusal (MiniLM's default), the floors
#: with both language rules (E5's default: is it the centred cosine or the language
#: rules that transfers?), and each of the two defaults with an answerability rule
#: (issue 34): ``+support`` (no vector admission for a candidate holding the topic but
#: not the question's specific terms) and ``+nqc`` (a whole-query gate on the spread of
#: the best cosines). The centred gate (``+gate``) is swept only when asked for.
DEFAULT_FAMILIES = ("floors", "centred", "centred+cross-script", "centred+cross-script+coverage",
                    "floors+cross-script+coverage", "centred+cross-script+coverage+support",
                    "floors+cross-script+coverage+support", "centred+cross-script+nqc+coverage",
                    "floors+cross-script+nqc+coverage")
#: Threshold columns of a sweep point (NaN = not read in that mode).
PARAMS = ["fts_min_terms", "fts_min_coverage", "hybrid_fts_min_terms", "hybrid_fts_min_coverage", "vector_min_cosine",
          "vector_min_centred", "cross_script_min_terms", "vector_uncovered", "gate_min", "vector_min_support",
          "min_probability"]
POINT_COLUMNS = ["family", *PARAMS, "limit"]
_INT_FIELDS = {"fts_min_terms", "rrf_k", "short_query_terms", "min_pool", "pool_factor", "cross_script_min_terms",
               "hybrid_fts_min_terms"}


def _parts(family: str) -> tuple[str, set[str]]:
    base, *rest = family.split("+")
    if base not in ("floors", "centred") or any(p not in FAMILY_PARTS for p in rest):
        raise ValueError(f"unknown admission family {family!r}: a base (floors, centred) and any of "
                         f"+{', +'.join(FAMILY_PARTS)}")
    if "gate" in rest and "nqc" in rest:
        raise ValueError(f"admission family {family!r}: one whole-query gate at a time (+gate or +nqc)")
    return base, set(rest)


def simplicity(family: str) -> tuple[int, int]:
    """Order of preference between families whose policies score alike: fewer rules
    first, the RFC's floors before the centred cosine. (In fts mode the vector rule is
    never read, so ``floors`` and ``centred`` tie exactly; the simpler name is the truer
    label.)"""
    base, rest = _parts(family)
    return len(rest), 0 if base == "floors" else 1


def family_of(policy: AdmissionPolicy) -> str:
    """The sweep family of a policy: ``policy.family`` without ``hybrid-floors`` (which
    every family but ``floors`` varies as part of its hybrid points)."""
    return "+".join(p for p in policy.family.split("+") if p != "hybrid-floors")


def family_base(family: str) -> AdmissionPolicy:
    """The family's policy with the library default's value for each of its rules
    (the floors 3 / 0.30 / cosine 0.50 when the family has no centred cosine)."""
    base, parts = _parts(family)
    default = AdmissionPolicy()
    options: dict[str, Any] = {}
    if base == "centred":
        options.update(vector_min_cosine=-1.0, vector_min_centred=default.vector_min_centred)
    if "cross-script" in parts:
        options["cross_script_min_terms"] = default.cross_script_min_terms
    if "coverage" in parts:
        options["vector_uncovered"] = "refuse"
    if "gate" in parts:
        options.update(gate_signal="centred", gate_min=0.22)
    if "nqc" in parts:
        options.update(gate_signal="spread", gate_min=0.02)
    if "support" in parts:
        options["vector_min_support"] = 0.3
    if "probability" in parts:
        options["min_probability"] = 0.5
    return AdmissionPolicy.floors(**options)


def _mode_aware(family: str) -> bool:
    return family != "floors"


#: The vector axes a grid uses when nothing derived them from a run's candidates
#: (``Grid.resolved``): where all-MiniLM-L6-v2's cosines and centred cosines decide.
#: The families of ``sweep --quick`` (``make eval-quick``, ``%pcmem eval --quick``): the
#: RFC's floors and MiniLM's default, instead of every family — the grid replay is most
#: of a run's time.
QUICK_FAMILIES = ("floors", "centred+cross-script+coverage")
FALLBACK_COSINES = (-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7)
FALLBACK_CENTRED = tuple(float(x) for x in np.round(np.arange(0.13, 0.50, 0.02), 2))
#: Quantiles of a vector signal over the candidates a search at the largest limit
#: could admit: the thresholds a derived axis tries.
AXIS_QUANTILES = tuple(np.round(np.arange(0.02, 0.99, 0.04), 2))


@dataclass(frozen=True)
class Grid:
    """The policy grid of a sweep: for each family of ``families``, every combination
    of the thresholds the family and the mode read; every mode sweeps ``limits``. The
    initial constants and NO_ADMISSION are always on the ``floors`` axes.

    ``vector_min_cosine`` / ``vector_min_centred`` None (the default): derived from the
    run's own candidates by ``resolved`` (``harness.analyse`` does it), because each
    embedding model puts its cosines on its own scale — all-MiniLM-L6-v2's related
    pairs score 0.3–0.7, E5's crowd into 0.75–0.95 — and a fixed axis tuned for one
    never reaches the other's decisions. Unresolved, they are MiniLM's fixed axes."""

    fts_min_terms: tuple[int, ...] = (1, 2, 3, 4)
    fts_min_coverage: tuple[float, ...] = (0.0, 0.1, 0.2, 0.25, 0.3, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75, 1.0)
    vector_min_cosine: tuple[float, ...] | None = None
    limits: tuple[int, ...] = (1, 3, 5, 8, 10)
    families: tuple[str, ...] = DEFAULT_FAMILIES
    vector_min_centred: tuple[float, ...] | None = None
    cross_script_min_terms: tuple[int, ...] = (2,)
    gate_min: tuple[float, ...] = (0.16, 0.22, 0.28)
    vector_min_support: tuple[float, ...] = (0.2, 0.3, 0.4, 0.5, 0.6)
    spread_min: tuple[float, ...] = (0.005, 0.01, 0.02, 0.03)
    min_probability: tuple[float, ...] = tuple(float(x) for x in np.round(np.arange(0.05, 0.91, 0.05), 2))

    def __post_init__(self) -> None:
        for family in self.families:
            _parts(family)

    @property
    def cosines(self) -> tuple[float, ...]:
        return FALLBACK_COSINES if self.vector_min_cosine is None else tuple(self.vector_min_cosine)

    @property
    def centred(self) -> tuple[float, ...]:
        return FALLBACK_CENTRED if self.vector_min_centred is None else tuple(self.vector_min_centred)

    def resolved(self, candidates: Any, default: AdmissionPolicy | None = None) -> "Grid":
        """This grid with each vector axis left None derived from ``candidates`` (a
        run's candidate table): the ``AXIS_QUANTILES`` of the signal over the vector
        candidates within the largest limit, rounded to 0.01, plus ``default``'s
        threshold (so the shipped default is always a grid point); the cosine axis
        also keeps −1 (no floor). Axes given explicitly are kept as they are."""
        if self.vector_min_cosine is not None and self.vector_min_centred is not None:
            return self
        vec = candidates[(candidates["channel"] == "vector")] if len(candidates) else candidates
        if "rank" in getattr(vec, "columns", ()):
            vec = vec[vec["rank"] <= self.max_limit]
        changes: dict[str, tuple[float, ...]] = {}
        for name, column, fallback, extra in (
                ("vector_min_cosine", "cosine", FALLBACK_COSINES, (-1.0,)),
                ("vector_min_centred", "centred", FALLBACK_CENTRED, ())):
            if getattr(self, name) is not None:
                continue
            values = vec[column].dropna().to_numpy(float) if column in getattr(vec, "columns", ()) else np.array([])
            if len(values) < 10:
                changes[name] = fallback
                continue
            axis = set(np.round(np.quantile(values, AXIS_QUANTILES), 2).tolist()) | set(extra)
            if default is not None:
                own = getattr(default, name)
                if own is not None and own > -1.0:
                    axis.add(float(own))
            changes[name] = tuple(sorted(float(x) for x in axis))
        return replace(self, **changes)

    def _axes(self) -> tuple[list[int], list[float], list[float]]:
        named = NAMED_POLICIES.values()
        terms = sorted(set(self.fts_min_terms) | {p.fts_min_terms for p in named})
        cov = sorted(set(self.fts_min_coverage) | {p.fts_min_coverage for p in named})
        cos = sorted(set(self.cosines) | {p.vector_min_cosine for p in named})
        return terms, cov, cos

    def family_policies(self, family: str, mode: str) -> list[AdmissionPolicy]:
        """The distinct policies of ``family`` in ``mode`` (rules a mode does not read
        keep the family's base values; they never influence that mode's result)."""
        if mode not in MODE_CHANNELS:
            raise ValueError(f"unknown mode {mode!r}")
        base_name, parts = _parts(family)
        base = family_base(family)
        if "probability" in parts:
            # the calibrated probability replaces the raw rules of every candidate that has
            # one (every candidate of a calibrated profile): its threshold is the only axis
            return [replace(base, min_probability=t) for t in self.min_probability]
        terms, cov, cos = self._axes()
        floors = list(itertools.product(terms, cov))
        xs = self.cross_script_min_terms if "cross-script" in parts else (None,)
        gates = self.gate_min if "gate" in parts else self.spread_min if "nqc" in parts else (None,)
        centred_gate = "gate" in parts  # a gate on the centred cosine below its floor would never bite
        if base_name == "centred":
            vector = [dict(vector_min_centred=z, gate_min=g) for z in self.centred for g in gates
                      if g is None or not centred_gate or g <= z]
        else:
            vector = [dict(vector_min_cosine=x, gate_min=g) for x in cos for g in gates]
        if "support" in parts and mode == "hybrid":  # support is measured where full-text rows were read
            vector = [dict(v, vector_min_support=u) for v in vector for u in self.vector_min_support]
        if mode == "fts":  # a vector-signal gate, or support for a vector candidate, does not apply here
            plain = replace(base, gate_min=None, gate_signal=AdmissionPolicy().gate_signal, vector_min_support=None)
            return [replace(plain, fts_min_terms=t, fts_min_coverage=c, cross_script_min_terms=x)
                    for (t, c), x in itertools.product(floors, xs)]
        if mode == "vector":
            return [replace(base, **v) for v in vector]
        if _mode_aware(family):
            return [replace(base, hybrid_fts_min_terms=t, hybrid_fts_min_coverage=c, cross_script_min_terms=x, **v)
                    for (t, c), x, v in itertools.product(floors, xs, vector)]
        return [replace(base, fts_min_terms=t, fts_min_coverage=c, cross_script_min_terms=x, **v)
                for (t, c), x, v in itertools.product(floors, xs, vector)]

    def policies(self, mode: str) -> list[AdmissionPolicy]:
        """Every family's policies of ``mode``, family after family, each once: in full
        text a +support or +nqc family's policies are its base family's (those rules
        read the vector channel), and sweeping them twice only doubled the fts block."""
        return list(dict.fromkeys(p for family in self.families for p in self.family_policies(family, mode)))

    def size(self, mode: str) -> int:
        """Number of (policy, limit) points of ``mode``."""
        return len(self.policies(mode)) * len(self.limits)

    @property
    def max_limit(self) -> int:
        return max(self.limits)

    def as_dict(self) -> dict[str, list | None]:
        """The grid as JSON-ready lists (``Grid(**{k: tuple(v) ...})`` rebuilds it);
        an axis still to be derived is None."""
        return {f.name: None if getattr(self, f.name) is None else list(getattr(self, f.name)) for f in fields(self)}


def point_values(policy: AdmissionPolicy, mode: str, limit: int) -> dict[str, Any]:
    """A point's family and parameters, with NaN for what ``mode`` does not read."""
    family = family_of(policy)
    uses = MODE_CHANNELS[mode]
    v: dict[str, Any] = {"family": family, **{name: math.nan for name in PARAMS}, "limit": limit}
    if "fts" in uses:
        terms, coverage = policy.fts_floors(hybrid=mode == "hybrid")
        prefix = "hybrid_" if mode == "hybrid" and _mode_aware(family) else ""
        v[f"{prefix}fts_min_terms"], v[f"{prefix}fts_min_coverage"] = terms, coverage
        if policy.cross_script_min_terms is not None:
            v["cross_script_min_terms"] = policy.cross_script_min_terms
    if "vector" in uses:
        v["vector_min_cosine"] = policy.vector_min_cosine
        if policy.vector_min_centred is not None:
            v["vector_min_centred"] = policy.vector_min_centred
        if policy.vector_uncovered != "admit":
            v["vector_uncovered"] = policy.vector_uncovered
        if policy.vector_min_support is not None and mode == "hybrid":
            v["vector_min_support"] = policy.vector_min_support
    if policy.gate_min is not None and ("fts" if policy.gate_signal == "coverage" else "vector") in uses:
        v["gate_min"] = policy.gate_min
    if policy.min_probability is not None:
        v["min_probability"] = policy.min_probability
    return v


_READS = {"fts": ("fts_min_terms", "fts_min_coverage", "cross_script_min_terms", "gate_min", "min_probability"),
          "vector": ("vector_min_cosine", "vector_min_centred", "vector_uncovered", "gate_min", "vector_min_support",
                     "min_probability")}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def policy_from(values: Any, mode: str = "hybrid") -> AdmissionPolicy:
    """The AdmissionPolicy of a sweep row (or a joint row holding several modes'
    columns): the family's base with every parameter the row sets that ``mode`` reads
    (``hybrid``: all of them); the others keep the family's base values."""
    get = values.get if hasattr(values, "get") else lambda k, d=None: getattr(values, k, d)
    family = get("family", None)
    family = "floors" if _missing(family) else str(family)
    policy = family_base(family)
    changes: dict[str, Any] = {}
    for name in _READS.get(mode, PARAMS):
        value = get(name, None)
        if _missing(value):
            continue
        if name == "vector_uncovered":
            changes[name] = value if isinstance(value, str) else float(value)
        else:
            changes[name] = int(value) if name in _INT_FIELDS else float(value)
    return replace(policy, **changes)


def policy_fields(policy: AdmissionPolicy) -> dict[str, Any]:
    """Every field of a policy (a recommendations row), plus its family."""
    return {"family": family_of(policy), **{f.name: getattr(policy, f.name) for f in fields(policy)}}


def policy_from_fields(row: Any) -> AdmissionPolicy:
    """The policy a ``policy_fields`` row (read back from a DataFrame: NaN for None,
    floats for ints) holds."""
    get = row.get if hasattr(row, "get") else lambda k, d=None: getattr(row, k, d)
    values: dict[str, Any] = {}
    for f in fields(AdmissionPolicy):
        value = get(f.name, None)
        if _missing(value):
            if f.name in FAMILIES_OFF and FAMILIES_OFF[f.name] is None:
                values[f.name] = None  # an optional rule that is off
            continue
        if f.name in _INT_FIELDS:
            value = int(value)
        elif not isinstance(value, str):
            value = float(value)
        values[f.name] = value
    return AdmissionPolicy(**values)


def policy_label(policy: AdmissionPolicy, mode: str) -> str:
    """The parameters that matter in ``mode``, e.g. ``terms≥2 cov≥0.25 cos≥0.3`` or
    ``terms≥4 cov≥0.34 xs≥2 centred≥0.31 uncovered=refuse``."""
    uses = MODE_CHANNELS[mode]
    parts = []
    if "fts" in uses:
        terms, coverage = policy.fts_floors(hybrid=mode == "hybrid")
        parts.append(f"terms≥{terms} cov≥{coverage:g}")
        if policy.cross_script_min_terms is not None:
            parts.append(f"xs≥{policy.cross_script_min_terms}")
    if "vector" in uses:
        if policy.vector_min_centred is None or policy.vector_min_cosine > -1.0:
            parts.append(f"cos≥{policy.vector_min_cosine:g}")
        if policy.vector_min_centred is not None:
            parts.append(f"centred≥{policy.vector_min_centred:g}")
        if policy.vector_uncovered != "admit":
            parts.append(f"uncovered={policy.vector_uncovered}")
        if policy.vector_min_support is not None and mode == "hybrid":
            parts.append(f"support≥{policy.vector_min_support:g}")
    if "fts" in uses and policy.fts_min_support is not None and mode != "vector":
        parts.append(f"fts support≥{policy.fts_min_support:g}")
    if policy.gate_min is not None and ("fts" if policy.gate_signal == "coverage" else "vector") in uses:
        parts.append(f"gate {policy.gate_signal}≥{policy.gate_min:g}")
    if policy.min_probability is not None:
        parts.append(f"p≥{policy.min_probability:g}")
    return " ".join(parts)
