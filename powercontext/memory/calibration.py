"""Admission in probability units: a calibration artefact per embedding profile.

A raw signal means different things under different models and language pairs: E5
puts an English question and its Chinese answer at cosine ~0.80 and unrelated Chinese
pairs above 0.86, MiniLM's centred cosine lives on another scale altogether. A
calibration maps each channel's signal to the probability that the candidate answers
the question, fitted on labelled corpora (``powercontext.eval.scoring.calibrate``), so one
``AdmissionPolicy(min_probability=…)`` means the same under every profile.

The artefact is a small JSON file, schema-checked by pydantic, tied to one profile id
(like a policy): per channel a pooled monotone map and per cell one fitted on that
cell's candidates alone —

* vector: the cosine (or the centred cosine, the artefact says which) per language
  pair, ``<query script>><entry script>`` in the analyzer's script classes
  (``latin>cjk``: an English question, a Chinese entry);
* fts: the coverage (matched / query terms) per query-length bucket (``QUERY_BUCKETS``);
* hybrid (format v2): the two channels' probabilities and whether both found the
  candidate, stacked into one (``hybrid_calibration``). A v1 artefact has no hybrid
  cell: a hybrid candidate then gets the larger of its channels' probabilities (the
  stated fallback, ``HYBRID_FALLBACK`` in explain).

A map is a list of (x, p) points from isotonic regression, applied by monotone linear
interpolation (clamped at the ends), so applying it needs no scikit-learn. A cell
resting on fewer than ``min_cell_n`` labelled candidates, or a pair the artefact never
saw, falls back to the channel's pooled map, and the cell label says so (explain).

The probability is a candidate SIGNAL (``ChannelCandidate.probability``): the service
annotates what ``retrieve`` returns, the harness caches it with the other signals, and
admission reads it like any other, so an offline replay equals an online search.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import json
import math
import operator
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, ValidationInfo, field_validator, model_validator

from ..analyzer import SCRIPTS
from ..bundled import bundled_profile
from ..errors import InvalidMemoryRequestError
from ..model import AdmissionDecision, ChannelCandidate, EmbeddingProfile
from .hybrid_calibration import HybridCalibration

__all__ = [
    "CALIBRATION_FORMAT", "Calibration", "CellMap", "ChannelCalibration", "HYBRID_FALLBACK", "HybridCalibration",
    "InvalidCalibrationError", "NO_CALIBRATION",
    "QUERY_BUCKETS", "annotate", "calibration_for", "pair_cell", "probability_decision", "probability_verdict",
    "query_bucket",
]

#: v2 added the hybrid cell; v1 artefacts still load (their hybrid candidates: HYBRID_FALLBACK).
CALIBRATION_FORMAT = "powercontext.calibration.v2"
FORMATS = ("powercontext.calibration.v1", CALIBRATION_FORMAT)
#: The cell explain names for a hybrid candidate of an artefact with no hybrid cell.
HYBRID_FALLBACK = "no hybrid cell in this artefact → per-channel max"
#: Query-length buckets of the full-text maps, by distinct analyzer terms: (name, lowest N).
#: 1–2 terms is the short query the FTS floors admit on one match; coverage means more
#: the longer the query.
QUERY_BUCKETS = (("1-2", 1), ("3-5", 3), ("6-9", 6), ("10+", 10))
#: What explain says when a database's profile has no calibration.
NO_CALIBRATION = "no calibration for this profile: raw thresholds"


class InvalidCalibrationError(InvalidMemoryRequestError):
    """A calibration artefact that cannot be used: corrupt, hand-edited out of its
    schema, or fitted for another embedding profile."""


def _finite(values: Sequence[float], what: str) -> None:
    if any(not math.isfinite(v) for v in values):
        raise ValueError(f"{what} must be finite numbers")


class CellMap(BaseModel):
    """One fitted monotone map: p(x) by linear interpolation between the points."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(ge=0, description="labelled candidates the map was fitted on")
    positives: int = Field(ge=0, description="of which relevant")
    x: list[float] = Field(min_length=1)
    p: list[float] = Field(min_length=1)

    @model_validator(mode="after")
    def _monotone(self) -> "CellMap":
        _finite(self.x, "x")
        _finite(self.p, "p")
        if len(self.x) != len(self.p):
            raise ValueError(f"x and p must have the same length (got {len(self.x)} and {len(self.p)})")
        if any(b <= a for a, b in zip(self.x, self.x[1:])):
            raise ValueError("x must be strictly increasing")
        if any(not 0.0 <= v <= 1.0 for v in self.p):
            raise ValueError("p must be probabilities within [0, 1]")
        if any(b < a for a, b in zip(self.p, self.p[1:])):
            raise ValueError("p must be non-decreasing (a monotone map)")
        if self.positives > self.n:
            raise ValueError(f"positives ({self.positives}) cannot exceed n ({self.n})")
        return self

    def __call__(self, value: float) -> float:
        xs, ps = self.x, self.p
        if value <= xs[0]:
            return ps[0]
        if value >= xs[-1]:
            return ps[-1]
        i = bisect.bisect_right(xs, value)
        x0, x1, p0, p1 = xs[i - 1], xs[i], ps[i - 1], ps[i]
        return p0 + (p1 - p0) * (value - x0) / (x1 - x0)


