"""Where a run is: one line per stage, with the model, the database, stage N of M and
the whole run's ETA.

    stage 3/10 · e5 · oceanbase · retrieve · 42 %, ETA 4 min

A run (``harness.sweep``, or ``compare_embeddings`` over several models) plans its
stages up front — per model: embed, each database (its corpora loaded and retrieved),
the grid replay, the analysis, the report — and each stage reports its share done.
The ETA is the current stage's remainder at its own pace plus every later stage's
estimate (its units × the seconds a unit took in the same kind of stage earlier in the
run, else a rough constant), scaled by how fast the run has been against its
estimates.

On a terminal (or in a notebook) each stage is a tqdm bar. Anywhere else — a CI log,
``make eval | tee``, a pipe — a stage prints plain lines (no carriage returns or cursor
escapes): when it starts, at each quarter, at least every ``LOG_INTERVAL`` seconds so a
long stage never looks stalled, and when it ends.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, TextIO

__all__ = ["LOG_INTERVAL", "RunProgress", "bar", "current", "eta_text", "run", "stage"]

LOG_INTERVAL = 30.0
#: Rough seconds per unit of each kind of stage on this 2-core machine, until the run
#: has timed one of its own: embed (per text; by model), a database (per write or
#: query-mode search), the grid replay (per policy), analyse and report (per run).
SECONDS_PER_UNIT = {"embed": 0.01, "embed minilm": 0.006, "embed e5": 0.04, "sqlite": 0.004, "oceanbase": 0.02,
                    "sweep": 0.004, "analyse": 40.0, "report": 20.0}
SEP = " · "


def _tqdm_is_notebook(cls: type) -> bool:
    return cls.__module__.startswith("tqdm.notebook")


def bar(enabled: bool = True, **options: Any):
    """A ``tqdm.auto`` bar (disabled unless ``enabled``); options as for tqdm. Off a
    terminal it redraws at most every ``LOG_INTERVAL`` seconds."""
    from tqdm.auto import tqdm

    if enabled and not _tqdm_is_notebook(tqdm):
        stream = options.get("file") or sys.stderr
        if not _is_tty(stream):
            options.setdefault("mininterval", LOG_INTERVAL)
            options.setdefault("maxinterval", LOG_INTERVAL * 4)
    return tqdm(disable=not enabled, **options)


def _is_tty(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def _duration(seconds: float) -> str:
    return f"{round(seconds / 60)} min" if seconds >= 90 else f"{round(seconds)} s"


def eta_text(seconds: float) -> str:
    """``ETA 4 min``, ``ETA 40 s``."""
    if seconds != seconds or seconds < 0:
        return "ETA ?"
    return f"ETA {round(seconds / 60)} min" if seconds >= 90 else f"ETA {max(round(seconds), 1)} s"


@dataclass
class _Planned:
    model: str | None
    kind: str  # "embed", a backend name, "sweep", "analyse", "report"
    units: float | None = None
    seconds: float | None = None  # wall time once finished
    skipped: bool = False

    @property
    def rate_key(self) -> str:
        return f"embed {self.model}" if self.kind == "embed" and self.model else self.kind


@dataclass
class RunProgress:
    """The plan of a run and the stage it is in; ``stage(kind)`` runs one (see module)."""

    models: Sequence[str | None]
    kinds: Sequence[str]
    enabled: bool = True
    stream: TextIO | None = None
    plan: list[_Planned] = field(init=False)
    model: str | None = field(init=False, default=None)
    started: float = field(init=False, default_factory=time.perf_counter)
    rates: dict[str, float] = field(init=False, default_factory=dict)  # seconds per unit, measured

    def __post_init__(self) -> None:
        self.plan = [_Planned(m, k) for m in self.models for k in self.kinds]
        self.model = self.models[0] if self.models else None

    # ------------------------------------------------------------------ plan

    def _find(self, kind: str, model: str | None = None) -> _Planned | None:
        model = self.model if model is None else model
        return next((s for s in self.plan if s.kind == kind and s.model == model), None)

    def expect(self, kind: str, units: float) -> None:
        """The size of a stage of the current model (and of the same stage of every later
        model that has none yet: they run the same corpora)."""
        own = self._find(kind)
        for s in self.plan:
            if s.kind == kind and (s is own or s.units is None):
                s.units = units

    def skip(self, kind: str) -> None:
        """A planned stage with nothing to do (every text already embedded): dropped
        from the count."""
        s = self._find(kind)
        if s is not None:
            s.skipped = True

    @property
    def _active(self) -> list[_Planned]:
        return [s for s in self.plan if not s.skipped]

    def _estimate(self, s: _Planned) -> float:
        rate = self.rates.get(s.rate_key, SECONDS_PER_UNIT.get(s.rate_key, SECONDS_PER_UNIT.get(s.kind, 1.0)))
        units = s.units if s.units is not None else (1.0 if s.kind in ("analyse", "report") else 0.0)
        return rate * units

    def eta(self, current: _Planned | None, fraction: float, elapsed: float) -> float:
        """Seconds left in the run: the current stage at its own pace once it has one,
        the later stages at their estimates, scaled by how the run has kept to its own."""
        active = self._active
        done = [s for s in active if s.seconds is not None]
        spent, planned = sum(s.seconds for s in done), sum(self._estimate(s) for s in done)
        pace = spent / planned if planned > 1.0 and spent > 1.0 else 1.0
        later = [s for s in active if s.seconds is None and s is not current]
        rest = sum(self._estimate(s) for s in later) * pace
        if current is None:
            return rest
        if fraction >= 0.02 and elapsed >= 3.0:
            own = elapsed * (1.0 - fraction) / fraction
        else:
            own = max(self._estimate(current) * pace - elapsed, 0.0)
        return own + rest

    # ------------------------------------------------------------------ stages

    @contextlib.contextmanager
    def for_model(self, model: str | None) -> Iterator["RunProgress"]:
        previous, self.model = self.model, model
        try:
            yield self
        finally:
            self.model = previous

    def label(self, s: _Planned, step: str | None = None) -> str:
        active = self._active
        n = active.index(s) + 1 if s in active else len(active)
        parts = [f"stage {n}/{len(active)}"]
        if s.model:
            parts.append(s.model)
        parts.append(s.kind)
        if step and step != s.kind:
            parts.append(step)
        return SEP.join(parts)

    def stage(self, kind: str, total: float | None = None) -> "Stage":
        s = self._find(kind)
        if s is None:  # not planned (a caller outside a run's plan): counted from here on
            s = _Planned(self.model, kind)
            self.plan.append(s)
        s.skipped = False
        if total is not None:
            s.units = total
        return Stage(self, s)


class Stage:
    """One running stage: ``update(n)`` units done, ``step(text)`` names what it does now
    (``load atlas-etl``, ``retrieve``); a context manager that ends the stage."""

    def __init__(self, run: RunProgress, planned: _Planned) -> None:
        self.run, self.planned = run, planned
        self.done = 0.0
        self.current_step: str | None = None
        self.started = time.perf_counter()
        self._last_line, self._last_quarter = 0.0, 0
        self._bar = None
        self._stop: threading.Event | None = None
        self.stream = run.stream or sys.stderr
        self.plain = run.enabled and not _is_tty(self.stream) and not self._notebook()

    @staticmethod
    def _notebook() -> bool:
        from tqdm.auto import tqdm

        return _tqdm_is_notebook(tqdm)

    @property
    def total(self) -> float:
        return float(self.planned.units or 0.0)

    @total.setter
    def total(self, value: float) -> None:  # as on a tqdm bar: a callee may size the stage
        self.planned.units = value

    def refresh(self) -> None:
        self._show()

    @property
    def fraction(self) -> float:
        return min(self.done / self.total, 1.0) if self.total > 0 else 0.0

    def __enter__(self) -> "Stage":
        if self.run.enabled and not self.plain:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=100, file=self.stream, leave=True, desc=self.run.label(self.planned),
                             bar_format="{desc} · {percentage:3.0f} % |{bar:16}| {postfix}")
        self._show(force=True)
        if self.plain:  # a stage that reports nothing for a while still says it is alive
            self._stop = threading.Event()
            threading.Thread(target=self._heartbeat, daemon=True, name="pc-eval-progress").start()
        return self

    def _heartbeat(self) -> None:
        while not self._stop.wait(LOG_INTERVAL / 3):
            if time.perf_counter() - self._last_line >= LOG_INTERVAL:
                self._show(force=True)

    def step(self, text: str) -> None:
        self.current_step = text
        self._show(force=self._bar is not None)

    def update(self, n: float = 1.0) -> None:
        self.done += n
        self._show()

    def line(self) -> str:
        elapsed = time.perf_counter() - self.started
        if self.total > 1:
            percent = f"{100 * self.fraction:.0f} %"
        else:  # a stage without countable units (analyse, report): how long it has run
            percent = f"running {_duration(elapsed)}" if elapsed >= 1 else "…"
        eta = eta_text(self.run.eta(self.planned, self.fraction, elapsed))
        return f"{self.run.label(self.planned, self.current_step)}{SEP}{percent}, {eta}"

    def _show(self, force: bool = False) -> None:
        if not self.run.enabled:
            return
        if self._bar is not None:
            now = time.perf_counter()
            if not force and now - self._last_line < 0.5 and round(100 * self.fraction) == self._bar.n:
                return  # a load advances thousands of times: redraw twice a second at most
            self._last_line = now
            elapsed = now - self.started
            self._bar.set_description_str(self.run.label(self.planned, self.current_step), refresh=False)
            self._bar.set_postfix_str(eta_text(self.run.eta(self.planned, self.fraction, elapsed)), refresh=False)
            self._bar.n = round(100 * self.fraction)
            self._bar.refresh()
            return
        now = time.perf_counter()
        if self.fraction >= 1.0 and not force:
            return  # the end is the "done" line
        quarter = int(4 * self.fraction)
        if force or quarter > self._last_quarter or now - self._last_line >= LOG_INTERVAL:
            self._last_line, self._last_quarter = now, max(quarter, self._last_quarter)
            print(self.line(), file=self.stream, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self._stop is not None:
            self._stop.set()
        seconds = time.perf_counter() - self.started
        p = self.planned
        p.seconds = seconds
        if exc[0] is None and p.units:
            self.run.rates[p.rate_key] = seconds / p.units
        if not self.run.enabled:
            return
        if self._bar is not None:
            self._bar.n = 100 if exc[0] is None else self._bar.n
            self._bar.set_postfix_str(f"{seconds:.0f} s", refresh=False)
            self._bar.close()
        elif exc[0] is None:
            print(f"{self.run.label(p)}{SEP}done in {seconds:.0f} s", file=self.stream, flush=True)


_CURRENT: contextvars.ContextVar[RunProgress | None] = contextvars.ContextVar("powercontext_eval_run", default=None)


def current() -> RunProgress | None:
    """The run being reported, if any."""
    return _CURRENT.get()


@contextlib.contextmanager
def run(models: Sequence[str | None], kinds: Sequence[str], enabled: bool = True,
        stream: TextIO | None = None) -> Iterator[RunProgress]:
    """Report a run of ``models`` × ``kinds`` stages; a run inside another one joins it."""
    outer = _CURRENT.get()
    if outer is not None:
        yield outer
        return
    progress = RunProgress(list(models), list(kinds), enabled, stream)
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


def stage(kind: str, total: float | None = None, enabled: bool = True) -> Stage:
    """A stage of the current run (or, outside any, of a run of its own)."""
    progress = _CURRENT.get() or RunProgress([None], [kind], enabled)
    return progress.stage(kind, total)
