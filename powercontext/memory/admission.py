"""Relevance admission: pure functions, no I/O (fusion's RRF is ``fusion.py``).

This module is the seam that keeps the evaluation harness honest: ``MemoryService``
calls ``fuse`` (``admit`` + ``fusion.rrf``) on the candidates a backend retrieved, and the harness
replays the very same two functions over cached candidates for every policy of a
sweep. A sweep point therefore equals an online search with that policy.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..bundled import E5_PROFILE, MINILM_PROFILE, bundled_profile
from ..errors import InvalidMemoryRequestError
from ..model import AdmissionDecision, ChannelCandidate, EmbeddingProfile, MemoryHit
from ..suggest import did_you_mean, unknown_keyword
from .calibration import probability_decision, probability_verdict
from .fusion import CHANNEL_ORDER, rrf

POLICY_FORMAT = "powercontext.admission-policy.v1"
GATE_SIGNALS = ("centred", "cosine", "coverage", "spread")
#: How many of the vector pool's best cosines the ``spread`` gate reads.
SPREAD_TOP = 5
#: The value of each family field that switches the family off (the RFC's floors alone).
FAMILIES_OFF: dict[str, Any] = dict(vector_min_centred=None, cross_script_min_terms=None, gate_min=None,
                                    vector_uncovered="admit", hybrid_fts_min_terms=None, min_probability=None,
                                    hybrid_fts_min_coverage=None, vector_min_support=None, fts_min_support=None)


def _invalid(message: str) -> InvalidMemoryRequestError:
    return InvalidMemoryRequestError(message)


@dataclass(frozen=True, slots=True)
class AdmissionPolicy:
    """The rules a channel's candidates must pass before fusion.

    The RFC's per-channel floors:

    * FTS: a query with at most ``short_query_terms`` distinct analyzer terms needs one
      matched term; a longer one needs ``max(fts_min_terms, ceil(fts_min_coverage × N))``
      matched terms (never more than N).
    * vector: cosine similarity (from unit-vector L2 distance) ≥ ``vector_min_cosine``.
    * fusion: RRF with constant ``rrf_k``; each channel retrieves ``pool_size(limit)``.

    Families beyond the floors (every signal they read comes back from retrieval, so a
    policy replays offline exactly):

    * ``vector_min_centred``: the vector candidate's centred cosine ``cos − q·c̄`` (c̄ =
      mean vector of the searched Memories' active entries) must also reach this. A
      raw cosine threshold moves with how crowded a Memory is; the centred one holds
      across corpora. With it set, ``vector_min_cosine`` = −1 means "no raw floor".
    * ``cross_script_min_terms``: an FTS candidate in another script than the query
      (a Chinese entry for an English question) is admitted on this many matched terms
      whatever its coverage — shared identifiers are all such pairs have in common.
    * ``gate_min`` on ``gate_signal``: a whole-query gate. When the best candidate's
      signal (``centred`` or ``cosine`` over the vector pool, ``coverage`` over the FTS
      pool) is below ``gate_min``, nothing is admitted. A gate whose channel was not
      retrieved does not apply.
    * ``hybrid_fts_min_terms`` / ``hybrid_fts_min_coverage``: the FTS floors to use when
      the vector channel was retrieved too (hybrid). In ``fts`` mode the FTS floor is
      the only evidence a hit has; in hybrid the vector channel carries the paraphrases,
      so matched terms can be asked to be stronger. None = the ``fts_*`` floors.
    * ``vector_min_support`` / ``fts_min_support`` (answerability: near misses): a
      candidate's ``support`` is the IDF-weighted share of the query's terms its text
      holds (document frequencies of the searched Memories; hybrid and fts searches).
      A vector candidate holding some of the query's terms but less than
      ``vector_min_support`` of its specific weight shares the topic and misses what
      the question asks for ("which port does the exporter listen on?" against an
      entry naming only the exporter's config file): refused. One holding none of
      them (a paraphrase) is judged by its cosine alone. A full-text candidate needs
      ``fts_min_support`` besides its matched-term floor.
    * ``gate_signal="spread"``: the whole-query gate on the standard deviation of the
      vector pool's best ``SPREAD_TOP`` cosines — NQC, normalised query commitment
      (Shtok et al., TOIS 2012), read on dense scores: a flat top of the pool means
      no candidate stands out. (The centred cosine is itself the dense counterpart of
      WIG, Zhou & Croft 2007: a score minus the collection's score for the query.)
    * ``vector_uncovered``: what happens to a vector candidate when the embedding
      profile does not cover the query's or the candidate's script: ``"admit"`` (the
      usual threshold), ``"refuse"``, or a number that replaces the threshold of the
      vector signal in use (centred if ``vector_min_centred`` is set, else cosine).
    * ``min_probability``: admit a candidate whose calibrated probability of answering
      (memory/calibration.py) is ≥ this, instead of its channel's raw rules; None = off.

    How the default was chosen (``reports/admission_study/``, confirmed on both
    databases by ``reports/thresholds/``): every family was tuned at a false-admission
    rate ≤ 0.30 (anything admitted for a query whose ideal answer is empty) and judged
    LEAVE-ONE-CORPUS-OUT — tuned on two of the three bundled corpora, scored on the
    third — because a default meets corpora it never saw. The family centred cosine +
    cross-script FTS + refusal outside the embedding profile's scripts had the best
    mean held-out nDCG@10 (0.610, Analyzer v2) and was within 0.03 of the best family
    on every held-out corpus; the RFC's floors were significantly worse on each. The
    thresholds are the family's choice on the three dev splits at limit 8: hybrid FTS
    floors 4 terms / 0.34, centred cosine ≥ 0.31, cross-script ≥ 2 terms, no raw
    cosine floor; the fts-only floors 3 / 0.30 were tuned in fts mode with the RFC
    scenario's answer admitted. The whole-query gate and late interaction (MaxSim) did
    not win held out and are not in the default. ``AdmissionPolicy.rfc_initial()``
    (2 terms / 0.25 / cosine 0.30) stays the named point of comparison: it admits
    something for most questions that have no answer. Pass your own policy to trade the
    other way, or fit one on your labels (``harness.fit``) and load it
    (``AdmissionPolicy.load(path)``, ``%config PcMem.policy_file``).
    """

    fts_min_terms: int = 3
    fts_min_coverage: float = 0.30
    vector_min_cosine: float = -1.0
    rrf_k: int = 60
    short_query_terms: int = 2
    min_pool: int = 32
    pool_factor: int = 4
    vector_min_centred: float | None = 0.31
    cross_script_min_terms: int | None = 2
    gate_signal: str = "centred"
    gate_min: float | None = None
    vector_uncovered: str | float = "refuse"
    hybrid_fts_min_terms: int | None = 4
    hybrid_fts_min_coverage: float | None = 0.34
    profile: str | None = None
    vector_min_support: float | None = None
    fts_min_support: float | None = None
    min_probability: float | None = None  # probability units: calibration.probability_verdict

    def __post_init__(self) -> None:
        def whole(value: Any, low: int) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and value >= low

        def number(value: Any, low: float, high: float) -> bool:
            return (isinstance(value, (int, float)) and not isinstance(value, bool)
                    and math.isfinite(value) and low <= value <= high)

        if not whole(self.fts_min_terms, 1):
            raise _invalid("fts_min_terms must be an integer ≥ 1")
        if not number(self.fts_min_coverage, 0.0, 1.0):
            raise _invalid("fts_min_coverage must be within [0, 1]")
        if not number(self.vector_min_cosine, -1.0, 1.0):
            raise _invalid("vector_min_cosine must be within [-1, 1]")
        if not whole(self.rrf_k, 0):
            raise _invalid("rrf_k must be an integer ≥ 0")
        if not whole(self.short_query_terms, 0) or not whole(self.min_pool, 1) or not whole(self.pool_factor, 1):
            raise _invalid("short_query_terms must be an integer ≥ 0, min_pool and pool_factor integers ≥ 1")
        if self.vector_min_centred is not None and not number(self.vector_min_centred, -2.0, 2.0):
            raise _invalid("vector_min_centred must be None or within [-2, 2] (a difference of two cosines)")
        if self.cross_script_min_terms is not None and not whole(self.cross_script_min_terms, 1):
            raise _invalid("cross_script_min_terms must be None or an integer ≥ 1")
        if self.gate_signal not in GATE_SIGNALS:
            raise _invalid(f"gate_signal must be one of {', '.join(GATE_SIGNALS)}, got {self.gate_signal!r}")
        if self.gate_min is not None and not number(self.gate_min, -2.0, 2.0):
            raise _invalid("gate_min must be None or within [-2, 2]")
        if self.hybrid_fts_min_terms is not None and not whole(self.hybrid_fts_min_terms, 1):
            raise _invalid("hybrid_fts_min_terms must be None or an integer ≥ 1")
        if self.hybrid_fts_min_coverage is not None and not number(self.hybrid_fts_min_coverage, 0.0, 1.0):
            raise _invalid("hybrid_fts_min_coverage must be None or within [0, 1]")
        if not (self.vector_uncovered in ("admit", "refuse") or number(self.vector_uncovered, -2.0, 2.0)):
            raise _invalid(f"vector_uncovered must be 'admit', 'refuse' or a threshold, got {self.vector_uncovered!r}"[:200])
        for name in ("vector_min_support", "fts_min_support", "min_probability"):
            if getattr(self, name) is not None and not number(getattr(self, name), 0.0, 1.0):
                raise _invalid(f"{name} must be None or within [0, 1]")
        if self.profile is not None and not (isinstance(self.profile, str) and 0 < len(self.profile) <= 128
                                             and self.profile.isascii() and self.profile.isprintable()):
            raise _invalid("profile must be None or the profile_id (printable ASCII, ≤ 128 characters) of the "
                           "embedding profile the policy was tuned for")

    def __repr__(self) -> str:
        """The RFC's parameters always, a family's only when it is on."""
        names = [f.name for f in fields(self)]
        shown = names[:7] + [n for n in names[7:] if getattr(self, n) != FAMILIES_OFF.get(n)
                             and not (n == "gate_signal" and self.gate_min is None)
                             and not (n == "profile" and self.profile is None)]
        return f"AdmissionPolicy({', '.join(f'{n}={getattr(self, n)!r}' for n in shown)})"

    @classmethod
    def floors(cls, fts_min_terms: int = 3, fts_min_coverage: float = 0.30, vector_min_cosine: float = 0.50,
               **options: Any) -> "AdmissionPolicy":
        """The RFC's per-channel floors alone, every family off (``options``: the other
        fields, e.g. ``rrf_k`` or one family to switch back on)."""
        return cls(fts_min_terms, fts_min_coverage, vector_min_cosine, **{**FAMILIES_OFF, **options})

    @classmethod
    def rfc_initial(cls) -> "AdmissionPolicy":
        """The RFC's initial constants (2 terms / coverage 0.25 / cosine 0.30, floors
        only): the named point of comparison every report keeps."""
        return cls.floors(2, 0.25, 0.30)

    @classmethod
    def default_for(cls, profile: "EmbeddingProfile | str | None") -> "AdmissionPolicy":
        """The shipped default of an embedding profile (an EmbeddingProfile, a bundled
        name such as ``"e5"``, or a profile id), chosen leave-one-corpus-out for that
        model (``DEFAULTS``). None (a full-text-only database) and a profile the
        project has no calibration for get ``AdmissionPolicy()``, tied to no profile:
        its full-text floors hold for any model, its vector thresholds were tuned for
        all-MiniLM-L6-v2 — fit your own on your labels (``harness.fit``)."""
        if profile is None:
            return cls()
        if isinstance(profile, EmbeddingProfile):
            profile_id = profile.profile_id
        elif isinstance(profile, str):
            known = bundled_profile(profile)
            profile_id = known.profile_id if known is not None else profile
        else:
            raise _invalid(f"default_for takes an EmbeddingProfile, a profile name or None, got {type(profile).__name__}")
        return DEFAULTS.get(profile_id, cls())

    def with_profile(self, profile: "EmbeddingProfile | str | None") -> "AdmissionPolicy":
        """The same thresholds tied to another profile (None: to none). The explicit
        override for using a policy on a model it was not tuned for."""
        if isinstance(profile, EmbeddingProfile):
            profile = profile.profile_id
        elif isinstance(profile, str) and bundled_profile(profile) is not None:
            profile = bundled_profile(profile).profile_id
        return replace(self, profile=profile)

    def check_profile(self, profile: "EmbeddingProfile | None") -> None:
        """Refuse to admit vector candidates of ``profile`` by thresholds tuned for
        another model: cosines of different models live on different scales (E5's
        crowd into 0.75–0.95), so such a policy silently admits all or nothing."""
        if self.profile is None or profile is None or self.profile == profile.profile_id:
            return
        raise _invalid(
            f"this admission policy was tuned for the embedding profile {self.profile!r}, but the database embeds "
            f"with {profile.profile_id!r}: use AdmissionPolicy.default_for({profile.profile_id!r}), fit one on "
            f"your labels, or override with policy.with_profile({profile.profile_id!r})")

    def pool_size(self, limit: int) -> int:
        return max(limit * self.pool_factor, self.min_pool)

    def fts_floors(self, hybrid: bool = False) -> tuple[int, float]:
        """(min terms, min coverage) of the FTS rule in fts mode or, with ``hybrid``, beside
        the vector channel."""
        if not hybrid:
            return self.fts_min_terms, self.fts_min_coverage
        return (self.fts_min_terms if self.hybrid_fts_min_terms is None else self.hybrid_fts_min_terms,
                self.fts_min_coverage if self.hybrid_fts_min_coverage is None else self.hybrid_fts_min_coverage)

    def required_terms(self, query_term_count: int, hybrid: bool = False) -> int:
        """Matched distinct terms an FTS candidate needs for a query of N terms."""
        n = query_term_count
        if n <= self.short_query_terms:
            return 1
        terms, coverage = self.fts_floors(hybrid)
        # The epsilon keeps float products such as 0.3 × 10 = 3.0000000000000004 from
        # demanding one term more than the stated coverage.
        by_coverage = math.ceil(coverage * n - 1e-9)
        return min(n, max(terms, by_coverage))

    @property
    def family(self) -> str:
        """Which rules are on, e.g. ``floors``, ``centred+cross-script+gate``."""
        parts = ["centred" if self.vector_min_centred is not None else "floors"]
        if self.cross_script_min_terms is not None:
            parts.append("cross-script")
        if self.gate_min is not None:
            parts.append("nqc" if self.gate_signal == "spread" else "gate")
        if self.vector_uncovered != "admit":
            parts.append("coverage")
        if self.vector_min_support is not None or self.fts_min_support is not None:
            parts.append("support")
        if self.fts_floors(hybrid=True) != self.fts_floors():
            parts.append("hybrid-floors")
        if self.min_probability is not None:
            parts.append("probability")
        return "+".join(parts)

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        return {"format": POLICY_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "AdmissionPolicy":
        if not isinstance(data, Mapping):
            raise _invalid(f"an admission policy is a JSON object, got {type(data).__name__}")
        if data.get("format") != POLICY_FORMAT:
            raise _invalid(f"admission policy format must be {POLICY_FORMAT!r}, got {data.get('format')!r}")
        unknown = sorted(set(data) - POLICY_FIELDS - {"format"})
        if unknown:
            raise _invalid(f"unknown admission policy field(s) {', '.join(unknown)}"
                           f"{did_you_mean(unknown[0], POLICY_FIELDS)}; known: {', '.join(sorted(POLICY_FIELDS))}")
        try:
            return cls(**{k: v for k, v in data.items() if k != "format"})
        except TypeError as exc:  # pragma: no cover - every field has a default
            raise _invalid(str(exc)) from exc

    def save(self, path: str | Path) -> Path:
        """Write the policy as JSON (what ``load`` and ``%config PcMem.policy_file`` read)."""
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> "AdmissionPolicy":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise _invalid(f"no admission policy file {str(path)!r}") from exc
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _invalid(f"{str(path)!r} is not a readable JSON policy: {exc}") from exc
        return cls.from_dict(data)


POLICY_FIELDS = frozenset(f.name for f in fields(AdmissionPolicy))


def _keywords_checked(init: Any) -> Any:
    """The dataclass's ``__init__``, refusing a mistyped field by name with the
    library's error and the one suggestion rule (``vector_min_centered`` → did you
    mean ``vector_min_centred``?) instead of a bare ``TypeError``."""

    @functools.wraps(init)
    def checked(self: AdmissionPolicy, *args: Any, **kwargs: Any) -> None:
        for name in kwargs:
            if name not in POLICY_FIELDS:
                raise _invalid(unknown_keyword("AdmissionPolicy()", name, POLICY_FIELDS))
        init(self, *args, **kwargs)

    return checked


AdmissionPolicy.__init__ = _keywords_checked(AdmissionPolicy.__init__)  # type: ignore[method-assign]


#: Each bundled profile's shipped default, chosen the same way for each model
#: (``reports/thresholds/``, ``make eval``): every family tuned on two of the three
#: original bundled corpora (false admission ≤ 0.30 on each) and scored on the third;
#: the family with the best mean held-out nDCG@10 ships, with its thresholds tuned on
#: the three dev splits.
#:
#: * all-MiniLM-L6-v2: centred cosine ≥ 0.31 + cross-script FTS + refusal outside
#:   Latin script (held out 0.621 / 0.649 / 0.561; see ``AdmissionPolicy``).
#: * multilingual-e5-small: the RAW cosine ≥ 0.86 + cross-script FTS, hybrid FTS
#:   floors 4 / 0.30 (held out 0.559 / 0.586 / 0.510). E5 puts unrelated pairs at
#:   ~0.78 and close ones at 0.85–0.95, and its centred cosine separates answerable
#:   from unanswerable questions worse than the raw one (AUC 0.71–0.81 vs 0.83–0.86),
#:   so the centred family lost (held out 0.499 / 0.519 / 0.457). It reads every
#:   script, so the refusal outside the profile's scripts never applies.
DEFAULTS: dict[str, AdmissionPolicy] = {
    MINILM_PROFILE.profile_id: AdmissionPolicy(profile=MINILM_PROFILE.profile_id),
    E5_PROFILE.profile_id: AdmissionPolicy(vector_min_cosine=0.86, vector_min_centred=None,
                                           hybrid_fts_min_coverage=0.30, profile=E5_PROFILE.profile_id),
}

NO_ADMISSION = AdmissionPolicy.floors(1, 0.0, -1.0)
"""Admits every retrieved candidate: the baseline the harness compares against."""

INITIAL_POLICY = AdmissionPolicy.rfc_initial()
"""The RFC's initial constants, kept as the harness's point of comparison."""


def _cross_script(candidate: ChannelCandidate) -> bool:
    return (candidate.script not in (None, "none") and candidate.query_script not in (None, "none")
            and candidate.script != candidate.query_script)


def _fts_verdict(candidate: ChannelCandidate, policy: AdmissionPolicy,
                 hybrid: bool) -> tuple[bool, int, bool, bool | None]:
    """The full-text rule: (admitted, distinct terms needed, whether the cross-script
    rule was asked, whether the support floor held — None where none applies).
    ``_decide_fts`` words it; ``admitted`` needs only the verdict."""
    n = candidate.query_term_count
    matched = len(candidate.matched_terms)
    need = policy.required_terms(n, hybrid)
    ok = n > 0 and matched >= need
    cross = not ok and policy.cross_script_min_terms is not None and _cross_script(candidate)
    if cross:
        ok = n > 0 and matched >= policy.cross_script_min_terms
    floor = policy.fts_min_support
    held = None if floor is None or candidate.support is None else candidate.support >= floor
    return ok and held is not False, need, cross, held


def _decide_fts(candidate: ChannelCandidate, policy: AdmissionPolicy, hybrid: bool) -> AdmissionDecision:
    ok, need, cross, held = _fts_verdict(candidate, policy, hybrid)
    n = candidate.query_term_count
    reason = f"matched {len(candidate.matched_terms)}/{n} terms, needs {need}"
    if n > policy.short_query_terms:
        terms, coverage = policy.fts_floors(hybrid)
        # cite the field that set each floor: a hybrid one left None falls back to its fts one
        t_name = "hybrid_fts_min_terms" if hybrid and policy.hybrid_fts_min_terms is not None else "fts_min_terms"
        c_name = "hybrid_fts_min_coverage" if hybrid and policy.hybrid_fts_min_coverage is not None else "fts_min_coverage"
        if need > terms:  # the coverage floor decided: say so, or "needs 2" contradicts fts_min_terms=1
            reason += f" (⌈{c_name}={coverage:g} × {n} terms⌉ > {t_name}={terms})"
        elif need < terms:  # no query can match more terms than it has
            reason += f" (all {n}: {t_name}={terms} exceeds the query's terms)"
        else:
            reason += f" ({t_name}={terms}, {c_name}={coverage:g})"
    if cross:
        reason += (f"; {candidate.script} entry for a {candidate.query_script} query needs "
                   f"{policy.cross_script_min_terms} (cross_script_min_terms)")
    if held is not None:
        reason += (f"; support {candidate.support:.2f} {'≥' if held else '<'} "
                   f"fts_min_support={policy.fts_min_support:g}")
    return AdmissionDecision(candidate, ok, reason)


def topic_only(candidate: ChannelCandidate, policy: AdmissionPolicy) -> bool:
    """The near-miss shape: the candidate holds some of the query's terms but less
    than ``vector_min_support`` of their specific (IDF) weight."""
    floor, value = policy.vector_min_support, candidate.support
    return floor is not None and value is not None and 0.0 < value < floor


# (signal, value, threshold, the parameter that set it)
_Check = tuple[str, "float | None", float, str]


def _vector_verdict(candidate: ChannelCandidate,
                    policy: AdmissionPolicy) -> tuple[bool, str | None, list[_Check], bool, bool]:
    """The vector rule: (admitted, why it was refused before any threshold — "no cosine"
    or "uncovered", else None —, the threshold checks, whether the uncovered threshold
    replaced the usual one, whether the topic-only rule refused it). ``_decide_vector``
    words it; ``admitted`` needs only the verdict."""
    cos = candidate.cosine
    if cos is None:
        return False, "no cosine", [], False, False
    uncovered = candidate.covered is False
    if uncovered and policy.vector_uncovered == "refuse":
        return False, "uncovered", [], False, False
    rethreshold = uncovered and not isinstance(policy.vector_uncovered, str)
    checks: list[_Check] = []
    if policy.vector_min_centred is None:
        checks.append(("cosine", cos, *((policy.vector_uncovered, "vector_uncovered") if rethreshold
                                        else (policy.vector_min_cosine, "vector_min_cosine"))))
    else:
        if policy.vector_min_cosine > -1.0:
            checks.append(("cosine", cos, policy.vector_min_cosine, "vector_min_cosine"))
        checks.append(("centred", candidate.centred, *((policy.vector_uncovered, "vector_uncovered") if rethreshold
                                                       else (policy.vector_min_centred, "vector_min_centred"))))
    ok = all(value is not None and value >= threshold for _, value, threshold, _ in checks)
    topic = topic_only(candidate, policy)
    return ok and not topic, None, checks, rethreshold, topic


def _decide_vector(candidate: ChannelCandidate, policy: AdmissionPolicy) -> AdmissionDecision:
    ok, refused, checks, rethreshold, topic = _vector_verdict(candidate, policy)
    if refused == "no cosine":
        return AdmissionDecision(candidate, False, "no cosine: the candidate has no vector signal")
    if refused == "uncovered":
        return AdmissionDecision(candidate, False, (
            f"the embedding profile does not cover this {candidate.query_script} query / {candidate.script} "
            "entry (vector_uncovered='refuse')"))
    parts = []
    for name, value, threshold, parameter in checks:
        if value is None:
            parts.append(f"no {name} signal")
            continue
        passed = value >= threshold
        parts.append(f"{name} {value:.3f} {'≥' if passed else '<'} {parameter}={threshold:g}")
    reason = ", ".join(parts)
    if rethreshold:
        reason += " (outside the embedding profile's scripts)"
    if topic:
        reason += (f"; holds the topic, not the question's specific terms: support {candidate.support:.2f} < "
                   f"vector_min_support={policy.vector_min_support:g}")
    return AdmissionDecision(candidate, ok, reason)


def decide(candidate: ChannelCandidate, policy: AdmissionPolicy, hybrid: bool = False) -> AdmissionDecision:
    """Admit or reject one candidate by the per-candidate rules, with the reason in
    words (the whole-query gate is ``gate``'s business). ``hybrid``: the vector channel
    was retrieved beside the FTS one."""
    if candidate.channel not in CHANNEL_ORDER:
        raise ValueError(f"unknown channel {candidate.channel!r}")
    decision = _decide_fts(candidate, policy, hybrid) if candidate.channel == "fts" else _decide_vector(candidate, policy)
    return probability_decision(decision, policy.min_probability)  # the probability rule, when it applies


def admitted(candidate: ChannelCandidate, policy: AdmissionPolicy, hybrid: bool = False) -> bool:
    """``decide(...).admitted`` without wording the reason: what every search asks of
    each candidate, and the harness's per-policy evaluation of every candidate."""
    if (by_probability := probability_verdict(candidate, policy.min_probability)) is not None:
        return by_probability
    if candidate.channel == "fts":
        return _fts_verdict(candidate, policy, hybrid)[0]
    if candidate.channel == "vector":
        return _vector_verdict(candidate, policy)[0]
    raise ValueError(f"unknown channel {candidate.channel!r}")


def gate_value(channels: Mapping[str, Sequence[ChannelCandidate]], signal: str) -> float | None:
    """The best value of ``signal`` over the retrieved pool (for ``spread``: the
    population standard deviation of the ``SPREAD_TOP`` best cosines); None when its
    channel was not retrieved (the gate then does not apply). An empty pool scores −inf."""
    channel = "fts" if signal == "coverage" else "vector"
    if channel not in channels:
        return None
    values = [getattr(c, "cosine" if signal == "spread" else signal) for c in channels[channel]]
    values = [v for v in values if v is not None]
    if not values:
        return -math.inf
    if signal == "spread":
        return spread(values)
    return max(values)


def spread(cosines: Sequence[float]) -> float:
    """The population standard deviation of the ``SPREAD_TOP`` best of ``cosines``
    (the ``spread`` gate's signal; the harness's replay calls this very function)."""
    top = sorted(cosines, reverse=True)[:SPREAD_TOP]
    mean = sum(top) / len(top)
    return math.sqrt(sum((x - mean) ** 2 for x in top) / len(top))


def gate(channels: Mapping[str, Sequence[ChannelCandidate]], policy: AdmissionPolicy) -> str | None:
    """Why the whole query is refused, or None when it passes (or has no gate)."""
    if policy.gate_min is None:
        return None
    best = gate_value(channels, policy.gate_signal)
    if best is None or best >= policy.gate_min:
        return None
    return f"whole-query gate: best {policy.gate_signal} {best:.3f} < gate_min={policy.gate_min:g}"


def admit(
    channels: Mapping[str, Sequence[ChannelCandidate]], policy: AdmissionPolicy
) -> dict[str, tuple[ChannelCandidate, ...]]:
    """Each channel's admitted candidates, in the backend's order. Rejected candidates
    are dropped, never used to fill the limit."""
    if gate(channels, policy) is not None:
        return {name: () for name in channels}
    hybrid = is_hybrid(channels)
    return {
        name: tuple(c for c in candidates if admitted(c, policy, hybrid))
        for name, candidates in channels.items()
    }


def within_pool(candidates: Sequence[ChannelCandidate], pool: int) -> tuple[ChannelCandidate, ...]:
    """The candidates a search with ``pool`` retrieves, from a channel retrieved with a
    pool at least as large (what a replay of smaller limits needs): full-text candidates
    whose ``pool_rank`` is below ``pool``, the others by rank; order kept."""
    return tuple(c for i, c in enumerate(candidates) if in_pool(i, c.pool_rank, pool))


def in_pool(position: int, pool_rank: int | None, pool: int) -> bool:
    """Whether the candidate at 0-based ``position`` of its channel belongs to a pool
    of ``pool``: by its full-text pool order where it has one, else by position."""
    return (position if pool_rank is None else pool_rank) < pool


def is_hybrid(channels: Mapping[str, Sequence[ChannelCandidate]]) -> bool:
    return "fts" in channels and "vector" in channels


def explain(
    channels: Mapping[str, Sequence[ChannelCandidate]], policy: AdmissionPolicy
) -> tuple[AdmissionDecision, ...]:
    refused = gate(channels, policy)
    if refused is not None:
        return tuple(AdmissionDecision(c, False, refused) for name in channels for c in channels[name])
    hybrid = is_hybrid(channels)
    return tuple(decide(c, policy, hybrid) for name in channels for c in channels[name])


def fuse(
    channels: Mapping[str, Sequence[ChannelCandidate]], policy: AdmissionPolicy, limit: int
) -> tuple[MemoryHit, ...]:
    """admit + rrf: what search runs after retrieval, and what the harness replays."""
    return rrf(admit(channels, policy), limit=limit, k=policy.rrf_k)
