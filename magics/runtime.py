"""``%pcmem runtime ACTION …``: the local Runtime (RFC 001) from the workbench.

    %pcmem runtime open runtime.db --pipeline default --scope project:demo
    %pcmem runtime capture task-1 "what happened" --entry "decision:Use SQLite for the Runtime."
    %%pcmem runtime capture agents-md        (cell form: the cell body is the content)
    %pcmem runtime flush                     %pcmem runtime journal      %pcmem runtime bindings
    %pcmem runtime status                    %pcmem runtime inspect      %pcmem runtime close
    %pcmem runtime entries                   %pcmem runtime search "query" --explain
    %pcmem runtime ACTION --help             (each action's own options)

The Runtime runs on the magics' private loop (so a scheduled one keeps firing in the
background of the kernel). ``--pipeline`` names the candidate pipeline explicitly:
``default`` (the model-free ``DefaultCandidatePipeline``), ``none``, or a variable of the
notebook. Reads return DataFrames; ``-o NAME`` stores the result. ``entries`` and ``search`` read the
Memory a scope is bound to, so its entries need no second ``%pcmem open`` of the database;
``search`` takes ``%pcmem search``'s admission policy options (``magics/policy_options.py``).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import ContentCapture, PowerContextRuntime
from powercontext.runtime.inspection import binding_rows, journal_rows

from powercontext.suggest import unknown_name

from . import policy_options, tables
from .display import explain_hint, result_summary
from .errors import PcMemUserError
from .session import redact
from .tables import preview
from .usage import help_text, usage_line, with_hint

__all__ = ["ACTIONS", "RuntimeSession", "run_action", "session_of", "flush_frame"]

ACTIONS = ("open", "capture", "flush", "journal", "bindings", "entries", "search", "status", "inspect", "close")


class RuntimeSession:
    """The Runtime the magics opened, its default scope, and a seekdb it started."""

    def __init__(self) -> None:
        self.runtime: PowerContextRuntime | None = None
        self.scope: str | None = None
        self.server: Any = None
        self.open_line = "%pcmem runtime open …"  # how to open it again (the JournalInspector says it after close)

    def require(self) -> PowerContextRuntime:
        if self.runtime is None:
            raise PcMemUserError("no Runtime is open: run `%pcmem runtime open runtime.db --pipeline default` first")
        return self.runtime

    def scope_of(self, scope: str | None) -> str:
        scope = scope or self.scope
        if not scope:
            raise PcMemUserError("which scope? pass --scope SCOPE (or open the Runtime with --scope to set a default)")
        return scope

    def close(self, runner) -> bool:
        runtime, self.runtime, self.scope = self.runtime, None, None
        if runtime is not None:
            runner.run(runtime.close())
        if self.server is not None:
            self.server.stop()
            self.server = None
        return runtime is not None


def session_of(magics) -> RuntimeSession:
    session = getattr(magics, "runtime_session", None)
    if session is None:
        session = magics.runtime_session = RuntimeSession()
    return session


# ------------------------------------------------------------------ parsers


def _parser(action: str, description: str) -> MagicArgumentParser:
    # prog without the %: IPython's help formatter adds it
    parser = MagicArgumentParser(prog=f"pcmem runtime {action}", description=description, add_help=False)
    parser.add_argument("-o", "--output", metavar="NAME", help="also store the result in the user namespace as NAME")
    return parser


def _scope(parser: MagicArgumentParser) -> None:
    parser.add_argument("--scope", "-s", default=None, help="the scope (default: the one given to `runtime open`)")


PARSERS: dict[str, MagicArgumentParser] = {}

p = PARSERS["open"] = _parser("open", "Open a Runtime database (closing the Runtime open before).")
p.add_argument("target", nargs="?", help="SQLite path, sqlite:///path.db or oceanbase://user@host:port/db")
p.add_argument("--seekdb", nargs="?", const="", default=None, metavar="DIR",
               help="start (or attach to) a local seekdb server on DIR and open --database on it")
p.add_argument("--database", default="pcruntime", help="database name on the --seekdb server (default pcruntime)")
p.add_argument("--pipeline", default="none", metavar="NAME",
               help="candidate pipeline: default (model-free DefaultCandidatePipeline), none, or a notebook variable")
p.add_argument("--window", type=int, default=100, metavar="N", help="source_window_limit (default 100)")
p.add_argument("--schedule", type=float, default=None, metavar="SECONDS", help="process pending scopes every SECONDS")
p.add_argument("--sidecar", default=None, metavar="PATH", help="the scheduler's SQLite sidecar (needed for OceanBase)")
p.add_argument("--embedding", default=None, help="embedding model: minilm, e5 or a sentence-transformers folder")
_scope(p)

p = PARSERS["capture"] = _parser("capture", "Capture a Source in a scope (the cell form takes the content from the cell).")
p.add_argument("source_id", metavar="SOURCE_ID")
p.add_argument("content", nargs="*", help="the content (quote it), unless the cell body gives it")
_scope(p)
p.add_argument("--description", default=None)
p.add_argument("--metadata", default=None, metavar="JSON", help="a JSON object of metadata")
p.add_argument("--type", default=None, help='metadata "type" (task_outcome, git_change, structured …)')
p.add_argument("--entry", action="append", default=[], metavar="KIND:TEXT",
               help="a structured entry for the model-free pipeline (repeatable; sets type=structured)")

p = PARSERS["flush"] = _parser("flush", "Process the next Source window of a scope.")
_scope(p)
p.add_argument("--limit", type=int, default=None, metavar="N", help="window limit (default: the Runtime's)")

p = PARSERS["journal"] = _parser("journal", "A scope's journal: each Source's window, outcome, Revision and position.")
_scope(p)
p.add_argument("--limit", type=int, default=200, metavar="N")
p.add_argument("--width", type=int, default=60, metavar="N", help="characters of content shown (0 = all)")

PARSERS["bindings"] = _parser("bindings", "Every scope: its Memory, head Revision, high watermark, cursor, pending.")
p = PARSERS["entries"] = _parser("entries", "The entries of a scope's Memory at its head.")
_scope(p)
p.add_argument("--state", choices=["active", "inactive", "all"], default="active")
p.add_argument("--width", type=int, default=80, metavar="N", help="characters of entry text shown (0 = all)")
p = PARSERS["search"] = _parser("search", "Search a scope's Memory at its head (like %pcmem search).")
p.add_argument("query", nargs="+", help="the query (quote it)")
_scope(p)
p.add_argument("--mode", choices=["fts", "vector", "hybrid", "auto"], default="auto")
p.add_argument("--limit", type=int, default=8, metavar="N", help="hits at most (default 8)")
p.add_argument("--explain", action="store_true",
               help="every retrieved candidate per channel with its signals, admitted or rejected and why")
p.add_argument("--width", type=int, default=80, metavar="N", help="characters of entry text shown (0 = all)")
# the same admission options as `%pcmem search`, from the same field descriptions
policy_options.add_arguments(p)
PARSERS["status"] = _parser("status", "The Runtime: database, pipeline, schedule, sidecar, probes, progress.")
p = PARSERS["inspect"] = _parser("inspect", "The JournalInspector widget.")
_scope(p)
PARSERS["close"] = _parser("close", "Close the Runtime (and stop a seekdb server `runtime open --seekdb` started).")


def usage() -> str:
    """One usage line per action."""
    return "\n".join("  " + usage_line(PARSERS[a]) for a in ACTIONS)


# ------------------------------------------------------------------ actions


def run_action(magics, action: str, argv: list[str], cell: str | None) -> Any:
    if action not in PARSERS:
        raise PcMemUserError(unknown_name("runtime action", action, ACTIONS) + "; `%pcmem runtime --help` lists them")
    parser = PARSERS[action]
    if "-h" in argv or "--help" in argv:
        print(help_text(parser))
        return None
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        raise UsageError(f"%pcmem runtime {action}: {with_hint(parser, str(exc))} "
                         f"(see %pcmem runtime {action} --help)") from None
    if cell is not None and action != "capture":
        raise PcMemUserError(f"%%pcmem runtime {action} has no cell form")
    result = globals()[f"_{action}"](magics, session_of(magics), args, cell)
    if getattr(args, "output", None) and result is not None:
        magics.shell.user_ns[args.output] = result
    return result


def _pipeline(magics, name: str):
    if name == "none":
        return None
    if name == "default":
        return DefaultCandidatePipeline()
    namespace = magics.shell.user_ns if magics.shell is not None else {}
    if name not in namespace:
        raise PcMemUserError(f"--pipeline {name!r}: not default, none, or a variable of this notebook")
    return namespace[name]


def _open(magics, session: RuntimeSession, args, cell):
    runner = magics.session.runner
    if args.seekdb is not None:
        if args.target:
            raise PcMemUserError("give either TARGET or --seekdb [DIR], not both")
        from powercontext.backends.seekdb.urls import database_url
        from powercontext.backends.seekdb.store import default_store
        from powercontext.backends.seekdb.server import ensure_server

        url, server = ensure_server(Path(args.seekdb or magics.seekdb_dir or default_store()).expanduser())
        target = database_url(url, args.database)
    elif args.target:
        target, server = args.target, None
    else:
        raise PcMemUserError("open what? `%pcmem runtime open runtime.db` or `%pcmem runtime open --seekdb`")
    pipeline = _pipeline(magics, args.pipeline)
    try:
        runtime = runner.run(PowerContextRuntime.open(
            target, candidate_pipeline=pipeline, source_window_limit=args.window, schedule_seconds=args.schedule,
            scheduler_path=args.sidecar, embedding=args.embedding or magics.embedding,
            search_log=magics.search_log,  # %config PcMem.search_log covers the Runtime's searches too
        ))
    except BaseException:
        if server is not None:
            server.stop()
        raise
    session.close(runner)
    session.runtime, session.scope, session.server = runtime, args.scope, server
    session.open_line = _open_line(args)
    where = Path(runtime.storage.location).name if runtime.storage.profile == "sqlite" else redact(runtime.key)
    schedule = f"every {args.schedule:g} s" if args.schedule else "off"
    print(f"opened Runtime on {runtime.storage.profile} {where} · pipeline "
          f"{type(pipeline).__name__ if pipeline else 'none'} · window {args.window} · schedule {schedule}"
          + (f" · scope {args.scope}" if args.scope else ""))
    return None


def _open_line(args) -> str:
    """The ``%pcmem runtime open …`` line that opens this Runtime again (password masked)."""
    where = ["--seekdb"] + ([args.seekdb] if args.seekdb else []) if args.seekdb is not None else [redact(args.target)]
    options = [("--pipeline", args.pipeline, "none"), ("--window", str(args.window), "100"),
               ("--schedule", f"{args.schedule:g}" if args.schedule else None, None), ("--sidecar", args.sidecar, None),
               ("--embedding", args.embedding, None), ("--scope", args.scope, None)]
    extra = [x for flag, value, default in options if value not in (None, default) for x in (flag, value)]
    return shlex.join(["%pcmem", "runtime", "open", *where, *extra])


def _metadata(args) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if args.metadata:
        try:
            metadata = json.loads(args.metadata)
        except json.JSONDecodeError as exc:
            raise PcMemUserError(f"--metadata is not JSON: {exc}") from None
        if not isinstance(metadata, dict):
            raise PcMemUserError("--metadata must be a JSON object")
    if args.type:
        metadata["type"] = args.type
    if args.entry:
        entries = []
        for item in args.entry:
            kind, sep, text = item.partition(":")
            if not sep or not kind.strip() or not text.strip():
                raise PcMemUserError(f"--entry takes KIND:TEXT, got {item!r}")
            entries.append({"kind": kind.strip(), "text": text.strip()})
        metadata.update(type="structured", entries=entries)
    return metadata


def _capture(magics, session: RuntimeSession, args, cell):
    runtime = session.require()
    if cell is not None and args.content:
        raise PcMemUserError("the cell form takes the content from the cell body; drop it from the magic line")
    content = cell.strip("\n") if cell is not None else " ".join(args.content)
    if not content.strip():
        raise PcMemUserError("nothing to capture: give the content in quotes, or use the cell form")
    capture = ContentCapture(source_id=args.source_id, content=content, description=args.description,
                             metadata=_metadata(args))
    scope = session.scope_of(args.scope)
    receipt = magics.session.run(runtime.sources.for_scope(scope).capture(capture))
    state = "captured" if receipt.created else "already captured (same payload)"
    print(f"{state}: {receipt.source.name} is #{receipt.sequence} in scope {scope}")
    return None


def flush_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{
        "scope": result.scope, "status": result.status, "window": str(result.window or ""),
        "cursor": f"{result.cursor_before} → {result.cursor}", "high_watermark": result.high_watermark,
        "revision": str(result.revision.ref) if result.revision is not None else "",
        "sources": ", ".join(result.source_ids), "error": result.error or "",
    }])


def _flush(magics, session: RuntimeSession, args, cell):
    runtime = session.require()
    result = magics.session.run(runtime.memory.for_scope(session.scope_of(args.scope)).flush(limit=args.limit))
    print(str(result))
    return flush_frame(result)


def journal_frame(rows: list[dict], width: int = 60) -> pd.DataFrame:
    columns = ["sequence", "source_id", "position", "window", "outcome", "revision", "reason", "content"]
    frame = pd.DataFrame(rows, columns=columns + ["captured_at"])[columns]
    frame["content"] = [preview(c, width) for c in frame["content"]]
    return frame.set_index("sequence")


def _journal(magics, session: RuntimeSession, args, cell):
    runtime = session.require()
    rows = magics.session.run(journal_rows(runtime, session.scope_of(args.scope), limit=args.limit))
    return journal_frame(rows, args.width)


def _bindings(magics, session: RuntimeSession, args, cell):
    rows = magics.session.run(binding_rows(session.require()))
    return pd.DataFrame(rows, columns=["scope", "memory", "head", "high_watermark", "cursor", "pending"])


def _entries(magics, session: RuntimeSession, args, cell):
    scope = session.scope_of(args.scope)
    memory = session.require().memory.for_scope(scope)
    entries = magics.session.run(memory.entries(state=args.state))
    if not entries:
        print(f"scope {scope} has no {'' if args.state == 'all' else args.state + ' '}entries yet"
              " (capture Sources, then `%pcmem runtime flush`)")
    return tables.entries_frame(entries, width=args.width)


def _search(magics, session: RuntimeSession, args, cell):
    scope = session.scope_of(args.scope)
    memory = session.require().memory.for_scope(scope)
    query = " ".join(args.query)
    # checked like `%pcmem search`'s, against the Runtime's own service and policy
    svc = session.runtime.memory_service
    options, planned, policy = policy_options.for_search(args, args.mode, svc)
    if args.mode != "fts":
        _warm(session.runtime)
    result = magics.session.run(memory.search(query, limit=args.limit, mode=args.mode, policy=policy,
                                              explain=args.explain))
    no_memory = (result.fallback_reason or "").endswith("has no Memory yet")
    if not no_memory:  # nothing to search yet is not a fallback the options could have helped
        for note in policy_options.fallback_notes(options, svc.policy, planned, result.mode):
            print(note)
    if args.explain:
        frame = tables.decisions_frame(result.decisions, result.hits, width=args.width)
        extra = f" · {len(frame)} candidates, {int(frame['admitted'].sum())} admitted"
    else:
        frame, extra = tables.hits_frame(result, width=args.width), ""
    print(f"{result_summary(result)}{extra} · scope {scope}")
    hint = explain_hint(result, f"%pcmem runtime search {query!r}")
    if hint and no_memory:
        hint = ""
    if hint:
        print(hint)
    return frame


def _warm(runtime) -> None:
    """Load the embedding model before a vector search and say so (~10 s the first time)."""
    model = getattr(runtime.memory_service, "embedding", None)
    if model is not None and not getattr(model, "loaded", True):
        print(f"loading {getattr(model, 'name', 'the embedding model')} …", flush=True)
        model.load()


def _status(magics, session: RuntimeSession, args, cell):
    facts = magics.session.run(session.require().status())
    return pd.DataFrame({"value": [str(v) for v in facts.values()]}, index=pd.Index(list(facts), name="field"))


def _inspect(magics, session: RuntimeSession, args, cell):
    from .widgets.journal import JournalInspector

    scope = args.scope or session.scope
    reopen = f"`{session.open_line}`, then `%pcmem runtime inspect{' --scope ' + scope if scope else ''}`"
    return JournalInspector(session.require(), scope=scope, runner=magics.session.runner, reopen=reopen)


def _close(magics, session: RuntimeSession, args, cell):
    print("closed the Runtime" if session.close(magics.session.runner) else "no Runtime was open")
    return None