class ChannelCalibration(BaseModel):
    """A channel's pooled map and its per-cell maps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    signal: Literal["cosine", "centred", "coverage"]
    pooled: CellMap
    cells: dict[str, CellMap] = Field(default_factory=dict)
    _looked_up: dict = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:  # the maps, not the lookup cache
        return isinstance(other, ChannelCalibration) and (self.signal, self.pooled, self.cells) == (
            other.signal, other.pooled, other.cells)

    def lookup(self, cell: str, min_n: int) -> tuple[CellMap, str]:
        """The map for ``cell`` and its label for explain (the fallback stated)."""
        # a handful of cells per artefact, asked for every candidate: words built once
        # (pydantic's private-attribute dict read directly: its attribute route costs
        # more than the whole lookup)
        cache = self.__pydantic_private__["_looked_up"]
        key = (cell, min_n)
        found = cache.get(key)
        if found is None:
            found = cache[key] = self._lookup(cell, min_n)
        return found

    def _lookup(self, cell: str, min_n: int) -> tuple[CellMap, str]:
        fitted = self.cells.get(cell)
        if fitted is None:
            return self.pooled, f"{cell} not seen → pooled (n={self.pooled.n})"
        if fitted.n < min_n:
            return self.pooled, f"{cell} n={fitted.n} < {min_n} → pooled (n={self.pooled.n})"
        return fitted, f"{cell} (n={fitted.n})"


class Calibration(BaseModel):
    """The artefact: per channel, signal → probability, tied to one embedding profile."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["powercontext.calibration.v1", "powercontext.calibration.v2"] = CALIBRATION_FORMAT
    profile: str = Field(min_length=1, max_length=128)
    method: Literal["isotonic"] = "isotonic"
    min_cell_n: int = Field(default=30, ge=1, description="a cell with fewer labelled candidates uses the pooled map")
    fitted_on: list[str] = Field(default_factory=list, description="the labelled corpora it was fitted on")
    vector: ChannelCalibration | None = None
    fts: ChannelCalibration | None = None
    hybrid: HybridCalibration | None = None
    # (channel, query side, entry side) → (signal getter, map, explain words) or None:
    # a handful of keys per artefact, asked for every candidate of every search (the
    # 0.2 ms budget of issue 46), so the cell's name and words are built once per key
    _cells: dict = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:  # the fields, not the lookup cache
        return isinstance(other, Calibration) and self.__dict__ == other.__dict__

    def model_copy(self, *, update=None, deep: bool = False) -> "Calibration":
        copy = super().model_copy(update=update, deep=deep)
        copy.__pydantic_private__["_cells"] = {}  # an updated map must not be read from the old cache
        return copy

    @field_validator("hybrid")
    @classmethod
    def _hybrid_needs_v2(cls, value: HybridCalibration | None, info: ValidationInfo) -> HybridCalibration | None:
        if value is not None and info.data.get("format") == FORMATS[0]:
            raise ValueError(f"a {FORMATS[0]} artefact has no hybrid cell: the hybrid section needs {CALIBRATION_FORMAT}")
        return value

    @field_validator("vector")
    @classmethod
    def _vector_cells(cls, value: ChannelCalibration | None) -> ChannelCalibration | None:
        if value is not None:
            if value.signal not in ("cosine", "centred"):
                raise ValueError(f"the vector signal is cosine or centred, got {value.signal!r}")
            for cell in value.cells:
                query, _, entry = cell.partition(">")
                if query not in SCRIPTS or entry not in SCRIPTS:
                    raise ValueError(f"vector cell {cell!r} is not '<query script>><entry script>' "
                                     f"(scripts: {', '.join(SCRIPTS)})")
        return value

    @field_validator("fts")
    @classmethod
    def _fts_cells(cls, value: ChannelCalibration | None) -> ChannelCalibration | None:
        if value is not None:
            if value.signal != "coverage":
                raise ValueError(f"the fts signal is coverage, got {value.signal!r}")
            names = [name for name, _ in QUERY_BUCKETS]
            for cell in value.cells:
                if cell not in names:
                    raise ValueError(f"fts cell {cell!r} is not a query-length bucket ({', '.join(names)})")
        return value

    # ------------------------------------------------------------------ I/O

    @classmethod
    def from_dict(cls, data: Any, where: str = "calibration") -> "Calibration":
        if not isinstance(data, Mapping):
            raise InvalidCalibrationError(f"{where}: a calibration is a JSON object, got {type(data).__name__}")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(the whole artefact)"
            message = str(first["msg"]).removeprefix("Value error, ")
            raise InvalidCalibrationError(f"{where}: field {field}: {message}"[:300]) from None

    @classmethod
    def load(cls, path: str | Path) -> "Calibration":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InvalidCalibrationError(f"no calibration file {str(path)!r}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidCalibrationError(f"{str(path)!r} is not a readable JSON calibration: {exc}") from None
        return cls.from_dict(data, where=str(path))

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return path

    # ------------------------------------------------------------------ use

    def check_profile(self, profile: EmbeddingProfile | None) -> None:
        """Refuse to calibrate ``profile``'s cosines by maps fitted for another model."""
        if profile is None or profile.profile_id == self.profile:
            return
        raise InvalidCalibrationError(
            f"this calibration was fitted for the embedding profile {self.profile!r}, but the database embeds with "
            f"{profile.profile_id!r}: fit one for {profile.profile_id!r} (harness.calibrate) or use no calibration")

    def probability(self, candidate: ChannelCandidate) -> tuple[float | None, str | None]:
        """(probability, the cell used) of one candidate; (None, None) when its channel is
        not calibrated or it lacks the signal (raw thresholds then decide)."""
        channel = candidate.channel
        if channel == "vector":
            key = (channel, candidate.query_script, candidate.script)
        elif channel == "fts":
            if candidate.query_term_count <= 0:
                return None, None
            key = (channel, candidate.query_term_count, None)
        else:
            return None, None
        cells = self.__pydantic_private__["_cells"]
        found = cells.get(key, _UNSEEN)
        if found is _UNSEEN:  # None is a cached answer too: the channel is not calibrated
            found = cells[key] = self._cell(key)
        if found is None:
            return None, None
        signal, fitted, words = found
        value = signal(candidate)
        return (None, None) if value is None else (fitted(value), words)

    def _cell(self, key: tuple) -> tuple[Any, CellMap, str] | None:
        channel, query_side, entry_side = key
        if channel == "vector":
            if self.vector is None:
                return None
            fitted, label = self.vector.lookup(pair_cell(query_side, entry_side), self.min_cell_n)
            return _SIGNALS[self.vector.signal], fitted, f"vector {self.vector.signal} {label}"
        if self.fts is None:
            return None
        fitted, label = self.fts.lookup(query_bucket(query_side), self.min_cell_n)
        return _SIGNALS["coverage"], fitted, f"fts coverage {label}"


#: a key Calibration._cells has not looked up yet
_UNSEEN = object()
#: a channel's signal read off a candidate, by the name the artefact gives it
_SIGNALS = {name: operator.attrgetter(name) for name in ("cosine", "centred", "coverage")}


def pair_cell(query_script: str | None, entry_script: str | None) -> str:
    """The language-pair cell of a vector candidate: ``<query script>><entry script>``."""
    return f"{query_script or 'none'}>{entry_script or 'none'}"


def query_bucket(term_count: int) -> str:
    """The query-length bucket of a query with ``term_count`` distinct analyzer terms."""
    name = QUERY_BUCKETS[0][0]
    for bucket, low in QUERY_BUCKETS:
        if term_count >= low:
            name = bucket
    return name


_FIELDS = tuple(f.name for f in dataclasses.fields(ChannelCandidate))
_P, _CELL = _FIELDS.index("probability"), _FIELDS.index("calibration_cell")
_VALUES = operator.attrgetter(*_FIELDS)


def _with(candidate: ChannelCandidate, probability: float | None, cell: str | None) -> ChannelCandidate:
    # positional construction: ~5× cheaper than dataclasses.replace, and search pays it
    # for every candidate of every query (the 0.2 ms budget of issue 46); the values read
    # by one attrgetter call, ~half the cost of a getattr per field
    values = list(_VALUES(candidate))
    values[_P], values[_CELL] = probability, cell
    return ChannelCandidate(*values)


def annotate(channels: Mapping[str, Sequence[ChannelCandidate]],
             calibration: Calibration | None) -> dict[str, tuple[ChannelCandidate, ...]]:
    """Each candidate with its ``probability`` and ``calibration_cell`` signals (both
    None without a calibration): what the service does to every retrieval and the
    harness to a cached pool scored by another artefact."""
    if calibration is None:
        # a search of a profile with no calibration pays nothing (the common case)
        return {name: tuple(c if c.probability is None and c.calibration_cell is None else _with(c, None, None)
                            for c in cands) for name, cands in channels.items()}
    if "fts" in channels and "vector" in channels:
        return _hybrid(channels, calibration)
    return {name: tuple(_with(c, *calibration.probability(c)) for c in cands) for name, cands in channels.items()}


def _hybrid(channels: Mapping[str, Sequence[ChannelCandidate]],
            calibration: Calibration) -> dict[str, tuple[ChannelCandidate, ...]]:
    """A hybrid retrieval: every candidate of an entry gets ONE probability from what both
    channels say of it (the hybrid cell, or the per-channel max of a v1 artefact), so an
    entry is admitted in both channels or in neither. It depends on which entries the two
    pools share, so the harness re-annotates a cached pool cut to a smaller one."""
    # per candidate its own channel's (probability, cell); each candidate is rebuilt once,
    # with the joint value (search pays this per candidate: the 0.2 ms budget of issue 46)
    own = {name: [calibration.probability(c) for c in cands] for name, cands in channels.items()}
    keys = {name: [(c.memory_ref.artifact_id, c.entry_id, c.entry_version_id) for c in cands]
            for name, cands in channels.items()}
    found: dict[tuple[str, str, str], list] = {}  # entry → [p_vector, cell, p_fts, cell]
    for name, slot in (("vector", 0), ("fts", 2)):
        for key, (p, cell) in zip(keys[name], own[name]):
            if p is None:
                continue
            seen = found.get(key)
            if seen is None:
                seen = found[key] = [None, None, None, None]
            if seen[slot] is None:  # a repeated row: its first occurrence speaks
                seen[slot], seen[slot + 1] = p, cell
    stacked = calibration.hybrid
    words: dict[tuple[str | None, str | None], str] = {}
    joint: dict[tuple[str, str, str], tuple[float, str]] = {}
    for key, (pv, cv, pf, cf) in found.items():
        template = words.get((cv, cf))
        if template is None:  # a handful of cell pairs per search: the wording built once each
            how = "hybrid stacked" if stacked is not None else f"hybrid {HYBRID_FALLBACK}"
            v = "vector not retrieved" if cv is None else "{0:.3f} by " + cv.replace("{", "{{").replace("}", "}}")
            f = "fts not retrieved" if cf is None else "{1:.3f} by " + cf.replace("{", "{{").replace("}", "}}")
            template = words[(cv, cf)] = f"{how} ({v} · {f})"
        p = stacked(pv, pf) if stacked is not None else max(x for x in (pv, pf) if x is not None)
        joint[key] = (p, template.format(pv, pf))
    return {name: tuple(_with(c, *joint[key]) if p is not None else _with(c, None, None)
                        for c, key, (p, _) in zip(cands, keys[name], own[name]))
            for name, cands in channels.items()}


# ---------------------------------------------------------------------- admission


def probability_verdict(candidate: ChannelCandidate, min_probability: float | None) -> bool | None:
    """The probability rule: admitted when the calibrated probability reaches
    ``min_probability``. None when the rule does not apply (off, or the candidate has
    no probability: no calibration for the profile) — the raw floors decide then. When
    it applies it REPLACES the channel's raw rules (floors, cross-script, uncovered,
    support): those are what the calibration's cells express in probability units.
    The whole-query gate still applies."""
    if min_probability is None or candidate.probability is None:
        return None
    return candidate.probability >= min_probability


def probability_decision(decision: AdmissionDecision, min_probability: float | None) -> AdmissionDecision:
    """``decision`` (the raw rules' verdict and reason) as the probability rule words
    it: the probability and its cell when the rule applies, else the raw reason, said
    to be the raw thresholds' when the rule was asked for and no calibration applied."""
    candidate = decision.candidate
    ok = probability_verdict(candidate, min_probability)
    if ok is None:
        if min_probability is None:
            return decision
        return dataclasses.replace(decision, reason=f"{NO_CALIBRATION}; {decision.reason}")
    return AdmissionDecision(candidate, ok, f"probability {candidate.probability:.3f} {'≥' if ok else '<'} "
                                            f"min_probability={min_probability:g} ({candidate.calibration_cell})")


# ---------------------------------------------------------------------- shipped artefacts


@functools.cache
def _shipped() -> dict[str, Calibration]:
    """The package's artefacts (``powercontext/memory/calibrations/*.json``, package
    data) by profile id."""
    out: dict[str, Calibration] = {}
    folder = resources.files("powercontext.memory") / "calibrations"
    if not folder.is_dir():
        return out
    for item in sorted(folder.iterdir(), key=lambda f: f.name):
        if item.name.endswith(".json"):
            cal = Calibration.from_dict(json.loads(item.read_text(encoding="utf-8")), where=f"shipped {item.name}")
            out[cal.profile] = cal
    return out


def calibration_for(profile: EmbeddingProfile | str | None) -> Calibration | None:
    """The shipped calibration of an embedding profile (an EmbeddingProfile or a
    profile id); None for a full-text-only database or a profile the project has not
    calibrated (its searches keep today's raw thresholds)."""
    if profile is None:
        return None
    if isinstance(profile, EmbeddingProfile):
        profile_id = profile.profile_id
    else:
        known = bundled_profile(profile)
        profile_id = known.profile_id if known is not None else profile
    return _shipped().get(profile_id)
