"""The opt-in search log (issue 44): what each search asked and what admission decided.

Off by default, because questions can hold secrets: ``pc.open(..., search_log=True)``
turns it on. Each ``svc.search`` (and so each Runtime search through that service) then
appends one ``SearchLogRecord``: when, the question, the Memories searched (refs with
Revision), requested and used mode, the embedding profile id, the policy in force (its
JSON), the limit, the admitted hits (entry id, entry version id, rank, channels) and
every rejected candidate of the retrieved pool with its signals and the reason
admission gave. Entry texts are not copied: the refs name them exactly.

Where the database's profile has a calibration (memory/calibration.py), every logged
candidate also carries its calibrated probability and the cell (language pair or query
length) it was read from — a rejection its own, a hit one per channel that admitted it
— so a log can be re-judged in probability units (issue 46); None otherwise. Records
written before these fields existed load with them None.

The record is built from what the search already computed — the retrieved channels
and the fused hits; the reasons are ``admission.explain``'s, the same words
``--explain`` shows — never by searching again. It is stored in the same database, in
a table of its own (``backends/search_log_table.py``), never in the Memory tables: it
changes no hash, no Revision and no ``verify``.

Best effort, off the caller's path: a search only keeps a reference to what it
computed (no record is built, no JSON, no statement); the records are built and
written in batches on the backend's worker — one multi-row insert, and the trim, in one
transaction — when ``FLUSH_EVERY`` (32) are waiting, ``FLUSH_AFTER_S`` (0.25 s) after
the oldest waiting one, and before the service reads, clears or closes the log (so
``svc.search_log()`` always sees the searches made before it; ``make bench`` measures
the cost). The first search of each service is written at once. A failed write is
counted per record (``SearchLog.failures``) and logged as one warning per service;
the searches are unaffected.

What a crash can lose: a SIGKILL (or a process that exits without ``svc.close()``, or
an event loop closed without it) loses the records still waiting — at most the last
31 searches, or the last 0.25 s of them — and the batch being written if its
transaction had not committed. It never corrupts the database or leaves part of a
batch: the batch's insert and trim commit together or not at all (the crash loop in
tests/reliability checks this).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import pydantic_core
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..backends.search_log_table import SearchLogTable
from ..errors import CapabilityNotSupportedError, InvalidMemoryRequestError, shown
from ..model import ArtifactRef, ChannelCandidate, MemoryHit
from . import admission

log = logging.getLogger(__name__)

#: Rows kept by default. Oldest rows are dropped first; ``pc.open(...,
#: search_log_cap=N)`` sets another cap. A hybrid search with a full pool (2 × 32
#: candidates) makes a record of ~15 KB (rejected candidates stored columnar; measured
#: at 1k entries: median 14.8 KB, max 15.6 KB), so the default cap holds up to ~150 MB.
DEFAULT_CAP = 10_000
MAX_CAP = 1_000_000
#: The table is trimmed back to the cap on a service's first append and then every
#: TRIM_EVERY appends (every ``cap`` when the cap is smaller), so trimming costs one
#: indexed statement per hundred searches, not one per search. Between trims it may
#: hold up to TRIM_EVERY - 1 rows more than the cap (per service logging at once);
#: ``search_log()`` never returns more than the cap's newest.
TRIM_EVERY = 100
#: Records are written in batches: when FLUSH_EVERY are waiting, or FLUSH_AFTER_S
#: seconds after the oldest waiting one was taken, and whenever the service reads,
#: clears or closes the log (``drain``). One multi-row insert per batch costs a search
#: a fraction of one insert per search (``make bench``).
FLUSH_EVERY = 32
FLUSH_AFTER_S = 0.25


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LoggedMemory(_Frozen):
    """A Memory a search read, at the exact Revision it searched."""

    artifact_id: str
    revision: int


class LoggedHit(_Frozen):
    """An admitted hit, in the order the search returned it (rank 1 first)."""

    memory_artifact_id: str
    revision: int
    entry_id: str
    entry_version_id: str
    rank: int
    score: float
    channels: tuple[str, ...]
    #: channel → the calibrated probability of the candidate that channel admitted, and
    #: the calibration cell it was read from; None when no channel had one (no
    #: calibration for the profile, or a record written before issue 46).
    probability: dict[str, float] | None = None
    calibration_cell: dict[str, str] | None = None


class LoggedRejection(_Frozen):
    """A candidate of the retrieved pool that admission refused, with its raw signals
    (the ones the policy decided on; None where the channel does not measure one)."""

    channel: str
    channel_rank: int
    memory_artifact_id: str
    revision: int
    entry_id: str
    entry_version_id: str
    reason: str
    matched_terms: int
    query_terms: int
    cosine: float | None = None
    centred: float | None = None
    support: float | None = None
    script: str | None = None
    query_script: str | None = None
    covered: bool | None = None
    pool_rank: int | None = None
    probability: float | None = None
    calibration_cell: str | None = None


class SearchLogRecord(_Frozen):
    """One logged search. ``id`` is its row's; records are ordered by ``logged_at``
    (when the search was asked), then ``id``."""

    id: int | None = None
    logged_at: datetime
    question: str
    memories: tuple[LoggedMemory, ...]
    requested_mode: str
    mode: str
    fallback_reason: str | None = None
    embedding_profile: str | None = None
    policy: dict[str, Any]
    limit: int
    hits: tuple[LoggedHit, ...]
    rejected: tuple[LoggedRejection, ...]

    @field_validator("rejected", mode="before")
    @classmethod
    def _columnar(cls, value: Any) -> Any:
        return _expand_rejected(value)


def record_fields(
    *,
    question: str,
    memories: Sequence[ArtifactRef],
    requested_mode: str,
    mode: str,
    fallback_reason: str | None,
    embedding_profile: str | None,
    policy: admission.AdmissionPolicy,
    limit: int,
    channels: Mapping[str, Sequence[ChannelCandidate]],
    hits: Sequence[MemoryHit],
    decisions: Sequence[Any] = (),
    logged_at: datetime | None = None,
) -> dict[str, Any]:
    """The record of one search, from what it computed, as the plain fields a
    ``SearchLogRecord`` is read back from. ``decisions``: the search's own ``explain``
    output when it asked for one (else it is worded here, from the same candidates and
    policy — pure, no I/O). Plain dicts, not models: validating ~60 nested models per
    search cost more than the insert; the record is validated when it is read."""
    decisions = decisions or admission.explain(channels, policy)
    # Stored columnar (``_COMPACT``): one list of values per rejected candidate, each
    # Memory and each reason written once and named by index — a third of the JSON and
    # of the time per candidate of a dict each; ``SearchLogRecord`` expands it on read.
    refs: dict[tuple[str, int], int] = {}
    reasons: dict[str, int] = {}
    cells: dict[str, int] = {}
    rows = []
    # hit key → channel → (probability, cell) of the admitted candidates that have one
    calibrated: dict[tuple[str, str, str], dict[str, tuple[float, str | None]]] = {}
    for d in decisions:
        c = d.candidate
        if d.admitted:
            if c.probability is not None:
                calibrated.setdefault(c.key, {})[c.channel] = (c.probability, c.calibration_cell)
            continue
        ref = refs.setdefault((c.memory_ref.artifact_id, c.memory_ref.revision), len(refs))
        row = [c.channel, c.rank, ref, c.entry_id, c.entry_version_id, reasons.setdefault(d.reason, len(reasons)),
               len(c.matched_terms), c.query_term_count, *[getattr(c, name) for name in _SIGNALS]]
        if c.probability is not None:  # the cell too is named by index: a handful per search
            row += [c.probability, None if c.calibration_cell is None else cells.setdefault(c.calibration_cell,
                                                                                             len(cells))]
        rows.append(row)
    rejected = {"memories": [list(r) for r in refs], "reasons": list(reasons), "rows": rows}
    if cells:
        rejected["cells"] = list(cells)
    return {
        "logged_at": (logged_at or datetime.now(timezone.utc)).isoformat(),
        "question": question,
        "memories": [{"artifact_id": r.artifact_id, "revision": r.revision} for r in memories],
        "requested_mode": requested_mode,
        "mode": mode,
        "fallback_reason": fallback_reason,
        "embedding_profile": embedding_profile,
        "policy": policy.to_dict(),
        "limit": limit,
        "hits": [_hit(h, i, calibrated) for i, h in enumerate(hits, start=1)],
        "rejected": rejected,
    }


def _hit(hit: MemoryHit, rank: int, calibrated: Mapping[tuple[str, str, str], Mapping[str, tuple]]) -> dict:
    fields = {"memory_artifact_id": hit.memory_ref.artifact_id, "revision": hit.memory_ref.revision,
              "entry_id": hit.entry_id, "entry_version_id": hit.entry_version_id, "rank": rank, "score": hit.score,
              "channels": list(hit.matched_by)}
    by_channel = calibrated.get((hit.memory_ref.artifact_id, hit.entry_id, hit.entry_version_id))
    if by_channel:  # absent, not null, without a calibration: old and new records alike
        fields["probability"] = {ch: p for ch, (p, _) in by_channel.items()}
        fields["calibration_cell"] = {ch: cell for ch, (_, cell) in by_channel.items() if cell is not None}
    return fields


_SIGNALS = ("cosine", "centred", "support", "script", "query_script", "covered", "pool_rank")
#: The columns of a stored rejected row, after (channel, channel_rank, memory index,
#: entry_id, entry_version_id, reason index). The calibrated ones come last and only
#: when the candidate has a probability (the cell as an index into ``cells``): a row
#: without them — no calibration, or written before issue 46 — is shorter, and
#: ``_expand_rejected`` zips it with these names, so the missing tail reads as None.
_COMPACT = ("matched_terms", "query_terms", *_SIGNALS, "probability", "calibration_cell")
_CELL_AT = len(_COMPACT) - 1


def _expand_rejected(stored: Any) -> Any:
    """The columnar ``rejected`` of a stored record as one dict per candidate (anything
    else is left for validation to judge)."""
    if not isinstance(stored, dict) or not {"memories", "reasons", "rows"} <= stored.keys():
        return stored
    memories, reasons, cells = stored["memories"], stored["reasons"], stored.get("cells", ())
    out = []
    try:
        for channel, rank, ref, entry_id, version_id, reason, *values in stored["rows"]:
            artifact_id, revision = memories[ref]
            if len(values) > _CELL_AT and values[_CELL_AT] is not None:
                values[_CELL_AT] = cells[values[_CELL_AT]]
            out.append({"channel": channel, "channel_rank": rank, "memory_artifact_id": artifact_id,
                        "revision": revision, "entry_id": entry_id, "entry_version_id": version_id,
                        "reason": reasons[reason], **dict(zip(_COMPACT, values))})
    except (TypeError, ValueError, IndexError, KeyError) as exc:
        # a hand-edited row: a ValidationError, so the reader skips it and says which
        raise ValueError(f"not a columnar rejected list: {type(exc).__name__}: {exc}") from None
    return out


def record_json(**search: Any) -> str:
    """``record_fields`` as the compact JSON text a row stores (pydantic-core's encoder:
    a fifth of the stdlib's time on a record of 64 candidates)."""
    return pydantic_core.to_json(record_fields(**search)).decode()


def build_record(**search: Any) -> SearchLogRecord:
    """``record_fields`` as a typed, validated ``SearchLogRecord``."""
    return SearchLogRecord.model_validate(record_fields(**search))


def check_cap(cap: Any) -> int:
    if isinstance(cap, bool) or not isinstance(cap, int) or not 1 <= cap <= MAX_CAP:
        raise InvalidMemoryRequestError(f"search_log_cap must be an integer in 1..{MAX_CAP:,}, got {shown(cap)}")
    return cap


def _micros(moment: Any, name: str) -> int | None:
    if moment is None:
        return None
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        raise InvalidMemoryRequestError(
            f"{name} must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)) or None, got {shown(moment)}"
        )
    return int(moment.timestamp() * 1_000_000)


class SearchLog:
    """One service's search log: the switch, the cap, the records not yet written and
    the writes in flight."""

    def __init__(self, backend: Any, enabled: bool, cap: int = DEFAULT_CAP) -> None:
        self.enabled = enabled
        self.cap = cap
        self.appended = 0
        #: Records whose write failed (the searches they logged were not affected).
        self.failures = 0
        self._table = SearchLogTable(backend)
        #: (logged_at_us, the search's fields) of the records not yet written
        self._buffer: list[tuple[int, dict[str, Any]]] = []
        self._trim_due = False
        self._timer: asyncio.TimerHandle | None = None
        self._pending: set[asyncio.Task] = set()

    def record(self, **search: Any) -> None:
        """Log one search (``record_fields``'s arguments). Never raises. The caller pays
        only for keeping the search's own objects: the record is built and written
        later, in a batch (module docstring)."""
        if not self.enabled:
            return
        self.appended += 1
        logged_at = search.setdefault("logged_at", datetime.now(timezone.utc))  # when asked, not when written
        self._buffer.append((int(logged_at.timestamp() * 1_000_000), search))
        # the first append of each service trims too: a process killed before its
        # hundredth search must not leave the next one a log beyond the cap
        if (self.appended - 1) % min(TRIM_EVERY, self.cap) == 0:
            self._trim_due = True
        try:
            # The first record is written at once (a short-lived process logs something);
            # later ones when FLUSH_EVERY wait or FLUSH_AFTER_S after the oldest waiting.
            if self.appended == 1 or len(self._buffer) >= FLUSH_EVERY:
                self._flush()
            elif self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(FLUSH_AFTER_S, self._flush)
        except Exception as exc:  # noqa: BLE001 - a log must never fail the search
            self._failed(exc, len(self._buffer))
            self._buffer.clear()

    def _flush(self) -> None:
        """Start writing the waiting records as one batch on the backend's worker."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._buffer:
            return
        batch, self._buffer = self._buffer, []
        trim, self._trim_due = (self.cap if self._trim_due else None), False

        def make() -> list[tuple[int, str]]:
            # Built on the worker thread: wording the reasons and the JSON cost the
            # caller's loop nothing.
            return [(at, record_json(**search)) for at, search in batch]

        try:
            task = asyncio.get_running_loop().create_task(self._append(make, trim, len(batch)))
        except Exception as exc:  # noqa: BLE001 - a log must never fail the search
            self._failed(exc, len(batch))
            return
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _append(self, make, trim: int | None, count: int) -> None:
        try:
            await self._table.append(make, trim)
        except Exception as exc:  # noqa: BLE001 - best effort by design (module docstring)
            self._failed(exc, count)

    def _failed(self, exc: BaseException, count: int) -> None:
        first = self.failures == 0
        self.failures += count
        if first:
            log.warning("search log: an append failed and was dropped (searches are unaffected; "
                        "further failures are only counted in svc.search_log_failures): %s: %s",
                        type(exc).__name__, exc)

    async def drain(self) -> None:
        """Write the waiting records and wait for every write in flight (their failures
        were already counted): what a service read, cleared or closed after is logged."""
        self._flush()
        while self._pending:
            await asyncio.gather(*tuple(self._pending), return_exceptions=True)

    async def read(self, since: Any = None, limit: int | None = None) -> list[SearchLogRecord]:
        since_us = _micros(since, "since")
        if limit is None:
            limit = self.cap
        elif isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise InvalidMemoryRequestError(f"limit must be a positive integer or None, got {shown(limit)}")
        await self.drain()
        rows = await self._table.read(since_us, min(limit, self.cap))
        records = []
        for row_id, text in rows:
            try:
                records.append(SearchLogRecord.model_validate_json(text).model_copy(update={"id": row_id}))
            except ValidationError as exc:
                # Appends are whole transactions, so only a hand-edited row gets here: skip
                # it, so the rest of the log stays readable, and say which one.
                log.warning("search log: row %s is not a search log record and was skipped (%s)",
                            row_id, str(exc).splitlines()[0])
        return records

    async def frame(self, since: Any = None, limit: int | None = None):
        """The records as a pandas DataFrame: one row per search; ``hits`` and
        ``rejected`` hold lists of dicts, ``n_hits`` and ``n_rejected`` their sizes."""
        try:
            import pandas as pd
        except ImportError:
            raise CapabilityNotSupportedError(
                "search_log_frame() needs pandas: pip install 'powercontext[notebook]'") from None
        rows = []
        for r in await self.read(since, limit):
            row = r.model_dump(mode="python")
            row["memories"] = [f"{m['artifact_id']}@{m['revision']}" for m in row["memories"]]
            row["n_hits"], row["n_rejected"] = len(r.hits), len(r.rejected)
            rows.append(row)
        columns = list(SearchLogRecord.model_fields) + ["n_hits", "n_rejected"]
        return pd.DataFrame(rows, columns=columns)

    async def clear(self, before: Any = None) -> int:
        before_us = _micros(before, "before")
        await self.drain()
        return await self._table.clear(before_us)
