"""Every public entry point, called with hostile arguments derived from its signature
(issue 35): the MemoryService methods (render_context and patch among them) on both
databases, ``pc.open``, the Runtime's public methods and those of its scoped
applications, the importers' CLI and every ``%pcmem`` subcommand.

What must hold for every call: only a ``PowerContextError`` escapes (a ``UsageError``
line from the magics, an exit code from the CLI); no message quotes more than a few
hundred characters of its input; and a refused call writes nothing (database rows,
files in the working directory). Bounded by PC_ENTRY_FUZZ_EXAMPLES (per entry point)
in ``make test``; ``make soak`` runs it long."""

from __future__ import annotations

import asyncio
import inspect
import os
import uuid
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database

from ..magics.conftest import shell  # noqa: F401  (the magics' IPython shell fixture)
from ..support import counts
from .hostile import QUOTED, Ledger, arguments, public_methods, surrogate_calls, tree, with_surrogate
from .upstream_files import importer_sources

EXAMPLES = int(os.environ.get("PC_ENTRY_FUZZ_EXAMPLES", "20"))


class Later:
    """A valid value read when the call is made (the head moves as the fuzz writes)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __repr__(self) -> str:
        return "<later>"


async def _resolve(value: Any) -> Any:
    if isinstance(value, Later):
        value = value.make()
        return await value if inspect.isawaitable(value) else value
    return value


def _settings(factor: float = 1.0):
    return settings(max_examples=max(3, int(EXAMPLES * factor)), deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _each(names, strategy_of, run, factor: float = 1.0) -> None:
    """For every entry point in turn, hypothesis draws its calls (so none is left out)."""
    def test_of(name):
        @_settings(factor)
        @given(strategy_of(name))
        def calls_of_one_entry_point(drawn):
            run(name, drawn)

        return calls_of_one_entry_point

    for name in sorted(names):
        test_of(name)()


def _fuzz(loop, ledger: Ledger, methods: dict, valid: dict, snapshot: Callable, after_call: Callable | None = None,
          factor: float = 1.0) -> None:
    """Hypothesis over the arguments of every method; every outcome goes to the ledger."""

    def one(name, kwargs):
        kwargs = {k: loop.run_until_complete(_resolve(v)) for k, v in kwargs.items()}
        before = loop.run_until_complete(snapshot())
        ledger.calls[name] += 1
        try:
            result = methods[name](**kwargs)
            if inspect.isawaitable(result):
                result = loop.run_until_complete(result)
        except BaseException as exc:  # noqa: BLE001 - every outcome is booked
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            ledger.refused(name, kwargs, exc)
            after = loop.run_until_complete(snapshot())
            if after != before:
                ledger.wrote(name, kwargs, f"{type(exc).__name__} but {_difference(before, after)}")
            return
        if after_call is not None:
            loop.run_until_complete(after_call(result))

    _each(methods, lambda name: arguments(methods[name], valid), one, factor)
    # then, not at random: a lone surrogate in every string parameter of every method
    for name in sorted(methods):
        for kwargs in surrogate_calls(methods[name], valid, _lift):
            ledger.surrogates += 1
            one(name, kwargs)


def _lift(value: Any) -> list[Any]:
    """``with_surrogate`` of a valid value, a deferred one (Later) spliced when resolved."""
    if not isinstance(value, Later):
        return with_surrogate(value)

    async def spliced():
        resolved = await _resolve(value)
        return (with_surrogate(resolved) or [resolved])[0]
    return [Later(spliced)]


def _difference(before: dict, after: dict) -> str:
    return "; ".join(f"{k}: {before.get(k)!r:.80} → {after.get(k)!r:.80}" for k in sorted(set(before) | set(after))
                     if before.get(k) != after.get(k))


# ---------------------------------------------------------------------------- MemoryService


class Memory:
    """A Memory with history, a Source and a citation for the calls to aim at."""

    def __init__(self, svc, loop) -> None:
        self.svc = svc
        E = pc.MemoryEntryInput
        self.source = loop.run_until_complete(svc.sources.persist(pc.ContentSource("src_fuzz", "the cache moved")))
        self.first = loop.run_until_complete(svc.remember(None, sources=(self.source,), entries=(
            E("fact", "the build cache lives in ~/.cache/atlas", sources=(self.source,)),
            E("decision", "deploys run on fridays only"), E("preference", "use ruff for linting"))))

    async def head(self):
        return await self.svc.head(self.first.artifact_id)

    async def version(self):
        active = await self.svc.entries(await self.head())
        return (active or await self.svc.entries(await self.head(), "all"))[0]

    async def citation(self):
        v = await self.version()
        return pc.MemoryCitation((await self.head()).ref, v.entry_id, v.entry_version_id, v.entry_content_hash)

    async def result(self):
        return await self.svc.search("build cache", memories=(await self.head(),), mode="fts")

    def valid(self) -> dict[str, Callable[[], list]]:
        E = pc.MemoryEntryInput
        head, version = Later(self.head), Later(self.version)
        return {
            "memory": lambda: [head, Later(lambda: self._ref()), self.first.artifact_id, self.first],
            "memory_ref": lambda: [Later(lambda: self._ref())],
            "ref": lambda: [Later(lambda: self._ref()), self.first.ref],
            "memories": lambda: [None, Later(lambda: self._tuple(self.head())), (self.first.ref,)],
            "entries": lambda: [Later(lambda: self._tuple(self.version())), (E("fact", "a new fact about ci"),),
                                (E("fcat", "a typo of a kind"),)],
            "entry": lambda: [version, Later(lambda: self._attr(self.version(), "entry_id"))],
            "entry_id": lambda: [Later(lambda: self._attr(self.version(), "entry_id"))],
            "entry_version_id": lambda: [Later(lambda: self._attr(self.version(), "entry_version_id"))],
            "query": lambda: ["build cache", "中文检索", "the"],
            "mode": lambda: ["fts", "auto", "hybrid", "append", "extract"],
            "limit": lambda: [1, 8],
            "policy": lambda: [None, pc.AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.0)],
            "explain": lambda: [True, False],
            "since_revision": lambda: [0, 1, None],
            "state": lambda: ["active", "all", "inactive"],
            "hits": lambda: [Later(lambda: self._tuple(self.citation())), Later(lambda: self._attr(self.result(), "hits"))],
            "items": lambda: [Later(lambda: self._tuple(self.citation())), Later(self.result)],
            "budget_chars": lambda: [2000, 100],
            "layer": lambda: ["full"],
            "reason": lambda: ["why", None],
            "old_string": lambda: ["cache", "the"],
            "new_string": lambda: ["store", ""],
            "sources": lambda: [(self.source,), ()],
            "artifacts": lambda: [(self.first.ref,), ()],
            "source": lambda: [pc.ContentSource("src_fuzz_new", "x"), pc.ContentSource("src_fuzz", "another payload")],
            "name": lambda: ["src_fuzz", "src_missing"],
            "dedupe": lambda: [True, False],
            "normalize": lambda: [True, False],
            "analyzer": lambda: [None],
        }

    async def _ref(self):
        return (await self.head()).ref

    @staticmethod
    async def _tuple(awaitable):
        return (await awaitable,)

    @staticmethod
    async def _attr(awaitable, name):
        return getattr(await awaitable, name)


async def _rows(svc) -> dict:
    return {**await counts(svc), "heads": tuple(await svc.memories())}


def _service_entry_points(svc) -> dict:
    # maintain() compacts the whole server and then waits for searches to settle (its
    # refusals of bad waits are in tests/conformance/test_maintain.py)
    methods = public_methods(svc, skip=("close", "maintain"))
    methods.update({f"sources.{k}": v for k, v in public_methods(svc.sources).items()})
    return {k: v for k, v in methods.items() if inspect.iscoroutinefunction(v) or k.startswith("sources.")}


def _fuzz_service(target: str, label: str, factor: float) -> Ledger:
    loop = asyncio.new_event_loop()
    svc = loop.run_until_complete(pc.open(target))
    ledger = Ledger(label)
    try:
        world = Memory(svc, loop)
        methods = _service_entry_points(svc)
        _fuzz(loop, ledger, methods, world.valid(), lambda: _rows(svc), factor=factor)
        print("\n" + ledger.summary())
        ledger.check(methods)
        report = loop.run_until_complete(svc.verify(world.first.artifact_id))
        assert report.ok, report.issues
        # a closed service refuses every call with a typed error, whatever the arguments
        frozen = {name: [loop.run_until_complete(_resolve(v)) for v in values()] for name, values in world.valid().items()}
        loop.run_until_complete(svc.close())
        closed = Ledger(label + " closed")
        _fuzz(loop, closed, methods, {k: (lambda v=v: v) for k, v in frozen.items()}, _nothing, factor=0.3)
        print(closed.summary())
        closed.check(())
    finally:
        loop.run_until_complete(svc.close())
        loop.close()
    ledger.check(methods)
    return ledger


async def _nothing() -> dict:
    return {}


def test_memory_service_sqlite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fuzz_service(str(tmp_path / "fuzz.db"), "MemoryService sqlite", 1.0)


def test_memory_service_oceanbase(oceanbase_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database = "pc_entry_" + uuid.uuid4().hex[:8]
    try:
        _fuzz_service(database_url(oceanbase_url, database), "MemoryService oceanbase", 0.5)
    finally:
        drop_database(oceanbase_url, database)


# ---------------------------------------------------------------------------- pc.open


def test_pc_open(tmp_path, monkeypatch):
    """pc.open with hostile targets and options: a refusal creates no file anywhere in the
    working directory (``pc.open(None)`` made a database called "None")."""
    monkeypatch.chdir(tmp_path)
    loop = asyncio.new_event_loop()
    ledger = Ledger("pc.open")
    fresh = iter(range(10**6))
    valid = {
        "target": lambda: [Later(lambda: str(tmp_path / f"db-{next(fresh)}.db")), ":memory:", "sqlite:///:memory:"],
        "analyzer": lambda: [None, "v1", "v2"],
        "embedding": lambda: [None],
    }

    async def files():
        return {"files": frozenset(tree(tmp_path))}

    async def close(svc):
        await svc.close()

    try:
        _fuzz(loop, ledger, {"open": pc.open}, valid, files, after_call=close, factor=8)
    finally:
        loop.close()
    print("\n" + ledger.summary())
    ledger.check(["open"])


# ---------------------------------------------------------------------------- Runtime


class Scope:
    """A Runtime with a captured, flushed scope for the calls to aim at."""

    def __init__(self, runtime, loop, scope: str) -> None:
        from powercontext.runtime import ContentCapture

        self.runtime, self.scope, self.n = runtime, scope, 0
        self.capture = lambda: ContentCapture(source_id=f"task-{self._next()}", content="Found it.", metadata={
            "type": "structured", "entries": [{"kind": "fact", "text": f"Finding {self.n} holds."}]})
        self.receipt = loop.run_until_complete(runtime.sources.for_scope(scope).capture(self.capture()))
        loop.run_until_complete(runtime.memory.for_scope(scope).flush())

    def _next(self) -> int:
        self.n += 1
        return self.n

    @property
    def memory(self):
        return self.runtime.memory.for_scope(self.scope)

    async def anchor(self):
        head = await self.memory.head()
        entries = await self.memory.entries() or await self.memory.entries("all")
        return (head.ref, entries[0].entry_id)

    async def version(self):
        return (await self.memory.entries("all"))[0]

    def valid(self, fresh_path: Callable[[], str]) -> dict[str, Callable[[], list]]:
        from powercontext.memory.candidates import DefaultCandidatePipeline
        from powercontext.runtime import MemoryEntryInput, RememberMemoryRequest

        anchor = Later(self.anchor)
        return {
            "scope": lambda: [self.scope, self.scope + ":other"],
            "value": lambda: [Later(self.capture), self.receipt.source and Later(self.capture)],
            "source_id": lambda: ["task-1", "missing-1"],
            "after": lambda: [0, 1],
            "limit": lambda: [1, 10, None],
            "reference": lambda: [self.receipt.evidence(), '{"scope": "x", "source_type": "content", "source_id": "a"}'],
            "anchor": lambda: [anchor],
            "anchors": lambda: [Later(lambda: self._list(self.anchor()))],
            "entry": lambda: [Later(self.version), anchor],
            "entry_version_id": lambda: [None],
            "text": lambda: ["A revised finding."],
            "kind": lambda: ["fact", None],
            "sources": lambda: [(self.receipt,), ()],
            "reason": lambda: ["why", None],
            "request": lambda: [RememberMemoryRequest(entries=(MemoryEntryInput("fact", "An explicit fact."),))],
            "since_revision": lambda: [0, None],
            "state": lambda: ["active", "all"],
            "query": lambda: ["finding", "holds"],
            "mode": lambda: ["fts", "auto"],
            "policy": lambda: [None],
            "explain": lambda: [False, True],
            # PowerContextRuntime.open / assemble
            "target": lambda: [Later(fresh_path)],
            "candidate_pipeline": lambda: [None, DefaultCandidatePipeline()],
            "source_window_limit": lambda: [1, 100],
            "schedule_seconds": lambda: [None, 30],
            "scheduler_path": lambda: [None],
            "embedding": lambda: [None],
        }

    @staticmethod
    async def _list(awaitable):
        return [await awaitable]


def _runtime_entry_points(runtime, scope: str) -> dict:
    methods = {f"runtime.{k}": v for k, v in public_methods(runtime, skip=("close",)).items()}  # open, assemble too
    methods["runtime.sources.for_scope"] = runtime.sources.for_scope
    methods["runtime.memory.for_scope"] = runtime.memory.for_scope
    methods.update({f"sources.{k}": v for k, v in public_methods(runtime.sources.for_scope(scope)).items()})
    methods.update({f"memory.{k}": v for k, v in public_methods(runtime.memory.for_scope(scope)).items()})
    return methods


async def _runtime_rows(runtime, folder: Path) -> dict:
    from tests.runtime.rows import runtime_sql

    rows = {}
    for table in ("runtime_memory_bindings", "runtime_source_journal", "runtime_trigger_cursors"):
        rows[table] = (await runtime_sql(runtime, f"SELECT COUNT(*) FROM {table}"))[0][0]
    rows["windows"] = (await runtime_sql(
        runtime, "SELECT COUNT(*) FROM runtime_source_windows WHERE outcome IN ('committed', 'no_change')"))[0][0]
    return {**rows, **await _rows(runtime.memory_service), "files": frozenset(tree(folder))}


def _fuzz_runtime(target: str, folder: Path, label: str, factor: float) -> Ledger:
    from powercontext.memory.candidates import DefaultCandidatePipeline
    from powercontext.runtime import PowerContextRuntime

    loop = asyncio.new_event_loop()
    runtime = loop.run_until_complete(PowerContextRuntime.open(target, candidate_pipeline=DefaultCandidatePipeline()))
    ledger = Ledger(label)
    fresh = iter(range(10**6))
    try:
        scope = f"project:fuzz:{uuid.uuid4().hex[:6]}"
        world = Scope(runtime, loop, scope)
        methods = _runtime_entry_points(runtime, scope)

        async def close_opened(result):
            if isinstance(result, PowerContextRuntime):
                await result.close()

        _fuzz(loop, ledger, methods, world.valid(lambda: str(folder / f"rt-{next(fresh)}.db")),
              lambda: _runtime_rows(runtime, folder), after_call=close_opened, factor=factor)
        print("\n" + ledger.summary())
        ledger.check(methods)
    finally:
        loop.run_until_complete(runtime.close())
        loop.close()
    return ledger


def test_runtime_sqlite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _fuzz_runtime(str(tmp_path / "runtime.db"), tmp_path, "Runtime sqlite", 0.6)


def test_runtime_oceanbase(oceanbase_url, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database = "pcrt_entry_" + uuid.uuid4().hex[:8]
    try:
        _fuzz_runtime(database_url(oceanbase_url, database), tmp_path, "Runtime oceanbase", 0.3)
    finally:
        drop_database(oceanbase_url, database)


# ---------------------------------------------------------------------------- importers' CLI


def test_importers_cli(tmp_path, monkeypatch, capsys):
    """``python -m powercontext.eval import FORMAT SRC OUT …`` with broken sources, OUTs
    that cannot be folders and junk options: an exit code and one line, never a
    traceback; a failed import leaves OUT as it was."""
    from powercontext.eval.__main__ import build_parser, main

    from .hostile import command_lines, surrogate_lines

    monkeypatch.chdir(tmp_path)
    sources = importer_sources(tmp_path / "src")
    outs = tmp_path / "outs"
    outs.mkdir()
    (outs / "a-file").write_text("mine")
    (outs / "full").mkdir()
    (outs / "full" / "keep.txt").write_text("mine")
    os.symlink(outs / "nowhere", outs / "dangling")
    fresh = iter(range(10**6))
    sub = build_parser()._subparsers._group_actions[0].choices["import"]
    ledger = Ledger("importers' CLI")

    def argv_of(fmt):
        return command_lines(sub, {
            "format": [fmt], "src": sources[fmt],
            "out": [str(outs / "a-file"), str(outs / "full"), str(outs / "dangling"), str(outs / "a-file" / "under"),
                    "__fresh__"],
            "cross": ["0", "2"], "granularity": ["turn", "session"], "splits": ["test", "dev,test"],
        })

    def one(fmt, argv):
        argv = [str(tmp_path / "new" / f"out-{next(fresh)}") if w == "__fresh__" else w for w in argv]
        before = {"outs": frozenset(tree(outs)), "full": (outs / "full" / "keep.txt").read_text()}
        ledger.calls[fmt] += 1
        try:
            code = main(["import", *argv])
        except SystemExit as exc:  # argparse: usage and one error line
            code = exc.code
        except BaseException as exc:  # noqa: BLE001 - booked as raw
            ledger.refused(fmt, {"argv": argv}, exc)
            return
        err = capsys.readouterr().err
        if code:
            ledger.typed[fmt] += 1  # refused: an exit code and one line
            lines = [line for line in err.splitlines() if line.strip() and not line.startswith(("usage:", " "))]
            if len(lines) != 1 or "Traceback" in err or len(lines[0]) > 800 or "x" * QUOTED in lines[0]:
                ledger.raw.append(f"{fmt} {argv!r:.200}: exit {code} with {len(lines)} lines: {err[-300:]!r}")
            if {"outs": frozenset(tree(outs)), "full": (outs / "full" / "keep.txt").read_text()} != before:
                ledger.wrote(fmt, {"argv": argv}, "a failed import changed an existing OUT")

    _each(sources, argv_of, one, factor=0.5)
    # then, not at random: every upstream file that holds a lone surrogate, and a lone
    # surrogate in OUT and in each option's value
    for fmt, srcs in sources.items():
        argvs = [[fmt, src, "__fresh__"] for src in srcs if "surrogate" in src or "locomo-" in src
                 or "longmemeval-" in src]
        argvs += surrogate_lines(sub, {"format": [fmt], "src": srcs[:1], "out": ["__fresh__"]})
        for argv in argvs:
            ledger.surrogates += 1
            one(fmt, argv)
    print("\n" + ledger.summary())
    ledger.check(sources)


# ---------------------------------------------------------------------------- %pcmem


def test_pcmem_subcommands(shell, tmp_path):
    """Every ``%pcmem`` subcommand (and every ``%pcmem runtime`` action) with command
    lines derived from its parser: a mistake is one ``UsageError`` line, never a
    traceback, and a refused command writes nothing. ``--seekdb`` is never given: it
    starts a server (its own tests cover it)."""
    from IPython.core.error import UsageError

    from powercontext.magics import current_magics
    from powercontext.magics import runtime as runtime_magics

    from .hostile import command_lines, surrogate_lines

    magics = current_magics(shell)
    world = str(tmp_path / "world.db")

    def ensure_open() -> None:
        if magics.session.svc is None:
            magics.pcmem(f"open {world}")
        if runtime_magics.session_of(magics).runtime is None:
            magics.pcmem(f"runtime open {tmp_path / 'runtime.db'} --pipeline default --scope project:fuzz")

    ensure_open()
    rev = magics.pcmem('remember --kind fact "the build cache lives in ~/.cache/atlas"')
    magics.pcmem('remember --kind decision "deploys run on fridays only"')
    entries = [e.entry_id for e in magics.session.run(magics.svc.entries(magics.session.run(magics.svc.head(rev.artifact_id))))]
    magics.pcmem('runtime capture task-1 "found it" --entry "fact:The cache moved."')
    mid = rev.artifact_id
    valid = {
        "target": [world, str(tmp_path / "other.db")], "ref": [mid, mid[:-4], f"{mid}@1"], "memory": [mid, mid[:-3]],
        "entries": entries, "entry": [entries[0], entries[0][:-4]], "text": ["a new fact"], "query": ["cache", "fridays"],
        "kind": ["fact", "fcat"], "reason": ["why"], "source": ["src_fuzz"], "old": ["cache"], "new": ["store"],
        "since": ["0", "1"], "state": ["all", "active"], "mode": ["fts", "auto"], "limit": ["1", "8"],
        "widget": ["manifest", "lineage", "admission"], "refs": [mid], "output": ["fuzz_result"], "scope": ["project:fuzz"],
        "source_id": ["task-2", "task-1"], "content": ["more found"], "pipeline": ["default", "none"], "window": ["10"],
        "width": ["20"], "metadata": ['{"type": "structured"}'], "type": ["structured"],
    }
    skip = ("--seekdb",)
    lines = {}
    for name, method in magics.commands.items():
        if getattr(method, "has_actions", False):
            for action in runtime_magics.ACTIONS:
                lines[f"{name} {action}"] = command_lines(runtime_magics.PARSERS[action], valid, skip)
        else:
            lines[name] = command_lines(method.parser, valid, skip)
    ledger = Ledger("%pcmem")

    def snapshot() -> dict:
        svc = magics.session.svc
        rows = magics.session.run(_rows(svc)) if svc is not None else {}
        return {**rows, "files": frozenset(tree(tmp_path))}

    def one(name, argv):
        import shlex

        line = f"{name} {' '.join(shlex.quote(w) for w in argv)}"
        ensure_open()
        before = snapshot()
        ledger.calls[name] += 1
        try:
            magics.pcmem(line)
        except UsageError as exc:
            ledger.typed[name] += 1
            message = str(exc)
            if "\n" in message.strip() or len(message) > 800 or "x" * QUOTED in message:
                ledger.long_messages.append(f"{line[:120]!r}: {len(message)} chars, {message.count(chr(10))} newlines: {message[:150]!r}")
            if snapshot() != before:
                ledger.wrote(name, {"line": line}, f"UsageError but {_difference(before, snapshot())}")
        except BaseException as exc:  # noqa: BLE001 - booked as raw
            if isinstance(exc, KeyboardInterrupt):
                raise
            ledger.raw.append(f"{line[:300]!r}: {type(exc).__name__}: {str(exc)[:200]}")

    try:
        _each(lines, lines.__getitem__, one, factor=0.6)
        for name, method in magics.commands.items():  # then a lone surrogate in every argument
            parsers = ({f"{name} {a}": runtime_magics.PARSERS[a] for a in runtime_magics.ACTIONS}
                       if getattr(method, "has_actions", False) else {name: method.parser})
            for label, parser in parsers.items():
                for argv in surrogate_lines(parser, valid, skip):
                    ledger.surrogates += 1
                    one(label, argv)
    finally:
        magics.pcmem("runtime close")
    print("\n" + ledger.summary())
    ledger.check(lines)
