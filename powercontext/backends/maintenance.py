"""``svc.maintain()``: server upkeep after a bulk load, and how long a search then takes.

A freshly loaded OceanBase Memory is searched 2.2–2.7× slower than once the server has
compacted it (OCEANBASE_NOTES.md, "Compaction"), which it otherwise does once a day. A
backend's maintenance runs its server's own upkeep (OceanBase: a minor freeze, then a
major one once the dump is done; SQLite: merging the full-text index's segments, a WAL
checkpoint, ``PRAGMA optimize``) and then *measures* what searches take: probe rounds of
the database's own full-text and vector statements, repeated until they stop getting
faster (``Settling``), rather than sleeping a guessed while. The report holds every
step with its seconds and the probes before and after.

Mixin of DatabaseMemoryBackend; an adapter supplies ``_maintenance_steps`` and
``_probe_sample``.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from .retrieval import fts_fetch_size

#: Seconds the probe rounds must stop improving for before searches count as settled,
#: at SETTLE_FULL_ROWS head rows or more (a 10k load's searches got faster ~a minute
#: after the compaction reported done).
SETTLE_WINDOW_S = 60.0
SETTLE_FULL_ROWS = 10_000
#: The shortest window: a few probe rounds, so that one round's noise is not "settled".
SETTLE_MIN_S = 3.0
#: A round this much faster than the best before it still counts as improving.
IMPROVEMENT = 0.10
PROBE_INTERVAL_S = 5.0
PROBE_QUERIES = 8


@dataclass(frozen=True)
class MaintenanceStep:
    name: str
    seconds: float
    detail: str = ""


@dataclass(frozen=True)
class MaintenanceReport:
    """What ``svc.maintain()`` did and measured. ``probe_ms_*``: median milliseconds of
    the database's full-text and vector statements over a sample of its own rows, before
    the upkeep and once searches settled — the median round of the settle window where
    the server's upkeep goes on in the background, else the one round after it
    (``None``: the database holds no rows)."""

    database: str
    steps: tuple[MaintenanceStep, ...]
    probe_ms_before: float | None
    probe_ms_after: float | None
    seconds: float
    settled: bool = True
    probes: tuple[tuple[float, float], ...] = field(default=(), repr=False)  # (seconds since start, ms)

    def __str__(self) -> str:
        lines = [f"maintenance of the {self.database} database: {self.seconds:.1f} s"]
        lines += [f"  {s.name}: {s.seconds:.1f} s" + (f" ({s.detail})" if s.detail else "") for s in self.steps]
        if self.probe_ms_before is not None:
            after = "not settled" if not self.settled else "settled"
            lines.append(f"  search probe: {self.probe_ms_before:.1f} ms before, {self.probe_ms_after:.1f} ms after ({after})")
        return "\n".join(lines)


def settle_window(rows: int) -> float:
    """The settle window for a database of ``rows`` head rows: SETTLE_WINDOW_S scaled
    by its size, at least SETTLE_MIN_S. A fixed minute made ``maintain()`` of a
    two-entry Memory take 88 s, 65 of them probing searches that had nothing to
    settle (issue 45); what the compaction leaves to settle grows with the rows."""
    return max(SETTLE_MIN_S, min(SETTLE_WINDOW_S, SETTLE_WINDOW_S * rows / SETTLE_FULL_ROWS))


def probe_interval(window: float) -> float:
    """Seconds between probe rounds: PROBE_INTERVAL_S, or less in a short window so it
    still holds several rounds."""
    return min(PROBE_INTERVAL_S, window / 4) if window > 0 else PROBE_INTERVAL_S


class Settling:
    """When probe rounds have stopped getting faster: the best round of the last
    ``window`` seconds is not ``improvement`` better than the best before it. Measured,
    not guessed: after a major compaction OceanBase's searches got faster ~a minute
    after the server reported the compaction done, and no view says when."""

    def __init__(self, window: float = SETTLE_WINDOW_S, improvement: float = IMPROVEMENT) -> None:
        self.window, self.improvement = window, improvement
        self.rounds: list[tuple[float, float]] = []

    def add(self, at: float, ms: float) -> None:
        self.rounds.append((at, ms))

    def _split(self) -> tuple[list[float], list[float]]:
        """(rounds before the last window, rounds within it), in milliseconds."""
        last = self.rounds[-1][0]
        return ([ms for at, ms in self.rounds if at < last - self.window],
                [ms for at, ms in self.rounds if at >= last - self.window])

    def settled(self) -> bool:
        if not self.rounds:
            return False
        before, recent = self._split()
        return bool(before) and min(recent) >= (1 - self.improvement) * min(before)

    def window_ms(self) -> float:
        """The median round of the last window: what a search takes once settled. One
        round swings with the server's background work (after a 10k load on seekdb the
        rounds of the settled window read 12.1–20.0 ms, and the last one 19.2)."""
        return statistics.median(self._split()[1])


class Maintenance:
    """Mixin of DatabaseMemoryBackend: ``maintain``."""

    #: Whether the server's upkeep goes on after its statements return (OceanBase
    #: compacts in the background), so that searches are probed until they settle.
    upkeep_settles: bool = False

    async def maintain(self, timeout: float = 900.0, settle: float | None = None) -> MaintenanceReport:
        """``settle``: the settle window in seconds; None scales it to the rows
        (``settle_window``)."""
        return await self._run(self._maintain_sync, float(timeout), None if settle is None else float(settle))

    def _maintain_sync(self, timeout: float, settle: float | None) -> MaintenanceReport:
        start = time.monotonic()
        deadline = start + timeout
        probes, rows = self._probes()
        if settle is None:
            settle = min(settle_window(rows), timeout)
        interval = probe_interval(settle)
        before = self._probe_round(probes)
        steps = list(self._maintenance_steps(deadline))
        settling = Settling(window=settle)
        after = before
        upkept = time.monotonic()
        while probes:
            after = self._probe_round(probes)  # once, where the upkeep is over when it returns
            settling.add(time.monotonic() - start, after)
            if (not self.upkeep_settles or not settle or settling.settled()
                    or time.monotonic() + interval > deadline):
                break
            time.sleep(interval)
        settled = not probes or not settle or not self.upkeep_settles or settling.settled()
        if probes and self.upkeep_settles and settling.settled():
            after = settling.window_ms()
        if probes and self.upkeep_settles:
            steps.append(MaintenanceStep("searches settle", time.monotonic() - upkept,
                                         f"{len(settling.rounds)} probe rounds, a {settle:g} s window for {rows} rows"
                                         + ("" if settled else ", timed out")))
        return MaintenanceReport(database=self.name, steps=tuple(steps), probe_ms_before=before,
                                 probe_ms_after=after, seconds=time.monotonic() - start, settled=settled,
                                 probes=tuple(settling.rounds))

    def _probes(self) -> tuple[list[tuple[str, Callable[[Any], Any]]], int]:
        """((channel, run(tx)) per probe, the head rows): the probes are this database's
        own full-text and vector statements, over every Memory, asked with the terms and
        the stored vector of a sample of its rows (none when it holds none)."""
        with self._transaction(write=False) as tx:
            rows = int(self._rows(tx, "SELECT COUNT(*) FROM memory_entry_heads")[0][0])
            ids = [artifact_id for artifact_id, _ in self._list_heads(tx)]
            sample = self._probe_sample(tx, PROBE_QUERIES)
            vectors = {}
            if self._capabilities_sync().vector:
                for artifact_id, entry_id, _ in sample:
                    vectors.update(self._projection_vectors(tx, artifact_id, [entry_id]))
        probes = []
        for _, entry_id, text in sample:
            terms = tuple(text.split()[:4])
            if terms:
                probes.append(("fts", lambda tx, t=terms: self._fts_query(tx, ids, t, fts_fetch_size(32))))
            if entry_id in vectors:
                probes.append(("vector", lambda tx, v=vectors[entry_id]: self._vector_query(tx, ids, v, 32)))
        return probes, rows

    def _probe_round(self, probes: Sequence[tuple[str, Callable[[Any], Any]]]) -> float | None:
        """The median milliseconds of each channel's probe statements, summed over the
        channels; each statement in its own read transaction."""
        if not probes:
            return None
        times: dict[str, list[float]] = {}
        for channel, run in probes:
            with self._transaction(write=False) as tx:
                begun = time.perf_counter()
                run(tx)
                times.setdefault(channel, []).append((time.perf_counter() - begun) * 1000)
        return sum(statistics.median(values) for values in times.values())

    def _maintenance_steps(self, deadline: float) -> Iterator[MaintenanceStep]:
        """Run the server's upkeep (each wait bounded by ``deadline``, a monotonic
        time), yielding a MaintenanceStep per step."""
        return iter(())
